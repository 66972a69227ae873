import {Command} from '@oclif/core/command'
import {cobraOutput, complete, type CompletionCommand} from '../lib/completion.js'
import {flagValuesOf, kubeFlagsOf} from '../lib/cli/invocation.js'

/**
 * `meshvm __complete WORD…`: what the shell scripts (and kubectl, through kubectl_complete-meshvm) ask
 * for at each TAB. The words are read as typed, never parsed as this command's flags. Prints one
 * candidate per line, then cobra's `:DIRECTIVE` line.
 */
export default class Complete extends Command {
  static override hidden = true
  static override strict = false
  static override summary = 'Shell completion candidates for the words typed (used by the completion scripts).'

  static override description =
    "Prints one candidate per line, then cobra's :DIRECTIVE line (4: no file names, 0: file names, 16: directory names). Names from the cluster are looked up within 2 seconds."

  static override examples = ['<%= config.bin %> <%= command.id %> war describe -n apps ""']

  // No flag parsing: --context, -n and anything half-typed belong to the command line being completed.
  override async init(): Promise<void> {}

  async run(): Promise<void> {
    const words = this.argv.length === 0 ? [''] : this.argv
    const all = this.config.commands
    const commands: CompletionCommand[] = all
      .filter((c) => !c.hidden)
      .map((c) => ({
        words: c.id.replaceAll(':', ' '),
        aliasOf: all.find((o) => o.id !== c.id && o.aliases.includes(c.id))?.id.replaceAll(':', ' '),
        flags: Object.values(c.flags)
          .filter((f) => !f.hidden)
          .map((f) => ({name: f.name, char: f.char, options: f.type === 'option' ? f.options : undefined, takesValue: f.type === 'option'})),
        argOptions: Object.values(c.args)[0]?.options,
      }))
    const result = complete(words, commands)
    let values = result.values
    if (result.dynamic) {
      const {dynamicValues} = await import('../lib/completion-fetch.js')
      const typed = words.slice(0, -1)
      const found = await dynamicValues(result.dynamic, {...kubeFlagsOf(typed), istioNamespace: istioNamespaceOf(typed)})
      values = found.filter((v) => v.startsWith(result.prefix)).sort()
    }
    // Done: a request the cluster never answered must not keep the shell waiting for this process.
    await new Promise<void>((resolve) => process.stdout.write(cobraOutput(values, result.files), () => resolve()))
    if (result.dynamic) process.exit(0)
  }
}

/** The -i/--istio-namespace typed (the remote secrets live there), else MESHVM_ISTIO_NAMESPACE, else istio-system. */
export function istioNamespaceOf(words: string[]): string {
  const typed = flagValuesOf(words, {'--istio-namespace': 'ns', '--istioNamespace': 'ns', '-i': 'ns'}).ns
  return typed || process.env.MESHVM_ISTIO_NAMESPACE || 'istio-system'
}
