/**
 * `meshvm war reconcile` end to end on two test clusters (east, west), with the simulated istiod's
 * syncz as the live connections: a connected VM (no finding), a dangling entry (disconnected past
 * the grace period; --dry-run, --fix with resourceVersion preconditions), an entry marked connected
 * that no istiod reports, a connected VM with no entry, the same address+network in both clusters,
 * an entry of a deleted group, a WAR whose entry is gone, a stale WAR snapshot.
 */
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {STACK_TRACE, type CliResult} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {kubectl, startCluster, type TestCluster} from '../helpers/cluster.js'
import {resourceKey} from '../cluster/index.js'
import {KubeClient} from '../../src/lib/kube/client.js'
import {loadKubeConfig} from '../../src/lib/kube/config.js'
import {applyFix} from '../../src/lib/reconcile/collect.js'
import {testPki} from '../cluster/pki.js'
import {VmPlane} from '../cluster/vm-services.js'
import {startVm, type RunningVm} from '../vm/run.js'
import {waitUntil} from '../helpers/spawn.js'
import {mkdtempSync} from 'node:fs'
import {join} from 'node:path'
import type {ReconcileReport} from '../../src/lib/reconcile/model.js'

let east: TestCluster
let west: TestCluster
let env: Record<string, string>
let plane: VmPlane | undefined
const vms: RunningVm[] = []
const ISTIOD = 'istiod-7d4b9c6f8-x2k9p'
const WE_KEY = resourceKey('networking.istio.io', 'workloadentries')

function meshvm(args: string[]): Promise<CliResult> {
  return runCommand(['war', 'reconcile', ...args], {env, timeoutMs: 60_000})
}

const group = (name: string, namespace: string) => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: {name, namespace},
  spec: {metadata: {labels: {app: name}}, template: {serviceAccount: 'default', network: 'vm-network'}},
})

async function applyGroup(cluster: TestCluster, name: string, namespace: string): Promise<void> {
  // Set-up straight into the store (what is under test is reconcile, not the write path).
  if (!cluster.store.get('/namespaces', undefined, namespace)) {
    cluster.store.create('/namespaces', 'Namespace', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: namespace}, spec: {finalizers: ['kubernetes']}, status: {phase: 'Active'}})
  }
  cluster.store.create(resourceKey('networking.istio.io', 'workloadgroups'), 'WorkloadGroup', group(name, namespace))
}

beforeAll(async () => {
  east = await startCluster({contextName: 'east', rootCertDelayMs: 50})
  west = await startCluster({contextName: 'west'})
  env = {KUBECONFIG: `${east.kubeconfigPath}:${west.kubeconfigPath}`, KUBECACHEDIR: east.env.KUBECACHEDIR!}
  await applyGroup(east, 'web', 'apps')
  await applyGroup(east, 'web', 'lost')
  await applyGroup(west, 'web', 'apps')
  const e = east.mesh
  e.addPod({name: 'frontend-5d9f-abcde', namespace: 'apps', istiod: ISTIOD})
  // A healthy VM: auto-registered, connected.
  e.addVm({name: 'vm-ok', namespace: 'apps', group: 'web', address: '10.0.0.1', connectedTo: ISTIOD})
  // Dangling: disconnected 10 minutes ago, the entry is still there.
  e.addVm({name: 'vm-gone', namespace: 'apps', group: 'web', address: '10.0.0.2', disconnectedAgoMs: 10 * 60_000})
  // Marked connected (2 minutes ago, by the mesh sim), but istiod no longer has its proxy.
  const lost = e.addVm({name: 'vm-lost', namespace: 'lost', group: 'web', address: '10.0.0.3', connectedTo: ISTIOD})
  e.disconnect(lost.proxyId)
  // A VM sidecar connected with no registration (in a namespace with pods only).
  e.addPod({name: 'edge-proxy-7c4d-xyz12', namespace: 'edge', istiod: ISTIOD})
  e.connect({id: 'rogue-vm.edge', istiod: ISTIOD})
  // An entry of a group that was deleted (no ownerReference: the group never existed here).
  e.addVm({name: 'vm-orphan', namespace: 'apps', group: 'old-web', address: '10.0.0.5', connectedTo: ISTIOD})
  // WARs: one stale, one whose entry is gone.
  e.addVm({name: 'war-stale', namespace: 'apps', group: 'web', address: '10.0.1.1', connectedTo: ISTIOD, source: 'war', stale: true})
  const w = e.addVm({name: 'war-noentry', namespace: 'apps', group: 'web', address: '10.0.1.2', connectedTo: ISTIOD, source: 'war'})
  east.store.delete(WE_KEY, 'apps', w.workloadEntry.metadata.name)
  // west: a VM with east's vm-ok address on the same network.
  west.mesh.addVm({name: 'vm-dup', namespace: 'apps', group: 'web', address: '10.0.0.1', connectedTo: ISTIOD})
}, 60_000)

afterAll(async () => {
  for (const vm of vms) if (vm.child.exitCode === null) vm.child.kill('SIGKILL')
  await plane?.stop()
  await east?.stop()
  await west?.stop()
})

describe.sequential('war reconcile on two clusters', () => {
  it('-o json: every finding, with reason and fix, in a stable order', async () => {
    const r = await meshvm(['-A', '--context', 'east', '--context', 'west', '--grace-period', '1m', '-o', 'json'])
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code, r.stderr).toBe(8)
    const report = JSON.parse(r.stdout) as ReconcileReport
    expect(report.apiVersion).toBe('meshvm.io/v1alpha1')
    expect(report.kind).toBe('ReconcileReport')
    expect(report.gracePeriodSeconds).toBe(60)
    expect(report.contexts.map((c) => [c.name, c.istiods, c.unreadIstiods])).toEqual([
      ['east', [ISTIOD], []],
      ['west', [ISTIOD], []],
    ])
    expect(report.findings.map((x) => [x.type, x.context, x.kind, `${x.namespace}/${x.name}`, x.safeFix !== undefined, x.related.map((r) => `${r.context}/${r.name}`)])).toEqual([
      ['DanglingEntry', 'east', 'WorkloadEntry', 'apps/web-10.0.0.2', true, []],
      ['DanglingEntry', 'east', 'WorkloadEntry', 'lost/web-10.0.0.3', true, []],
      ['UnregisteredProxy', 'east', 'Proxy', 'edge/rogue-vm', false, []],
      ['DuplicateAddress', 'east', 'WorkloadEntry', 'apps/web-10.0.0.1', false, ['west/web-10.0.0.1']],
      ['OrphanedEntry', 'east', 'WorkloadEntry', 'apps/old-web-10.0.0.5', false, []],
      ['OrphanedRegistration', 'east', 'WorkloadAutoRegistration', 'apps/war-noentry', false, []],
      ['StaleRegistration', 'east', 'WorkloadAutoRegistration', 'apps/war-stale', false, []],
    ])
    const dangling = report.findings[0]!
    expect(dangling.reason).toMatch(/^no proxy connected: disconnected 10m ago/)
    expect(dangling.fix).toContain('kubectl delete workloadentry web-10.0.0.2 -n apps --context east')
    expect(dangling.safeFix).toMatchObject({action: 'delete', context: 'east', kind: 'WorkloadEntry', namespace: 'apps', name: 'web-10.0.0.2'})
    expect(report.findings[1]!.reason).toBe(`marked connected to ${ISTIOD}, but no istiod reports its proxy (last change 2m ago)`)
    expect(report.findings[3]!.reason).toBe('2 WorkloadEntries have address 10.0.0.1 on network vm-network: traffic for one is load-balanced to the other')
    expect(r.stderr).toMatch(/^7 finding\(s\); 2 fixable with --fix$/m)
  })

  it('within the grace period an entry is not dangling', async () => {
    const r = await meshvm(['-n', 'lost', '--context', 'east', '--grace-period', '1h', '-o', 'json'])
    expect(r.code, r.stderr).toBe(0)
    expect((JSON.parse(r.stdout) as ReconcileReport).findings).toEqual([])
    expect(r.stdout).not.toContain('DanglingEntry')
  })

  it('text output names each finding, its reason and its fix', async () => {
    const r = await meshvm(['-n', 'apps', '--context', 'west'])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toBe('No findings: every registration has its proxy and every connected VM its registration.\n')
    const e = await meshvm(['-n', 'edge', '--context', 'east', '--grace-period', '1m'])
    expect(e.code).toBe(8)
    expect(e.stdout).toContain(
      'UnregisteredProxy  proxy/edge/rogue-vm\n' +
        `  reason: a VM sidecar connected to istiod ${ISTIOD} that no WorkloadEntry or WorkloadAutoRegistration stands for: the mesh sends it configuration but no traffic\n` +
        '  fix:    auto-register it (meshvm bundle GROUP -n edge --autoregister, then restart its sidecar), or add a WorkloadEntry for its address\n',
    )
  })

  it('--dry-run (client, or server) shows the deletes and changes nothing; --fix needs --yes off a terminal', async () => {
    const before = east.store.get(WE_KEY, 'apps', 'web-10.0.0.2')!.metadata.resourceVersion
    const deletes = () => east.requests.filter((q) => q.method === 'DELETE' && q.path.endsWith('/workloadentries/web-10.0.0.2')).length
    // A bare --dry-run is client: the entry is looked up again, no delete is sent.
    const sentBefore = deletes()
    const c = await meshvm(['-n', 'apps', '--context', 'east', '--grace-period', '1m', '--dry-run', '-o', 'json'])
    expect(c.code).toBe(8)
    expect((JSON.parse(c.stdout) as ReconcileReport & {fixes: {name: string; result: string}[]}).fixes.map((x) => [x.name, x.result])).toEqual([['web-10.0.0.2', 'would-delete']])
    expect(deletes()).toBe(sentBefore)
    const r = await meshvm(['-n', 'apps', '--context', 'east', '--grace-period', '1m', '--dry-run=server', '-o', 'json'])
    expect(r.code).toBe(8)
    const report = JSON.parse(r.stdout) as ReconcileReport & {fixes: {name: string; result: string}[]}
    expect(report.fixes.map((x) => [x.name, x.result])).toEqual([['web-10.0.0.2', 'would-delete']])
    expect(east.store.get(WE_KEY, 'apps', 'web-10.0.0.2')!.metadata.resourceVersion).toBe(before)
    const n = await meshvm(['-n', 'apps', '--context', 'east', '--fix'])
    expect(n.code).toBe(2)
    expect(n.stderr.split('\n')[0]).toBe('Error: --fix asks for confirmation on a terminal; pass --yes to delete without asking')
    const both = await meshvm(['--fix', '--dry-run', '--yes'])
    expect(both.code).toBe(2)
    // oclif's exclusive/dependsOn: one line naming both flags, exit 2.
    expect(both.stderr.split('\n')[0]).toBe('Error: --fix and --dry-run=client cannot be combined: give one of them')
    const yes = await meshvm(['--yes'])
    expect(yes.code).toBe(2)
    expect(yes.stderr.split('\n')[0]).toBe('Error: --yes: only applies with --fix')
  })

  it('a fix is not applied to an entry that changed since it was judged (resourceVersion precondition)', async () => {
    const r = await meshvm(['-n', 'lost', '--context', 'east', '--grace-period', '1m', '-o', 'json'])
    const fix = (JSON.parse(r.stdout) as ReconcileReport).findings[0]!.safeFix!
    // istiod touches the entry (its VM reconnected) after the report was made.
    const touched = await kubectl(east, ['annotate', 'workloadentry', fix.name, '-n', 'lost', 'istio.io/connectedAt=2030-01-01T00:00:00Z', '--overwrite'])
    expect(touched.code, touched.stderr).toBe(0)
    const client = await KubeClient.create(loadKubeConfig({kubeconfig: east.kubeconfigPath}), {timeoutMs: 10_000})
    try {
      expect((await applyFix(client, fix, 'none')).result).toBe('changed')
      expect(east.store.get(WE_KEY, 'lost', fix.name)).toBeDefined()
    } finally {
      client.close()
    }
  })

  it('--fix --yes deletes the dangling entry with preconditions; the rest is left', async () => {
    const r = await meshvm(['-n', 'apps', '--context', 'east', '--grace-period', '1m', '--fix', '--yes'])
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code).toBe(8)
    expect(r.stdout).toContain('DanglingEntry  workloadentry/apps/web-10.0.0.2\n')
    expect(r.stdout).toContain('  fixed:  deleted\n')
    expect(east.store.get(WE_KEY, 'apps', 'web-10.0.0.2')).toBeUndefined()
    const del = east.requests.filter((q) => q.method === 'DELETE' && q.path.endsWith('/workloadentries/web-10.0.0.2'))
    // The --dry-run=server delete (dryRun=All) and the real one.
    expect(del.map((q) => q.query.includes('dryRun=All'))).toEqual([true, false])
    expect(r.stderr).toMatch(/^4 finding\(s\); 1 deleted\nError: 3 finding\(s\) left$/m)
    const again = await meshvm(['-n', 'apps', '--context', 'east', '--grace-period', '1m', '-o', 'json'])
    expect((JSON.parse(again.stdout) as ReconcileReport).findings.map((x) => x.type)).not.toContain('DanglingEntry')
  })
})

describe.sequential('war reconcile with a simulated VM', () => {
  it('a VM that joined is accounted for; once it is gone its entry is dangling and --fix removes it', async () => {
    // istiod's own clean-up waits 10 minutes here, so the entry outlives the VM as after an istiod restart.
    plane = new VmPlane({store: east.store, pki: testPki(), mesh: east.mesh, autoregistration: {gracePeriodMs: 600_000}})
    await plane.start()
    const bundle = join(mkdtempSync(join(east.dir, 'vm-')), 'web')
    const on = await runCommand(
      ['onboard', 'web', '-n', 'vmapps', '-p', 'http=8080', '-s', 'web-vm', '--create-namespace', '--create-service-account', '--apply', '--bundle', bundle, '--autoregister'],
      {env: east.env, timeoutMs: 60_000},
    )
    expect(on.code, on.stderr).toBe(0)
    const vm = startVm(bundle, {address: '10.9.0.5', hostname: 'vm-9'})
    vms.push(vm)
    await vm.waitFor(/configuration acknowledged \(SYNCED\)/)
    const joined = await meshvm(['-n', 'vmapps', '--context', 'east', '--grace-period', '0s', '-o', 'json'])
    expect(joined.code, joined.stderr).toBe(0)
    expect((JSON.parse(joined.stdout) as ReconcileReport).findings).toEqual([])

    vm.child.kill('SIGTERM')
    await vm.done
    await waitUntil(() => east.store.get(WE_KEY, 'vmapps', 'web-10.9.0.5')?.metadata.annotations?.['istio.io/disconnectedAt'] !== undefined, 'istiod to mark the entry disconnected')
    const r = await meshvm(['-n', 'vmapps', '--context', 'east', '--grace-period', '0s', '--fix', '--yes', '-o', 'json'])
    const report = JSON.parse(r.stdout) as ReconcileReport & {fixes: {name: string; result: string}[]}
    expect(report.findings.map((x) => [x.type, x.name])).toEqual([['DanglingEntry', 'web-10.9.0.5']])
    expect(report.fixes.map((x) => [x.name, x.result])).toEqual([['web-10.9.0.5', 'deleted']])
    expect(r.code, r.stderr).toBe(0)
    expect(east.store.get(WE_KEY, 'vmapps', 'web-10.9.0.5')).toBeUndefined()
  })
})
