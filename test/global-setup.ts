/**
 * Runs once around the whole suite: sets up the secret scan (see test/helpers/secrets.ts) and, at
 * the end, fails the run if any secret a test recorded leaked into the CLI's output.
 */
import {existsSync, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

let dir: string

export function setup(): void {
  dir = mkdtempSync(join(tmpdir(), 'meshvm-scan-'))
  process.env.MESHVM_SECRET_LOG = join(dir, 'secrets.jsonl')
  process.env.MESHVM_OUTPUT_LOG = join(dir, 'outputs.jsonl')
}

export function teardown(): void {
  const lines = (file: string) => (existsSync(file) ? readFileSync(file, 'utf8').split('\n').filter(Boolean) : [])
  const secrets = [...new Set(lines(process.env.MESHVM_SECRET_LOG!).map((l) => JSON.parse(l) as string))]
  const runs = lines(process.env.MESHVM_OUTPUT_LOG!).map((l) => JSON.parse(l) as {args: string[]; stdout: string; stderr: string; stdoutMayHoldSecrets: boolean})
  const leaks: string[] = []
  for (const run of runs) {
    for (const secret of secrets) {
      if (run.stderr.includes(secret)) leaks.push(`stderr of meshvm ${run.args.join(' ')}`)
      else if (!run.stdoutMayHoldSecrets && run.stdout.includes(secret)) leaks.push(`stdout of meshvm ${run.args.join(' ')}`)
    }
  }
  rmSync(dir, {recursive: true, force: true})
  console.log(`secret scan: ${secrets.length} secret(s) checked against ${runs.length} CLI run(s)`)
  if (leaks.length > 0) {
    // vitest reports errors thrown here but keeps its exit code; make the run fail explicitly.
    process.exitCode = 1
    throw new Error(`secret scan: a recorded secret appeared in ${leaks.length} output(s): ${[...new Set(leaks)].slice(0, 5).join('; ')}`)
  }
}
