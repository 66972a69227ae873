/**
 * One VM's life as istiod sees it, run the same way against the real istiod (join.real.test.ts) and
 * the simulated one (test/vm/client.test.ts), so that a difference between the two fails a test:
 *
 * 1. the certificate from istiod's CA names the bundle's service account (SPIFFE);
 * 2. istiod creates the WorkloadEntry GROUP-IP with the group's labels, the auto-registration
 *    annotations and an owner reference to the group;
 * 3. health reports set its Healthy condition: True, then False with the report's message;
 * 4. istiod's /debug/syncz lists the proxy with CDS and LDS acknowledged (SYNCED);
 * 5. on disconnect istio.io/disconnectedAt replaces istio.io/connectedAt, and the entry goes after the
 *    grace period.
 */
import {expect} from 'vitest'
import {joinIstiod, spiffeIdOf, type VmConnection} from './client.js'

export interface Condition {
  type: string
  status: string
  message?: string
  reason?: string
}

export interface WorkloadEntry {
  metadata: {name: string; uid?: string; labels?: Record<string, string>; annotations?: Record<string, string>; ownerReferences?: {kind: string; name: string; controller?: boolean}[]}
  spec: {address?: string; serviceAccount?: string; labels?: Record<string, string>; network?: string}
  status?: {conditions?: Condition[]}
}

/** One /debug/syncz entry (pilot/pkg/xds/debug.go SyncStatus), the fields this scenario reads. */
export interface SynczEntry {
  proxy: string
  cluster_sent?: string
  cluster_acked?: string
  listener_sent?: string
  listener_acked?: string
}

export interface ScenarioTarget {
  bundleDir: string
  istiodAddress: string
  serverName?: string
  namespace: string
  group: string
  serviceAccount: string
  /** The group's spec.metadata.labels (the entry gets them). */
  groupLabels: Record<string, string>
  instanceIp: string
  /** istiod's POD_NAME: the istio.io/workloadController annotation. */
  istiodName: string
  trustDomain?: string
  workloadEntry(name: string): Promise<WorkloadEntry | undefined>
  syncz(): Promise<SynczEntry[]>
  /** Upper bound for waits (istiod's grace period and then some). */
  timeoutMs?: number
}

export async function waitFor<T>(what: string, fn: () => Promise<T | undefined | false>, timeoutMs = 30_000): Promise<T> {
  const deadline = Date.now() + timeoutMs
  let last: unknown
  for (;;) {
    try {
      const v = await fn()
      if (v !== undefined && v !== false) return v
    } catch (err) {
      last = err
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}${last ? ` (last error: ${(last as Error).message})` : ''}`)
    await new Promise((r) => setTimeout(r, 100))
  }
}

const healthy = (we: WorkloadEntry | undefined) => we?.status?.conditions?.find((c) => c.type === 'Healthy')

export async function vmJoinScenario(t: ScenarioTarget): Promise<void> {
  const timeoutMs = t.timeoutMs ?? 30_000
  let vm: VmConnection | undefined
  try {
    vm = await joinIstiod({bundleDir: t.bundleDir, istiodAddress: t.istiodAddress, instanceIp: t.instanceIp, serverName: t.serverName})
    // 1. The certificate: the bundle's service account, whatever the CSR asked for; leaf first.
    expect(spiffeIdOf(vm.certificateChain[0]!)).toBe(`spiffe://${t.trustDomain ?? 'cluster.local'}/ns/${t.namespace}/sa/${t.serviceAccount}`)
    await vm.synced()

    // 2. The WorkloadEntry istiod creates.
    const name = `${t.group}-${t.instanceIp.replace(/:/g, '-')}`
    expect(vm.workloadEntryName).toBe(name)
    const we = await waitFor(`WorkloadEntry ${t.namespace}/${name}`, () => t.workloadEntry(name), timeoutMs)
    expect(we.spec.address).toBe(t.instanceIp)
    expect(we.spec.serviceAccount).toBe(t.serviceAccount)
    expect(we.metadata.labels ?? {}).toMatchObject(t.groupLabels)
    expect(we.metadata.annotations).toMatchObject({
      'istio.io/autoRegistrationGroup': t.group,
      'istio.io/workloadController': t.istiodName,
      'proxy.istio.io/health-checks-enabled': 'true',
    })
    expect(Date.parse(we.metadata.annotations!['istio.io/connectedAt']!)).not.toBeNaN()
    expect(we.metadata.ownerReferences).toEqual([expect.objectContaining({kind: 'WorkloadGroup', name: t.group, controller: true})])

    // 3. Health reports → the Healthy condition.
    await vm.reportHealth(true)
    await waitFor('Healthy=True', async () => healthy(await t.workloadEntry(name))?.status === 'True', timeoutMs)
    await vm.reportHealth(false, 'Get "http://127.0.0.1:8080/ready": connection refused')
    const down = await waitFor(
      'Healthy=False',
      async () => {
        const c = healthy(await t.workloadEntry(name))
        return c?.status === 'False' ? c : undefined
      },
      timeoutMs,
    )
    expect(down.message).toBe('Get "http://127.0.0.1:8080/ready": connection refused')

    // 4. syncz: the proxy, with what it was sent acknowledged.
    // A health change makes istiod push again: wait for the state where every push is acknowledged
    // (a read between a push and its ACK sees sent ≠ acked, which is right for that instant).
    const entry = await waitFor(
      `${vm.proxyId} in /debug/syncz with CDS and LDS acknowledged`,
      async () => {
        const e = (await t.syncz()).find((x) => x.proxy === vm!.proxyId)
        return e && e.cluster_acked === e.cluster_sent && e.listener_acked === e.listener_sent ? e : undefined
      },
      timeoutMs,
    )
    expect(entry.cluster_sent).toBeTruthy()
    expect(entry.cluster_acked).toBe(entry.cluster_sent)
    expect(entry.listener_sent).toBeTruthy()
    expect(entry.listener_acked).toBe(entry.listener_sent)

    // 5. Disconnect → disconnectedAt → deleted after the grace period.
    await vm.close()
    vm = undefined
    const gone = await waitFor(
      'istio.io/disconnectedAt',
      async () => {
        const w = await t.workloadEntry(name)
        return w === undefined ? 'deleted' : w.metadata.annotations?.['istio.io/disconnectedAt'] ? w : undefined
      },
      timeoutMs,
    )
    // The sweep may be quicker than this poll; when the entry was seen, it was disconnected, not connected.
    if (gone !== 'deleted') {
      expect(Date.parse(gone.metadata.annotations!['istio.io/disconnectedAt']!)).not.toBeNaN()
      expect(gone.metadata.annotations).not.toHaveProperty('istio.io/connectedAt')
    }
    await waitFor('the WorkloadEntry to be deleted after the grace period', async () => (await t.workloadEntry(name)) === undefined, timeoutMs)
    expect((await t.syncz()).some((e) => e.proxy === entry.proxy)).toBe(false)
  } finally {
    await vm?.close()
  }
}
