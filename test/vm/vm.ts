/**
 * `npm run demo:vm -- BUNDLE_DIR --address IP --hostname NAME [--unhealthy]`: a simulated VM that
 * joins the mesh with a bundle written by `meshvm bundle` / `onboard --bundle`, doing what the
 * istio-sidecar package's start script and pilot-agent do with those files:
 *
 * - cluster.env is sourced by /bin/sh with `set -a` (tools/packaging/common/istio-start.sh), so
 *   its shell quoting is read by a real shell; mesh.yaml gives defaultConfig (discoveryAddress,
 *   proxyMetadata, readinessProbe); root-cert.pem is the only trust anchor for istiod's
 *   certificate; istio-token is the bearer token; hosts is this VM's /etc/hosts (the discovery
 *   host name must be in it, as nothing else resolves `istiod.istio-system.svc` on a VM);
 * - the CA at CA_ADDR (default: the discovery address) signs a CSR for
 *   spiffe://TRUST_DOMAIN/ns/POD_NAMESPACE/sa/SERVICE_ACCOUNT (metadata: authorization, ClusterID);
 * - ADS at the discovery address with node `sidecar~IP~HOSTNAME.NAMESPACE~NAMESPACE.svc.cluster.local`
 *   and the node metadata pilot-agent derives from ISTIO_META_* / ISTIO_METAJSON_* variables; each
 *   pushed type (CDS, LDS, EDS, RDS) is ACKed, so istiod's syncz shows the proxy SYNCED;
 * - the readiness probe from mesh.yaml (httpGet or tcpSocket) runs against the application this VM
 *   serves on 127.0.0.1 (on a port of its own: the probe's port is mapped to it); results are sent
 *   to istiod on each change, as pilot-agent's health checker does (`--unhealthy`: the app answers 503),
 *   and only there: pilot-agent's /healthz/ready is Envoy's readiness (200 once it got CDS and LDS);
 * - SIGTERM disconnects and exits 0; SIGHUP disconnects and starts again, as a restarted sidecar.
 *
 * It prints `pid N` first. A refusal (TLS, CA, ADS) prints the reason on stderr and exits 1.
 *
 * gRPC is @grpc/grpc-js with the upstream .proto files (test/fixtures/protos): nothing of meshvm's own
 * gRPC client or xDS codec, so the simulation cannot share a mistake with the product.
 */
import {execFileSync} from 'node:child_process'
import {generateKeyPairSync} from 'node:crypto'
import {readFileSync} from 'node:fs'
import {createServer, type Server} from 'node:http'
import {connect as netConnect} from 'node:net'
import {join} from 'node:path'
import * as grpc from '@grpc/grpc-js'
import forge from 'node-forge'
import {parse as parseYaml} from 'yaml'
import {
  AggregatedDiscoveryService,
  IstioCertificateService,
  decodeMessage,
  jsonToStruct,
  type DiscoveryRequest,
  type DiscoveryResponse,
  type IstioCertificateRequest,
  type IstioCertificateResponse,
} from '../fixtures/protos/load.js'
import type {JsonValue} from '../cluster/xds-messages.js'
import {XDS_TYPES} from '../cluster/mesh.js'
import {EXTENSION_CONFIG_TYPE, HEALTH_INFO_TYPE} from '../cluster/vm-services.js'

/**
 * The extensions this Envoy has (a few of Envoy 1.24's registered type URLs): a filter of another type
 * cannot be loaded, and the push that carries it is rejected, as Envoy's Utility::getAndCheckFactory does.
 */
const KNOWN_EXTENSIONS = new Set([
  'envoy.extensions.filters.http.router.v3.Router',
  'envoy.extensions.filters.http.lua.v3.Lua',
  'envoy.extensions.filters.http.fault.v3.HTTPFault',
  'envoy.extensions.filters.http.rbac.v3.RBAC',
  'envoy.extensions.filters.http.ext_authz.v3.ExtAuthz',
  'envoy.extensions.filters.http.cors.v3.Cors',
  'envoy.extensions.filters.http.wasm.v3.Wasm',
  'envoy.extensions.filters.http.local_ratelimit.v3.LocalRateLimit',
  'envoy.extensions.filters.http.header_to_metadata.v3.Config',
  'envoy.extensions.filters.network.tcp_proxy.v3.TcpProxy',
  'envoy.extensions.filters.network.http_connection_manager.v3.HttpConnectionManager',
  'envoy.extensions.filters.network.rbac.v3.RBAC',
  'envoy.extensions.filters.network.local_ratelimit.v3.LocalRateLimit',
  'udpa.type.v1.TypedStruct',
  'xds.type.v3.TypedStruct',
])

/** Why this Envoy rejects a push (Envoy's words), or undefined when it loads. */
function rejection(res: DiscoveryResponse): string | undefined {
  if (res.typeUrl !== XDS_TYPES.LDS) return undefined
  for (const any of (res.resources ?? []) as unknown as {type_url?: string; value?: Buffer}[]) {
    if (any.type_url !== EXTENSION_CONFIG_TYPE) continue
    const filter = decodeMessage<{name?: string; typedConfig?: {type_url?: string}}>('envoy.config.core.v3.TypedExtensionConfig', any.value ?? Buffer.alloc(0))
    const type = (filter.typedConfig?.type_url ?? '').replace(/^.*\//, '')
    if (!KNOWN_EXTENSIONS.has(type)) return `Error adding/updating listener(s) virtualInbound: Didn't find a registered implementation for '${filter.name ?? ''}' with type URL: '${type}'`
  }
  return undefined
}

class Refused extends Error {}

interface Args {
  dir: string
  address: string
  hostname: string
  unhealthy: boolean
  /** The VM ports the application listens on (--app-port, repeatable); none: whatever port the probe names. */
  appPorts: number[]
}

function parseArgs(argv: string[]): Args {
  const out: Partial<Args> = {unhealthy: false, appPorts: []}
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i]!
    if (a === '--address') out.address = argv[++i]
    else if (a === '--hostname') out.hostname = argv[++i]
    else if (a === '--unhealthy') out.unhealthy = true
    else if (a === '--app-port' && /^\d+$/.test(argv[i + 1] ?? '')) out.appPorts!.push(Number(argv[++i]))
    else if (!a.startsWith('-') && out.dir === undefined) out.dir = a
    else throw new Refused(`unknown argument ${JSON.stringify(a)}; usage: demo:vm BUNDLE_DIR --address IP --hostname NAME [--unhealthy] [--app-port PORT]...`)
  }
  if (!out.dir || !out.address || !out.hostname) throw new Refused('usage: demo:vm BUNDLE_DIR --address IP --hostname NAME [--unhealthy] [--app-port PORT]...')
  return out as Args
}

interface Bundle {
  env: Record<string, string>
  defaultConfig: Record<string, JsonValue>
  rootCert: string
  token: string
  hosts: Map<string, string>
}

function readBundle(dir: string): Bundle {
  const file = (name: string) => {
    try {
      return readFileSync(join(dir, name), 'utf8')
    } catch {
      throw new Refused(`${join(dir, name)}: cannot read it (is ${dir} a meshvm bundle?)`)
    }
  }
  for (const name of ['cluster.env', 'mesh.yaml', 'root-cert.pem', 'istio-token', 'hosts']) file(name)
  // istio-start.sh: `set -a; . cluster.env` — a real shell reads the quoting.
  const raw = execFileSync('/bin/sh', ['-c', 'set -a; . "$1"; exec env -0', 'sh', join(dir, 'cluster.env')], {env: {}, encoding: 'utf8'})
  const env: Record<string, string> = {}
  for (const entry of raw.split('\0')) {
    const eq = entry.indexOf('=')
    if (eq > 0) env[entry.slice(0, eq)] = entry.slice(eq + 1)
  }
  const mesh = (parseYaml(file('mesh.yaml')) ?? {}) as {defaultConfig?: Record<string, JsonValue>}
  const hosts = new Map<string, string>()
  for (const line of file('hosts').split('\n')) {
    const [ip, ...names] = line.replace(/#.*/, '').trim().split(/\s+/)
    if (ip) for (const n of names) hosts.set(n, ip)
  }
  return {env, defaultConfig: mesh.defaultConfig ?? {}, rootCert: file('root-cert.pem'), token: file('istio-token').trim(), hosts}
}

const say = (line: string) => process.stdout.write(`${line}\n`)

class GrpcFailure extends Error {
  constructor(
    readonly code: number,
    readonly details: string,
  ) {
    super(`${grpc.status[code]}: ${details}`)
  }
}

function grpcFailure(err: unknown): GrpcFailure | Error {
  const e = err as Partial<grpc.ServiceError>
  return typeof e.code === 'number' ? new GrpcFailure(e.code, e.details ?? '') : (err as Error)
}

interface Target {
  address: string
  credentials: grpc.ChannelCredentials
  options: grpc.ChannelOptions
}

/** host:port → the address the hosts file gives, TLS verified against the root cert only, for that host name. */
function targetOf(bundle: Bundle, address: string): Target {
  const m = /^(.*):(\d+)$/.exec(address)
  if (!m) throw new Refused(`discovery address ${JSON.stringify(address)} is not HOST:PORT`)
  const [, host, port] = m as unknown as [string, string, string]
  const ip = bundle.hosts.get(host!)
  if (!ip) throw new Refused(`cannot resolve ${host}: it is not in the bundle's hosts file (the VM has no other way to find istiod)`)
  return {
    address: `${ip.includes(':') ? `[${ip}]` : ip}:${port}`,
    credentials: grpc.credentials.createSsl(Buffer.from(bundle.rootCert)),
    options: {'grpc.ssl_target_name_override': host, 'grpc.default_authority': address},
  }
}

function describe(err: unknown): string {
  if (err instanceof GrpcFailure) {
    // grpc-js reports a failed connection as UNAVAILABLE with the TLS error's text in the details.
    if (err.code === grpc.status.UNAVAILABLE) {
      if (/unable to verify|self[- ]signed|unable to get (local )?issuer|certificate signature failure/i.test(err.details)) {
        return `TLS: istiod's certificate is not signed by the bundle's root-cert.pem (${err.details})`
      }
      if (/altnames|does not match certificate/i.test(err.details)) return `TLS: istiod's certificate does not name the discovery host (${err.details})`
      if (/ECONNREFUSED/.test(err.details)) return `cannot connect to istiod: ${err.details}`
    }
    return err.message
  }
  return (err as Error).message
}

function metadataOf(headers: Record<string, string>): grpc.Metadata {
  const m = new grpc.Metadata()
  for (const [k, v] of Object.entries(headers)) if (v) m.set(k, v)
  return m
}

/** What the token itself says (istiod only answers "authentication failure"; its log has the reason). */
function tokenDiagnosis(token: string, env: Record<string, string>): string[] {
  const out: string[] = []
  try {
    const claims = JSON.parse(Buffer.from(token.split('.')[1] ?? '', 'base64url').toString()) as {exp?: number; aud?: string[]; sub?: string}
    if (claims.exp !== undefined && claims.exp * 1000 < Date.now()) out.push(`the bundle's istio-token expired at ${new Date(claims.exp * 1000).toISOString()}`)
    if (!(claims.aud ?? []).includes('istio-ca')) out.push(`the bundle's istio-token is for audience ${JSON.stringify(claims.aud ?? [])}, istiod accepts istio-ca`)
    const sa = `system:serviceaccount:${env.POD_NAMESPACE}:${env.SERVICE_ACCOUNT}`
    if (claims.sub && claims.sub !== sa) out.push(`the bundle's istio-token is for ${claims.sub}, cluster.env says ${sa}`)
  } catch {
    out.push("the bundle's istio-token is not a JWT")
  }
  out.push(`ISTIO_META_CLUSTER_ID is ${JSON.stringify(env.ISTIO_META_CLUSTER_ID ?? '')}: istiod refuses a cluster ID it does not know`)
  return out
}

function nodeMetadata(bundle: Bundle, args: Args, namespace: string): Record<string, JsonValue> {
  const meta: Record<string, JsonValue> = {}
  // pilot-agent: ISTIO_META_X=v → X: v; ISTIO_METAJSON_X={...} → X: {...}
  for (const [k, v] of Object.entries(bundle.env)) {
    if (k.startsWith('ISTIO_METAJSON_')) {
      try {
        meta[k.slice('ISTIO_METAJSON_'.length)] = JSON.parse(v) as JsonValue
      } catch {
        /* pilot-agent logs and skips it */
      }
    } else if (k.startsWith('ISTIO_META_')) meta[k.slice('ISTIO_META_'.length)] = v
  }
  meta.NAMESPACE = namespace
  meta.INSTANCE_IPS = args.address
  meta.ISTIO_VERSION = '1.24.2'
  meta.PROXY_CONFIG = bundle.defaultConfig as JsonValue
  return meta
}

interface Probe {
  httpGet?: {port?: number; path?: string}
  tcpSocket?: {port?: number}
  periodSeconds?: number
}

/**
 * pilot-agent's HTTP and TCP probers, against the VM's own application: `appPort` maps the port the
 * probe names to the loopback port the simulated application listens on (undefined: nothing listens
 * there, and the probe is refused as Go's dialer words it).
 */
async function probeOnce(probe: Probe, appPort: (vmPort: number) => number | undefined): Promise<{healthy: boolean; message?: string}> {
  const vmPort = Number(probe.httpGet?.port ?? probe.tcpSocket?.port)
  const port = appPort(vmPort)
  const refused = `dial tcp 127.0.0.1:${vmPort}: connect: connection refused`
  if (probe.httpGet) {
    const url = `http://127.0.0.1:${vmPort}${probe.httpGet.path ?? '/'}`
    if (port === undefined) return {healthy: false, message: `Get "${url}": ${refused}`}
    try {
      const res = await fetch(`http://127.0.0.1:${port}${probe.httpGet.path ?? '/'}`, {signal: AbortSignal.timeout(1000)})
      await res.arrayBuffer()
      if (res.status >= 200 && res.status < 400) return {healthy: true}
      return {healthy: false, message: `status code was not from [200,400), bad code ${res.status}`}
    } catch (err) {
      return {healthy: false, message: (err as Error).message}
    }
  }
  if (port === undefined) return {healthy: false, message: refused}
  return new Promise((resolve) => {
    const s = netConnect(port, '127.0.0.1', () => {
      s.destroy()
      resolve({healthy: true})
    })
    s.on('error', (err) => resolve({healthy: false, message: err.message}))
  })
}

/** A grpc-js ADS stream read message by message: next() gives a response, undefined at an OK end, throws the status otherwise. */
class AdsStream {
  private readonly queue: DiscoveryResponse[] = []
  private readonly waiters: {resolve: (r: DiscoveryResponse | undefined) => void; reject: (e: Error) => void}[] = []
  private outcome?: Error | 'ok'
  private readonly stream: grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse>

  constructor(client: grpc.Client, metadata: grpc.Metadata) {
    this.stream = (client as unknown as {StreamAggregatedResources: (m: grpc.Metadata) => grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse>}).StreamAggregatedResources(metadata)
    this.stream.on('data', (r: DiscoveryResponse) => {
      const w = this.waiters.shift()
      if (w) w.resolve(r)
      else this.queue.push(r)
    })
    this.stream.on('error', () => undefined) // the status event carries it
    this.stream.on('status', (st: grpc.StatusObject) => {
      this.outcome = st.code === grpc.status.OK ? 'ok' : new GrpcFailure(st.code, st.details)
      for (const w of this.waiters.splice(0)) {
        if (this.outcome === 'ok') w.resolve(undefined)
        else w.reject(this.outcome)
      }
    })
  }

  send(request: DiscoveryRequest): void {
    if (this.outcome === undefined) this.stream.write(request)
  }

  next(): Promise<DiscoveryResponse | undefined> {
    const r = this.queue.shift()
    if (r) return Promise.resolve(r)
    if (this.outcome === 'ok') return Promise.resolve(undefined)
    if (this.outcome) return Promise.reject(this.outcome)
    return new Promise((resolve, reject) => this.waiters.push({resolve, reject}))
  }

  cancel(): void {
    this.stream.cancel()
  }
}

class Vm {
  private client?: grpc.Client
  private ads?: AdsStream
  private probeTimer?: NodeJS.Timeout
  private readonly apps: Server[] = []
  /** VM port → loopback port of the application (with no --app-port: one server, for any port). */
  private readonly appPorts = new Map<number, number>()
  private anyPort = 0
  private stopping = false
  private admin?: Server
  /** What Envoy's admin port and pilot-agent's readiness port report (doctor --vm-exec reads them). */
  private state: {leaf?: forge.pki.Certificate; rootPem?: string; discovery?: string; connected: boolean; healthy?: boolean} = {connected: false}
  /**
   * Envoy got its first CDS and LDS in this life of the sidecar: pilot-agent's /healthz/ready is 200
   * from then on, whatever istiod or the application do (pilot/cmd/pilot-agent/status/ready/probe.go);
   * a restarted sidecar (SIGHUP) starts unready again.
   */
  private envoyReady = false

  constructor(private readonly args: Args) {}

  async serveApp(): Promise<void> {
    for (const vmPort of this.args.appPorts.length > 0 ? this.args.appPorts : [0]) {
      const app = createServer((_req, res) => {
        res.writeHead(this.args.unhealthy ? 503 : 200).end(this.args.unhealthy ? 'unhealthy\n' : 'ok\n')
      })
      await new Promise<void>((resolve) => app.listen(0, '127.0.0.1', resolve))
      this.apps.push(app)
      const port = (app.address() as {port: number}).port
      if (vmPort === 0) this.anyPort = port
      else this.appPorts.set(vmPort, port)
    }
  }

  /** The loopback port behind a VM port of the application, or undefined when nothing listens there. */
  appPort(vmPort: number): number | undefined {
    return this.anyPort !== 0 ? this.anyPort : this.appPorts.get(vmPort)
  }

  /**
   * Envoy's admin `/certs` and `/clusters` and pilot-agent's `/healthz/ready`, in their shapes, on one
   * loopback port (printed as `admin PORT`): what `meshvm doctor --vm-exec` reads on a VM, through
   * test/vm/exec.sh, which maps 127.0.0.1:15000 and :15021 to it.
   */
  async serveAdmin(): Promise<number> {
    const serial = (hex: string) => hex.toLowerCase().replace(/^0+(?=.)/, '')
    const certInfo = (c: forge.pki.Certificate) => ({
      path: '<inline>',
      serial_number: serial(c.serialNumber),
      subject_alt_names: ((c.getExtension('subjectAltName') as {altNames?: {type: number; value: string}[]} | null)?.altNames ?? []).filter((a) => a.type === 6).map((a) => ({uri: a.value})),
      days_until_expiration: String(Math.floor((c.validity.notAfter.getTime() - Date.now()) / 86_400_000)),
      valid_from: c.validity.notBefore.toISOString().replace(/\.\d+Z$/, 'Z'),
      expiration_time: c.validity.notAfter.toISOString().replace(/\.\d+Z$/, 'Z'),
    })
    this.admin = createServer((req, res) => {
      const st = this.state
      if (req.url === '/healthz/ready') {
        // The application's probe never enters it: its result goes to istiod only (the entry's Healthy).
        if (this.envoyReady) res.writeHead(200).end()
        else res.writeHead(503).end('config not received from XDS server (is Istiod running?): cds updates: 0 successful, 0 rejected; lds updates: 0 successful, 0 rejected\n')
      } else if (req.url === '/certs') {
        // Envoy lists every certificate of the trusted CA bundle (root-cert.pem may hold several roots).
        const roots = st.rootPem
          ? forge.pem
              .decode(st.rootPem)
              .filter((b) => b.type === 'CERTIFICATE')
              .map((b) => forge.pki.certificateFromAsn1(forge.asn1.fromDer(b.body)))
          : []
        res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify({certificates: st.leaf ? [{ca_cert: roots.map(certInfo), cert_chain: [certInfo(st.leaf)]}] : []}, null, 1))
      } else if (req.url === '/sim/ports') {
        // Not Envoy's: which VM ports the simulated application listens on (test/vm/bin/curl maps them).
        res.writeHead(200).end([...this.appPorts].map(([vm, port]) => `${vm} ${port}\n`).join('') + (this.anyPort ? `* ${this.anyPort}\n` : ''))
      } else if (req.url === '/clusters') {
        // Istio's bootstrap sends Envoy's xDS to pilot-agent's proxy on a unix socket, open while the
        // sidecar runs, whether or not pilot-agent reaches istiod (tools/packaging/common/envoy_bootstrap.json).
        res.writeHead(200).end(st.discovery ? 'xds-grpc::observability_name::xds-grpc\nxds-grpc::./etc/istio/proxy/XDS::cx_active::1\n' : '')
      } else if (req.url === '/sim/connections') {
        // Not Envoy's: pilot-agent's TCP connection to istiod (the address the hosts file gives), as
        // `ss -tn state established` shows it on the VM (test/vm/bin/ss prints it).
        res.writeHead(200).end(st.connected && st.discovery ? `${this.args.address}:${40000 + (process.pid % 20000)} ${st.discovery}\n` : '')
      } else res.writeHead(404).end()
    })
    await new Promise<void>((resolve) => this.admin!.listen(0, '127.0.0.1', resolve))
    return (this.admin.address() as {port: number}).port
  }

  /** One life of the sidecar: certificate, ADS, probe; resolves when connected and synced. */
  async start(): Promise<void> {
    const bundle = readBundle(this.args.dir)
    const env = bundle.env
    const namespace = env.POD_NAMESPACE || env.ISTIO_NAMESPACE
    if (!namespace) throw new Refused('cluster.env sets neither POD_NAMESPACE nor ISTIO_NAMESPACE')
    const discovery = String(bundle.defaultConfig.discoveryAddress ?? 'istiod.istio-system.svc:15012')
    const caAddress = env.CA_ADDR || discovery
    const proxyId = `${this.args.hostname}.${namespace}`
    const metadata = {authorization: `Bearer ${bundle.token}`, clusterid: env.ISTIO_META_CLUSTER_ID ?? ''}

    // 1. The workload certificate.
    const keys = generateKeyPairSync('rsa', {modulusLength: 2048})
    const csr = forge.pki.createCertificationRequest()
    csr.publicKey = forge.pki.publicKeyFromPem(keys.publicKey.export({type: 'spki', format: 'pem'}) as string)
    const identity = `spiffe://${env.TRUST_DOMAIN || 'cluster.local'}/ns/${namespace}/sa/${env.SERVICE_ACCOUNT || 'default'}`
    csr.setAttributes([{name: 'extensionRequest', extensions: [{name: 'subjectAltName', altNames: [{type: 6, value: identity}]}]}])
    csr.sign(forge.pki.privateKeyFromPem(keys.privateKey.export({type: 'pkcs1', format: 'pem'}) as string), forge.md.sha256.create())
    const caTarget = targetOf(bundle, caAddress)
    const ca = new IstioCertificateService(caTarget.address, caTarget.credentials, caTarget.options)
    let chain: string[]
    try {
      const request: IstioCertificateRequest = {csr: forge.pki.certificationRequestToPem(csr), validityDuration: 24 * 3600}
      const unary = ca as unknown as {CreateCertificate: (r: IstioCertificateRequest, m: grpc.Metadata, o: grpc.CallOptions, cb: grpc.requestCallback<IstioCertificateResponse>) => void}
      chain = await new Promise<string[]>((resolve, reject) =>
        unary.CreateCertificate(request, metadataOf(metadata), {deadline: Date.now() + 10_000}, (err, res) => (err ? reject(grpcFailure(err)) : resolve(res?.certChain ?? []))),
      )
    } catch (err) {
      const detail = describe(err)
      const hints = err instanceof GrpcFailure && err.code === grpc.status.UNAUTHENTICATED ? tokenDiagnosis(bundle.token, env) : []
      throw new Refused([`the CA at ${caAddress} refused the certificate request: ${detail}`, ...hints.map((h) => `  ${h}`)].join('\n'))
    } finally {
      ca.close()
    }
    if (chain.length === 0) throw new Refused(`the CA at ${caAddress} answered no certificate`)
    const leaf = forge.pki.certificateFromPem(chain[0]!)
    // root-cert.pem may hold several roots (a rotation in progress): one of them must have signed it.
    const roots = forge.pem
      .decode(bundle.rootCert)
      .filter((b) => b.type === 'CERTIFICATE')
      .map((b) => forge.pki.certificateFromAsn1(forge.asn1.fromDer(b.body)))
    const signedBy = (root: forge.pki.Certificate) => {
      try {
        return root.verify(leaf)
      } catch {
        return false // forge throws when the issuer is not this root
      }
    }
    if (!roots.some(signedBy)) throw new Refused("the CA's certificate is not signed by the bundle's root-cert.pem")
    const san = (leaf.getExtension('subjectAltName') as {altNames?: {type: number; value: string}[]} | null)?.altNames?.find((a) => a.type === 6)?.value
    say(`certificate issued for ${san}, valid until ${leaf.validity.notAfter.toISOString()}`)
    this.state = {leaf, rootPem: bundle.rootCert, discovery: `${targetOf(bundle, discovery).address}`, connected: false}

    // 2. ADS.
    const target = targetOf(bundle, discovery)
    const client = new AggregatedDiscoveryService(target.address, target.credentials, target.options)
    this.client = client
    const ads = new AdsStream(client, metadataOf(metadata))
    this.ads = ads
    const node = {id: `sidecar~${this.args.address}~${proxyId}~${namespace}.svc.cluster.local`, metadata: jsonToStruct(nodeMetadata(bundle, this.args, namespace))}
    const types = [XDS_TYPES.CDS, XDS_TYPES.EDS, XDS_TYPES.LDS, XDS_TYPES.RDS]
    for (const [i, typeUrl] of types.entries()) ads.send({typeUrl, ...(i === 0 ? {node} : {})})
    // ACK what loads; NACK the rest with the error and the version last accepted, as Envoy does.
    const accepted = new Map<string, string>()
    let rejected = false
    const rejectedTypes = new Set<string>()
    const ack = (res: DiscoveryResponse) => {
      const error = rejection(res)
      if (error === undefined) {
        if (rejectedTypes.delete(res.typeUrl ?? '')) say(`accepted (ACK) ${res.typeUrl} again`)
        accepted.set(res.typeUrl ?? '', res.versionInfo ?? '')
        ads.send({typeUrl: res.typeUrl, versionInfo: res.versionInfo, responseNonce: res.nonce})
      } else {
        ads.send({typeUrl: res.typeUrl, versionInfo: accepted.get(res.typeUrl ?? '') ?? '', responseNonce: res.nonce, errorDetail: {code: grpc.status.INTERNAL, message: error}})
        rejected = true
        rejectedTypes.add(res.typeUrl ?? '')
        say(`rejected (NACK) ${res.typeUrl}: ${error}`)
      }
    }
    const acked = new Set<string>()
    try {
      while (acked.size < types.length) {
        const res = await ads.next()
        if (res === undefined) throw new GrpcFailure(grpc.status.UNAVAILABLE, 'istiod closed the stream')
        ack(res)
        acked.add(res.typeUrl ?? '')
      }
    } catch (err) {
      client.close()
      const hints = err instanceof GrpcFailure && err.code === grpc.status.UNAUTHENTICATED ? tokenDiagnosis(bundle.token, env) : []
      throw new Refused([`istiod at ${discovery} refused ${proxyId}: ${describe(err)}`, ...hints.map((h) => `  ${h}`)].join('\n'))
    }
    this.envoyReady = true
    say(`connected to istiod at ${discovery} as ${proxyId}; ${rejected ? 'configuration answered, some of it rejected (NACK)' : 'configuration acknowledged (SYNCED)'}`)
    this.state.connected = true
    // Later pushes are ACKed too; a stream that ends is a disconnect (a restarted istiod: reconnect).
    void (async () => {
      try {
        for (;;) {
          const res = await ads.next()
          if (res === undefined) break
          ack(res)
        }
      } catch {
        /* ended below */
      }
      if (this.ads === ads && !this.stopping) {
        say('istiod closed the connection; reconnecting')
        await this.restart()
      }
    })()

    // 3. The readiness probe, reported on each change.
    const probe = bundle.defaultConfig.readinessProbe as Probe | undefined
    if (probe && (probe.httpGet || probe.tcpSocket)) {
      let last: boolean | undefined
      const run = async () => {
        const r = await probeOnce(probe, (p) => this.appPort(p))
        if (this.ads !== ads) return
        if (r.healthy !== last) {
          last = r.healthy
          this.state.healthy = r.healthy
          ads.send({typeUrl: HEALTH_INFO_TYPE, ...(r.healthy ? {} : {errorDetail: {code: grpc.status.INTERNAL, message: r.message ?? 'unhealthy'}})})
          say(`readiness probe: ${r.healthy ? 'healthy' : `unhealthy (${r.message})`}`)
        }
      }
      await run()
      this.probeTimer = setInterval(() => void run(), Math.max(1, Number(probe.periodSeconds ?? 10)) * 1000)
    }
  }

  disconnect(): void {
    this.state.connected = false
    clearInterval(this.probeTimer)
    const ads = this.ads
    this.ads = undefined
    ads?.cancel()
    this.client?.close()
  }

  /** Connects again; `sidecar`: pilot-agent and Envoy themselves restarted (Envoy unready until its first config). */
  async restart(o: {sidecar?: boolean} = {}): Promise<void> {
    if (o.sidecar) this.envoyReady = false
    this.disconnect()
    try {
      await this.start()
    } catch (err) {
      process.stderr.write(`demo:vm: ${(err as Error).message}\n`)
      process.exit(1)
    }
  }

  async stop(): Promise<void> {
    this.stopping = true
    this.disconnect()
    for (const app of this.apps) app.close()
    this.admin?.close()
    say('stopped')
    // Let the RST_STREAM reach istiod before the process goes.
    setTimeout(() => process.exit(0), 100)
  }
}

async function main(): Promise<void> {
  say(`pid ${process.pid}`)
  const args = parseArgs(process.argv.slice(2))
  const vm = new Vm(args)
  await vm.serveApp()
  say(`admin ${await vm.serveAdmin()}`)
  process.on('SIGTERM', () => void vm.stop())
  process.on('SIGINT', () => void vm.stop())
  process.on('SIGHUP', () => {
    say('SIGHUP: restarting the sidecar')
    void vm.restart({sidecar: true})
  })
  await vm.start()
}

main().catch((err: unknown) => {
  process.stderr.write(`demo:vm: ${err instanceof Refused ? err.message : (err as Error).stack}\n`)
  process.exit(1)
})
