/**
 * applyObjects against a fake client that records its calls: the live objects are read one after
 * the other (on one kept-alive connection) before the first apply, the applies go one by one in
 * order, and a failed read gives exactly the results of reading each object just before applying it.
 */
import {describe, expect, it} from 'vitest'
import {applyObjects, outcomeOf, type ApplyResult} from '../../src/lib/apply/apply.js'
import {MeshvmError} from '../../src/lib/errors.js'
import type {KubeClient} from '../../src/lib/kube/client.js'
import type {Manifest} from '../../src/lib/kube/object.js'

const OBJECTS: Manifest[] = [
  {apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'apps'}},
  {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: 'web-vm', namespace: 'apps'}},
  {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name: 'web', namespace: 'apps'}, spec: {template: {ports: {http: 8080}}}},
  {apiVersion: 'v1', kind: 'Service', metadata: {name: 'web', namespace: 'apps'}, spec: {ports: [{name: 'http', port: 8080}]}},
]
const PATHS = ['/api/v1/namespaces/apps', '/api/v1/namespaces/apps/serviceaccounts/web-vm', '/apis/networking.istio.io/v1/namespaces/apps/workloadgroups/web', '/api/v1/namespaces/apps/services/web']
const REFS = ['namespace/apps', 'serviceaccount/web-vm', 'workloadgroup.networking.istio.io/web', 'service/web']

type Live = {metadata: {resourceVersion: string}; [k: string]: unknown}

interface FakeOptions {
  /** Live objects by path (absent: 404). */
  live?: Record<string, Live>
  /** Errors by 'GET path' / 'PATCH path'. */
  fail?: Record<string, unknown>
  /** Called when a PATCH is sent. */
  onPatch?: (path: string) => void
}

/** A client answering after a macrotask (like a real round trip), recording 'GET path' / 'PATCH path' when each call is made. */
function fakeClient(options: FakeOptions = {}) {
  const calls: string[] = []
  const answer = <T>(call: string, value: () => T): Promise<T> => {
    calls.push(call)
    return new Promise((resolve, reject) =>
      setTimeout(() => {
        const error = options.fail?.[call]
        if (error !== undefined) reject(error)
        else resolve(value())
      }, 1),
    )
  }
  const client = {
    getOptional: (path: string) => answer(`GET ${path}`, () => options.live?.[path]),
    apply: (path: string, object: Manifest) => {
      options.onPatch?.(path)
      const live = options.live?.[path]
      // Unchanged when the spec is what is live; otherwise a new version.
      return answer(`PATCH ${path}`, () => (live && JSON.stringify(live.spec) === JSON.stringify(object.spec) ? live : {...object, metadata: {...object.metadata, resourceVersion: 'new'}}))
    },
  }
  return {client: client as unknown as KubeClient, calls}
}

const outcomes = (results: ApplyResult[]) => results.map((r) => `${r.ref} ${r.outcome}${r.error ? `: ${r.error.message}` : ''}`)

async function apply(fake: ReturnType<typeof fakeClient>, options: Parameters<typeof applyObjects>[2] = {}) {
  const reported: ApplyResult[] = []
  const results = await applyObjects(fake.client, OBJECTS, {...options, onResult: (r) => reported.push(r)})
  // onResult sees every result once, in order.
  expect(reported).toEqual(results)
  return results
}

describe('applyObjects', () => {
  it('reads every live object before the first apply, then applies one by one in order', async () => {
    const live = {
      [PATHS[1]!]: {...OBJECTS[1]!, metadata: {...OBJECTS[1]!.metadata, resourceVersion: '5'}},
      [PATHS[2]!]: {...OBJECTS[2]!, spec: {template: {ports: {http: 9090}}}, metadata: {...OBJECTS[2]!.metadata, resourceVersion: '6'}},
    }
    const fake = fakeClient({live})
    const results = await apply(fake)
    expect(fake.calls).toEqual([...PATHS.map((p) => `GET ${p}`), ...PATHS.map((p) => `PATCH ${p}`)])
    expect(outcomes(results)).toEqual(['namespace/apps created', 'serviceaccount/web-vm unchanged', 'workloadgroup.networking.istio.io/web configured', 'service/web created'])
  })

  it('sends one read at a time, so that they share one connection instead of one TLS handshake each', async () => {
    let inFlight = 0
    let most = 0
    const fake = fakeClient()
    const get = fake.client.getOptional.bind(fake.client)
    fake.client.getOptional = (async (path: string) => {
      most = Math.max(most, ++inFlight)
      try {
        return await get(path)
      } finally {
        inFlight--
      }
    }) as KubeClient['getOptional']
    await apply(fake)
    expect(most).toBe(1)
    expect(fake.calls.filter((c) => c.startsWith('GET '))).toEqual(PATHS.map((p) => `GET ${p}`))
  })

  // Every combination of a failed read (of object g) and a failed apply (of object p), 4 = none:
  // the first failure in the order "read k, apply k, read k+1, ..." is the object's error, the
  // objects before it are applied, the ones after are not applied and never patched.
  for (let g = 0; g <= OBJECTS.length; g++) {
    for (let p = 0; p <= OBJECTS.length; p++) {
      it(`read ${g < 4 ? `of ${REFS[g]} fails` : 'ok'}, apply ${p < 4 ? `of ${REFS[p]} fails` : 'ok'}: same results as reading each object just before its apply`, async () => {
        const readError = new MeshvmError('read refused', {code: 'Forbidden'})
        const applyError = new MeshvmError('apply refused', {code: 'Invalid'})
        const fail: Record<string, unknown> = {}
        if (g < 4) fail[`GET ${PATHS[g]}`] = readError
        if (p < 4) fail[`PATCH ${PATHS[p]}`] = applyError
        const fake = fakeClient({fail})
        const results = await apply(fake)
        const failed = Math.min(g, p)
        const expected = REFS.map((ref, i) => (i < failed ? `${ref} created` : i === failed ? `${ref} failed: ${g <= p ? 'read refused' : 'apply refused'}` : `${ref} not applied`))
        expect(outcomes(results)).toEqual(expected)
        if (failed < 4) expect(results[failed]!.error).toBe(g <= p ? readError : applyError)
        // Applies only up to the failure (the failed apply itself was sent).
        const patched = PATHS.slice(0, g <= p ? failed : failed + 1)
        expect(fake.calls.filter((c) => c.startsWith('PATCH '))).toEqual(patched.map((path) => `PATCH ${path}`))
        // No read after a failed one: those objects are never applied.
        expect(fake.calls.filter((c) => c.startsWith('GET '))).toEqual(PATHS.slice(0, Math.min(g + 1, 4)).map((path) => `GET ${path}`))
      })
    }
  }

  it('an error that is not a MeshvmError from a read is thrown when its object is reached, after the objects before it were applied', async () => {
    const bug = new TypeError('bug')
    const fake = fakeClient({fail: {[`GET ${PATHS[2]}`]: bug}})
    await expect(applyObjects(fake.client, OBJECTS)).rejects.toBe(bug)
    expect(fake.calls.filter((c) => c.startsWith('PATCH '))).toEqual([`PATCH ${PATHS[0]}`, `PATCH ${PATHS[1]}`])
  })

  it('an object of an unsupported kind fails with its reason; the objects before it are applied', async () => {
    const fake = fakeClient()
    const objects = [OBJECTS[0]!, {apiVersion: 'example.com/v1', kind: 'Widget', metadata: {name: 'w', namespace: 'apps'}}, OBJECTS[3]!]
    const results = await applyObjects(fake.client, objects)
    expect(outcomes(results)).toEqual(['namespace/apps created', 'widget.example.com/w failed: meshvm cannot apply Widget (example.com/v1)', 'service/web not applied'])
    expect(results[1]!.error?.code).toBe('UnsupportedKind')
    expect(fake.calls.filter((c) => c.startsWith('PATCH '))).toEqual([`PATCH ${PATHS[0]}`])
  })

  it('already interrupted: sends no request, every object is not applied', async () => {
    const fake = fakeClient()
    const results = await apply(fake, {signal: AbortSignal.abort()})
    expect(fake.calls).toEqual([])
    expect(outcomes(results)).toEqual(REFS.map((ref) => `${ref} not applied`))
  })

  it('interrupted during an apply: finishes that object, applies nothing after it', async () => {
    const controller = new AbortController()
    const fake = fakeClient({onPatch: (path) => path === PATHS[1] && controller.abort()})
    const results = await apply(fake, {signal: controller.signal})
    expect(outcomes(results)).toEqual(['namespace/apps created', 'serviceaccount/web-vm created', 'workloadgroup.networking.istio.io/web not applied', 'service/web not applied'])
    expect(fake.calls.filter((c) => c.startsWith('PATCH '))).toEqual([`PATCH ${PATHS[0]}`, `PATCH ${PATHS[1]}`])
  })
})

describe('outcomeOf', () => {
  const obj = (port: number, rv: string) => ({
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {name: 'web', namespace: 'apps', resourceVersion: rv, managedFields: [{manager: rv}]},
    spec: {ports: [{port}]},
  })

  it('compares the objects, never the resourceVersion alone (a server dry run keeps the stored one)', () => {
    expect(outcomeOf(undefined, obj(80, '7'))).toBe('created')
    expect(outcomeOf(obj(80, '7'), obj(8080, '7'))).toBe('configured')
    expect(outcomeOf(obj(80, '7'), obj(80, '9'))).toBe('unchanged')
  })

  it('ignores what the diff ignores (status, uid, last-applied-configuration), and nothing else', () => {
    const live = {...obj(80, '7'), status: {loadBalancer: {}}, metadata: {...obj(80, '7').metadata, uid: 'a', annotations: {'kubectl.kubernetes.io/last-applied-configuration': '{}'}}}
    expect(outcomeOf(live, obj(80, '8'))).toBe('unchanged')
    expect(outcomeOf(live, {...obj(80, '8'), metadata: {...obj(80, '8').metadata, labels: {a: 'b'}}})).toBe('configured')
    expect(outcomeOf(live, undefined)).toBe('configured')
  })
})
