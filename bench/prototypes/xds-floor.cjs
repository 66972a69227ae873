// The floor of `proxy-status --xds-address` in Node: what istioctl does for it, and no more. One
// TLS connection to the API server (a TokenRequest for audience istio-ca, the mesh root from
// istio-ca-root-cert), one to istiod (HTTP/2, verified against that root, as meshvm does; istioctl
// skips verification), one gRPC DiscoveryRequest for istio.io/debug/syncz, the first response read.
// No output formatting, no WorkloadEntry/WAR reads.
//   node bench/prototypes/xds-floor.cjs HOST:PORT   (KUBECONFIG: the bench's, a token user)
'use strict'
const {readFileSync} = require('node:fs')
const https = require('node:https')
const http2 = require('node:http2')
const text = readFileSync(process.env.KUBECONFIG, 'utf8')
const server = /server: (\S+)/.exec(text)[1]
const ca = Buffer.from(/certificate-authority-data: (\S+)/.exec(text)[1], 'base64')
const token = /token: (\S+)/.exec(text)[1]
const agent = new https.Agent({keepAlive: true, maxSockets: 1, ca})

function call(method, path, body) {
  return new Promise((resolve, reject) => {
    const req = https.request(new URL(path, server), {method, agent, headers: {Authorization: `Bearer ${token}`, Accept: 'application/json', 'Content-Type': 'application/json'}}, (res) => {
      let s = ''
      res
        .setEncoding('utf8')
        .on('data', (d) => (s += d))
        .on('end', () => (res.statusCode < 300 ? resolve(JSON.parse(s)) : reject(new Error(`${path}: HTTP ${res.statusCode}`))))
    })
    req.on('error', reject)
    req.end(body === undefined ? undefined : JSON.stringify(body))
  })
}

async function main() {
  const [tr, root] = await Promise.all([
    call('POST', '/api/v1/namespaces/istio-system/serviceaccounts/default/token', {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {audiences: ['istio-ca'], expirationSeconds: 600},
    }),
    call('GET', '/api/v1/namespaces/istio-system/configmaps/istio-ca-root-cert'),
  ])
  agent.destroy()
  // DiscoveryRequest{node: {id, metadata: {GENERATOR: event, …}}, type_url}, encoded by hand
  const varint = (n) => {
    const b = []
    while (n > 127) {
      b.push((n & 127) | 128)
      n >>>= 7
    }
    b.push(n)
    return Buffer.from(b)
  }
  const field = (no, bytes) => Buffer.concat([varint((no << 3) | 2), varint(bytes.length), bytes])
  const str = (no, v) => field(no, Buffer.from(v))
  const entry = (k, v) => field(1, Buffer.concat([str(1, k), field(2, str(3, v))]))
  const metadata = Buffer.concat([entry('GENERATOR', 'event'), entry('SERVICE_ACCOUNT', 'default'), entry('NAMESPACE', 'istio-system')])
  const node = Buffer.concat([str(1, 'sidecar~0.0.0.0~floor.istio-system~istio-system.svc.cluster.local'), field(3, metadata)])
  const msg = Buffer.concat([field(2, node), str(4, 'istio.io/debug/syncz')])
  const frame = Buffer.alloc(5 + msg.length)
  frame.writeUInt32BE(msg.length, 1)
  msg.copy(frame, 5)
  const session = http2.connect(`https://${process.argv[2]}`, {ca: root.data['root-cert.pem'], servername: 'istiod.istio-system.svc'})
  const stream = session.request({
    ':method': 'POST',
    ':path': '/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources',
    'content-type': 'application/grpc',
    te: 'trailers',
    authorization: `Bearer ${tr.status.token}`,
  })
  let got = Buffer.alloc(0)
  stream.on('data', (d) => {
    got = Buffer.concat([got, d])
    if (got.length >= 5 && got.length >= 5 + got.readUInt32BE(1)) {
      process.stdout.write(`${got.readUInt32BE(1)} bytes\n`)
      stream.close()
      session.close()
    }
  })
  stream.on('error', (e) => {
    throw e
  })
  stream.write(frame)
}
main()
