/**
 * Runs a meshvm command inside the test's own process: the built bundle (dist/meshvm.cjs, the file
 * bin/run.js loads) is loaded once per test file, and its main() is called with the command line, as
 * bin/run.js calls it. The result is runCli()'s: exit code, stdout and stderr, logged for the secret scan.
 *
 * A process adds about three times a command's own CPU (Node's start, the bundle's load): tests of
 * what a command does use runCommand(); tests of the process itself use runCli() from cli.ts (the
 * real bin/run.js: --version, the help cache, the code cache, signals, a terminal, the kubectl-plugin
 * name, exit codes of the bin for a few smokes). runCommand() itself hands runCli() the runs that need
 * a process: stdin input (or -f -), another working directory, DEBUG, colour and OCLIF_COLUMNS (read at start-up),
 * `--version`, and a kubeconfig with an exec credential plugin (the plugin inherits the process's stderr
 * file descriptor, which in this process would bypass the capture and the secret scan). After a run
 * times out, later runs of the worker go to runCli() until the timed-out main() has settled: while
 * it runs, it would write into the next command's streams.
 *
 * While a command runs, the process-wide things it reads are its own: process.env (the test's env
 * plus NO_COLOR=1 and options.env, as runCli builds it for the child), process.argv (bin/run.js and
 * the arguments), process.exitCode, process.stdout/stderr/stdin (pipes that are not terminals, as a
 * child's are; stdin is empty) and the global console. Commands run one at a time per test file (the bundle's
 * module state, such as the invocation kept for hints, is per process); tests may still start them
 * concurrently. runCli() and kubectl() keep spawning with the test's own environment meanwhile.
 */
import {Console} from 'node:console'
import {readFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {delimiter, join} from 'node:path'
import {Readable, Writable} from 'node:stream'
import {pathToFileURL} from 'node:url'
import {BIN, OUTER_ENV, REPO_ROOT, runCli, type CliOptions, type CliResult} from './cli.js'
import {logRun} from './secrets.js'

type Bundle = {main(argv: string[], rootUrl: string): Promise<number>}

interface Streams {
  stdout: Writable
  stderr: Writable
  stdin: Readable
}

let bundle: Bundle | undefined
let active: Streams | undefined
let queue: Promise<unknown> = Promise.resolve()
let installed = false
/**
 * Set while a timed-out command's main() still runs: until it settles, no command runs in this
 * process (it would write into the next command's streams), runCommand() hands runs to runCli().
 */
let refused: {reason: string; settled: Promise<void>} | undefined

/** The refusal in force in this worker, if any (for the tests of this file). */
export function inProcessRefused(): {reason: string; settled: Promise<void>} | undefined {
  return refused
}

/** process.stdout/stderr/stdin are the running command's while one runs, else the process's own. */
function install(): void {
  if (installed) return
  installed = true
  for (const name of ['stdout', 'stderr', 'stdin'] as const) {
    const own = Object.getOwnPropertyDescriptor(process, name)!
    Object.defineProperty(process, name, {
      configurable: true,
      enumerable: own.enumerable,
      get: () => (active ? active[name] : own.get!.call(process)),
    })
  }
}

/** A pipe's end: what is written is kept (bytes, decoded at the end as the child's stream would be). */
function collector(): {stream: Writable; text(): string} {
  const chunks: Buffer[] = []
  const stream = new Writable({
    write(chunk: Buffer | string, encoding, cb) {
      chunks.push(typeof chunk === 'string' ? Buffer.from(chunk, encoding) : chunk)
      cb()
    },
  })
  return {stream, text: () => Buffer.concat(chunks).toString('utf8')}
}

/** Arguments that make the command read its stdin (-f -): only a real process has the file descriptor. */
function readsStdin(args: string[]): boolean {
  return args.some((a, i) => a === '-' || a === '-f-' || a === '--filename=-' || a === '-f=-' || (a === '--' && args[i + 1] === '-'))
}

/**
 * What only a real process gives a run: stdin, a working directory, DEBUG, colour and oclif's
 * OCLIF_COLUMNS (the bundle's libraries read them once, when loaded), and `--version`/`-v`, which
 * bin/run.js answers itself.
 */
function needsProcess(args: string[], options: CliOptions, runEnv: NodeJS.ProcessEnv): boolean {
  const env = options.env ?? {}
  if (args.length === 1 && (args[0] === '--version' || args[0] === '-v')) return true
  return (
    Boolean(options.input) ||
    options.cwd !== undefined ||
    readsStdin(args) ||
    env.DEBUG !== undefined ||
    env.MESHVM_DEBUG !== undefined ||
    env.FORCE_COLOR !== undefined ||
    env.OCLIF_COLUMNS !== undefined ||
    ('NO_COLOR' in env && env.NO_COLOR === undefined) ||
    hasExecUser(args, runEnv)
  )
}

/** The kubeconfig files the run reads: --kubeconfig, else $KUBECONFIG's list, else ~/.kube/config. */
function kubeconfigPaths(args: string[], env: NodeJS.ProcessEnv): string[] {
  for (let i = 0; i < args.length && args[i] !== '--'; i++) {
    if (args[i] === '--kubeconfig' && args[i + 1] !== undefined) return [args[i + 1]!]
    if (args[i]!.startsWith('--kubeconfig=')) return [args[i]!.slice('--kubeconfig='.length)]
  }
  if (env.KUBECONFIG) return env.KUBECONFIG.split(delimiter).filter(Boolean)
  return env.HOME ? [join(env.HOME, '.kube', 'config')] : []
}

/**
 * A kubeconfig naming an exec credential plugin (block or flow style). Read as text, not parsed: a
 * false positive only costs a process.
 */
function hasExecUser(args: string[], env: NodeJS.ProcessEnv): boolean {
  return kubeconfigPaths(args, env).some((path) => {
    let text: string
    try {
      text = readFileSync(path, 'utf8')
    } catch {
      return false
    }
    return /(?:^|[\s{,])["']?exec["']?\s*:/m.test(text)
  })
}

/**
 * Runs `meshvm ARGS` in this process, or, when the run needs what only a process gives (stdin input,
 * a working directory, DEBUG, colour), through the real bin with runCli().
 */
export function runCommand(args: string[], options: CliOptions = {}): Promise<CliResult> {
  const env: NodeJS.ProcessEnv = {...OUTER_ENV, NO_COLOR: '1', ...options.env}
  for (const [k, v] of Object.entries(options.env ?? {})) if (v === undefined) delete env[k]
  if (refused !== undefined || needsProcess(args, options, env)) return runCli(args, options)
  // A run queued before an earlier one timed out goes to a process too.
  const run = queue.then(() => (refused === undefined ? execute(args, env, options) : runCli(args, options)))
  queue = run.catch(() => undefined)
  return run
}

async function execute(args: string[], env: NodeJS.ProcessEnv, options: CliOptions): Promise<CliResult> {
  install()
  const stdout = collector()
  const stderr = collector()
  const saved = {env: process.env, argv: process.argv, exitCode: process.exitCode, console: globalThis.console}
  process.env = env
  // oclif prints help with console.log: the global console writes to the streams it was made with.
  globalThis.console = new Console({stdout: stdout.stream, stderr: stderr.stream})
  process.argv = [process.execPath, BIN, ...args]
  process.exitCode = undefined
  active = {stdout: stdout.stream, stderr: stderr.stream, stdin: Readable.from([])}
  let timer: NodeJS.Timeout | undefined
  let code: number
  try {
    bundle ??= createRequire(import.meta.url)(join(REPO_ROOT, 'dist/meshvm.cjs')) as Bundle
    const timeoutMs = options.timeoutMs ?? 20_000
    const main = bundle.main(args, pathToFileURL(REPO_ROOT).href)
    const timedOut = new Promise<never>((_, reject) => {
      timer = setTimeout(() => {
        // Its main() goes on running (nothing can stop it): until it settles, later runs get a process.
        const settled = main
          .then(
            () => undefined,
            () => undefined,
          )
          .then(() => {
            // What it set when it ended is not the test process's exit code.
            process.exitCode = saved.exitCode
            refused = undefined
          })
        refused = {reason: `meshvm ${args.join(' ')} timed out and still runs in this worker`, settled}
        reject(new Error(`meshvm ${args.join(' ')} did not finish within ${timeoutMs} ms\nstdout: ${stdout.text()}\nstderr: ${stderr.text()}`))
      }, timeoutMs)
    })
    code = await Promise.race([main, timedOut])
  } finally {
    clearTimeout(timer)
    active = undefined
    process.env = saved.env
    process.argv = saved.argv
    process.exitCode = saved.exitCode
    globalThis.console = saved.console
  }
  const result = {code, stdout: stdout.text(), stderr: stderr.text()}
  logRun({args, stdout: result.stdout, stderr: result.stderr, stdoutMayHoldSecrets: Boolean(options.stdoutMayHoldSecrets)})
  return result
}
