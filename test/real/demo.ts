/**
 * `npm run demo:real` (or `npm run demo:cluster -- --real`): the real control plane of test:real
 * (etcd, kube-apiserver for a main and a remote cluster, istiod, built from their Go modules), on
 * loopback, for trying meshvm by hand. Prints the KUBECONFIG line; Ctrl-C stops every process it
 * started and removes its files. --istio 1.30|1.31 picks the release (default MESHVM_REAL_ISTIO, else
 * the newest).
 */
import {copyFileSync, mkdirSync} from 'node:fs'
import {join, resolve} from 'node:path'
import {pathToFileURL} from 'node:url'
import {parseArgs} from 'node:util'
import {ISTIO_RELEASES, istioReleaseFromEnv, startRealControlPlane, type IstioRelease} from './control-plane.js'

const USAGE = `usage: npm run demo:real -- [--istio ${ISTIO_RELEASES.join('|')}]`

export async function runRealDemo(argv: string[]): Promise<never> {
  let istio: IstioRelease
  try {
    const {values} = parseArgs({args: argv, options: {istio: {type: 'string'}, real: {type: 'boolean'}}, strict: true})
    istio = istioReleaseFromEnv(values.istio ? {MESHVM_REAL_ISTIO: values.istio} : process.env)
  } catch (err) {
    process.stderr.write(`Error: ${(err as Error).message}\n${USAGE}\n`)
    process.exit(2)
  }
  let cp: Awaited<ReturnType<typeof startRealControlPlane>>
  try {
    cp = await startRealControlPlane({istio, onProgress: (l) => process.stderr.write(`${l}\n`)})
  } catch (err) {
    process.stderr.write(`Error: ${(err as Error).message}\n`)
    process.exit(1)
  }
  // A stable path, so the printed line keeps working across restarts of the demo.
  const dir = resolve(process.env.MESHVM_DEMO_DIR ?? '.demo-real')
  mkdirSync(dir, {recursive: true})
  const kubeconfig = join(dir, 'kubeconfig')
  copyFileSync(cp.kubeconfigPath, kubeconfig)
  process.stdout.write(`meshvm real control plane: kube-apiserver ${cp.binaries.versions.kubernetes} (contexts main, current, and remote), etcd ${cp.binaries.versions.etcd}, istiod ${cp.istioVersion}
  main API server ${cp.main.url}, remote ${cp.remote?.url}; istiod pod ${'istio-system/istiod-real-0'} (port-forward through a kubelet stand-in), xDS at ${cp.xdsAddress}

Use it from another shell:

  export KUBECONFIG=${kubeconfig}
  meshvm onboard web -n vm-apps --create-namespace -p http=8080 --probe-http 8080/ready --apply --bundle ./web-vm --autoregister
  meshvm proxy-status -o wide
  meshvm proxy-status --xds-address ${cp.xdsAddress}
  meshvm create-remote-secret --context remote --name remote --create-service-account --verify --apply-to main
  meshvm remote-secret status

Press Ctrl-C to stop.
`)
  return new Promise<never>(() => {
    const stop = async () => {
      await cp.stop()
      process.exit(0)
    }
    process.once('SIGINT', stop)
    process.once('SIGTERM', stop)
  })
}

if (import.meta.url === pathToFileURL(process.argv[1] ?? '').href) await runRealDemo(process.argv.slice(2))
