/**
 * Glue for the codec (what would replace src/lib/grpc/xds.ts): protobufjs' light build reads the JSON
 * descriptor gen-descriptor.ts writes; the answer is converted to the shape discoveryResponseJson
 * (src/lib/grpc/xds.ts) gives, which the proxy-status model reads.
 */
import protobuf from 'protobufjs/light.js'
import descriptor from './descriptor.json' with {type: 'json'}

export const TYPE_SYNCZ = 'istio.io/debug/syncz'
export const ADS_METHOD = '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources'
const CLIENT_CONFIG = 'type.googleapis.com/envoy.service.status.v3.ClientConfig'
const root = protobuf.Root.fromJSON(descriptor)
export const Request = root.lookupType('envoy.service.discovery.v3.DiscoveryRequest')
export const Response = root.lookupType('envoy.service.discovery.v3.DiscoveryResponse')
const ClientConfig = root.lookupType('envoy.service.status.v3.ClientConfig')
type Json = null | number | string | boolean | Json[] | {[k: string]: Json}
// protobufjs' toObject gives untyped plain objects: the glue reads them as such.
// biome-ignore lint/suspicious/noExplicitAny: protobufjs' toObject output has no static type
export type Obj = Record<string, any>
export const OBJ = {longs: Number, enums: String, defaults: false, oneofs: true} as const

function toValue(v: Json): Obj {
  if (v === null) return {nullValue: 0}
  if (typeof v === 'number') return {numberValue: v}
  if (typeof v === 'string') return {stringValue: v}
  if (typeof v === 'boolean') return {boolValue: v}
  if (Array.isArray(v)) return {listValue: {values: v.map(toValue)}}
  return {structValue: toStruct(v)}
}
export const toStruct = (o: Record<string, Json>): Obj => ({fields: Object.fromEntries(Object.entries(o).map(([k, v]) => [k, toValue(v)]))})
function fromValue(v: Obj): Json {
  if (v.structValue) return fromStruct(v.structValue)
  if (v.listValue) return (v.listValue.values ?? []).map(fromValue)
  return v.stringValue ?? v.numberValue ?? v.boolValue ?? null
}
const fromStruct = (s: Obj): Record<string, Json> => Object.fromEntries(Object.entries(s.fields ?? {}).map(([k, v]) => [k, fromValue(v as Obj)]))
function timestamp(t: Obj): string {
  const base = new Date((t.seconds ?? 0) * 1000).toISOString().replace(/\.\d+Z$/, '')
  const nanos = t.nanos ?? 0
  if (nanos === 0) return `${base}Z`
  const d = String(nanos).padStart(9, '0')
  return `${base}.${nanos % 1e6 === 0 ? d.slice(0, 3) : nanos % 1000 === 0 ? d.slice(0, 6) : d}Z`
}
const PER_XDS = ['listenerConfig', 'clusterConfig', 'routeConfig', 'scopedRouteConfig', 'endpointConfig']

function clientConfigJson(value: Uint8Array): Obj {
  const c = ClientConfig.toObject(ClientConfig.decode(value), OBJ)
  const node = c.node && {...c.node, ...(c.node.metadata ? {metadata: fromStruct(c.node.metadata)} : {})}
  return {
    '@type': CLIENT_CONFIG,
    ...(node ? {node} : {}),
    ...(c.xdsConfig ? {xdsConfig: c.xdsConfig.map((x: Obj) => ({status: x.status ?? 'UNKNOWN', ...Object.fromEntries(PER_XDS.filter((k) => x[k]).map((k) => [k, {}]))}))} : {}),
    genericXdsConfigs: (c.genericXdsConfigs ?? []).map((g: Obj) => ({
      typeUrl: g.typeUrl ?? '',
      ...(g.name ? {name: g.name} : {}),
      ...(g.configStatus && g.configStatus !== 'UNKNOWN' ? {configStatus: g.configStatus} : {}),
      ...(g.lastUpdated ? {lastUpdated: timestamp(g.lastUpdated)} : {}),
      ...(g.errorState
        ? {errorState: {...(g.errorState.lastUpdateAttempt ? {lastUpdateAttempt: timestamp(g.errorState.lastUpdateAttempt)} : {}), ...(g.errorState.details ? {details: g.errorState.details} : {})}}
        : {}),
    })),
  }
}

export function responseJson(r: Obj): Obj {
  return {
    ...(r.versionInfo ? {versionInfo: r.versionInfo} : {}),
    ...(r.typeUrl ? {typeUrl: r.typeUrl} : {}),
    ...(r.nonce ? {nonce: r.nonce} : {}),
    ...(r.controlPlane ? {controlPlane: {identifier: r.controlPlane.identifier ?? ''}} : {}),
    resources: (r.resources ?? []).map((a: Obj) => (a.type_url === CLIENT_CONFIG ? clientConfigJson(a.value) : {'@type': a.type_url})),
  }
}

/** DiscoveryResponse bytes → protojson's shape. */
export function decodeResponseJson(bytes: Uint8Array): Obj {
  return responseJson(Response.toObject(Response.decode(bytes), OBJ))
}
