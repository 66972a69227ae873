/**
 * The whole story, on the test cluster with a simulated VM (npm run demo:vm): onboard a group into
 * a new namespace with a bundle, the VM joins with it, war list / proxy-status show it, the group
 * changes, war rollout --restart-command re-onboards it with the new template, the VM stops and its
 * entry goes after the grace period. Then each way a VM is refused.
 */
import {cpSync, mkdtempSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {runCli, STACK_TRACE} from '../helpers/cli.js'
import {kubectl, startCluster, type TestCluster} from '../helpers/cluster.js'
import {createMeshCa} from '../cluster/mesh-ca.js'
import {testPki} from '../cluster/pki.js'
import {boundToken} from '../cluster/tokens.js'
import {VmPlane} from '../cluster/vm-services.js'
import {onboardWebWithBundle} from '../helpers/stories.js'
import {startVm, type RunningVm} from './run.js'

const WE = 'networking.istio.io/workloadentries'
const WG = 'networking.istio.io/workloadgroups'
// Long enough that `war list` (a process of its own, slow on a loaded machine) still sees the
// disconnected entry before istiod's grace period removes it.
const GRACE_MS = 8000

let cluster: TestCluster
let plane: VmPlane
let dir: string
const vms: RunningVm[] = []
beforeAll(async () => {
  // istiod reaches a new namespace a second after it appears: onboard must wait for the root cert.
  cluster = await startCluster({rootCertDelayMs: 1000})
  plane = new VmPlane({store: cluster.store, pki: testPki(), mesh: cluster.mesh, autoregistration: {gracePeriodMs: GRACE_MS}})
  await plane.start()
  dir = mkdtempSync(join(cluster.dir, 'vm-'))
})
afterAll(async () => {
  for (const vm of vms) if (vm.child.exitCode === null) vm.child.kill('SIGKILL')
  await plane?.stop()
  await cluster?.stop()
})

const meshvm = (args: string[], timeoutMs?: number) => runCli(args, {env: cluster.env, timeoutMs})
const vm = (bundle: string, o: Parameters<typeof startVm>[1]) => {
  const v = startVm(bundle, o)
  vms.push(v)
  return v
}

async function waitUntil<T>(fn: () => T | undefined | false, what: string, timeoutMs = 20_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    const v = fn()
    if (v !== undefined && v !== false) return v
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}`)
    await new Promise((r) => setTimeout(r, 50))
  }
}

const entry = (ns: string, name: string) => cluster.store.get(WE, ns, name)
const healthy = (ns: string, name: string) => ((entry(ns, name)?.status as {conditions?: {type: string; status: string}[]} | undefined)?.conditions ?? []).find((c) => c.type === 'Healthy')?.status

async function onboard(ns: string, bundle: string, extra: string[] = []) {
  return meshvm([...onboardWebWithBundle(ns, bundle), '--probe-period', '1', ...extra])
}

describe('a VM joins the mesh with the bundle meshvm writes', () => {
  it('onboard → join → list → proxy-status → group change → STALE → rollout --restart-command → stop → disconnectedAt → gone', async () => {
    const ns = 'vmapps'
    const bundle = join(dir, 'web')
    const res = await onboard(ns, bundle)
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(res.code, res.stderr).toBe(0)
    expect(res.stderr).toContain(`Waiting up to 30s for istiod to publish the mesh root certificate in namespace ${ns} (ConfigMap istio-ca-root-cert)…`)
    expect(readFileSync(join(bundle, 'hosts'), 'utf8')).toBe(`${plane.gateway.address} istiod.istio-system.svc\n`)

    const v = vm(bundle, {address: '10.0.0.5', hostname: 'vm-1'})
    const pid = await v.pid()
    await v.waitFor(/configuration acknowledged \(SYNCED\)/)
    expect(v.stdout()).toContain(`certificate issued for spiffe://cluster.local/ns/${ns}/sa/web-vm`)
    await waitUntil(() => healthy(ns, 'web-10.0.0.5') === 'True', 'the entry to be healthy')
    const first = entry(ns, 'web-10.0.0.5')!
    expect(first.metadata.annotations).toMatchObject({'istio.io/autoRegistrationGroup': 'web', 'proxy.istio.io/health-checks-enabled': 'true', 'istio.io/workloadController': 'istiod-7d4b9c6f8-x2k9p'})
    expect(first.spec).toMatchObject({address: '10.0.0.5', serviceAccount: 'web-vm', ports: {http: 8080}})

    const list = await meshvm(['war', 'list', '-n', ns])
    expect(list.stdout).toMatch(/^web-10\.0\.0\.5 +True +\S+$/m)
    const ps = await meshvm(['proxy-status', '-o', 'wide', '--layout', 'types'])
    expect(ps.code, ps.stderr).toBe(0)
    const row = ps.stdout.split('\n').find((l) => l.startsWith(`vm-1.${ns} `))
    expect(row, ps.stdout).toBeDefined()
    // SYNCED for every type it subscribed to, and paired with its auto-registered entry (address, health, group).
    expect(row).toMatch(
      /^vm-1\.vmapps +cluster1 +SYNCED \(\S+\) +SYNCED \(\S+\) +SYNCED \(\S+\) +SYNCED \(\S+\) +IGNORED +istiod-7d4b9c6f8-x2k9p +1\.24\.2 \(skew: istiod 1\.30\.8\) +vm +10\.0\.0\.5 +Healthy +auto\/web$/,
    )

    // The group changes: the entry is now stale.
    const patched = await kubectl(cluster, ['patch', 'workloadgroup', 'web', '-n', ns, '--type', 'merge', '-p', '{"spec":{"template":{"ports":{"http":9090}}}}'])
    expect(patched.stderr).toBe('')
    const wide = await meshvm(['war', 'list', '-n', ns, '-o', 'wide'])
    expect(wide.stdout).toMatch(/^web-10\.0\.0\.5 .* true +<none> +<none> +workloadentry$/m)

    // Without a way to restart the sidecar, rollout says what to do and fails.
    const refused = await meshvm(['war', 'rollout', 'web', '-n', ns])
    expect(refused.code).toBe(8)
    expect(refused.stderr).toContain(`Hint: web-10.0.0.5 (10.0.0.5): kubectl delete workloadentry web-10.0.0.5 -n ${ns}, then on that VM: sudo systemctl restart istio`)

    const rolled = await meshvm(['war', 'rollout', 'web', '-n', ns, '--restart-command', `kill -HUP ${pid}`, '--poll-interval', '200ms', '--timeout', '30s'], 60_000)
    expect(rolled.stderr).not.toMatch(STACK_TRACE)
    expect(rolled.code, rolled.stderr).toBe(0)
    expect(rolled.stdout).toMatch(/^web-10\.0\.0\.5 +re-onboarded +\S+ +connected to istiod-7d4b9c6f8-x2k9p, healthy$/m)
    await v.waitFor(/SIGHUP: restarting the sidecar/)
    const second = entry(ns, 'web-10.0.0.5')!
    expect(second.metadata.uid).not.toBe(first.metadata.uid)
    expect((second.spec as {ports: unknown}).ports).toEqual({http: 9090})
    expect(healthy(ns, 'web-10.0.0.5')).toBe('True')
    expect(Object.keys(cluster.store.get(WG, ns, 'web')!.metadata.annotations ?? {}).filter((k) => k.startsWith('rollout.meshvm.io/'))).toEqual([])
    expect((cluster.store.get('coordination.k8s.io/leases', ns, 'meshvm-rollout-web')!.spec as {holderIdentity?: string}).holderIdentity).toBeUndefined()
    const after = await meshvm(['war', 'list', '-n', ns, '-o', 'wide'])
    expect(after.stdout).toMatch(/^web-10\.0\.0\.5 .* false +<none> +<none> +workloadentry$/m)

    // The VM stops: disconnectedAt at once, the entry gone after the grace period.
    v.child.kill('SIGTERM')
    const done = await v.done
    expect(done.code).toBe(0)
    const disconnected = await waitUntil(() => entry(ns, 'web-10.0.0.5')?.metadata.annotations?.['istio.io/disconnectedAt'], 'disconnectedAt')
    expect(disconnected).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(\.\d+)?Z$/)
    expect(entry(ns, 'web-10.0.0.5')!.metadata.annotations).not.toHaveProperty('istio.io/connectedAt')
    const down = await meshvm(['war', 'list', '-n', ns])
    expect(down.stdout).toMatch(/^web-10\.0\.0\.5 +False +\S+$/m)
    await waitUntil(() => entry(ns, 'web-10.0.0.5') === undefined, 'the entry to be deleted after the grace period')
    // A budget, not a timing assertion: a dozen processes on a loaded 2-core machine.
  }, 180_000)

  it('meshvm bundle waits for the root certificate too, saying so on stderr', async () => {
    const ns = 'late'
    cluster.store.create('/namespaces', 'Namespace', {metadata: {name: ns, labels: {'kubernetes.io/metadata.name': ns}}})
    cluster.store.create(WG, 'WorkloadGroup', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: {name: 'db', namespace: ns},
      spec: {metadata: {labels: {app: 'db'}}, template: {serviceAccount: 'default', ports: {tcp: 5432}}},
    })
    const res = await meshvm(['bundle', 'db', '-n', ns, '-d', join(dir, 'late')])
    expect(res.code, res.stderr).toBe(0)
    expect(res.stderr.split('\n')[0]).toBe(`Waiting up to 30s for istiod to publish the mesh root certificate in namespace ${ns} (ConfigMap istio-ca-root-cert)…`)
    expect(readFileSync(join(dir, 'late', 'root-cert.pem'), 'utf8')).toBe(cluster.ca.rootPem)
  })

  it('onboard --bundle gives up after --timeout when istiod never reaches the namespace', async () => {
    // discoverySelectors leave the namespace out: istiod never writes its root certificate.
    const mesh = cluster.store.get('/configmaps', 'istio-system', 'istio')!
    cluster.store.update('/configmaps', {...mesh, data: {mesh: `${(mesh.data as {mesh: string}).mesh}discoverySelectors:\n- matchLabels:\n    istio-discovery: enabled\n`}})
    try {
      const res = await onboard('unseen', join(dir, 'unseen'), ['--timeout', '2s'])
      expect(res.stderr).not.toMatch(STACK_TRACE)
      expect(res.code).toBe(9)
      expect(res.stderr).toContain('Error: ConfigMap unseen/istio-ca-root-cert not found after waiting 2s')
      expect(res.stderr).toContain('is not excluded by discoverySelectors')
    } finally {
      cluster.store.update('/configmaps', mesh)
    }
  })
})

describe('refusals: the VM prints the reason and exits non-zero', {timeout: 60_000}, () => {
  const ns = 'refused'
  let bundle: string
  let n = 0
  const variant = (change: (d: string) => void): string => {
    const d = join(dir, `variant-${++n}`)
    cpSync(bundle, d, {recursive: true, dereference: true})
    change(d)
    return d
  }
  const token = (o: {name?: string; audiences?: string[]; seconds?: number}) => {
    const sa = cluster.store.get('/serviceaccounts', ns, o.name ?? 'web-vm')!
    return boundToken(testPki(), {namespace: ns, name: o.name ?? 'web-vm', uid: sa.metadata.uid!}, o.audiences ?? ['istio-ca'], o.seconds ?? 600).token
  }
  const refusal = async (d: string, hostname: string) => {
    const r = await vm(d, {address: `10.0.1.${++n}`, hostname}).done
    expect(r.code).toBe(1)
    expect(r.stderr).not.toMatch(STACK_TRACE)
    return r.stderr
  }

  beforeAll(async () => {
    bundle = join(dir, 'refused')
    const res = await onboard(ns, bundle)
    expect(res.code, res.stderr).toBe(0)
  })

  it('an expired token', async () => {
    const err = await refusal(
      variant((d) => writeFileSync(join(d, 'istio-token'), token({seconds: -60}))),
      'expired',
    )
    expect(err).toContain('refused the certificate request: UNAUTHENTICATED: request authenticate failure')
    expect(err).toMatch(/the bundle's istio-token expired at \d{4}-/)
    expect(plane.istiods.values().next().value!.log.at(-1)).toContain('service account token has expired')
  })

  it('a token for another audience', async () => {
    const err = await refusal(
      variant((d) => writeFileSync(join(d, 'istio-token'), token({audiences: ['https://kubernetes.default.svc.cluster.local']}))),
      'audience',
    )
    expect(err).toContain('UNAUTHENTICATED: request authenticate failure')
    expect(err).toContain(`the bundle's istio-token is for audience ["https://kubernetes.default.svc.cluster.local"], istiod accepts istio-ca`)
  })

  it("a token of another service account than the group's", async () => {
    const err = await refusal(
      variant((d) => writeFileSync(join(d, 'istio-token'), token({name: 'default'}))),
      'other-sa',
    )
    expect(err).toContain(`refused other-sa.${ns}: UNKNOWN: registration of WorkloadEntry service account mismatch: "default" vs "web-vm"`)
    expect(cluster.store.list(WE, ns)).toEqual([])
  })

  it('a cluster ID istiod does not know', async () => {
    const err = await refusal(
      variant((d) => writeFileSync(join(d, 'cluster.env'), readFileSync(join(d, 'cluster.env'), 'utf8').replace("ISTIO_META_CLUSTER_ID='cluster1'", "ISTIO_META_CLUSTER_ID='cluster9'"))),
      'cluster',
    )
    expect(err).toContain('UNAUTHENTICATED: request authenticate failure')
    expect(err).toContain('ISTIO_META_CLUSTER_ID is "cluster9": istiod refuses a cluster ID it does not know')
    expect(plane.istiods.values().next().value!.log.at(-1)).toContain('client claims to be in cluster "cluster9", but we only know about local cluster "cluster1"')
  })

  it('a root certificate that is not the mesh root', async () => {
    const err = await refusal(
      variant((d) => writeFileSync(join(d, 'root-cert.pem'), createMeshCa('another-mesh').rootPem)),
      'root',
    )
    expect(err).toMatch(/TLS: istiod's certificate is not signed by the bundle's root-cert\.pem/)
  })

  it('a group that does not exist (any more)', async () => {
    const d = variant(() => undefined)
    await kubectl(cluster, ['delete', 'workloadgroup', 'web', '-n', ns])
    const err = await refusal(d, 'nogroup')
    expect(err).toContain(`refused nogroup.${ns}: FAILED_PRECONDITION: auto-registration WorkloadEntry of nogroup.${ns} failed: cannot find WorkloadGroup ${ns}/web`)
  })
})
