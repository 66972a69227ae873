/**
 * One rule for a flag given an empty value (`-n "$NS"` with NS unset, `--output=`): where kubectl (or
 * istioctl, for its own flags) reads the empty value as "not given", meshvm does too, so the flag's
 * default applies (`-n ''` is the context namespace, `-l ''` selects everything, `-o ''` is the default
 * format); every other flag refuses it with a usage error naming the flag, before anything is read or
 * sent. Applied to the command line once, before oclif parses it (BaseCommand.init).
 */
import {UsageError} from '../errors.js'

/**
 * The flags whose empty value means "as if not given", and what kubectl (istioctl) does with it; the
 * table in docs/conventions.md#empty-values says the same.
 */
export const EMPTY_MEANS_DEFAULT: Readonly<Record<string, string>> = {
  kubeconfig: 'kubectl: $KUBECONFIG, then ~/.kube/config',
  context: "kubectl: the kubeconfig's current context",
  namespace: "kubectl: the context's namespace",
  'istio-namespace': 'istioctl: istio-system',
  revision: 'istioctl: the default revision',
  'request-timeout': 'kubectl: the default time-out',
  output: 'kubectl: the default format',
  'sort-by': 'kubectl: no sorting',
  selector: 'kubectl: every object',
  'label-columns': 'kubectl: no label column',
  server: "kubectl, istioctl: the kubeconfig's server",
  'tls-server-name': "kubectl: the kubeconfig's (or the server's) name",
}

/** What the rule needs to know of a flag (oclif's flag definition has these). */
export interface FlagShape {
  type: string
  char?: string
  aliases?: string[]
  charAliases?: string[]
  options?: readonly string[]
}

/** Flags whose value only follows `=` (kubectl's NoOptDefVal: a bare `--dry-run` means client). */
const VALUE_AFTER_EQUALS_ONLY = new Set(['dry-run'])

/**
 * `argv` without the empty values kubectl reads as "not given"; a usage error for any other flag
 * given an empty value. Unknown flags and everything after `--` are left to oclif's parser.
 */
export function applyEmptyValueRule(argv: readonly string[], flags: Readonly<Record<string, FlagShape>>): string[] {
  const byLong = new Map<string, string>()
  const byChar = new Map<string, string>()
  for (const [name, f] of Object.entries(flags)) {
    byLong.set(name, name)
    for (const a of f.aliases ?? []) byLong.set(a, name)
    if (f.char) byChar.set(f.char, name)
    for (const c of f.charAliases ?? []) byChar.set(c, name)
  }
  const out: string[] = []
  for (let i = 0; i < argv.length; i++) {
    const arg = argv[i]!
    if (arg === '--') {
      out.push(...argv.slice(i))
      break
    }
    const eq = arg.startsWith('--') ? arg.indexOf('=') : -1
    let name: string | undefined
    // The value after `=` or joined to a short flag (`-napps`, `-n=apps`); else it is the next word.
    let value: string | undefined
    if (arg.startsWith('--')) {
      name = byLong.get(arg.slice(2, eq > 0 ? eq : undefined))
      if (eq > 0) value = arg.slice(eq + 1)
    } else if (arg.startsWith('-') && arg.length >= 2) {
      name = byChar.get(arg[1]!)
      if (arg.length > 2) value = arg.slice(arg[2] === '=' ? 3 : 2)
    }
    const valueInNext = value === undefined
    const flag = name === undefined ? undefined : flags[name]
    if (flag?.type !== 'option' || (valueInNext && (VALUE_AFTER_EQUALS_ONLY.has(name!) || i + 1 >= argv.length))) {
      out.push(arg)
      continue
    }
    if (valueInNext) value = argv[i + 1]
    if (value === '') {
      if (!Object.hasOwn(EMPTY_MEANS_DEFAULT, name!)) throw emptyValueError(name!, flag)
      if (valueInNext) i++
      continue
    }
    out.push(arg)
    if (valueInNext) out.push(argv[++i]!)
  }
  return out
}

function emptyValueError(name: string, flag: FlagShape): UsageError {
  const label = flag.char ? `-${flag.char}/--${name}` : `--${name}`
  const valid = flag.options ? `expected one of ${flag.options.join(', ')}` : 'give a value, or leave the flag out'
  return new UsageError(`${label} "": must not be empty; ${valid}`)
}
