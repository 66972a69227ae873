/**
 * `npm run bench:real`: meshvm against its real peers (istioctl of the same Istio release, kubectl) on
 * the real control plane of test/real (etcd, kube-apiserver, kube-controller-manager and istiod built
 * from their Go modules, on loopback), on Node 24. Needs Go and the module cache (binaries come from
 * tools/control-plane/build.sh); `npm run bench` does not run it.
 *
 * Every case runs meshvm and its baseline alternately (after warm-up runs) under bench/rusage.py and
 * compares medians of CPU time (user + sys of the measured process, from wait4): on a shared 2-core
 * machine wall time measures the load as much as the program. Wall-time medians and the load average
 * are printed beside them. Then how `war list -A` and `proxy-status` grow with the number of objects
 * on the real API server, next to kubectl's and istioctl's. Writes bench/results-real.json.
 *
 *   npm run bench:real -- [--runs N] [--vms N] [--sizes 1000,10000,50000] [--istio 1.31|1.30] [--only TEXT]
 *
 * --hold: set up (control plane, VMs, remote secret), print the environment to use, and wait for
 * Ctrl-C instead of measuring: for profiling by hand (`node --cpu-prof bin/run.js …`).
 */
import {execFileSync} from 'node:child_process'
import {mkdtempSync, readdirSync, rmSync, writeFileSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'
import {measureInterleavedCpu, runCpu, type CpuStats} from './measure.js'
import {buildControlPlane, istioReleaseFromEnv, startRealControlPlane, type IstioRelease, type Kube, type RealControlPlane} from '../test/real/control-plane.js'
import {onboardWebWithBundle} from '../test/helpers/stories.js'
import {joinIstiod, type VmConnection} from '../test/real/vm/client.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const BIN = join(ROOT, 'bin/run.js')
const {values: opts} = parseArgs({
  options: {runs: {type: 'string'}, vms: {type: 'string'}, sizes: {type: 'string'}, istio: {type: 'string'}, only: {type: 'string'}, hold: {type: 'boolean'}},
  strict: true,
})
const RUNS = Number(opts.runs ?? 11)
const VMS = Number(opts.vms ?? 24)
const SIZES = (opts.sizes ?? '1000,10000,50000').split(',').map(Number)
const ISTIO: IstioRelease = istioReleaseFromEnv(opts.istio ? {MESHVM_REAL_ISTIO: opts.istio} : process.env)
/** The WAR count of the `war list -A` case (its target is checked there). */
const CASE_WARS = 10_000
const selected = (name: string) => opts.only === undefined || name.includes(opts.only)

const NODE = join(execFileSync('bash', [join(ROOT, '.ci/node-lts.sh'), '--fetch', '24'], {encoding: 'utf8'}).trim(), 'node')
const NODE_VERSION = execFileSync(NODE, ['--version'], {encoding: 'utf8'}).trim()

interface Row {
  name: string
  baselineName: string
  target?: number
  meshvm: CpuStats
  baseline: CpuStats
  cpuRatio: number
  wallRatio: number
  load: [number, number]
  pass?: boolean
}

const rows: Row[] = []
const growth: {objects: number; command: string; cpuMs: number; wallMs: number; peakRssKiB: number}[] = []
const failures: string[] = []
const load1 = () => Math.round(loadavg()[0]! * 10) / 10

async function pair(
  name: string,
  baselineName: string,
  target: number | undefined,
  meshvm: string[],
  baseline: string[],
  env: NodeJS.ProcessEnv,
  o: {runs?: number; before?: () => void; baselineBefore?: () => void} = {},
): Promise<void> {
  if (!selected(name)) return
  const before = load1()
  let measured: CpuStats[]
  try {
    measured = await measureInterleavedCpu(
      [
        {argv: baseline, env, before: o.baselineBefore},
        {argv: [NODE, BIN, ...meshvm], env, before: o.before},
      ],
      {runs: o.runs ?? RUNS, warmup: 2},
    )
  } catch (err) {
    process.stderr.write(`bench:real: ${name}: not measured: ${(err as Error).message}\n`)
    failures.push(`${name}: ${(err as Error).message}`)
    return
  }
  const [b, m] = measured
  const row: Row = {name, baselineName, target, meshvm: m!, baseline: b!, cpuRatio: m!.cpu.median / b!.cpu.median, wallRatio: m!.wall.median / b!.wall.median, load: [before, load1()]}
  if (target !== undefined) row.pass = row.cpuRatio <= target
  rows.push(row)
  process.stderr.write(
    `bench:real: ${name}: cpu ${m!.cpu.median.toFixed(0)} / ${b!.cpu.median.toFixed(0)} ms = ${row.cpuRatio.toFixed(2)}×, wall ${row.wallRatio.toFixed(2)}× (load ${row.load.join('→')})\n`,
  )
}

const WAR_NAMESPACES = ['shop', 'payments', 'legacy', 'edge', 'data']

/** POSTs `count` objects made by `make(i)`, `concurrency` at a time. */
async function createMany(kube: Kube, from: number, to: number, make: (i: number) => {path: string; body: unknown}, concurrency = 24): Promise<void> {
  let next = from
  const worker = async () => {
    while (next < to) {
      const {path, body} = make(next++)
      await kube.create(path, body)
    }
  }
  await Promise.all(Array.from({length: concurrency}, worker))
}

/** The same WorkloadAutoRegistrations as test/cluster/scale.ts seedWars (status is a subresource here: none). */
async function seedWars(kube: Kube, from: number, to: number, groupUid: Map<string, string>): Promise<void> {
  await createMany(kube, from, to, (i) => {
    const ns = WAR_NAMESPACES[i % WAR_NAMESPACES.length]!
    const id = `i-${(0x10000000000 + i * 7919).toString(16)}`
    return {
      path: `/apis/runtime.onboarding.tetrate.io/v1alpha1/namespaces/${ns}/workloadautoregistrations`,
      body: {
        apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1',
        kind: 'WorkloadAutoRegistration',
        metadata: {
          name: `app-aws-aws-123456789012-us-east-2b-ec2-${id}`,
          namespace: ns,
          ownerReferences: [{apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: 'app', uid: groupUid.get(ns)!, controller: true}],
        },
        spec: {
          identity: {aws: {partition: 'aws', account: '123456789012', region: 'us-east-2', zone: 'us-east-2b', ec2: {instance_id: id}}},
          registration: {
            agent: {version: '1.4.0'},
            sidecar: {istio: {version: '1.24.2'}},
            host: {addresses: [{ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, type: 'VPC'}]},
            workload: {labels: {app: 'app'}},
          },
        },
      },
    }
  })
}

/** Registered VMs that are not connected (manual WorkloadEntries, which istiod leaves alone): proxy-status lists each. */
async function seedWorkloadEntries(kube: Kube, from: number, to: number): Promise<void> {
  await createMany(kube, from, to, (i) => ({
    path: '/apis/networking.istio.io/v1/namespaces/fleet/workloadentries',
    body: {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {name: `vm-${String(i).padStart(5, '0')}`, namespace: 'fleet', labels: {app: 'fleet'}},
      spec: {address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, labels: {app: 'fleet'}, serviceAccount: 'default'},
    },
  }))
}

const NS = 'bench-apps'

/**
 * Removes meshvm's bundle directory NAME in `dir`: the link and the versions beside it
 * (src/lib/fs/atomic.ts), so each run writes a new directory as istioctl's does, rather than also
 * clearing the version of the run before.
 */
function removeBundle(dir: string, name: string): void {
  for (const entry of readdirSync(dir)) if (entry === name || entry.startsWith(`.${name}.`)) rmSync(join(dir, entry), {recursive: true, force: true})
}

async function main(): Promise<void> {
  const work = mkdtempSync(join(tmpdir(), 'meshvm-bench-real-'))
  let cp: RealControlPlane | undefined
  const vms: VmConnection[] = []
  try {
    // tools/control-plane/build.sh builds (or finds in its cache) every binary and prints their paths.
    const bins = await buildControlPlane({onProgress: (l) => process.stderr.write(`${l}\n`)})
    cp = await startRealControlPlane({istio: ISTIO, binaries: bins, onProgress: (l) => process.stderr.write(`${l}\n`)})
    const istioctl = bins.istioctl[ISTIO]
    const env: NodeJS.ProcessEnv = {PATH: process.env.PATH, HOME: work, KUBECONFIG: cp.kubeconfigPath, NO_COLOR: '1'}
    const sh = (argv: string[]) => execFileSync(argv[0]!, argv.slice(1), {env, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']})
    const meshvm = (args: string[]) => sh([NODE, BIN, ...args])
    const kube = cp.main.kube

    // The story's VMs: a WorkloadGroup and its bundle, then VMS VMs joining istiod with it
    // (certificate, ADS with auto-registration, ACKs, a healthy probe), each kept connected.
    const bundle = join(work, 'web-vm')
    meshvm(onboardWebWithBundle(NS, bundle))
    for (let i = 0; i < VMS; i++) {
      const c = await joinIstiod({bundleDir: bundle, istiodAddress: cp.xdsAddress, instanceIp: `10.10.${i >> 8}.${(i & 255) + 1}`})
      vms.push(c)
      await c.synced()
      await c.reportHealth(true)
    }
    process.stderr.write(`bench:real: ${VMS} VMs connected to istiod\n`)
    meshvm(['create-remote-secret', '--context', 'remote', '--name', 'remote', '--create-service-account'])

    const xds = cp.xdsAddress
    if (opts.hold) {
      process.stdout.write(`export KUBECONFIG=${cp.kubeconfigPath}  # xDS at ${xds}; istioctl ${istioctl}; Ctrl-C stops\n`)
      await new Promise<void>((resolve) => {
        process.once('SIGINT', resolve)
        process.once('SIGTERM', resolve)
      })
      return
    }
    await pair(`proxy-status --xds-address (${VMS} VMs)`, 'istioctl proxy-status --xds-address', 1.0, ['proxy-status', '--xds-address', xds], [istioctl, 'proxy-status', '--xds-address', xds], env)

    // Peer port-forward case (#31): meshvm proxy-status and istioctl proxy-status, each through its own
    // port-forward to istiod (meshvm: WebSocket v4; istioctl: client-go's SPDY tunnelled in a
    // WebSocket), checked to list the same proxies first, so both measure the same work.
    if (selected('peer port-forward')) {
      // Asynchronously: the kubelet stand-in that serves both port-forwards runs in this process.
      const {execFile} = await import('node:child_process')
      const run = (argv: string[]) =>
        new Promise<string>((resolve, reject) =>
          execFile(argv[0]!, argv.slice(1), {env}, (err, stdout, stderr) => (err ? reject(new Error(`${argv.slice(0, 3).join(' ')}: ${stderr.trim()}`)) : resolve(stdout))),
        )
      const table = (out: string) =>
        out
          .split('\n')
          .map((l) => l.replace(/\s+$/, ''))
          .filter((l) => l !== '')
          .join('\n')
      const ours = table(await run([NODE, BIN, 'proxy-status']))
      const theirs = table(await run([istioctl, 'proxy-status']))
      if (ours !== theirs) throw new Error(`peer port-forward: meshvm and istioctl list different proxies:\n${ours}\n---\n${theirs}`)
      await pair(`peer port-forward: proxy-status (${VMS} VMs)`, 'istioctl proxy-status (port-forward)', 1.0, ['proxy-status'], [istioctl, 'proxy-status'], env)
    }

    const wgFile = join(work, 'wg.json')
    writeFileSync(wgFile, JSON.stringify((await kube.get(`/apis/networking.istio.io/v1/namespaces/${NS}/workloadgroups/web`)).json))
    const ours = join(work, 'bundle-meshvm')
    const theirs = join(work, 'bundle-istioctl')
    await pair(
      'bundle web -d DIR --autoregister',
      'istioctl x workload entry configure -f wg -o DIR --autoregister',
      1.0,
      ['bundle', 'web', '-n', NS, '-d', ours, '--autoregister'],
      [istioctl, 'x', 'workload', 'entry', 'configure', '-f', wgFile, '-o', theirs, '--autoregister'],
      env,
      {before: () => removeBundle(work, 'bundle-meshvm'), baselineBefore: () => rmSync(theirs, {recursive: true, force: true})},
    )

    await pair(
      'create-remote-secret --context remote --name remote',
      'istioctl create-remote-secret (same)',
      1.0,
      ['create-remote-secret', '--context', 'remote', '--name', 'remote'],
      [istioctl, 'create-remote-secret', '--context', 'remote', '--name', 'remote'],
      env,
    )

    const onboard = ['onboard', 'api', '-n', 'apps', '-p', 'http=8080', '-s', 'api-vm', '--create-namespace', '--create-service-account']
    const objects = join(work, 'objects.yaml')
    writeFileSync(objects, meshvm(onboard))
    await pair(
      'onboard … --apply (4 objects)',
      'kubectl apply --server-side -f (same 4)',
      1.3,
      [...onboard, '--apply'],
      ['kubectl', 'apply', '--server-side', '--field-manager=bench', '--force-conflicts', '-f', objects],
      env,
      {runs: RUNS * 2},
    )

    // Growth, and the war list case at CASE_WARS.
    const groupUid = new Map<string, string>()
    for (const ns of WAR_NAMESPACES) {
      await kube.create('/api/v1/namespaces', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: ns}})
      await kube.create(`/apis/networking.istio.io/v1/namespaces/${ns}/workloadgroups`, {
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        metadata: {name: 'app', namespace: ns},
        spec: {metadata: {labels: {app: 'app'}}, template: {serviceAccount: 'default', ports: {http: 8080}}},
      })
      groupUid.set(ns, (await kube.must<{metadata: {uid: string}}>('GET', `/apis/networking.istio.io/v1/namespaces/${ns}/workloadgroups/app`)).metadata.uid)
    }
    await kube.create('/api/v1/namespaces', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'fleet'}})
    let seeded = 0
    for (const n of SIZES) {
      const t0 = Date.now()
      await seedWars(kube, seeded, n, groupUid)
      await seedWorkloadEntries(kube, seeded, n)
      seeded = n
      process.stderr.write(`bench:real: ${n} WARs and ${n} WorkloadEntries on the API server (+${Math.round((Date.now() - t0) / 1000)}s, load ${load1()})\n`)
      if (n === CASE_WARS) {
        await pair(`war list -A (${n} WARs)`, 'kubectl get war -A --chunk-size=0', 0.8, ['war', 'list', '-A'], ['kubectl', 'get', 'war', '-A', '--chunk-size=0'], env, {runs: Math.min(RUNS, 7)})
      }
      if (opts.only !== undefined) continue
      const cmds: [string, string[]][] = [
        ['meshvm war list -A', [NODE, BIN, 'war', 'list', '-A']],
        ['kubectl get war -A --chunk-size=0', ['kubectl', 'get', 'war', '-A', '--chunk-size=0']],
        ['meshvm proxy-status', [NODE, BIN, 'proxy-status']],
        ['meshvm proxy-status --xds-address', [NODE, BIN, 'proxy-status', '--xds-address', xds]],
        ['istioctl proxy-status --xds-address', [istioctl, 'proxy-status', '--xds-address', xds]],
        ['kubectl get workloadentries -A --chunk-size=0', ['kubectl', 'get', 'workloadentries', '-A', '--chunk-size=0']],
      ]
      // One warm-up, then 3 interleaved rounds; medians.
      const samples = cmds.map(() => [] as {cpuMs: number; wallMs: number; peakRssKiB: number}[])
      for (let round = 0; round < 4; round++) {
        for (const [j, [, argv]] of cmds.entries()) {
          const s = await runCpu(argv, env)
          if (s.code !== 0) throw new Error(`${argv.join(' ')} exited ${s.code}: ${s.stderr.trim().split('\n').pop()}`)
          if (round > 0) samples[j]!.push(s)
        }
      }
      const med = (v: number[]) => [...v].sort((a, b) => a - b)[Math.floor(v.length / 2)]!
      for (const [j, [command]] of cmds.entries()) {
        const s = samples[j]!
        growth.push({objects: n, command, cpuMs: med(s.map((x) => x.cpuMs)), wallMs: med(s.map((x) => x.wallMs)), peakRssKiB: Math.max(...s.map((x) => x.peakRssKiB))})
      }
      process.stderr.write(`bench:real: growth at ${n} done (load ${load1()})\n`)
    }
  } finally {
    for (const v of vms) await v.close().catch(() => {})
    await cp?.stop()
    rmSync(work, {recursive: true, force: true})
  }
  if (opts.hold) return

  const f = (ms: number) => `${ms.toFixed(0)} ms`
  console.log(
    `Node ${NODE_VERSION}, istioctl/istiod ${ISTIO} (${cp!.istioVersion}), kube-apiserver ${cp!.binaries.versions.kubernetes}. Medians of ${RUNS} interleaved runs; the verdict on CPU time (user+sys).`,
  )
  for (const r of rows) {
    console.log(
      `${r.name}\n    cpu ${f(r.meshvm.cpu.median)} vs ${r.baselineName} ${f(r.baseline.cpu.median)} = ${r.cpuRatio.toFixed(2)}×` +
        `   wall ${f(r.meshvm.wall.median)} vs ${f(r.baseline.wall.median)} = ${r.wallRatio.toFixed(2)}×   peak RSS ${(r.meshvm.peakRssKiB / 1024).toFixed(0)} / ${(r.baseline.peakRssKiB / 1024).toFixed(0)} MiB` +
        `   load ${r.load.join('→')}${r.target === undefined ? '' : `   target ≤ ${r.target}×  ${r.pass ? 'pass' : 'MISS'}`}`,
    )
  }
  if (growth.length > 0) {
    console.log('\nGROWTH (medians of 3 interleaved rounds after a warm-up; peak RSS the largest)')
    for (const g of growth)
      console.log(`${String(g.objects).padStart(6)}   ${g.command.padEnd(48)} cpu ${f(g.cpuMs).padStart(9)}   wall ${f(g.wallMs).padStart(9)}   peak RSS ${(g.peakRssKiB / 1024).toFixed(0)} MiB`)
  }
  for (const f of failures) console.log(`not measured: ${f}`)
  if (opts.only === undefined) {
    writeFileSync(
      join(ROOT, 'bench/results-real.json'),
      JSON.stringify(
        {date: new Date().toISOString(), node: NODE_VERSION, istio: ISTIO, istioVersion: cp!.istioVersion, kubernetes: cp!.binaries.versions.kubernetes, vms: VMS, runs: RUNS, rows, growth, failures},
        null,
        2,
      ) + '\n',
    )
  }
}

await main()
