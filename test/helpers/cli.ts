/**
 * Runs the built CLI (bin/run.js → dist/) as a real process, the way users run it.
 * `npm test` builds first, so these tests always exercise the shipped bundle and manifest.
 * Tests of what a command does (not of the process) use runCommand() from in-process.ts: the same
 * bundle, run inside the test process.
 */
import {spawn} from 'node:child_process'
import {existsSync} from 'node:fs'
import {fileURLToPath} from 'node:url'
import {logRun} from './secrets.js'

export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const BIN = fileURLToPath(new URL('../../bin/run.js', import.meta.url))
/**
 * The test process's own environment, captured when this module loads: a command run in-process
 * (in-process.ts) has process.env to itself while it runs, and a child started meanwhile must not
 * inherit it.
 */
export const OUTER_ENV: NodeJS.ProcessEnv = process.env

export interface CliResult {
  code: number
  stdout: string
  stderr: string
}

export interface CliOptions {
  env?: Record<string, string | undefined>
  cwd?: string
  input?: string
  timeoutMs?: number
  /** The command is meant to print a secret on stdout (the secret scan then checks stderr only). */
  stdoutMayHoldSecrets?: boolean
}

export function runCli(args: string[], options: CliOptions = {}): Promise<CliResult> {
  if (!existsSync(new URL('../../dist/meshvm.cjs', import.meta.url))) {
    throw new Error('dist/ is missing: run `npm run build` (npm test does it for you)')
  }
  return new Promise((resolve, reject) => {
    const env: NodeJS.ProcessEnv = {...OUTER_ENV, NO_COLOR: '1', ...options.env}
    for (const [k, v] of Object.entries(options.env ?? {})) if (v === undefined) delete env[k]
    const child = spawn(process.execPath, [BIN, ...args], {cwd: options.cwd ?? REPO_ROOT, env, stdio: ['pipe', 'pipe', 'pipe']})
    let stdout = ''
    let stderr = ''
    child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    const timer = setTimeout(() => child.kill('SIGKILL'), options.timeoutMs ?? 20_000)
    child.on('error', reject)
    child.on('close', (code, signal) => {
      clearTimeout(timer)
      logRun({args, stdout, stderr, stdoutMayHoldSecrets: Boolean(options.stdoutMayHoldSecrets)})
      resolve({code: code ?? (signal ? 128 : 1), stdout, stderr})
    })
    child.stdin.end(options.input ?? '')
  })
}

/** A Node/V8 stack frame line: what users must never see. */
export const STACK_TRACE = /^\s+at .+\(?.+:\d+:\d+\)?$/m
