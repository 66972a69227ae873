/**
 * The same xDS exchange with well-kept libraries: @grpc/grpc-js for gRPC over HTTP/2 and TLS, protobufjs
 * (light build, from the JSON descriptor gen-descriptor.ts writes) for the messages. TLS is still
 * verified by OpenSSL through Node against the mesh root, with meshvm's Go host-name check
 * (kube/tls.ts goHostCheck) passed as grpc-js's checkServerIdentity. The answer is converted to the
 * shape discoveryResponseJson (src/lib/grpc/xds.ts) gives. `load` as argument: load the modules only.
 *   node lib.cjs TARGET.json [--print]
 */
import {readFileSync} from 'node:fs'
import * as grpc from '@grpc/grpc-js'
import {goHostCheck} from '../../../src/lib/kube/tls.js'
import {ADS_METHOD, OBJ, type Obj, Request, Response, responseJson, TYPE_SYNCZ as TYPE, toStruct} from './lib-codec.js'

const MAX_BYTES = Number(process.env.MAX_BYTES ?? 64 * 1024 * 1024)

// ---- glue: the call (what would replace src/lib/grpc/client.ts and framing.ts) ----
function syncz(address: string, t: {san: string; root: string; token: string; namespace: string}): Promise<Obj> {
  const creds = grpc.credentials.createSsl(Buffer.from(t.root), null, null, {checkServerIdentity: (_host, cert) => goHostCheck(t.san, cert)})
  const client = new grpc.Client(address, creds, {
    'grpc.ssl_target_name_override': t.san,
    'grpc.default_authority': `${t.san}:15012`,
    'grpc.max_receive_message_length': MAX_BYTES,
  })
  const metadata = new grpc.Metadata()
  metadata.set('authorization', `Bearer ${t.token}`)
  const call = client.makeBidiStreamRequest(
    ADS_METHOD,
    (m: Obj) => Buffer.from(Request.encode(Request.fromObject(m)).finish()),
    (b: Buffer) => Response.toObject(Response.decode(b), OBJ),
    metadata,
    {deadline: Date.now() + 30_000},
  )
  const ns = t.namespace
  call.write({node: {id: `sidecar~0.0.0.0~meshvm-proto.${ns}~${ns}.svc.cluster.local`, metadata: toStruct({GENERATOR: 'event', SERVICE_ACCOUNT: 'default', NAMESPACE: ns})}, typeUrl: TYPE})
  return new Promise((resolve, reject) => {
    call.on('data', (r: Obj) => {
      if (r.typeUrl !== TYPE) return
      call.cancel()
      client.close()
      resolve(responseJson(r))
    })
    call.on('error', (err: grpc.ServiceError) => {
      if (err.code !== grpc.status.CANCELLED) reject(err)
    })
  })
}

const file = process.argv[2]
async function main(file: string): Promise<void> {
  const t = JSON.parse(readFileSync(file, 'utf8'))
  const answers = await Promise.all((t.addresses as string[]).map((a) => syncz(a, t)))
  if (process.argv.includes('--print')) process.stdout.write(`${JSON.stringify(answers.map(({versionInfo, nonce, ...rest}) => rest))}\n`)
  else process.stdout.write(`${answers.reduce((n, a) => n + (a.resources as unknown[]).length, 0)} proxies\n`)
}
if (file && file !== 'load') main(file)
