/**
 * The real control plane on loopback, for `npm run test:real` and `npm run demo:real`: etcd,
 * kube-apiserver with kube-controller-manager (a main cluster and a remote one on the same etcd under
 * another prefix) and istiod (pilot-discovery), all built from their Go modules by
 * tools/control-plane/build.sh.
 *
 * - PKI from openssl: one CA signs the API servers' and the kubelet stand-in's serving certificates;
 *   each API server has its own service-account key and issuer (TokenRequest, TokenReview) and a static
 *   admin token (system:masters); RBAC on.
 * - The Istio CRDs come from the istio module itself (manifests/charts/base/files/crd-all.gen.yaml),
 *   created with POST (client-side apply would overflow the annotation limit), plus the
 *   WorkloadAutoRegistration CRD of test/fixtures.
 * - istiod runs as a process in an empty working directory with auto-registration and health checks on
 *   and a short WorkloadEntry grace period; every listener on 127.0.0.1 and a free port.
 * - There is no kubelet. A Node and a Running istiod Pod object are created, and a minimal kubelet
 *   stand-in (kubelet.ts) serves the API server's `pods/portforward` upgrades by dialling istiod's real
 *   loopback ports, so meshvm reaches istiod exactly as in a cluster: through the real API server's
 *   port-forward, arriving on istiod's loopback.
 * - stop() sends SIGTERM to every process it started (SIGKILL after a grace), then removes its directory.
 */
import {execFile, spawn, type ChildProcess} from 'node:child_process'
import {randomBytes} from 'node:crypto'
import {appendFileSync, closeSync, existsSync, mkdirSync, mkdtempSync, openSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {request as httpsRequest} from 'node:https'
import {request as httpRequest} from 'node:http'
import {createServer} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {promisify} from 'node:util'
import {parseAllDocuments} from 'yaml'
import {startKubeletStandIn, type KubeletStandIn} from './kubelet.js'
import {hasCondition} from '../helpers/stories.js'

const run = promisify(execFile)
export const REPO_ROOT = fileURLToPath(new URL('../..', import.meta.url))
export const BUILD_SCRIPT = join(REPO_ROOT, 'tools/control-plane/build.sh')
export const WAR_CRD = join(REPO_ROOT, 'test/fixtures/crds/workloadautoregistration.yaml')

export const ISTIO_RELEASES = ['1.30', '1.31'] as const
export type IstioRelease = (typeof ISTIO_RELEASES)[number]

/** The release MESHVM_REAL_ISTIO names (default the newest). */
export function istioReleaseFromEnv(env: NodeJS.ProcessEnv = process.env): IstioRelease {
  const v = env.MESHVM_REAL_ISTIO ?? ISTIO_RELEASES[ISTIO_RELEASES.length - 1]!
  if (!(ISTIO_RELEASES as readonly string[]).includes(v)) throw new Error(`MESHVM_REAL_ISTIO=${v}: expected one of ${ISTIO_RELEASES.join(', ')}`)
  return v as IstioRelease
}

export interface Binaries {
  etcd: string
  kubeApiserver: string
  kubeControllerManager: string
  pilotDiscovery: Record<IstioRelease, string>
  istioctl: Record<IstioRelease, string>
  /** The istio module's directory in the module cache (for its CRDs), by release. */
  istioModule: Record<IstioRelease, string>
  versions: {etcd: string; kubernetes: string; istio: Record<IstioRelease, string>}
}

/**
 * Builds (or reuses) the binaries with tools/control-plane/build.sh and returns where they are.
 * Throws the script's one-line reason when Go or the module proxy is missing.
 */
export async function buildControlPlane(options: {onProgress?: (line: string) => void} = {}): Promise<Binaries> {
  const child = spawn('bash', [BUILD_SCRIPT], {stdio: ['ignore', 'pipe', 'pipe']})
  let out = ''
  let err = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (out += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => {
    err += d
    for (const line of d.split('\n')) if (line) options.onProgress?.(line)
  })
  const code = await new Promise<number>((resolve) => child.on('close', (c) => resolve(c ?? 1)))
  if (code !== 0) {
    const reason =
      err
        .split('\n')
        .filter((l) => l.startsWith('control-plane:'))
        .pop() ??
      err.trim().split('\n').pop() ??
      `exit ${code}`
    throw new Error(reason)
  }
  const kv = new Map<string, string>()
  for (const line of out.split('\n')) {
    const i = line.indexOf('=')
    if (i > 0) kv.set(line.slice(0, i), line.slice(i + 1))
  }
  const need = (k: string) => {
    const v = kv.get(k)
    if (!v) throw new Error(`tools/control-plane/build.sh did not print ${k}=`)
    return v
  }
  const per = (prefix: string) => Object.fromEntries(ISTIO_RELEASES.map((r) => [r, need(`${prefix}_${r.replace('.', '_')}`)])) as Record<IstioRelease, string>
  return {
    etcd: need('etcd'),
    kubeApiserver: need('kube_apiserver'),
    kubeControllerManager: need('kube_controller_manager'),
    pilotDiscovery: per('pilot_discovery'),
    istioctl: per('istioctl'),
    istioModule: per('istio_module'),
    versions: {etcd: need('etcd_version'), kubernetes: need('kubernetes_version'), istio: per('istio_version')},
  }
}

/** A free TCP port on 127.0.0.1 (closed again before it is used; the processes bind it themselves). */
export async function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const s = createServer()
    s.unref()
    s.on('error', reject)
    s.listen(0, '127.0.0.1', () => {
      const port = (s.address() as {port: number}).port
      s.close(() => resolve(port))
    })
  })
}

const sleep = (ms: number) => new Promise((r) => setTimeout(r, ms))

/** Every process started here and still running: killed if this Node process exits without stop(). */
const live = new Set<Proc>()
process.once('exit', () => {
  for (const p of live) p.child.kill('SIGKILL')
})

/** A started process: its PID, log file, and a way to stop it (SIGTERM, then SIGKILL after graceMs). */
class Proc {
  private exited: Promise<void>
  private done = false
  constructor(
    readonly name: string,
    readonly child: ChildProcess,
    readonly logFile: string,
  ) {
    this.exited = new Promise((resolve) => {
      const done = () => {
        this.done = true
        live.delete(this)
        resolve()
      }
      child.once('exit', done)
      // e.g. ENOENT: the binary is missing; waitFor reports the exit with the log's tail
      child.once('error', (err) => {
        appendFileSync(logFile, `\n${name}: ${err.message}\n`)
        done()
      })
    })
    live.add(this)
  }

  get running(): boolean {
    return !this.done
  }

  /** The last lines of its log, for an error message. */
  tail(lines = 15): string {
    try {
      return readFileSync(this.logFile, 'utf8').trimEnd().split('\n').slice(-lines).join('\n')
    } catch {
      return ''
    }
  }

  async stop(graceMs = 10_000): Promise<void> {
    if (this.done) return
    this.child.kill('SIGTERM')
    const timer = setTimeout(() => this.child.kill('SIGKILL'), graceMs)
    await this.exited
    clearTimeout(timer)
  }
}

function startProc(name: string, bin: string, args: string[], o: {dir: string; cwd?: string; env?: NodeJS.ProcessEnv}): Proc {
  const logFile = join(o.dir, `${name}.log`)
  const fd = openSync(logFile, 'a')
  const child = spawn(bin, args, {cwd: o.cwd ?? o.dir, env: o.env ?? {PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: o.dir}, stdio: ['ignore', fd, fd]})
  closeSync(fd)
  return new Proc(name, child, logFile)
}

async function waitFor(what: string, proc: Proc, check: () => Promise<boolean>, timeoutMs: number): Promise<void> {
  const deadline = Date.now() + timeoutMs
  for (;;) {
    if (!proc.running) throw new Error(`${proc.name} exited while waiting for ${what}:\n${proc.tail()}`)
    try {
      if (await check()) return
    } catch {
      // not up yet
    }
    if (Date.now() > deadline) throw new Error(`timed out waiting for ${what}:\n${proc.tail()}`)
    await sleep(200)
  }
}

export interface HttpAnswer {
  status: number
  body: string
}

export function httpGet(url: string, o: {ca?: string; token?: string; timeoutMs?: number} = {}): Promise<HttpAnswer> {
  return new Promise((resolve, reject) => {
    const u = new URL(url)
    const req = (u.protocol === 'https:' ? httpsRequest : httpRequest)(
      u,
      {method: 'GET', ca: o.ca, headers: o.token ? {Authorization: `Bearer ${o.token}`} : {}, timeout: o.timeoutMs ?? 5000},
      (res) => {
        let body = ''
        res.setEncoding('utf8').on('data', (d: string) => (body += d))
        res.on('end', () => resolve({status: res.statusCode ?? 0, body}))
        res.on('error', reject)
      },
    )
    req.on('timeout', () => req.destroy(new Error(`GET ${url}: timeout`)))
    req.on('error', reject)
    req.end()
  })
}

/**
 * An admin client of one API server: JSON requests with the static admin token. `T` of each method
 * names the fields the caller reads of the answer (unknown when it reads none).
 */
export class Kube {
  constructor(
    readonly url: string,
    private readonly ca: string,
    private readonly token: string,
  ) {}

  request<T = unknown>(method: string, path: string, body?: unknown, contentType = 'application/json'): Promise<{status: number; json: T}> {
    return new Promise((resolve, reject) => {
      const data = body === undefined ? undefined : typeof body === 'string' ? body : JSON.stringify(body)
      const req = httpsRequest(
        new URL(path, this.url),
        {
          method,
          ca: this.ca,
          timeout: 30_000,
          headers: {Authorization: `Bearer ${this.token}`, Accept: 'application/json', ...(data !== undefined ? {'Content-Type': contentType, 'Content-Length': Buffer.byteLength(data)} : {})},
        },
        (res) => {
          let text = ''
          res.setEncoding('utf8').on('data', (d: string) => (text += d))
          res.on('end', () => {
            let json: unknown
            try {
              json = text ? JSON.parse(text) : undefined
            } catch {
              json = text
            }
            resolve({status: res.statusCode ?? 0, json: json as T})
          })
        },
      )
      req.on('timeout', () => req.destroy(new Error(`${method} ${path}: timeout`)))
      req.on('error', reject)
      req.end(data)
    })
  }

  /** Like request, but throws unless the status is 2xx (or one of `ok`). */
  async must<T = unknown>(method: string, path: string, body?: unknown, o: {ok?: number[]; contentType?: string} = {}): Promise<T> {
    const r = await this.request<T>(method, path, body, o.contentType)
    if ((r.status < 200 || r.status > 299) && !(o.ok ?? []).includes(r.status)) {
      throw new Error(`${method} ${path}: HTTP ${r.status}: ${typeof r.json === 'string' ? r.json : ((r.json as {message?: string})?.message ?? '')}`)
    }
    return r.json
  }

  /** Creates an object; an existing one (409) is left as it is. */
  create(path: string, obj: unknown): Promise<unknown> {
    return this.must('POST', path, obj, {ok: [409]})
  }

  get<T = unknown>(path: string): Promise<{status: number; json: T}> {
    return this.request<T>('GET', path)
  }

  /** Polls `path` until `predicate` holds for its object (404 counts as undefined). */
  async waitFor<T = unknown>(path: string, predicate: (obj: T | undefined) => boolean, what: string, timeoutMs = 60_000): Promise<T | undefined> {
    const deadline = Date.now() + timeoutMs
    let last: T | undefined
    for (;;) {
      const r = await this.get<T>(path)
      last = r.status === 404 ? undefined : r.json
      if (r.status !== 404 && (r.status < 200 || r.status > 299)) throw new Error(`GET ${path}: HTTP ${r.status}`)
      if (predicate(last)) return last
      if (Date.now() > deadline) throw new Error(`timed out waiting for ${what} (${path}): last ${JSON.stringify(last)?.slice(0, 400)}`)
      await sleep(200)
    }
  }
}

async function openssl(cwd: string, ...args: string[]): Promise<void> {
  await run('openssl', args, {cwd})
}

interface Pki {
  dir: string
  ca: string
  caPem: string
}

async function makePki(dir: string): Promise<Pki> {
  mkdirSync(dir, {recursive: true})
  await openssl(dir, 'req', '-x509', '-newkey', 'rsa:2048', '-nodes', '-keyout', 'ca.key', '-out', 'ca.crt', '-days', '2', '-subj', '/CN=meshvm-real-ca')
  // apiserver serving cert (both API servers), and the kubelet stand-in's
  for (const [name, san] of [
    ['apiserver', 'IP:127.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc'],
    ['kubelet', 'IP:127.0.0.1,DNS:localhost'],
  ] as const) {
    await openssl(dir, 'req', '-newkey', 'rsa:2048', '-nodes', '-keyout', `${name}.key`, '-out', `${name}.csr`, '-subj', `/CN=${name}`)
    writeFileSync(join(dir, `${name}.ext`), `subjectAltName=${san}\nextendedKeyUsage=serverAuth\n`)
    await openssl(dir, 'x509', '-req', '-in', `${name}.csr`, '-CA', 'ca.crt', '-CAkey', 'ca.key', '-CAcreateserial', '-out', `${name}.crt`, '-days', '2', '-extfile', `${name}.ext`)
  }
  for (const name of ['sa-main', 'sa-remote']) await openssl(dir, 'genrsa', '-out', `${name}.key`, '2048')
  return {dir, ca: join(dir, 'ca.crt'), caPem: readFileSync(join(dir, 'ca.crt'), 'utf8')}
}

export function kubeconfigYaml(o: {server: string; caPem: string; token: string; name: string; namespace?: string}): string {
  return [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    `- name: ${o.name}`,
    '  cluster:',
    `    server: ${o.server}`,
    `    certificate-authority-data: ${Buffer.from(o.caPem).toString('base64')}`,
    'users:',
    `- name: ${o.name}`,
    '  user:',
    `    token: ${o.token}`,
    'contexts:',
    `- name: ${o.name}`,
    '  context:',
    `    cluster: ${o.name}`,
    `    user: ${o.name}`,
    `    namespace: ${o.namespace ?? 'default'}`,
    `current-context: ${o.name}`,
    '',
  ].join('\n')
}

export interface ApiServer {
  name: string
  url: string
  port: number
  token: string
  /** A kubeconfig file for this server alone (context `name`), mode 0600. */
  kubeconfigPath: string
  kube: Kube
  proc: Proc
  /** Its kube-controller-manager. */
  kcm: Proc
}

async function startApiServer(o: {name: string; dir: string; pki: Pki; etcdUrl: string; prefix: string; saKey: string; issuer: string; bin: string; kcm: string}): Promise<ApiServer> {
  const port = await freePort()
  const token = randomBytes(24).toString('hex')
  const own = join(o.dir, o.name)
  mkdirSync(join(own, 'certs'), {recursive: true})
  writeFileSync(join(own, 'tokens.csv'), `${token},meshvm-admin,meshvm-admin-uid,"system:masters"\n`, {mode: 0o600})
  const p = o.pki.dir
  const args = [
    `--etcd-servers=${o.etcdUrl}`,
    `--etcd-prefix=${o.prefix}`,
    '--bind-address=127.0.0.1',
    `--secure-port=${port}`,
    '--advertise-address=127.0.0.1',
    '--endpoint-reconciler-type=none',
    `--tls-cert-file=${join(p, 'apiserver.crt')}`,
    `--tls-private-key-file=${join(p, 'apiserver.key')}`,
    `--cert-dir=${join(own, 'certs')}`,
    '--service-cluster-ip-range=10.96.0.0/16',
    `--service-account-issuer=${o.issuer}`,
    `--service-account-signing-key-file=${o.saKey}`,
    `--service-account-key-file=${o.saKey}`,
    '--authorization-mode=RBAC',
    `--token-auth-file=${join(own, 'tokens.csv')}`,
    `--client-ca-file=${o.pki.ca}`,
    // the kubelet stand-in: its address from the Node, its certificate checked against the CA
    '--kubelet-preferred-address-types=InternalIP',
    `--kubelet-certificate-authority=${o.pki.ca}`,
    '--v=1',
  ]
  const proc = startProc(`kube-apiserver-${o.name}`, o.bin, args, {dir: o.dir})
  const url = `https://127.0.0.1:${port}`
  const kube = new Kube(url, o.pki.caPem, token)
  await waitFor(`kube-apiserver ${o.name} /readyz`, proc, async () => (await httpGet(`${url}/readyz`, {ca: o.pki.caPem, token})).status === 200, 120_000)
  const kubeconfigPath = join(o.dir, `${o.name}.kubeconfig`)
  writeFileSync(kubeconfigPath, kubeconfigYaml({server: url, caPem: o.pki.caPem, token, name: o.name}), {mode: 0o600})
  // The controllers a cluster has and meshvm meets: the token controller (fills service-account token
  // Secrets, as create-remote-secret needs), default ServiceAccounts, namespace deletion, garbage
  // collection, kube-root-ca.crt. No scheduler, no kubelet, no workload controllers.
  const kcm = startProc(
    `kube-controller-manager-${o.name}`,
    o.kcm,
    [
      `--kubeconfig=${kubeconfigPath}`,
      '--secure-port=0',
      '--leader-elect=false',
      '--use-service-account-credentials=false',
      '--controllers=serviceaccount-token-controller,serviceaccount-controller,namespace-controller,garbage-collector-controller,root-ca-certificate-publisher-controller',
      `--service-account-private-key-file=${o.saKey}`,
      `--root-ca-file=${o.pki.ca}`,
      '--v=1',
    ],
    {dir: o.dir},
  )
  return {name: o.name, url, port, token, kubeconfigPath, kube, proc, kcm}
}

/** POSTs every CustomResourceDefinition of a multi-document YAML file and waits until each is Established. */
export async function installCrds(kube: Kube, file: string): Promise<string[]> {
  const crds = parseAllDocuments(readFileSync(file, 'utf8'))
    .map((d) => d.toJS() as {kind?: string; metadata: {name: string}} | null)
    .filter((d): d is {kind: string; metadata: {name: string}} => d?.kind === 'CustomResourceDefinition')
  for (const crd of crds) await kube.create('/apis/apiextensions.k8s.io/v1/customresourcedefinitions', crd)
  for (const crd of crds) {
    await kube.waitFor(`/apis/apiextensions.k8s.io/v1/customresourcedefinitions/${crd.metadata.name}`, hasCondition('Established'), `CRD ${crd.metadata.name} established`)
  }
  return crds.map((c) => c.metadata.name)
}

export interface IstiodPorts {
  grpc: number
  secureGrpc: number
  monitoring: number
  http: number
  ctrlz: number
}

export interface RealControlPlaneOptions {
  istio?: IstioRelease
  binaries?: Binaries
  /** WorkloadEntry grace period after a disconnect (PILOT_WORKLOAD_ENTRY_GRACE_PERIOD). */
  gracePeriod?: string
  /** Also start the remote cluster's API server (same etcd, prefix /remote). Default true. */
  remote?: boolean
  onProgress?: (line: string) => void
}

export const ISTIOD_POD = 'istiod-real-0'
export const ISTIO_NAMESPACE = 'istio-system'
export const NODE_NAME = 'meshvm-real-node'
/** istiod's cluster ID (CLUSTER_ID), and the main context's name. */
export const CLUSTER_ID = 'main'
/** Pod ports of istiod (what a port-forward names), mapped by the kubelet stand-in to the real ones. */
export const POD_PORTS = {grpc: 15010, secureGrpc: 15012, monitoring: 15014, http: 8080} as const

export interface RealControlPlane {
  dir: string
  istio: IstioRelease
  binaries: Binaries
  istioVersion: string
  main: ApiServer
  remote?: ApiServer
  /** One kubeconfig with both contexts (`main`, current, and `remote`), mode 0600. */
  kubeconfigPath: string
  istiodPorts: IstiodPorts
  /** 127.0.0.1:PORT of istiod's 15012 (the authenticated gRPC port). */
  xdsAddress: string
  istiodRunning(): boolean
  stopIstiod(): Promise<void>
  /** Starts istiod again; `env` (e.g. the istiod Deployment's, as its controller would roll it) replaces the environment it started with. */
  startIstiod(env?: Record<string, string>): Promise<void>
  /** istiod's own HTTP debug endpoint on its loopback monitoring port. */
  istiodDebug(path: string): Promise<HttpAnswer>
  istiodLog(): string
  stop(): Promise<void>
}

/** Starts everything; on failure stops what already started and rethrows. */
export async function startRealControlPlane(options: RealControlPlaneOptions = {}): Promise<RealControlPlane> {
  const istio = options.istio ?? istioReleaseFromEnv()
  const progress = options.onProgress ?? (() => {})
  const binaries = options.binaries ?? (await buildControlPlane({onProgress: progress}))
  const dir = mkdtempSync(join(tmpdir(), `meshvm-real-${istio}-`))
  const procs: Proc[] = []
  let kubelet: KubeletStandIn | undefined
  let istiod: Proc | undefined
  const stopAll = async () => {
    await istiod?.stop()
    await kubelet?.close()
    for (const p of [...procs].reverse()) await p.stop()
    rmSync(dir, {recursive: true, force: true})
  }
  try {
    const t0 = Date.now()
    const step = (s: string) => progress(`real control plane: ${s} (+${Math.round((Date.now() - t0) / 1000)}s)`)
    const pki = await makePki(join(dir, 'pki'))

    step(`etcd ${binaries.versions.etcd}`)
    const [client, peer] = [await freePort(), await freePort()]
    const etcdUrl = `http://127.0.0.1:${client}`
    const etcd = startProc(
      'etcd',
      binaries.etcd,
      [
        '--name=real',
        `--data-dir=${join(dir, 'etcd')}`,
        `--listen-client-urls=${etcdUrl}`,
        `--advertise-client-urls=${etcdUrl}`,
        `--listen-peer-urls=http://127.0.0.1:${peer}`,
        `--initial-advertise-peer-urls=http://127.0.0.1:${peer}`,
        `--initial-cluster=real=http://127.0.0.1:${peer}`,
        '--initial-cluster-state=new',
        '--unsafe-no-fsync',
        '--log-level=warn',
      ],
      {dir},
    )
    procs.push(etcd)
    await waitFor('etcd /health', etcd, async () => (await httpGet(`${etcdUrl}/health`)).body.includes('"health":"true"'), 60_000)

    step(`kube-apiserver ${binaries.versions.kubernetes}`)
    const apiserver = (name: string, prefix: string) =>
      startApiServer({
        name,
        dir,
        pki,
        etcdUrl,
        prefix,
        saKey: join(pki.dir, `sa-${name}.key`),
        issuer: `https://kubernetes.default.svc.${name}.local`,
        bin: binaries.kubeApiserver,
        kcm: binaries.kubeControllerManager,
      })
    const wantRemote = options.remote ?? true
    const [main, remote] = await Promise.all([apiserver('main', '/registry'), wantRemote ? apiserver('remote', '/remote') : Promise.resolve(undefined)])
    procs.push(main.proc, main.kcm)
    if (remote) procs.push(remote.proc, remote.kcm)
    const kubeconfigPath = join(dir, 'kubeconfig')
    writeFileSync(kubeconfigPath, mergedKubeconfig(pki.caPem, [main, ...(remote ? [remote] : [])]), {mode: 0o600})

    step('CRDs, namespace istio-system, mesh config')
    const kube = main.kube
    const crdFile = join(binaries.istioModule[istio], 'manifests/charts/base/files/crd-all.gen.yaml')
    if (!existsSync(crdFile)) throw new Error(`the Istio CRDs are not where the istio module keeps them: ${crdFile}`)
    await installCrds(kube, crdFile)
    await installCrds(kube, WAR_CRD)
    if (remote) await installCrds(remote.kube, crdFile)
    for (const k of [main.kube, ...(remote ? [remote.kube] : [])]) {
      await k.create('/api/v1/namespaces', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: ISTIO_NAMESPACE}})
      // istioctl and meshvm's xDS path use it; kube-controller-manager may not have made it yet
      await k.create(`/api/v1/namespaces/${ISTIO_NAMESPACE}/serviceaccounts`, {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: 'default'}})
    }
    if (remote) await registerReaderRbac(remote.kube)
    await kube.create(`/api/v1/namespaces/${ISTIO_NAMESPACE}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'istio', namespace: ISTIO_NAMESPACE, labels: {'istio.io/rev': 'default'}},
      data: {mesh: 'defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\nrootNamespace: istio-system\ntrustDomain: cluster.local\n', meshNetworks: 'networks: {}\n'},
    })
    // What the istiod Helm chart writes; meshvm reads the cluster ID from its values (istiod, with
    // injection off, does not read it).
    await kube.create(`/api/v1/namespaces/${ISTIO_NAMESPACE}/configmaps`, {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'istio-sidecar-injector', namespace: ISTIO_NAMESPACE, labels: {'istio.io/rev': 'default'}},
      data: {values: JSON.stringify({global: {multiCluster: {clusterName: CLUSTER_ID}, meshID: 'mesh1', network: '', istioNamespace: ISTIO_NAMESPACE}, revision: ''}), config: ''},
    })

    step(`kubelet stand-in, Node and istiod Pod`)
    const istiodPorts: IstiodPorts = {grpc: await freePort(), secureGrpc: await freePort(), monitoring: await freePort(), http: await freePort(), ctrlz: await freePort()}
    kubelet = await startKubeletStandIn({
      cert: readFileSync(join(pki.dir, 'kubelet.crt'), 'utf8'),
      key: readFileSync(join(pki.dir, 'kubelet.key'), 'utf8'),
      // a container's ports, as its network namespace would map them
      target: (ns, pod, port) => {
        if (ns !== ISTIO_NAMESPACE || pod !== ISTIOD_POD) return undefined
        const real = {[POD_PORTS.grpc]: istiodPorts.grpc, [POD_PORTS.secureGrpc]: istiodPorts.secureGrpc, [POD_PORTS.monitoring]: istiodPorts.monitoring, [POD_PORTS.http]: istiodPorts.http}[port]
        return real
      },
    })
    await registerNodeAndPod(kube, {kubeletPort: kubelet.port, istioVersion: imageTag(binaries.versions.istio[istio])})

    const istiodEnv: Record<string, string> = {
      POD_NAMESPACE: ISTIO_NAMESPACE,
      POD_NAME: ISTIOD_POD,
      CLUSTER_ID,
      PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION: 'true',
      PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS: 'true',
      PILOT_WORKLOAD_ENTRY_GRACE_PERIOD: options.gracePeriod ?? '3s',
      INJECT_ENABLED: 'false',
      VALIDATION_WEBHOOK_CONFIG_NAME: '',
      INJECTION_WEBHOOK_CONFIG_NAME: '',
      PILOT_ENABLE_GATEWAY_API: 'false',
      PILOT_ENABLE_GATEWAY_API_CONTROLLER: 'false',
      PILOT_ENABLE_GATEWAY_API_STATUS: 'false',
      PILOT_ENABLE_GATEWAY_API_DEPLOYMENT_CONTROLLER: 'false',
      PILOT_ENABLE_GATEWAY_API_GATEWAYCLASS_CONTROLLER: 'false',
    }
    await registerInstallObjects(kube, {istioVersion: imageTag(binaries.versions.istio[istio]), env: istiodEnv})

    const istiodCwd = join(dir, 'istiod-cwd')
    mkdirSync(istiodCwd)
    const startIstiodOnce = async (env: Record<string, string>) => {
      step(`istiod ${binaries.versions.istio[istio]}`)
      const p = startProc(
        'istiod',
        binaries.pilotDiscovery[istio],
        [
          'discovery',
          `--kubeconfig=${main.kubeconfigPath}`,
          `--grpcAddr=127.0.0.1:${istiodPorts.grpc}`,
          `--secureGRPCAddr=127.0.0.1:${istiodPorts.secureGrpc}`,
          `--monitoringAddr=127.0.0.1:${istiodPorts.monitoring}`,
          `--httpAddr=127.0.0.1:${istiodPorts.http}`,
          '--httpsAddr=',
          `--ctrlz_port=${istiodPorts.ctrlz}`,
          '--ctrlz_address=127.0.0.1',
          '--log_output_level=default:info',
        ],
        {
          dir,
          cwd: istiodCwd,
          env: {PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: istiodCwd, ...env},
        },
      )
      istiod = p
      await waitFor('istiod /ready', p, async () => (await httpGet(`http://127.0.0.1:${istiodPorts.http}/ready`)).status === 200, 120_000)
      // istiod writes the mesh root into every namespace; wait for it in istio-system.
      await kube.waitFor(`/api/v1/namespaces/${ISTIO_NAMESPACE}/configmaps/istio-ca-root-cert`, (o) => o !== undefined, 'istio-ca-root-cert in istio-system')
    }
    // freePort() closes its port before istiod binds it, and outgoing connections draw from the same
    // range: a port taken meanwhile is retried with new ones (the kubelet stand-in reads them live).
    const startIstiod = async (env: Record<string, string> = istiodEnv) => {
      for (let attempt = 1; ; attempt++) {
        try {
          return await startIstiodOnce(env)
        } catch (err) {
          if (attempt >= 3 || !/address already in use/.test((err as Error).message)) throw err
          Object.assign(istiodPorts, {grpc: await freePort(), secureGrpc: await freePort(), monitoring: await freePort(), http: await freePort(), ctrlz: await freePort()})
        }
      }
    }
    await startIstiod()
    step('ready')
    return {
      dir,
      istio,
      binaries,
      istioVersion: binaries.versions.istio[istio],
      main,
      remote,
      kubeconfigPath,
      istiodPorts,
      get xdsAddress() {
        return `127.0.0.1:${istiodPorts.secureGrpc}`
      },
      istiodRunning: () => istiod?.running ?? false,
      stopIstiod: async () => istiod?.stop(),
      startIstiod,
      istiodDebug: (path) => httpGet(`http://127.0.0.1:${istiodPorts.monitoring}${path}`),
      istiodLog: () => (istiod ? readFileSync(istiod.logFile, 'utf8') : ''),
      stop: stopAll,
    }
  } catch (err) {
    await stopAll()
    throw err
  }
}

function mergedKubeconfig(caPem: string, servers: ApiServer[]): string {
  const ca = Buffer.from(caPem).toString('base64')
  const lines = ['apiVersion: v1', 'kind: Config', 'clusters:']
  for (const s of servers) lines.push(`- name: ${s.name}`, '  cluster:', `    server: ${s.url}`, `    certificate-authority-data: ${ca}`)
  lines.push('users:')
  for (const s of servers) lines.push(`- name: ${s.name}`, '  user:', `    token: ${s.token}`)
  lines.push('contexts:')
  for (const s of servers) lines.push(`- name: ${s.name}`, '  context:', `    cluster: ${s.name}`, `    user: ${s.name}`, '    namespace: default')
  lines.push(`current-context: ${servers[0]!.name}`, '')
  return lines.join('\n')
}

/** A Node whose kubelet is the stand-in, and istiod's Pod on it, Running, as a Helm install labels it. */
async function registerNodeAndPod(kube: Kube, o: {kubeletPort: number; istioVersion: string}): Promise<void> {
  await kube.create('/api/v1/nodes', {apiVersion: 'v1', kind: 'Node', metadata: {name: NODE_NAME, labels: {'kubernetes.io/hostname': NODE_NAME}}})
  const node = await kube.must<Record<string, unknown>>('GET', `/api/v1/nodes/${NODE_NAME}`)
  node.status = {
    addresses: [
      {type: 'InternalIP', address: '127.0.0.1'},
      {type: 'Hostname', address: NODE_NAME},
    ],
    daemonEndpoints: {kubeletEndpoint: {Port: o.kubeletPort}},
    conditions: [{type: 'Ready', status: 'True', reason: 'KubeletReady', message: 'kubelet stand-in', lastHeartbeatTime: new Date().toISOString(), lastTransitionTime: new Date().toISOString()}],
  }
  await kube.must('PUT', `/api/v1/nodes/${NODE_NAME}/status`, node)
  await createIstiodPod(kube, ISTIOD_POD, o.istioVersion)
}

/**
 * A Running istiod Pod on the stand-in's Node. The stand-in forwards only ISTIOD_POD's ports to the
 * real istiod: another name is a replica whose process is not there (port-forward refused).
 */
export async function createIstiodPod(kube: Kube, name: string, istioVersion: string): Promise<void> {
  const path = `/api/v1/namespaces/${ISTIO_NAMESPACE}/pods`
  await kube.create(path, {
    apiVersion: 'v1',
    kind: 'Pod',
    metadata: {
      name,
      namespace: ISTIO_NAMESPACE,
      labels: {app: 'istiod', istio: 'pilot', 'istio.io/rev': 'default', 'sidecar.istio.io/inject': 'false'},
      annotations: {'prometheus.io/port': String(POD_PORTS.monitoring), 'prometheus.io/scrape': 'true'},
    },
    spec: {
      nodeName: NODE_NAME,
      serviceAccountName: 'default',
      automountServiceAccountToken: false,
      containers: [{name: 'discovery', image: `docker.io/istio/pilot:${istioVersion}`, ports: Object.values(POD_PORTS).map((p) => ({containerPort: p, protocol: 'TCP'}))}],
    },
  })
  const pod = await kube.must<Record<string, unknown>>('GET', `${path}/${name}`)
  const now = new Date().toISOString()
  pod.status = {
    phase: 'Running',
    podIP: '127.0.0.1',
    podIPs: [{ip: '127.0.0.1'}],
    hostIP: '127.0.0.1',
    startTime: now,
    conditions: [{type: 'Ready', status: 'True', lastTransitionTime: now}],
    containerStatuses: [{name: 'discovery', ready: true, restartCount: 0, image: `docker.io/istio/pilot:${istioVersion}`, imageID: '', state: {running: {startedAt: now}}}],
  }
  await kube.must('PUT', `${path}/${name}/status`, pod)
}

/**
 * What an Istio install (istiod Helm chart, the east-west gateway of samples/multicluster) puts in the
 * cluster besides the pod: the istiod Deployment (its environment is the one istiod runs with; no
 * controller acts on it), the istiod Service, and the east-west gateway Service, whose load-balancer
 * status is set as a cloud controller would, to 127.0.0.1 (VMs reach istiod there; there is no gateway).
 */
async function registerInstallObjects(kube: Kube, o: {istioVersion: string; env: Record<string, string>}): Promise<void> {
  const ns = ISTIO_NAMESPACE
  const labels = {app: 'istiod', istio: 'pilot', 'istio.io/rev': 'default'}
  await kube.create(`/apis/apps/v1/namespaces/${ns}/deployments`, {
    apiVersion: 'apps/v1',
    kind: 'Deployment',
    metadata: {name: 'istiod', namespace: ns, labels},
    spec: {
      replicas: 1,
      selector: {matchLabels: {app: 'istiod', 'istio.io/rev': 'default'}},
      template: {
        metadata: {labels},
        spec: {containers: [{name: 'discovery', image: `docker.io/istio/pilot:${o.istioVersion}`, env: Object.entries(o.env).map(([name, value]) => ({name, value}))}]},
      },
    },
  })
  const port = (name: string, p: number) => ({name, port: p, targetPort: p, protocol: 'TCP'})
  await kube.create(`/api/v1/namespaces/${ns}/services`, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {name: 'istiod', namespace: ns, labels},
    spec: {
      selector: {app: 'istiod', istio: 'pilot'},
      ports: [port('grpc-xds', 15010), port('https-dns', 15012), {name: 'https-webhook', port: 443, targetPort: 15017, protocol: 'TCP'}, port('http-monitoring', 15014)],
    },
  })
  const gw = {app: 'istio-eastwestgateway', istio: 'eastwestgateway', 'topology.istio.io/network': ''}
  await kube.create(`/api/v1/namespaces/${ns}/services`, {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {name: 'istio-eastwestgateway', namespace: ns, labels: gw},
    spec: {type: 'LoadBalancer', selector: {app: 'istio-eastwestgateway'}, ports: [port('status-port', 15021), port('tls', 15443), port('tls-istiod', 15012), port('tls-webhook', 15017)]},
  })
  const svc = await kube.must<Record<string, unknown>>('GET', `/api/v1/namespaces/${ns}/services/istio-eastwestgateway`)
  svc.status = {loadBalancer: {ingress: [{ip: '127.0.0.1'}]}}
  await kube.must('PUT', `/api/v1/namespaces/${ns}/services/istio-eastwestgateway/status`, svc)
}

/** `1.31-dev (eed52ebb66ad)` → `1.31-dev`: the image tag an install of that build would carry. */
export function imageTag(version: string): string {
  return version.split(' ')[0]!
}

/**
 * What Istio's charts install for remote secrets in a cluster with Istio (base: the ServiceAccount;
 * istio-discovery: templates/reader-clusterrole.yaml and its binding, rules as in the pinned module).
 */
async function registerReaderRbac(kube: Kube): Promise<void> {
  const ns = ISTIO_NAMESPACE
  const name = `istio-reader-clusterrole-${ns}`
  const read = ['get', 'list', 'watch']
  await kube.create(`/api/v1/namespaces/${ns}/serviceaccounts`, {
    apiVersion: 'v1',
    kind: 'ServiceAccount',
    metadata: {name: 'istio-reader-service-account', namespace: ns, labels: {app: 'istio-reader'}},
  })
  await kube.create('/apis/rbac.authorization.k8s.io/v1/clusterroles', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRole',
    metadata: {name, labels: {app: 'istio-reader'}},
    rules: [
      {
        apiGroups: ['config.istio.io', 'security.istio.io', 'networking.istio.io', 'authentication.istio.io', 'rbac.istio.io', 'telemetry.istio.io', 'extensions.istio.io'],
        resources: ['*'],
        verbs: read,
      },
      {apiGroups: [''], resources: ['endpoints', 'pods', 'services', 'nodes', 'replicationcontrollers', 'namespaces', 'secrets', 'configmaps'], verbs: read},
      {apiGroups: ['networking.istio.io'], resources: ['workloadentries'], verbs: read},
      {apiGroups: ['networking.x-k8s.io', 'gateway.networking.k8s.io'], resources: ['gateways'], verbs: read},
      {apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: read},
      {apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: read},
      {apiGroups: ['multicluster.x-k8s.io'], resources: ['serviceexports'], verbs: [...read, 'create', 'delete']},
      {apiGroups: ['multicluster.x-k8s.io'], resources: ['serviceimports'], verbs: read},
      {apiGroups: ['apps'], resources: ['replicasets'], verbs: read},
      {apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create']},
      {apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create']},
    ],
  })
  await kube.create('/apis/rbac.authorization.k8s.io/v1/clusterrolebindings', {
    apiVersion: 'rbac.authorization.k8s.io/v1',
    kind: 'ClusterRoleBinding',
    metadata: {name, labels: {app: 'istio-reader'}},
    roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name},
    subjects: [{kind: 'ServiceAccount', name: 'istio-reader-service-account', namespace: ns}],
  })
}
