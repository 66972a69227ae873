/**
 * istiod's WorkloadEntry auto-registration and health controller (pilot/pkg/autoregistration/
 * controller.go), driven by connect / disconnect / health events of proxies, writing to the test
 * API server's store as istiod writes through the API:
 *
 * - connect of a proxy with ISTIO_META_AUTO_REGISTER_GROUP: if WorkloadEntry `group-IP[-network]`
 *   (IP with ':' → '-', cut from the front to 253 characters) exists, it is only marked connected
 *   (istio.io/workloadController, istio.io/connectedAt; istio.io/disconnectedAt removed), so a
 *   changed group reaches the entry only after it is deleted; else it is built from the group:
 *   a copy of the template, address = the proxy's IP, labels node metadata > group metadata >
 *   template, network and locality from the node, annotations istio.io/autoRegistrationGroup +
 *   the group's metadata annotations (+ proxy.istio.io/health-checks-enabled when the proxy has a
 *   readinessProbe), a controller ownerReference to the group. A missing group is refused with
 *   FailedPrecondition; an identity that may not control the entry (other namespace or service
 *   account) is refused too (ensureProxyCanControlEntry, PILOT_VALIDATE_WORKLOAD_ENTRY_IDENTITY).
 * - disconnect (the last connection of that proxy): istio.io/connectedAt removed,
 *   istio.io/disconnectedAt set (RFC3339Nano), by an update; unless a newer connection already
 *   took the entry over. After the grace period (PILOT_WORKLOAD_ENTRY_GRACE_PERIOD, 10s) the entry
 *   is deleted with a resourceVersion precondition if it is still disconnected.
 * - health: the `Healthy` condition (status True/False, message on failure, lastProbeTime =
 *   lastTransitionTime, no reason) written to the status, by the istiod holding the connection.
 *
 * Istio version (`istioVersion`, switchable at run time as an upgrade of istiod would): '1.30' (the
 * default) makes entries as above; '1.31' also labels the entries it creates for HBONE-capable
 * proxies (node metadata ENABLE_HBONE, from ISTIO_META_ENABLE_HBONE) with networking.istio.io/tunnel=http
 * (release note 60788; an entry that already exists is only marked connected, so it keeps no label
 * until it is deleted and re-made), and writes the `istio.io/WaypointBound` condition on entries that
 * ask for a waypoint (label istio.io/use-waypoint): True when that waypoint is known (`waypoints`),
 * else False (release note 59993; the reason strings are meshvm's guess, not copied from istiod).
 *
 * TSB mode (`mode: 'tsb'`) models Tetrate's Workload Onboarding Plane on top: the first connect of
 * a workload creates a WorkloadAutoRegistration `<group>-jwt-k8s-<hostname>` owned by the group,
 * holding a snapshot of the group spec, that owns the WorkloadEntry of the same name; the WAR's
 * AgentConnected condition follows the connection; it is deleted (with its entry) once the agent
 * has been disconnected for the grace period (TSB: 5 minutes); deleting a WAR whose agent is
 * connected makes the agent re-onboard (`onReonboard`), which is how `war rollout` works.
 */
import {resourceKey, type KubeObj, type Store, type StoreEvent} from './store.js'
import {Timers} from './timers.js'

export const WE = resourceKey('networking.istio.io', 'workloadentries')
export const WG = resourceKey('networking.istio.io', 'workloadgroups')
export const WAR = resourceKey('runtime.onboarding.tetrate.io', 'workloadautoregistrations')

export const ANNOTATIONS = {
  group: 'istio.io/autoRegistrationGroup',
  controller: 'istio.io/workloadController',
  connectedAt: 'istio.io/connectedAt',
  disconnectedAt: 'istio.io/disconnectedAt',
  healthChecks: 'proxy.istio.io/health-checks-enabled',
} as const

/** What istiod knows of a connecting proxy: its node metadata and verified identity. */
export interface ProxyInfo {
  /** `hostname.namespace` */
  id: string
  namespace: string
  /** The proxy's IPs (INSTANCE_IPS); the first names the entry. */
  ips: string[]
  autoRegisterGroup?: string
  network?: string
  /** ISTIO_METAJSON_LABELS */
  labels?: Record<string, string>
  locality?: {region?: string; zone?: string; subZone?: string}
  /** The proxy config carries a readinessProbe (the group's probe, from mesh.yaml). */
  readinessProbe?: boolean
  /** From the authenticated token. */
  identity?: {namespace: string; serviceAccount: string}
  version?: string
  /** Node metadata ENABLE_HBONE (ISTIO_META_ENABLE_HBONE=true): the proxy accepts HBONE. */
  hbone?: boolean
}

export const TUNNEL_LABEL = 'networking.istio.io/tunnel'
export const USE_WAYPOINT_LABEL = 'istio.io/use-waypoint'
export const WAYPOINT_BOUND = 'istio.io/WaypointBound'
export type IstioBehaviour = '1.30' | '1.31'

/** A refusal istiod returns on the ADS stream (gRPC status code name and message). */
export class RegistrationError extends Error {
  constructor(
    readonly code: 'FailedPrecondition' | 'Unknown',
    message: string,
  ) {
    super(message)
    this.name = 'RegistrationError'
  }
}

export interface AutoRegistrationOptions {
  /** The istiod pod name written to istio.io/workloadController. */
  instanceId: string
  /** Delay before a disconnected entry (or, in TSB mode, WAR) is deleted. Default 10s (TSB: 5m). */
  gracePeriodMs?: number
  mode?: 'istio' | 'tsb'
  /** TSB: a WAR of a connected agent was deleted; the agent re-onboards (reconnects). */
  onReonboard?: (proxyId: string) => void
  /** Which release's auto-registration to behave as (default 1.30). */
  istioVersion?: IstioBehaviour
  /** Waypoints that exist, as `namespace/name` (for WaypointBound). */
  waypoints?: Iterable<string>
}

/** Go's time.RFC3339Nano in UTC: fractional seconds without trailing zeros. */
export function rfc3339Nano(d: Date): string {
  return d.toISOString().replace(/\.(\d+)Z$/, (_m, f: string) => (f.replace(/0+$/, '') ? `.${f.replace(/0+$/, '')}Z` : 'Z'))
}

const parseTime = (s: string | undefined): number => (s ? Date.parse(s) : Number.NaN)

/** autoregisteredWorkloadEntryName */
export function autoRegisteredName(proxy: ProxyInfo): string {
  const parts = [proxy.autoRegisterGroup!, proxy.ips[0]!.replace(/:/g, '-')]
  if (proxy.network) parts.push(proxy.network)
  const name = parts.join('-')
  return name.length > 253 ? name.slice(name.length - 253) : name
}

interface Connection {
  proxy: ProxyInfo
  entryName: string
  connectedAt: Date
}

type Json = Record<string, unknown>

export class AutoRegistration {
  readonly gracePeriodMs: number
  readonly mode: 'istio' | 'tsb'
  /** Switch to '1.31' to model an upgraded istiod: entries made from then on get the tunnel label and WaypointBound. */
  istioVersion: IstioBehaviour
  readonly waypoints: Set<string>
  private readonly adsConnections = new Map<string, number>()
  /** Live connections by proxy id, oldest first (a restarted sidecar may reconnect before its old stream is gone). */
  private readonly live = new Map<string, Connection[]>()
  private readonly timers = new Timers()
  private readonly unsubscribe: () => void

  constructor(
    private readonly store: Store,
    private readonly options: AutoRegistrationOptions,
  ) {
    this.mode = options.mode ?? 'istio'
    this.istioVersion = options.istioVersion ?? '1.30'
    this.waypoints = new Set(options.waypoints ?? [])
    this.gracePeriodMs = options.gracePeriodMs ?? (this.mode === 'tsb' ? 5 * 60_000 : 10_000)
    this.unsubscribe = store.onEvent((e) => this.onStoreEvent(e))
  }

  private key(proxy: ProxyInfo, entryName: string): string {
    return [proxy.network ?? '', proxy.ips[0], entryName, proxy.namespace].join('~')
  }

  /** RegisterWorkload: returns the entry's name, or throws the refusal istiod sends the proxy. */
  connect(proxy: ProxyInfo, conTime = new Date()): string | undefined {
    if (!proxy.autoRegisterGroup) return undefined
    if (proxy.ips.length === 0 || !proxy.namespace) return undefined
    const entryName = this.mode === 'tsb' ? warName(proxy) : autoRegisteredName(proxy)
    const key = this.key(proxy, entryName)
    this.adsConnections.set(key, (this.adsConnections.get(key) ?? 0) + 1)
    try {
      if (this.mode === 'tsb') this.registerWithWar(entryName, proxy, conTime)
      else this.registerWorkload(entryName, proxy, conTime)
    } catch (err) {
      this.adsConnections.set(key, this.adsConnections.get(key)! - 1)
      if (this.adsConnections.get(key) === 0) this.adsConnections.delete(key)
      throw err
    }
    this.live.set(proxy.id, [...(this.live.get(proxy.id) ?? []), {proxy, entryName, connectedAt: conTime}])
    return entryName
  }

  private registerWorkload(entryName: string, proxy: ProxyInfo, conTime: Date): void {
    const existing = this.store.get(WE, proxy.namespace, entryName)
    if (existing) {
      ensureProxyCanControlEntry(proxy, existing)
      this.markConnected(existing, conTime)
      return
    }
    const group = this.store.get(WG, proxy.namespace, proxy.autoRegisterGroup!)
    if (!group) {
      throw new RegistrationError('FailedPrecondition', `auto-registration WorkloadEntry of ${proxy.id} failed: cannot find WorkloadGroup ${proxy.namespace}/${proxy.autoRegisterGroup}`)
    }
    const entry = workloadEntryFromGroup(entryName, proxy, group, this.istioVersion)
    ensureProxyCanControlEntry(proxy, entry)
    entry.metadata.annotations![ANNOTATIONS.controller] = this.options.instanceId
    entry.metadata.annotations![ANNOTATIONS.connectedAt] = rfc3339Nano(conTime)
    const created = this.store.create(WE, 'WorkloadEntry', entry)
    if (this.istioVersion === '1.31') this.writeWaypointBound(created, conTime)
  }

  /** 1.31: the WaypointBound condition of an entry that asks for a waypoint, written to its status. */
  private writeWaypointBound(entry: KubeObj, at: Date): void {
    const labels = {...((entry.spec as {labels?: Record<string, string>} | undefined)?.labels ?? {}), ...(entry.metadata.labels ?? {})}
    const waypoint = labels[USE_WAYPOINT_LABEL]
    if (!waypoint || waypoint === '#none') return
    const ref = waypoint.includes('/') ? waypoint : `${entry.metadata.namespace}/${waypoint}`
    const bound = this.waypoints.has(ref)
    const condition: Json = {
      type: WAYPOINT_BOUND,
      status: bound ? 'True' : 'False',
      lastTransitionTime: at.toISOString(),
      reason: bound ? 'WaypointAccepted' : 'WaypointNotFound',
      message: bound ? `bound to ${ref}` : `waypoint ${ref} not found`,
    }
    const conditions = (((entry.status as Json | undefined)?.conditions as Json[] | undefined) ?? []).filter((c) => c.type !== WAYPOINT_BOUND)
    this.store.update(WE, {...entry, status: {...((entry.status as Json) ?? {}), conditions: [...conditions, condition]}})
  }

  /** changeWorkloadEntryStateToConnected: a merge patch of the connect annotations. */
  private markConnected(entry: KubeObj, conTime: Date): void {
    const last = parseTime(entry.metadata.annotations?.[ANNOTATIONS.connectedAt])
    if (!Number.isNaN(last) && conTime.getTime() < last) return
    const annotations: Record<string, string> = {...entry.metadata.annotations, [ANNOTATIONS.controller]: this.options.instanceId, [ANNOTATIONS.connectedAt]: rfc3339Nano(conTime)}
    delete annotations[ANNOTATIONS.disconnectedAt]
    this.store.update(WE, {...entry, metadata: {...entry.metadata, annotations}})
  }

  /**
   * QueueUnregisterWorkload + unregisterWorkload (processed at once here). `conTime` names the
   * connection that ended (default: the oldest of that proxy).
   */
  disconnect(proxyId: string, disTime = new Date(), conTime?: Date): void {
    const conns = this.live.get(proxyId) ?? []
    const i = conTime === undefined ? 0 : conns.findIndex((c) => c.connectedAt.getTime() === conTime.getTime())
    const conn = conns[i]
    if (!conn) return
    conns.splice(i, 1)
    if (conns.length === 0) this.live.delete(proxyId)
    const key = this.key(conn.proxy, conn.entryName)
    const n = this.adsConnections.get(key) ?? 0
    if (n > 1) {
      this.adsConnections.set(key, n - 1)
      return
    }
    this.adsConnections.delete(key)
    if (this.mode === 'tsb') {
      this.warDisconnected(conn, disTime)
      return
    }
    const entry = this.store.get(WE, conn.proxy.namespace, conn.entryName)
    if (!entry) return
    const a = entry.metadata.annotations ?? {}
    const mostRecent = parseTime(a[ANNOTATIONS.connectedAt])
    if (!Number.isNaN(mostRecent) && mostRecent > conn.connectedAt.getTime()) return
    if (a[ANNOTATIONS.controller] !== this.options.instanceId) return
    if (!Number.isNaN(mostRecent) && disTime.getTime() < mostRecent) return
    const annotations: Record<string, string> = {...a, [ANNOTATIONS.disconnectedAt]: rfc3339Nano(disTime)}
    delete annotations[ANNOTATIONS.connectedAt]
    this.store.update(WE, {...entry, metadata: {...entry.metadata, annotations}})
    this.timers.later(this.gracePeriodMs, () => this.cleanup(conn.proxy.namespace, conn.entryName))
  }

  /** shouldCleanupEntry + deleteEntry (resourceVersion precondition). */
  private cleanup(namespace: string, name: string): void {
    const entry = this.store.get(WE, namespace, name)
    if (!entry?.metadata.annotations?.[ANNOTATIONS.group]) return
    const a = entry.metadata.annotations
    if (a[ANNOTATIONS.connectedAt]) return
    const since = parseTime(a[ANNOTATIONS.disconnectedAt])
    if (Number.isNaN(since)) return
    // A timer may fire a little before the clock says the grace period is over (it counts from the
    // event loop's cached time): look again then, as istiod's periodic sweep would, instead of never.
    const left = this.gracePeriodMs - (Date.now() - since)
    if (left > 0) {
      this.timers.later(left, () => this.cleanup(namespace, name))
      return
    }
    this.deleteWithPrecondition(WE, entry)
  }

  private deleteWithPrecondition(resource: string, obj: KubeObj): void {
    const now = this.store.get(resource, obj.metadata.namespace, obj.metadata.name)
    // Precondition failed (changed since it was read): leave it, as istiod's delete gets a 409.
    if (!now || now.metadata.resourceVersion !== obj.metadata.resourceVersion) return
    this.store.delete(resource, obj.metadata.namespace, obj.metadata.name)
  }

  /** QueueWorkloadEntryHealth + updateWorkloadEntryHealth. */
  health(proxyId: string, event: {healthy: boolean; message?: string}, probeTime = new Date()): void {
    const conn = this.live.get(proxyId)?.at(-1)
    if (!conn) return
    const entry = this.store.get(WE, conn.proxy.namespace, conn.entryName)
    if (!entry) return
    if (this.mode === 'istio' && entry.metadata.annotations?.[ANNOTATIONS.controller] !== this.options.instanceId) return
    const conditions = (((entry.status as Json | undefined)?.conditions as Json[] | undefined) ?? []).filter((c) => c.type !== 'Healthy')
    const previous = (((entry.status as Json | undefined)?.conditions as Json[] | undefined) ?? []).find((c) => c.type === 'Healthy')
    if (previous && parseTime(previous.lastProbeTime as string) > probeTime.getTime()) return
    const at = probeTime.toISOString()
    const condition: Json = {type: 'Healthy', status: event.healthy ? 'True' : 'False', lastProbeTime: at, lastTransitionTime: at}
    if (!event.healthy && event.message) condition.message = event.message
    this.store.update(WE, {...entry, status: {...((entry.status as Json) ?? {}), conditions: [...conditions, condition]}})
  }

  // ---- TSB ----

  private registerWithWar(name: string, proxy: ProxyInfo, conTime: Date): void {
    const group = this.store.get(WG, proxy.namespace, proxy.autoRegisterGroup!)
    const existing = this.store.get(WAR, proxy.namespace, name)
    if (!existing && !group) {
      throw new RegistrationError('FailedPrecondition', `auto-registration WorkloadEntry of ${proxy.id} failed: cannot find WorkloadGroup ${proxy.namespace}/${proxy.autoRegisterGroup}`)
    }
    const connected = {type: 'AgentConnected', status: 'True', reason: 'AgentEstablishedConnection', lastTransitionTime: isoSeconds(conTime)}
    if (existing) {
      this.store.update(WAR, {...existing, status: {...((existing.status as Json) ?? {}), activeAgentConnection: {connectedTo: this.options.instanceId}, conditions: [connected]}})
      const we = this.store.get(WE, proxy.namespace, name)
      if (we) this.markConnected(we, conTime)
      return
    }
    const entry = workloadEntryFromGroup(name, proxy, group!)
    ensureProxyCanControlEntry(proxy, entry)
    const war = this.store.create(WAR, 'WorkloadAutoRegistration', {
      apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1',
      kind: 'WorkloadAutoRegistration',
      metadata: {name, namespace: proxy.namespace, ownerReferences: [ownerRef(group!)]},
      spec: {
        identity: {jwt: {issuer: 'https://kubernetes.default.svc.cluster.local', subject: `system:serviceaccount:${proxy.identity?.namespace}:${proxy.identity?.serviceAccount}`}},
        registration: {
          agent: {version: proxy.version ?? '1.24.2'},
          sidecar: {istio: {version: proxy.version ?? '1.24.2'}},
          host: {addresses: proxy.ips.map((ip) => ({ip, type: 'VPC'}))},
          workload: {labels: entry.metadata.labels ?? {}},
          settings: {connectedOver: 'VPC'},
        },
      },
      status: {workloadGroupSnapshot: structuredClone(group!.spec), activeAgentConnection: {connectedTo: this.options.instanceId}, conditions: [connected]},
    })
    entry.metadata.ownerReferences = [
      {apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1', kind: 'WorkloadAutoRegistration', name, uid: war.metadata.uid!, controller: true, blockOwnerDeletion: true},
    ]
    entry.metadata.annotations![ANNOTATIONS.controller] = this.options.instanceId
    entry.metadata.annotations![ANNOTATIONS.connectedAt] = rfc3339Nano(conTime)
    this.store.create(WE, 'WorkloadEntry', entry)
  }

  private warDisconnected(conn: Connection, disTime: Date): void {
    const war = this.store.get(WAR, conn.proxy.namespace, conn.entryName)
    if (!war) return
    const status: Json = {...((war.status as Json) ?? {}), conditions: [{type: 'AgentConnected', status: 'False', reason: 'AgentDisconnected', lastTransitionTime: isoSeconds(disTime)}]}
    delete status.activeAgentConnection
    const updated = this.store.update(WAR, {...war, status})
    const we = this.store.get(WE, conn.proxy.namespace, conn.entryName)
    if (we) {
      const annotations: Record<string, string> = {...we.metadata.annotations, [ANNOTATIONS.disconnectedAt]: rfc3339Nano(disTime)}
      delete annotations[ANNOTATIONS.connectedAt]
      this.store.update(WE, {...we, metadata: {...we.metadata, annotations}})
    }
    this.timers.later(this.gracePeriodMs, () => {
      const now = this.store.get(WAR, conn.proxy.namespace, conn.entryName)
      const c = ((now?.status as Json | undefined)?.conditions as Json[] | undefined)?.find((x) => x.type === 'AgentConnected')
      if (now && now.metadata.uid === updated.metadata.uid && c?.status === 'False') this.deleteWithPrecondition(WAR, now)
    })
  }

  private onStoreEvent(e: StoreEvent): void {
    if (this.mode !== 'tsb' || e.type !== 'DELETED' || e.resource !== WAR) return
    for (const conn of [...this.live.values()].map((c) => c.at(-1)!)) {
      if (conn.entryName === e.object.metadata.name && conn.proxy.namespace === e.object.metadata.namespace) {
        // The onboarding plane drops the agent's session; the agent onboards again.
        const id = conn.proxy.id
        this.timers.later(0, () => this.options.onReonboard?.(id))
      }
    }
  }

  stop(): void {
    this.unsubscribe()
    this.timers.clear()
  }
}

const isoSeconds = (d: Date) => d.toISOString().replace(/\.\d+Z$/, 'Z')

/** TSB names a registration `<group>-<identity>`; for a Kubernetes-token identity, the host name. */
export function warName(proxy: ProxyInfo): string {
  const host = proxy.id
    .slice(0, proxy.id.lastIndexOf('.'))
    .toLowerCase()
    .replace(/[^a-z0-9-]/g, '-')
  return `${proxy.autoRegisterGroup}-jwt-k8s-${host}`.slice(0, 253)
}

function ownerRef(group: KubeObj): NonNullable<KubeObj['metadata']['ownerReferences']>[number] {
  // istiod: controller: true, no blockOwnerDeletion.
  return {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: group.metadata.name, uid: group.metadata.uid!, controller: true}
}

/** workloadEntryFromGroup (1.31: plus the tunnel label for an HBONE-capable proxy) */
export function workloadEntryFromGroup(name: string, proxy: ProxyInfo, group: KubeObj, istioVersion: IstioBehaviour = '1.30'): KubeObj {
  const spec = (group.spec ?? {}) as {metadata?: {labels?: Record<string, string>; annotations?: Record<string, string>}; template?: Json}
  const entry: Json = structuredClone(spec.template ?? {})
  entry.address = proxy.ips[0]
  // node metadata > WorkloadGroup.metadata > WorkloadGroup.template
  const labels: Record<string, string> = {...((entry.labels as Record<string, string>) ?? {}), ...(spec.metadata?.labels ?? {}), ...(proxy.labels ?? {})}
  if (istioVersion === '1.31' && proxy.hbone) labels[TUNNEL_LABEL] = 'http'
  if (Object.keys(labels).length > 0 || entry.labels !== undefined) entry.labels = labels
  const annotations: Record<string, string> = {[ANNOTATIONS.group]: group.metadata.name, ...(spec.metadata?.annotations ?? {})}
  if (proxy.network) entry.network = proxy.network
  const l = proxy.locality
  if (l && (l.region || l.zone || l.subZone)) entry.locality = [l.region ?? '', l.zone ?? '', l.subZone ?? ''].join('/').replace(/\/+$/, '')
  if (proxy.readinessProbe) annotations[ANNOTATIONS.healthChecks] = 'true'
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadEntry',
    metadata: {name, namespace: proxy.namespace, ...(entry.labels ? {labels: entry.labels as Record<string, string>} : {}), annotations, ownerReferences: [ownerRef(group)]},
    spec: entry,
  }
}

/** ensureProxyCanControlEntry (PILOT_VALIDATE_WORKLOAD_ENTRY_IDENTITY, on by default). */
export function ensureProxyCanControlEntry(proxy: ProxyInfo, entry: KubeObj): void {
  const id = proxy.identity
  if (!id) throw new RegistrationError('Unknown', 'registration of WorkloadEntry requires a verified identity')
  if (id.namespace !== entry.metadata.namespace)
    throw new RegistrationError('Unknown', `registration of WorkloadEntry namespace mismatch: ${JSON.stringify(id.namespace)} vs ${JSON.stringify(entry.metadata.namespace)}`)
  const sa = (entry.spec as {serviceAccount?: string} | undefined)?.serviceAccount
  if (sa && id.serviceAccount !== sa) throw new RegistrationError('Unknown', `registration of WorkloadEntry service account mismatch: ${JSON.stringify(id.serviceAccount)} vs ${JSON.stringify(sa)}`)
}
