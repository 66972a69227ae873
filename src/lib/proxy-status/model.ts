/**
 * proxy-status's model: the xDS types, a proxy's per-type sync state as any istiod answer describes
 * it (ProxySync), the table's rows (ProxyStatusRow), and the status text of one cell. Pure.
 */
import {humanDuration} from '../output/age.js'

/** The five types istioctl shows, in istioctl 1.24's column order. */
export const XDS_TYPES = ['CDS', 'LDS', 'EDS', 'RDS', 'ECDS'] as const
export type XdsType = (typeof XDS_TYPES)[number]

export const XDS_TYPE_URLS: Record<XdsType, string> = {
  CDS: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  LDS: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  EDS: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
  RDS: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  ECDS: 'type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig',
}

/** Legacy `SyncStatus` field prefixes (`<prefix>_sent`, `<prefix>_acked`). */
export const LEGACY_FIELDS: Record<XdsType, string> = {CDS: 'cluster', LDS: 'listener', EDS: 'endpoint', RDS: 'route', ECDS: 'extensionconfig'}

/** Deprecated `ClientConfig.xdsConfig[]` oneof keys. */
export const PER_XDS_KEYS: Record<string, XdsType> = {clusterConfig: 'CDS', listenerConfig: 'LDS', endpointConfig: 'EDS', routeConfig: 'RDS'}

/**
 * Per-type state. `IGNORED`: the proxy does not watch the type. `UNKNOWN`: istiod listed the type with
 * Envoy's UNKNOWN status (ztunnel); shown as IGNORED like istioctl does. `NOT_CONNECTED`: a registered
 * VM that no istiod reports. `NO_ANSWER`: the istiod the proxy is registered with did not answer (time-out or
 * error), so its state is unknown.
 */
export type SyncState = 'SYNCED' | 'STALE' | 'NOT_SENT' | 'ERROR' | 'UNKNOWN' | 'IGNORED' | 'NOT_CONNECTED' | 'NO_ANSWER'

export interface TypeSync {
  state: SyncState
  /** The type is in the proxy's watch list (counted in istioctl 1.27+'s SUBSCRIBED TYPES). */
  subscribed: boolean
  /** Sent but no ACK ever received (legacy nonces / 1.23+ `resources` only; xDS mode cannot tell). */
  neverAcknowledged: boolean
  /** RFC 3339 time of the last push of this type, when istiod reports it (1.23+). */
  lastSent?: string
  /** The NACK's error detail, for ERROR. */
  error?: string
  /** The last nonce istiod sent / the proxy acknowledged (HTTP syncz only; xDS mode does not report them). */
  sent?: string
  acked?: string
}

export interface IstiodRef {
  /** The istiod pod name (istioctl's ISTIOD column). */
  name: string
  namespace: string
  version?: string
  revision?: string
}

export type SynczShape = 'http-legacy' | 'http-resources' | 'xds'

export interface ProxySync {
  /** `node.id`: `<pod>.<namespace>`, or `<hostname>.<namespace>` for a VM. */
  proxyId: string
  namespace?: string
  clusterId: string
  /** The proxy's ISTIO_VERSION; `<proxy_version>*` when only the legacy field is known (as istioctl). */
  proxyVersion: string
  /** Legacy `proxy_type` (`sidecar`, `router`, `ztunnel`) when reported. */
  proxyType?: string
  istiod: IstiodRef
  types: Record<XdsType, TypeSync>
  shape: SynczShape
}

export interface VmInfo {
  /** The registration name (WorkloadEntry or WorkloadAutoRegistration). */
  name: string
  namespace: string
  address: string
  health?: 'Healthy' | 'Unhealthy' | 'Unknown'
  /** Where the VM's registration comes from, e.g. `WorkloadEntry/web-10.0.0.5` or `auto`. */
  registration?: string
  connected: boolean
  /** The proxy ID istiod knows it by; defaults to `<name>.<namespace>`. */
  proxyId?: string
}

export interface ProxyStatusRow {
  /** istioctl's NAME: the proxy ID, `<pod>.<namespace>`; `*` for the placeholder row of an istiod that did not answer. */
  name: string
  namespace?: string
  cluster?: string
  /** The kubeconfig context the row was read through (set by the command). */
  context?: string
  /** `istiod`: a placeholder row standing for the unknown proxies of an istiod that did not answer (table only). */
  type: 'pod' | 'vm' | 'istiod'
  /** False for a registered VM that no istiod reports. */
  connected: boolean
  xds: Record<XdsType, TypeSync>
  /** What istioctl prints per type, ages included: `SYNCED (2m5s)`, `NOT SENT`, `STALE (Never Acknowledged)`. */
  status: Record<XdsType, string>
  /** Subscribed types in istioctl's CDS,LDS,EDS,RDS,ECDS order. */
  subscribed: XdsType[]
  /** The istiod pod name. */
  istiod?: string
  istiodRef?: IstiodRef
  /** The proxy's Istio version (istioctl's VERSION column). */
  version?: string
  address?: string
  health?: string
  registration?: string
  /** Proxy and istiod differ in major.minor. */
  versionSkew: boolean
}

/** A record over the five types, in XDS_TYPES' order. */
export function perType<V>(value: (t: XdsType) => V): Record<XdsType, V> {
  const out = {} as Record<XdsType, V>
  for (const t of XDS_TYPES) out[t] = value(t)
  return out
}

/** Every type in one state, none subscribed (a loop rather than perType's callback: once per proxy of an xDS answer). */
export function typesIn(state: SyncState): Record<XdsType, TypeSync> {
  const out = {} as Record<XdsType, TypeSync>
  for (const t of XDS_TYPES) out[t] = {state, subscribed: false, neverAcknowledged: false}
  return out
}

/**
 * The state of one type from nonces, as istiod's `debugSyncStatus` (1.24) and istioctl 1.21's
 * `xdsStatus` compute it: ERROR if the last request was a NACK, NOT_SENT if nothing was sent, SYNCED if
 * the last sent nonce was acknowledged, STALE otherwise (never acknowledged when nothing was ever ACKed).
 */
export function nonceState(sent: string | undefined, acked: string | undefined, lastError?: string): {state: SyncState; neverAcknowledged: boolean} {
  if (lastError) return {state: 'ERROR', neverAcknowledged: false}
  if (!sent) return {state: 'NOT_SENT', neverAcknowledged: false}
  if (sent === acked) return {state: 'SYNCED', neverAcknowledged: false}
  return {state: 'STALE', neverAcknowledged: !acked}
}

/**
 * What istioctl prints for one type: `IGNORED` for types the proxy does not watch (and Envoy's UNKNOWN),
 * `NOT SENT`, `STALE (Never Acknowledged)`, otherwise the state plus ` (<age since last send>)` when
 * istiod reported a send time. Ages use Kubernetes' duration.HumanDuration, like istioctl.
 */
export function xdsStatus(t: TypeSync, now: Date = new Date()): string {
  const word = STATE_WORDS[t.state]
  if (word !== undefined) return word
  if (t.state === 'STALE' && t.neverAcknowledged) return 'STALE (Never Acknowledged)'
  const at = t.lastSent === undefined ? Number.NaN : Date.parse(t.lastSent)
  return Number.isNaN(at) ? t.state : `${t.state} (${goHumanDuration(now.getTime() - at)})`
}

/** The states shown as a fixed word, without an age. */
const STATE_WORDS: Partial<Record<SyncState, string>> = {IGNORED: 'IGNORED', UNKNOWN: 'IGNORED', NOT_SENT: 'NOT SENT', NOT_CONNECTED: 'NOT CONNECTED', NO_ANSWER: 'NO ANSWER'}

/** Go's `int(d.Seconds())` truncates towards zero; humanDuration floors. Same result except in (-2s, -1s]. */
function goHumanDuration(ms: number): string {
  return humanDuration(Math.trunc(ms / 1000) * 1000)
}
