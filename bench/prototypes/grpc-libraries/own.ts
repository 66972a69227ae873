/**
 * The xDS exchange with meshvm's own modules, as src/lib/istiod/reader.ts does it for --xds-address:
 * kube/tls.ts's secureConnect (OpenSSL chain, Go's host-name rules), grpc/client.ts on node:http2,
 * grpc/xds.ts's codec; one DiscoveryRequest of istio.io/debug/syncz per istiod, the answer decoded
 * to protojson's shape (discoveryResponseJson). `load` as argument: load the modules only.
 *   node own.cjs TARGET.json [--print] [--raw PREFIX]
 */
import {readFileSync, writeFileSync} from 'node:fs'
import type {TLSSocket} from 'node:tls'
import {GrpcChannel} from '../../../src/lib/grpc/client.js'
import {ADS_METHOD, decodeDiscoveryResponse, discoveryResponseJson, encodeDiscoveryRequest} from '../../../src/lib/grpc/xds.js'
import {secureConnect} from '../../../src/lib/kube/tls.js'

const TYPE = 'istio.io/debug/syncz'
const MAX_BYTES = Number(process.env.MAX_BYTES ?? 64 * 1024 * 1024)

async function syncz(address: string, t: {san: string; root: string; token: string; namespace: string}): Promise<Record<string, unknown>> {
  const [host, port] = address.split(':') as [string, string]
  const tls = await new Promise<TLSSocket>((resolve, reject) =>
    secureConnect({ca: t.root, servername: t.san, ALPNProtocols: ['h2']}, {host, port: Number(port)}, (err, s) => (err ? reject(err) : resolve(s!))),
  )
  const channel = new GrpcChannel({authority: `${t.san}:15012`, secure: true, createConnection: () => tls})
  const call = channel.call(ADS_METHOD, {metadata: {authorization: `Bearer ${t.token}`}, timeoutMs: 30_000, maxBytes: MAX_BYTES})
  const ns = t.namespace
  call.send(
    encodeDiscoveryRequest({node: {id: `sidecar~0.0.0.0~meshvm-proto.${ns}~${ns}.svc.cluster.local`, metadata: {GENERATOR: 'event', SERVICE_ACCOUNT: 'default', NAMESPACE: ns}}, typeUrl: TYPE}),
  )
  for (;;) {
    const m = await call.next()
    if (m === undefined) throw new Error('stream ended')
    const r = decodeDiscoveryResponse(m)
    if (r.typeUrl !== TYPE) continue
    // --raw FILE: keep the answer's bytes, for compare.ts to decode both ways.
    const raw = process.argv.indexOf('--raw')
    if (raw > 0) writeFileSync(`${process.argv[raw + 1]}.${address.replace(/\W/g, '_')}.bin`, m)
    call.cancel()
    channel.close()
    return discoveryResponseJson(r)
  }
}

const file = process.argv[2]
async function main(file: string): Promise<void> {
  const t = JSON.parse(readFileSync(file, 'utf8'))
  const answers = await Promise.all((t.addresses as string[]).map((a) => syncz(a, t)))
  if (process.argv.includes('--print')) process.stdout.write(`${JSON.stringify(answers.map(({versionInfo, nonce, ...rest}) => rest))}\n`)
  else process.stdout.write(`${answers.reduce((n, a) => n + (a.resources as unknown[]).length, 0)} proxies\n`)
}
if (file && file !== 'load') main(file)
