import {afterEach, describe, expect, it, vi} from 'vitest'
import {ANNOTATIONS, AutoRegistration, autoRegisteredName, rfc3339Nano, RegistrationError, WAR, WE, WG, type ProxyInfo} from './autoregistration.js'
import {Store, type KubeObj} from './store.js'

const group = (spec: Record<string, unknown> = {}): KubeObj => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: {name: 'web', namespace: 'apps'},
  spec: {
    metadata: {labels: {app: 'web', tier: 'group'}, annotations: {'example.com/team': 'a'}},
    template: {serviceAccount: 'web-vm', ports: {http: 8080}, labels: {tier: 'template', v: 't'}, network: 'vm-net', weight: 3},
    probe: {httpGet: {port: 8080, path: '/ready'}},
    ...spec,
  },
})

const proxy = (extra: Partial<ProxyInfo> = {}): ProxyInfo => ({
  id: 'vm-1.apps',
  namespace: 'apps',
  ips: ['10.0.0.5'],
  autoRegisterGroup: 'web',
  labels: {tier: 'node'},
  readinessProbe: true,
  identity: {namespace: 'apps', serviceAccount: 'web-vm'},
  ...extra,
})

let ctl: AutoRegistration | undefined
afterEach(() => {
  ctl?.stop()
  vi.useRealTimers()
})

function setup(options: Partial<ConstructorParameters<typeof AutoRegistration>[1]> = {}, spec?: Record<string, unknown>): {store: Store; wg: KubeObj} {
  const store = new Store()
  const wg = store.create(WG, 'WorkloadGroup', group(spec))
  ctl = new AutoRegistration(store, {instanceId: 'istiod-a', ...options})
  return {store, wg}
}

describe('auto-registration (pilot/pkg/autoregistration)', () => {
  it('names entries group-IP[-network], IPv6 colons as dashes, cut from the front to 253 characters', () => {
    expect(autoRegisteredName(proxy())).toBe('web-10.0.0.5')
    expect(autoRegisteredName(proxy({ips: ['fd00::5'], network: 'n1'}))).toBe('web-fd00--5-n1')
    const long = autoRegisteredName(proxy({autoRegisterGroup: 'g'.repeat(260)}))
    expect(long).toHaveLength(253)
    expect(long.endsWith('-10.0.0.5')).toBe(true)
  })

  it('formats times as Go RFC3339Nano (no trailing zeros)', () => {
    expect(rfc3339Nano(new Date('2026-01-02T03:04:05.120Z'))).toBe('2026-01-02T03:04:05.12Z')
    expect(rfc3339Nano(new Date('2026-01-02T03:04:05.000Z'))).toBe('2026-01-02T03:04:05Z')
  })

  it('creates the entry from the template: labels node > group metadata > template, annotations, owner, network and locality from the node', () => {
    const {store, wg} = setup()
    const conTime = new Date('2026-01-02T03:04:05.5Z')
    expect(ctl!.connect(proxy({network: 'node-net', locality: {region: 'r1', zone: 'z1'}}), conTime)).toBe('web-10.0.0.5-node-net')
    const we = store.get(WE, 'apps', 'web-10.0.0.5-node-net')!
    expect(we.spec).toEqual({
      address: '10.0.0.5',
      serviceAccount: 'web-vm',
      ports: {http: 8080},
      weight: 3,
      network: 'node-net',
      locality: 'r1/z1',
      labels: {app: 'web', tier: 'node', v: 't'},
    })
    expect(we.metadata.labels).toEqual({app: 'web', tier: 'node', v: 't'})
    expect(we.metadata.annotations).toEqual({
      [ANNOTATIONS.group]: 'web',
      'example.com/team': 'a',
      [ANNOTATIONS.healthChecks]: 'true',
      [ANNOTATIONS.controller]: 'istiod-a',
      [ANNOTATIONS.connectedAt]: '2026-01-02T03:04:05.5Z',
    })
    expect(we.metadata.ownerReferences).toEqual([{apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: 'web', uid: wg.metadata.uid, controller: true}])
  })

  it('adds no health-checks annotation without a readiness probe', () => {
    const {store} = setup()
    ctl!.connect(proxy({readinessProbe: false}))
    expect(store.get(WE, 'apps', 'web-10.0.0.5')!.metadata.annotations).not.toHaveProperty(ANNOTATIONS.healthChecks)
  })

  it("refuses a proxy whose group does not exist with istiod's FailedPrecondition message", () => {
    setup()
    let err: unknown
    try {
      ctl!.connect(proxy({autoRegisterGroup: 'nope'}))
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(RegistrationError)
    expect(err).toMatchObject({code: 'FailedPrecondition', message: 'auto-registration WorkloadEntry of vm-1.apps failed: cannot find WorkloadGroup apps/nope'})
  })

  it('refuses an identity from another service account or namespace', () => {
    const {store} = setup()
    expect(() => ctl!.connect(proxy({identity: {namespace: 'apps', serviceAccount: 'default'}}))).toThrow('registration of WorkloadEntry service account mismatch: "default" vs "web-vm"')
    expect(() => ctl!.connect(proxy({identity: {namespace: 'other', serviceAccount: 'web-vm'}}))).toThrow('registration of WorkloadEntry namespace mismatch: "other" vs "apps"')
    expect(store.list(WE)).toHaveLength(0)
  })

  it('on reconnect only marks the entry connected: a changed group reaches it only once the entry is gone', () => {
    const {store, wg} = setup()
    ctl!.connect(proxy(), new Date('2026-01-01T00:00:00Z'))
    ctl!.disconnect('vm-1.apps', new Date('2026-01-01T00:00:01Z'))
    expect(store.get(WE, 'apps', 'web-10.0.0.5')!.metadata.annotations).toMatchObject({[ANNOTATIONS.disconnectedAt]: '2026-01-01T00:00:01Z'})
    expect(store.get(WE, 'apps', 'web-10.0.0.5')!.metadata.annotations).not.toHaveProperty(ANNOTATIONS.connectedAt)
    store.update(WG, {...wg, spec: {...(wg.spec as object), template: {serviceAccount: 'web-vm', ports: {http: 9090}}}})
    ctl!.connect(proxy(), new Date('2026-01-01T00:00:02Z'))
    const we = store.get(WE, 'apps', 'web-10.0.0.5')!
    expect(we.metadata.annotations).toMatchObject({[ANNOTATIONS.connectedAt]: '2026-01-01T00:00:02Z', [ANNOTATIONS.controller]: 'istiod-a'})
    expect(we.metadata.annotations).not.toHaveProperty(ANNOTATIONS.disconnectedAt)
    expect((we.spec as {ports: unknown}).ports).toEqual({http: 8080})
    store.delete(WE, 'apps', 'web-10.0.0.5')
    ctl!.disconnect('vm-1.apps')
    ctl!.connect(proxy())
    expect((store.get(WE, 'apps', 'web-10.0.0.5')!.spec as {ports: unknown}).ports).toEqual({http: 9090})
  })

  it('keeps the entry while another connection of the same proxy is open', () => {
    const {store} = setup()
    ctl!.connect(proxy({id: 'vm-1.apps'}))
    ctl!.connect(proxy({id: 'vm-1b.apps'}))
    ctl!.disconnect('vm-1.apps')
    expect(store.get(WE, 'apps', 'web-10.0.0.5')!.metadata.annotations).not.toHaveProperty(ANNOTATIONS.disconnectedAt)
  })

  it('deletes a disconnected entry after the grace period, with a resourceVersion precondition', () => {
    vi.useFakeTimers()
    const {store} = setup({gracePeriodMs: 10_000})
    ctl!.connect(proxy())
    ctl!.disconnect('vm-1.apps')
    vi.advanceTimersByTime(9_000)
    expect(store.get(WE, 'apps', 'web-10.0.0.5')).toBeDefined()
    vi.advanceTimersByTime(1_500)
    expect(store.get(WE, 'apps', 'web-10.0.0.5')).toBeUndefined()
  })

  it('a grace timer that fires a little before the grace period by the clock deletes the entry a little later, not never', () => {
    // The timer counts from the event loop's cached time, which can be some milliseconds older than the
    // disconnect time read afterwards (a busy loop): the timer then fires before Date.now() says it is due.
    vi.useFakeTimers()
    const {store} = setup({gracePeriodMs: 10_000})
    ctl!.connect(proxy())
    ctl!.disconnect('vm-1.apps', new Date(Date.now() + 5))
    vi.advanceTimersByTime(10_000)
    expect(store.get(WE, 'apps', 'web-10.0.0.5')).toBeDefined()
    vi.advanceTimersByTime(10)
    expect(store.get(WE, 'apps', 'web-10.0.0.5')).toBeUndefined()
  })

  it('keeps an entry that reconnected within the grace period', () => {
    vi.useFakeTimers()
    const {store} = setup({gracePeriodMs: 10_000})
    ctl!.connect(proxy())
    ctl!.disconnect('vm-1.apps')
    vi.advanceTimersByTime(5_000)
    ctl!.connect(proxy())
    vi.advanceTimersByTime(20_000)
    expect(store.get(WE, 'apps', 'web-10.0.0.5')!.metadata.annotations).toHaveProperty(ANNOTATIONS.connectedAt)
  })

  it('writes the Healthy condition from probe results (message on failure, no reason), only while it holds the connection', () => {
    const {store} = setup()
    ctl!.connect(proxy())
    ctl!.health('vm-1.apps', {healthy: false, message: 'Get "http://127.0.0.1:8080/ready": connection refused'}, new Date('2026-01-01T00:00:01Z'))
    expect((store.get(WE, 'apps', 'web-10.0.0.5')!.status as {conditions: unknown[]}).conditions).toEqual([
      {type: 'Healthy', status: 'False', lastProbeTime: '2026-01-01T00:00:01.000Z', lastTransitionTime: '2026-01-01T00:00:01.000Z', message: 'Get "http://127.0.0.1:8080/ready": connection refused'},
    ])
    ctl!.health('vm-1.apps', {healthy: true}, new Date('2026-01-01T00:00:02Z'))
    expect((store.get(WE, 'apps', 'web-10.0.0.5')!.status as {conditions: unknown[]}).conditions).toEqual([
      {type: 'Healthy', status: 'True', lastProbeTime: '2026-01-01T00:00:02.000Z', lastTransitionTime: '2026-01-01T00:00:02.000Z'},
    ])
    // An older result does not replace a newer one.
    ctl!.health('vm-1.apps', {healthy: false, message: 'old'}, new Date('2026-01-01T00:00:00Z'))
    expect((store.get(WE, 'apps', 'web-10.0.0.5')!.status as {conditions: {status: string}[]}).conditions[0]!.status).toBe('True')
  })

  it('TSB mode: a WAR with the group snapshot owns the entry; deleting it while connected makes the agent re-onboard', async () => {
    const reonboard: string[] = []
    const {store, wg} = setup({mode: 'tsb', onReonboard: (id) => reonboard.push(id)})
    const name = ctl!.connect(proxy())!
    expect(name).toBe('web-jwt-k8s-vm-1')
    const war = store.get(WAR, 'apps', name)!
    expect(war.metadata.ownerReferences).toEqual([{apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: 'web', uid: wg.metadata.uid, controller: true}])
    expect(war.status).toMatchObject({workloadGroupSnapshot: wg.spec, activeAgentConnection: {connectedTo: 'istiod-a'}, conditions: [{type: 'AgentConnected', status: 'True'}]})
    const we = store.get(WE, 'apps', name)!
    expect(we.metadata.ownerReferences).toEqual([expect.objectContaining({kind: 'WorkloadAutoRegistration', name, uid: war.metadata.uid, controller: true})])
    store.delete(WAR, 'apps', name)
    expect(store.get(WE, 'apps', name)).toBeUndefined()
    await new Promise((r) => setTimeout(r, 5))
    expect(reonboard).toEqual(['vm-1.apps'])
  })
})
