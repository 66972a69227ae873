/**
 * Reads, from the cluster, every value the VM bundle needs, exactly where istioctl reads them
 * (istioctl-behaviour.md §3.4), and turns each missing piece into an error that says what to do.
 */
import {shellQuote} from '../cli/prompt.js'
import {ExitCode, MeshvmError, UsageError} from '../errors.js'
import type {KubeClient} from '../kube/client.js'
import {KubeApiError} from '../kube/errors.js'
import {dns1123Subdomain} from '../validation/kube.js'
import {sleep} from '../util/sleep.js'
import {Resources, resourcePath} from '../kube/resources.js'
import type {GatewayAddress, WorkloadGroupLike} from './generate.js'
import {isRevisioned} from './generate.js'

interface ConfigMap {
  data?: Record<string, string>
}

export interface GatewayOptions {
  ingressIp?: string
  /** `svc` or `svc.ns` (ns defaults to the Istio namespace). */
  ingressService: string
  /** The VM reaches istiod without the gateway (flat network): write an empty hosts file. */
  noHosts: boolean
}

export async function fetchWorkloadGroup(client: KubeClient, name: string, namespace: string): Promise<WorkloadGroupLike> {
  // Before any request: the name becomes a file name (--archive) and part of install.sh.
  const problem = dns1123Subdomain(name)
  if (problem) throw new UsageError(`WorkloadGroup name ${JSON.stringify(name)}: ${problem}`)
  const wg = await client.getOptional<WorkloadGroupLike>(resourcePath(Resources.workloadGroups, {namespace, name}))
  if (!wg) {
    throw new MeshvmError(`workloadgroup ${JSON.stringify(name)} not found in namespace ${JSON.stringify(namespace)}`, {
      exit: ExitCode.NOT_FOUND,
      code: 'NotFound',
      hints: [`create it first: meshvm onboard ${shellQuote(name)} -n ${shellQuote(namespace)} --port … --apply`],
    })
  }
  return wg
}

async function configMap(client: KubeClient, namespace: string, name: string): Promise<ConfigMap | undefined> {
  return client.getOptional<ConfigMap>(resourcePath(Resources.configMaps, {namespace, name}))
}

function revisionHint(revision: string | undefined): string {
  return isRevisioned(revision) ? 'check --revision and -i/--istio-namespace' : 'if the control plane is revisioned, pass --revision (and -i if Istio is not in istio-system)'
}

/** `values.global.multiCluster.clusterName` of the sidecar injector; Istio's own default is "Kubernetes". */
export async function fetchClusterId(client: KubeClient, istioNamespace: string, revision: string | undefined, warn: (text: string) => void): Promise<string> {
  const name = isRevisioned(revision) ? `istio-sidecar-injector-${revision}` : 'istio-sidecar-injector'
  const cm = await configMap(client, istioNamespace, name)
  if (!cm) {
    throw new MeshvmError(`cannot determine the cluster ID: ConfigMap ${istioNamespace}/${name} not found`, {
      exit: ExitCode.NOT_FOUND,
      code: 'NotFound',
      hints: [`pass --cluster-id, or ${revisionHint(revision)}`],
    })
  }
  let clusterName: unknown
  try {
    clusterName = (JSON.parse(cm.data?.values ?? '{}') as {global?: {multiCluster?: {clusterName?: unknown}}}).global?.multiCluster?.clusterName
  } catch {
    throw new MeshvmError(`cannot determine the cluster ID: the "values" key of ConfigMap ${istioNamespace}/${name} is not valid JSON`, {
      exit: ExitCode.FAILURE,
      code: 'BadConfigMap',
      hints: ['pass --cluster-id'],
    })
  }
  if (typeof clusterName === 'string' && clusterName !== '') return clusterName
  warn(`ConfigMap ${istioNamespace}/${name} sets no global.multiCluster.clusterName; using Istio's default cluster ID "Kubernetes" (override with --cluster-id)`)
  return 'Kubernetes'
}

export async function fetchMeshConfig(client: KubeClient, istioNamespace: string, revision: string | undefined): Promise<string> {
  const name = isRevisioned(revision) ? `istio-${revision}` : 'istio'
  const cm = await configMap(client, istioNamespace, name)
  if (!cm) {
    throw new MeshvmError(`ConfigMap ${istioNamespace}/${name} (the mesh config) not found`, {exit: ExitCode.NOT_FOUND, code: 'NotFound', hints: [revisionHint(revision)]})
  }
  return cm.data?.mesh ?? ''
}

const rootCertHint = (namespace: string) =>
  `istiod copies the mesh root certificate into every namespace it watches; check that istiod is running and that namespace ${namespace} is not excluded by discoverySelectors`

export interface RootCertWait {
  /** How long to wait for istiod to write the ConfigMap into a namespace it has not reached yet. */
  timeoutMs: number
  pollIntervalMs?: number
  signal?: AbortSignal
  /** Told once, when the ConfigMap is not there yet. */
  progress?: (line: string) => void
}

/**
 * `root-cert.pem` of ConfigMap istio-ca-root-cert in the group's namespace. istiod writes it a
 * moment after a namespace appears (namespacecontroller.go), so right after `--create-namespace`
 * it is not there yet: wait for it, up to `timeoutMs`, instead of failing at once.
 */
export async function fetchRootCert(client: KubeClient, namespace: string, wait: RootCertWait = {timeoutMs: 0}): Promise<string> {
  const started = Date.now()
  let told = false
  for (;;) {
    const cm = await configMap(client, namespace, 'istio-ca-root-cert')
    const cert = cm?.data?.['root-cert.pem']
    if (cert) return cert
    const waited = Date.now() - started
    if (wait.signal?.aborted || waited >= wait.timeoutMs) {
      throw new MeshvmError(`ConfigMap ${namespace}/istio-ca-root-cert ${cm ? 'has no root-cert.pem' : 'not found'}${wait.timeoutMs > 0 ? ` after waiting ${Math.round(waited / 1000)}s` : ''}`, {
        exit: wait.timeoutMs > 0 ? ExitCode.TIMEOUT : ExitCode.NOT_FOUND,
        code: 'NotFound',
        hints: [rootCertHint(namespace), ...(wait.timeoutMs > 0 ? ['wait longer with --timeout'] : [])],
      })
    }
    if (!told) {
      told = true
      wait.progress?.(`Waiting up to ${Math.round(wait.timeoutMs / 1000)}s for istiod to publish the mesh root certificate in namespace ${namespace} (ConfigMap istio-ca-root-cert)…`)
    }
    await sleep(Math.min(wait.pollIntervalMs ?? 500, Math.max(0, wait.timeoutMs - waited)), wait.signal)
  }
}

export interface IssuedToken {
  token: string
  expiresAt?: Date
}

/** A TokenRequest for the VM's service account, audience istio-ca, as istioctl sends it. */
export async function requestToken(client: KubeClient, namespace: string, serviceAccount: string, expirationSeconds: number): Promise<IssuedToken> {
  try {
    const res = await client.request<{status?: {token?: string; expirationTimestamp?: string}}>({
      method: 'POST',
      path: resourcePath(Resources.serviceAccounts, {namespace, name: serviceAccount, subresource: 'token'}),
      body: {apiVersion: 'authentication.k8s.io/v1', kind: 'TokenRequest', spec: {audiences: ['istio-ca'], expirationSeconds}},
    })
    const token = res?.status?.token
    if (!token) throw new MeshvmError(`the API server returned no token for service account ${namespace}/${serviceAccount}`, {exit: ExitCode.FAILURE, code: 'NoToken'})
    const expiresAt = res.status?.expirationTimestamp ? new Date(res.status.expirationTimestamp) : undefined
    return {token, expiresAt}
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 404) {
      throw new MeshvmError(`service account ${JSON.stringify(serviceAccount)} not found in namespace ${JSON.stringify(namespace)} (needed to issue the VM's token)`, {
        exit: ExitCode.NOT_FOUND,
        code: 'NotFound',
        hints: [`create it: kubectl create serviceaccount ${shellQuote(serviceAccount)} -n ${shellQuote(namespace)}  (or meshvm onboard … --create-service-account --apply)`],
      })
    }
    throw err
  }
}

export interface ServiceLike {
  status?: {loadBalancer?: {ingress?: {ip?: string; hostname?: string}[]}}
  spec?: {externalIPs?: string[]}
}

/** Where a VM reaches a gateway Service, as bundles write it: load-balancer IP, else external IP, else load-balancer host name. */
export function serviceGatewayAddress(svc: ServiceLike | undefined): GatewayAddress | undefined {
  const ingress = svc?.status?.loadBalancer?.ingress?.[0]
  if (ingress?.ip) return {kind: 'ip', address: ingress.ip}
  const external = svc?.spec?.externalIPs?.[0]
  if (external) return {kind: 'ip', address: external}
  if (ingress?.hostname) return {kind: 'hostname', hostname: ingress.hostname}
  return undefined
}

/** --ingress-service `NAME` or `NAME.NAMESPACE` (the namespace defaults to Istio's): [name, namespace]. */
export function gatewayService(ingressService: string, istioNamespace: string): [string, string] {
  const parts = ingressService.split('.')
  return parts.length === 2 ? [parts[0]!, parts[1]!] : [ingressService, istioNamespace]
}

export async function findGateway(client: KubeClient, istioNamespace: string, options: GatewayOptions): Promise<GatewayAddress> {
  if (options.noHosts) return {kind: 'none'}
  // writeBundle has checked it is an IP address (checkBundleValues).
  if (options.ingressIp !== undefined) return {kind: 'ip', address: options.ingressIp}
  const [name, namespace] = gatewayService(options.ingressService, istioNamespace)
  const svc = await client.getOptional<ServiceLike>(resourcePath(Resources.services, {namespace, name}))
  const address = serviceGatewayAddress(svc)
  if (address) return address
  throw new MeshvmError(svc ? `the east-west gateway Service ${namespace}/${name} has no load-balancer address or external IP yet` : `the east-west gateway Service ${namespace}/${name} not found`, {
    exit: ExitCode.NOT_FOUND,
    code: 'NoGateway',
    hints: ['pass --ingress-ip ADDRESS (or --ingress-service NAME[.NS]); use --no-hosts if the VM can reach istiod directly'],
  })
}
