/**
 * `npm run test:faults`: runs the fault-injection and fuzz tests (test/faults, test/fuzz) with
 * vitest, then prints what they threw at meshvm: faults injected (from $MESHVM_FAULT_LOG), the
 * hardening classes attacked (test/faults/hostile-*.test.ts, counted per class; certificates.test.ts
 * logs each server-certificate class of issue #26, bounded-bodies.test.ts its limits), commands
 * covered, fuzz cases (from $MESHVM_FUZZ_LOG), tests passed/failed (from vitest's JSON report).
 * Exits non-zero if vitest failed or any test failed. Extra arguments go to vitest; FUZZ_RUNS scales
 * the fuzz tests (`FUZZ_RUNS=25000 npm run test:faults`).
 */
import {spawnSync} from 'node:child_process'
import {existsSync, mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'

const dir = mkdtempSync(join(tmpdir(), 'meshvm-test-faults-'))
const faultLog = join(dir, 'faults.jsonl')
const fuzzLog = join(dir, 'fuzz.jsonl')
const report = join(dir, 'report.json')

const args = ['vitest', 'run', 'test/faults', 'test/fuzz', '--reporter=default', '--reporter=json', `--outputFile.json=${report}`, ...process.argv.slice(2)]
const run = spawnSync('npx', args, {stdio: 'inherit', env: {...process.env, MESHVM_FAULT_LOG: faultLog, MESHVM_FUZZ_LOG: fuzzLog}})

const jsonLines = (file) =>
  existsSync(file)
    ? readFileSync(file, 'utf8')
        .split('\n')
        .filter(Boolean)
        .map((l) => JSON.parse(l))
    : []
const faults = jsonLines(faultLog)
const fuzz = jsonLines(fuzzLog)
const results = existsSync(report) ? JSON.parse(readFileSync(report, 'utf8')) : undefined
rmSync(dir, {recursive: true, force: true})

/** Counts per key, in first-seen order. */
function tally(items, key) {
  const counts = new Map()
  for (const item of items) counts.set(key(item), (counts.get(key(item)) ?? 0) + (item.count ?? 1))
  return counts
}
// "429 Too Many Requests (Retry-After: 1)" → "429 Too Many Requests"
const kinds = tally(faults, (f) => f.fault.replace(/ \(.*\)$/, ''))
// The hardening classes (issues #17, #26) the fault tests attacked: certificates, false success, files, hangs and
// limits, secrets and terminals, crashes, kubectl compatibility.
const classes = tally(
  faults.filter((f) => f.class),
  (f) => f.class,
)
const commands = tally(faults, (f) => f.command)
const areas = tally(fuzz, (f) => f.area)
const sum = (counts) => [...counts.values()].reduce((a, b) => a + b, 0)

const passed = results?.numPassedTests ?? 0
const failedTests = results?.numFailedTests ?? 0
// Test files that failed without a failed test (e.g. an error while loading, or in beforeAll).
const brokenFiles = (results?.testResults ?? []).filter((f) => f.status === 'failed' && !f.assertionResults.some((a) => a.status === 'failed')).length
const problems = []
if (!results) problems.push('no vitest JSON report was written')
if (run.status !== 0) problems.push(`vitest exited with ${run.status ?? run.signal ?? run.error?.message}`)
const failures = failedTests + brokenFiles

const width = process.stdout.columns || 100
const row = (label, value, detail) => {
  const head = `${label.padEnd(18)}${String(value).padEnd(7)}`
  if (!detail) return head.trimEnd()
  // Wrap the detail under itself rather than past the terminal's edge.
  const lines = ['']
  for (const word of `(${detail})`.split(' ')) {
    if (lines.at(-1) && head.length + lines.at(-1).length + word.length + 1 > width) lines.push('')
    lines[lines.length - 1] += (lines.at(-1) ? ' ' : '') + word
  }
  return lines.map((l, i) => (i === 0 ? head : ' '.repeat(head.length)) + l).join('\n')
}
const list = (counts) => [...counts].map(([k, n]) => `${k} ${n}`).join(', ')

console.log(`
meshvm fault and fuzz summary
${row('faults injected', faults.length, `${kinds.size} kinds: ${list(kinds)}`)}
${row('hostile classes', classes.size, list(classes))}
${row('commands covered', commands.size, [...commands.keys()].join(', '))}
${row('cases fuzzed', sum(areas), list(areas))}
${row('tests', `${passed} passed, ${failedTests} failed${brokenFiles ? `, ${brokenFiles} file(s) broken` : ''}`)}
${row('failures', failures)}${problems.map((p) => `\n  ${p}`).join('')}
`)
process.exitCode = failures > 0 || problems.length > 0 ? 1 : 0
