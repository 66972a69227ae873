/**
 * One error module for the whole CLI: typed errors, stable exit codes and "try this" hints.
 *
 * Every failure a user can cause or meet is a MeshvmError. Anything else that reaches the top level
 * is a bug (exit 10). Messages are one line; hints are optional and printed on a second line.
 * Messages must never contain secrets: callers pass names, never token or kubeconfig contents.
 */

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

/** Several independent input problems reported at once (the first one is the headline). */
export class UsageErrors extends UsageError {
  readonly problems: string[]
  constructor(problems: string[]) {
    super(problems[0] ?? 'invalid input', problems.length > 1 ? [`${problems.length - 1} more problem(s): ${problems.slice(1).join('; ')}`] : [])
    this.problems = problems
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
export function isInterrupt(err: unknown): boolean {
  const name = (err as {name?: string} | undefined)?.name
  return name === 'ExitPromptError' || name === 'AbortPromptError' || name === 'InterruptedError'
}

export interface ReportedError {
  exit: number
  /** One line. */
  message: string
  hints: string[]
  code: string
  /** Only filled for bugs, and printed only with DEBUG set. */
  stack?: string
}

interface OclifLikeError {
  message: string
  oclif?: {exit?: number | false}
  code?: string
  stack?: string
}

/** Turns anything thrown into the one-line report the top level prints. */
export function toReport(err: unknown): ReportedError {
  if (err instanceof MeshvmError) {
    // oclif prefixes errors thrown by a custom flag's parser with "Parsing --flag \n\t": ours already name the flag.
    const message = err.message.replace(/^Parsing --\S+ \n\t/, '').replace(/\nSee more help with --help$/, '')
    return {exit: err.exit, message: firstLine(message), hints: err.hints, code: err.code, stack: err.stack}
  }
  if (isInterrupt(err)) return {exit: ExitCode.INTERRUPTED, message: 'interrupted', hints: [], code: 'Interrupted'}
  const e = err as OclifLikeError | undefined
  if (e && typeof e === 'object' && e.oclif && typeof e.oclif.exit === 'number') {
    // oclif parse errors (unknown flag, missing argument, invalid option) are usage errors.
    return {exit: e.oclif.exit === 0 ? 0 : ExitCode.USAGE, message: oclifMessage(e.message), hints: oclifHints(e.message), code: 'Usage'}
  }
  if (e && typeof e === 'object' && (e as {code?: string}).code === 'EPIPE') {
    return {exit: 0, message: '', hints: [], code: 'EPIPE'}
  }
  const message = e && typeof e === 'object' && typeof e.message === 'string' ? e.message : String(err)
  return {
    exit: ExitCode.BUG,
    message: `internal error: ${firstLine(message)}`,
    hints: ['this is a bug in meshvm; re-run with --debug to see the stack trace and report it'],
    code: 'InternalError',
    stack: e && typeof e === 'object' ? e.stack : undefined,
  }
}

function firstLine(text: string): string {
  const line = text.split('\n').find((l) => l.trim() !== '') ?? text
  return line.trim()
}

// oclif's parser messages span several lines: "The following error occurred:\n  Missing required
// flag x\nSee more help with --help". Keep the first real problem as the message, the rest as hints.
function oclifLines(text: string): string[] {
  return stripAnsi(text)
    .split('\n')
    .map((l) => l.trim())
    .filter((l) => l !== '' && !/^The following errors? occurred:$/.test(l))
}

function oclifMessage(text: string): string {
  const first = oclifLines(text)[0] ?? text.trim()
  return first.replace(/^Error:\s*/, '').replace(/^Missing required flag (\S+)$/, 'missing required flag --$1')
}

function oclifHints(text: string): string[] {
  const lines = oclifLines(text).slice(1)
  const hints = lines.filter((l) => !/^See more help with --help$/.test(l)).slice(0, 2)
  return [...hints, 'see --help for the flags this command takes']
}

/**
 * Removes what looks like a credential from text that came from a server or a file (Status messages,
 * URLs): bearer/basic tokens, Authorization values, JWTs, URL userinfo, token=… parameters.
 * Applied where server text enters an error (kube/errors.ts) and again when any error is printed.
 */
export function redactCredentials(text: string): string {
  return text
    .replace(/\b(authorization|proxy-authorization)(["']?\s*[:=]\s*["']?)(?:(?:bearer|basic|negotiate|digest)\s+)?[^\s"',;]+/gi, '$1$2[redacted]')
    .replace(/\b(bearer|basic)\s+[A-Za-z0-9._~+/=-]{8,}/gi, '$1 [redacted]')
    .replace(/\beyJ[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]{4,}\.[A-Za-z0-9_-]*/g, '[redacted JWT]')
    .replace(/\b([a-z][a-z0-9+.-]*:\/\/)[^\s/@:]*:[^\s/@]*@/gi, '$1[redacted]@')
    // token=…, password=… (query strings, env) and "token": "…" (JSON); not "token: …" prose.
    .replace(/\b((?:access_|id_|refresh_)?token|password|passwd|client_secret)=[^\s"'&,;]{4,}/gi, '$1=[redacted]')
    .replace(/"((?:access_|id_|refresh_)?token|password|client_secret)"(\s*:\s*)"[^"]{4,}"/gi, '"$1"$2"[redacted]"')
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
