/**
 * The suite-wide secret scan: every secret a test creates or learns (bearer tokens, issued JWTs,
 * kubeconfig contents) is recorded with recordSecret(); every CLI run's stdout/stderr is logged by
 * runCli(). test/global-setup.ts fails the run if any recorded secret appears in any stderr, or in
 * stdout of a run that was not asked to print it.
 */
import {appendFileSync} from 'node:fs'

export function recordSecret(value: string): void {
  const log = process.env.MESHVM_SECRET_LOG
  if (log && value.length >= 8) appendFileSync(log, JSON.stringify(value) + '\n')
}

export interface LoggedRun {
  args: string[]
  stdout: string
  stderr: string
  /** Runs whose stdout is meant to carry a secret (e.g. create-remote-secret) are only scanned on stderr. */
  stdoutMayHoldSecrets: boolean
}

export function logRun(run: LoggedRun): void {
  const log = process.env.MESHVM_OUTPUT_LOG
  if (log) appendFileSync(log, JSON.stringify(run) + '\n')
}
