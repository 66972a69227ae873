import {BaseCommand} from '../lib/cli/base-command.js'
export default class Hello extends BaseCommand<typeof Hello> {
  static override summary = 'temp'
  async run(): Promise<void> { this.out('hi\n') }
}
