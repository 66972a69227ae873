import * as Args from '@oclif/core/args'
import {BaseCommand} from '../lib/cli/base-command.js'

export default class Help extends BaseCommand<typeof Help> {
  static override summary = 'Show help for meshvm or for a command.'

  static override description = 'The same text as COMMAND --help (or -h).'

  static override examples = ['<%= config.bin %> <%= command.id %>', '<%= config.bin %> <%= command.id %> war list']

  static override strict = false

  static override args = {
    command: Args.string({description: 'The command, in words (e.g. war list).', required: false, ignoreStdin: true}),
  }

  async run(): Promise<void> {
    const {argv} = await this.parse()
    const words = argv.map(String)
    // Rejects an unknown command the same way a mistyped command is (with did-you-mean).
    const id = words.join(':')
    if (words.length > 0 && !this.config.findCommand(id) && !this.config.findTopic(id)) throw new Error(`command ${id} not found`)
    const {loadHelpClass} = await import('@oclif/core/help')
    const HelpClass = await loadHelpClass(this.config)
    await new HelpClass(this.config).showHelp(words)
  }
}
