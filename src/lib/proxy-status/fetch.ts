/**
 * What `meshvm proxy-status` reads from one cluster, through the one Kubernetes layer:
 *
 * - the running istiod pods (`app=istiod`, `istio.io/rev` for --revision, `status.phase=Running`, in -i);
 * - each istiod's sync status through src/lib/istiod (port-forward to the monitoring port for
 *   `/debug/syncz`, else xDS `istio.io/debug/syncz` on 15012; never the pod proxy, which istiod refuses),
 *   each within --timeout;
 * - the VM registrations: WorkloadEntries and, when the CRD exists, WorkloadAutoRegistrations;
 * - pods, when VMs must be told apart from pods or -l filters by pod labels.
 *
 * Failures of one istiod are returned as IstiodFailure values, not thrown, so the others still print.
 */
import {ExitCode, MeshvmError} from '../errors.js'
import type {KubeClient} from '../kube/client.js'
import {KubeApiError} from '../kube/errors.js'
import {DEFAULT_MONITORING_PORT, IstiodReadError, type FailureKind, type IstiodPath, type IstiodPool, type IstiodReader, type IstiodTarget} from '../istiod/reader.js'
import {Resources, resourcePath} from '../kube/resources.js'
import type {WarObject, WorkloadEntryObject} from '../war/model.js'
import {parseSyncz, type IstiodRef, type ProxySync} from './status.js'
import {compareStrings} from '../util/records.js'

interface PodObject {
  metadata?: {name?: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string>}
  spec?: {containers?: {name?: string; image?: string}[]}
  status?: {phase?: string}
}

export interface IstiodPod extends IstiodRef {
  /** The monitoring port /debug/syncz is served on. */
  port: number
  /** --xds-address: an istiod outside the cluster, read over xDS at this HOST:PORT. */
  address?: string
}

export interface IstiodFailure {
  istiod: IstiodPod
  /** `timeout`: no answer within --timeout; the rest are errors of the API server, the pod or its answer. */
  kind: FailureKind
  error: MeshvmError
}

/** The Istio version from the pod's discovery image tag (`docker.io/istio/pilot:1.24.2-distroless` → 1.24.2). */
export function versionFromImage(image: string | undefined): string | undefined {
  if (!image || image.includes('@')) return undefined
  const slash = image.lastIndexOf('/')
  const colon = image.lastIndexOf(':')
  if (colon <= slash) return undefined
  const tag = image.slice(colon + 1)
  const m = /^v?(\d+\.\d+(?:\.\d+)?(?:-(?:alpha|beta|rc)[.\d]*)?)/.exec(tag)
  return m ? m[1] : undefined
}

function monitoringPort(annotations: Record<string, string> | undefined): number {
  const text = annotations?.['prometheus.io/port']
  const n = text !== undefined && /^\d+$/.test(text) ? Number(text) : Number.NaN
  return n >= 1 && n <= 65535 ? n : DEFAULT_MONITORING_PORT
}

function toIstiod(pod: PodObject, namespace: string): IstiodPod {
  const labels = pod.metadata?.labels ?? {}
  const discovery = pod.spec?.containers?.find((c) => c.name === 'discovery') ?? pod.spec?.containers?.[0]
  const version = labels['app.kubernetes.io/version'] || versionFromImage(discovery?.image)
  return {
    name: pod.metadata?.name ?? '',
    namespace: pod.metadata?.namespace ?? namespace,
    ...(version ? {version} : {}),
    ...(labels['istio.io/rev'] ? {revision: labels['istio.io/rev']} : {}),
    port: monitoringPort(pod.metadata?.annotations),
  }
}

export interface IstiodDiscovery {
  /** Running istiods of the selected revision (all revisions without --revision), by name. */
  selected: IstiodPod[]
  /** Running istiods of other revisions (empty without --revision). */
  others: IstiodPod[]
}

/**
 * The running istiod pods in `istioNamespace`: one list (`app=istiod`, `status.phase=Running`), split by
 * revision here so that VMs connected to another revision's istiod are recognised as such.
 */
export async function findIstiods(client: KubeClient, options: {istioNamespace: string; revision?: string}): Promise<IstiodDiscovery> {
  return splitIstiods(await listIstiods(client, options.istioNamespace), options.revision)
}

/** Every running istiod pod of `istioNamespace`, by name: findIstiods without the revision (which may still be resolving). */
export async function listIstiods(client: KubeClient, istioNamespace: string): Promise<IstiodPod[]> {
  const pods = await client.list<PodObject>(resourcePath(Resources.pods, {namespace: istioNamespace}), {
    labelSelector: 'app=istiod',
    fieldSelector: 'status.phase=Running',
  })
  return pods
    .filter((p) => (p.status?.phase ?? 'Running') === 'Running')
    .map((p) => toIstiod(p, istioNamespace))
    .sort((a, b) => compareStrings(a.name, b.name))
}

/** The istiods of a revision (all of them without one), and the others. */
export function splitIstiods(all: IstiodPod[], revision: string | undefined): IstiodDiscovery {
  if (revision === undefined) return {selected: all, others: []}
  return {selected: all.filter((p) => p.revision === revision), others: all.filter((p) => p.revision !== revision)}
}

/** "no istiod" with hints: other revisions, non-running pods, istiod in another namespace. */
export async function noIstiodError(client: KubeClient, options: {istioNamespace: string; revision?: string; others: IstiodPod[]}): Promise<MeshvmError> {
  const ns = options.istioNamespace
  const labels = options.revision === undefined ? 'app=istiod' : `app=istiod,istio.io/rev=${options.revision}`
  const message = `no running istiod pods${options.revision === undefined ? '' : ` of revision ${JSON.stringify(options.revision)}`} in namespace ${JSON.stringify(ns)} (labels ${labels})`
  const hints: string[] = []
  if (options.revision !== undefined) {
    const revisions = [...new Set(options.others.map((p) => p.revision ?? 'default'))].sort()
    hints.push(
      revisions.length > 0
        ? `revisions running in ${ns}: ${revisions.join(', ')}; pass one of them with --revision, or leave --revision out`
        : `is the revision right? leave --revision out to read every istiod in ${ns}`,
    )
  }
  // Best effort: a pod that is not running, or istiod in another namespace. Errors here change nothing.
  try {
    const inNs = await client.list<PodObject>(resourcePath(Resources.pods, {namespace: ns}), {labelSelector: labels})
    const notRunning = inNs.filter((p) => p.status?.phase !== 'Running')
    if (notRunning.length > 0) {
      hints.push(`istiod pods that are not running: ${notRunning.map((p) => `${p.metadata?.name} (${p.status?.phase ?? 'Unknown'})`).join(', ')}; see kubectl -n ${ns} describe pod`)
    }
  } catch {
    // ignore
  }
  if (options.revision === undefined && options.others.length === 0) {
    try {
      const everywhere = await client.list<PodObject>(resourcePath(Resources.pods), {labelSelector: 'app=istiod', fieldSelector: 'status.phase=Running'})
      const namespaces = [...new Set(everywhere.map((p) => p.metadata?.namespace ?? '').filter((n) => n !== '' && n !== ns))].sort()
      if (namespaces.length > 0) hints.push(`istiod runs in namespace ${namespaces.join(', ')}: pass -i ${namespaces[0]}`)
    } catch {
      // a user without cluster-wide pod access gets the generic hint
    }
    if (hints.length === 0) hints.push('is Istio installed in this cluster? if the control plane runs in another namespace, pass -i NAMESPACE')
  }
  return new MeshvmError(message, {exit: ExitCode.NOT_FOUND, code: 'IstiodNotFound', hints})
}

/** The reader target of an istiod pod (port-forward), or of --xds-address. */
export function istiodTarget(istiod: IstiodPod): IstiodTarget {
  if (istiod.address !== undefined) return {kind: 'address', address: istiod.address, namespace: istiod.namespace, revision: istiod.revision}
  return {kind: 'pod', name: istiod.name, namespace: istiod.namespace, revision: istiod.revision, monitoringPort: istiod.port}
}

/**
 * One istiod's proxies, or why they cannot be read, through its reader (port-forward to the
 * monitoring port, else xDS; src/lib/istiod/reader.ts). Never throws for istiod or API failures.
 */
export async function readSyncz(
  pool: IstiodPool,
  istiod: IstiodPod,
  options: {timeoutMs: number; namespace?: string},
): Promise<{ok: true; syncs: ProxySync[]; via: IstiodPath} | {ok: false; failure: IstiodFailure}> {
  let answer: Awaited<ReturnType<IstiodReader['syncz']>>
  try {
    answer = await pool.reader(istiodTarget(istiod)).syncz(options)
  } catch (err) {
    if (err instanceof IstiodReadError) return {ok: false, failure: {istiod, kind: err.kind, error: err}}
    throw err
  }
  try {
    return {ok: true, syncs: parseSyncz(answer.body, istiod), via: answer.path}
  } catch (err) {
    if (err instanceof MeshvmError) return {ok: false, failure: {istiod, kind: 'error', error: err}}
    throw err
  }
}

export interface Registrations {
  workloadEntries: WorkloadEntryObject[]
  wars: WarObject[]
  /** Lists that could not be read (403 and such), as warnings; a missing CRD (404) is not a problem. */
  warnings: string[]
}

/**
 * The registrations are all needed before any row can be drawn, so they are read in large pages:
 * one request for most meshes, as `kubectl get --chunk-size=0` does, instead of pages of 500 one
 * after another (ten round trips, and ten bodies to parse, for 5,000 WorkloadEntries). Not larger:
 * the two lists are read at once, each with its next page requested ahead, so up to four pages'
 * bodies and parsed objects are held together; at tens of thousands of registrations pages of
 * 10,000 set the command's peak memory (and their garbage made it slower, not faster).
 */
const REGISTRATION_PAGE_SIZE = 5_000

async function optionalList<T extends {metadata?: {name?: string; namespace?: string}}>(client: KubeClient, path: string, what: string, warnings: string[], keep?: (item: T) => T): Promise<T[]> {
  try {
    // With `keep`, each page's objects are dropped as soon as the page is read: only what is kept stays.
    const items: T[] = []
    for await (const page of client.listPages<T>(path, {}, REGISTRATION_PAGE_SIZE)) {
      for (const item of page.items) items.push(keep ? keep(item) : item)
    }
    return items
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return [] // the CRD is not installed
    if (err instanceof MeshvmError) {
      warnings.push(`cannot list ${what}: ${err.message}; VM rows may be missing${err.hints[0] ? ` (${err.hints[0]})` : ''}`)
      return []
    }
    throw err
  }
}

/**
 * WorkloadEntries and WorkloadAutoRegistrations (all namespaces, or one). `slim`: each object is cut
 * down, as its page arrives, to what proxy-status reads of it (slimWorkloadEntry, slimWar); the
 * rest (managedFields, the WAR's group snapshot, ...) is never held for the whole list.
 */
export async function listRegistrations(client: KubeClient, options: {namespace?: string; slim?: boolean}): Promise<Registrations> {
  // One warning list per request, joined in a fixed order: the two lists finish in any order.
  const weWarnings: string[] = []
  const warWarnings: string[] = []
  const [workloadEntries, wars] = await Promise.all([
    optionalList<WorkloadEntryObject>(client, resourcePath(Resources.workloadEntries, {namespace: options.namespace}), 'WorkloadEntries', weWarnings, options.slim ? slimWorkloadEntry : undefined),
    optionalList<WarObject>(client, resourcePath(Resources.workloadAutoRegistrations, {namespace: options.namespace}), 'WorkloadAutoRegistrations', warWarnings, options.slim ? slimWar : undefined),
  ])
  return {workloadEntries, wars, warnings: [...weWarnings, ...warWarnings]}
}

type Meta = NonNullable<WorkloadEntryObject['metadata']>

/** The metadata proxy-status reads of a registration: names, labels, annotations, owners, creation time. */
function slimMeta(m: Meta | undefined): Meta | undefined {
  if (m === undefined || m === null || typeof m !== 'object') return m
  const out: Meta = {}
  if (m.name !== undefined) out.name = m.name
  if (m.namespace !== undefined) out.namespace = m.namespace
  if (m.creationTimestamp !== undefined) out.creationTimestamp = m.creationTimestamp
  if (m.labels !== undefined) out.labels = m.labels
  if (m.annotations !== undefined) out.annotations = m.annotations
  if (m.ownerReferences !== undefined) out.ownerReferences = m.ownerReferences
  return out
}

/**
 * A registration cut down to its metadata (slimMeta), spec, and what `status` keeps of its status; the
 * parts kept are the listed object's own (not copies). Properties are set by name, not through a key
 * list: this runs once per listed registration.
 */
function slim<T extends WorkloadEntryObject | WarObject>(o: T, status: (s: T['status']) => T['status']): T {
  if (o === null || typeof o !== 'object') return o
  const out = {} as T
  const metadata = slimMeta(o.metadata)
  if (metadata !== undefined) out.metadata = metadata
  if (o.spec !== undefined) out.spec = o.spec
  if (o.status !== undefined) out.status = status(o.status)
  return out
}

/**
 * A WorkloadEntry as proxy-status reads it (vms.ts: pairing, labels, health, registration; detail.ts:
 * tunnel label, health-check annotation, WaypointBound): its metadata, spec and conditions.
 */
export function slimWorkloadEntry(we: WorkloadEntryObject): WorkloadEntryObject {
  return slim(we, (s) => (s?.conditions === undefined ? {} : {conditions: s.conditions}))
}

/**
 * A WorkloadAutoRegistration as proxy-status reads it (vms.ts, through registrationFromWar: identity,
 * addresses, versions, workload labels; AgentConnected and the active connection). The group snapshot is left out.
 */
export function slimWar(war: WarObject): WarObject {
  return slim(war, (s) => {
    const out: NonNullable<WarObject['status']> = {}
    if (s?.conditions !== undefined) out.conditions = s.conditions
    if (s?.activeAgentConnection !== undefined) out.activeAgentConnection = s.activeAgentConnection
    return out
  })
}

export interface PodIndex {
  /** `namespace/name` → labels, for the namespaces that could be listed. */
  labels: Map<string, Record<string, string>>
  /** Namespaces whose pods were listed. */
  listed: Set<string>
  warnings: string[]
}

/** The pods of some namespaces (a few at a time), to tell pod proxies from VM proxies and to match -l. */
export async function listPods(client: KubeClient, namespaces: Iterable<string>): Promise<PodIndex> {
  const index: PodIndex = {labels: new Map(), listed: new Set(), warnings: []}
  const queue = [...new Set(namespaces)].sort()
  const worker = async () => {
    for (let ns = queue.shift(); ns !== undefined; ns = queue.shift()) {
      try {
        const pods = await client.list<PodObject>(resourcePath(Resources.pods, {namespace: ns}))
        for (const p of pods) index.labels.set(`${ns}/${p.metadata?.name ?? ''}`, p.metadata?.labels ?? {})
        index.listed.add(ns)
      } catch (err) {
        if (!(err instanceof MeshvmError)) throw err
        index.warnings.push(`cannot list pods in namespace ${ns}: ${err.message}`)
      }
    }
  }
  await Promise.all(Array.from({length: Math.min(8, queue.length)}, worker))
  return index
}
