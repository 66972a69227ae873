/**
 * startTestCluster(): the test API server on 127.0.0.1 with a random port, Istio and WAR CRDs
 * loaded, a kubeconfig written for it, and the mesh simulation wired to pods/proxy.
 *
 *   const cluster = await startTestCluster()
 *   await runCli(['war', 'list', '-A'], {env: cluster.env})
 *   await cluster.stop()
 */
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {randomBytes} from 'node:crypto'
import {fileURLToPath} from 'node:url'
import {parseAllDocuments} from 'yaml'
import type {PolicyRule, UserInfo} from './auth.js'
import {meshCa, type MeshCa} from './mesh-ca.js'
import {Mesh} from './mesh.js'
import {NamespaceController} from './namespaces.js'
import {testPki} from './pki.js'
import type {Crd} from './registry.js'
import {ApiServer} from './server.js'
import {Store} from './store.js'

export {Mesh, XDS_TYPES} from './mesh.js'
export {meshCa, createMeshCa, type MeshCa} from './mesh-ca.js'
export {XdsServer, type ServerCall, type CallHandler, type DiscoveryHandler} from './xds.js'
export type {FaultRule} from './faults.js'
export type {KubeObj} from './store.js'
export {resourceKey} from './store.js'

export const ISTIO_CRDS = fileURLToPath(new URL('../fixtures/crds/istio-networking.yaml', import.meta.url))
export const WAR_CRD = fileURLToPath(new URL('../fixtures/crds/workloadautoregistration.yaml', import.meta.url))

export interface TestClusterOptions {
  /** Reported by /version; below v1.24 service accounts get token Secrets automatically. */
  gitVersion?: string
  tokenControllerDelayMs?: number | false
  continueTtlMs?: number
  /** CRD files to load; default: the Istio networking CRDs and the WAR CRD. */
  crdFiles?: string[]
  /** Install Istio's ConfigMaps/Services and one istiod (default true). */
  istio?: boolean
  /** Name used for the kubeconfig's cluster, user and context. */
  contextName?: string
  /** Called with every credential the cluster issues (tests pass recordSecret). */
  onSecret?: (secret: string) => void
  /**
   * With Istio: run istiod's namespace controller, which writes istio-ca-root-cert into each
   * namespace this long after it appears. Off by default (tests that count objects in a namespace
   * would see one more); the demo and the VM tests turn it on.
   */
  rootCertDelayMs?: number | false
}

export interface TestCluster {
  url: string
  /** The admin bearer token (group system:masters). */
  token: string
  caPem: string
  dir: string
  kubeconfigPath: string
  contextName: string
  /** Environment for a CLI run against this cluster: KUBECONFIG, and a kubectl cache dir inside `dir`. */
  env: Record<string, string>
  server: ApiServer
  store: Store
  mesh: Mesh
  /** The mesh root CA (its certificate is in every istio-ca-root-cert ConfigMap istiod writes). */
  ca: MeshCa
  /** istiod's namespace controller (with Istio and rootCertDelayMs). */
  namespaces?: NamespaceController
  faults: ApiServer['faults']
  requests: ApiServer['requests']
  /** A user with a token; with `rules` only those (plus RBAC bindings in the store) are allowed. */
  addUser(name: string, options?: {groups?: string[]; rules?: PolicyRule[]}): string
  /** A kubeconfig for this cluster with a given token (for tests of other users). */
  kubeconfigFor(token: string, options?: {contextName?: string; path?: string}): string
  stop(): Promise<void>
}

export function loadCrds(file: string): Crd[] {
  return parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as Crd | null)
    .filter((d): d is Crd => d !== null && (d as {kind?: string}).kind === 'CustomResourceDefinition')
}

const crdCache = new Map<string, Crd[]>()

export function kubeconfigYaml(options: {server: string; caPem: string; token: string; name: string}): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${options.name}`,
    '  cluster:',
    `    server: ${options.server}`,
    `    certificate-authority-data: ${Buffer.from(options.caPem).toString('base64')}`,
    'users:',
    `- name: ${options.name}`,
    '  user:',
    `    token: ${options.token}`,
    'contexts:',
    `- name: ${options.name}`,
    '  context:',
    `    cluster: ${options.name}`,
    `    user: ${options.name}`,
    '    namespace: default',
    `current-context: ${options.name}`,
    '',
  ].join('\n')
}

export async function startTestCluster(options: TestClusterOptions = {}): Promise<TestCluster> {
  const pki = testPki()
  const store = new Store()
  const mesh = new Mesh(store, {pki})
  const server = new ApiServer({
    pki,
    store,
    gitVersion: options.gitVersion ?? 'v1.32.0',
    tokenControllerDelayMs: options.tokenControllerDelayMs ?? 150,
    continueTtlMs: options.continueTtlMs ?? 5 * 60_000,
    podProxy: (req) => mesh.podProxy(req),
    portForward: (namespace, pod, port) => mesh.portForward(namespace, pod, port),
    onSecret: options.onSecret,
  })
  const token = `admin-${randomBytes(16).toString('hex')}`
  options.onSecret?.(token)
  server.addUser(token, {name: 'meshvm-admin', groups: ['system:masters', 'system:authenticated']})
  for (const file of options.crdFiles ?? [ISTIO_CRDS, WAR_CRD]) {
    let crds = crdCache.get(file)
    if (!crds) crdCache.set(file, (crds = loadCrds(file)))
    for (const crd of crds) {
      server.registerCrd(crd)
      server.installCrd(crd)
    }
  }
  for (const ns of ['default', 'kube-system', 'kube-public']) {
    store.create('/namespaces', 'Namespace', {
      apiVersion: 'v1',
      kind: 'Namespace',
      metadata: {name: ns, labels: {'kubernetes.io/metadata.name': ns}},
      spec: {finalizers: ['kubernetes']},
      status: {phase: 'Active'},
    })
  }
  const ca = meshCa()
  let namespaces: NamespaceController | undefined
  if (options.istio !== false) {
    mesh.installIstio({gatewayIp: '203.0.113.10', rootCert: ca.rootPem})
    mesh.addIstiod({name: 'istiod-7d4b9c6f8-x2k9p'})
    if (options.rootCertDelayMs !== undefined && options.rootCertDelayMs !== false) namespaces = new NamespaceController(store, {rootCert: ca.rootPem, delayMs: options.rootCertDelayMs})
  }
  const url = await server.listen()
  const dir = mkdtempSync(join(tmpdir(), 'meshvm-cluster-'))
  const contextName = options.contextName ?? 'meshvm-test'
  const kubeconfigFor = (userToken: string, o: {contextName?: string; path?: string} = {}) => {
    const path = o.path ?? join(dir, `kubeconfig-${randomBytes(4).toString('hex')}`)
    writeFileSync(path, kubeconfigYaml({server: url, caPem: pki.caPem, token: userToken, name: o.contextName ?? contextName}), {mode: 0o600})
    return path
  }
  const kubeconfigPath = kubeconfigFor(token, {path: join(dir, 'kubeconfig')})
  return {
    url,
    token,
    caPem: pki.caPem,
    dir,
    kubeconfigPath,
    contextName,
    env: {KUBECONFIG: kubeconfigPath, KUBECACHEDIR: join(dir, 'kube-cache')},
    server,
    store,
    mesh,
    ca,
    namespaces,
    faults: server.faults,
    requests: server.requests,
    addUser(name, o = {}) {
      const userToken = `user-${name}-${randomBytes(12).toString('hex')}`
      options.onSecret?.(userToken)
      const user: UserInfo = {name, groups: [...(o.groups ?? []), 'system:authenticated'], rules: o.rules}
      server.addUser(userToken, user)
      return userToken
    },
    kubeconfigFor,
    async stop() {
      namespaces?.stop()
      await mesh.close()
      await server.close()
      rmSync(dir, {recursive: true, force: true})
    },
  }
}
