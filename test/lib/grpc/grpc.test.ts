import {connect as tlsConnect} from 'node:tls'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {type CallOptions, GrpcChannel, GrpcError} from '../../../src/lib/grpc/client.js'
import {encodeMessage, GrpcCode, MessageDecoder} from '../../../src/lib/grpc/framing.js'
import {ADS_METHOD, CLIENT_CONFIG_TYPE, decodeClientConfig, decodeDiscoveryResponse, discoveryResponseJson, encodeDiscoveryRequest, TYPE_DEBUG_SYNCZ, timestampText} from '../../../src/lib/grpc/xds.js'
import {createMeshCa, meshCa} from '../../cluster/mesh-ca.js'
import {testPki} from '../../cluster/pki.js'
import {boundToken} from '../../cluster/tokens.js'
import {XdsServer} from '../../cluster/xds.js'
import {encodeMessage as encodeProto, jsonToStruct} from '../../fixtures/protos/load.js'

describe('gRPC framing', () => {
  it('splits messages across and within chunks', () => {
    const a = encodeMessage(Buffer.from('hello'))
    const b = encodeMessage(Buffer.alloc(0))
    const c = encodeMessage(Buffer.from('x'.repeat(300)))
    const all = Buffer.concat([a, b, c])
    const d = new MessageDecoder()
    const out: Buffer[] = []
    for (let i = 0; i < all.length; i += 7) out.push(...d.push(all.subarray(i, i + 7)))
    expect(out.map((m) => m.toString())).toEqual(['hello', '', 'x'.repeat(300)])
    expect(d.pending).toBe(0)
  })

  it('refuses compressed and oversized messages', () => {
    expect(() => new MessageDecoder().push(Buffer.from([1, 0, 0, 0, 0]))).toThrow(/compressed/)
    expect(() => new MessageDecoder(10).push(Buffer.from([0, 0, 0, 0, 11]))).toThrow(/exceeds/)
  })
})

describe('xDS protobuf codec', () => {
  const RESPONSE = 'envoy.service.discovery.v3.DiscoveryResponse'

  it('reads a syncz DiscoveryResponse (made by the upstream .proto definitions) into the protojson shape', () => {
    const cc = encodeProto('envoy.service.status.v3.ClientConfig', {
      node: {id: 'vm-1.vm-ns', metadata: jsonToStruct({CLUSTER_ID: 'cluster1', NAMESPACE: 'vm-ns', ISTIO_VERSION: '1.24.2'})},
      genericXdsConfigs: [
        {typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster', configStatus: 'SYNCED', lastUpdated: {seconds: 1730801731, nanos: 120_000_000}},
        {
          typeUrl: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
          configStatus: 'ERROR',
          lastUpdated: {seconds: 1730801731},
          errorState: {lastUpdateAttempt: {seconds: 1730801731, nanos: 200_000_000}, details: 'NACK'},
        },
        {typeUrl: 'type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig', configStatus: 'UNKNOWN'},
      ],
    })
    const bytes = encodeProto(RESPONSE, {
      versionInfo: 'v1',
      typeUrl: TYPE_DEBUG_SYNCZ,
      nonce: 'n',
      controlPlane: {identifier: '{"ID":"istiod-1"}'},
      resources: [
        {type_url: CLIENT_CONFIG_TYPE, value: cc},
        {type_url: 'type.googleapis.com/other', value: Buffer.from([1])},
      ],
    })
    const json = discoveryResponseJson(decodeDiscoveryResponse(bytes))
    expect(json).toEqual({
      versionInfo: 'v1',
      typeUrl: TYPE_DEBUG_SYNCZ,
      nonce: 'n',
      controlPlane: {identifier: '{"ID":"istiod-1"}'},
      resources: [
        {
          '@type': CLIENT_CONFIG_TYPE,
          node: {id: 'vm-1.vm-ns', metadata: {CLUSTER_ID: 'cluster1', NAMESPACE: 'vm-ns', ISTIO_VERSION: '1.24.2'}},
          genericXdsConfigs: [
            {typeUrl: 'type.googleapis.com/envoy.config.cluster.v3.Cluster', configStatus: 'SYNCED', lastUpdated: '2024-11-05T10:15:31.120Z'},
            {
              typeUrl: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
              configStatus: 'ERROR',
              lastUpdated: '2024-11-05T10:15:31Z',
              errorState: {lastUpdateAttempt: '2024-11-05T10:15:31.200Z', details: 'NACK'},
            },
            {typeUrl: 'type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig'},
          ],
        },
        {'@type': 'type.googleapis.com/other'},
      ],
    })
    expect(decodeClientConfig(new Uint8Array()).genericXdsConfigs).toEqual([])
  })

  it('writes timestamps as protojson does', () => {
    expect(timestampText(0, 0)).toBe('1970-01-01T00:00:00Z')
    expect(timestampText(1, 5_000_000)).toBe('1970-01-01T00:00:01.005Z')
    expect(timestampText(1, 5_000)).toBe('1970-01-01T00:00:01.000005Z')
    expect(timestampText(1, 5)).toBe('1970-01-01T00:00:01.000000005Z')
    expect(timestampText(-62135596800, 0)).toBe('0001-01-01T00:00:00Z')
  })

  it('rejects truncated input with a decode error', () => {
    const bytes = encodeProto(RESPONSE, {typeUrl: TYPE_DEBUG_SYNCZ})
    expect(() => decodeDiscoveryResponse(bytes.subarray(0, bytes.length - 3))).toThrow(/malformed protobuf/)
  })
})

/** One empty request, the first message answered (the simulated server's handlers answer one). */
async function unary(ch: GrpcChannel, path: string, options: CallOptions): Promise<Buffer> {
  const call = ch.call(path, options)
  call.send(new Uint8Array())
  try {
    const response = await call.next()
    if (response === undefined) throw new Error('the server answered no message')
    return response
  } finally {
    call.cancel()
  }
}

describe('gRPC client against the simulated istiod server', () => {
  const pki = testPki()
  const ca = meshCa()
  const san = 'istiod.istio-system.svc'
  let server: XdsServer
  let port = 0
  const channel = (root = ca.rootPem, servername = san) =>
    new GrpcChannel({authority: `${san}:15012`, secure: true, createConnection: () => tlsConnect({host: '127.0.0.1', port, servername, ca: root, ALPNProtocols: ['h2']})})
  const token = () => boundToken(pki, {namespace: 'istio-system', name: 'default', uid: 'u'}, ['istio-ca'], 600).token

  beforeAll(async () => {
    server = new XdsServer({pki, certificate: ca.issue({dnsNames: [san]}), clientCaPem: ca.rootPem})
    // A registered method (as another helper adds the CA service): answers with the caller's identity.
    server.handle('/meshvm.test.Who/Am', async (call) => {
      await call.next()
      call.send(Buffer.from(call.peer ?? call.identity?.sub ?? ''))
      call.end()
    })
    server.onDiscovery(TYPE_DEBUG_SYNCZ, (req) => ({typeUrl: req.typeUrl, nonce: 'x', resources: [], controlPlane: {identifier: JSON.stringify({ID: req.node?.id})}}))
    port = (await server.listen()).port
  })
  afterAll(() => server.close())

  it('answers an ADS request with a verified token', async () => {
    const ch = channel()
    try {
      const call = ch.call(ADS_METHOD, {metadata: {authorization: `Bearer ${token()}`}, timeoutMs: 5000})
      call.send(encodeDiscoveryRequest({typeUrl: TYPE_DEBUG_SYNCZ, node: {id: 'me'}}))
      const res = decodeDiscoveryResponse((await call.next())!)
      expect(res.controlPlane?.identifier).toBe('{"ID":"me"}')
      call.cancel()
    } finally {
      ch.close()
    }
  })

  it('answers UNAUTHENTICATED without a token or with another audience', async () => {
    for (const auth of [undefined, `Bearer ${boundToken(pki, {namespace: 'istio-system', name: 'default', uid: 'u'}, ['https://kubernetes.default.svc'], 600).token}`]) {
      const ch = channel()
      try {
        const call = ch.call(ADS_METHOD, {metadata: auth ? {authorization: auth} : {}, timeoutMs: 5000})
        call.send(encodeDiscoveryRequest({typeUrl: TYPE_DEBUG_SYNCZ}))
        const err = await call.next().then(
          () => undefined,
          (e: unknown) => e,
        )
        expect(err).toBeInstanceOf(GrpcError)
        expect((err as GrpcError).code).toBe(GrpcCode.UNAUTHENTICATED)
        expect((err as GrpcError).details).toBe('authentication failure')
      } finally {
        ch.close()
      }
    }
  })

  it('handler registry: a unary method, authenticated by a token or by a client certificate the mesh root signed', async () => {
    const ch = channel()
    try {
      expect((await unary(ch, '/meshvm.test.Who/Am', {metadata: {authorization: `Bearer ${token()}`}, timeoutMs: 5000})).toString()).toBe('system:serviceaccount:istio-system:default')
    } finally {
      ch.close()
    }
    const workload = ca.issue({uris: ['spiffe://cluster.local/ns/vms/sa/vm-sa']})
    const mtls = new GrpcChannel({
      authority: `${san}:15012`,
      secure: true,
      createConnection: () => tlsConnect({host: '127.0.0.1', port, servername: san, ca: ca.rootPem, cert: workload.certPem, key: workload.keyPem, ALPNProtocols: ['h2']}),
    })
    try {
      expect((await unary(mtls, '/meshvm.test.Who/Am', {timeoutMs: 5000})).toString()).toBe('spiffe://cluster.local/ns/vms/sa/vm-sa')
    } finally {
      mtls.close()
    }
    // A certificate from another CA authenticates nothing.
    const stranger = createMeshCa('stranger').issue({uris: ['spiffe://cluster.local/ns/vms/sa/vm-sa']})
    const other = new GrpcChannel({
      authority: `${san}:15012`,
      secure: true,
      createConnection: () => tlsConnect({host: '127.0.0.1', port, servername: san, ca: ca.rootPem, cert: stranger.certPem, key: stranger.keyPem, ALPNProtocols: ['h2']}),
    })
    try {
      const err = (await unary(other, '/meshvm.test.Who/Am', {timeoutMs: 5000}).then(
        () => undefined,
        (e: unknown) => e,
      )) as GrpcError
      expect(err.code).toBe(GrpcCode.UNAUTHENTICATED)
      const missing = (await unary(other, '/meshvm.test.Nope/Nope', {timeoutMs: 5000}).then(
        () => undefined,
        (e: unknown) => e,
      )) as GrpcError
      expect(missing.code).toBe(GrpcCode.UNIMPLEMENTED)
    } finally {
      other.close()
    }
  })

  it('fails TLS against another root or another name', async () => {
    for (const [root, name, code] of [
      [createMeshCa('other').rootPem, san, /UNABLE_TO_VERIFY|self-signed|unable to verify/i],
      [ca.rootPem, 'istiod-canary.istio-system.svc', /altnames|ERR_TLS_CERT_ALTNAME_INVALID/i],
    ] as const) {
      const ch = channel(root, name)
      try {
        const call = ch.call(ADS_METHOD, {metadata: {authorization: `Bearer ${token()}`}, timeoutMs: 5000})
        call.send(encodeDiscoveryRequest({typeUrl: TYPE_DEBUG_SYNCZ}))
        const err = (await call.next().then(
          () => undefined,
          (e: unknown) => e,
        )) as GrpcError
        expect(err.code).toBe(GrpcCode.UNAVAILABLE)
        expect(`${err.transport?.code} ${err.message}`).toMatch(code)
      } finally {
        ch.close()
      }
    }
  })
})
