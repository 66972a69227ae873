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
import {CLIENT_CONFIG_TYPE, CONFIG_STATUS, TYPE_DEBUG_SYNCZ} from './xds-types.js'

export type JsonValue = null | number | string | boolean | JsonValue[] | {[key: string]: JsonValue}

export const ADS_METHOD = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources'
export {CLIENT_CONFIG_TYPE, TYPE_DEBUG_SYNCZ}

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
  else if (Array.isArray(v)) {
    msg(w, 6, (l) => {
      for (const x of v) msg(l, 1, (vw) => writeValue(vw, x))
    })
  } else msg(w, 5, (s) => writeStruct(s, v))
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

/** A message's known fields by number: the wire type each must have, and what reading it sets on `out`. */
type Fields<T> = Record<number, readonly [WireType, (r: BinaryReader, out: T) => void]>

/** Reads the message in `bytes` into `out` through its field table; fields not in it are skipped. */
function read<T>(bytes: Uint8Array, out: T, fields: Fields<T>): T {
  each(bytes, (r, no, type) => {
    const f = fields[no]
    if (f === undefined) return false
    expect(type, f[0], no)
    f[1](r, out)
    return true
  })
  return out
}

/** google.protobuf.Value (and ListValue), `depth` levels of Struct/ListValue down. */
interface ValueOut {
  value: JsonValue
  depth: number
}

const LIST: Fields<{list: JsonValue[]; depth: number}> = {1: [LEN, (r, o) => o.list.push(readValue(r.bytes(), o.depth))]}

const VALUE: Fields<ValueOut> = {
  1: [
    WireType.Varint,
    (r, o) => {
      r.int32()
      o.value = null
    },
  ],
  2: [WireType.Bit64, (r, o) => (o.value = r.double())],
  3: [LEN, (r, o) => (o.value = r.string())],
  4: [WireType.Varint, (r, o) => (o.value = r.bool())],
  5: [LEN, (r, o) => (o.value = readStruct(r.bytes(), o.depth + 1))],
  6: [LEN, (r, o) => (o.value = read(r.bytes(), {list: [] as JsonValue[], depth: o.depth + 1}, LIST).list)],
}

function readValue(bytes: Uint8Array, depth: number): JsonValue {
  if (depth > 64) throw new ProtoDecodeError('Struct nested too deeply')
  return read<ValueOut>(bytes, {value: null, depth}, VALUE).value
}

/** A Struct's fields entry (map<string, Value>). */
const ENTRY: Fields<{key: string; value: JsonValue; depth: number}> = {
  1: [LEN, (r, e) => (e.key = r.string())],
  2: [LEN, (r, e) => (e.value = readValue(r.bytes(), e.depth))],
}

const STRUCT: Fields<{fields: Record<string, JsonValue>; depth: number}> = {
  1: [
    LEN,
    (r, s) => {
      const e = read(r.bytes(), {key: '', value: null as JsonValue, depth: s.depth}, ENTRY)
      s.fields[e.key] = e.value
    },
  ],
}

function readStruct(bytes: Uint8Array, depth = 0): Record<string, JsonValue> {
  return read(bytes, {fields: Object.create(null) as Record<string, JsonValue>, depth}, STRUCT).fields
}

const NODE: Fields<Node> = {
  1: [LEN, (r, n) => (n.id = r.string())],
  2: [LEN, (r, n) => (n.cluster = r.string())],
  3: [LEN, (r, n) => (n.metadata = readStruct(r.bytes()))],
  6: [LEN, (r, n) => (n.userAgentName = r.string())],
}

const ANY: Fields<Any> = {
  1: [LEN, (r, a) => (a.typeUrl = r.string())],
  2: [LEN, (r, a) => (a.value = r.bytes())],
}

/** google.protobuf.Timestamp → RFC 3339 the way protojson writes it (0, 3, 6 or 9 fraction digits). */
export function timestampText(seconds: number, nanos: number): string {
  const base = new Date(seconds * 1000).toISOString().replace(/\.\d+Z$/, '')
  if (nanos === 0) return `${base}Z`
  const digits = String(nanos).padStart(9, '0')
  const frac = nanos % 1_000_000 === 0 ? digits.slice(0, 3) : nanos % 1000 === 0 ? digits.slice(0, 6) : digits
  return `${base}.${frac}Z`
}

const TIMESTAMP: Fields<{seconds: number; nanos: number}> = {
  1: [WireType.Varint, (r, t) => (t.seconds = Number(r.int64()))],
  2: [WireType.Varint, (r, t) => (t.nanos = r.int32())],
}

function readTimestamp(bytes: Uint8Array): string {
  const t = read(bytes, {seconds: 0, nanos: 0}, TIMESTAMP)
  return timestampText(t.seconds, t.nanos)
}

const CONTROL_PLANE: Fields<{identifier: string}> = {1: [LEN, (r, c) => (c.identifier = r.string())]}

const RESPONSE: Fields<DiscoveryResponse> = {
  1: [LEN, (r, d) => (d.versionInfo = r.string())],
  2: [LEN, (r, d) => d.resources.push(read(r.bytes(), {typeUrl: '', value: new Uint8Array()}, ANY))],
  4: [LEN, (r, d) => (d.typeUrl = r.string())],
  5: [LEN, (r, d) => (d.nonce = r.string())],
  6: [LEN, (r, d) => (d.controlPlane = read(r.bytes(), {identifier: ''}, CONTROL_PLANE))],
}

export function decodeDiscoveryResponse(bytes: Uint8Array): DiscoveryResponse {
  return read<DiscoveryResponse>(bytes, {resources: []}, RESPONSE)
}

/** UpdateFailureState: the fields meshvm reads (field 1, the failed config, is skipped). */
const ERROR_STATE: Fields<NonNullable<GenericXdsConfig['errorState']>> = {
  2: [LEN, (r, e) => (e.lastUpdateAttempt = readTimestamp(r.bytes()))],
  3: [LEN, (r, e) => (e.details = r.string())],
}

const GENERIC: Fields<GenericXdsConfig> = {
  1: [LEN, (r, g) => (g.typeUrl = r.string())],
  2: [LEN, (r, g) => (g.name = r.string())],
  3: [LEN, (r, g) => (g.versionInfo = r.string())],
  5: [LEN, (r, g) => (g.lastUpdated = readTimestamp(r.bytes()))],
  6: [WireType.Varint, (r, g) => (g.configStatus = r.int32())],
  7: [WireType.Varint, (r, g) => (g.clientStatus = r.int32())],
  8: [LEN, (r, g) => (g.errorState = read(r.bytes(), {}, ERROR_STATE))],
}

/** The oneof of PerXdsConfig: which dump it carries, by field number. */
const PER_XDS_FIELDS = {listenerConfig: 2, clusterConfig: 3, routeConfig: 4, scopedRouteConfig: 5, endpointConfig: 6} as const

/** The deprecated per-type form: its status (field 1) and which oneof field carries the dump (not read). */
function readPerXds(bytes: Uint8Array): PerXdsConfig {
  const p: PerXdsConfig = {status: 0}
  each(bytes, (r, no, type) => {
    if (no === 1) {
      expect(type, WireType.Varint, no)
      p.status = r.int32()
      return true
    }
    const kind = (Object.keys(PER_XDS_FIELDS) as (keyof typeof PER_XDS_FIELDS)[]).find((k) => PER_XDS_FIELDS[k] === no)
    if (kind) p.kind = kind
    return false
  })
  return p
}

const CLIENT_CONFIG: Fields<ClientConfig> = {
  1: [LEN, (r, c) => (c.node = read(r.bytes(), {}, NODE))],
  2: [LEN, (r, c) => (c.xdsConfig ??= []).push(readPerXds(r.bytes()))],
  3: [LEN, (r, c) => c.genericXdsConfigs.push(read<GenericXdsConfig>(r.bytes(), {typeUrl: '', configStatus: 0}, GENERIC))],
  4: [LEN, (r, c) => (c.clientScope = r.string())],
}

export function decodeClientConfig(bytes: Uint8Array): ClientConfig {
  return read<ClientConfig>(bytes, {genericXdsConfigs: []}, CLIENT_CONFIG)
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
