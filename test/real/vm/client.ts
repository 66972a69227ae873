/**
 * A VM joining a real istiod from a bundle meshvm wrote, doing what pilot-agent does with it, without
 * Envoy (istio/istio pilot/cmd/pilot-agent, pkg/istio-agent):
 *
 * - the bundle: `istio-token` (the bearer token), `root-cert.pem` (the only trust anchor for istiod's
 *   serving certificate), `mesh.yaml` (defaultConfig: proxyMetadata gives the namespace, service
 *   account, trust domain, cluster ID, network, ISTIO_META_* / ISTIO_METAJSON_* node metadata and
 *   ISTIO_META_AUTO_REGISTER_GROUP; the whole defaultConfig, with its readinessProbe, is the node's
 *   PROXY_CONFIG);
 * - a workload certificate from `istio.v1.auth.IstioCertificateService/CreateCertificate` (a PKCS#10
 *   CSR with a fresh RSA key, the token and `clusterid` as call metadata);
 * - ADS (`StreamAggregatedResources`) with the same metadata: the first request carries the node
 *   (`sidecar~IP~NAME.NS~NS.svc.cluster.local`), CDS then LDS are requested, every response is ACKed;
 * - health reports as DiscoveryRequests of type `type.googleapis.com/istio.v1.HealthInformation` on the
 *   same stream (no error_detail: healthy; error_detail {code 13, message}: unhealthy), sent only once
 *   the LDS request went out, as pilot-agent's xds proxy does;
 * - close(): the stream is half-closed and the channel closed, as a stopped sidecar's connection ends.
 *
 * Everything on the wire goes through @grpc/grpc-js and the upstream .proto files in
 * test/fixtures/protos, never through meshvm's own gRPC code.
 */
import {generateKeyPairSync, X509Certificate} from 'node:crypto'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import * as grpc from '@grpc/grpc-js'
import forge from 'node-forge'
import {parse as parseYaml} from 'yaml'
import {
  AggregatedDiscoveryService,
  IstioCertificateService,
  jsonToStruct,
  type DiscoveryRequest,
  type DiscoveryResponse,
  type IstioCertificateRequest,
  type IstioCertificateResponse,
  type Json,
} from '../../fixtures/protos/load.js'

export interface VmJoinOptions {
  bundleDir: string
  /** 127.0.0.1:PORT of istiod's secure gRPC port (15012). */
  istiodAddress: string
  instanceIp: string
  /** The name istiod's serving certificate is checked for (default istiod.istio-system.svc). */
  serverName?: string
  /** A first readiness result to report once connected (pilot-agent's first probe); none if undefined. */
  healthy?: boolean
  /** The VM's host name, the proxy ID's first part (default vm-IP with dashes). */
  hostname?: string
  /** The certificate lifetime asked of the CA (IstioCertificateRequest.validity_duration; default 24h, as pilot-agent's SECRET_TTL). */
  validitySeconds?: number
}

export interface VmConnection {
  readonly workloadEntryName: string
  /** The workload certificate chain istiod's CA issued, leaf first. */
  readonly certificateChain: string[]
  /** The proxy ID istiod shows (NAME.NAMESPACE). */
  readonly proxyId: string
  /** Resolves once the first CDS and LDS responses were ACKed; rejects if istiod ended the stream first. */
  synced(): Promise<void>
  reportHealth(healthy: boolean, message?: string): Promise<void>
  /**
   * From now on, answer istiod's responses of this type with a NACK, as Envoy does for configuration it
   * rejects (the last accepted version, the response's nonce, error_detail {13, message}); undefined
   * goes back to ACKing.
   */
  rejectConfig(typeUrl: string, message: string | undefined): void
  /** Resolves once the ADS stream ended, by close() or by istiod (a stopped istiod, a refusal). */
  ended(): Promise<void>
  close(): Promise<void>
}

export const TYPES = {
  CDS: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  LDS: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  HEALTH: 'type.googleapis.com/istio.v1.HealthInformation',
} as const

interface Bundle {
  token: string
  rootCert: string
  defaultConfig: Record<string, Json>
  proxyMetadata: Record<string, string>
}

function readBundle(dir: string): Bundle {
  const file = (name: string) => readFileSync(join(dir, name), 'utf8')
  const mesh = (parseYaml(file('mesh.yaml')) ?? {}) as {defaultConfig?: Record<string, Json>}
  const defaultConfig = mesh.defaultConfig ?? {}
  const proxyMetadata: Record<string, string> = {}
  for (const [k, v] of Object.entries((defaultConfig.proxyMetadata as Record<string, Json> | undefined) ?? {})) proxyMetadata[k] = String(v ?? '')
  return {token: file('istio-token').trim(), rootCert: file('root-cert.pem'), defaultConfig, proxyMetadata}
}

/** pilot-agent's node metadata: ISTIO_META_X=v → X: v; ISTIO_METAJSON_X={...} → X: {...}. */
function nodeMetadata(env: Record<string, string>): Record<string, Json> {
  const meta: Record<string, Json> = {}
  for (const [k, v] of Object.entries(env)) {
    if (k.startsWith('ISTIO_METAJSON_')) meta[k.slice('ISTIO_METAJSON_'.length)] = JSON.parse(v) as Json
    else if (k.startsWith('ISTIO_META_')) meta[k.slice('ISTIO_META_'.length)] = v
  }
  return meta
}

/** controller.go autoregisteredWorkloadEntryName: GROUP-IP (':' → '-'), then -NETWORK if any. */
export function autoregisteredName(group: string, ip: string, network: string): string {
  return [group, ip.replace(/:/g, '-'), ...(network ? [network] : [])].join('-')
}

function csrFor(identity: string): string {
  const keys = generateKeyPairSync('rsa', {modulusLength: 2048})
  const csr = forge.pki.createCertificationRequest()
  csr.publicKey = forge.pki.publicKeyFromPem(keys.publicKey.export({type: 'spki', format: 'pem'}) as string)
  csr.setAttributes([{name: 'extensionRequest', extensions: [{name: 'subjectAltName', altNames: [{type: 6, value: identity}]}]}])
  csr.sign(forge.pki.privateKeyFromPem(keys.privateKey.export({type: 'pkcs1', format: 'pem'}) as string), forge.md.sha256.create())
  return forge.pki.certificationRequestToPem(csr)
}

/** The URI SAN of a PEM certificate. */
export function spiffeIdOf(pem: string): string | undefined {
  return /URI:(spiffe:\/\/[^,\s]+)/.exec(new X509Certificate(pem).subjectAltName ?? '')?.[1]
}

export async function joinIstiod(opts: VmJoinOptions): Promise<VmConnection> {
  const bundle = readBundle(opts.bundleDir)
  const env = bundle.proxyMetadata
  const namespace = env.POD_NAMESPACE
  const serviceAccount = env.SERVICE_ACCOUNT
  if (!namespace || !serviceAccount) throw new Error(`${opts.bundleDir}/mesh.yaml: proxyMetadata has no POD_NAMESPACE or SERVICE_ACCOUNT`)
  const serverName = opts.serverName ?? 'istiod.istio-system.svc'
  const clusterId = env.ISTIO_META_CLUSTER_ID ?? ''
  const trustDomain = env.TRUST_DOMAIN || 'cluster.local'
  const channelOptions = {'grpc.ssl_target_name_override': serverName, 'grpc.default_authority': serverName}
  const credentials = grpc.credentials.createSsl(Buffer.from(bundle.rootCert))
  const metadata = () => {
    const m = new grpc.Metadata()
    m.set('authorization', `Bearer ${bundle.token}`)
    if (clusterId) m.set('clusterid', clusterId)
    return m
  }

  // 1. The workload certificate (security/pkg/nodeagent/caclient/providers/citadel).
  const ca = new IstioCertificateService(opts.istiodAddress, credentials, channelOptions)
  let certificateChain: string[]
  try {
    const request: IstioCertificateRequest = {csr: csrFor(`spiffe://${trustDomain}/ns/${namespace}/sa/${serviceAccount}`), validityDuration: opts.validitySeconds ?? 24 * 3600}
    const response = await new Promise<IstioCertificateResponse>((resolve, reject) => {
      const unary = ca as unknown as {CreateCertificate: (r: IstioCertificateRequest, m: grpc.Metadata, o: grpc.CallOptions, cb: grpc.requestCallback<IstioCertificateResponse>) => void}
      unary.CreateCertificate(request, metadata(), {deadline: Date.now() + 20_000}, (err, res) => (err ? reject(err) : resolve(res!)))
    })
    certificateChain = response.certChain ?? []
  } finally {
    ca.close()
  }
  if (certificateChain.length === 0) throw new Error('CreateCertificate answered no certificate')

  // 2. ADS.
  const group = env.ISTIO_META_AUTO_REGISTER_GROUP ?? ''
  const workloadEntryName = autoregisteredName(group, opts.instanceIp, env.ISTIO_META_NETWORK ?? '')
  const hostname = opts.hostname ?? `vm-${opts.instanceIp.replace(/[.:]/g, '-')}`
  const proxyId = `${hostname}.${namespace}`
  const meta: Record<string, Json> = {
    ...nodeMetadata(env),
    NAMESPACE: namespace,
    SERVICE_ACCOUNT: serviceAccount,
    INSTANCE_IPS: opts.instanceIp,
    INTERCEPTION_MODE: 'NONE',
    PROXY_CONFIG: bundle.defaultConfig,
  }
  const node = {id: `sidecar~${opts.instanceIp}~${proxyId}~${namespace}.svc.cluster.local`, metadata: jsonToStruct(meta)}
  const client = new AggregatedDiscoveryService(opts.istiodAddress, credentials, channelOptions)
  const ads = client as unknown as {StreamAggregatedResources: (m: grpc.Metadata) => grpc.ClientDuplexStream<DiscoveryRequest, DiscoveryResponse>}
  const stream = ads.StreamAggregatedResources(metadata())
  const write = (req: DiscoveryRequest) =>
    new Promise<void>((resolve, reject) => {
      stream.write(req, (err?: Error | null) => (err ? reject(err) : resolve()))
    })

  const acked = new Set<string>()
  let ldsRequested = false
  let ended: grpc.StatusObject | undefined
  let resolveSynced!: () => void
  let rejectSynced!: (e: Error) => void
  const syncedPromise = new Promise<void>((resolve, reject) => {
    resolveSynced = resolve
    rejectSynced = reject
  })
  syncedPromise.catch(() => undefined)
  let resolveEnded!: () => void
  const endedPromise = new Promise<void>((resolve) => (resolveEnded = resolve))
  const pendingHealth: DiscoveryRequest[] = []

  const rejecting = new Map<string, string>()
  const accepted = new Map<string, string>()
  stream.on('data', (res: DiscoveryResponse) => {
    const rejection = rejecting.get(res.typeUrl ?? '')
    if (rejection !== undefined) {
      // NACK: the version last accepted, the rejected response's nonce, the error.
      stream.write({typeUrl: res.typeUrl, versionInfo: accepted.get(res.typeUrl ?? '') ?? '', responseNonce: res.nonce, errorDetail: {code: grpc.status.INTERNAL, message: rejection}})
      return
    }
    // ACK: the type, the version and the nonce echoed, no error.
    stream.write({typeUrl: res.typeUrl, versionInfo: res.versionInfo, responseNonce: res.nonce})
    if (res.typeUrl) {
      acked.add(res.typeUrl)
      accepted.set(res.typeUrl, res.versionInfo ?? '')
    }
    if (res.typeUrl === TYPES.CDS && !ldsRequested) {
      // Envoy asks for listeners once clusters are in: the LDS request goes out after the first CDS ACK.
      ldsRequested = true
      stream.write({typeUrl: TYPES.LDS})
      for (const h of pendingHealth.splice(0)) stream.write(h)
    }
    if (acked.has(TYPES.CDS) && acked.has(TYPES.LDS)) resolveSynced()
  })
  stream.on('status', (s: grpc.StatusObject) => {
    ended = s
    rejectSynced(Object.assign(new Error(`istiod ended the ADS stream: ${grpc.status[s.code]}: ${s.details}`), {code: s.code}))
    resolveEnded()
  })
  stream.on('error', () => undefined) // the status event carries it

  await write({node, typeUrl: TYPES.CDS})

  const healthRequest = (healthy: boolean, message?: string): DiscoveryRequest => ({
    typeUrl: TYPES.HEALTH,
    ...(healthy ? {} : {errorDetail: {code: grpc.status.INTERNAL, message: message ?? 'unhealthy'}}),
  })
  if (opts.healthy !== undefined) pendingHealth.push(healthRequest(opts.healthy))

  let closed = false
  return {
    workloadEntryName,
    certificateChain,
    proxyId,
    synced: () => syncedPromise,
    async reportHealth(healthy, message) {
      if (ended) throw new Error(`the ADS stream has ended (${grpc.status[ended.code]}: ${ended.details})`)
      if (!ldsRequested) {
        pendingHealth.push(healthRequest(healthy, message))
        await syncedPromise
        return
      }
      await write(healthRequest(healthy, message))
    },
    ended: () => endedPromise,
    rejectConfig(typeUrl, message) {
      if (message === undefined) rejecting.delete(typeUrl)
      else rejecting.set(typeUrl, message)
    },
    async close() {
      if (closed) return endedPromise
      closed = true
      if (!ended) {
        stream.end()
        // istiod answers the half-close by ending the stream; a cancel is the fallback.
        const timer = setTimeout(() => stream.cancel(), 5000)
        await endedPromise
        clearTimeout(timer)
      }
      client.close()
    },
  }
}
