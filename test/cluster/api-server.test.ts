/**
 * The test API server's own tests: REST semantics over real HTTPS, checked at the wire level.
 */
import {request} from 'node:https'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {waitUntil} from '../helpers/spawn.js'

/** `body`: the JSON the server sent (undefined if it was not JSON); `T` names the fields a test reads of it. */
interface Res<T> {
  status: number
  headers: Record<string, string | string[] | undefined>
  body: T
  text: string
}

/** kube-apiserver's error body (metav1.Status). */
interface Status {
  reason: string
  message: string
  details: {causes: {reason: string; field: string; message: string}[]}
}

interface Meta {
  uid: string
  generation: number
  resourceVersion: string
  creationTimestamp: string
  labels?: Record<string, string>
  managedFields: {manager: string; operation: string}[]
}

/** A WorkloadGroup as the server answers it (`bogus`: an unknown field it must prune). */
interface WorkloadGroup {
  metadata: Meta
  spec: {template: {ports: Record<string, number>}; bogus?: unknown}
}

interface List {
  metadata: {continue?: string; remainingItemCount?: number}
  items: {metadata: {name: string}}[]
}

let cluster: TestCluster

function call<T = unknown>(method: string, path: string, options: {body?: unknown; token?: string | null; contentType?: string; accept?: string; on?: TestCluster} = {}): Promise<Res<T>> {
  const target = options.on ?? cluster
  return new Promise((resolve, reject) => {
    const url = new URL(path, target.url)
    const headers: Record<string, string> = {Accept: options.accept ?? 'application/json'}
    const token = options.token === undefined ? target.token : options.token
    if (token) headers.Authorization = `Bearer ${token}`
    const payload = options.body === undefined ? undefined : typeof options.body === 'string' ? options.body : JSON.stringify(options.body)
    if (payload !== undefined) headers['Content-Type'] = options.contentType ?? 'application/json'
    // A fresh connection per call: after a long synchronous burst in a test (filling the store), a
    // reused keep-alive socket races its idle timer and can be reset.
    const req = request(url, {method, headers, ca: target.caPem, agent: false}, (res) => {
      let text = ''
      res
        .setEncoding('utf8')
        .on('data', (d: string) => (text += d))
        .on('end', () => {
          let body: T
          try {
            body = JSON.parse(text)
          } catch {
            body = undefined as T
          }
          resolve({status: res.statusCode ?? 0, headers: res.headers, body, text})
        })
    })
    req.on('error', reject)
    req.end(payload)
  })
}

const WG = '/apis/networking.istio.io/v1/namespaces/default/workloadgroups'
const wg = (name: string, extra: Record<string, unknown> = {}) => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: {name, ...extra},
  spec: {metadata: {labels: {app: name}}, template: {serviceAccount: 'default', ports: {http: 8080}}},
})

beforeAll(async () => {
  // The default continue-token lifetime (5 min): a short one would expire tokens between the pages
  // of a slow list on a loaded CI machine. The expiry test has its own short-lived cluster.
  cluster = await startCluster({tokenControllerDelayMs: 100})
})
afterAll(() => cluster?.stop())

describe('authentication and discovery', () => {
  it('rejects requests without a valid token with 401', async () => {
    expect((await call('GET', '/api/v1/namespaces', {token: null})).status).toBe(401)
    const bad = await call('GET', '/api/v1/namespaces', {token: 'nope'})
    expect(bad.status).toBe(401)
    expect(bad.body).toMatchObject({kind: 'Status', reason: 'Unauthorized', code: 401})
  })

  it('serves /version, groups with preferred versions, and resource lists', async () => {
    expect((await call<{gitVersion: string}>('GET', '/version')).body.gitVersion).toBe('v1.32.0')
    const {groups} = (await call<{groups: {name: string; preferredVersion: {version: string}}[]}>('GET', '/apis')).body
    expect(groups.find((g) => g.name === 'networking.istio.io')?.preferredVersion.version).toBe('v1')
    const list = (await call<{resources: unknown[]}>('GET', '/apis/runtime.onboarding.tetrate.io/v1alpha1')).body
    expect(list.resources).toContainEqual(expect.objectContaining({name: 'workloadautoregistrations', shortNames: ['war'], kind: 'WorkloadAutoRegistration', namespaced: true}))
    const core = (await call<{resources: {name: string}[]}>('GET', '/api/v1')).body.resources.map((r) => r.name)
    expect(core).toEqual(expect.arrayContaining(['pods', 'pods/proxy', 'serviceaccounts/token', 'secrets', 'events']))
  })

  it('serves OpenAPI v3 documents that announce fieldValidation', async () => {
    const root = (await call<{paths: Record<string, {serverRelativeURL: string}>}>('GET', '/openapi/v3')).body
    expect(root.paths['apis/networking.istio.io/v1']?.serverRelativeURL).toMatch(/^\/openapi\/v3\/apis\/networking.istio.io\/v1\?hash=/)
    type Operation = {'x-kubernetes-group-version-kind': unknown; parameters: {name: string}[]}
    const doc = (await call<{paths: Record<string, {patch: Operation}>}>('GET', '/openapi/v3/apis/networking.istio.io/v1')).body
    const patch = doc.paths['/apis/networking.istio.io/v1/namespaces/{namespace}/workloadgroups/{name}']!.patch
    expect(patch['x-kubernetes-group-version-kind']).toEqual({group: 'networking.istio.io', version: 'v1', kind: 'WorkloadGroup'})
    expect(patch.parameters.map((p) => p.name)).toContain('fieldValidation')
  })
})

describe('object semantics', () => {
  it('creates with uid, resourceVersion, generation and creationTimestamp; 409 on a second create', async () => {
    const created = await call<WorkloadGroup>('POST', WG, {body: wg('crud')})
    expect(created.status).toBe(201)
    expect(created.body.metadata).toMatchObject({name: 'crud', namespace: 'default', generation: 1})
    expect(created.body.metadata.uid).toMatch(/^[0-9a-f-]{36}$/)
    expect(created.body.metadata.creationTimestamp).toMatch(/Z$/)
    const again = await call('POST', WG, {body: wg('crud')})
    expect(again.status).toBe(409)
    expect(again.body).toMatchObject({reason: 'AlreadyExists', message: 'workloadgroups.networking.istio.io "crud" already exists'})
  })

  it('rejects a stale resourceVersion with 409 Conflict; bumps generation only on spec changes', async () => {
    const first = (await call<WorkloadGroup>('GET', `${WG}/crud`)).body
    const labelled = await call<WorkloadGroup>('PATCH', `${WG}/crud`, {body: {metadata: {labels: {team: 'a'}}}, contentType: 'application/merge-patch+json'})
    expect(labelled.body.metadata.generation).toBe(1)
    const stale = await call<Status>('PUT', `${WG}/crud`, {body: first})
    expect(stale.status).toBe(409)
    expect(stale.body.reason).toBe('Conflict')
    const changed = await call<WorkloadGroup>('PATCH', `${WG}/crud`, {body: [{op: 'replace', path: '/spec/template/ports/http', value: 9090}], contentType: 'application/json-patch+json'})
    expect(changed.status).toBe(200)
    expect(changed.body.metadata.generation).toBe(2)
    expect(changed.body.metadata.labels).toEqual({team: 'a'})
    expect(Number(changed.body.metadata.resourceVersion)).toBeGreaterThan(Number(first.metadata.resourceVersion))
  })

  it('validates against the CRD schema with 422 causes, and rejects unknown fields with fieldValidation=Strict', async () => {
    const bad = wg('bad')
    bad.spec.template.ports.http = 70000
    const res = await call<Status>('POST', WG, {body: bad})
    expect(res.status).toBe(422)
    expect(res.body.reason).toBe('Invalid')
    // kube-apiserver 1.35.4's answer (test:real builds it): a map entry is [key], a failed rule shows a scalar value.
    expect(res.body.message).toBe('WorkloadGroup.networking.istio.io "bad" is invalid: spec.template.ports[http]: Invalid value: 70000: port must be between 1-65535')
    expect(res.body.details.causes).toEqual([{reason: 'FieldValueInvalid', field: 'spec.template.ports[http]', message: 'Invalid value: 70000: port must be between 1-65535'}])
    const unknown = {...wg('strict'), spec: {...wg('strict').spec, bogus: true}}
    const strict = await call<Status>('POST', `${WG}?fieldValidation=Strict`, {body: unknown})
    expect(strict.status).toBe(400)
    expect(strict.body.message).toBe('WorkloadGroup in version "v1" cannot be handled as a WorkloadGroup: strict decoding error: unknown field "spec.bogus"')
    const pruned = await call<WorkloadGroup>('POST', WG, {body: unknown})
    expect(pruned.status).toBe(201)
    expect(pruned.body.spec.bogus).toBeUndefined()
  })

  it('does not persist dryRun=All writes', async () => {
    const res = await call('POST', `${WG}?dryRun=All`, {body: wg('dry')})
    expect(res.status).toBe(201)
    expect((await call('GET', `${WG}/dry`)).status).toBe(404)
  })

  it('server-side apply: creates, tracks managers, reports conflicts and forces', async () => {
    const apply = <T>(body: unknown, manager: string, force = false) =>
      call<T>('PATCH', `${WG}/ssa?fieldManager=${manager}${force ? '&force=true' : ''}`, {body, contentType: 'application/apply-patch+yaml'})
    const created = await apply<WorkloadGroup>(wg('ssa'), 'meshvm')
    expect(created.status).toBe(201)
    expect(created.body.metadata.managedFields[0]).toMatchObject({manager: 'meshvm', operation: 'Apply'})
    const other = wg('ssa')
    other.spec.template.ports.http = 1234
    const conflict = await apply<Status>(other, 'someone-else')
    expect(conflict.status).toBe(409)
    expect(conflict.body.message).toMatch(/^Apply failed with 1 conflict: conflict with "meshvm": \.spec\.template\.ports\.http/)
    const forced = await apply<WorkloadGroup>(other, 'someone-else', true)
    expect(forced.status).toBe(200)
    expect(forced.body.spec.template.ports.http).toBe(1234)
    const missingManager = await call('PATCH', `${WG}/ssa`, {body: wg('ssa'), contentType: 'application/apply-patch+yaml'})
    expect(missingManager.status).toBe(422)
  })

  it('requires the namespace to exist and the body namespace to match', async () => {
    const missing = await call<Status>('POST', '/apis/networking.istio.io/v1/namespaces/nowhere/workloadgroups', {body: wg('x')})
    expect(missing.status).toBe(404)
    expect(missing.body.message).toBe('namespaces "nowhere" not found')
    const mismatch = await call('POST', WG, {body: wg('x', {namespace: 'other'})})
    expect(mismatch.status).toBe(400)
  })

  it('deletes dependents through ownerReferences, and everything in a deleted namespace', async () => {
    await call('POST', '/api/v1/namespaces', {body: {apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'gc'}}})
    const owner = (await call<WorkloadGroup>('POST', '/apis/networking.istio.io/v1/namespaces/gc/workloadgroups', {body: wg('owner')})).body
    const ref = {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: 'owner', uid: owner.metadata.uid, controller: true}
    await call('POST', '/apis/networking.istio.io/v1/namespaces/gc/workloadentries', {
      body: {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadEntry', metadata: {name: 'owned', ownerReferences: [ref]}, spec: {address: '10.0.0.1'}},
    })
    await call('POST', '/api/v1/namespaces/gc/configmaps', {body: {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'cm'}, data: {a: 'b'}}})
    expect((await call('DELETE', '/apis/networking.istio.io/v1/namespaces/gc/workloadgroups/owner')).status).toBe(200)
    expect((await call('GET', '/apis/networking.istio.io/v1/namespaces/gc/workloadentries/owned')).status).toBe(404)
    expect((await call('GET', '/api/v1/namespaces/gc/configmaps/cm')).status).toBe(200)
    await call('DELETE', '/api/v1/namespaces/gc')
    expect((await call('GET', '/api/v1/namespaces/gc/configmaps/cm')).status).toBe(404)
  })
})

describe('lists, selectors, paging and watch', () => {
  beforeAll(async () => {
    await call('POST', '/api/v1/namespaces', {body: {apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'paging'}}})
    for (let i = 0; i < 25; i++) {
      await call('POST', '/api/v1/namespaces/paging/configmaps', {
        body: {
          apiVersion: 'v1',
          kind: 'ConfigMap',
          metadata: {name: `cm-${String(i).padStart(2, '0')}`, labels: {tier: i % 3 === 0 ? 'a' : i % 3 === 1 ? 'b' : 'c', ...(i < 5 ? {first: 'yes'} : {})}},
        },
      })
    }
  })

  it('filters with =, !=, in, notin, exists and !exists; rejects malformed selectors with 400', async () => {
    const names = async (selector: string) => (await call<List>('GET', `/api/v1/namespaces/paging/configmaps?labelSelector=${encodeURIComponent(selector)}`)).body.items.length
    expect(await names('tier=a')).toBe(9)
    expect(await names('tier!=a')).toBe(16)
    expect(await names('tier in (a,b)')).toBe(17)
    expect(await names('tier notin (a,b)')).toBe(8)
    expect(await names('first')).toBe(5)
    expect(await names('!first')).toBe(20)
    expect(await names('tier=a,first')).toBe(2)
    expect((await call('GET', '/api/v1/namespaces/paging/configmaps?labelSelector=' + encodeURIComponent('tier in (a'))).status).toBe(400)
    const byName = await call<List>('GET', '/api/v1/namespaces/paging/configmaps?fieldSelector=metadata.name%3Dcm-07')
    expect(byName.body.items.map((i) => i.metadata.name)).toEqual(['cm-07'])
  })

  it('pages with limit/continue and remainingItemCount, and expires old continue tokens with 410', async () => {
    const first = (await call<List>('GET', '/api/v1/namespaces/paging/configmaps?limit=10')).body
    expect(first.items).toHaveLength(10)
    expect(first.metadata.remainingItemCount).toBe(15)
    const second = (await call<List>('GET', `/api/v1/namespaces/paging/configmaps?limit=10&continue=${first.metadata.continue}`)).body
    expect(second.items[0]?.metadata.name).toBe('cm-10')
    const third = (await call<List>('GET', `/api/v1/namespaces/paging/configmaps?limit=10&continue=${second.metadata.continue}`)).body
    expect(third.items).toHaveLength(5)
    expect(third.metadata.continue).toBeUndefined()

    const shortLived = await startCluster({continueTtlMs: 200, istio: false, crdFiles: []})
    try {
      for (const name of ['a', 'b']) {
        await call('POST', '/api/v1/namespaces/default/configmaps', {on: shortLived, body: {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name}}})
      }
      const page = (await call<List>('GET', '/api/v1/namespaces/default/configmaps?limit=1', {on: shortLived})).body
      await new Promise((r) => setTimeout(r, 250))
      const expired = await call<Status>('GET', `/api/v1/namespaces/default/configmaps?limit=1&continue=${page.metadata.continue}`, {on: shortLived})
      expect(expired.status).toBe(410)
      expect(expired.body.reason).toBe('Expired')
    } finally {
      shortLived.stop()
    }
  })

  it('streams watch events and answers a too-old resourceVersion with an ERROR event', async () => {
    const events: {type: string; object: {metadata: {name: string}}}[] = []
    const url = new URL('/api/v1/namespaces/paging/configmaps?watch=true&resourceVersion=' + cluster.store.resourceVersion, cluster.url)
    // The watch is established once its headers arrive (the server flushes them at once).
    let req!: ReturnType<typeof request>
    await new Promise<void>((established, failed) => {
      req = request(url, {headers: {Authorization: `Bearer ${cluster.token}`}, ca: cluster.caPem}, (res) => {
        let buffer = ''
        res.setEncoding('utf8').on('data', (d: string) => {
          buffer += d
          const lines = buffer.split('\n')
          buffer = lines.pop()!
          for (const l of lines) events.push(JSON.parse(l))
        })
        established()
      })
      req.on('error', failed)
      req.end()
    })
    await call('POST', '/api/v1/namespaces/paging/configmaps', {body: {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'watched'}}})
    await call('PATCH', '/api/v1/namespaces/paging/configmaps/watched', {body: {data: {a: 'b'}}, contentType: 'application/merge-patch+json'})
    await call('DELETE', '/api/v1/namespaces/paging/configmaps/watched')
    await waitUntil(() => events.length >= 3, 'three watch events')
    req.destroy()
    expect(events.map((e) => `${e.type} ${e.object.metadata.name}`)).toEqual(['ADDED watched', 'MODIFIED watched', 'DELETED watched'])
  })
})

describe('service accounts, RBAC and subresources', () => {
  it('issues TokenRequest JWTs that authenticate as the service account, authorized by RBAC bindings', async () => {
    await call('POST', '/api/v1/namespaces/default/serviceaccounts', {body: {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: 'reader'}}})
    const tr = await call<{status: {token: string}}>('POST', '/api/v1/namespaces/default/serviceaccounts/reader/token', {
      body: {apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {audiences: ['istio-ca'], expirationSeconds: 3600}},
    })
    expect(tr.status).toBe(201)
    const token = tr.body.status.token
    const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString())
    expect(claims).toMatchObject({aud: ['istio-ca'], sub: 'system:serviceaccount:default:reader'})
    const denied = await call<Status>('GET', '/api/v1/pods', {token})
    expect(denied.status).toBe(403)
    expect(denied.body.message).toBe('pods is forbidden: User "system:serviceaccount:default:reader" cannot list resource "pods" in API group "" at the cluster scope')
    await call('POST', '/apis/rbac.authorization.k8s.io/v1/clusterroles', {
      body: {apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: {name: 'pod-reader'}, rules: [{apiGroups: [''], resources: ['pods'], verbs: ['get', 'list']}]},
    })
    await call('POST', '/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
      body: {
        apiVersion: 'rbac.authorization.k8s.io/v1',
        kind: 'ClusterRoleBinding',
        metadata: {name: 'reader'},
        roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: 'pod-reader'},
        subjects: [{kind: 'ServiceAccount', name: 'reader', namespace: 'default'}],
      },
    })
    expect((await call('GET', '/api/v1/pods', {token})).status).toBe(200)
    const review = await call<{status: {allowed: boolean}}>('POST', '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', {
      token,
      body: {apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: {resourceAttributes: {verb: 'delete', resource: 'pods'}}},
    })
    expect(review.body.status.allowed).toBe(false)
    const short = await call('POST', '/api/v1/namespaces/default/serviceaccounts/reader/token', {body: {spec: {expirationSeconds: 60}}})
    expect(short.status).toBe(422)
  })

  it('fills service-account-token Secrets after the token controller delay', async () => {
    await call('POST', '/api/v1/namespaces/default/secrets', {
      body: {apiVersion: 'v1', kind: 'Secret', type: 'kubernetes.io/service-account-token', metadata: {name: 'reader-token', annotations: {'kubernetes.io/service-account.name': 'reader'}}},
    })
    const secret = () => call<{data: Record<string, string>}>('GET', '/api/v1/namespaces/default/secrets/reader-token')
    expect((await secret()).body.data).toEqual({})
    await waitUntil(() => Boolean((cluster.store.get('/secrets', 'default', 'reader-token')?.data as Record<string, string> | undefined)?.token), 'the token controller to fill reader-token')
    const {data} = (await secret()).body
    expect(Object.keys(data).sort()).toEqual(['ca.crt', 'namespace', 'token'])
    expect(Buffer.from(data['ca.crt']!, 'base64').toString()).toBe(cluster.caPem)
    const token = Buffer.from(data.token!, 'base64').toString()
    expect((await call('GET', '/api/v1/pods', {token})).status).toBe(200)
  })

  it('enforces explicit user rules with kube-apiserver forbidden messages', async () => {
    const token = cluster.addUser('bob', {rules: [{verbs: ['get'], apiGroups: [''], resources: ['configmaps']}]})
    expect((await call('GET', '/api/v1/namespaces/istio-system/configmaps/istio', {token})).status).toBe(200)
    const res = await call<Status>('POST', '/api/v1/namespaces/default/serviceaccounts/default/token', {token, body: {spec: {}}})
    expect(res.status).toBe(403)
    expect(res.body.message).toBe('serviceaccounts "default" is forbidden: User "bob" cannot create resource "serviceaccounts/token" in API group "" in the namespace "default"')
  })

  it('pod proxy to istiod /debug/*: 401, as a real istiod answers a proxied (credential-less, non-loopback) caller; unknown ports refused', async () => {
    cluster.mesh.addIstiod({name: 'istiod-old', shape: 'legacy', version: '1.21.2', revision: 'old'})
    cluster.mesh.addPod({name: 'web-1', namespace: 'default', istiod: 'istiod-old', version: '1.21.2'})
    cluster.mesh.addPod({name: 'api-1', namespace: 'default', istiod: 'istiod-7d4b9c6f8-x2k9p', types: {RDS: 'nack'}})
    const proxied = await call('GET', '/api/v1/namespaces/istio-system/pods/istiod-7d4b9c6f8-x2k9p:15014/proxy/debug/syncz')
    expect(proxied.status).toBe(401)
    expect((await call('GET', '/api/v1/namespaces/istio-system/pods/istiod-old:9999/proxy/debug/syncz')).status).toBe(503)
    // The syncz the monitoring port serves over port-forward (test/cluster/portforward.test.ts), in both shapes.
    const legacy = cluster.mesh.syncz('istiod-old') as {proxy: string; istio_version: string; cluster_sent: string; resources?: unknown}[]
    expect(legacy).toEqual([expect.objectContaining({proxy: 'web-1.default', istio_version: '1.21.2', cluster_sent: expect.any(String)})])
    expect(legacy[0]!.resources).toBeUndefined()
    const current = cluster.mesh.syncz('istiod-7d4b9c6f8-x2k9p') as {resources: Record<string, {lastError?: string}>}[]
    expect(current[0]!.resources['type.googleapis.com/envoy.config.route.v3.RouteConfiguration']!.lastError).toMatch(/Proto constraint/)
  })
})

describe('fault injection', () => {
  it('injects 429 with Retry-After, resets, truncation, malformed bodies and latency', async () => {
    const remove = cluster.faults.add({path: '/api/v1/namespaces/default/configmaps', status: 429, retryAfterSeconds: 2, times: 1})
    const limited = await call('GET', '/api/v1/namespaces/default/configmaps')
    expect(limited.status).toBe(429)
    expect(limited.headers['retry-after']).toBe('2')
    expect((await call('GET', '/api/v1/namespaces/default/configmaps')).status).toBe(200)
    remove()
    cluster.faults.add({path: /\/configmaps$/, reset: true, times: 1})
    await expect(call('GET', '/api/v1/namespaces/default/configmaps')).rejects.toThrow(/socket hang up|ECONNRESET/)
    cluster.faults.add({path: /\/configmaps$/, malformed: true, times: 1})
    expect((await call('GET', '/api/v1/namespaces/default/configmaps')).body).toBeUndefined()
    cluster.faults.add({path: /\/configmaps$/, latencyMs: 200, times: 1})
    const start = Date.now()
    await call('GET', '/api/v1/namespaces/default/configmaps')
    expect(Date.now() - start).toBeGreaterThanOrEqual(190)
    cluster.faults.clear()
  })
})

describe('scale', () => {
  it('holds 50,000 objects and lists 10,000 of them in pages', async () => {
    await call('POST', '/api/v1/namespaces', {body: {apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'big'}}})
    for (let i = 0; i < 50_000; i++) {
      const ns = i < 10_000 ? 'big' : 'default'
      cluster.store.create('/configmaps', 'ConfigMap', {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: `bulk-${String(i).padStart(5, '0')}`, namespace: ns}, data: {i: String(i)}})
    }
    let seen = 0
    let token = ''
    let pages = 0
    do {
      const res = await call<List>('GET', `/api/v1/namespaces/big/configmaps?limit=500${token ? `&continue=${token}` : ''}`)
      seen += res.body.items.length
      token = res.body.metadata.continue ?? ''
      pages++
    } while (token)
    expect(seen).toBe(10_000)
    expect(pages).toBe(20)
  }, 30_000)
})
