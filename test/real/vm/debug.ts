/**
 * The bytes of one istiod xDS debug answer (`istio.io/debug/syncz` and the like), as istioctl asks
 * for them: a DiscoveryRequest with a node and the debug type URL on the ADS stream, a bearer token
 * of an identity in istiod's namespace. The response is kept undecoded (grpc-js with a pass-through
 * deserializer), so that a test can read the same bytes with meshvm's codec and with the upstream
 * protos.
 */
import * as grpc from '@grpc/grpc-js'
import {ADS_PATH, encodeMessage, jsonToStruct} from '../../fixtures/protos/load.js'

export async function xdsDebugBytes(o: {istiodAddress: string; rootCert: string; serverName?: string; token: string; namespace: string; typeUrl: string}): Promise<Buffer> {
  const serverName = o.serverName ?? 'istiod.istio-system.svc'
  const client = new grpc.Client(o.istiodAddress, grpc.credentials.createSsl(Buffer.from(o.rootCert)), {'grpc.ssl_target_name_override': serverName, 'grpc.default_authority': serverName})
  const metadata = new grpc.Metadata()
  metadata.set('authorization', `Bearer ${o.token}`)
  const call = client.makeBidiStreamRequest<Buffer, Buffer>(
    ADS_PATH,
    (b) => b,
    (b) => b,
    metadata,
    {deadline: Date.now() + 20_000},
  )
  try {
    return await new Promise<Buffer>((resolve, reject) => {
      call.on('data', (b: Buffer) => resolve(b))
      call.on('error', reject)
      call.on('end', () => reject(new Error('istiod ended the stream without an answer')))
      const ns = o.namespace
      call.write(
        encodeMessage('envoy.service.discovery.v3.DiscoveryRequest', {
          node: {id: `sidecar~0.0.0.0~debug-reader.${ns}~${ns}.svc.cluster.local`, metadata: jsonToStruct({GENERATOR: 'event', NAMESPACE: ns})},
          typeUrl: o.typeUrl,
        }),
      )
    })
  } finally {
    call.cancel()
    client.close()
  }
}
