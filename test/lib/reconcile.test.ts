/** The pure judge of `war reconcile`: grace period, unread istiods, ambiguous pairing, duplicates. */
import {describe, expect, it} from 'vitest'
import {reconcile, type ContextSnapshot} from '../../src/lib/reconcile/model.js'
import type {ProxySync} from '../../src/lib/proxy-status/status.js'
import type {WorkloadEntryObject} from '../../src/lib/war/model.js'

const NOW = new Date('2026-01-01T12:00:00Z')
const ago = (ms: number) => new Date(NOW.getTime() - ms).toISOString()

function entry(name: string, address: string, o: {disconnectedAgoMs?: number; connectedTo?: string; network?: string} = {}): WorkloadEntryObject {
  const annotations: Record<string, string> = {'istio.io/autoRegistrationGroup': 'web'}
  if (o.disconnectedAgoMs !== undefined) annotations['istio.io/disconnectedAt'] = ago(o.disconnectedAgoMs)
  if (o.connectedTo) {
    annotations['istio.io/connectedAt'] = ago(3600_000)
    annotations['istio.io/workloadController'] = o.connectedTo
  }
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadEntry',
    metadata: {name, namespace: 'apps', uid: `uid-${name}`, resourceVersion: '7', creationTimestamp: ago(7200_000), annotations} as WorkloadEntryObject['metadata'],
    spec: {address, network: o.network ?? 'n1', serviceAccount: 'default'},
  }
}

function proxy(id: string, istiod = 'istiod-a'): ProxySync {
  return {proxyId: id, clusterId: 'c1', proxyVersion: '1.24.2', istiod: {name: istiod, namespace: 'istio-system'}, types: {} as ProxySync['types'], shape: 'http-resources'}
}

function snap(partial: Partial<ContextSnapshot>): ContextSnapshot {
  return {
    context: 'c1',
    workloadEntries: [],
    wars: [],
    groups: [{apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name: 'web', namespace: 'apps'}, spec: {template: {serviceAccount: 'default'}}}],
    istiods: ['istiod-a'],
    unreadIstiods: [],
    syncs: [],
    pods: {labels: new Map(), listed: new Set(['apps'])},
    ...partial,
  }
}

describe('reconcile', () => {
  it('a disconnected entry is dangling only past the grace period (strictly), with a guarded delete', () => {
    const at = (ms: number) => reconcile([snap({workloadEntries: [entry('web-10.0.0.2', '10.0.0.2', {disconnectedAgoMs: ms})]})], {now: NOW, gracePeriodMs: 60_000}).findings
    expect(at(60_000)).toEqual([])
    const [f] = at(60_001)
    expect(f).toMatchObject({type: 'DanglingEntry', kind: 'WorkloadEntry', name: 'web-10.0.0.2', safeFix: {uid: 'uid-web-10.0.0.2', resourceVersion: '7'}})
  })

  it('an entry held by an istiod that did not answer is not judged', () => {
    const s = snap({workloadEntries: [entry('web-10.0.0.3', '10.0.0.3', {connectedTo: 'istiod-b'})], istiods: ['istiod-a'], unreadIstiods: [{name: 'istiod-b', error: 'timeout'}]})
    expect(reconcile([s], {now: NOW, gracePeriodMs: 60_000}).findings).toEqual([])
  })

  it('more VM proxies than entries on one istiod and namespace: one warning for the surplus', () => {
    const s = snap({workloadEntries: [entry('web-10.0.0.1', '10.0.0.1', {connectedTo: 'istiod-a'})], syncs: [proxy('vm-1.apps'), proxy('vm-2.apps')]})
    const [f, ...rest] = reconcile([s], {now: NOW, gracePeriodMs: 60_000}).findings
    expect(rest).toEqual([])
    expect(f).toMatchObject({type: 'UnregisteredProxy', severity: 'warning', name: 'vm-1,vm-2'})
    expect(f!.reason).toContain('2 VM sidecars connected to istiod istiod-a in namespace apps but only 1 auto-registered entries')
  })

  it('the same address on different networks is no duplicate; on the same network it is, across contexts', () => {
    const a = snap({context: 'a', workloadEntries: [entry('web-10.0.0.1', '10.0.0.1', {connectedTo: 'istiod-a'})], syncs: [proxy('vm-1.apps')]})
    const b = snap({context: 'b', workloadEntries: [entry('web-10.0.0.1', '10.0.0.1', {connectedTo: 'istiod-a', network: 'n2'})], syncs: [proxy('vm-9.apps')]})
    expect(reconcile([a, b], {now: NOW, gracePeriodMs: 60_000}).findings).toEqual([])
    const c = snap({context: 'c', workloadEntries: [entry('web-10.0.0.1', '10.0.0.1', {connectedTo: 'istiod-a'})], syncs: [proxy('vm-5.apps')]})
    const [dup] = reconcile([a, c], {now: NOW, gracePeriodMs: 60_000}).findings
    expect(dup).toMatchObject({type: 'DuplicateAddress', context: 'a', related: [{context: 'c', kind: 'WorkloadEntry', namespace: 'apps', name: 'web-10.0.0.1'}]})
  })

  it('names from the cluster and the kubeconfig are shell-quoted in every printed fix', () => {
    const hostile = entry('web-10.0.0.7', '10.0.0.7')
    hostile.metadata!.annotations!['istio.io/autoRegistrationGroup'] = 'web;touch /tmp/pwned'
    const s = snap({context: "prod's cluster", workloadEntries: [hostile]})
    const findings = reconcile([s], {now: NOW, gracePeriodMs: 60_000}).findings
    const f = findings.find((x) => x.type === 'OrphanedEntry')
    expect(f!.fix).toBe(
      `recreate the group (meshvm onboard 'web;touch /tmp/pwned' -n apps … --apply), or delete the entry: kubectl delete workloadentry web-10.0.0.7 -n apps --context 'prod'"'"'s cluster'`,
    )
    for (const x of findings) expect(x.fix, x.type).not.toMatch(/[^']prod's|[^']web;touch/)
  })
})
