/**
 * The simulation keeps serialized answers (each stored object's JSON text, each istiod's /debug/syncz
 * text) so that the bench's five clusters cost its one thread less: what clients receive must be the
 * same bytes as without the cache, before and after every kind of change.
 */
import {request} from 'node:https'
import {afterAll, afterEach, beforeAll, describe, expect, it, vi} from 'vitest'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {Mesh} from './mesh.js'
import {Store, type KubeObj} from './store.js'

let cluster: TestCluster

function get(path: string): Promise<string> {
  return new Promise((resolve, reject) => {
    const req = request(new URL(path, cluster.url), {headers: {Accept: 'application/json', Authorization: `Bearer ${cluster.token}`}, ca: cluster.caPem, agent: false}, (res) => {
      let text = ''
      res
        .setEncoding('utf8')
        .on('data', (d: string) => (text += d))
        .on('end', () => resolve(text))
    })
    req.on('error', reject)
    req.end()
  })
}

const WE = 'networking.istio.io/workloadentries'

/** The list body as the server built it before it kept texts: JSON.stringify of the whole list. */
function expectedList(version: string, namespace: string | undefined, extra: Record<string, unknown> = {}): string {
  const items = cluster.store.list(WE, namespace).map((o) => ({...o, apiVersion: `networking.istio.io/${version}`, kind: 'WorkloadEntry'}))
  return JSON.stringify({kind: 'WorkloadEntryList', apiVersion: `networking.istio.io/${version}`, metadata: {resourceVersion: String(cluster.store.resourceVersion), ...extra}, items})
}

beforeAll(async () => {
  cluster = await startCluster()
  for (let i = 0; i < 5; i++) {
    cluster.store.create(WE, 'WorkloadEntry', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {name: `vm-${i}`, namespace: i % 2 ? 'default' : 'kube-public', labels: {app: 'vm', n: String(i)}, annotations: {note: 'quote " and \u00e9 and \u2028'}},
      spec: {address: `10.0.0.${i}`, labels: {app: 'vm'}},
    })
  }
})
afterAll(() => cluster?.stop())

describe('list bodies joined from kept object texts', () => {
  it('are the bytes of JSON.stringify of the list, in every served version, all namespaces or one', async () => {
    for (const version of ['v1', 'v1beta1', 'v1alpha3']) {
      expect(await get(`/apis/networking.istio.io/${version}/workloadentries`)).toBe(expectedList(version, undefined))
      expect(await get(`/apis/networking.istio.io/${version}/namespaces/default/workloadentries`)).toBe(expectedList(version, 'default'))
      // Asked twice: the second answer comes from the kept texts.
      expect(await get(`/apis/networking.istio.io/${version}/workloadentries`)).toBe(expectedList(version, undefined))
    }
  })

  it('follow writes (update, create, delete) and label selectors', async () => {
    await get('/apis/networking.istio.io/v1/workloadentries')
    const vm1 = cluster.store.get(WE, 'default', 'vm-1')!
    cluster.store.update(WE, {...vm1, spec: {address: '10.9.9.9'}} as KubeObj)
    cluster.store.create(WE, 'WorkloadEntry', {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadEntry', metadata: {name: 'vm-new', namespace: 'default'}, spec: {address: '10.0.1.1'}})
    cluster.store.delete(WE, 'kube-public', 'vm-0')
    const body = await get('/apis/networking.istio.io/v1/workloadentries')
    expect(body).toBe(expectedList('v1', undefined))
    expect(body).toContain('10.9.9.9')
    const selected = JSON.parse(await get('/apis/networking.istio.io/v1/workloadentries?labelSelector=n%3D3')) as {items: KubeObj[]}
    expect(selected.items.map((o) => o.metadata.name)).toEqual(['vm-3'])
  })

  it('pages with a continue token as before', async () => {
    const first = await get('/apis/networking.istio.io/v1/workloadentries?limit=2')
    const page = JSON.parse(first) as {metadata: {continue: string; remainingItemCount: number}; items: KubeObj[]}
    const all = cluster.store.list(WE)
    const items = all.slice(0, 2).map((o) => ({...o, apiVersion: 'networking.istio.io/v1', kind: 'WorkloadEntry'}))
    expect(first).toBe(
      JSON.stringify({
        kind: 'WorkloadEntryList',
        apiVersion: 'networking.istio.io/v1',
        metadata: {resourceVersion: String(cluster.store.resourceVersion), continue: page.metadata.continue, remainingItemCount: all.length - 2},
        items,
      }),
    )
  })
})

describe('the kept /debug/syncz text', () => {
  afterEach(() => vi.useRealTimers())

  it('is the bytes of JSON.stringify(syncz()) after every change of proxies, istiods and time', () => {
    vi.useFakeTimers({toFake: ['Date']})
    vi.setSystemTime(new Date('2026-11-20T10:00:00.400Z'))
    const mesh = new Mesh(new Store())
    mesh.addIstiod({name: 'istiod-a'})
    mesh.addIstiod({name: 'istiod-b', shape: 'legacy'})
    for (let i = 0; i < 6; i++) mesh.connect({id: `vm-${i}.${i % 2 ? 'fleet' : 'apps'}`, istiod: i < 4 ? 'istiod-a' : 'istiod-b', sentAgoMs: i === 1 ? 1500 : undefined})
    const same = (name: string, namespace?: string) => expect(mesh.synczText(mesh.istiods.get(name)!, namespace)).toBe(JSON.stringify(mesh.syncz(name, namespace)))
    const all = () => {
      for (const name of ['istiod-a', 'istiod-b']) for (const ns of [undefined, 'fleet', 'apps']) same(name, ns)
    }
    all()
    all()
    // Changed in place, as the VM services do.
    const p = mesh.proxies.get('vm-2.apps')!
    p.types = {...p.types, EDS: 'stale'}
    all()
    p.types.RDS = 'nack'
    all()
    p.lastError = 'another error'
    all()
    // Text that looks like a kept text's time slot (a control character JSON escapes).
    p.lastError = 'slot \u00010\u0001 here'
    all()
    p.lastError = 'another error'
    all()
    p.version = '1.25.0'
    all()
    // Time: within the same second, then past it (ages are rendered per second; 1.5 s ago crosses at .500).
    // The slots are filled in afresh: the kept text is reused across seconds.
    vi.setSystemTime(new Date('2026-11-20T10:00:00.450Z'))
    all()
    vi.setSystemTime(new Date('2026-11-20T10:00:00.600Z'))
    all()
    vi.setSystemTime(new Date('2026-11-20T10:00:03.000Z'))
    all()
    mesh.connect({id: 'vm-9.apps', istiod: 'istiod-a'})
    all()
    mesh.disconnect('vm-0.apps')
    all()
    mesh.connect({id: 'vm-4.apps', istiod: 'istiod-a'}) // moved from istiod-b
    all()
  })
})
