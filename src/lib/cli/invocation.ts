/**
 * How the user ran meshvm, so every command line meshvm suggests (error hints, resume lines, the
 * wizard's replay line) can be pasted as is: `kubectl meshvm …` when run as a kubectl plugin (through
 * the kubectl-meshvm name), and the user's own --kubeconfig, --context and -n, so a suggestion never
 * acts on another cluster or namespace than the one the user chose.
 */
import {basename} from 'node:path'
import {shellQuote} from './prompt.js'

export interface Invocation {
  /** `meshvm`, or `kubectl meshvm` in plugin mode. */
  bin: string
  /** The user's cluster-selecting flags, in the order kubectl documents them. */
  kube: {kubeconfig?: string; context?: string; namespace?: string}
}

export const invocation: Invocation = {bin: 'meshvm', kube: {}}

/** kubectl runs plugins by their file name, kubectl-NAME. */
export function isKubectlPlugin(script = process.argv[1] ?? ''): boolean {
  return basename(script).startsWith('kubectl-')
}

/**
 * The values of the flags `names` spells (`--context`, `-n`: its key) on a command line, before any
 * `--`; the last one given wins, and an empty value means the default (empty-values.ts): as if the
 * flag were not given.
 */
export function flagValuesOf<K extends string>(argv: string[], names: Record<string, K>): Partial<Record<K, string>> {
  const found: Partial<Record<K, string>> = {}
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--') break
    const eq = arg.indexOf('=')
    let key = names[eq > 0 ? arg.slice(0, eq) : arg]
    let value = eq > 0 ? arg.slice(eq + 1) : undefined
    if (key === undefined && arg[1] !== '-' && arg.length > 2) {
      // A short flag's value may follow it directly (`-napps`).
      key = names[arg.slice(0, 2)]
      value = arg.slice(2)
    }
    if (key === undefined) continue
    value ??= argv[++i]
    if (value !== undefined && value !== '') found[key] = value
  }
  return found
}

/** Reads the cluster-selecting flags from the command line. */
export function kubeFlagsOf(argv: string[]): Invocation['kube'] {
  return flagValuesOf(argv, {'--kubeconfig': 'kubeconfig', '--context': 'context', '--namespace': 'namespace', '-n': 'namespace'})
}

export function setInvocation(argv: string[], script = process.argv[1] ?? ''): void {
  invocation.bin = isKubectlPlugin(script) ? 'kubectl meshvm' : 'meshvm'
  invocation.kube = kubeFlagsOf(argv)
}

/** The user's --kubeconfig/--context (and -n unless the line already names a namespace) as flags. */
function kubeArgs(rest: string): string {
  const k = invocation.kube
  const args: string[] = []
  if (k.kubeconfig !== undefined && !/(^|\s)--kubeconfig[\s=]/.test(rest)) args.push('--kubeconfig', shellQuote(k.kubeconfig))
  if (k.context !== undefined && !/(^|\s)--context[\s=]/.test(rest)) args.push('--context', shellQuote(k.context))
  if (k.namespace !== undefined && !/(^|\s)(-n|--namespace|-A|--all-namespaces)([\s=]|$)/.test(rest)) args.push('-n', shellQuote(k.namespace))
  return args.join(' ')
}

/**
 * Rewrites the meshvm command lines in a hint or note: `meshvm war list -n apps` becomes
 * `kubectl meshvm war list --context c2 -n apps` (plugin mode, --context c2 given). `commands` are the
 * command ids in words (`war list`); the flags go right after them, before any argument.
 */
export function keepInvocation(text: string, commands: string[]): string {
  if (!text.includes('meshvm ')) return text
  const ids = [...commands].sort((a, b) => b.length - a.length).map((c) => c.replace(/[.*+?^${}()|[\]\\]/g, '\\$&'))
  const pattern = new RegExp(`(^|[\\s:("'\`])(?:kubectl )?meshvm (${ids.join('|')})(?=\\s|$|[)"'\`.,;])([^;)"'\`]*)`, 'g')
  return text.replace(pattern, (_m, lead: string, id: string, rest: string) => {
    const extra = kubeArgs(rest)
    return `${lead}${invocation.bin} ${id}${extra ? ' ' + extra : ''}${rest}`
  })
}
