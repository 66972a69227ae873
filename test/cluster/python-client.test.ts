/**
 * Conformance with a client nobody here wrote: the official Kubernetes Python client (Debian's
 * python3-kubernetes, for /usr/bin/python3) against the test API server. Each scenario runs
 * test/cluster/python_client.py and checks what the client saw against kube-apiserver's behaviour.
 */
import {execFile} from 'node:child_process'
import {fileURLToPath} from 'node:url'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {startCluster, type TestCluster} from '../helpers/cluster.js'

const SCRIPT = fileURLToPath(new URL('./python_client.py', import.meta.url))
let cluster: TestCluster

/** Runs one scenario; `T`: the fields of its JSON document that a test reads further than one level. */
function python<T = Record<string, unknown>>(scenario: string, env: Record<string, string> = {}): Promise<T> {
  return new Promise((resolve, reject) => {
    execFile('/usr/bin/python3', [SCRIPT, scenario], {env: {...process.env, ...cluster.env, ...env}, encoding: 'utf8', timeout: 60_000}, (err, stdout, stderr) => {
      if (err) reject(new Error(`${scenario}: ${err.message}\n${stderr}`))
      else resolve(JSON.parse(stdout) as T)
    })
  })
}

beforeAll(async () => {
  cluster = await startCluster()
})
afterAll(() => cluster?.stop())

describe('the Python client against the test API server', () => {
  it('dry-run writes return the stored resourceVersion, and none for a dry-run create', async () => {
    const out = await python('dry_run')
    expect(out.dryRunPatch).toEqual({rv: out.stored, data: {k: '2'}})
    expect(out.afterDryRun).toEqual({k: '1'})
    expect(out.dryRunCreate).toEqual({rv: null, uid: true})
  })

  it("DELETE honours preconditions.resourceVersion with kube-apiserver's 409, and answers a Status naming the object", async () => {
    const out = await python<{stale: {status: number; reason: string; message: string}; fresh: unknown}>('delete_precondition')
    expect(out.stale.status).toBe(409)
    expect(out.stale.reason).toBe('Conflict')
    expect(out.stale.message).toMatch(
      /^Operation cannot be fulfilled on configmaps "pre": StorageError: invalid object, Code: 4, Key: \/registry\/configmaps\/default\/pre, ResourceVersion: 0, AdditionalErrorMsg: Precondition failed: ResourceVersion in precondition: \d+, ResourceVersion in object meta: \d+$/,
    )
    expect(out.fresh).toEqual({kind: 'Status', status: 'Success', details: {name: 'pre', kind: 'configmaps', uid: true}})
  })

  it('DELETE returns the object where kube-apiserver does, and a foreground deletion keeps it with its finalizer', async () => {
    const out = await python('delete_returns')
    expect(out.serviceAccount).toEqual({kind: 'ServiceAccount', name: 'robot'})
    expect(out.foreground).toEqual({kind: 'WorkloadGroup', finalizers: ['example.com/keep', 'foregroundDeletion'], deletionTimestamp: true})
    expect(out.afterFinalizers).toBe(404)
  })

  it('a watch with a label selector sees an object leave (DELETED) and come back (ADDED)', async () => {
    const out = await python('watch_selector_exit')
    expect(out.events).toEqual([
      ['DELETED', 'member', 'b'],
      ['ADDED', 'member', 'a'],
    ])
  })

  it('sends BOOKMARK events when the client allows them', async () => {
    cluster.server.bookmarkIntervalMs = 100
    try {
      const out = await python<{types: string[]; bookmark: {resourceVersion: string}}>('watch_bookmark')
      expect(out.types).toContain('BOOKMARK')
      expect(Number(out.bookmark.resourceVersion)).toBeGreaterThan(0)
    } finally {
      cluster.server.bookmarkIntervalMs = 60_000
    }
  })

  it("flushes a watch's headers before any event", async () => {
    await cluster.server.create(cluster.server.resourceDefs().find((d) => d.plural === 'namespaces')!, undefined, {metadata: {name: 'quiet'}})
    const out = await python('watch_headers', {NAMESPACE: 'quiet'})
    expect(out).toEqual({status: 200, contentType: 'application/json'})
  })

  it('answers a watch from a compacted resourceVersion with 410 Expired', async () => {
    const old = String(cluster.store.resourceVersion)
    await python('dry_run', {NAMESPACE: 'kube-public'})
    cluster.store.compact()
    const out = await python('watch_expired', {OLD_RV: old})
    expect(out.result).toEqual({status: 410, reason: expect.stringMatching(/Expired|Gone/)})
  })

  it('forgets watch history older than historyTtlMs (kube-apiserver keeps about 75 s): an older resourceVersion gets 410', async () => {
    const old = String(cluster.store.resourceVersion)
    await python('delete_precondition', {NAMESPACE: 'kube-public'})
    cluster.store.historyTtlMs = 1
    try {
      await new Promise((r) => setTimeout(r, 20))
      const out = await python('watch_expired', {OLD_RV: old})
      expect(out.result).toEqual({status: 410, reason: expect.stringMatching(/Expired|Gone/)})
    } finally {
      cluster.store.historyTtlMs = 75_000
    }
  })

  it('serves every page of a list from the snapshot of its first page', async () => {
    const out = await python('list_snapshot')
    expect(out.first).toEqual(['snap-a'])
    expect(out.rest).toEqual([
      ['snap-b', 'v'],
      ['snap-c', 'v'],
    ])
    expect(out.sameVersion).toBe(true)
  })

  it('reads boolean query parameters as kube-apiserver does (force=1 is true)', async () => {
    const out = await python('bool_query')
    expect(out['force=false']).toBe(409)
    expect(out['force=1']).toBe('theirs')
  })

  it('refuses an update without resourceVersion on a custom resource (422), not on a ConfigMap', async () => {
    const out = await python('custom_update_without_rv')
    expect(out.custom).toEqual({
      status: 422,
      reason: 'Invalid',
      message: 'workloadgroups.networking.istio.io "norv" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update',
    })
    expect(out.builtin).toEqual({k: 'new'})
  })

  it('a deleted namespace is Terminating, refuses new content, and goes once its objects are gone', async () => {
    const out = await python('namespace_terminating')
    expect(out.deleted).toEqual({kind: 'Namespace', phase: 'Terminating', deletionTimestamp: true})
    expect(out.create).toEqual({status: 403, reason: 'Forbidden', message: 'configmaps "late" is forbidden: unable to create new content in namespace doomed because it is being terminated'})
    expect(out.phase).toBe('Terminating')
    await expect.poll(() => cluster.store.get('/namespaces', undefined, 'doomed'), {timeout: 10_000}).toBeUndefined()
  })

  it('deletecollection answers with the list it deleted', async () => {
    const out = await python('delete_collection')
    expect(out).toEqual({kind: 'ConfigMapList', names: ['bulk-a', 'bulk-b'], left: []})
  })

  it("refuses an unknown fieldValidation value with apimachinery's 422", async () => {
    const out = await python('bad_field_validation')
    expect(out.create).toEqual({
      status: 422,
      reason: 'Invalid',
      message: 'CreateOptions.meta.k8s.io "" is invalid: fieldValidation: Unsupported value: "Bogus": supported values: "", "Ignore", "Strict", "Warn"',
    })
  })
})
