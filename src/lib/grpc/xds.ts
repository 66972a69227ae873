/**
 * Protobuf wire codec for the few xDS messages meshvm exchanges with istiod, on
 * @bufbuild/protobuf's BinaryReader/BinaryWriter. Field numbers are those of the Envoy API:
 * - envoy/service/discovery/v3/discovery.proto: DiscoveryRequest, DiscoveryResponse;
 * - envoy/config/core/v3/base.proto: Node (id 1, cluster 2, metadata 3, user_agent_name 6), ControlPlane;
 * - envoy/service/status/v3/csds.proto: ClientConfig, GenericXdsConfig, PerXdsConfig, ConfigStatus;
 * - envoy/admin/v3/config_dump_shared.proto: UpdateFailureState;
 * - google/protobuf: Any, Struct/Value/ListValue, Timestamp; google/rpc/status.proto: Status.
 * Unknown fields are skipped, as every protobuf decoder does. meshvm is a client: it encodes requests
 * and decodes responses (the simulated istiod has its own codec, test/cluster/xds-messages.ts).
 */
import {BinaryReader, BinaryWriter, WireType} from '@bufbuild/protobuf/wire'
import {CLIENT_CONFIG_TYPE, TYPE_DEBUG_SYNCZ} from './xds-types.js'

export type JsonValue = null | number | string | boolean | JsonValue[] | {[key: string]: JsonValue}

export const ADS_METHOD = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources'
export {CLIENT_CONFIG_TYPE, TYPE_DEBUG_SYNCZ}

/** envoy.service.status.v3.ConfigStatus */
const CONFIG_STATUS = ['UNKNOWN', 'SYNCED', 'NOT_SENT', 'STALE', 'ERROR'] as const

export interface Any {
  typeUrl: string
  value: Uint8Array
}

export interface Node {
  id?: string
  cluster?: string
  metadata?: Record<string, JsonValue>
  userAgentName?: string
}

export interface RpcStatus {
  code: number
  message: string
}

export interface DiscoveryRequest {
  versionInfo?: string
  node?: Node
  resourceNames?: string[]
  typeUrl?: string
  responseNonce?: string
  errorDetail?: RpcStatus
}

export interface DiscoveryResponse {
  versionInfo?: string
  resources: Any[]
  typeUrl?: string
  nonce?: string
  controlPlane?: {identifier: string}
}

export interface GenericXdsConfig {
  typeUrl: string
  name?: string
  versionInfo?: string
  /** RFC 3339, as protojson writes a Timestamp. */
  lastUpdated?: string
  configStatus: number
  clientStatus?: number
  errorState?: {lastUpdateAttempt?: string; details?: string}
}

/** The deprecated per-type form (`xds_config`): only its status and which dump it carries. */
export interface PerXdsConfig {
  status: number
  kind?: 'listenerConfig' | 'clusterConfig' | 'routeConfig' | 'scopedRouteConfig' | 'endpointConfig'
}

export interface ClientConfig {
  node?: Node
  xdsConfig?: PerXdsConfig[]
  genericXdsConfigs: GenericXdsConfig[]
  clientScope?: string
}

export class ProtoDecodeError extends Error {}

const LEN = WireType.LengthDelimited

// ---- writing ----

function str(w: BinaryWriter, field: number, value: string | undefined): void {
  if (value) w.tag(field, LEN).string(value)
}

function msg(w: BinaryWriter, field: number, write: (w: BinaryWriter) => void): void {
  w.tag(field, LEN).fork()
  write(w)
  w.join()
}

function writeValue(w: BinaryWriter, v: JsonValue): void {
  if (v === null) w.tag(1, WireType.Varint).int32(0)
  else if (typeof v === 'number') w.tag(2, WireType.Bit64).double(v)
  else if (typeof v === 'string') w.tag(3, LEN).string(v)
  else if (typeof v === 'boolean') w.tag(4, WireType.Varint).bool(v)
  else if (Array.isArray(v)) msg(w, 6, (l) => v.forEach((x) => msg(l, 1, (vw) => writeValue(vw, x))))
  else msg(w, 5, (s) => writeStruct(s, v))
}

function writeStruct(w: BinaryWriter, fields: Record<string, JsonValue>): void {
  for (const [k, v] of Object.entries(fields)) {
    msg(w, 1, (e) => {
      e.tag(1, LEN).string(k)
      msg(e, 2, (vw) => writeValue(vw, v))
    })
  }
}

function writeNode(w: BinaryWriter, n: Node): void {
  str(w, 1, n.id)
  str(w, 2, n.cluster)
  if (n.metadata) msg(w, 3, (s) => writeStruct(s, n.metadata!))
  str(w, 6, n.userAgentName)
}

export function encodeDiscoveryRequest(r: DiscoveryRequest): Uint8Array {
  const w = new BinaryWriter()
  str(w, 1, r.versionInfo)
  if (r.node) msg(w, 2, (n) => writeNode(n, r.node!))
  for (const name of r.resourceNames ?? []) w.tag(3, LEN).string(name)
  str(w, 4, r.typeUrl)
  str(w, 5, r.responseNonce)
  if (r.errorDetail)
    msg(w, 6, (s) => {
      if (r.errorDetail!.code) s.tag(1, WireType.Varint).int32(r.errorDetail!.code)
      str(s, 2, r.errorDetail!.message)
    })
  return w.finish()
}

// ---- reading ----

/** Calls `field` for each field of the message in `bytes`; unknown fields are skipped by returning false. */
function each(bytes: Uint8Array, field: (r: BinaryReader, no: number, type: WireType) => boolean): void {
  const r = new BinaryReader(bytes)
  try {
    while (r.pos < r.len) {
      const [no, type] = r.tag()
      if (!field(r, no, type)) r.skip(type, no)
    }
  } catch (err) {
    if (err instanceof ProtoDecodeError) throw err
    throw new ProtoDecodeError(`malformed protobuf: ${(err as Error).message}`)
  }
}

function expect(type: WireType, want: WireType, no: number): void {
  if (type !== want) throw new ProtoDecodeError(`field ${no} has wire type ${type}, expected ${want}`)
}

function readValue(bytes: Uint8Array, depth: number): JsonValue {
  if (depth > 64) throw new ProtoDecodeError('Struct nested too deeply')
  let out: JsonValue = null
  each(bytes, (r, no, type) => {
    switch (no) {
      case 1:
        expect(type, WireType.Varint, no)
        r.int32()
        out = null
        return true
      case 2:
        expect(type, WireType.Bit64, no)
        out = r.double()
        return true
      case 3:
        expect(type, LEN, no)
        out = r.string()
        return true
      case 4:
        expect(type, WireType.Varint, no)
        out = r.bool()
        return true
      case 5:
        expect(type, LEN, no)
        out = readStruct(r.bytes(), depth + 1)
        return true
      case 6: {
        expect(type, LEN, no)
        const list: JsonValue[] = []
        each(r.bytes(), (lr, lno, ltype) => {
          if (lno !== 1) return false
          expect(ltype, LEN, lno)
          list.push(readValue(lr.bytes(), depth + 1))
          return true
        })
        out = list
        return true
      }
      default:
        return false
    }
  })
  return out
}

function readStruct(bytes: Uint8Array, depth = 0): Record<string, JsonValue> {
  const out: Record<string, JsonValue> = Object.create(null) as Record<string, JsonValue>
  each(bytes, (r, no, type) => {
    if (no !== 1) return false
    expect(type, LEN, no)
    let key = ''
    let value: JsonValue = null
    each(r.bytes(), (er, eno, etype) => {
      if (eno === 1) {
        expect(etype, LEN, eno)
        key = er.string()
        return true
      }
      if (eno === 2) {
        expect(etype, LEN, eno)
        value = readValue(er.bytes(), depth)
        return true
      }
      return false
    })
    out[key] = value
    return true
  })
  return out
}

function readNode(bytes: Uint8Array): Node {
  const n: Node = {}
  each(bytes, (r, no, type) => {
    if (no === 1) {
      expect(type, LEN, no)
      n.id = r.string()
      return true
    }
    if (no === 2) {
      expect(type, LEN, no)
      n.cluster = r.string()
      return true
    }
    if (no === 3) {
      expect(type, LEN, no)
      n.metadata = readStruct(r.bytes())
      return true
    }
    if (no === 6) {
      expect(type, LEN, no)
      n.userAgentName = r.string()
      return true
    }
    return false
  })
  return n
}

function readAny(bytes: Uint8Array): Any {
  const a: Any = {typeUrl: '', value: new Uint8Array()}
  each(bytes, (r, no, type) => {
    if (no === 1) {
      expect(type, LEN, no)
      a.typeUrl = r.string()
      return true
    }
    if (no === 2) {
      expect(type, LEN, no)
      a.value = r.bytes()
      return true
    }
    return false
  })
  return a
}

/** google.protobuf.Timestamp → RFC 3339 the way protojson writes it (0, 3, 6 or 9 fraction digits). */
export function timestampText(seconds: number, nanos: number): string {
  const base = new Date(seconds * 1000).toISOString().replace(/\.\d+Z$/, '')
  if (nanos === 0) return `${base}Z`
  const digits = String(nanos).padStart(9, '0')
  const frac = nanos % 1_000_000 === 0 ? digits.slice(0, 3) : nanos % 1000 === 0 ? digits.slice(0, 6) : digits
  return `${base}.${frac}Z`
}

function readTimestamp(bytes: Uint8Array): string {
  let seconds = 0
  let nanos = 0
  each(bytes, (r, no, type) => {
    if (no === 1) {
      expect(type, WireType.Varint, no)
      seconds = Number(r.int64())
      return true
    }
    if (no === 2) {
      expect(type, WireType.Varint, no)
      nanos = r.int32()
      return true
    }
    return false
  })
  return timestampText(seconds, nanos)
}

export function decodeDiscoveryResponse(bytes: Uint8Array): DiscoveryResponse {
  const out: DiscoveryResponse = {resources: []}
  each(bytes, (r, no, type) => {
    switch (no) {
      case 1:
        expect(type, LEN, no)
        out.versionInfo = r.string()
        return true
      case 2:
        expect(type, LEN, no)
        out.resources.push(readAny(r.bytes()))
        return true
      case 4:
        expect(type, LEN, no)
        out.typeUrl = r.string()
        return true
      case 5:
        expect(type, LEN, no)
        out.nonce = r.string()
        return true
      case 6: {
        expect(type, LEN, no)
        const cp = {identifier: ''}
        each(r.bytes(), (cr, cno, ctype) => {
          if (cno !== 1) return false
          expect(ctype, LEN, cno)
          cp.identifier = cr.string()
          return true
        })
        out.controlPlane = cp
        return true
      }
      default:
        return false
    }
  })
  return out
}

function readGeneric(bytes: Uint8Array): GenericXdsConfig {
  const g: GenericXdsConfig = {typeUrl: '', configStatus: 0}
  each(bytes, (r, no, type) => {
    switch (no) {
      case 1:
        expect(type, LEN, no)
        g.typeUrl = r.string()
        return true
      case 2:
        expect(type, LEN, no)
        g.name = r.string()
        return true
      case 3:
        expect(type, LEN, no)
        g.versionInfo = r.string()
        return true
      case 5:
        expect(type, LEN, no)
        g.lastUpdated = readTimestamp(r.bytes())
        return true
      case 6:
        expect(type, WireType.Varint, no)
        g.configStatus = r.int32()
        return true
      case 7:
        expect(type, WireType.Varint, no)
        g.clientStatus = r.int32()
        return true
      case 8: {
        expect(type, LEN, no)
        const e: NonNullable<GenericXdsConfig['errorState']> = {}
        each(r.bytes(), (er, eno, etype) => {
          if (eno === 2) {
            expect(etype, LEN, eno)
            e.lastUpdateAttempt = readTimestamp(er.bytes())
            return true
          }
          if (eno === 3) {
            expect(etype, LEN, eno)
            e.details = er.string()
            return true
          }
          return false
        })
        g.errorState = e
        return true
      }
      default:
        return false
    }
  })
  return g
}

/** The oneof of PerXdsConfig: which dump it carries, by field number. */
const PER_XDS_FIELDS = {listenerConfig: 2, clusterConfig: 3, routeConfig: 4, scopedRouteConfig: 5, endpointConfig: 6} as const

export function decodeClientConfig(bytes: Uint8Array): ClientConfig {
  const c: ClientConfig = {genericXdsConfigs: []}
  each(bytes, (r, no, type) => {
    switch (no) {
      case 1:
        expect(type, LEN, no)
        c.node = readNode(r.bytes())
        return true
      case 2: {
        expect(type, LEN, no)
        const p: PerXdsConfig = {status: 0}
        each(r.bytes(), (pr, pno, ptype) => {
          if (pno === 1) {
            expect(ptype, WireType.Varint, pno)
            p.status = pr.int32()
            return true
          }
          const kind = (Object.keys(PER_XDS_FIELDS) as (keyof typeof PER_XDS_FIELDS)[]).find((k) => PER_XDS_FIELDS[k] === pno)
          if (kind) p.kind = kind
          return false
        })
        ;(c.xdsConfig ??= []).push(p)
        return true
      }
      case 3:
        expect(type, LEN, no)
        c.genericXdsConfigs.push(readGeneric(r.bytes()))
        return true
      case 4:
        expect(type, LEN, no)
        c.clientScope = r.string()
        return true
      default:
        return false
    }
  })
  return c
}

function statusName(n: number): string | number {
  return CONFIG_STATUS[n] ?? n
}

/**
 * A syncz DiscoveryResponse in protojson's shape (what `istioctl x proxy-status -o json` printed,
 * and what the HTTP model parser reads): ClientConfig resources decoded, other Any types kept by name.
 */
export function discoveryResponseJson(r: DiscoveryResponse): Record<string, unknown> {
  return {
    ...(r.versionInfo ? {versionInfo: r.versionInfo} : {}),
    ...(r.typeUrl ? {typeUrl: r.typeUrl} : {}),
    ...(r.nonce ? {nonce: r.nonce} : {}),
    ...(r.controlPlane ? {controlPlane: r.controlPlane} : {}),
    resources: r.resources.map((a) => {
      if (a.typeUrl !== CLIENT_CONFIG_TYPE) return {'@type': a.typeUrl}
      const c = decodeClientConfig(a.value)
      return {
        '@type': a.typeUrl,
        ...(c.node ? {node: {...c.node}} : {}),
        ...(c.xdsConfig ? {xdsConfig: c.xdsConfig.map((x) => ({status: statusName(x.status), ...(x.kind ? {[x.kind]: {}} : {})}))} : {}),
        genericXdsConfigs: c.genericXdsConfigs.map((g) => ({
          typeUrl: g.typeUrl,
          ...(g.name ? {name: g.name} : {}),
          ...(g.configStatus ? {configStatus: statusName(g.configStatus)} : {}),
          ...(g.lastUpdated ? {lastUpdated: g.lastUpdated} : {}),
          ...(g.errorState ? {errorState: g.errorState} : {}),
        })),
      }
    }),
  }
}
