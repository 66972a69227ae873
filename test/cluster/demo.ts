/**
 * `npm run demo:cluster`: the test API server with a realistic demo mesh, for trying meshvm (and
 * kubectl) without a cluster. Prints the KUBECONFIG line to use; runs until Ctrl-C.
 */
import {copyFileSync, mkdirSync} from 'node:fs'
import {join, resolve} from 'node:path'
import {parseArgs} from 'node:util'
import {startTestCluster} from './index.js'
import {seedDemoMesh, startDemoVmPlane} from './demo-mesh.js'
import {parseScale, seedProxies, seedWars} from './scale.js'

// --name (or --context): the kubeconfig context and cluster name; --cluster-id: Istio's cluster ID.
// Two demos with different names run side by side: KUBECONFIG=.demo-cluster-east/kubeconfig:.demo-cluster-west/kubeconfig.
// --no-debug-http: every istiod runs with ENABLE_DEBUG_ON_HTTP=false, so only the xDS path (15012) answers.
// --scale wars=N,proxies=N,istiods=N: a large cluster on top of the demo mesh, seeded as `npm run bench`
// seeds its cases (test/cluster/scale.ts), to reproduce them by hand.
// --real [--istio 1.30|1.31]: the real kube-apiserver, etcd and istiod instead (test/real/demo.ts).
const USAGE = 'usage: npm run demo:cluster -- [--name NAME] [--cluster-id ID] [--no-debug-http] [--scale wars=N,proxies=N,istiods=N] | --real [--istio 1.30|1.31]'
if (process.argv.includes('--real')) await (await import('../real/demo.js')).runRealDemo(process.argv.slice(2))
let flags: {name?: string; context?: string; 'cluster-id'?: string; 'no-debug-http'?: boolean; scale?: string}
let scale: ReturnType<typeof parseScale> | undefined
try {
  flags = parseArgs({options: {name: {type: 'string'}, context: {type: 'string'}, 'cluster-id': {type: 'string'}, 'no-debug-http': {type: 'boolean'}, scale: {type: 'string'}}, strict: true}).values
  scale = flags.scale === undefined ? undefined : parseScale(flags.scale)
} catch (err) {
  process.stderr.write(`Error: ${(err as Error).message}\n${USAGE}\n`)
  process.exit(2)
}
const name = flags.name ?? flags.context
const DNS = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/
for (const [flag, value] of [
  ['--name', name],
  ['--cluster-id', flags['cluster-id']],
] as const) {
  if (value !== undefined && !DNS.test(value)) {
    process.stderr.write(`Error: ${flag} ${JSON.stringify(value)}: expected lower case letters, digits, '-' and '.'\n${USAGE}\n`)
    process.exit(2)
  }
}

// istiod writes istio-ca-root-cert into a new namespace half a second after it appears.
const cluster = await startTestCluster({contextName: name ?? 'meshvm-demo', rootCertDelayMs: 500})
const debugHttp = !flags['no-debug-http']
cluster.mesh.debugHttpDefault = debugHttp
seedDemoMesh(cluster, {clusterId: flags['cluster-id']})
if (scale) {
  seedWars(cluster, scale.wars)
  seedProxies(cluster, scale.proxies, scale.proxies > 0 ? scale.istiods : 0)
}
for (const istiod of cluster.mesh.istiods.keys()) cluster.mesh.setIstiod(istiod, {debugHttp})
const vmPlane = await startDemoVmPlane(cluster)
// A stable path, so the printed line keeps working across restarts of the demo.
const dir = resolve(process.env.MESHVM_DEMO_DIR ?? (name ? `.demo-cluster-${name}` : '.demo-cluster'))
mkdirSync(dir, {recursive: true})
const kubeconfig = join(dir, 'kubeconfig')
copyFileSync(cluster.kubeconfigPath, kubeconfig)

process.stdout.write(`meshvm demo cluster ${cluster.contextName} (Istio cluster ID ${flags['cluster-id'] ?? 'cluster1'}) listening on ${cluster.url}
  ${cluster.store.count('/pods')} pods, ${cluster.store.count('networking.istio.io/workloadentries')} VMs (WorkloadEntries), ${cluster.store.count('runtime.onboarding.tetrate.io/workloadautoregistrations')} WARs, 2 istiod revisions${debugHttp ? '' : ', HTTP debug off (istiods answer over xDS only)'}

Use it from another shell:

  export KUBECONFIG=${kubeconfig}
  meshvm proxy-status -o wide
  meshvm war list -A -o wide
  meshvm precheck recommender -n shop
  kubectl get war -A

A VM that really joins (the east-west gateway answers at ${vmPlane.gateway.address}:15012):

  meshvm onboard web -n demo-vms --create-namespace -p http=8080 --probe-http 8080/ready --apply --bundle ./web-vm --autoregister
  npm run demo:vm -- ./web-vm --address 10.10.0.5 --hostname vm-1     # prints its pid; SIGHUP restarts its sidecar
  meshvm war list -n demo-vms -o wide && meshvm proxy-status

Press Ctrl-C to stop.
`)
const stop = async () => {
  await vmPlane.stop()
  await cluster.stop()
  process.exit(0)
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
