/**
 * Reading registrations from the cluster: WorkloadAutoRegistrations (when the CRD is installed) and
 * auto-registered WorkloadEntries, paged (`limit`/`continue`, restarted on 410 by the client) and
 * turned into `Registration` rows page by page, so callers can print as they go.
 *
 * Also: finding one registration by name, the details `describe` shows, deleting with a UID
 * precondition, and one-line errors for a missing CRD and for missing RBAC permissions.
 */
import {ExitCode, MeshvmError} from '../errors.js'
import type {KubeClient} from '../kube/client.js'
import {KubeApiError} from '../kube/errors.js'
import {isOwnedBy, ownerOfKind, type KubeObject} from '../kube/object.js'
import {groupVersion, qualifiedResource, resourcePath, Resources, type ResourceType} from '../kube/resources.js'
import {
  isAutoRegisteredWorkloadEntry,
  registrationFromWar,
  registrationFromWorkloadEntry,
  summaryFromWar,
  summaryFromWorkloadEntry,
  WE_ANNOTATIONS,
  type EventLike,
  type Registration,
  type RegistrationSummary,
  type WarObject,
  type WorkloadEntryObject,
  type WorkloadGroup,
} from './model.js'
import type {DescribeDetails} from './describe.js'

/** The resource a registration is read from (kube/resources.ts, the one resource table). */
export function registrationResource(source: Registration['source']): ResourceType {
  return source === 'war' ? Resources.workloadAutoRegistrations : Resources.workloadEntries
}

export type Source = 'war' | 'workloadentry' | 'all'

/** One registration as listed: its row (whole, or the summary a table without -o wide needs) and the object it was read from. */
export interface Listed {
  source: Registration['source']
  object: KubeObject
  registration: Registration
  summary: RegistrationSummary
}

export interface ListQuery {
  /** undefined: all namespaces. */
  namespace?: string
  labelSelector?: string
  /** Only registrations of this WorkloadGroup. */
  group?: string
  source: Source
  /** Objects per list request (0: no paging). */
  chunkSize: number
  /** Current WorkloadGroups by `namespace/name`, for the STALE column; without it STALE is false. */
  groups?: Map<string, WorkloadGroup>
}

/** Filled in while listing: whether the WAR API is served, and each list's resourceVersion (for --watch). */
export interface ListState {
  warServed?: boolean
  resourceVersions: Partial<Record<Registration['source'], string>>
}

export const CRD_NAME = `${Resources.workloadAutoRegistrations.plural}.${Resources.workloadAutoRegistrations.group}`

export const CRD_MISSING = `the WorkloadAutoRegistration CRD (${CRD_NAME}) is not installed in this cluster`

/** The note `war list` prints for a cluster without the WAR CRD. */
export const CRD_MISSING_NOTE = `${CRD_MISSING}: only auto-registered WorkloadEntries are shown`

export function crdMissingError(what: string): MeshvmError {
  return new MeshvmError(`${CRD_MISSING}: ${what}`, {
    exit: ExitCode.NOT_FOUND,
    code: 'CRDNotInstalled',
    hints: ['Istio auto-registered WorkloadEntries are listed with --source workloadentry (or the default --source all)'],
  })
}

/**
 * A 403 as one line naming the verb and the resource that are missing, with the RBAC rule to ask
 * for. Anything else is returned unchanged.
 */
export function explainForbidden(err: unknown, verb: string, res: ResourceType, namespace?: string): unknown {
  if (!(err instanceof KubeApiError) || err.status !== 403) return err
  const what = qualifiedResource(res)
  const where = res.namespaced ? (namespace ? ` in namespace "${namespace}"` : ' in all namespaces') : ''
  const can = `kubectl auth can-i ${verb} ${what}${res.namespaced ? (namespace ? ` -n ${namespace}` : ' --all-namespaces') : ''}`
  return new MeshvmError(`forbidden: missing permission to ${verb} ${what}${where}`, {
    exit: ExitCode.FORBIDDEN,
    code: 'Forbidden',
    hints: [`ask a cluster admin for a ${res.namespaced && namespace ? `Role in namespace ${namespace}` : 'ClusterRole'} allowing verb "${verb}" on "${what}" (check with: ${can})`],
    cause: err,
  })
}

/** Runs `fn`, turning a 403 into the explained error. */
export async function withPermission<T>(verb: string, res: ResourceType, namespace: string | undefined, fn: () => Promise<T>): Promise<T> {
  try {
    return await fn()
  } catch (err) {
    throw explainForbidden(err, verb, res, namespace)
  }
}

/** One object of `res`, undefined when there is none; a 403 becomes the explained error. */
export function getObject<T extends KubeObject = KubeObject>(client: KubeClient, res: ResourceType, namespace: string | undefined, name: string | undefined): Promise<T | undefined> {
  return withPermission('get', res, namespace, () => client.getOptional<T>(resourcePath(res, {namespace, name})))
}

/** Every object of `res` in `namespace`, read page by page; a 403 becomes the explained error. */
export async function* listObjects<T extends KubeObject = KubeObject>(client: KubeClient, res: ResourceType, namespace: string, chunkSize?: number): AsyncGenerator<T> {
  try {
    for await (const page of client.listPages<T>(resourcePath(res, {namespace}), {}, chunkSize)) yield* page.items
  } catch (err) {
    throw explainForbidden(err, 'list', res, namespace)
  }
}

/** Whether the API server serves WorkloadAutoRegistrations (discovery of the group-version). */
export async function warApiServed(client: KubeClient): Promise<boolean> {
  const list = await client.getOptional<{resources?: {name?: string}[]}>(`/apis/${groupVersion(Resources.workloadAutoRegistrations)}`)
  return Boolean(list?.resources?.some((r) => r.name === Resources.workloadAutoRegistrations.plural))
}

const isNotServed = (err: unknown): boolean => err instanceof KubeApiError && err.status === 404

function withKind(obj: KubeObject, res: ResourceType): KubeObject {
  // List items may come without apiVersion/kind (kube-apiserver leaves them out); -o yaml needs them.
  return {apiVersion: groupVersion(res), kind: res.kind, ...obj}
}

/** The WorkloadGroup a WAR or WorkloadEntry belongs to ('' when it cannot be told). */
export function groupNameOf(source: Registration['source'], obj: unknown): string {
  const m = (obj as KubeObject | undefined)?.metadata
  if (source === 'workloadentry') {
    const fromAnnotation = m?.annotations?.[WE_ANNOTATIONS.autoRegistrationGroup]
    if (fromAnnotation) return fromAnnotation
  }
  return ownerOfKind(obj, 'WorkloadGroup')?.name ?? ''
}

export function toRegistration(source: Registration['source'], obj: KubeObject, groups?: Map<string, WorkloadGroup>): Registration {
  const group = groups?.get(`${obj.metadata?.namespace ?? ''}/${groupNameOf(source, obj)}`)
  return source === 'war' ? registrationFromWar(obj, group) : registrationFromWorkloadEntry(obj, group)
}

/** Whether a WorkloadEntry is shown as a registration of its own (see ListQuery.source). */
export function isListedWorkloadEntry(obj: unknown, source: Source): boolean {
  if (ownerOfKind(obj, Resources.workloadAutoRegistrations.kind) !== undefined) return source === 'workloadentry'
  return isAutoRegisteredWorkloadEntry(obj)
}

/** Every WorkloadGroup in a namespace (or all), by `namespace/name`. */
export async function fetchGroups(client: KubeClient, namespace: string | undefined): Promise<Map<string, WorkloadGroup>> {
  const items = await withPermission('list', Resources.workloadGroups, namespace, () => client.list<KubeObject>(resourcePath(Resources.workloadGroups, {namespace})))
  return new Map(items.map((g) => [`${g.metadata?.namespace ?? ''}/${g.metadata?.name ?? ''}`, g as WorkloadGroup]))
}

/**
 * Pages of registrations: WARs first (when the CRD is installed and the source includes them), then
 * WorkloadEntries. Each yielded page is independent: the caller renders it and lets it go.
 *
 * The next page is requested as soon as one is handed over, so the API server prepares it while the
 * caller prints this one. At most one page is read ahead: a caller that waits for stdout to drain
 * still bounds what is held.
 */
export function listRegistrations(client: KubeClient, q: ListQuery, state: ListState): AsyncGenerator<Listed[]> {
  return readAhead(registrationPages(client, q, state))
}

/**
 * The items of `source`, each next one requested when one is handed over. Stopping early (break,
 * throw) closes `source` once its pending step has settled; an error of a step read ahead is thrown
 * when the caller asks for that step, as without read-ahead.
 */
export async function* readAhead<T>(source: AsyncGenerator<T>): AsyncGenerator<T> {
  // A step read ahead may fail while the caller is busy (e.g. waiting for stdout): it is marked handled
  // at once, and its error is thrown by the `await` that asks for it.
  const ahead = (): Promise<IteratorResult<T>> => {
    const step = source.next()
    step.catch(() => undefined)
    return step
  }
  let next = ahead()
  let finished = false
  try {
    for (;;) {
      const step = await next
      if (step.done) {
        finished = true
        return
      }
      next = ahead()
      yield step.value
    }
  } catch (err) {
    finished = true
    throw err
  } finally {
    // Stopped early: `source` is ended after its step in flight (a generator runs one step at a time).
    if (!finished) next.then(() => source.return(undefined)).catch(() => undefined)
  }
}

async function* registrationPages(client: KubeClient, q: ListQuery, state: ListState): AsyncGenerator<Listed[]> {
  const query = {labelSelector: q.labelSelector || undefined}
  if (q.source !== 'workloadentry') {
    const path = resourcePath(Resources.workloadAutoRegistrations, {namespace: q.namespace})
    try {
      for await (const page of client.listPages<KubeObject>(path, query, q.chunkSize)) {
        state.warServed = true
        state.resourceVersions.war ??= page.metadata?.resourceVersion
        yield rows('war', page.items, q)
      }
    } catch (err) {
      if (!isNotServed(err) || state.warServed) throw explainForbidden(err, 'list', Resources.workloadAutoRegistrations, q.namespace)
      state.warServed = false
      if (q.source === 'war') throw crdMissingError('there are no WorkloadAutoRegistrations to list')
    }
  }
  if (q.source !== 'war') {
    const path = resourcePath(Resources.workloadEntries, {namespace: q.namespace})
    try {
      for await (const page of client.listPages<KubeObject>(path, query, q.chunkSize)) {
        state.resourceVersions.workloadentry ??= page.metadata?.resourceVersion
        yield rows(
          'workloadentry',
          page.items.filter((o) => isListedWorkloadEntry(o, q.source)),
          q,
        )
      }
    } catch (err) {
      throw explainForbidden(err, 'list', Resources.workloadEntries, q.namespace)
    }
  }
}

/**
 * A listed registration whose object (with apiVersion and kind), row and summary are made on first
 * use: a table reads only the summary (or, with -o wide, the row), -o json|yaml|name only the object.
 */
class LazyListed implements Listed {
  private madeObject: KubeObject | undefined
  private madeRegistration: Registration | undefined
  private madeSummary: RegistrationSummary | undefined

  constructor(
    readonly source: Registration['source'],
    private readonly item: KubeObject,
    private readonly groups: Map<string, WorkloadGroup> | undefined,
  ) {}

  get object(): KubeObject {
    return (this.madeObject ??= withKind(this.item, registrationResource(this.source)))
  }

  get registration(): Registration {
    // The row reads metadata, spec and status only: the item as listed gives the same row as `object`.
    return (this.madeRegistration ??= toRegistration(this.source, this.item, this.groups))
  }

  get summary(): RegistrationSummary {
    return this.madeRegistration ?? (this.madeSummary ??= this.source === 'war' ? summaryFromWar(this.item) : summaryFromWorkloadEntry(this.item))
  }
}

function rows(source: Registration['source'], items: KubeObject[], q: ListQuery): Listed[] {
  const out: Listed[] = []
  for (const item of items) {
    if (q.group !== undefined && groupNameOf(source, item) !== q.group) continue
    out.push(new LazyListed(source, item, q.groups))
  }
  return out
}

export interface WatchedChange extends Listed {
  type: 'ADDED' | 'MODIFIED' | 'DELETED'
}

/**
 * Streams changes after the list (`--watch`), from the resourceVersions the list saw, until `signal`
 * aborts. A watch the server closes is resumed; one whose version expired (410) re-lists and
 * starts again from the new list's state.
 */
export async function watchRegistrations(client: KubeClient, q: ListQuery, state: ListState, onChange: (change: WatchedChange) => void, signal: AbortSignal): Promise<void> {
  const sources: Registration['source'][] = []
  if (q.source !== 'workloadentry' && state.warServed) sources.push('war')
  if (q.source !== 'war') sources.push('workloadentry')
  await Promise.all(
    sources.map(async (source) => {
      const res = registrationResource(source)
      const path = resourcePath(res, {namespace: q.namespace})
      let version = state.resourceVersions[source]
      const emit = (type: WatchedChange['type'], raw: KubeObject) => {
        const object = withKind(raw, res)
        if (source === 'workloadentry' && !isListedWorkloadEntry(object, q.source)) return
        if (q.group !== undefined && groupNameOf(source, object) !== q.group) return
        const registration = toRegistration(source, object, q.groups)
        onChange({type, source, object, registration, summary: registration})
      }
      while (!signal.aborted) {
        let expired = false
        try {
          version = await client.watch<KubeObject>(
            path,
            {labelSelector: q.labelSelector || undefined, resourceVersion: version},
            (event) => {
              if (event.type === 'BOOKMARK') return
              if (event.type === 'ERROR') {
                expired = true
                return
              }
              emit(event.type, event.object)
            },
            signal,
          )
        } catch (err) {
          if (signal.aborted) return
          throw explainForbidden(err, 'watch', res, q.namespace)
        }
        if (expired) {
          // 410: the events since `version` are gone (kube-apiserver keeps a few minutes of them).
          // Re-list, as client-go's reflector does, and show every registration as it is now: what
          // changed meanwhile is among them. The watch resumes from the new list's version.
          version = undefined
          for await (const page of client.listPages<KubeObject>(path, {labelSelector: q.labelSelector || undefined}, q.chunkSize)) {
            version ??= page.metadata?.resourceVersion
            for (const object of page.items) emit('MODIFIED', object)
          }
        }
      }
    }),
  )
}

// ---- one registration -------------------------------------------------------------------------

export type Found = {source: 'war'; object: WarObject & KubeObject} | {source: 'workloadentry'; object: WorkloadEntryObject & KubeObject}

export function notFoundError(name: string, namespace: string, warServed: boolean, extra?: string): MeshvmError {
  const searched = warServed ? 'no WorkloadAutoRegistration or auto-registered WorkloadEntry' : 'no auto-registered WorkloadEntry'
  return new MeshvmError(`registration "${name}" not found in namespace "${namespace}": ${searched} has that name${extra ? ` (${extra})` : ''}`, {
    exit: ExitCode.NOT_FOUND,
    code: 'NotFound',
    hints: [
      ...(warServed ? [] : [`the WorkloadAutoRegistration CRD (${CRD_NAME}) is not installed, so only WorkloadEntries were searched`]),
      `list the registrations with: meshvm war list -n ${namespace}`,
    ],
  })
}

/** A WAR of that name, else an auto-registered WorkloadEntry of that name; a one-line error otherwise. */
export async function findRegistration(client: KubeClient, namespace: string, name: string, warServed: boolean, only?: Registration['source']): Promise<Found> {
  if (warServed && only !== 'workloadentry') {
    const war = await getObject(client, Resources.workloadAutoRegistrations, namespace, name)
    if (war) return {source: 'war', object: withKind(war, Resources.workloadAutoRegistrations)}
  }
  const we = only === 'war' ? undefined : await getObject(client, Resources.workloadEntries, namespace, name)
  if (we) {
    const owner = ownerOfKind(we, Resources.workloadAutoRegistrations.kind)
    if (owner) throw notFoundError(name, namespace, warServed, `WorkloadEntry ${name} belongs to WorkloadAutoRegistration ${owner.name ?? '?'}`)
    if (isAutoRegisteredWorkloadEntry(we)) return {source: 'workloadentry', object: withKind(we, Resources.workloadEntries)}
    throw notFoundError(name, namespace, warServed, `WorkloadEntry ${name} was not auto-registered: manage it with kubectl`)
  }
  throw notFoundError(name, namespace, warServed)
}

/** The WorkloadEntry a WAR owns: usually named like the WAR, else found by owner UID. */
export async function ownedWorkloadEntry(client: KubeClient, war: KubeObject): Promise<KubeObject | undefined> {
  const namespace = war.metadata?.namespace
  const uid = war.metadata?.uid
  if (!namespace || !uid) return undefined
  const same = await getObject(client, Resources.workloadEntries, namespace, war.metadata?.name)
  if (same && isOwnedBy(same, uid)) return withKind(same, Resources.workloadEntries)
  for await (const we of listObjects(client, Resources.workloadEntries, namespace)) {
    if (isOwnedBy(we, uid)) return withKind(we, Resources.workloadEntries)
  }
  return undefined
}

/**
 * What `describe` shows besides the object: the owner WorkloadGroup, the WorkloadEntry a WAR owns,
 * and the object's Events. A detail that cannot be read (forbidden) is left out with a warning.
 */
export async function describeDetails(client: KubeClient, found: Found, warn: (text: string) => void): Promise<DescribeDetails> {
  const obj = found.object
  const namespace = obj.metadata?.namespace ?? ''
  const details: DescribeDetails = found.source === 'war' ? {war: found.object} : {workloadEntry: found.object}
  const optional = <T>(what: string, read: Promise<T>): Promise<T | undefined> =>
    read.catch((err: unknown) => {
      if (!(err instanceof MeshvmError && err.exit === ExitCode.FORBIDDEN)) throw err
      warn(`${err.message}: ${what} not shown`)
      return undefined
    })
  const groupName = groupNameOf(found.source, obj)
  const involved = [`involvedObject.name=${obj.metadata?.name ?? ''}`, `involvedObject.kind=${obj.kind ?? ''}`, ...(obj.metadata?.uid ? [`involvedObject.uid=${obj.metadata.uid}`] : [])]
  const [group, workloadEntry, events] = await Promise.all([
    groupName ? optional('the WorkloadGroup', getObject(client, Resources.workloadGroups, namespace, groupName)) : undefined,
    found.source === 'war' ? optional('the WorkloadEntry', ownedWorkloadEntry(client, obj)) : undefined,
    optional(
      'events',
      withPermission('list', Resources.events, namespace, () => client.list<KubeObject>(resourcePath(Resources.events, {namespace}), {fieldSelector: involved.join(',')})),
    ),
  ])
  if (group) details.group = group as WorkloadGroup
  if (workloadEntry) details.workloadEntry = workloadEntry
  details.events = (events ?? []) as EventLike[]
  return details
}

// ---- deleting -------------------------------------------------------------------------------

/** `workloadautoregistration.runtime.onboarding.tetrate.io`, as kubectl names a kind in messages. */
export function kindName(source: Registration['source']): string {
  const res = registrationResource(source)
  return `${res.kind.toLowerCase()}.${res.group}`
}

/**
 * Deletes one registration, only if it is still the object that was read (UID precondition; the
 * resourceVersion too when `exact`), letting the API server garbage-collect what it owns.
 * Returns false when it was already gone.
 */
export async function deleteRegistration(client: KubeClient, source: Registration['source'], obj: KubeObject, options: {dryRun?: boolean; exact?: boolean} = {}): Promise<boolean> {
  const res = registrationResource(source)
  const namespace = obj.metadata?.namespace
  const preconditions: Record<string, string> = {}
  if (obj.metadata?.uid) preconditions.uid = obj.metadata.uid
  if (options.exact && obj.metadata?.resourceVersion) preconditions.resourceVersion = obj.metadata.resourceVersion
  try {
    await client.request({
      method: 'DELETE',
      path: resourcePath(res, {namespace, name: obj.metadata?.name}),
      query: {dryRun: options.dryRun ? 'All' : undefined},
      body: {apiVersion: 'v1', kind: 'DeleteOptions', propagationPolicy: 'Background', ...(Object.keys(preconditions).length > 0 ? {preconditions} : {})},
    })
    return true
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return false
    throw explainForbidden(err, 'delete', res, namespace)
  }
}
