/**
 * `npm run bench`: meshvm against baselines measured in the same run (bare node, kubectl), as
 * ratios. `npm run bench -- --quick` does fewer runs and never fails on a target (for CI).
 * Writes bench/results.json. See the README's performance section.
 */
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {measurePair, type Stats} from './measure.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const BIN = join(ROOT, 'bin/run.js')
const quick = process.argv.includes('--quick')
const runs = quick ? 3 : 21
const warmup = quick ? 1 : 3

interface Case {
  name: string
  command: string[]
  baselineName: string
  baseline: string[]
  /** Maximum ratio meshvm/baseline. */
  target: number
  env?: NodeJS.ProcessEnv
}

interface Result {
  name: string
  meshvm: Stats
  baselineName: string
  baseline: Stats
  ratio: number
  target: number
  pass: boolean
}

const node = process.execPath
const offline: Case[] = [
  {name: 'meshvm --version', command: [node, BIN, '--version'], baselineName: 'node -e 0', baseline: [node, '-e', '0'], target: 1.5},
  {name: 'meshvm --help', command: [node, BIN, '--help'], baselineName: 'node -e 0', baseline: [node, '-e', '0'], target: 2.0},
  {
    name: 'meshvm onboard web -n apps -p http=8080 --probe-http 8080/healthz',
    command: [node, BIN, 'onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--probe-http', '8080/healthz'],
    baselineName: 'node -e 0', baseline: [node, '-e', '0'], target: 2.0,
  },
]

function fmt(ms: number): string {
  return `${ms.toFixed(0)} ms`
}

async function main(): Promise<void> {
  const env = {...process.env, NO_COLOR: '1'}
  const results: Result[] = []
  for (const c of offline) {
    const {command: meshvm, baseline} = await measurePair(c.command, c.baseline, {runs, warmup, env: {...env, ...c.env}, baselineEnv: env})
    const ratio = meshvm.median / baseline.median
    results.push({name: c.name, meshvm, baselineName: c.baselineName, baseline, ratio, target: c.target, pass: ratio <= c.target})
    process.stderr.write('.')
  }
  process.stderr.write('\n')
  const rows = results.map((r) => [
    r.name, `${fmt(r.meshvm.median)} (${fmt(r.meshvm.min)}–${fmt(r.meshvm.max)})`, `${r.baselineName}: ${fmt(r.baseline.median)}`,
    `${r.ratio.toFixed(2)}×`, `≤ ${r.target}×`, r.pass ? 'pass' : 'FAIL',
  ])
  const head = ['CASE', 'MESHVM MEDIAN (MIN–MAX)', 'BASELINE MEDIAN', 'RATIO', 'TARGET', 'RESULT']
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  for (const r of [head, ...rows]) console.log(r.map((c, i) => c.padEnd(widths[i]!)).join('   ').trimEnd())
  writeFileSync(join(ROOT, 'bench/results.json'), JSON.stringify({date: new Date().toISOString(), node: process.version, quick, runs, results}, null, 2) + '\n')
  const failed = results.filter((r) => !r.pass)
  if (failed.length > 0 && !quick) {
    console.error(`${failed.length} case(s) missed the target`)
    process.exitCode = 1
  }
}

await main()
