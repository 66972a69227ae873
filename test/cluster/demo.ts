/**
 * `npm run demo:cluster`: the test API server with a realistic demo mesh, for trying meshvm (and
 * kubectl) without a cluster. Prints the KUBECONFIG line to use; runs until Ctrl-C.
 */
import {copyFileSync, mkdirSync} from 'node:fs'
import {join, resolve} from 'node:path'
import {startTestCluster} from './index.js'
import {seedDemoMesh, startDemoVmPlane} from './demo-mesh.js'

// istiod writes istio-ca-root-cert into a new namespace half a second after it appears.
const cluster = await startTestCluster({contextName: 'meshvm-demo', rootCertDelayMs: 500})
// --no-debug-http: every istiod runs with ENABLE_DEBUG_ON_HTTP=false, so only the xDS path (15012) answers.
const debugHttp = !process.argv.includes('--no-debug-http')
cluster.mesh.debugHttpDefault = debugHttp
seedDemoMesh(cluster)
for (const name of cluster.mesh.istiods.keys()) cluster.mesh.setIstiod(name, {debugHttp})
const vmPlane = await startDemoVmPlane(cluster)
// A stable path, so the printed line keeps working across restarts of the demo.
const dir = resolve(process.env.MESHVM_DEMO_DIR ?? '.demo-cluster')
mkdirSync(dir, {recursive: true})
const kubeconfig = join(dir, 'kubeconfig')
copyFileSync(cluster.kubeconfigPath, kubeconfig)

process.stdout.write(`meshvm demo cluster listening on ${cluster.url}
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
