/**
 * `npx tsx test/real/compare.ts [--istio 1.30|1.31]`: runs the same meshvm commands against the
 * simulation (test/cluster) and against the real control plane, normalises names, addresses, times
 * and secrets, and prints a unified diff per command that differs. What it finds is listed, with what
 * was done about it, in test/cluster/README.md ("Known differences from the real components").
 * Build first (npm run build).
 */
import {execFileSync} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {parseArgs} from 'node:util'
import {runCli} from '../helpers/cli.js'
import {startTestCluster} from '../cluster/index.js'
import {ISTIOD_POD, istioReleaseFromEnv, Kube, startRealControlPlane} from './control-plane.js'

interface Target {
  name: string
  env: Record<string, string>
  kube: Kube
  /** Strings to replace before comparing (the target's own names, ports, tokens). */
  replace: [string | RegExp, string][]
  stop(): Promise<void>
}

const NS = 'cmp-apps'
const ONBOARD = ['onboard', 'web', '-n', NS, '-p', 'http=8080', '--probe-http', '8080/ready', '-s', 'web-vm', '--create-service-account']

function normalise(text: string, t: Target): string {
  let s = text
  for (const [from, to] of t.replace) s = typeof from === 'string' ? s.split(from).join(to) : s.replace(from, to)
  return s
    .replace(/https:\/\/127\.0\.0\.1:\d+/g, 'https://127.0.0.1:PORT')
    .replace(/127\.0\.0\.1:\d+/g, '127.0.0.1:PORT')
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z/g, 'TIME')
    .replace(/\b\d+(\.\d+)?(ms|s|m|h|d)\b/g, 'DUR')
    .replace(/eyJ[\w-]+\.[\w-]+\.[\w-]+/g, 'JWT')
    .replace(/certificate-authority-data: \S+/g, 'certificate-authority-data: CA')
    .replace(/"(uid|resourceVersion|creationTimestamp)": "[^"]*"/g, '"$1": "X"')
    .replace(/[ \t]+$/gm, '')
}

async function scenario(t: Target, work: string): Promise<Map<string, string>> {
  const out = new Map<string, string>()
  const bundle = join(work, `${t.name}-bundle`)
  const run = async (label: string, args: string[]) => {
    const r = await runCli(args, {env: t.env, timeoutMs: 90_000, stdoutMayHoldSecrets: true})
    out.set(label, normalise(`$ meshvm ${args.join(' ')}\nexit ${r.code}\n--- stdout\n${r.stdout}--- stderr\n${r.stderr}`.split(bundle).join('BUNDLE'), t))
  }
  await run('01 onboard --dry-run=server', [...ONBOARD, '--create-namespace', '--apply', '--dry-run=server'])
  await run('02 onboard --apply --bundle --autoregister', [...ONBOARD, '--create-namespace', '--apply', '--bundle', bundle, '--autoregister'])
  await run('03 onboard --apply again', [...ONBOARD, '--apply'])
  await run('04 onboard --diff (none)', [...ONBOARD, '--diff'])
  await run('05 onboard --diff (label)', [...ONBOARD, '-l', 'version=v2', '--diff'])
  const patch = {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name: 'web', namespace: NS}, spec: {probe: {httpGet: {path: '/healthz', port: 8080}}}}
  await t.kube.must('PATCH', `/apis/networking.istio.io/v1/namespaces/${NS}/workloadgroups/web?fieldManager=ops-tool&force=true`, patch, {contentType: 'application/apply-patch+yaml'})
  await run('06 onboard --apply (conflict)', [...ONBOARD, '--apply'])
  await run('07 onboard --apply --force-conflicts', [...ONBOARD, '--apply', '--force-conflicts'])
  await run('08 precheck', ['precheck', 'web', '-n', NS])
  await run('09 bundle verify', ['bundle', 'verify', bundle, '-n', NS])
  await run('10 proxy-status', ['proxy-status'])
  await run('11 proxy-status -o json', ['proxy-status', '-o', 'json'])
  await run('12 war list -A', ['war', 'list', '-A'])
  await run('13 remote-secret list', ['remote-secret', 'list'])
  await run('14 remote-secret status', ['remote-secret', 'status'])
  await run('15 create-remote-secret', ['create-remote-secret', '--name', 'other', '--create-service-account'])
  return out
}

const {values} = parseArgs({options: {istio: {type: 'string'}}, strict: true})
const istio = istioReleaseFromEnv(values.istio ? {MESHVM_REAL_ISTIO: values.istio} : process.env)
const work = mkdtempSync(join(tmpdir(), 'meshvm-compare-'))
const sim = await startTestCluster({rootCertDelayMs: 100, contextName: 'main'})
const simIstiod = [...sim.mesh.istiods.keys()][0]!
const simTarget: Target = {
  name: 'simulation',
  env: sim.env,
  kube: new Kube(sim.url, sim.caPem, sim.token),
  // the seeded install's gateway address and cluster ID
  replace: [
    [simIstiod, 'ISTIOD'],
    [sim.token, 'TOKEN'],
    ['203.0.113.10', 'GATEWAY'],
    ['cluster1', 'CLUSTER'],
  ],
  stop: () => sim.stop(),
}
const cp = await startRealControlPlane({istio, remote: false, onProgress: (l) => process.stderr.write(`${l}\n`)})
const realTarget: Target = {
  name: 'real',
  env: {KUBECONFIG: cp.kubeconfigPath},
  kube: cp.main.kube,
  replace: [
    [ISTIOD_POD, 'ISTIOD'],
    [cp.main.token, 'TOKEN'],
    ['127.0.0.1 ', 'GATEWAY '],
    ['127.0.0.1,', 'GATEWAY,'],
    ['ISTIO_META_CLUSTER_ID main', 'ISTIO_META_CLUSTER_ID CLUSTER'],
  ],
  stop: () => cp.stop(),
}
try {
  const a = await scenario(simTarget, work)
  const b = await scenario(realTarget, work)
  let differ = 0
  for (const [label, simText] of a) {
    const realText = b.get(label) ?? ''
    if (simText === realText) {
      console.log(`= ${label}`)
      continue
    }
    differ++
    const fa = join(work, 'a.txt')
    const fb = join(work, 'b.txt')
    writeFileSync(fa, simText)
    writeFileSync(fb, realText)
    let diff = ''
    try {
      execFileSync('diff', ['-u', '--label', `simulation: ${label}`, '--label', `real (Istio ${istio}): ${label}`, fa, fb], {encoding: 'utf8'})
    } catch (err) {
      diff = (err as {stdout: string}).stdout
    }
    console.log(`≠ ${label}\n${diff}`)
  }
  console.log(`${differ} of ${a.size} command(s) differ`)
} finally {
  await realTarget.stop()
  await simTarget.stop()
  rmSync(work, {recursive: true, force: true})
}
