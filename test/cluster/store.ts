/**
 * The test API server's storage: objects by resource, namespace and name, one global
 * resourceVersion counter, uids, generations, owner-reference garbage collection, and the event
 * history that watches resume from. Tests may also use it directly (no HTTP) to set up state fast.
 */
import {randomUUID} from 'node:crypto'

export type KubeObj = {
  apiVersion?: string
  kind?: string
  metadata: {
    name: string
    namespace?: string
    uid?: string
    resourceVersion?: string
    generation?: number
    creationTimestamp?: string
    labels?: Record<string, string>
    annotations?: Record<string, string>
    ownerReferences?: {apiVersion: string; kind: string; name: string; uid: string; controller?: boolean; blockOwnerDeletion?: boolean}[]
    managedFields?: unknown[]
    generateName?: string
    deletionTimestamp?: string
    finalizers?: string[]
    [k: string]: unknown
  }
  [k: string]: unknown
}

export interface StoreEvent {
  type: 'ADDED' | 'MODIFIED' | 'DELETED'
  resource: string
  object: KubeObj
  /** For MODIFIED: the object before the change (a watch with a selector turns it into ADDED/DELETED). */
  previous?: KubeObj
  rv: number
  /** When it happened (ms since the epoch): the watch history forgets events older than `historyTtlMs`. */
  at: number
}

/** Resource key: `group/plural` (`/pods` for core), shared by every served version. */
export function resourceKey(group: string, plural: string): string {
  return `${group}/${plural}`
}

function objectKey(namespace: string | undefined, name: string): string {
  return `${namespace ?? ''}/${name}`
}

export class Store {
  private readonly data = new Map<string, Map<string, KubeObj>>()
  private readonly sortedKeys = new Map<string, string[]>()
  private rv = 1000
  private readonly history: StoreEvent[] = []
  /**
   * How long events stay in the watch history, like kube-apiserver's watch cache (which keeps
   * about 75 s of events): a watch from an older resourceVersion gets 410 Expired and must re-list.
   */
  historyTtlMs = 75_000
  /** The oldest resourceVersion a watch can still resume from. */
  private oldestKept = 0
  private readonly listeners = new Set<(e: StoreEvent) => void>()
  /** Kinds of the resources, for garbage collection across resources. */
  readonly kinds = new Map<string, string>()

  get resourceVersion(): number {
    return this.rv
  }

  private bucket(resource: string): Map<string, KubeObj> {
    let b = this.data.get(resource)
    if (!b) {
      b = new Map()
      this.data.set(resource, b)
    }
    return b
  }

  get(resource: string, namespace: string | undefined, name: string): KubeObj | undefined {
    return this.data.get(resource)?.get(objectKey(namespace, name))
  }

  /** Keys in etcd order (namespace, then name), cached until the next write to the resource. */
  keys(resource: string): string[] {
    let keys = this.sortedKeys.get(resource)
    if (!keys) {
      keys = [...(this.data.get(resource)?.keys() ?? [])].sort()
      this.sortedKeys.set(resource, keys)
    }
    return keys
  }

  /** Live objects of a resource, optionally in one namespace, in key order. Do not mutate them. */
  list(resource: string, namespace?: string): KubeObj[] {
    const out: KubeObj[] = []
    for (const key of this.keysFrom(resource, namespace, undefined)) {
      if (namespace !== undefined && !key.startsWith(`${namespace}/`)) break
      out.push(this.byKey(resource, key)!)
    }
    return out
  }

  /**
   * Keys after `afterKey` (or from the start of `namespace`), in order, found by binary search so
   * that paging through 50,000 objects stays fast.
   */
  *keysFrom(resource: string, namespace: string | undefined, afterKey: string | undefined): Generator<string> {
    const keys = this.keys(resource)
    const start = afterKey ?? (namespace !== undefined ? `${namespace}/` : '')
    let lo = 0
    let hi = keys.length
    while (lo < hi) {
      const mid = (lo + hi) >> 1
      if (keys[mid]! < start || (afterKey !== undefined && keys[mid] === afterKey)) lo = mid + 1
      else hi = mid
    }
    for (let i = lo; i < keys.length; i++) yield keys[i]!
  }

  byKey(resource: string, key: string): KubeObj | undefined {
    return this.data.get(resource)?.get(key)
  }

  count(resource?: string): number {
    if (resource) return this.data.get(resource)?.size ?? 0
    let n = 0
    for (const b of this.data.values()) n += b.size
    return n
  }

  private emit(event: Omit<StoreEvent, 'rv' | 'at'>): void {
    const e = {...event, rv: this.rv, at: Date.now()}
    this.history.push(e)
    if (this.history.length > 5000) this.forget(this.history.length - 5000)
    for (const l of this.listeners) l(e)
  }

  private forget(n: number): void {
    if (n <= 0) return
    this.oldestKept = this.history[n - 1]!.rv
    this.history.splice(0, n)
  }

  /** Forgets all history up to now, as an etcd compaction does: every older resourceVersion is too old to watch from. */
  compact(): void {
    this.forget(this.history.length)
    this.oldestKept = this.rv
  }

  /** The oldest resourceVersion still watchable (kube-apiserver names it in its 410 message). */
  get oldestResourceVersion(): number {
    return this.oldestKept
  }

  onEvent(listener: (e: StoreEvent) => void): () => void {
    this.listeners.add(listener)
    return () => this.listeners.delete(listener)
  }

  /** Events after `rv`, or undefined when they are no longer kept (a watch must then relist: 410). */
  eventsSince(rv: number): StoreEvent[] | undefined {
    const cutoff = Date.now() - this.historyTtlMs
    let stale = 0
    while (stale < this.history.length && this.history[stale]!.at < cutoff) stale++
    this.forget(stale)
    if (rv < this.oldestKept) return undefined
    return this.history.filter((e) => e.rv > rv)
  }

  /** Stores a new object, filling uid, resourceVersion, generation and creationTimestamp. */
  create(resource: string, kind: string, obj: KubeObj, options: {dryRun?: boolean} = {}): KubeObj {
    this.kinds.set(resource, kind)
    const stored = structuredClone(obj)
    stored.metadata.uid = randomUUID()
    stored.metadata.creationTimestamp = new Date().toISOString().replace(/\.\d+Z$/, 'Z')
    stored.metadata.generation = 1
    // A dry-run create has no resourceVersion: nothing was stored (kube-apiserver answers the same).
    if (options.dryRun) {
      delete stored.metadata.resourceVersion
      return stored
    }
    this.rv++
    stored.metadata.resourceVersion = String(this.rv)
    this.bucket(resource).set(objectKey(stored.metadata.namespace, stored.metadata.name), stored)
    this.sortedKeys.delete(resource)
    this.emit({type: 'ADDED', resource, object: stored})
    return structuredClone(stored)
  }

  /** Replaces an existing object; bumps generation when anything but metadata and status changed. */
  update(resource: string, obj: KubeObj, options: {dryRun?: boolean} = {}): KubeObj {
    const current = this.get(resource, obj.metadata.namespace, obj.metadata.name)
    if (!current) throw new Error('update of a missing object')
    const next = structuredClone(obj)
    next.metadata.uid = current.metadata.uid
    next.metadata.creationTimestamp = current.metadata.creationTimestamp
    const specChanged = JSON.stringify({...current, metadata: undefined, status: undefined}) !== JSON.stringify({...next, metadata: undefined, status: undefined})
    next.metadata.generation = (current.metadata.generation ?? 1) + (specChanged ? 1 : 0)
    // A change of field ownership is a write; a new timestamp alone is not (a repeated apply is a no-op).
    const timeless = (o: KubeObj) =>
      JSON.stringify({
        ...o,
        metadata: {...o.metadata, resourceVersion: undefined, managedFields: (o.metadata.managedFields as Record<string, unknown>[] | undefined)?.map((m) => ({...m, time: undefined}))},
      })
    const changed = timeless(current) !== timeless(next)
    if (!changed) return structuredClone(current)
    // A dry-run update keeps the stored resourceVersion: nothing was written, as kube-apiserver does.
    if (options.dryRun) {
      next.metadata.resourceVersion = current.metadata.resourceVersion
      return next
    }
    this.rv++
    next.metadata.resourceVersion = String(this.rv)
    this.bucket(resource).set(objectKey(next.metadata.namespace, next.metadata.name), next)
    this.emit({type: 'MODIFIED', resource, object: next, previous: current})
    return structuredClone(next)
  }

  /** Deletes an object and, with background propagation, everything it owns. */
  delete(resource: string, namespace: string | undefined, name: string, options: {dryRun?: boolean; propagation?: 'Background' | 'Foreground' | 'Orphan'} = {}): KubeObj | undefined {
    const current = this.get(resource, namespace, name)
    if (!current) return undefined
    if (options.dryRun) return structuredClone(current)
    if (resource === resourceKey('', 'namespaces')) {
      // Deleting a namespace deletes everything in it first (the namespace controller's order).
      for (const [res, bucket] of this.data) {
        for (const obj of [...bucket.values()]) if (obj.metadata.namespace === name) this.delete(res, name, obj.metadata.name)
      }
    }
    this.rv++
    this.bucket(resource).delete(objectKey(namespace, name))
    this.sortedKeys.delete(resource)
    const gone = {...current, metadata: {...current.metadata, resourceVersion: String(this.rv)}}
    this.emit({type: 'DELETED', resource, object: gone})
    const uid = current.metadata.uid
    for (const [res, bucket] of this.data) {
      for (const obj of [...bucket.values()]) {
        const refs = obj.metadata.ownerReferences ?? []
        if (!refs.some((r) => r.uid === uid)) continue
        if (options.propagation === 'Orphan') {
          this.update(res, {...obj, metadata: {...obj.metadata, ownerReferences: refs.filter((r) => r.uid !== uid)}})
        } else if (refs.every((r) => r.uid === uid || !this.existsUid(r.uid))) {
          this.delete(res, obj.metadata.namespace, obj.metadata.name, options)
        }
      }
    }
    return gone
  }

  private existsUid(uid: string): boolean {
    for (const bucket of this.data.values()) for (const obj of bucket.values()) if (obj.metadata.uid === uid) return true
    return false
  }
}
