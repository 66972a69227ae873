import * as Flags from '@oclif/core/flags'
import {BaseCommand, OUTPUT_GROUP} from '../lib/cli/base-command.js'
import {parseOutput} from '../lib/output/printer.js'
import {renderData} from '../lib/output/render.js'

const KINDS = ['json', 'yaml'] as const

export default class Version extends BaseCommand<typeof Version> {
  static override summary = 'Print the meshvm version.'

  static override description =
    `Like istioctl version --remote=false: "client version: X" by default, only the version with --short, and {"clientVersion": {...}} with -o json|yaml. meshvm --version (or -v) prints oclif's one-line form: meshvm/X PLATFORM node-VERSION.`

  static override examples = [
    '<%= config.bin %> <%= command.id %>',
    {description: 'Only the version number, for scripts:', command: '<%= config.bin %> <%= command.id %> --short'},
    '<%= config.bin %> <%= command.id %> -o json',
  ]

  static override flags = {
    short: Flags.boolean({char: 's', summary: 'Print only the version number.', helpGroup: OUTPUT_GROUP}),
    output: Flags.string({char: 'o', summary: 'Output format: json or yaml.', helpGroup: OUTPUT_GROUP}),
  }

  async run(): Promise<void> {
    const f = this.flags
    const output = f.output === undefined ? undefined : parseOutput(f.output, KINDS)
    const version = this.config.version
    if (output) {
      const info = {clientVersion: {version, node_version: process.version, platform: `${process.platform}-${process.arch}`}}
      this.out(renderData(info, output.kind as (typeof KINDS)[number]) as string)
    } else this.out(f.short ? `${version}\n` : `client version: ${version}\n`)
  }
}
