/**
 * `--verify`: uses the generated kubeconfig itself (its server, CA and token) to check that it
 * reaches the API server and that its identity has the read permissions istiod in another cluster
 * needs (SelfSubjectAccessReview). Nothing is written. Messages never carry the kubeconfig.
 */
import {ExitCode, MeshvmError} from '../errors.js'
import {KubeClient} from '../kube/client.js'
import {parseKubeconfig, selectContext, type LoadedKubeConfig} from '../kube/config.js'
import {canI, type AccessAttributes} from '../kube/access-review.js'

const reads = (group: string, ...resources: string[]) => resources.flatMap((resource) => ['get', 'list', 'watch'].map((verb) => ({verb, group, resource})))

/** What istiod reads in a remote cluster: a sample of istio-reader-clusterrole, cluster-wide. */
const REQUIRED_PERMISSIONS: AccessAttributes[] = [
  ...reads('', 'pods', 'services', 'namespaces', 'nodes', 'secrets', 'configmaps'),
  ...reads('discovery.k8s.io', 'endpointslices'),
  ...reads('networking.istio.io', 'serviceentries', 'workloadentries'),
  {verb: 'create', group: 'authentication.k8s.io', resource: 'tokenreviews'},
]

export function permissionText(p: AccessAttributes): string {
  return `${p.verb} ${p.group ? `${p.resource}.${p.group}` : p.resource}`
}

export interface VerifyResult {
  gitVersion?: string
  /** Set when the API server could not be reached or rejected the credentials. */
  connectError?: MeshvmError
  allowed: AccessAttributes[]
  denied: AccessAttributes[]
}

/** A client for the generated kubeconfig: its only context, no retries beyond one. */
async function clientFor(kubeconfig: string, timeoutMs: number): Promise<KubeClient> {
  const source = 'the generated kubeconfig'
  let loaded: LoadedKubeConfig
  try {
    const config = parseKubeconfig(kubeconfig, source)
    loaded = selectContext(config, config.currentContext, source)
  } catch {
    // Its messages would name the fields of meshvm's own output: a bug, not the user's input.
    throw new MeshvmError('--verify: the generated kubeconfig could not be loaded', {exit: ExitCode.BUG, code: 'InternalError'})
  }
  return KubeClient.create({...loaded, namespace: 'default'}, {timeoutMs, maxRetries: 1, userAgent: 'meshvm (create-remote-secret --verify)'})
}

/** A failure to connect or authenticate, on /version or on a review, is the result's connectError. */
export async function verifyRemoteKubeconfig(kubeconfig: string, options: {timeoutMs: number}): Promise<VerifyResult> {
  const client = await clientFor(kubeconfig, options.timeoutMs)
  const result: VerifyResult = {allowed: [], denied: []}
  try {
    result.gitVersion = (await client.get<{gitVersion?: string}>('/version'))?.gitVersion
    const answers = await Promise.all(REQUIRED_PERMISSIONS.map(async (p) => ({p, allowed: await canI(client, p)})))
    for (const a of answers) (a.allowed ? result.allowed : result.denied).push(a.p)
    return result
  } catch (err) {
    if (err instanceof MeshvmError) {
      result.connectError = err
      return result
    }
    throw err
  } finally {
    client.close()
  }
}
