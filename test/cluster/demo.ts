/**
 * `npm run demo:cluster`: the test API server with a realistic demo mesh, for trying meshvm (and
 * kubectl) without a cluster. Prints the KUBECONFIG line to use; runs until Ctrl-C.
 */
import {copyFileSync, mkdirSync} from 'node:fs'
import {join, resolve} from 'node:path'
import {startTestCluster} from './index.js'
import {seedDemoMesh} from './demo-mesh.js'

const cluster = await startTestCluster({contextName: 'meshvm-demo'})
// --no-debug-http: every istiod runs with ENABLE_DEBUG_ON_HTTP=false, so only the xDS path (15012) answers.
const debugHttp = !process.argv.includes('--no-debug-http')
cluster.mesh.debugHttpDefault = debugHttp
seedDemoMesh(cluster)
for (const name of cluster.mesh.istiods.keys()) cluster.mesh.setIstiod(name, {debugHttp})
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

Press Ctrl-C to stop.
`)
const stop = async () => {
  await cluster.stop()
  process.exit(0)
}
process.on('SIGINT', stop)
process.on('SIGTERM', stop)
