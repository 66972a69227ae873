/**
 * `istioctl proxy-status`, without the network: parse what each istiod says about its proxies
 * (`/debug/syncz`), merge in the VMs meshvm knows about, and draw istioctl's table.
 *
 * Pure: no Kubernetes client, no I/O. The command fetches one syncz body per istiod and hands it here.
 *
 * Understood input shapes (istio/istio pilot/pkg/xds/debug.go and statusgen.go, 1.20–1.28):
 * - HTTP `/debug/syncz`, Istio 1.20–1.22: a JSON array of `SyncStatus` objects with
 *   `cluster_sent`/`cluster_acked`, `listener_*`, `route_*`, `endpoint_*`, `extensionconfig_*` nonces.
 * - HTTP `/debug/syncz`, Istio 1.23+: the same array, plus a `resources` map keyed by type URL with
 *   `{sent, acked, sentTime, lastError}` per watched type (authoritative when present).
 * - xDS `istio.io/debug/syncz` (what istioctl 1.22+ asks for), as protojson: a DiscoveryResponse whose
 *   `resources` are `envoy.service.status.v3.ClientConfig`s with `genericXdsConfigs` (or the deprecated
 *   per-type `xdsConfig`).
 */
import type {ChalkInstance} from 'chalk'
import {MeshvmError} from '../errors.js'
import {humanDuration} from '../output/age.js'
import {makeChalk, statusColor} from '../output/color.js'
import {renderTable, type Column} from '../output/table.js'
import {withoutUndefined} from '../util/records.js'

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
const LEGACY_FIELDS: Record<XdsType, string> = {
  CDS: 'cluster',
  LDS: 'listener',
  EDS: 'endpoint',
  RDS: 'route',
  ECDS: 'extensionconfig',
}

/** Deprecated `ClientConfig.xdsConfig[]` oneof keys. */
const PER_XDS_KEYS: Record<string, XdsType> = {
  clusterConfig: 'CDS',
  listenerConfig: 'LDS',
  endpointConfig: 'EDS',
  routeConfig: 'RDS',
}

const CLIENT_CONFIG_TYPE = 'type.googleapis.com/envoy.service.status.v3.ClientConfig'

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

// ---------------------------------------------------------------------------------------------------
// Status logic
// ---------------------------------------------------------------------------------------------------

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
  switch (t.state) {
    case 'IGNORED':
    case 'UNKNOWN':
      return 'IGNORED'
    case 'NOT_SENT':
      return 'NOT SENT'
    case 'NOT_CONNECTED':
      return 'NOT CONNECTED'
    case 'NO_ANSWER':
      return 'NO ANSWER'
    default: {
      if (t.state === 'STALE' && t.neverAcknowledged) return 'STALE (Never Acknowledged)'
      const at = t.lastSent === undefined ? Number.NaN : Date.parse(t.lastSent)
      return Number.isNaN(at) ? t.state : `${t.state} (${goHumanDuration(now.getTime() - at)})`
    }
  }
}

/** Go's `int(d.Seconds())` truncates towards zero; humanDuration floors. Same result except in (-2s, -1s]. */
function goHumanDuration(ms: number): string {
  return humanDuration(Math.trunc(ms / 1000) * 1000)
}

// ---------------------------------------------------------------------------------------------------
// Parsing
// ---------------------------------------------------------------------------------------------------

type Json = Record<string, unknown>

function isObject(v: unknown): v is Json {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}

function kindOf(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'an array'
  return typeof v === 'object' ? 'an object' : `a ${typeof v}`
}

class SynczError extends MeshvmError {
  constructor(istiod: IstiodRef, problem: string) {
    super(`istiod ${istiod.namespace}/${istiod.name}: unreadable /debug/syncz response: ${problem}`, {
      code: 'InvalidSyncz',
      hints: ['check that the pod is an istiod of Istio 1.20 or later; --revision and --istio-namespace pick other istiod pods'],
    })
    this.name = 'SynczError'
  }
}

/** Go's zero time (`0001-01-01T00:00:00Z`) means "never" in istiod's JSON. */
function timestamp(v: unknown): string | undefined {
  if (typeof v !== 'string' || v === '' || v.startsWith('0001-01-01')) return undefined
  return Number.isNaN(Date.parse(v)) ? undefined : v
}

/** Where in a syncz answer a value is: an item by index, its proxy, and a resource type. */
type SynczPlace = number | {index: number; proxyId: string; typeUrl?: string}

function where(place: SynczPlace): string {
  if (typeof place === 'number') return `item ${place}`
  return `item ${place.index} (${place.proxyId})${place.typeUrl ? `: resources["${place.typeUrl}"]` : ''}`
}

function optString(obj: Json, key: string, place: SynczPlace): string | undefined {
  const v = obj[key]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw new Error(`${where(place)}: "${key}" must be a string, got ${kindOf(v)}`)
  return v
}

/** `optString` for one type's entry in `resources`, without building its place unless it fails (5 per proxy). */
function resourceString(r: Json, key: string, index: number, proxyId: string, typeUrl: string): string | undefined {
  const v = r[key]
  if (v === undefined || v === null || typeof v === 'string') return v ?? undefined
  return optString(r, key, {index, proxyId, typeUrl})
}

function ignoredTypes(): Record<XdsType, TypeSync> {
  const out = {} as Record<XdsType, TypeSync>
  for (const t of XDS_TYPES) out[t] = {state: 'IGNORED', subscribed: false, neverAcknowledged: false}
  return out
}

function namespaceOf(proxyId: string): string | undefined {
  const i = proxyId.lastIndexOf('.')
  return i > 0 && i < proxyId.length - 1 ? proxyId.slice(i + 1) : undefined
}

/**
 * Reads one istiod's syncz answer (any of the three shapes, as a parsed value or the raw body text).
 * Throws a MeshvmError naming the istiod when the body is not a syncz answer.
 */
export function parseSyncz(json: unknown, istiod: IstiodRef): ProxySync[] {
  let value = json
  if (typeof value === 'string') {
    try {
      value = JSON.parse(value) as unknown
    } catch {
      throw new SynczError(istiod, 'not JSON')
    }
  }
  try {
    if (Array.isArray(value)) return value.map((item, i) => parseHttpItem(item, i, istiod))
    if (isObject(value) && (Array.isArray(value.resources) || 'controlPlane' in value || value.typeUrl !== undefined)) {
      return parseDiscoveryResponse(value, istiod)
    }
  } catch (err) {
    if (err instanceof SynczError) throw err
    throw new SynczError(istiod, (err as Error).message)
  }
  throw new SynczError(istiod, `expected a JSON array (HTTP /debug/syncz) or a DiscoveryResponse with resources (xDS istio.io/debug/syncz), got ${kindOf(value)}`)
}

function parseHttpItem(item: unknown, index: number, istiod: IstiodRef): ProxySync {
  // Messages are built only on failure: this runs for every proxy of every istiod.
  if (!isObject(item)) throw new Error(`item ${index} must be an object, got ${kindOf(item)}`)
  const proxyId = optString(item, 'proxy', index)
  if (!proxyId) throw new Error(`item ${index} has no "proxy"`)
  const at = {index, proxyId}
  const istioVersion = optString(item, 'istio_version', at)
  const proxyVersion = optString(item, 'proxy_version', at)
  const proxyType = optString(item, 'proxy_type', at)
  const resources = item.resources
  let types: Record<XdsType, TypeSync>
  let shape: SynczShape
  if (resources !== undefined && resources !== null) {
    if (!isObject(resources)) throw new Error(`${where(at)}: "resources" must be an object keyed by type URL, got ${kindOf(resources)}`)
    shape = 'http-resources'
    types = ignoredTypes()
    for (const t of XDS_TYPES) {
      const typeUrl = XDS_TYPE_URLS[t]
      const r = resources[typeUrl]
      if (r === undefined || r === null) continue
      if (!isObject(r)) throw new Error(`${where({index, proxyId, typeUrl})} must be an object, got ${kindOf(r)}`)
      const lastError = resourceString(r, 'lastError', index, proxyId, typeUrl)
      const sent = resourceString(r, 'sent', index, proxyId, typeUrl)
      const acked = resourceString(r, 'acked', index, proxyId, typeUrl)
      const {state, neverAcknowledged} = nonceState(sent, acked, lastError)
      types[t] = withNonces(withOptional({state, subscribed: true, neverAcknowledged}, timestamp(r.sentTime), lastError), sent, acked)
    }
  } else {
    shape = 'http-legacy'
    types = {} as Record<XdsType, TypeSync>
    for (const t of XDS_TYPES) {
      const sent = optString(item, `${LEGACY_FIELDS[t]}_sent`, at)
      const acked = optString(item, `${LEGACY_FIELDS[t]}_acked`, at)
      const {state, neverAcknowledged} = nonceState(sent, acked)
      // istioctl 1.21: nothing sent to a ztunnel is IGNORED rather than NOT SENT.
      types[t] = withNonces(state === 'NOT_SENT' && proxyType === 'ztunnel' ? {state: 'IGNORED', subscribed: false, neverAcknowledged} : {state, subscribed: Boolean(sent), neverAcknowledged}, sent, acked)
    }
  }
  return {
    proxyId,
    namespace: namespaceOf(proxyId),
    clusterId: optString(item, 'cluster_id', at) ?? '',
    // istioctl falls back to the proxy version, marked with `*`.
    proxyVersion: istioVersion || (proxyVersion === undefined ? '' : `${proxyVersion}*`),
    ...(proxyType ? {proxyType} : {}),
    // Shared by every proxy of this istiod (never mutated).
    istiod,
    types,
    shape,
  }
}

function withOptional(t: TypeSync, lastSent: string | undefined, error: string | undefined): TypeSync {
  if (lastSent !== undefined) t.lastSent = lastSent
  if (error) t.error = error
  return t
}

function withNonces(t: TypeSync, sent: string | undefined, acked: string | undefined): TypeSync {
  if (sent) t.sent = sent
  if (acked) t.acked = acked
  return t
}

const CONFIG_STATUS: Record<string, SyncState> = {
  UNKNOWN: 'UNKNOWN',
  SYNCED: 'SYNCED',
  NOT_SENT: 'NOT_SENT',
  STALE: 'STALE',
  ERROR: 'ERROR',
}
const CONFIG_STATUS_NUMBERS: SyncState[] = ['UNKNOWN', 'SYNCED', 'NOT_SENT', 'STALE', 'ERROR']

function configStatus(v: unknown, where: string): SyncState {
  // protojson omits UNKNOWN (0); some encoders write enum numbers.
  if (v === undefined || v === null) return 'UNKNOWN'
  if (typeof v === 'number' && CONFIG_STATUS_NUMBERS[v]) return CONFIG_STATUS_NUMBERS[v]
  if (typeof v === 'string' && CONFIG_STATUS[v]) return CONFIG_STATUS[v]
  throw new Error(`${where}: unknown config status ${JSON.stringify(v)}`)
}

/** istioctl's `CpInfo`: the istiod ID and build info from `controlPlane.identifier`. */
function controlPlane(dr: Json, istiod: IstiodRef): IstiodRef {
  const cp = dr.controlPlane
  if (!isObject(cp) || typeof cp.identifier !== 'string') return {...istiod}
  try {
    const id = JSON.parse(cp.identifier) as unknown
    if (!isObject(id)) return {...istiod}
    const info = isObject(id.Info) ? id.Info : {}
    const out: IstiodRef = {...istiod}
    if (typeof id.ID === 'string' && id.ID !== '') out.name = id.ID
    if (typeof info.version === 'string' && info.version !== '') out.version = info.version
    if (typeof info.revision === 'string' && info.revision !== '' && out.revision === undefined) out.revision = info.revision
    return out
  } catch {
    return {...istiod}
  }
}

function parseDiscoveryResponse(dr: Json, istiod: IstiodRef): ProxySync[] {
  const cp = controlPlane(dr, istiod)
  const resources = dr.resources ?? []
  if (!Array.isArray(resources)) throw new Error(`"resources" must be an array, got ${kindOf(resources)}`)
  const out: ProxySync[] = []
  resources.forEach((res: unknown, index) => {
    const where = `resources[${index}]`
    if (!isObject(res)) throw new Error(`${where} must be an object, got ${kindOf(res)}`)
    const type = res['@type']
    if (type !== undefined && type !== CLIENT_CONFIG_TYPE) return // istioctl skips other types
    const node = isObject(res.node) ? res.node : {}
    const proxyId = typeof node.id === 'string' ? node.id : ''
    if (!proxyId) throw new Error(`${where} has no node.id`)
    const metadata = isObject(node.metadata) ? node.metadata : {}
    const meta = (k: string) => (typeof metadata[k] === 'string' ? (metadata[k] as string) : undefined)
    const types = ignoredTypes()
    const generic = res.genericXdsConfigs ?? []
    if (!Array.isArray(generic)) throw new Error(`${where}.genericXdsConfigs must be an array, got ${kindOf(generic)}`)
    generic.forEach((g: unknown, gi) => {
      const gw = `${where}.genericXdsConfigs[${gi}]`
      if (!isObject(g)) throw new Error(`${gw} must be an object, got ${kindOf(g)}`)
      const t = XDS_TYPES.find((x) => XDS_TYPE_URLS[x] === g.typeUrl)
      if (!t) return // e.g. the DNS NameTable: istioctl ignores it
      const state = configStatus(g.configStatus, gw)
      const errorState = isObject(g.errorState) ? g.errorState : undefined
      const details = errorState && typeof errorState.details === 'string' ? errorState.details : undefined
      // UNKNOWN is what istiod reports for a type a ztunnel does not watch: not subscribed.
      types[t] = withOptional({state, subscribed: state !== 'UNKNOWN', neverAcknowledged: false}, timestamp(g.lastUpdated), state === 'ERROR' ? details : undefined)
    })
    const legacy = res.xdsConfig ?? []
    if (Array.isArray(legacy)) {
      for (const x of legacy) {
        if (!isObject(x)) continue
        const key = Object.keys(PER_XDS_KEYS).find((k) => k in x)
        if (!key) continue
        const t = PER_XDS_KEYS[key]!
        if (generic.length > 0) break // genericXdsConfigs wins, as in istioctl
        const state = configStatus(x.status, `${where}.xdsConfig`)
        types[t] = {state, subscribed: state !== 'UNKNOWN', neverAcknowledged: false}
      }
    }
    const namespace = meta('NAMESPACE') ?? namespaceOf(proxyId)
    out.push({
      proxyId,
      ...(namespace ? {namespace} : {}),
      clusterId: meta('CLUSTER_ID') ?? '',
      proxyVersion: meta('ISTIO_VERSION') ?? '',
      istiod: cp,
      types,
      shape: 'xds',
    })
  })
  return out
}

// ---------------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------------

/** `1.24.2` → `1.24`; `1.1*`, `v1.20-dev` also work. Undefined when not a version. */
export function majorMinor(version: string | undefined): string | undefined {
  const m = /^v?(\d+)\.(\d+)/.exec(version ?? '')
  return m ? `${Number(m[1])}.${Number(m[2])}` : undefined
}

export function isVersionSkewed(proxyVersion: string | undefined, istiodVersion: string | undefined): boolean {
  const a = majorMinor(proxyVersion)
  const b = majorMinor(istiodVersion)
  return a !== undefined && b !== undefined && a !== b
}

/** isVersionSkewed for many rows: a mesh has a handful of distinct versions, so each pair is computed once. */
function skewChecker(): (proxyVersion: string | undefined, istiodVersion: string | undefined) => boolean {
  const known = new Map<string, boolean>()
  return (proxyVersion, istiodVersion) => {
    const key = `${proxyVersion ?? ''}\n${istiodVersion ?? ''}`
    let skewed = known.get(key)
    if (skewed === undefined) {
      skewed = isVersionSkewed(proxyVersion, istiodVersion)
      known.set(key, skewed)
    }
    return skewed
  }
}

export interface RowOptions {
  vms?: VmInfo[]
  /** The clock for ages; pass a fixed one in tests. */
  now?: Date
}

function vmKey(vm: VmInfo): string {
  return vm.proxyId ?? `${vm.name}.${vm.namespace}`
}

/** Byte order, like Go's string comparison in istioctl's sort. */
function compare(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/**
 * One row per proxy per istiod (a proxy reported by two istiods shows twice, as in istioctl), plus one
 * `NOT CONNECTED` row for every VM no istiod reports. Sorted by name, then istiod.
 */
export function proxyStatusRows(syncs: ProxySync[], options: RowOptions = {}): ProxyStatusRow[] {
  const now = options.now ?? new Date()
  const vms = new Map<string, VmInfo>()
  for (const vm of options.vms ?? []) if (!vms.has(vmKey(vm))) vms.set(vmKey(vm), vm)
  const seen = new Set<string>()
  const rows: ProxyStatusRow[] = []
  const skewed = skewChecker()
  for (const s of syncs) {
    const vm = vms.get(s.proxyId)
    if (vm) seen.add(s.proxyId)
    const status = {} as Record<XdsType, string>
    const subscribed: XdsType[] = []
    for (const t of XDS_TYPES) {
      const x = s.types[t]
      status[t] = xdsStatus(x, now)
      if (x.subscribed) subscribed.push(t)
    }
    // Built field by field rather than copied through withoutUndefined: this runs once per proxy.
    const row: ProxyStatusRow = {
      name: s.proxyId, type: vm ? 'vm' : 'pod', connected: true, xds: s.types, status, subscribed,
      cluster: s.clusterId, istiod: s.istiod.name, istiodRef: s.istiod, version: s.proxyVersion,
      versionSkew: skewed(s.proxyVersion, s.istiod.version),
    }
    const namespace = s.namespace ?? vm?.namespace
    if (namespace !== undefined) row.namespace = namespace
    if (vm) {
      if (vm.address !== undefined) row.address = vm.address
      if (vm.health !== undefined) row.health = vm.health
      if (vm.registration !== undefined) row.registration = vm.registration
    }
    rows.push(row)
  }
  for (const [key, vm] of vms) {
    if (seen.has(key)) continue
    const xds = {} as Record<XdsType, TypeSync>
    const status = {} as Record<XdsType, string>
    for (const t of XDS_TYPES) {
      xds[t] = {state: 'NOT_CONNECTED', subscribed: false, neverAcknowledged: false}
      status[t] = 'NOT CONNECTED'
    }
    rows.push(
      withoutUndefined<ProxyStatusRow>({
        name: key,
        namespace: vm.namespace,
        type: 'vm',
        connected: false,
        xds,
        status,
        subscribed: [],
        address: vm.address,
        health: vm.health,
        registration: vm.registration,
        versionSkew: false,
      }),
    )
  }
  return rows.sort((a, b) => compare(a.name, b.name) || compare(a.istiod ?? '', b.istiod ?? ''))
}


// ---------------------------------------------------------------------------------------------------
// Table
// ---------------------------------------------------------------------------------------------------

/**
 * - `types` (default): istioctl 1.22–1.26, `NAME CLUSTER CDS LDS EDS RDS ECDS ISTIOD VERSION`.
 * - `subscribed`: istioctl 1.27+'s default, `NAME CLUSTER ISTIOD VERSION SUBSCRIBED TYPES`.
 * - `verbose`: istioctl 1.27+'s `-v`, per-type columns in alphabetical order (`CDS ECDS EDS LDS RDS`).
 */
export type ProxyStatusLayout = 'types' | 'subscribed' | 'verbose'

export interface ProxyStatusTableOptions {
  /** Adds TYPE ADDRESS HEALTH REGISTRATION, and marks version skew in VERSION. */
  wide?: boolean
  /** A CONTEXT column after VERSION (several kubeconfig contexts in one table: clusters may share a cluster ID). */
  context?: boolean
  /**
   * Cells to highlight (`--watch`: what changed since the last frame), by row and column header. With
   * colour they are shown in inverse video; without, prefixed with `*`.
   */
  changed?: (row: ProxyStatusRow, header: string) => boolean
  color: boolean
  layout?: ProxyStatusLayout
  noHeaders?: boolean
  /** A chalk to use instead of one made from `color` (e.g. the command's `chalkFor(format)`). */
  chalk?: ChalkInstance
}

/** istioctl's tabwriter: padding 5, no padding after the last column. */
const ISTIOCTL_GAP = 5
const EMPTY = '-'

const ALPHABETICAL_TYPES: XdsType[] = [...XDS_TYPES].sort(compare)

function subscribedCell(row: ProxyStatusRow): string {
  if (!row.connected) return row.xds.CDS.state === 'NO_ANSWER' ? 'NO ANSWER' : 'NOT CONNECTED'
  return row.subscribed.length === 0 ? '0' : `${row.subscribed.length} (${row.subscribed.join(',')})`
}

export function renderProxyStatusTable(rows: ProxyStatusRow[], options: ProxyStatusTableOptions): string {
  const chalk = options.chalk ?? makeChalk({env: {FORCE_COLOR: options.color ? '1' : '0'}, stream: {isTTY: options.color}})
  const paint = (text: string) => statusColor(chalk, text)
  const layout = options.layout ?? 'types'
  const text = (v: string | undefined) => (v === undefined || v === '' ? EMPTY : v)
  const typeColumns = (types: readonly XdsType[]): Column<ProxyStatusRow>[] =>
    types.map((t) => ({header: t, value: (r) => r.status[t], color: paint}))

  const name: Column<ProxyStatusRow> = {header: 'NAME', value: (r) => r.name}
  const cluster: Column<ProxyStatusRow> = {header: 'CLUSTER', value: (r) => (r.connected ? (r.cluster ?? '') : EMPTY)}
  // A row whose istiod did not answer (NO ANSWER) still names that istiod.
  const istiod: Column<ProxyStatusRow> = {header: 'ISTIOD', value: (r) => (r.connected ? (r.istiod ?? '') : (r.istiod ?? EMPTY))}
  const skew = (r: ProxyStatusRow) => options.wide === true && r.versionSkew && r.istiodRef?.version !== undefined
  const version: Column<ProxyStatusRow> = {
    header: 'VERSION',
    value: (r) => (r.connected ? (r.version ?? '') + (skew(r) ? ` (skew: istiod ${r.istiodRef!.version})` : '') : EMPTY),
    color: (s, r) => (skew(r) ? chalk.yellow(s) : s),
  }
  const wide: Column<ProxyStatusRow>[] = [
    ...(options.context ? [{header: 'CONTEXT', value: (r: ProxyStatusRow) => text(r.context)}] : []),
    {header: 'TYPE', wide: true, value: (r) => r.type},
    {header: 'ADDRESS', wide: true, value: (r) => text(r.address)},
    {header: 'HEALTH', wide: true, value: (r) => text(r.health), color: paint},
    {header: 'REGISTRATION', wide: true, value: (r) => text(r.registration)},
  ]

  let columns: Column<ProxyStatusRow>[]
  if (layout === 'subscribed') {
    columns = [name, cluster, istiod, version, {header: 'SUBSCRIBED TYPES', value: subscribedCell, color: (s, r) => (r.connected ? s : paint(s))}, ...wide]
  } else {
    columns = [name, cluster, ...typeColumns(layout === 'verbose' ? ALPHABETICAL_TYPES : XDS_TYPES), istiod, version, ...wide]
  }
  const changed = options.changed
  if (changed) columns = columns.map((c) => highlighted(c, changed, chalk))
  return renderTable(rows, columns, {wide: options.wide, noHeaders: options.noHeaders, gap: ISTIOCTL_GAP})
}

/** Inverse video on a colour terminal, a `*` prefix otherwise (widths are measured without ANSI codes). */
function highlighted(c: Column<ProxyStatusRow>, changed: (row: ProxyStatusRow, header: string) => boolean, chalk: ChalkInstance): Column<ProxyStatusRow> {
  const paint = c.color
  if (chalk.level > 0) {
    return {
      ...c,
      color: (s, r) => {
        const painted = paint ? paint(s, r) : s
        return changed(r, c.header) ? chalk.inverse(painted) : painted
      },
    }
  }
  return {...c, value: (r) => (changed(r, c.header) ? '*' : '') + c.value(r)}
}

// ---------------------------------------------------------------------------------------------------
// JSON
// ---------------------------------------------------------------------------------------------------

/**
 * `meshvm proxy-status -o json|yaml`, schema `meshvm.io/v1alpha1` `ProxyStatusList`. Every key is always
 * present (null when unknown); items are in table order; no ages (they depend on the clock), only times.
 *
 * ```
 * {
 *   apiVersion: 'meshvm.io/v1alpha1',
 *   kind: 'ProxyStatusList',
 *   items: [{
 *     name: string,                 // proxy ID: `<pod>.<namespace>` or `<hostname>.<namespace>`
 *     namespace: string | null,
 *     type: 'pod' | 'vm',
 *     connected: boolean,           // false: a registered VM that no istiod reports (or whose istiod did not answer)
 *     cluster: string | null,       // CLUSTER_ID
 *     context: string | null,       // the kubeconfig context it was read through
 *     version: string | null,       // the proxy's Istio version (`1.1*` = legacy proxy_version fallback)
 *     istiod: {name: string, namespace: string, version: string | null, revision: string | null} | null,
 *     versionSkew: boolean,         // proxy and istiod differ in major.minor
 *     xds: {                        // keys CDS, LDS, EDS, RDS, ECDS
 *       [type]: {
 *         status: 'SYNCED' | 'STALE' | 'NOT_SENT' | 'ERROR' | 'IGNORED' | 'NOT_CONNECTED' | 'NO_ANSWER',
 *         subscribed: boolean,      // in the proxy's watch list
 *         neverAcknowledged: boolean,
 *         lastSent: string | null,  // RFC 3339
 *         error: string | null,     // NACK detail
 *         nonceSent: string | null, // HTTP syncz only
 *         nonceAcked: string | null,
 *       }
 *     },
 *     vm: {address: string, health: 'Healthy' | 'Unhealthy' | 'Unknown' | null, registration: string | null} | null,
 *   }],
 *   errors: [{context: string | null, istiod: string | null, message: string}],  // what could not be read
 * }
 * ```
 * Placeholder rows (`type: 'istiod'`) are table-only: in JSON the failure is in `errors`.
 */
export interface ProxyStatusJsonItem {
  name: string
  namespace: string | null
  type: 'pod' | 'vm'
  connected: boolean
  cluster: string | null
  context: string | null
  version: string | null
  istiod: {name: string; namespace: string; version: string | null; revision: string | null} | null
  versionSkew: boolean
  xds: Record<
    XdsType,
    {status: Exclude<SyncState, 'UNKNOWN'>; subscribed: boolean; neverAcknowledged: boolean; lastSent: string | null; error: string | null; nonceSent: string | null; nonceAcked: string | null}
  >
  vm: {address: string; health: string | null; registration: string | null} | null
}

export interface ProxyStatusError {
  context: string | null
  /** The istiod pod, when the failure was one istiod's. */
  istiod: string | null
  message: string
}

export interface ProxyStatusList {
  apiVersion: 'meshvm.io/v1alpha1'
  kind: 'ProxyStatusList'
  items: ProxyStatusJsonItem[]
  errors: ProxyStatusError[]
}

const orNull = (v: string | undefined) => (v === undefined || v === '' ? null : v)

/** One row in the JSON schema above. */
export function proxyStatusJsonItem(r: ProxyStatusRow): ProxyStatusJsonItem {
  const xds = {} as ProxyStatusJsonItem['xds']
  for (const t of XDS_TYPES) {
    const x = r.xds[t]
    xds[t] = {
      status: x.state === 'UNKNOWN' ? 'IGNORED' : x.state,
      subscribed: x.subscribed,
      neverAcknowledged: x.neverAcknowledged,
      lastSent: x.lastSent ?? null,
      error: x.error ?? null,
      nonceSent: x.sent ?? null,
      nonceAcked: x.acked ?? null,
    }
  }
  const ref = r.istiodRef
  return {
    name: r.name,
    namespace: orNull(r.namespace),
    type: r.type === 'vm' ? 'vm' : 'pod',
    connected: r.connected,
    cluster: orNull(r.cluster),
    context: orNull(r.context),
    version: orNull(r.version),
    istiod: ref ? {name: ref.name, namespace: ref.namespace, version: orNull(ref.version), revision: orNull(ref.revision)} : null,
    versionSkew: r.versionSkew,
    xds,
    vm: r.type === 'vm' ? {address: r.address ?? '', health: orNull(r.health), registration: orNull(r.registration)} : null,
  }
}

export function proxyStatusJson(rows: ProxyStatusRow[], errors: ProxyStatusError[] = []): ProxyStatusList {
  return {
    apiVersion: 'meshvm.io/v1alpha1',
    kind: 'ProxyStatusList',
    items: rows.filter((r) => r.type !== 'istiod').map(proxyStatusJsonItem),
    errors,
  }
}
