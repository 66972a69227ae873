/**
 * What a simulated istiod offers a VM on its gRPC port 15012 (xds.ts), and how the VM reaches it:
 *
 * - the CA (ca.ts);
 * - ADS as istiod's initConnection runs it for a sidecar (pilot/pkg/xds/ads.go): authenticate the
 *   caller (ClusterID metadata + TokenReview with audience istio-ca; refusal: UNAUTHENTICATED
 *   "authentication failure"), authorize it (the identity's namespace must be the proxy's:
 *   "authorization failed"), then auto-register it (autoregistration.ts; its refusals end the
 *   stream). Each resource type the proxy asks for (CDS, LDS, EDS, RDS) is answered with an empty
 *   push and a nonce; the proxy's ACK (the nonce echoed without error) makes that type SYNCED in
 *   syncz (the proxy is put in Mesh.proxies, which syncz reads), a NACK makes it ERROR;
 * - EnvoyFilters: each HTTP_FILTER or NETWORK_FILTER patch that applies to the proxy (an EnvoyFilter
 *   of the root namespace, or of the proxy's, whose workloadSelector matches its labels) is pushed in
 *   LDS as the filter it adds, a TypedExtensionConfig (name, typed_config), standing for the listener
 *   a real istiod would send with that filter in it; a change to EnvoyFilters pushes LDS again, so a
 *   filter the VM's Envoy cannot load is NACKed (test/vm/vm.ts) and a deleted one stops being sent;
 * - health reports, DiscoveryRequests of type istio.io/health (pilot-agent's health checker:
 *   no error_detail = healthy), go to the Healthy condition (handleWorkloadHealthcheck);
 * - the east-west gateway: a TLS-passthrough listener on a loopback address, port 15012, that
 *   routes each connection on its SNI (istiod[-REV].NS.svc) to that istiod, as the gateway's
 *   `tls-istiod` port does. Its address goes into the istio-eastwestgateway Service, so a bundle
 *   written against the cluster (hosts: `ADDRESS istiod.istio-system.svc`) works as it is.
 */
import {createServer, type Server, type Socket} from 'node:net'
import {Duplex} from 'node:stream'
import {status as GrpcCode} from '@grpc/grpc-js'
import type {DiscoveryRequest, JsonValue} from './xds-messages.js'
import {AutoRegistration, RegistrationError, type AutoRegistrationOptions, type ProxyInfo} from './autoregistration.js'
import {authenticateCaller, serveCa} from './ca.js'
import {meshCa} from './mesh-ca.js'
import {XDS_TYPES, type Mesh, type ProxySpec, type XdsType} from './mesh.js'
import type {Pki} from './pki.js'
import {resourceKey, type KubeObj, type Store} from './store.js'
import type {XdsServer, ServerCall} from './xds.js'
import {encodeDiscoveryResponse} from './xds-messages.js'
import {encodeMessage} from '../fixtures/protos/load.js'

/** pilot-agent's health reports (pkg/istio-agent/health HealthInfoTypeURL; istiod: pilot/pkg/xds/v3 HealthInfoType). */
export const HEALTH_INFO_TYPE = 'type.googleapis.com/istio.v1.HealthInformation'
export const XDS_PORT = 15012
export const ENVOY_FILTERS = resourceKey('networking.istio.io', 'envoyfilters')
/** The Any type of each filter an EnvoyFilter adds, in the LDS push. */
export const EXTENSION_CONFIG_TYPE = 'type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig'

type Json = Record<string, unknown>
const isObj = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)

/**
 * The filters the EnvoyFilters that apply to a proxy add (istiod: the root namespace's apply to every
 * proxy, a namespace's to its own proxies; workloadSelector.labels must all match), in name order.
 */
export function envoyFilterAdditions(store: Store, proxy: {namespace: string; labels: Record<string, string>}, rootNamespace = 'istio-system'): {envoyFilter: string; name: string; typeUrl: string}[] {
  const out: {envoyFilter: string; name: string; typeUrl: string}[] = []
  const filters = [...store.list(ENVOY_FILTERS, rootNamespace), ...(proxy.namespace === rootNamespace ? [] : store.list(ENVOY_FILTERS, proxy.namespace))]
  for (const ef of filters.sort((a, b) => `${a.metadata.namespace}/${a.metadata.name}`.localeCompare(`${b.metadata.namespace}/${b.metadata.name}`))) {
    const spec = isObj(ef.spec) ? ef.spec : {}
    const selector = isObj(spec.workloadSelector) && isObj(spec.workloadSelector.labels) ? spec.workloadSelector.labels : {}
    if (!Object.entries(selector).every(([k, v]) => proxy.labels[k] === v)) continue
    for (const cp of Array.isArray(spec.configPatches) ? spec.configPatches.filter(isObj) : []) {
      if (cp.applyTo !== 'HTTP_FILTER' && cp.applyTo !== 'NETWORK_FILTER') continue
      const value = isObj(cp.patch) && isObj(cp.patch.value) ? cp.patch.value : {}
      const typed = isObj(value.typed_config) ? value.typed_config : isObj(value.typedConfig) ? value.typedConfig : {}
      if (typeof value.name !== 'string' || typeof typed['@type'] !== 'string') continue
      out.push({envoyFilter: `${ef.metadata.namespace}/${ef.metadata.name}`, name: value.name, typeUrl: typed['@type']})
    }
  }
  return out
}

export interface VmServicesOptions {
  store: Store
  pki: Pki
  mesh: Mesh
  /** The istiod pod that serves (its name goes to istio.io/workloadController and syncz). */
  istiod: string
  clusterId?: string
  trustDomain?: string
  autoregistration?: Omit<AutoRegistrationOptions, 'instanceId' | 'onReonboard'>
}

const typeByUrl = new Map<string, XdsType>(Object.entries(XDS_TYPES).map(([k, v]) => [v, k as XdsType]))

interface Stream {
  call: ServerCall
  connectedAt: Date
  proxy: ProxyInfo
  spec: ProxySpec
  sent: Map<string, string>
}

/** The VM-facing services of one simulated istiod. */
export class IstiodVmServices {
  readonly autoregistration: AutoRegistration
  /** istiod's log lines about VMs (refusal reasons that clients only see as opaque messages). */
  readonly log: string[] = []
  private readonly streams = new Map<string, Stream>()
  private nonce = 0
  private readonly unsubscribe: () => void

  constructor(
    readonly xds: XdsServer,
    private readonly o: VmServicesOptions,
  ) {
    const clusterId = o.clusterId ?? o.mesh.istiods.get(o.istiod)?.clusterId ?? 'cluster1'
    const auth = {pki: o.pki, store: o.store, clusterId, trustDomain: o.trustDomain ?? 'cluster.local', log: (l: string) => this.log.push(l)}
    this.autoregistration = new AutoRegistration(o.store, {
      ...o.autoregistration,
      instanceId: o.istiod,
      onReonboard: (id) => this.streams.get(id)?.call.end(GrpcCode.UNAVAILABLE, 'the workload is onboarding again'),
    })
    serveCa(xds, meshCa(), auth)
    xds.onAdsStream((call, first) => this.open(call, first, auth))
    for (const url of Object.values(XDS_TYPES)) xds.onDiscovery(url, (req, call) => this.discovery(req, call))
    // istiod pushes again on a config change: an EnvoyFilter made, changed or deleted.
    this.unsubscribe = o.store.onEvent((e) => {
      if (e.resource !== ENVOY_FILTERS) return
      for (const s of this.streams.values()) {
        if (!s.sent.has(XDS_TYPES.LDS) || s.call.closed) continue
        s.call.send(encodeDiscoveryResponse(this.push(s, 'LDS')))
      }
    })
    xds.onDiscovery(HEALTH_INFO_TYPE, (req, call) => {
      const s = this.byCall(call)
      if (s) this.autoregistration.health(s.proxy.id, {healthy: !req.errorDetail, message: req.errorDetail?.message})
      return undefined
    })
  }

  private byCall(call: ServerCall): Stream | undefined {
    for (const s of this.streams.values()) if (s.call === call) return s
    return undefined
  }

  private open(call: ServerCall, first: DiscoveryRequest, auth: Parameters<typeof authenticateCaller>[1]): void {
    const caller = authenticateCaller(call, auth)
    if (!caller) {
      call.end(GrpcCode.UNAUTHENTICATED, 'authentication failure')
      return
    }
    const meta = first.node?.metadata ?? {}
    const str = (k: string) => (typeof meta[k] === 'string' ? (meta[k] as string) : undefined)
    const id = first.node?.id ?? ''
    // Sidecar node IDs: sidecar~IP~NAME.NAMESPACE~NAMESPACE.svc.cluster.local (the proxy ID is the third part).
    const parts = id.split('~')
    const proxyId = parts.length === 4 ? parts[2]! : id
    const namespace = str('NAMESPACE') ?? proxyId.slice(proxyId.lastIndexOf('.') + 1)
    if (caller.namespace !== namespace) {
      this.log.push(`Unauthorized XDS: ${proxyId} with identity ${caller.identity}: authorization failed: namespace mismatch`)
      call.end(GrpcCode.PERMISSION_DENIED, `authorization failed: no identities ([${caller.identity}]) matched ${namespace}/${caller.serviceAccount}`)
      return
    }
    const proxyConfig = meta.PROXY_CONFIG as Record<string, JsonValue> | undefined
    const locality = meta.LOCALITY as {region?: string; zone?: string; subZone?: string} | undefined
    const proxy: ProxyInfo = {
      id: proxyId,
      namespace,
      ips: (str('INSTANCE_IPS') ?? (parts.length === 4 ? parts[1]! : '')).split(',').filter(Boolean),
      autoRegisterGroup: str('AUTO_REGISTER_GROUP'),
      network: str('NETWORK') || undefined,
      labels: (meta.LABELS as Record<string, string> | undefined) ?? undefined,
      locality,
      readinessProbe: proxyConfig?.readinessProbe !== undefined && proxyConfig.readinessProbe !== null,
      identity: {namespace: caller.namespace, serviceAccount: caller.serviceAccount},
      version: str('ISTIO_VERSION'),
    }
    const connectedAt = new Date()
    try {
      this.autoregistration.connect(proxy, connectedAt)
    } catch (err) {
      if (!(err instanceof RegistrationError)) throw err
      this.log.push(err.message)
      call.end(err.code === 'FailedPrecondition' ? GrpcCode.FAILED_PRECONDITION : GrpcCode.UNKNOWN, err.message)
      return
    }
    // The metadata as sent (its string values), for /debug/adsz: INSTANCE_IPS is how a proxy is told apart from its group's others.
    const metadata = Object.fromEntries(Object.entries(meta).filter((e): e is [string, string] => typeof e[1] === 'string'))
    const spec: ProxySpec = {
      id: proxyId,
      istiod: this.o.istiod,
      version: proxy.version,
      clusterId: str('CLUSTER_ID'),
      sentAgoMs: 0,
      types: {CDS: 'not-sent', LDS: 'not-sent', EDS: 'not-sent', RDS: 'not-sent', ECDS: 'unwatched'},
      metadata,
      connectedAt,
    }
    const stream: Stream = {call, connectedAt, proxy, spec, sent: new Map()}
    // A restarted sidecar may reconnect before istiod noticed the old stream ended.
    const previous = this.streams.get(proxyId)
    if (previous) this.close(previous)
    this.streams.set(proxyId, stream)
    this.o.mesh.connect(spec)
    call.onClose(() => this.close(stream))
  }

  private close(s: Stream): void {
    if (this.streams.get(s.proxy.id) !== s) return
    this.streams.delete(s.proxy.id)
    this.o.mesh.disconnect(s.proxy.id)
    this.autoregistration.disconnect(s.proxy.id, new Date(), s.connectedAt)
  }

  private discovery(req: DiscoveryRequest, call: ServerCall) {
    const s = this.byCall(call)
    const type = req.typeUrl ? typeByUrl.get(req.typeUrl) : undefined
    if (!s || !type) return undefined
    const sent = s.sent.get(req.typeUrl!)
    if (sent !== undefined && req.responseNonce === sent) {
      // ShouldRespond: an ACK (or a NACK with error_detail) of the last push.
      s.spec.types = {...s.spec.types, [type]: req.errorDetail ? 'nack' : 'synced'}
      if (req.errorDetail) s.spec.lastError = req.errorDetail.message
      return undefined
    }
    if (req.responseNonce && sent !== undefined) return undefined // an expired nonce: ignored
    return this.push(s, type)
  }

  /** A push of one type: a new nonce, the resources (LDS: the filters EnvoyFilters add), sent and not yet acknowledged. */
  private push(s: Stream, type: XdsType) {
    const typeUrl = XDS_TYPES[type]
    const nonce = `${new Date().toISOString()}/${++this.nonce}`
    s.sent.set(typeUrl, nonce)
    s.spec.types = {...s.spec.types, [type]: 'never-acked'}
    const resources =
      type === 'LDS'
        ? envoyFilterAdditions(this.o.store, {namespace: s.proxy.namespace, labels: this.labelsOf(s.proxy)}).map((f) => ({
            typeUrl: EXTENSION_CONFIG_TYPE,
            value: encodeMessage('envoy.config.core.v3.TypedExtensionConfig', {name: f.name, typedConfig: {type_url: f.typeUrl, value: Buffer.alloc(0)}}),
          }))
        : []
    return {versionInfo: new Date().toISOString(), typeUrl, nonce, resources}
  }

  /** The proxy's labels as istiod matches workload selectors: its WorkloadEntry's, then its node metadata's. */
  private labelsOf(proxy: ProxyInfo): Record<string, string> {
    const entry = this.o.store
      .list(resourceKey('networking.istio.io', 'workloadentries'), proxy.namespace)
      .find((we: KubeObj) => proxy.ips.includes(String((we.spec as {address?: unknown} | undefined)?.address)))
    return {...((entry?.spec as {labels?: Record<string, string>} | undefined)?.labels ?? {}), ...(entry?.metadata.labels ?? {}), ...(proxy.labels ?? {})}
  }

  stop(): void {
    this.unsubscribe()
    this.autoregistration.stop()
  }
}

// ---- the east-west gateway -------------------------------------------------------------------

/** The SNI host name of a TLS ClientHello, if the bytes hold one. */
export function clientHelloSni(b: Buffer): string | undefined {
  try {
    if (b[0] !== 0x16 || b[5] !== 0x01) return undefined
    let p = 9 + 2 + 32
    p += 1 + b[p]!
    p += 2 + b.readUInt16BE(p)
    p += 1 + b[p]!
    const end = p + 2 + b.readUInt16BE(p)
    p += 2
    while (p + 4 <= end && p + 4 <= b.length) {
      const type = b.readUInt16BE(p)
      const len = b.readUInt16BE(p + 2)
      if (type === 0 && b[p + 6] === 0) return b.subarray(p + 9, p + 9 + b.readUInt16BE(p + 7)).toString('ascii')
      p += 4 + len
    }
  } catch {
    return undefined
  }
  return undefined
}

export class EastWestGateway {
  private server?: Server
  private readonly sockets = new Set<Socket>()
  address = ''

  /** `route(sni)` names the istiod server for a host name (undefined: the connection is reset). */
  constructor(private readonly route: (sni: string | undefined) => XdsServer | undefined) {}

  /** Listens on 127.X.Y.Z:15012 (an address of its own, so the port can be istiod's real one). */
  async listen(): Promise<string> {
    for (let attempt = 0; attempt < 20; attempt++) {
      const address = `127.${1 + Math.floor(Math.random() * 250)}.${Math.floor(Math.random() * 250)}.${1 + Math.floor(Math.random() * 250)}`
      const server = createServer((socket) => this.accept(socket))
      const ok = await new Promise<boolean>((resolve) => {
        server.once('error', () => resolve(false))
        server.listen(XDS_PORT, address, () => resolve(true))
      })
      if (ok) {
        this.server = server
        this.address = address
        return address
      }
    }
    throw new Error('no free loopback address for the east-west gateway')
  }

  private accept(socket: Socket): void {
    this.sockets.add(socket)
    socket.on('close', () => this.sockets.delete(socket))
    socket.on('error', () => undefined)
    socket.once('data', (hello: Buffer) => {
      const target = this.route(clientHelloSni(hello))
      if (!target) {
        socket.destroy()
        return
      }
      // The TLS server reads a net.Socket's native handle, which would skip the bytes already read:
      // hand it a stream that replays the ClientHello, then relays the rest.
      const relay = new Duplex({
        read() {},
        write(chunk: Buffer, _enc, cb) {
          socket.write(chunk, cb)
        },
        final(cb) {
          socket.end()
          cb()
        },
        destroy(err, cb) {
          socket.destroy()
          cb(err)
        },
      })
      relay.push(hello)
      socket.on('data', (d: Buffer) => relay.push(d))
      socket.on('end', () => relay.push(null))
      socket.on('close', () => relay.destroy())
      target.acceptConnection(relay)
    })
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    await new Promise<void>((resolve) => (this.server ? this.server.close(() => resolve()) : resolve()))
  }
}

/**
 * Brings VMs into a test cluster: one gRPC server per istiod (CA + ADS + auto-registration) and
 * the east-west gateway, whose address is written into the istio-eastwestgateway Service.
 */
export class VmPlane {
  readonly istiods = new Map<string, IstiodVmServices>()
  readonly gateway: EastWestGateway

  constructor(private readonly o: {store: Store; pki: Pki; mesh: Mesh; autoregistration?: VmServicesOptions['autoregistration']; istioNamespace?: string}) {
    this.gateway = new EastWestGateway((sni) => {
      for (const [name, services] of this.istiods) {
        const istiod = o.mesh.istiods.get(name)!
        const host = `${istiod.revision === 'default' ? 'istiod' : `istiod-${istiod.revision}`}.${istiod.namespace}.svc`
        if (sni === host) return services.xds
      }
      return undefined
    })
  }

  /** The VM services of an istiod (made on first use). */
  services(istiodName: string): IstiodVmServices {
    let s = this.istiods.get(istiodName)
    if (s) return s
    // The istiod's own gRPC server (the one proxy-status reaches through a port-forward).
    const xds = this.o.mesh.xds(istiodName)
    s = new IstiodVmServices(xds, {store: this.o.store, pki: this.o.pki, mesh: this.o.mesh, istiod: istiodName, autoregistration: this.o.autoregistration})
    this.istiods.set(istiodName, s)
    return s
  }

  /** Starts the gateway and serves every istiod through it; returns the gateway address. */
  async start(): Promise<string> {
    for (const name of this.o.mesh.istiods.keys()) this.services(name)
    const address = await this.gateway.listen()
    const key = resourceKey('', 'services')
    const svc = this.o.store.get(key, this.o.istioNamespace ?? 'istio-system', 'istio-eastwestgateway')
    if (svc) this.o.store.update(key, {...svc, status: {loadBalancer: {ingress: [{ip: address}]}}})
    return address
  }

  async stop(): Promise<void> {
    await this.gateway.close()
    // The istiods' gRPC servers are the mesh's: Mesh.close() stops them.
    for (const s of this.istiods.values()) s.stop()
  }
}
