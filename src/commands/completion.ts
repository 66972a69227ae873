import * as Args from '@oclif/core/args'
import {BaseCommand} from '../lib/cli/base-command.js'
import {completionScript, SHELLS, type CompletionCommand, type Shell} from '../lib/completion.js'

export default class Completion extends BaseCommand<typeof Completion> {
  static override summary = 'Print a shell completion script (bash, zsh or fish).'

  static override description = `Completes commands, flags, and the values of flags with a fixed set (such as -o).
The script is generated from this version of meshvm, so regenerate it after upgrading.`

  static override examples = [
    {description: 'bash, for this shell:', command: 'source <(<%= config.bin %> <%= command.id %> bash)'},
    {description: 'bash, for every new shell:', command: "echo 'source <(<%= config.bin %> <%= command.id %> bash)' >> ~/.bashrc"},
    {description: 'zsh:', command: 'source <(<%= config.bin %> <%= command.id %> zsh)'},
    {description: 'fish:', command: '<%= config.bin %> <%= command.id %> fish > ~/.config/fish/completions/<%= config.bin %>.fish'},
  ]

  static override args = {
    shell: Args.string({description: 'The shell.', options: [...SHELLS], required: true}),
  }

  async run(): Promise<void> {
    // From the manifest: no command module is loaded to build the script.
    const commands: CompletionCommand[] = this.config.commands
      .filter((c) => !c.hidden)
      .map((c) => ({
        words: c.id.split(':').join(' '),
        flags: Object.values(c.flags)
          .filter((f) => !f.hidden)
          .map((f) => ({name: f.name, char: f.char, options: f.type === 'option' ? f.options : undefined, takesValue: f.type === 'option'})),
      }))
    this.out(completionScript(this.args.shell as Shell, this.config.bin, commands))
  }
}
