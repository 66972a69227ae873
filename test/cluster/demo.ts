/**
 * `npm run demo:cluster`: the test API server with a realistic demo mesh, for trying meshvm (and
 * kubectl) without a cluster. Prints the KUBECONFIG line to use; runs until Ctrl-C.
 */
import {copyFileSync, mkdirSync} from 'node:fs'
import {join, resolve} from 'node:path'
import {startTestCluster} from './index.js'
import {seedDemoMesh} from './demo-mesh.js'

const cluster = await startTestCluster({contextName: 'meshvm-demo'})
seedDemoMesh(cluster)
// A stable path, so the printed line keeps working across restarts of the demo.
const dir = resolve(process.env.MESHVM_DEMO_DIR ?? '.demo-cluster')
mkdirSync(dir, {recursive: true})
const kubeconfig = join(dir, 'kubeconfig')
copyFileSync(cluster.kubeconfigPath, kubeconfig)

process.stdout.write(`meshvm demo cluster listening on ${cluster.url}
  ${cluster.store.count('/pods')} pods, ${cluster.store.count('networking.istio.io/workloadentries')} VMs (WorkloadEntries), ${cluster.store.count('runtime.onboarding.tetrate.io/workloadautoregistrations')} WARs, 2 istiod revisions

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
