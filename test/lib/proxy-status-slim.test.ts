import {describe, expect, it} from 'vitest'
import {slimWar, slimWorkloadEntry} from '../../src/lib/proxy-status/fetch.js'
import {renderProxyDetail} from '../../src/lib/proxy-status/detail.js'
import {proxyStatusRows} from '../../src/lib/proxy-status/rows.js'
import {pairVms, vmRecords, type VmRecord} from '../../src/lib/proxy-status/vms.js'
import type {WarObject, WorkloadEntryObject} from '../../src/lib/war/model.js'

/** What a real kube-apiserver adds to every object it stores (dropped by the slim copies). */
const managedFields = [
  {
    manager: 'kubectl',
    operation: 'Update',
    apiVersion: 'v1',
    time: '2026-11-20T10:00:00Z',
    fieldsType: 'FieldsV1',
    fieldsV1: {'f:metadata': {'f:labels': {'.': {}, 'f:app': {}}}, 'f:spec': {'.': {}, 'f:address': {}}},
  },
]

const war = (name: string, connected: boolean): WarObject =>
  ({
    apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1',
    kind: 'WorkloadAutoRegistration',
    metadata: {
      name,
      namespace: 'shop',
      uid: `uid-${name}`,
      resourceVersion: '17',
      generation: 2,
      creationTimestamp: '2026-11-20T09:00:00Z',
      managedFields,
      ownerReferences: [{apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: 'app', uid: 'g1', controller: true}],
    },
    spec: {
      identity: {aws: {partition: 'aws', account: '123456789012', region: 'us-east-2', zone: 'us-east-2b', ec2: {instance_id: name}}},
      registration: {agent: {version: '1.4.0'}, sidecar: {istio: {version: '1.24.2'}}, host: {addresses: [{ip: '10.0.0.7', type: 'VPC'}]}, workload: {labels: {app: 'app', tier: 'web'}}},
    },
    status: {
      observedGeneration: 2,
      workloadGroupSnapshot: {metadata: {labels: {app: 'app'}}, template: {serviceAccount: 'default', ports: {http: 8080}}},
      activeAgentConnection: {connectedTo: 'onboarding-plane-0'},
      conditions: [{type: 'AgentConnected', status: connected ? 'True' : 'False', reason: 'AgentEstablishedConnection', lastTransitionTime: '2026-11-20T10:00:00Z'}],
    },
  }) as WarObject

const entry = (name: string, o: {owner?: string; auto?: boolean} = {}): WorkloadEntryObject =>
  ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadEntry',
    metadata: {
      name,
      namespace: 'shop',
      uid: `uid-${name}`,
      resourceVersion: '9',
      generation: 1,
      creationTimestamp: '2026-11-20T09:30:00Z',
      managedFields,
      labels: {app: 'app', 'networking.istio.io/tunnel': 'http'},
      annotations: {
        ...(o.auto ? {'istio.io/autoRegistrationGroup': 'app'} : {}),
        'istio.io/connectedAt': '2026-11-20T10:00:00Z',
        'istio.io/workloadController': 'istiod-1',
        'proxy.istio.io/health-checks-enabled': 'true',
      },
      ...(o.owner ? {ownerReferences: [{apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1', kind: 'WorkloadAutoRegistration', name: o.owner, uid: `uid-${o.owner}`, controller: true}]} : {}),
    },
    spec: {address: '10.0.0.7', labels: {app: 'app', version: 'v1'}, serviceAccount: 'web-vm', ports: {http: 8080}, network: 'vpc-1'},
    status: {
      observedGeneration: 1,
      conditions: [
        {type: 'Healthy', status: 'False', reason: 'HTTPGetFailed', message: 'Get  "http://10.0.0.7:8080/ready":\n refused', lastTransitionTime: '2026-11-20T10:05:00Z'},
        {type: 'istio.io/WaypointBound', status: 'True', reason: 'Bound', lastTransitionTime: '2026-11-20T10:01:00Z'},
      ],
    },
  }) as WorkloadEntryObject

/** Records without the entries they point to (compared on their own below). */
const withoutEntries = (records: VmRecord[]) => records.map(({entry: _entry, ...r}) => r)

describe('proxy-status keeps only what it reads of each listed registration (slimWorkloadEntry, slimWar)', () => {
  const entries = [entry('app-aws-1', {owner: 'app-aws-1'}), entry('web-10.0.0.9', {auto: true}), entry('vm-manual')]
  const wars = [war('app-aws-1', true), war('app-aws-2', false)]

  it('the VM records, with and without -l labels, are those of the full objects', () => {
    for (const labels of [false, true]) {
      const full = vmRecords(entries, wars, {labels})
      const slim = vmRecords(entries.map(slimWorkloadEntry), wars.map(slimWar), {labels})
      expect(withoutEntries(slim)).toEqual(withoutEntries(full))
      expect(slim.map((r) => r.entry === undefined)).toEqual(full.map((r) => r.entry === undefined))
    }
  })

  it('the rows and the detail view are those of the full objects', () => {
    const now = new Date('2026-11-20T11:00:00Z')
    const view = (es: WorkloadEntryObject[], ws: WarObject[]) => {
      const {vms} = pairVms({syncs: [], vms: vmRecords(es, ws)})
      const rows = proxyStatusRows([], {vms, now})
      const byName = new Map(vms.map((v) => [v.proxyId ?? `${v.name}.${v.namespace}`, v]))
      return {rows, detail: renderProxyDetail(rows, (r) => byName.get(r.name), now)}
    }
    const full = view(entries, wars)
    const slim = view(entries.map(slimWorkloadEntry), wars.map(slimWar))
    expect(slim.rows).toEqual(full.rows)
    expect(slim.detail).toBe(full.detail)
    // the detail view reads the entry's tunnel label, health-check annotation and WaypointBound condition
    expect(full.detail).toContain('http (label networking.istio.io/tunnel)')
  })

  it('drops managedFields, uid, resourceVersion and the group snapshot, and copies nothing it keeps', () => {
    const we = entries[0]!
    const slimWe = slimWorkloadEntry(we)
    expect(slimWe.metadata).toEqual({
      name: 'app-aws-1',
      namespace: 'shop',
      creationTimestamp: '2026-11-20T09:30:00Z',
      labels: we.metadata!.labels,
      annotations: we.metadata!.annotations,
      ownerReferences: we.metadata!.ownerReferences,
    })
    expect(slimWe.spec).toBe(we.spec)
    expect(slimWe.status).toEqual({conditions: we.status!.conditions})
    expect(slimWe.status!.conditions).toBe(we.status!.conditions)
    const w = wars[0]!
    const slim = slimWar(w)
    expect(Object.keys(slim.metadata!)).toEqual(['name', 'namespace', 'creationTimestamp', 'ownerReferences'])
    expect(slim.spec).toBe(w.spec)
    expect(slim.status).toEqual({conditions: w.status!.conditions, activeAgentConnection: {connectedTo: 'onboarding-plane-0'}})
    expect(JSON.stringify([slimWe, slim])).not.toMatch(/managedFields|workloadGroupSnapshot|resourceVersion|observedGeneration/)
  })

  it('entries: false (every view but the detail of NAME): the records do not hold their WorkloadEntries, and are otherwise the same', () => {
    const held = vmRecords(entries, wars)
    const free = vmRecords(entries, wars, {entries: false})
    expect(held.filter((r) => r.entry !== undefined).length).toBe(3)
    expect(free.filter((r) => 'entry' in r)).toEqual([])
    expect(free).toEqual(withoutEntries(held))
  })

  it('objects that are not objects, or have no metadata or status, pass as they are', () => {
    expect(slimWorkloadEntry({} as WorkloadEntryObject)).toEqual({})
    expect(slimWar({spec: {}} as WarObject)).toEqual({spec: {}})
    expect(slimWorkloadEntry({status: {}} as WorkloadEntryObject)).toEqual({status: {}})
  })
})
