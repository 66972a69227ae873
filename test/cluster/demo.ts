/**
 * `npm run demo:cluster`: the test API server with a realistic demo mesh, for trying meshvm (and
 * kubectl) without a cluster. Prints the KUBECONFIG line to use; runs until Ctrl-C.
 */
import {copyFileSync, mkdirSync} from 'node:fs'
import {join, resolve} from 'node:path'
import {parseArgs} from 'node:util'
import {startTestCluster} from './index.js'
import {seedDemoMesh} from './demo-mesh.js'

// --name (or --context): the kubeconfig context and cluster name; --cluster-id: Istio's cluster ID.
// Two demos with different names run side by side: KUBECONFIG=.demo-cluster-east/kubeconfig:.demo-cluster-west/kubeconfig.
const USAGE = 'usage: npm run demo:cluster -- [--name NAME] [--cluster-id ID]'
let flags: {name?: string; context?: string; 'cluster-id'?: string}
try {
  flags = parseArgs({options: {name: {type: 'string'}, context: {type: 'string'}, 'cluster-id': {type: 'string'}}, strict: true}).values
} catch (err) {
  process.stderr.write(`Error: ${(err as Error).message}\n${USAGE}\n`)
  process.exit(2)
}
const name = flags.name ?? flags.context
const DNS = /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/
for (const [flag, value] of [['--name', name], ['--cluster-id', flags['cluster-id']]] as const) {
  if (value !== undefined && !DNS.test(value)) {
    process.stderr.write(`Error: ${flag} ${JSON.stringify(value)}: expected lower case letters, digits, '-' and '.'\n${USAGE}\n`)
    process.exit(2)
  }
}

const cluster = await startTestCluster({contextName: name ?? 'meshvm-demo'})
seedDemoMesh(cluster, {clusterId: flags['cluster-id']})
// A stable path, so the printed line keeps working across restarts of the demo.
const dir = resolve(process.env.MESHVM_DEMO_DIR ?? (name ? `.demo-cluster-${name}` : '.demo-cluster'))
mkdirSync(dir, {recursive: true})
const kubeconfig = join(dir, 'kubeconfig')
copyFileSync(cluster.kubeconfigPath, kubeconfig)

process.stdout.write(`meshvm demo cluster ${cluster.contextName} (Istio cluster ID ${flags['cluster-id'] ?? 'cluster1'}) listening on ${cluster.url}
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
