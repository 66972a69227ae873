/**
 * `npm run demo:cluster`: the test API server with a realistic demo mesh, for trying meshvm (and
 * kubectl) without a cluster. Prints the KUBECONFIG line to use; runs until Ctrl-C.
 */
import {copyFileSync, mkdirSync} from 'node:fs'
import {join, resolve} from 'node:path'
import {startTestCluster} from './index.js'
import {seedDemoMesh} from './demo-mesh.js'
import {parseScale, seedProxies, seedWars} from './scale.js'

// `--scale wars=N,proxies=N,istiods=N`: a large cluster on top of the demo mesh, seeded as `npm run
// bench` seeds its cases (test/cluster/scale.ts), to reproduce them by hand.
const scaleAt = process.argv.indexOf('--scale')
let scale
try {
  scale = scaleAt < 0 ? undefined : parseScale(process.argv[scaleAt + 1] ?? '')
} catch (err) {
  process.stderr.write(`Error: ${(err as Error).message}\n`)
  process.exit(2)
}
const cluster = await startTestCluster({contextName: 'meshvm-demo'})
seedDemoMesh(cluster)
if (scale) {
  seedWars(cluster, scale.wars)
  seedProxies(cluster, scale.proxies, scale.proxies > 0 ? scale.istiods : 0)
}
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
