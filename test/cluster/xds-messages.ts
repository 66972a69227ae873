/**
 * The xDS messages the simulated istiod and VM exchange, in the simulation's own plain shapes, encoded
 * and decoded with protobufjs from the upstream Envoy .proto files (test/fixtures/protos), never with
 * meshvm's codec (src/lib/grpc/xds.ts): the simulation has to be a second, independent implementation.
 *
 * Times are RFC 3339 strings here (as protojson writes a Timestamp); Struct metadata is a JSON object.
 */
import {decodeMessage, encodeMessage, jsonToStruct, structToJson, type Json, type ProtoAny, type ProtoStruct} from '../fixtures/protos/load.js'

export type JsonValue = Json

/** istioctl's syncz type (pilot/pkg/xds/statusgen.go TypeDebugSyncronization). */
export const TYPE_DEBUG_SYNCZ = 'istio.io/debug/syncz'
/** The Any type of each syncz resource. */
export const CLIENT_CONFIG_TYPE = 'type.googleapis.com/envoy.service.status.v3.ClientConfig'

const DISCOVERY_REQUEST = 'envoy.service.discovery.v3.DiscoveryRequest'
const DISCOVERY_RESPONSE = 'envoy.service.discovery.v3.DiscoveryResponse'
const CLIENT_CONFIG = 'envoy.service.status.v3.ClientConfig'

export interface Node {
  id?: string
  cluster?: string
  metadata?: Record<string, JsonValue>
}

export interface DiscoveryRequest {
  versionInfo?: string
  node?: Node
  resourceNames?: string[]
  typeUrl?: string
  responseNonce?: string
  errorDetail?: {code: number; message: string}
}

export interface DiscoveryResponse {
  versionInfo?: string
  resources: {typeUrl: string; value: Uint8Array}[]
  typeUrl?: string
  nonce?: string
  controlPlane?: {identifier: string}
}

/** envoy.service.status.v3.ConfigStatus by number: UNKNOWN, SYNCED, NOT_SENT, STALE, ERROR. */
export interface GenericXdsConfig {
  typeUrl: string
  name?: string
  versionInfo?: string
  lastUpdated?: string
  configStatus: number
  clientStatus?: number
  errorState?: {lastUpdateAttempt?: string; details?: string}
}

export interface ClientConfig {
  node?: Node
  genericXdsConfigs: GenericXdsConfig[]
}

interface ProtoNode {
  id?: string
  cluster?: string
  metadata?: ProtoStruct
}

/** RFC 3339 → google.protobuf.Timestamp {seconds, nanos} (the fraction kept to the nanosecond). */
export function rfc3339ToTimestamp(text: string): {seconds: number; nanos: number} {
  const m = /^(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d)(?:\.(\d{1,9}))?(Z|[+-]\d\d:\d\d)$/.exec(text)
  if (!m) throw new RangeError(`not an RFC 3339 time: ${text}`)
  // Date.UTC, not Date.parse: years below 100 (0001-01-01, Go's zero time) stay as written.
  const [date, time] = m[1]!.split('T') as [string, string]
  const [y, mo, d] = date.split('-').map(Number) as [number, number, number]
  const [h, mi, s] = time.split(':').map(Number) as [number, number, number]
  const utc = new Date(0)
  utc.setUTCFullYear(y, mo - 1, d)
  utc.setUTCHours(h, mi, s, 0)
  let seconds = utc.getTime() / 1000
  if (m[3] !== 'Z') {
    const sign = m[3]!.startsWith('-') ? -1 : 1
    const [oh, om] = m[3]!.slice(1).split(':').map(Number) as [number, number]
    seconds -= sign * (oh * 3600 + om * 60)
  }
  return {seconds, nanos: m[2] ? Number(m[2].padEnd(9, '0')) : 0}
}

function nodeToProto(n: Node): ProtoNode {
  return {...(n.id ? {id: n.id} : {}), ...(n.cluster ? {cluster: n.cluster} : {}), ...(n.metadata ? {metadata: jsonToStruct(n.metadata)} : {})}
}

function nodeFromProto(n: ProtoNode): Node {
  return {...(n.id ? {id: n.id} : {}), ...(n.cluster ? {cluster: n.cluster} : {}), ...(n.metadata ? {metadata: structToJson(n.metadata)} : {})}
}

export function encodeDiscoveryRequest(r: DiscoveryRequest): Buffer {
  return encodeMessage(DISCOVERY_REQUEST, {...r, ...(r.node ? {node: nodeToProto(r.node)} : {})})
}

export function decodeDiscoveryRequest(bytes: Uint8Array): DiscoveryRequest {
  const r = decodeMessage<DiscoveryRequest & {node?: ProtoNode; errorDetail?: {code?: number; message?: string}}>(DISCOVERY_REQUEST, bytes)
  return {
    ...r,
    ...(r.node ? {node: nodeFromProto(r.node)} : {}),
    ...(r.errorDetail ? {errorDetail: {code: r.errorDetail.code ?? 0, message: r.errorDetail.message ?? ''}} : {}),
  }
}

export function encodeDiscoveryResponse(r: DiscoveryResponse): Buffer {
  return encodeMessage(DISCOVERY_RESPONSE, {...r, resources: r.resources.map((a): ProtoAny => ({type_url: a.typeUrl, value: a.value}))})
}

export function decodeDiscoveryResponse(bytes: Uint8Array): DiscoveryResponse {
  const r = decodeMessage<Omit<DiscoveryResponse, 'resources'> & {resources?: ProtoAny[]}>(DISCOVERY_RESPONSE, bytes)
  return {...r, resources: (r.resources ?? []).map((a) => ({typeUrl: a.type_url, value: a.value}))}
}

export function encodeClientConfig(c: ClientConfig): Buffer {
  return encodeMessage(CLIENT_CONFIG, {
    ...(c.node ? {node: nodeToProto(c.node)} : {}),
    genericXdsConfigs: c.genericXdsConfigs.map((g) => ({
      ...g,
      ...(g.lastUpdated ? {lastUpdated: rfc3339ToTimestamp(g.lastUpdated)} : {}),
      ...(g.errorState
        ? {
            errorState: {
              ...(g.errorState.lastUpdateAttempt ? {lastUpdateAttempt: rfc3339ToTimestamp(g.errorState.lastUpdateAttempt)} : {}),
              ...(g.errorState.details ? {details: g.errorState.details} : {}),
            },
          }
        : {}),
    })),
  })
}
