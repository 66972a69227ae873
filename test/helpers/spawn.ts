/**
 * Runs the built CLI as a real child process that a test can watch and signal while it runs (for
 * Ctrl-C tests), where runCli() only gives the result. Output is logged for the secret scan like
 * runCli()'s.
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {existsSync} from 'node:fs'
import {BIN, OUTER_ENV, REPO_ROOT, type CliResult} from './cli.js'
import {logRun} from './secrets.js'

export interface RunningCli {
  child: ChildProcess
  stdout(): string
  stderr(): string
  /** Resolves when stdout or stderr matches (rejects if the process ends first or after timeoutMs). */
  waitForOutput(pattern: RegExp, timeoutMs?: number): Promise<void>
  /** Sends a signal (SIGINT: what Ctrl-C sends to the foreground process). */
  kill(signal: NodeJS.Signals): void
  /** The result; `signal` is set when the process was killed by a signal instead of exiting. */
  done: Promise<CliResult & {signal: NodeJS.Signals | null}>
}

export function startCli(args: string[], options: {env?: Record<string, string | undefined>; timeoutMs?: number} = {}): RunningCli {
  if (!existsSync(new URL('../../dist/meshvm.cjs', import.meta.url))) {
    throw new Error('dist/ is missing: run `npm run build` (npm test does it for you)')
  }
  const env: NodeJS.ProcessEnv = {...OUTER_ENV, NO_COLOR: '1', ...options.env}
  for (const [k, v] of Object.entries(options.env ?? {})) if (v === undefined) delete env[k]
  const child = spawn(process.execPath, [BIN, ...args], {cwd: REPO_ROOT, env, stdio: ['pipe', 'pipe', 'pipe']})
  const output = watchOutput(child)
  child.stdin!.end('')
  const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000)
  const done = new Promise<CliResult & {signal: NodeJS.Signals | null}>((resolve, reject) => {
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      output.ended()
      const [stdout, stderr] = [output.stdout(), output.stderr()]
      logRun({args, stdout, stderr, stdoutMayHoldSecrets: false})
      resolve({code: code ?? 128, signal, stdout, stderr})
    })
  })
  return {
    child,
    stdout: output.stdout,
    stderr: output.stderr,
    kill: (signal) => {
      child.kill(signal)
    },
    done,
    waitForOutput: (pattern, timeoutMs = 10_000) => output.waitFor(pattern, timeoutMs),
  }
}

/** Polls until `predicate` holds (e.g. the test API server has received a request), or fails after timeoutMs. */
export async function waitUntil(predicate: () => boolean, what: string, timeoutMs = 10_000): Promise<void> {
  const start = Date.now()
  while (!predicate()) {
    if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 10))
  }
}

/** What a test reads of a running child's output: all of it so far, and a wait for a pattern in it. */
export interface WatchedOutput {
  stdout(): string
  stderr(): string
  /** Resolves when stdout or stderr matches (rejects if the process ends first or after timeoutMs). */
  waitFor(pattern: RegExp, timeoutMs: number): Promise<void>
  /** Called once the child has closed, so that waits still pending fail at once. */
  ended(): void
}

export function watchOutput(child: ChildProcess): WatchedOutput {
  let stdout = ''
  let stderr = ''
  let ended = false
  const watchers = new Set<() => void>()
  const notify = () => {
    for (const w of [...watchers]) w()
  }
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    stdout += d
    notify()
  })
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d
    notify()
  })
  return {
    stdout: () => stdout,
    stderr: () => stderr,
    ended() {
      ended = true
      notify()
    },
    waitFor(pattern, timeoutMs) {
      return new Promise<void>((resolve, reject) => {
        const check = () => {
          if (pattern.test(stdout) || pattern.test(stderr)) finish()
          else if (ended) finish(new Error(`the process ended before printing ${pattern}\nstdout: ${stdout}\nstderr: ${stderr}`))
        }
        const t = setTimeout(() => finish(new Error(`no ${pattern} within ${timeoutMs} ms\nstdout: ${stdout}\nstderr: ${stderr}`)), timeoutMs)
        function finish(err?: Error): void {
          clearTimeout(t)
          watchers.delete(check)
          if (err) reject(err)
          else resolve()
        }
        watchers.add(check)
        check()
      })
    },
  }
}
