/**
 * What `meshvm proxy-status` reads from one cluster, through the one Kubernetes layer:
 *
 * - the running istiod pods (`app=istiod`, `istio.io/rev` for --revision, `status.phase=Running`, in -i);
 * - each istiod's `/debug/syncz`, through the API server's pod proxy
 *   (`/api/v1/namespaces/NS/pods/POD:PORT/proxy/debug/syncz`, PORT from `prometheus.io/port`, else 15014),
 *   retrying transient API server faults only while --timeout allows;
 * - the VM registrations: WorkloadEntries and, when the CRD exists, WorkloadAutoRegistrations;
 * - pods, when VMs must be told apart from pods or -l filters by pod labels.
 *
 * Failures of one istiod are returned as IstiodFailure values, not thrown, so the others still print.
 */
import {ExitCode, MeshvmError} from '../errors.js'
import type {KubeClient} from '../kube/client.js'
import {KubeApiError, rbacHint} from '../kube/errors.js'
import {Resources, resourcePath} from '../kube/resources.js'
import type {WarObject, WorkloadEntryObject} from '../war/model.js'
import {parseSyncz, type IstiodRef, type ProxySync} from './status.js'

export const DEFAULT_MONITORING_PORT = 15014

interface PodObject {
  metadata?: {name?: string; namespace?: string; labels?: Record<string, string>; annotations?: Record<string, string>}
  spec?: {containers?: {name?: string; image?: string}[]}
  status?: {phase?: string}
}

export interface IstiodPod extends IstiodRef {
  /** The monitoring port /debug/syncz is served on. */
  port: number
}

export interface IstiodFailure {
  istiod: IstiodPod
  /** `timeout`: no answer within --timeout; the rest are errors of the API server, the pod or its answer. */
  kind: 'timeout' | 'forbidden' | 'error'
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
  const pods = await client.list<PodObject>(resourcePath(Resources.pods, {namespace: options.istioNamespace}), {
    labelSelector: 'app=istiod',
    fieldSelector: 'status.phase=Running',
  })
  const all = pods
    .filter((p) => (p.status?.phase ?? 'Running') === 'Running')
    .map((p) => toIstiod(p, options.istioNamespace))
    .sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  if (options.revision === undefined) return {selected: all, others: []}
  return {selected: all.filter((p) => p.revision === options.revision), others: all.filter((p) => p.revision !== options.revision)}
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

/** `/api/v1/namespaces/NS/pods/POD:PORT/proxy/debug/syncz` (the port is part of the name, unescaped). */
export function synczPath(istiod: IstiodPod): string {
  return `${resourcePath(Resources.pods, {namespace: istiod.namespace})}/${encodeURIComponent(istiod.name)}:${istiod.port}/proxy/debug/syncz`
}

function formatMs(ms: number): string {
  return ms < 1000 || ms % 1000 !== 0 ? `${ms}ms` : `${ms / 1000}s`
}

/** The RBAC rule that reading syncz needs, as a hint. */
export function podProxyHint(namespace: string): string {
  return `reading istiod's /debug/syncz needs verb "get" on "pods/proxy" in namespace ${namespace} (kubectl auth can-i get pods/proxy -n ${namespace}); a cluster admin can grant it with: kubectl create role meshvm-proxy-status -n ${namespace} --verb=get,list --resource=pods,pods/proxy && kubectl create rolebinding meshvm-proxy-status -n ${namespace} --role=meshvm-proxy-status --user=YOU`
}

/** One istiod's proxies, or why they cannot be read. Never throws for istiod or API failures. */
export async function readSyncz(
  client: KubeClient,
  istiod: IstiodPod,
  options: {timeoutMs: number; namespace?: string},
): Promise<{ok: true; syncs: ProxySync[]} | {ok: false; failure: IstiodFailure}> {
  const who = `istiod ${istiod.namespace}/${istiod.name}`
  let body: string
  try {
    const res = await client.send({
      method: 'GET',
      path: synczPath(istiod),
      query: {namespace: options.namespace},
      // Transient API server faults are retried, but only within --timeout: a dead istiod costs
      // the time-out once, never a multiple of it.
      retry: 'read',
      deadline: Date.now() + options.timeoutMs,
    })
    body = res.body.toString('utf8')
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 403) {
      const hint = rbacHint(err.message)
      return {
        ok: false,
        failure: {
          istiod, kind: 'forbidden',
          error: new MeshvmError(`${who}: cannot read /debug/syncz: ${err.message}`, {exit: ExitCode.FORBIDDEN, code: 'Forbidden', hints: [podProxyHint(istiod.namespace), ...(hint && !hint.includes('pods/proxy') ? [hint] : [])]}),
        },
      }
    }
    if (err instanceof MeshvmError && err.code === 'Timeout') {
      return {
        ok: false,
        failure: {
          istiod, kind: 'timeout',
          error: new MeshvmError(`${who} did not answer within ${formatMs(options.timeoutMs)}`, {
            exit: ExitCode.UNREACHABLE, code: 'Timeout', hints: [`raise --timeout, or check the pod: kubectl -n ${istiod.namespace} logs ${istiod.name} -c discovery`],
          }),
        },
      }
    }
    if (err instanceof KubeApiError) {
      const detail = err.kubeStatus?.message?.split('\n')[0] ?? err.message
      const what = err.status === 404 ? `no /debug/syncz on port ${istiod.port} (${detail})` : err.status >= 500 ? `the API server could not reach it on port ${istiod.port}: ${detail}` : detail
      return {
        ok: false,
        failure: {
          istiod, kind: 'error',
          error: new MeshvmError(`${who}: ${what}`, {
            exit: err.status === 404 ? ExitCode.NOT_FOUND : ExitCode.UNREACHABLE, code: err.reason,
            hints: [`is the pod ready and its monitoring port ${istiod.port} right (annotation prometheus.io/port)? kubectl -n ${istiod.namespace} get pod ${istiod.name}`],
          }),
        },
      }
    }
    if (err instanceof MeshvmError) {
      return {ok: false, failure: {istiod, kind: 'error', error: new MeshvmError(`${who}: ${err.message}`, {exit: err.exit, code: err.code, hints: err.hints})}}
    }
    throw err
  }
  try {
    return {ok: true, syncs: parseSyncz(body, istiod)}
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

async function optionalList<T extends {metadata?: {name?: string; namespace?: string}}>(
  client: KubeClient,
  path: string,
  what: string,
  warnings: string[],
): Promise<T[]> {
  try {
    return await client.list<T>(path)
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) return [] // the CRD is not installed
    if (err instanceof MeshvmError) {
      warnings.push(`cannot list ${what}: ${err.message}; VM rows may be missing${err.hints[0] ? ` (${err.hints[0]})` : ''}`)
      return []
    }
    throw err
  }
}

/** WorkloadEntries and WorkloadAutoRegistrations (all namespaces, or one). */
export async function listRegistrations(client: KubeClient, options: {namespace?: string}): Promise<Registrations> {
  // One warning list per request, joined in a fixed order: the two lists finish in any order.
  const weWarnings: string[] = []
  const warWarnings: string[] = []
  const [workloadEntries, wars] = await Promise.all([
    optionalList<WorkloadEntryObject>(client, resourcePath(Resources.workloadEntries, {namespace: options.namespace}), 'WorkloadEntries', weWarnings),
    optionalList<WarObject>(client, resourcePath(Resources.workloadAutoRegistrations, {namespace: options.namespace}), 'WorkloadAutoRegistrations', warWarnings),
  ])
  return {workloadEntries, wars, warnings: [...weWarnings, ...warWarnings]}
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
