/**
 * One error module for the whole CLI: typed errors, stable exit codes and "try this" hints.
 *
 * Every failure a user can cause or meet is a MeshvmError. Anything else that reaches the top level
 * is a bug (exit 10). Messages are one line; hints are optional and printed on a second line.
 * Messages must never contain secrets: callers pass names, never token or kubeconfig contents.
 */

import {suggestCommands} from './cli/suggest.js'

/** Stable exit codes, documented in the README and in `meshvm --help`. */
export const ExitCode = {
  OK: 0,
  /** A generic failure that has no more specific code (e.g. a file could not be written). */
  FAILURE: 1,
  /** Bad flags, arguments or input files. Nothing was changed. */
  USAGE: 2,
  /** The API server could not be reached (DNS, connection refused, TLS, timeout). */
  UNREACHABLE: 3,
  /** A named object (WorkloadGroup, ConfigMap, context…) does not exist. */
  NOT_FOUND: 4,
  /** 401/403: the credentials are missing, expired or lack a permission. */
  FORBIDDEN: 5,
  /** The API server rejected a write (422 Invalid, 409 Conflict). */
  REJECTED: 6,
  /** Some objects were changed and some were not; the output lists which. */
  PARTIAL: 7,
  /** A check (precheck, verify) ran and found failures. */
  CHECK_FAILED: 8,
  /** A wait (rollout, token controller) ran out of time. */
  TIMEOUT: 9,
  /** An unexpected internal error: a bug in meshvm. */
  BUG: 10,
  /** Interrupted with Ctrl-C. */
  INTERRUPTED: 130,
} as const

export type ExitCodeValue = (typeof ExitCode)[keyof typeof ExitCode]

export interface MeshvmErrorOptions {
  exit?: ExitCodeValue
  /** A short machine-readable code such as `InvalidFlag` or `NotFound`, used in `-o json` errors. */
  code?: string
  /** "Try this" suggestions printed under the message. */
  hints?: string[]
  cause?: unknown
}

export class MeshvmError extends Error {
  readonly exit: ExitCodeValue
  readonly code: string
  readonly hints: string[]

  constructor(message: string, options: MeshvmErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : {cause: options.cause})
    this.name = 'MeshvmError'
    this.exit = options.exit ?? ExitCode.FAILURE
    this.code = options.code ?? 'Failure'
    this.hints = options.hints ?? []
  }
}

/** Bad input: names the flag or field and what would be valid. Exit 2, nothing changed. */
export class UsageError extends MeshvmError {
  constructor(message: string, hints: string[] = []) {
    super(message, {exit: ExitCode.USAGE, code: 'Usage', hints})
    this.name = 'UsageError'
  }
}

/**
 * Several independent input problems reported at once: each is printed as its own `Error:` line (the
 * first is the message), then the hints of all of them.
 */
export class UsageErrors extends UsageError {
  readonly problems: string[]
  constructor(problems: (string | UsageError)[]) {
    const messages = problems.map((p) => (typeof p === 'string' ? p : p.message))
    const hints = [...new Set(problems.flatMap((p) => (typeof p === 'string' ? [] : p.hints)))]
    super(messages[0] ?? 'invalid input', hints)
    this.problems = messages
  }
}

/**
 * Collects the usage errors of independent checks, so one run reports every problem of the
 * invocation instead of stopping at the first (`onboard`): `check` runs one and keeps its error,
 * `throwIfAny` throws them together.
 */
export class Problems {
  private readonly found: UsageError[] = []

  add(error: UsageError): void {
    if (!(error instanceof UsageErrors)) this.found.push(error)
    else for (const [i, message] of error.problems.entries()) this.found.push(new UsageError(message, i === 0 ? error.hints : []))
  }

  /** The check's result, or undefined when it threw a UsageError (kept); other errors propagate. */
  check<T>(fn: () => T): T | undefined {
    try {
      return fn()
    } catch (err) {
      return this.kept(err)
    }
  }

  async checkAsync<T>(fn: () => Promise<T>): Promise<T | undefined> {
    try {
      return await fn()
    } catch (err) {
      return this.kept(err)
    }
  }

  private kept(err: unknown): undefined {
    if (!(err instanceof UsageError)) throw err
    this.add(err)
    return undefined
  }

  throwIfAny(): void {
    if (this.found.length === 1) throw this.found[0]
    if (this.found.length > 1) throw new UsageErrors(this.found)
  }
}

export class InterruptedError extends MeshvmError {
  constructor(message = 'interrupted') {
    super(message, {exit: ExitCode.INTERRUPTED, code: 'Interrupted'})
    this.name = 'InterruptedError'
  }
}

/** Flag-level helper so every validation message has the same shape: `--flag "value": rule`. */
export function flagError(flag: string, value: string | undefined, rule: string, hints: string[] = []): UsageError {
  const shown = value === undefined ? '' : ` ${JSON.stringify(value)}`
  return new UsageError(`${flag}${shown}: ${rule}`, hints)
}

/** True when the error is a Ctrl-C from @inquirer/prompts or an AbortSignal. */
function isInterrupt(err: unknown): boolean {
  const name = (err as {name?: string} | undefined)?.name
  return name === 'ExitPromptError' || name === 'AbortPromptError' || name === 'InterruptedError'
}

export interface ReportedError {
  exit: number
  /** One line. */
  message: string
  /** Further problems of the same invocation, each printed as its own `Error:` line (UsageErrors). */
  problems?: string[]
  hints: string[]
  code: string
  /** Only filled for bugs, and printed only with DEBUG set. */
  stack?: string
}

/** What an oclif error carries besides its text (oclif/core lib/parser/errors.js for parse errors). */
interface OclifError {
  message: string
  oclif?: {exit?: number | false}
  code?: string
  stack?: string
  /** RequiredArgsError: the missing arguments. */
  args?: unknown[]
  /** NonExistentFlagsError: the unknown flags as typed. */
  flags?: string[]
  parse?: {input?: {flags?: Record<string, {char?: string; aliases?: string[]}>}}
}

/** Turns anything thrown into the one-line report the top level prints. */
export function toReport(err: unknown): ReportedError {
  if (err instanceof MeshvmError) {
    // oclif prefixes errors thrown by a custom flag's parser with "Parsing --flag \n\t": ours already name the flag.
    const message = err.message.replace(/^Parsing --\S+ \n\t/, '').replace(/\nSee more help with --help$/, '')
    const problems = err instanceof UsageErrors && err.problems.length > 1 ? {problems: err.problems.slice(1).map(firstLine)} : {}
    return {exit: err.exit, message: firstLine(message), ...problems, hints: err.hints, code: err.code, stack: err.stack}
  }
  if (isInterrupt(err)) return {exit: ExitCode.INTERRUPTED, message: 'interrupted', hints: [], code: 'Interrupted'}
  const e = typeof err === 'object' && err !== null ? (err as OclifError) : undefined
  if (typeof e?.oclif?.exit === 'number') {
    // oclif parse errors (unknown flag, missing argument, invalid option) are usage errors, in meshvm's words.
    if (e.oclif.exit === 0) return {exit: 0, message: '', hints: [], code: 'Usage'}
    const usage = usageFromOclif(e)
    return {exit: ExitCode.USAGE, message: usage.message, hints: usage.hints, code: 'Usage'}
  }
  if (e?.code === 'EPIPE') return {exit: 0, message: '', hints: [], code: 'EPIPE'}
  const message = typeof e?.message === 'string' ? e.message : String(err)
  return {
    exit: ExitCode.BUG,
    message: `internal error: ${firstLine(message)}`,
    hints: ['this is a bug in meshvm; re-run with --debug to see the stack trace and report it'],
    code: 'InternalError',
    stack: e?.stack,
  }
}

function firstLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? text
  return line.trim()
}

const FLAGS_HINT = 'see --help for the flags this command takes'
const ARGS_HINT = 'see --help for the arguments this command takes'

/**
 * oclif's parser errors in meshvm's one-line style (`--flag "value": what would be valid`), so every
 * usage error reads alike whichever layer found it: oclif's `Missing 1 required arg:` with its
 * description wrapped over several lines, `Nonexistent flag`, `Parsing --flag`, `Expected --x=y to be
 * one of`, `--a cannot also be provided when using --b`… A message this does not know keeps its
 * first line. The hint names what to look up in --help (main.ts puts the command into it).
 */
function usageFromOclif(err: OclifError): {message: string; hints: string[]} {
  const lines = oclifLines(err.message)
  const first = lines[0] ?? err.message.trim()
  let m: RegExpExecArray | null
  if (/^Missing \d+ required args?\b/.test(first)) {
    const args = (Array.isArray(err.args) ? err.args : []) as {name?: string; description?: string; options?: string[]}[]
    const named = args.filter((a) => a.name)
    const what = named.map((a) => {
      const desc = sentence(a.description ?? '')
      const options = a.options ? `expected one of ${a.options.join(', ')}` : ''
      return `${a.name!.toUpperCase()}${desc || options ? ': ' : ''}${[desc, options].filter(Boolean).join('; ')}`
    })
    // oclif's note about flags with several values is left out: it lists them all, given or not.
    return {message: `missing ${what.length > 0 ? what.join(', ') : 'arguments'}`, hints: [ARGS_HINT]}
  }
  if ((m = /^Nonexistent flags?: (.+)$/.exec(first))) {
    const typed = (err.flags && err.flags.length > 0 ? err.flags : m[1]!.split(', ')).map((f) => f.replace(/=.*$/, ''))
    const known = Object.entries(err.parse?.input?.flags ?? {}).flatMap(([name, f]) => [`--${name}`, ...(f.aliases ?? []).map((a) => `--${a}`)])
    const close = typed[0]!.startsWith('--') ? suggestCommands(typed[0]!, known) : []
    return {message: `unknown flag ${typed.join(', ')}`, hints: [...(close.length > 0 ? [`did you mean ${close.slice(0, 3).join(', ')}?`] : []), FLAGS_HINT]}
  }
  for (const [pattern, say, hint] of ONE_LINE) {
    const match = pattern.exec(first)
    if (match) return {message: say(match), hints: [hint]}
  }
  if ((m = /^Parsing (--\S+)$/.exec(first))) {
    const inner = lines[1] ?? ''
    let n: RegExpExecArray | null
    if ((n = /^Expected an integer (?:(greater|less) than or equal to (-?\d+) )?but received: (.*)$/.exec(inner))) {
      const bound = n[1] ? ` of ${n[1] === 'greater' ? 'at least' : 'at most'} ${n[2]}` : ''
      return {message: `${m[1]} ${JSON.stringify(n[3])}: expected a whole number${bound}`, hints: [FLAGS_HINT]}
    }
    return {message: `${m[1]}: ${sentence(inner.replace(/^Error:\s*/, '')) || 'invalid value'}`, hints: [FLAGS_HINT]}
  }
  // Flag relationships (FailedFlagValidationError lists one reason per line): the first is the message.
  const reasons = lines.map(relationship).filter((r): r is string => r !== undefined)
  if (reasons.length > 0) return {message: reasons[0]!, hints: [...reasons.slice(1), FLAGS_HINT]}
  return {message: first.replace(/^Error:\s*/, ''), hints: [...lines.slice(1, 3), FLAGS_HINT]}
}

type Rewrite = [RegExp, (m: RegExpExecArray) => string]

/** oclif's one-line parser messages in meshvm's words, each with the --help hint that fits. */
const ONE_LINE: [...Rewrite, string][] = [
  // The same words as an argument to a command that takes none (cli/entry.ts commandNotFound).
  [/^Unexpected arguments?: /, (m) => m.input, ARGS_HINT],
  [/^Expected --([^=\s]+)=(.*) to be one of: (.+)$/, (m) => `--${m[1]} ${JSON.stringify(m[2])}: expected one of ${m[3]}`, FLAGS_HINT],
  [/^Expected (.*) to be one of: (.+)$/, (m) => `argument ${JSON.stringify(m[1])}: expected one of ${m[2]}`, ARGS_HINT],
  [/^Flag (--\S+) can only be specified once$/, (m) => `${m[1]}: given more than once; it takes one value`, FLAGS_HINT],
  [/^Flag (--\S+) expects one of these values: (.+)$/, (m) => `${m[1]}: needs a value, one of ${m[2]}`, FLAGS_HINT],
  [/^Flag (--\S+) expects a value$/, (m) => `${m[1]}: needs a value`, FLAGS_HINT],
]

/** oclif's flag relationship failures (one per line of a FailedFlagValidationError), in meshvm's words. */
const RELATIONSHIPS: Rewrite[] = [
  [/^Missing required flag (\S+)$/, (m) => `missing required flag --${m[1]}`],
  [/^(--\S+?)(?:=(.*))? cannot also be provided when using (--\S+)$/, (m) => `${m[3]} and ${m[1]}${m[2] === undefined ? '' : `=${m[2]}`} cannot be combined: give one of them`],
  [/^All of the following must be provided when using (--\S+): (.+)$/, (m) => `${m[1]}: only applies with ${m[2]!.split(', ').join(' and ')}`],
  [/^(?:One|Some) of the following must be provided when using (--\S+): (.+)$/, (m) => `${m[1]}: only applies with one of ${m[2]}`],
  [/^Only the following can be provided when using (--\S+): (.+)$/, (m) => `${m[1]}: can only be combined with ${m[2]}`],
  [/^Exactly one of the following must be provided: (.+)$/, (m) => `give exactly one of ${m[1]}`],
  [/^At least one of the following must be provided: (.+)$/, (m) => `give at least one of ${m[1]}`],
]

function relationship(line: string): string | undefined {
  for (const [pattern, say] of RELATIONSHIPS) {
    const m = pattern.exec(line)
    if (m) return say(m)
  }
  return undefined
}

/** A description as a clause: no final period, lower case unless it starts with a NAME or an acronym. */
function sentence(text: string): string {
  const t = text.replace(/\s+/g, ' ').trim().replace(/\.$/, '')
  return /^[A-Z][a-z]/.test(t) ? t[0]!.toLowerCase() + t.slice(1) : t
}

// oclif's parser messages span several lines: "The following error occurred:\n  Missing required
// flag x\nSee more help with --help". Keep the lines that say something.
function oclifLines(text: string): string[] {
  return stripAnsi(text)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^The following errors? occurred:$/.test(l) && l !== 'See more help with --help')
}

/**
 * Removes what looks like a credential from text that came from a server or a file (Status messages,
 * URLs): bearer/basic tokens, Authorization values, JWTs, URL userinfo, token=… parameters.
 * Applied where server text enters an error (kube/errors.ts) and again when any error is printed.
 */
export function redactCredentials(text: string): string {
  return (
    text
      .replace(/\b(authorization|proxy-authorization)(["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|negotiate|digest)\s+)?[^\s"',;]+/gi, '$1$2[redacted]')
      .replace(/\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 [redacted]')
      .replace(/\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, '[redacted JWT]')
      .replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]*:[^\s/@]*@/gi, '$1[redacted]@')
      // token=…, password=… (query strings, env) and "token": "…" (JSON); not "token: …" prose.
      .replace(/\b((?:access_|id_|refresh_)?token|password|passwd|client_secret)=[^\s"'&,;]{4,}/gi, '$1=[redacted]')
      .replace(/"((?:access_|id_|refresh_)?token|password|client_secret)"(\s*:\s*)"[^"]{4,}"/gi, '"$1"$2"[redacted]"')
  )
}

export function stripAnsi(text: string): string {
  // eslint-disable-next-line no-control-regex
  return text.replace(/\u001B\[[0-9;]*m/g, '')
}

/** --debug, or DEBUG=meshvm (or *): API requests and retries, and stack traces of bugs, on stderr. */
export function debugEnabled(argv: readonly string[] = process.argv, env: NodeJS.ProcessEnv = process.env): boolean {
  const debug = env.DEBUG ?? ''
  return argv.includes('--debug') || debug.includes('meshvm') || debug === '*'
}
