/**
 * Parsing what one istiod says about its proxies into ProxySyncs. Pure: the bytes come from
 * src/lib/istiod (HTTP over port-forward, or xDS decoded to protojson's shape).
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
import {MeshvmError} from '../errors.js'
import {CLIENT_CONFIG_TYPE, CONFIG_STATUS} from '../grpc/xds-types.js'
import {isRecord, type JsonRecord} from '../util/records.js'
import {LEGACY_FIELDS, nonceState, perType, PER_XDS_KEYS, typesIn, XDS_TYPE_URLS, XDS_TYPES} from './model.js'
import type {IstiodRef, ProxySync, SynczShape, SyncState, TypeSync, XdsType} from './model.js'

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

/** The last text timestamp() checked: a proxy's types are usually pushed together, with one send time. */
let lastTimestamp: string | undefined

/** Go's zero time (`0001-01-01T00:00:00Z`) means "never" in istiod's JSON. */
function timestamp(v: unknown): string | undefined {
  if (typeof v !== 'string' || v === '' || v.startsWith('0001-01-01')) return undefined
  if (v === lastTimestamp) return v
  if (Number.isNaN(Date.parse(v))) return undefined
  lastTimestamp = v
  return v
}

/** Where in a syncz answer a value is: an item by index, its proxy, and a resource type. */
type SynczPlace = number | {index: number; proxyId: string; typeUrl?: string}

function where(place: SynczPlace): string {
  if (typeof place === 'number') return `item ${place}`
  return `item ${place.index} (${place.proxyId})${place.typeUrl ? `: resources["${place.typeUrl}"]` : ''}`
}

function optString(obj: JsonRecord, key: string, place: SynczPlace): string | undefined {
  const v = obj[key]
  if (v === undefined || v === null) return undefined
  if (typeof v !== 'string') throw new Error(`${where(place)}: "${key}" must be a string, got ${kindOf(v)}`)
  return v
}

/** `optString` for one type's entry in `resources`, without building its place unless it fails (5 per proxy). */
function resourceString(r: JsonRecord, key: string, index: number, proxyId: string, typeUrl: string): string | undefined {
  const v = r[key]
  if (v === undefined || v === null || typeof v === 'string') return v ?? undefined
  return optString(r, key, {index, proxyId, typeUrl})
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
  let value: unknown
  try {
    value = typeof json === 'string' ? JSON.parse(json) : json
  } catch {
    throw new SynczError(istiod, 'not JSON')
  }
  try {
    if (Array.isArray(value)) return value.map((item, i) => parseHttpItem(item, i, istiod))
    if (isRecord(value) && (Array.isArray(value.resources) || 'controlPlane' in value || value.typeUrl !== undefined)) {
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
  if (!isRecord(item)) throw new Error(`item ${index} must be an object, got ${kindOf(item)}`)
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
    if (!isRecord(resources)) throw new Error(`${where(at)}: "resources" must be an object keyed by type URL, got ${kindOf(resources)}`)
    shape = 'http-resources'
    // One literal with every type (one object shape for all proxies), each type made once.
    types = {
      CDS: resourceSync(resources, 'CDS', index, proxyId),
      LDS: resourceSync(resources, 'LDS', index, proxyId),
      EDS: resourceSync(resources, 'EDS', index, proxyId),
      RDS: resourceSync(resources, 'RDS', index, proxyId),
      ECDS: resourceSync(resources, 'ECDS', index, proxyId),
    }
  } else {
    shape = 'http-legacy'
    types = perType((t) => {
      const sent = optString(item, `${LEGACY_FIELDS[t]}_sent`, at)
      const acked = optString(item, `${LEGACY_FIELDS[t]}_acked`, at)
      const {state, neverAcknowledged} = nonceState(sent, acked)
      // istioctl 1.21: nothing sent to a ztunnel is IGNORED rather than NOT SENT. Nonces alone cannot tell
      // an unwatched type from one not sent yet: the type counts as subscribed, as istioctl 1.27+ counts
      // the NOT_SENT that istiod's xDS syncz reports for it.
      return withNonces(state === 'NOT_SENT' && proxyType === 'ztunnel' ? {state: 'IGNORED', subscribed: false, neverAcknowledged} : {state, subscribed: true, neverAcknowledged}, sent, acked)
    })
  }
  const sync: ProxySync = {
    proxyId,
    namespace: namespaceOf(proxyId),
    clusterId: optString(item, 'cluster_id', at) ?? '',
    // istioctl falls back to the proxy version, marked with `*`.
    proxyVersion: istioVersion || (proxyVersion === undefined ? '' : `${proxyVersion}*`),
    // Shared by every proxy of this istiod (never mutated).
    istiod,
    types,
    shape,
  }
  // Assigned rather than spread into the literal: a spread takes V8's slow copy path, once per proxy.
  if (proxyType) sync.proxyType = proxyType
  return sync
}

/** One type of a 1.23+ `resources` map; IGNORED when the proxy does not watch it. */
function resourceSync(resources: JsonRecord, t: XdsType, index: number, proxyId: string): TypeSync {
  const typeUrl = XDS_TYPE_URLS[t]
  const r = resources[typeUrl]
  if (r === undefined || r === null) return {state: 'IGNORED', subscribed: false, neverAcknowledged: false}
  if (!isRecord(r)) throw new Error(`${where({index, proxyId, typeUrl})} must be an object, got ${kindOf(r)}`)
  const lastError = resourceString(r, 'lastError', index, proxyId, typeUrl)
  const sent = resourceString(r, 'sent', index, proxyId, typeUrl)
  const acked = resourceString(r, 'acked', index, proxyId, typeUrl)
  const {state, neverAcknowledged} = nonceState(sent, acked, lastError)
  return withNonces(withOptional({state, subscribed: true, neverAcknowledged}, timestamp(r.sentTime), lastError), sent, acked)
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

function configStatus(v: unknown, where: string): SyncState {
  // protojson omits UNKNOWN (0); some encoders write enum numbers.
  if (v === undefined || v === null) return 'UNKNOWN'
  if (typeof v === 'number' && CONFIG_STATUS[v]) return CONFIG_STATUS[v]
  if (typeof v === 'string' && (CONFIG_STATUS as readonly string[]).includes(v)) return v as SyncState
  throw new Error(`${where}: unknown config status ${JSON.stringify(v)}`)
}

/** istioctl's `CpInfo`: the istiod ID and build info from `controlPlane.identifier`. */
function controlPlane(dr: JsonRecord, istiod: IstiodRef): IstiodRef {
  const cp = dr.controlPlane
  if (!isRecord(cp) || typeof cp.identifier !== 'string') return {...istiod}
  try {
    const id = JSON.parse(cp.identifier) as unknown
    if (!isRecord(id)) return {...istiod}
    const info = isRecord(id.Info) ? id.Info : {}
    const out: IstiodRef = {...istiod}
    if (typeof id.ID === 'string' && id.ID !== '') out.name = id.ID
    if (typeof info.version === 'string' && info.version !== '') out.version = info.version
    // Info.revision is the build's git commit (istio pkg/version BuildInfo.GitRevision), not the
    // control-plane revision: the revision comes from the pod's istio.io/rev label or --revision.
    return out
  } catch {
    return {...istiod}
  }
}

function parseDiscoveryResponse(dr: JsonRecord, istiod: IstiodRef): ProxySync[] {
  const cp = controlPlane(dr, istiod)
  const resources = dr.resources ?? []
  if (!Array.isArray(resources)) throw new Error(`"resources" must be an array, got ${kindOf(resources)}`)
  const out: ProxySync[] = []
  resources.forEach((res: unknown, index) => {
    const where = `resources[${index}]`
    if (!isRecord(res)) throw new Error(`${where} must be an object, got ${kindOf(res)}`)
    const type = res['@type']
    if (type !== undefined && type !== CLIENT_CONFIG_TYPE) return // istioctl skips other types
    const node = isRecord(res.node) ? res.node : {}
    const proxyId = typeof node.id === 'string' ? node.id : ''
    if (!proxyId) throw new Error(`${where} has no node.id`)
    const metadata = isRecord(node.metadata) ? node.metadata : {}
    const meta = (k: string) => (typeof metadata[k] === 'string' ? (metadata[k] as string) : undefined)
    const types = typesIn('IGNORED')
    const generic = res.genericXdsConfigs ?? []
    if (!Array.isArray(generic)) throw new Error(`${where}.genericXdsConfigs must be an array, got ${kindOf(generic)}`)
    generic.forEach((g: unknown, gi) => {
      const gw = `${where}.genericXdsConfigs[${gi}]`
      if (!isRecord(g)) throw new Error(`${gw} must be an object, got ${kindOf(g)}`)
      const t = XDS_TYPES.find((x) => XDS_TYPE_URLS[x] === g.typeUrl)
      if (!t) return // e.g. the DNS NameTable: istioctl ignores it
      const state = configStatus(g.configStatus, gw)
      const errorState = isRecord(g.errorState) ? g.errorState : undefined
      const details = errorState && typeof errorState.details === 'string' ? errorState.details : undefined
      // UNKNOWN is what istiod reports for a type a ztunnel does not watch: not subscribed.
      types[t] = withOptional({state, subscribed: state !== 'UNKNOWN', neverAcknowledged: false}, timestamp(g.lastUpdated), state === 'ERROR' ? details : undefined)
    })
    const legacy = res.xdsConfig ?? []
    if (Array.isArray(legacy)) {
      for (const x of legacy) {
        if (!isRecord(x)) continue
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
