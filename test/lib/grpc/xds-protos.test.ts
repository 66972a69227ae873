/**
 * meshvm's hand-written xDS codec (src/lib/grpc/xds.ts) against protobufjs reading the upstream Envoy
 * .proto files (test/fixtures/protos): the request meshvm writes is read by the real definitions, and
 * the response istiod writes (made here by the real definitions) is read by meshvm, field by field.
 */
import {BinaryWriter, WireType} from '@bufbuild/protobuf/wire'
import {describe, expect, it} from 'vitest'
import {CLIENT_CONFIG_TYPE, decodeClientConfig, decodeDiscoveryResponse, encodeDiscoveryRequest, ProtoDecodeError, TYPE_DEBUG_SYNCZ} from '../../../src/lib/grpc/xds.js'
import {decodeMessage, encodeMessage, jsonToStruct, structToJson, type ProtoStruct} from '../../fixtures/protos/load.js'

const REQUEST = 'envoy.service.discovery.v3.DiscoveryRequest'
const RESPONSE = 'envoy.service.discovery.v3.DiscoveryResponse'
const CLIENT_CONFIG = 'envoy.service.status.v3.ClientConfig'

const metadata = {GENERATOR: 'event', NAMESPACE: 'istio-system', n: 1.5, b: true, nil: null, list: ['a', 2, {x: false}], nested: {k: 'v', deeper: {z: []}}}

describe("meshvm's xDS codec read and written by the upstream .proto definitions", () => {
  it('a DiscoveryRequest meshvm writes (node with Struct metadata, user agent, error detail)', () => {
    const bytes = encodeDiscoveryRequest({
      versionInfo: 'v7',
      node: {id: 'event~~istioctl.istio-system~istio-system.svc.cluster.local', cluster: 'c1', metadata, userAgentName: 'meshvm'},
      resourceNames: ['a', 'b'],
      typeUrl: TYPE_DEBUG_SYNCZ,
      responseNonce: 'n1',
      errorDetail: {code: 13, message: 'bad'},
    })
    const real = decodeMessage<{node: {metadata: ProtoStruct} & Record<string, unknown>} & Record<string, unknown>>(REQUEST, bytes)
    expect({...real, node: {...real.node, metadata: structToJson(real.node.metadata)}}).toEqual({
      versionInfo: 'v7',
      node: {id: 'event~~istioctl.istio-system~istio-system.svc.cluster.local', cluster: 'c1', metadata, userAgentName: 'meshvm'},
      resourceNames: ['a', 'b'],
      typeUrl: TYPE_DEBUG_SYNCZ,
      responseNonce: 'n1',
      errorDetail: {code: 13, message: 'bad'},
    })
  })

  it('a syncz DiscoveryResponse istiod writes (control plane, ClientConfig resources with timestamps and error state), read by meshvm', () => {
    const clientConfig = encodeMessage(CLIENT_CONFIG, {
      node: {id: 'vm-1.vms', metadata: jsonToStruct({CLUSTER_ID: 'cluster1', NAMESPACE: 'vms', ISTIO_VERSION: '1.31.0'})},
      xdsConfig: [
        {status: 'STALE', clusterConfig: {}},
        {status: 'SYNCED', listenerConfig: {}},
      ],
      genericXdsConfigs: [
        {
          typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
          name: 'n',
          versionInfo: 'v',
          configStatus: 'SYNCED',
          clientStatus: 'ACKED',
          lastUpdated: {seconds: 1730801731, nanos: 120_000_000},
        },
        {
          typeUrl: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
          configStatus: 'ERROR',
          lastUpdated: {seconds: 1730801731},
          errorState: {lastUpdateAttempt: {seconds: 1730801731, nanos: 5}, details: 'NACK'},
        },
        // Go's zero time, as istiod writes a type it never sent.
        {typeUrl: 'type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig', configStatus: 'NOT_SENT', lastUpdated: {seconds: -62135596800}},
      ],
      clientScope: 'scope',
    })
    const bytes = encodeMessage(RESPONSE, {
      versionInfo: 'v1',
      typeUrl: TYPE_DEBUG_SYNCZ,
      nonce: 'n',
      controlPlane: {identifier: '{"ID":"istiod-1"}'},
      resources: [
        {type_url: CLIENT_CONFIG_TYPE, value: clientConfig},
        {type_url: 'istio.io/debug', value: Buffer.from('{}')},
      ],
    })
    const res = decodeDiscoveryResponse(bytes)
    expect({...res, resources: res.resources.map((a) => ({typeUrl: a.typeUrl, value: Buffer.from(a.value).toString('hex')}))}).toEqual({
      versionInfo: 'v1',
      typeUrl: TYPE_DEBUG_SYNCZ,
      nonce: 'n',
      controlPlane: {identifier: '{"ID":"istiod-1"}'},
      resources: [
        {typeUrl: CLIENT_CONFIG_TYPE, value: clientConfig.toString('hex')},
        {typeUrl: 'istio.io/debug', value: Buffer.from('{}').toString('hex')},
      ],
    })
    expect(decodeClientConfig(res.resources[0]!.value)).toEqual({
      node: {id: 'vm-1.vms', metadata: {CLUSTER_ID: 'cluster1', NAMESPACE: 'vms', ISTIO_VERSION: '1.31.0'}},
      xdsConfig: [
        {status: 3, kind: 'clusterConfig'},
        {status: 1, kind: 'listenerConfig'},
      ],
      genericXdsConfigs: [
        {typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster', name: 'n', versionInfo: 'v', configStatus: 1, clientStatus: 3, lastUpdated: '2024-11-05T10:15:31.120Z'},
        {
          typeUrl: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
          configStatus: 4,
          lastUpdated: '2024-11-05T10:15:31Z',
          errorState: {lastUpdateAttempt: '2024-11-05T10:15:31.000000005Z', details: 'NACK'},
        },
        {typeUrl: 'type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig', configStatus: 2, lastUpdated: '0001-01-01T00:00:00Z'},
      ],
      clientScope: 'scope',
    })
  })
  it('a node whose Struct metadata holds every kind of Value (null, number, string, bool, list, nested struct), read by meshvm', () => {
    const bytes = encodeMessage(CLIENT_CONFIG, {node: {id: 'p.ns', cluster: 'c1', metadata: jsonToStruct(metadata), userAgentName: 'envoy'}})
    expect(decodeClientConfig(bytes)).toEqual({node: {id: 'p.ns', cluster: 'c1', metadata, userAgentName: 'envoy'}, genericXdsConfigs: []})
  })

  it('refuses malformed bytes with a ProtoDecodeError: a known field of the wrong wire type, a truncated message, Structs nested too deeply', () => {
    // field 1 (node) as a varint instead of a message
    expect(() => decodeClientConfig(Uint8Array.of(0x08, 0x01))).toThrow(new ProtoDecodeError('field 1 has wire type 0, expected 2'))
    // field 1 (version_info) announcing 5 bytes, with 1
    expect(() => decodeDiscoveryResponse(Uint8Array.of(0x0a, 0x05, 0x61))).toThrow(ProtoDecodeError)
    expect(() => decodeDiscoveryResponse(Uint8Array.of(0x0a, 0x05, 0x61))).toThrow(/^malformed protobuf: /)
    // A node whose metadata nests 70 Structs, {d: {d: …}}, written field by field (protobufjs refuses to).
    const message = (write: (w: BinaryWriter) => void) => {
      const w = new BinaryWriter()
      write(w)
      return w.finish()
    }
    let struct = message(() => {})
    for (let i = 0; i < 70; i++) {
      const value = message((v) => v.tag(5, WireType.LengthDelimited).bytes(struct))
      const entry = message((e) => e.tag(1, WireType.LengthDelimited).string('d').tag(2, WireType.LengthDelimited).bytes(value))
      struct = message((s) => s.tag(1, WireType.LengthDelimited).bytes(entry))
    }
    const node = message((n) => n.tag(3, WireType.LengthDelimited).bytes(struct))
    expect(() => decodeClientConfig(message((c) => c.tag(1, WireType.LengthDelimited).bytes(node)))).toThrow(new ProtoDecodeError('Struct nested too deeply'))
  })
})
