/**
 * `npm run bench`: meshvm against baselines measured in the same run (bare node, kubectl), as
 * ratios. `npm run bench -- --quick` does fewer runs and never fails on a target (for CI).
 * Writes bench/results.json. See the README's performance section.
 */
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {execFileSync} from 'node:child_process'
import {measurePair, runOnce, type Stats} from './measure.js'
import {clusterWithProxies, clusterWithWars, onboardObjectsFile} from './cluster.js'
import type {TestCluster} from '../test/cluster/index.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const BIN = join(ROOT, 'bin/run.js')
const quick = process.argv.includes('--quick')
const runs = quick ? 3 : 21
const warmup = quick ? 1 : 3
const clusterRuns = quick ? 2 : 7
const offlineOnly = process.argv.includes('--offline')
// `--only TEXT`: just the cases whose name contains TEXT (no growth table), for working on one case.
const onlyIndex = process.argv.indexOf('--only')
const only = onlyIndex > 0 ? process.argv[onlyIndex + 1] : undefined
const selected = (name: string) => only === undefined || name.includes(only)

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

interface ClusterCase extends Omit<Case, 'env'> {
  /** Starts and seeds the cluster the case runs against. */
  cluster: () => Promise<TestCluster>
}

const WARS = quick ? 1_000 : 10_000
const PROXIES = quick ? 500 : 5_000
const clusterCases: ClusterCase[] = [
  {name: `meshvm war list -A (${WARS} WARs)`, command: [node, BIN, 'war', 'list', '-A'], baselineName: 'kubectl get war -A', baseline: ['kubectl', 'get', 'war', '-A'], target: 1.0, cluster: () => clusterWithWars(WARS)},
  {name: `meshvm war list -A -o json (${WARS} WARs)`, command: [node, BIN, 'war', 'list', '-A', '-o', 'json'], baselineName: 'kubectl get war -A -o json', baseline: ['kubectl', 'get', 'war', '-A', '-o', 'json'], target: 1.0, cluster: () => clusterWithWars(WARS)},
  {name: `meshvm proxy-status (${PROXIES} proxies, 3 istiods)`, command: [node, BIN, 'proxy-status'], baselineName: `kubectl get workloadentries -A (${PROXIES})`, baseline: ['kubectl', 'get', 'workloadentries', '-A'], target: 1.5, cluster: () => clusterWithProxies(PROXIES)},
]

const APPLY_CASE = 'meshvm onboard … --apply (4 objects)'
const ONBOARD = ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-s', 'web-vm', '--create-namespace', '--create-service-account']

async function measureCluster(c: ClusterCase): Promise<Result> {
  const cluster = await c.cluster()
  try {
    const env = {...process.env, NO_COLOR: '1', ...cluster.env}
    const {command: meshvm, baseline} = await measurePair(c.command, c.baseline, {runs: clusterRuns, warmup: 1, env})
    const ratio = meshvm.median / baseline.median
    return {name: c.name, meshvm, baselineName: c.baselineName, baseline, ratio, target: c.target, pass: ratio <= c.target}
  } finally {
    await cluster.stop()
  }
}

async function measureApply(): Promise<Result> {
  const {startTestCluster} = await import('../test/cluster/index.js')
  const cluster = await startTestCluster()
  try {
    const env = {...process.env, NO_COLOR: '1', ...cluster.env}
    const yaml = execFileSync(node, [BIN, ...ONBOARD], {env, encoding: 'utf8'})
    const file = onboardObjectsFile(yaml)
    const command = [node, BIN, ...ONBOARD, '--apply']
    const baseline = ['kubectl', 'apply', '--server-side', '--field-manager=bench', '--force-conflicts', '-f', file]
    const m = await measurePair(command, baseline, {runs: clusterRuns * 2, warmup: 1, env})
    const ratio = m.command.median / m.baseline.median
    return {name: APPLY_CASE, meshvm: m.command, baselineName: 'kubectl apply --server-side -f (same 4)', baseline: m.baseline, ratio, target: 1.5, pass: ratio <= 1.5}
  } finally {
    await cluster.stop()
  }
}

/** How cost grows with the number of objects: wall time and peak RSS of one run each. */
async function growth(): Promise<{objects: number; command: string; wallMs: number; peakRssKiB?: number}[]> {
  const rows: {objects: number; command: string; wallMs: number; peakRssKiB?: number}[] = []
  for (const n of quick ? [1_000] : [1_000, 10_000, 50_000]) {
    const cluster = await clusterWithWars(n)
    try {
      const env = {...process.env, NO_COLOR: '1', ...cluster.env}
      for (const argv of [[node, BIN, 'war', 'list', '-A'], [node, BIN, 'war', 'list', '-A', '-o', 'json'], ['kubectl', 'get', 'war', '-A'], ['kubectl', 'get', 'war', '-A', '-o', 'json']]) {
        await runOnce(argv, env)
        const sample = await runOnce(argv, env, true)
        if (sample.code !== 0) throw new Error(`${argv.join(' ')} exited ${sample.code}: ${sample.stderr.trim().split('\n').pop()}`)
        rows.push({objects: n, command: argv[0] === node ? `meshvm ${argv.slice(2).join(' ')}` : argv.join(' '), wallMs: sample.wallMs, peakRssKiB: sample.peakRssKiB})
      }
    } finally {
      await cluster.stop()
    }
    process.stderr.write('.')
  }
  return rows
}

/**
 * NODE_EXTRA_CA_CERTS makes Node 20 parse those certificates, and its own ~140 root certificates, at
 * start-up, before any JavaScript runs: on some machines that is most of `node -e 0`. It inflates the
 * `node -e 0` baseline (flattering the offline ratios) and every meshvm run (penalising the ratios
 * against kubectl, which is not affected). The bench keeps the machine's environment for the official
 * results, and reports what the variable costs and the offline ratios without it.
 */
const EXTRA_CA = 'NODE_EXTRA_CA_CERTS'

interface ExtraCaReport {
  nodeWith: Stats
  nodeWithout: Stats
  /** Offline cases measured with the variable unset for both meshvm and `node -e 0`. */
  offlineWithout: {name: string; ratio: number; target: number}[]
}

async function extraCaReport(offlineCases: Case[]): Promise<ExtraCaReport | undefined> {
  if (!process.env[EXTRA_CA]) return undefined
  const env: NodeJS.ProcessEnv = {...process.env, NO_COLOR: '1'}
  const without: NodeJS.ProcessEnv = {...env}
  delete without[EXTRA_CA]
  const {command: nodeWith, baseline: nodeWithout} = await measurePair([node, '-e', '0'], [node, '-e', '0'], {runs, warmup, env, baselineEnv: without})
  const offlineWithout: ExtraCaReport['offlineWithout'] = []
  for (const c of offlineCases) {
    const m = await measurePair(c.command, c.baseline, {runs, warmup, env: without})
    offlineWithout.push({name: c.name, ratio: m.command.median / m.baseline.median, target: c.target})
  }
  return {nodeWith, nodeWithout, offlineWithout}
}

async function main(): Promise<void> {
  const env = {...process.env, NO_COLOR: '1'}
  const results: Result[] = []
  const offlineCases = offline.filter((c) => selected(c.name))
  for (const c of offlineCases) {
    const {command: meshvm, baseline} = await measurePair(c.command, c.baseline, {runs, warmup, env: {...env, ...c.env}, baselineEnv: env})
    const ratio = meshvm.median / baseline.median
    results.push({name: c.name, meshvm, baselineName: c.baselineName, baseline, ratio, target: c.target, pass: ratio <= c.target})
    process.stderr.write('.')
  }
  const extraCa = await extraCaReport(offlineCases)
  let scaling: Awaited<ReturnType<typeof growth>> = []
  if (!offlineOnly) {
    for (const c of clusterCases.filter((c) => selected(c.name))) {
      results.push(await measureCluster(c))
      process.stderr.write('.')
    }
    if (selected(APPLY_CASE)) results.push(await measureApply())
    if (only === undefined) scaling = await growth()
  }
  process.stderr.write('\n')
  const rows = results.map((r) => [
    r.name, `${fmt(r.meshvm.median)} (${fmt(r.meshvm.min)}–${fmt(r.meshvm.max)})`, `${r.baselineName}: ${fmt(r.baseline.median)}`,
    `${r.ratio.toFixed(2)}×`, `≤ ${r.target}×`, r.pass ? 'pass' : 'FAIL',
  ])
  const head = ['CASE', 'MESHVM MEDIAN (MIN–MAX)', 'BASELINE MEDIAN', 'RATIO', 'TARGET', 'RESULT']
  const widths = head.map((h, i) => Math.max(h.length, ...rows.map((r) => r[i]!.length)))
  for (const r of [head, ...rows]) console.log(r.map((c, i) => c.padEnd(widths[i]!)).join('   ').trimEnd())
  if (extraCa) {
    console.log(`\n${EXTRA_CA} is set: node -e 0 takes ${fmt(extraCa.nodeWith.median)} with it and ${fmt(extraCa.nodeWithout.median)} without.`)
    console.log('Node 20 loads those certificates (and its own root store) at start-up: every meshvm run pays this, kubectl does not,')
    console.log('and it inflates the node -e 0 baseline. The results above keep the machine\'s environment; without the variable:')
    for (const r of extraCa.offlineWithout) console.log(`  ${r.name.padEnd(widths[0]!)}   ${r.ratio.toFixed(2)}×   (target ≤ ${r.target}×, informational)`)
  }
  if (scaling.length > 0) {
    console.log('\nGROWTH (one run each after a warm-up)')
    for (const r of scaling) console.log(`${String(r.objects).padStart(6)} objects   ${r.command.padEnd(34)} ${fmt(r.wallMs).padStart(9)}   peak RSS ${r.peakRssKiB ? (r.peakRssKiB / 1024).toFixed(0) + ' MiB' : 'n/a'}`)
  }
  const rss = results.map((r) => ({name: r.name, meshvmPeakRssMiB: r.meshvm.peakRssKiB ? Math.round(r.meshvm.peakRssKiB / 1024) : undefined}))
  if (only === undefined) writeFileSync(join(ROOT, 'bench/results.json'), JSON.stringify({date: new Date().toISOString(), node: process.version, quick, runs, results, rss, scaling, extraCaCerts: extraCa ?? null}, null, 2) + '\n')
  const failed = results.filter((r) => !r.pass)
  if (failed.length > 0 && !quick) {
    console.error(`${failed.length} case(s) missed the target`)
    process.exitCode = 1
  }
}

await main()
