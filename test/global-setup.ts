/**
 * Runs once around the whole suite:
 * - gives the run its own temporary directory (TMPDIR, so every test file, test cluster and spawned CLI
 *   that asks os.tmpdir() writes below it) and removes it at the end: a run leaves nothing in /tmp,
 *   even when a test fails half-way or forgets to clean up;
 * - sets up the secret scan (see test/helpers/secrets.ts) and, at the end, fails the run if any secret
 *   a test recorded leaked into the CLI's output.
 */
import {existsSync, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

let dir: string
let runTmp: string
let outerTmp: string | undefined

export function setup(): void {
  outerTmp = process.env.TMPDIR
  runTmp = mkdtempSync(join(tmpdir(), 'meshvm-test-run-'))
  process.env.TMPDIR = runTmp
  dir = mkdtempSync(join(runTmp, 'scan-'))
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
  rmSync(runTmp, {recursive: true, force: true})
  if (outerTmp === undefined) delete process.env.TMPDIR
  else process.env.TMPDIR = outerTmp
  console.log(`secret scan: ${secrets.length} secret(s) checked against ${runs.length} CLI run(s)`)
  if (leaks.length > 0) {
    // vitest reports errors thrown here but keeps its exit code; make the run fail explicitly.
    process.exitCode = 1
    throw new Error(`secret scan: a recorded secret appeared in ${leaks.length} output(s): ${[...new Set(leaks)].slice(0, 5).join('; ')}`)
  }
}
