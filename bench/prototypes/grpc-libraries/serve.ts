/**
 * The simulated cluster of `npm run demo:cluster -- --scale proxies=5000,istiods=2` (the same seeding,
 * test/cluster/scale.ts, as bench/cluster.ts), with both istiods' gRPC servers listening on 127.0.0.1
 * (--xds-address). Writes DIR/target.json: the xDS addresses, istiod's SAN, the mesh root and an
 * istio-ca token (from a TokenRequest to the API server), for the two clients. Runs until SIGTERM.
 *   npx tsx bench/prototypes/grpc-libraries/serve.ts DIR
 */
import {request} from 'node:https'
import {writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {clusterWithProxies} from '../../cluster.js'

const dir = process.argv[2]!
const cluster = await clusterWithProxies(5000, 2)
const addresses = await Promise.all([...cluster.mesh.istiods.keys()].map((n) => cluster.mesh.xdsAddress(n)))
const token = await new Promise<string>((resolve, reject) => {
  const req = request(
    new URL('/api/v1/namespaces/istio-system/serviceaccounts/default/token', cluster.url),
    {method: 'POST', ca: cluster.caPem, headers: {Authorization: `Bearer ${cluster.token}`, 'Content-Type': 'application/json'}},
    (res) => {
      let s = ''
      res
        .setEncoding('utf8')
        .on('data', (d) => (s += d))
        .on('end', () => resolve(JSON.parse(s).status.token))
    },
  )
  req.on('error', reject)
  req.end(JSON.stringify({apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {audiences: ['istio-ca'], expirationSeconds: 3600}}))
})
writeFileSync(join(dir, 'target.json'), JSON.stringify({addresses, san: 'istiod.istio-system.svc', root: cluster.ca.rootPem, token, namespace: 'istio-system'}), {mode: 0o600})
process.stdout.write(`ready ${addresses.join(' ')}\n`)
const stop = async () => {
  await cluster.stop()
  process.exit(0)
}
process.on('SIGTERM', stop)
process.on('SIGINT', stop)
