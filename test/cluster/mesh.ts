/**
 * A simulated Istio mesh on top of the test API server's store: istiod pods (versions, revisions;
 * 1.30.8 unless told, as the releases meshvm names: 1.28, 1.30, 1.31) that answer `/debug/syncz` in
 * the 1.23+ shape with a `resources` map (or, for old-istiod tests, Istio's 1.21 shape) and
 * `/debug/adsz` with each connection's node metadata (the proxy's INSTANCE_IPS); proxies (pods and VMs) connected to one istiod with
 * per-type sent/acked nonces; VMs registered as WorkloadEntries (Istio auto-registration) or
 * WorkloadAutoRegistrations (Tetrate). Tests change it between commands.
 */
import {randomUUID} from 'node:crypto'
import {createServer as createHttpServer, type IncomingMessage, type Server as HttpServer, type ServerResponse} from 'node:http'
import {CLIENT_CONFIG_TYPE, encodeClientConfig, TYPE_DEBUG_SYNCZ, type DiscoveryResponse, type GenericXdsConfig} from './xds-messages.js'
import {createMeshCa, meshCa} from './mesh-ca.js'
import type {Pki} from './pki.js'
import type {PortAcceptor} from './portforward.js'
import type {PodProxyAnswer, PodProxyRequest} from './server.js'
import {resourceKey, type KubeObj, type Store} from './store.js'
import {XdsServer} from './xds.js'

/** The Istio release of an istiod (and its proxies) when a test does not name one. */
export const DEFAULT_ISTIO_VERSION = '1.30.8'

/** istiod's secure gRPC port (xDS and the CA). */
export const XDS_PORT = 15012

export const XDS_TYPES = {
  CDS: 'type.googleapis.com/envoy.config.cluster.v3.Cluster',
  LDS: 'type.googleapis.com/envoy.config.listener.v3.Listener',
  EDS: 'type.googleapis.com/envoy.config.endpoint.v3.ClusterLoadAssignment',
  RDS: 'type.googleapis.com/envoy.config.route.v3.RouteConfiguration',
  ECDS: 'type.googleapis.com/envoy.config.core.v3.TypedExtensionConfig',
} as const
export type XdsType = keyof typeof XDS_TYPES
/** Marks a time's slot in a kept syncz text (mesh.synczText). */
const SLOT = '\u0001'
const LEGACY_FIELD: Record<XdsType, string> = {CDS: 'cluster', LDS: 'listener', EDS: 'endpoint', RDS: 'route', ECDS: 'extensionconfig'}

/** One type's state on one connection: `synced`, `stale` (sent, not acked), `never-acked`, `nack`, `not-sent`, or unwatched. */
export type XdsState = 'synced' | 'stale' | 'never-acked' | 'nack' | 'not-sent' | 'unwatched'

export interface IstiodSpec {
  name: string
  namespace?: string
  revision?: string
  version?: string
  /** 'legacy': Istio 1.21 syncz (no `resources` map); 'resources': 1.23+. */
  shape?: 'legacy' | 'resources'
  /** Monitoring port, announced by the `prometheus.io/port` annotation. */
  port?: number
  clusterId?: string
  ip?: string
  /** ENABLE_DEBUG_ON_HTTP (default true; Mesh.debugHttp sets the default for new istiods). */
  debugHttp?: boolean
  /** Serve 15012 with a certificate from a CA other than the mesh root (a man in the middle). */
  untrustedCertificate?: boolean
}

export interface ProxySpec {
  /** Proxy ID as istiod reports it: `pod.namespace`, or `hostname.namespace` for a VM. */
  id: string
  istiod: string
  version?: string
  clusterId?: string
  /** Per-type state; types left out are synced. */
  types?: Partial<Record<XdsType, XdsState>>
  /** How long ago the last push was sent. */
  sentAgoMs?: number
  lastError?: string
  /**
   * The node metadata the proxy connected with (`/debug/adsz` shows it): INSTANCE_IPS (comma separated),
   * NAMESPACE, AUTO_REGISTER_GROUP, WORKLOAD_ENTRY, ISTIO_VERSION, CLUSTER_ID, …
   */
  metadata?: Record<string, string>
  connectedAt?: Date
}

export interface VmSpec {
  name: string
  namespace: string
  group: string
  address: string
  /** istiod pod the VM's proxy is connected to; undefined = disconnected. */
  connectedTo?: string
  /** WorkloadEntry `Healthy` condition; undefined = no probe (no condition). */
  healthy?: boolean
  /** 'workloadentry': Istio auto-registration; 'war': a Tetrate WAR owning a WorkloadEntry. */
  source?: 'workloadentry' | 'war'
  disconnectedAgoMs?: number
  /** A WAR whose `status.workloadGroupSnapshot` predates the group's current spec (it needs a re-onboard). */
  stale?: boolean
  version?: string
  types?: ProxySpec['types']
  agentConnected?: boolean
}

interface IstiodState extends Required<Omit<IstiodSpec, 'ip'>> {
  ip: string
  down: boolean
  latencyMs: number
  malformed: boolean
  /** Serves /debug/adsz (tests turn it off to see what meshvm shows when it cannot be read). */
  adsz: boolean
  /** The gRPC server on 15012 and the HTTP server on the monitoring port, made on first use. */
  xds?: XdsServer
  http?: HttpServer
}

/** pilot/pkg/xds/debuggen.go TypeDebug: the type of each debug answer's Any. */
const TYPE_DEBUG = 'istio.io/debug'
const iso = (ms: number) => new Date(ms).toISOString().replace(/\.\d+Z$/, 'Z')

export class Mesh {
  readonly istiods = new Map<string, IstiodState>()
  readonly proxies = new Map<string, ProxySpec>()
  private podIp = 20
  /** Requests istiods' HTTP monitoring servers received (over port-forward): `POD PATH?QUERY`. */
  readonly debugRequests: string[] = []
  /** Default of ENABLE_DEBUG_ON_HTTP for istiods added from now on (demo --no-debug-http turns it off). */
  debugHttpDefault = true

  constructor(
    private readonly store: Store,
    /** The API server's PKI: istiod checks bearer tokens against it (a TokenReview, in a real cluster). */
    private readonly options: {pki?: Pki} = {},
  ) {}

  private ensureNamespace(name: string): void {
    const key = resourceKey('', 'namespaces')
    if (!this.store.get(key, undefined, name)) {
      this.store.create(key, 'Namespace', {
        apiVersion: 'v1',
        kind: 'Namespace',
        metadata: {name, labels: {'kubernetes.io/metadata.name': name}},
        spec: {finalizers: ['kubernetes']},
        status: {phase: 'Active'},
      })
    }
  }

  private put(resource: string, kind: string, obj: KubeObj): KubeObj {
    if (obj.metadata.namespace) this.ensureNamespace(obj.metadata.namespace)
    const existing = this.store.get(resource, obj.metadata.namespace, obj.metadata.name)
    if (existing) return this.store.update(resource, {...obj, metadata: {...existing.metadata, ...obj.metadata, resourceVersion: undefined}})
    return this.store.create(resource, kind, obj)
  }

  private nextIp(): string {
    this.podIp++
    return `10.244.${Math.floor(this.podIp / 250)}.${(this.podIp % 250) + 1}`
  }

  /** Istio's control plane in the cluster: namespace, mesh ConfigMaps, root cert, east-west gateway. */
  installIstio(options: {namespace?: string; revision?: string; clusterId?: string; gatewayIp?: string; meshConfig?: string; rootCert?: string} = {}): void {
    const ns = options.namespace ?? 'istio-system'
    const rev = options.revision && options.revision !== 'default' ? options.revision : undefined
    this.ensureNamespace(ns)
    this.ensureNamespace('kube-system')
    this.put(resourceKey('', 'configmaps'), 'ConfigMap', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: rev ? `istio-${rev}` : 'istio', namespace: ns, labels: {'istio.io/rev': rev ?? 'default'}},
      data: {mesh: options.meshConfig ?? 'defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\n  proxyMetadata: {}\ntrustDomain: cluster.local\n'},
    })
    this.put(resourceKey('', 'configmaps'), 'ConfigMap', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: rev ? `istio-sidecar-injector-${rev}` : 'istio-sidecar-injector', namespace: ns},
      data: {values: JSON.stringify({global: {multiCluster: {clusterName: options.clusterId ?? 'cluster1'}, network: 'network1'}, revision: rev ?? ''}), config: '{}'},
    })
    this.put(resourceKey('', 'configmaps'), 'ConfigMap', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: 'istio-ca-root-cert', namespace: ns},
      data: {'root-cert.pem': options.rootCert ?? meshCa().rootPem},
    })
    this.put(resourceKey('', 'services'), 'Service', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: rev ? `istiod-${rev}` : 'istiod', namespace: ns, labels: {app: 'istiod', 'istio.io/rev': rev ?? 'default'}},
      spec: {
        type: 'ClusterIP',
        clusterIP: '10.96.0.20',
        selector: {app: 'istiod', 'istio.io/rev': rev ?? 'default'},
        ports: [
          {name: 'grpc-xds', port: 15010, protocol: 'TCP'},
          {name: 'https-dns', port: 15012, protocol: 'TCP'},
          {name: 'https-webhook', port: 443, targetPort: 15017, protocol: 'TCP'},
          {name: 'http-monitoring', port: 15014, protocol: 'TCP'},
        ],
      },
    })
    if (options.gatewayIp !== undefined) {
      this.put(resourceKey('', 'services'), 'Service', {
        apiVersion: 'v1',
        kind: 'Service',
        metadata: {name: 'istio-eastwestgateway', namespace: ns, labels: {app: 'istio-eastwestgateway', istio: 'eastwestgateway'}},
        spec: {
          type: 'LoadBalancer',
          clusterIP: '10.96.0.30',
          selector: {istio: 'eastwestgateway'},
          ports: [
            {name: 'status-port', port: 15021, protocol: 'TCP'},
            {name: 'tls', port: 15443, protocol: 'TCP'},
            {name: 'tls-istiod', port: 15012, protocol: 'TCP'},
            {name: 'tls-webhook', port: 15017, protocol: 'TCP'},
          ],
        },
        status: {loadBalancer: {ingress: [{ip: options.gatewayIp}]}},
      })
    }
  }

  /**
   * `istioctl tag set default --revision REV`: the MutatingWebhookConfiguration istio-revision-tag-default,
   * labelled istio.io/tag=default and istio.io/rev=REV (undefined removes it).
   */
  setDefaultTag(revision: string | undefined, namespace = 'istio-system'): void {
    const key = resourceKey('admissionregistration.k8s.io', 'mutatingwebhookconfigurations')
    if (revision === undefined) {
      if (this.store.get(key, undefined, 'istio-revision-tag-default')) this.store.delete(key, undefined, 'istio-revision-tag-default')
      return
    }
    const service = revision === 'default' ? 'istiod' : `istiod-${revision}`
    this.put(key, 'MutatingWebhookConfiguration', {
      apiVersion: 'admissionregistration.k8s.io/v1',
      kind: 'MutatingWebhookConfiguration',
      metadata: {name: 'istio-revision-tag-default', labels: {'istio.io/tag': 'default', 'istio.io/rev': revision, app: 'sidecar-injector'}},
      webhooks: [
        {
          name: 'rev.namespace.sidecar-injector.istio.io',
          admissionReviewVersions: ['v1'],
          sideEffects: 'None',
          failurePolicy: 'Fail',
          clientConfig: {service: {name: service, namespace, path: '/inject', port: 443}},
          namespaceSelector: {matchExpressions: [{key: 'istio.io/rev', operator: 'In', values: ['default']}]},
        },
      ],
    })
  }

  /** Copies the root cert into a namespace, as istiod's namespace controller does. */
  watchNamespace(namespace: string): void {
    this.put(resourceKey('', 'configmaps'), 'ConfigMap', {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'istio-ca-root-cert', namespace}, data: {'root-cert.pem': meshCa().rootPem}})
  }

  addIstiod(spec: IstiodSpec): void {
    const state: IstiodState = {
      namespace: 'istio-system',
      revision: 'default',
      version: DEFAULT_ISTIO_VERSION,
      shape: 'resources',
      port: 15014,
      clusterId: 'cluster1',
      debugHttp: this.debugHttpDefault,
      untrustedCertificate: false,
      ...spec,
      ip: spec.ip ?? this.nextIp(),
      down: false,
      latencyMs: 0,
      malformed: false,
      adsz: true,
    }
    this.istiods.set(spec.name, state)
    const labels = {app: 'istiod', istio: 'pilot', 'istio.io/rev': state.revision}
    this.put(resourceKey('', 'pods'), 'Pod', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {name: state.name, namespace: state.namespace, labels, annotations: {'prometheus.io/port': String(state.port), 'prometheus.io/scrape': 'true', 'sidecar.istio.io/inject': 'false'}},
      spec: {containers: [{name: 'discovery', image: `docker.io/istio/pilot:${state.version}`, ports: [{containerPort: 15012}, {containerPort: 15014}]}], serviceAccountName: 'istiod'},
      status: {phase: 'Running', podIP: state.ip, conditions: [{type: 'Ready', status: 'True'}], containerStatuses: [{name: 'discovery', ready: true, restartCount: 0}]},
    })
    const deployment = state.revision === 'default' ? 'istiod' : `istiod-${state.revision}`
    this.put(resourceKey('apps', 'deployments'), 'Deployment', {
      apiVersion: 'apps/v1',
      kind: 'Deployment',
      metadata: {name: deployment, namespace: state.namespace, labels},
      spec: {
        replicas: 1,
        selector: {matchLabels: labels},
        template: {
          metadata: {labels},
          spec: {
            containers: [
              {
                name: 'discovery',
                image: `docker.io/istio/pilot:${state.version}`,
                env: [
                  {name: 'PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION', value: 'true'},
                  {name: 'PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS', value: 'true'},
                ],
              },
            ],
          },
        },
      },
      status: {replicas: 1, readyReplicas: 1, availableReplicas: 1},
    })
  }

  /** Makes an istiod stop answering (connection refused), answer slowly, or answer garbage. */
  setIstiod(name: string, change: Partial<Pick<IstiodState, 'down' | 'latencyMs' | 'malformed' | 'debugHttp' | 'adsz'>>): void {
    const state = this.istiods.get(name)
    if (!state) throw new Error(`no istiod ${name}`)
    Object.assign(state, change)
  }

  /** A sidecar in a pod (the Pod object is created too) connected to an istiod. */
  addPod(options: {name: string; namespace: string; istiod: string; labels?: Record<string, string>} & Omit<ProxySpec, 'id' | 'istiod'>): void {
    const podIP = this.nextIp()
    const version = options.version ?? this.istiods.get(options.istiod)?.version ?? DEFAULT_ISTIO_VERSION
    this.put(resourceKey('', 'pods'), 'Pod', {
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {name: options.name, namespace: options.namespace, labels: options.labels ?? {app: options.name.split('-')[0]!}},
      spec: {
        containers: [
          {name: 'app', image: 'app:1'},
          {name: 'istio-proxy', image: `istio/proxyv2:${version}`},
        ],
      },
      status: {phase: 'Running', podIP},
    })
    this.connect({...options, id: `${options.name}.${options.namespace}`, metadata: options.metadata ?? {INSTANCE_IPS: podIP, NAMESPACE: options.namespace, ISTIO_VERSION: version}})
  }

  connect(proxy: ProxySpec): void {
    this.proxies.set(proxy.id, proxy)
    this.connections++
    this.connectionIds.set(proxy.id, `${proxy.id}-${this.connections}`)
  }

  /** istiod's connection counter: a connection ID is `PROXYID-N` (pilot/pkg/xds/ads.go connectionID). */
  private connections = 0
  private readonly connectionIds = new Map<string, string>()

  disconnect(id: string): void {
    this.proxies.delete(id)
    this.connectionIds.delete(id)
  }

  /** A VM: its WorkloadEntry (and WAR), and its proxy's connection when connected. */
  addVm(vm: VmSpec): {workloadEntry: KubeObj; war?: KubeObj; proxyId: string} {
    const source = vm.source ?? 'workloadentry'
    this.ensureNamespace(vm.namespace)
    const group = this.store.get(resourceKey('networking.istio.io', 'workloadgroups'), vm.namespace, vm.group)
    const groupRef = group ? [{apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: vm.group, uid: group.metadata.uid!, controller: true, blockOwnerDeletion: true}] : undefined
    const labels = {...((group?.spec as {metadata?: {labels?: Record<string, string>}} | undefined)?.metadata?.labels ?? {app: vm.group})}
    const now = Date.now()
    let war: KubeObj | undefined
    let proxyId = `${vm.name}.${vm.namespace}`
    let owner = groupRef
    if (source === 'war') {
      const connected = vm.agentConnected ?? vm.connectedTo !== undefined
      war = this.put(resourceKey('runtime.onboarding.tetrate.io', 'workloadautoregistrations'), 'WorkloadAutoRegistration', {
        apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1',
        kind: 'WorkloadAutoRegistration',
        metadata: {name: vm.name, namespace: vm.namespace, ownerReferences: groupRef},
        spec: {
          identity: {aws: {partition: 'aws', account: '123456789012', region: 'us-east-2', zone: 'us-east-2b', ec2: {instance_id: `i-${vm.name.replace(/[^a-z0-9]/g, '').slice(-12)}`}}},
          registration: {
            agent: {version: '1.4.0'},
            sidecar: {istio: {version: vm.version ?? this.istiods.get(vm.connectedTo ?? '')?.version ?? DEFAULT_ISTIO_VERSION}},
            host: {addresses: [{ip: vm.address, type: 'VPC'}]},
            workload: {labels},
            settings: {connectedOver: 'VPC'},
          },
        },
        status: {
          ...(group ? {workloadGroupSnapshot: vm.stale ? staleSnapshot(group.spec) : structuredClone(group.spec)} : {}),
          ...(connected && vm.connectedTo ? {activeAgentConnection: {connectedTo: `onboarding-plane-${vm.connectedTo}`}} : {}),
          conditions: [
            {
              type: 'AgentConnected',
              status: connected ? 'True' : 'False',
              reason: connected ? 'AgentEstablishedConnection' : 'AgentDisconnected',
              lastTransitionTime: iso(now - (vm.disconnectedAgoMs ?? 60_000)),
            },
          ],
        },
      })
      proxyId = `${vm.name}.${vm.namespace}`
      owner = [{apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1', kind: 'WorkloadAutoRegistration', name: vm.name, uid: war.metadata.uid!, controller: true, blockOwnerDeletion: true}]
    }
    const weName = source === 'war' ? vm.name : `${vm.group}-${vm.address}`
    const annotations: Record<string, string> = source === 'war' ? {} : {'istio.io/autoRegistrationGroup': vm.group}
    if (vm.connectedTo) {
      annotations['istio.io/connectedAt'] = iso(now - 120_000)
      annotations['istio.io/workloadController'] = vm.connectedTo
    } else if (source !== 'war') {
      annotations['istio.io/disconnectedAt'] = iso(now - (vm.disconnectedAgoMs ?? 60_000))
      annotations['istio.io/workloadController'] = 'istiod-gone'
    }
    const workloadEntry = this.put(resourceKey('networking.istio.io', 'workloadentries'), 'WorkloadEntry', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {name: weName, namespace: vm.namespace, labels, annotations, ownerReferences: owner},
      spec: {address: vm.address, labels, serviceAccount: 'default', network: 'vm-network'},
      ...(vm.healthy === undefined
        ? {}
        : {
            status: {
              conditions: [
                {
                  type: 'Healthy',
                  status: vm.healthy ? 'True' : 'False',
                  lastProbeTime: iso(now - 5000),
                  lastTransitionTime: iso(now - 60_000),
                  ...(vm.healthy ? {} : {reason: 'HTTPGetFailed', message: 'Get "http://127.0.0.1:8080/ready": connection refused'}),
                },
              ],
            },
          }),
    })
    // The node metadata pilot-agent sends (mesh.yaml's proxyMetadata): the VM's address, its group when it
    // auto-registers (a WAR-registered VM names its WorkloadEntry instead).
    const metadata: Record<string, string> = {INSTANCE_IPS: vm.address, NAMESPACE: vm.namespace, ...(source === 'war' ? {WORKLOAD_ENTRY: weName} : {AUTO_REGISTER_GROUP: vm.group})}
    if (vm.connectedTo) this.connect({id: proxyId, istiod: vm.connectedTo, version: vm.version, types: vm.types, metadata, connectedAt: new Date(now - 120_000)})
    else this.disconnect(proxyId)
    return {workloadEntry, war, proxyId}
  }

  /** The `/debug/syncz` JSON of one istiod (HTTP endpoint; `?namespace=` filters by proxy namespace). */
  syncz(istiodName: string, namespace?: string, now = Date.now(), time?: (agoMs: number) => string): unknown[] {
    const istiod = this.istiods.get(istiodName)
    if (!istiod) return []
    const out: unknown[] = []
    // This simulation answers for every istiod of every cluster from one thread (a real istiod is its
    // own process): times are formatted once per distinct age (or by `time`: synczText's slots), and
    // entries are built without spreads.
    const times = new Map<number, string>()
    const ago = (ms: number) => {
      let t = times.get(ms)
      if (t === undefined) times.set(ms, (t = time ? time(ms) : iso(now - ms)))
      return t
    }
    for (const p of [...this.proxies.values()].filter((x) => x.istiod === istiodName).sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))) {
      const ns = p.id.slice(p.id.lastIndexOf('.') + 1)
      if (namespace && ns !== namespace) continue
      const entry: Record<string, unknown> = {cluster_id: p.clusterId ?? istiod.clusterId, proxy: p.id, proxy_type: 'sidecar', istio_version: p.version ?? istiod.version}
      const resources: Record<string, unknown> = {}
      const sentTime = ago(p.sentAgoMs ?? 125_000)
      for (const type of Object.keys(XDS_TYPES) as XdsType[]) {
        const state = p.types?.[type] ?? (type === 'ECDS' ? 'not-sent' : 'synced')
        if (state === 'unwatched') continue
        const nonce = `${sentTime}/${type.toLowerCase()}-${p.id}`
        const sent = state === 'not-sent' ? '' : nonce
        const acked = state === 'synced' || state === 'nack' ? nonce : state === 'stale' ? `${ago(600_000)}/old` : ''
        if (sent) entry[`${LEGACY_FIELD[type]}_sent`] = sent
        if (acked) entry[`${LEGACY_FIELD[type]}_acked`] = acked
        if (istiod.shape === 'resources') {
          const r: Record<string, string> = {}
          if (sent) {
            r.sent = sent
            r.sentTime = sentTime
          }
          if (acked) r.acked = acked
          if (state === 'nack') r.lastError = p.lastError ?? 'Proto constraint validation failed (RouteConfigurationValidationError.VirtualHosts[0]: invalid domain)'
          resources[XDS_TYPES[type]] = r
        }
      }
      if (istiod.shape === 'resources') entry.resources = resources
      out.push(entry)
    }
    return out
  }

  /**
   * `/debug/adsz` (pilot/pkg/xds/debug.go `adsz`, 1.28–1.31): every connection, sorted by connection ID,
   * with its node metadata as the proxy sent it (INSTANCE_IPS is one comma-separated string) and its
   * peer address, which for a VM is the east-west gateway's, not the VM's.
   */
  adsz(istiodName: string): {totalClients: number; clients: unknown[]} {
    const clients: {connectionId: string; connectedAt: string; address: string; metadata?: Record<string, string>; watches: Record<string, string[]>}[] = []
    let port = 40000
    for (const p of this.proxies.values()) {
      if (p.istiod !== istiodName) continue
      const vm = p.metadata?.AUTO_REGISTER_GROUP !== undefined || p.metadata?.WORKLOAD_ENTRY !== undefined
      const peer = vm ? '10.244.0.9' : (p.metadata?.INSTANCE_IPS?.split(',')[0] ?? '10.244.0.1')
      const watches: Record<string, string[]> = {}
      for (const type of Object.keys(XDS_TYPES) as XdsType[]) if ((p.types?.[type] ?? 'synced') !== 'unwatched') watches[XDS_TYPES[type]] = []
      clients.push({
        connectionId: this.connectionIds.get(p.id) ?? `${p.id}-0`,
        connectedAt: (p.connectedAt ?? new Date(Date.now() - 600_000)).toISOString(),
        address: `${peer}:${port++}`,
        ...(p.metadata ? {metadata: p.metadata} : {}),
        watches,
      })
    }
    clients.sort((a, b) => (a.connectionId < b.connectionId ? -1 : a.connectionId > b.connectionId ? 1 : 0))
    return {totalClients: clients.length, clients}
  }

  /** More istiod debug endpoints (e.g. /debug/clusterz from test/cluster/clusterz.ts), by path, served like /debug/syncz. */
  readonly debugHandlers = new Map<string, (istiod: {name: string; namespace: string; clusterId: string}) => unknown>()

  /**
   * The pods/proxy handler. A real istiod serves /debug/* only to loopback callers or callers with an
   * istio-ca token or certificate (pilot/pkg/xds/debug.go allowAuthenticatedOrLocalhost), and the API
   * server strips the caller's Authorization header before proxying: 401 with an empty body. With
   * ENABLE_DEBUG_ON_HTTP=false the handlers are not registered at all: 404.
   */
  async podProxy(req: PodProxyRequest): Promise<PodProxyAnswer | undefined> {
    const istiod = this.istiods.get(req.pod)
    if (!istiod || istiod.namespace !== req.namespace || istiod.down || req.port !== String(istiod.port)) return undefined
    if (istiod.latencyMs > 0) await new Promise((r) => setTimeout(r, istiod.latencyMs))
    if (!istiod.debugHttp || !req.path.startsWith('/debug/')) return {status: 404, body: '404 page not found\n', contentType: 'text/plain; charset=utf-8'}
    return {status: 401, body: '', contentType: 'text/plain; charset=utf-8'}
  }

  /** What listens on an istiod pod's ports for pods/portforward: the monitoring port and 15012. */
  portForward(namespace: string, pod: string, port: number): PortAcceptor | undefined {
    const istiod = this.istiods.get(pod)
    if (!istiod || istiod.namespace !== namespace || istiod.down) return undefined
    if (port === istiod.port) {
      istiod.http ??= createHttpServer((req, res) => void this.serveDebugHttp(istiod, req, res))
      const http = istiod.http
      return (socket) => http.emit('connection', socket)
    }
    if (port === XDS_PORT) {
      const xds = this.xds(istiod.name)
      return (socket) => xds.acceptConnection(socket)
    }
    return undefined
  }

  /** istiod's HTTP monitoring server, reached over port-forward (so from loopback: no authentication). */
  private async serveDebugHttp(istiod: IstiodState, req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'http://localhost')
    this.debugRequests.push(`${istiod.name} ${req.url ?? '/'}`)
    if (istiod.latencyMs > 0) await new Promise((r) => setTimeout(r, istiod.latencyMs))
    // Encoded once (not measured, then encoded again): syncz bodies are megabytes at bench scale.
    const send = (status: number, text: string, type: string) => {
      const body = Buffer.from(text, 'utf8')
      res.writeHead(status, {'Content-Type': type, 'Content-Length': body.length})
      res.end(body)
    }
    const extra = this.debugHandlers.get(url.pathname)
    if (istiod.debugHttp && istiod.adsz && url.pathname === '/debug/adsz') return send(200, JSON.stringify(this.adsz(istiod.name)), 'application/json')
    if (istiod.debugHttp && extra) return send(200, JSON.stringify(await extra({name: istiod.name, namespace: istiod.namespace, clusterId: istiod.clusterId})), 'application/json')
    if (!istiod.debugHttp || url.pathname !== '/debug/syncz') return send(404, '404 page not found\n', 'text/plain; charset=utf-8')
    if (istiod.malformed) return send(200, '<html>not json</html>', 'text/html')
    send(200, this.synczText(istiod, url.searchParams.get('namespace') ?? undefined), 'application/json')
  }

  /**
   * The /debug/syncz text, kept per istiod and `?namespace=` while nothing it is made of changed: the
   * proxies (compared field by field, as tests and the VM services change them in place). Its times
   * (ages rendered to the second, so new at nearly every request) are kept as slots filled in on each
   * answer. The bench asks 5 clusters x 3 istiods for 2,000 proxies each, all answered by this one
   * thread; a real istiod is its own process. The bytes are those of JSON.stringify(syncz()) at the
   * same instant (test/cluster/serialization-cache.test.ts).
   */
  private readonly synczTexts = new Map<string, {inputs: unknown[]; parts: string[]; ages: number[]}>()
  synczText(istiod: IstiodState, namespace?: string): string {
    const now = Date.now()
    const inputs = this.synczInputs(istiod)
    // A slot is a control character JSON escapes (\u0001), which no proxy ID or version can hold; if one
    // did, the text is made afresh.
    if (inputs.some((v) => typeof v === 'string' && v.includes(SLOT))) return JSON.stringify(this.syncz(istiod.name, namespace, now))
    const key = `${istiod.name}\n${namespace ?? ''}`
    let kept = this.synczTexts.get(key)
    if (!kept || !sameValues(kept.inputs, inputs)) {
      const ages: number[] = []
      const slot = (ms: number) => {
        let i = ages.indexOf(ms)
        if (i < 0) i = ages.push(ms) - 1
        return `${SLOT}${i}${SLOT}`
      }
      const split = JSON.stringify(this.syncz(istiod.name, namespace, now, slot)).split(/\\u0001(\d+)\\u0001/)
      kept = {inputs, parts: split, ages}
      this.synczTexts.set(key, kept)
    }
    const times = kept.ages.map((ms) => iso(now - ms))
    let text = kept.parts[0]!
    for (let i = 1; i < kept.parts.length; i += 2) text += times[Number(kept.parts[i])]! + kept.parts[i + 1]!
    return text
  }

  /** Everything of an istiod and its proxies that its syncz shows, flattened. */
  private synczInputs(istiod: IstiodState): unknown[] {
    const out: unknown[] = [istiod.shape, istiod.clusterId, istiod.version]
    for (const p of this.proxies.values()) {
      if (p.istiod !== istiod.name) continue
      const t = p.types
      out.push(p.id, p.clusterId, p.version, p.sentAgoMs, p.lastError, t?.CDS, t?.LDS, t?.EDS, t?.RDS, t?.ECDS)
    }
    return out
  }

  /**
   * The istiod's gRPC server (made on first use): serving certificate for istiod[-REV].NS.svc from the
   * mesh root CA, tokens checked against the API server's signing key, istio.io/debug/syncz answered
   * from this model. Other helpers register more handlers on it (the CA, VM ADS connections).
   */
  xds(name: string): XdsServer {
    const istiod = this.istiods.get(name)
    if (!istiod) throw new Error(`no istiod ${name}`)
    if (istiod.xds) return istiod.xds
    if (!this.options.pki) throw new Error('the mesh has no PKI to check tokens with')
    const san = `${istiod.revision === 'default' ? 'istiod' : `istiod-${istiod.revision}`}.${istiod.namespace}.svc`
    const ca = istiod.untrustedCertificate ? createMeshCa('not-the-mesh-root') : meshCa()
    const xds = new XdsServer({pki: this.options.pki, certificate: ca.issue({dnsNames: [san]}), clientCaPem: meshCa().rootPem})
    xds.onDiscovery(TYPE_DEBUG_SYNCZ, async (_request, call) => {
      if (istiod.latencyMs > 0) await new Promise((r) => setTimeout(r, istiod.latencyMs))
      // statusgen.go (1.28.5+): an identity of istiod's namespace sees every proxy, any other only its own namespace's.
      const caller = call.identity?.['kubernetes.io']?.namespace
      return this.synczXds(istiod.name, caller === istiod.namespace ? undefined : (caller ?? ''))
    })
    // Every other debug endpoint over xDS, as istiod's StatusGen hands `istio.io/debug/NAME` to DebugGen
    // (pilot/pkg/xds/debuggen.go): only an identity of istiod's own namespace may read it; the
    // handler's body is the value of one Any of type `istio.io/debug`, named NAME.
    xds.onDiscoveryPrefix(`${TYPE_DEBUG}/`, async (request, call) => {
      const name = request.typeUrl!.slice(TYPE_DEBUG.length + 1)
      if (call.identity?.['kubernetes.io']?.namespace !== istiod.namespace) throw new Error(`the debug info is not available for current identity`)
      if (istiod.latencyMs > 0) await new Promise((r) => setTimeout(r, istiod.latencyMs))
      const extra = this.debugHandlers.get(`/debug/${name}`)
      const body =
        name === 'adsz' && istiod.adsz
          ? JSON.stringify(this.adsz(istiod.name))
          : extra
            ? JSON.stringify(await extra({name: istiod.name, namespace: istiod.namespace, clusterId: istiod.clusterId}))
            : '404 page not found\n'
      return {typeUrl: request.typeUrl, versionInfo: iso(Date.now()), nonce: randomUUID(), resources: [{typeUrl: TYPE_DEBUG, value: Buffer.from(body, 'utf8')}]}
    })
    istiod.xds = xds
    return xds
  }

  /** `host:port` of the istiod's gRPC server on 127.0.0.1 (for --xds-address: an istiod outside the cluster). */
  async xdsAddress(name: string): Promise<string> {
    const xds = this.xds(name)
    const a = xds.address ?? (await xds.listen())
    return `${a.host}:${a.port}`
  }

  /** istiod's StatusGen.debugSyncz (pilot/pkg/xds/statusgen.go, 1.23+): one ClientConfig per connected proxy. */
  synczXds(istiodName: string, onlyNamespace?: string): DiscoveryResponse | undefined {
    const istiod = this.istiods.get(istiodName)
    if (!istiod || istiod.down) return undefined
    const now = Date.now()
    const version = `${iso(now)}/1`
    const resources = [...this.proxies.values()]
      .filter((p) => p.istiod === istiodName && (onlyNamespace === undefined || p.id.slice(p.id.lastIndexOf('.') + 1) === onlyNamespace))
      .sort((a, b) => (a.id < b.id ? -1 : a.id > b.id ? 1 : 0))
      .map((p) => {
        const sentTime = new Date(now - (p.sentAgoMs ?? 125_000)).toISOString()
        const generic: GenericXdsConfig[] = []
        // An istiod older than 1.23 (the 1.21 syncz shape here) answers as 1.22 did: all five types, no
        // ERROR state (a NACKed nonce was still acknowledged) and no timestamps.
        const old = istiod.shape === 'legacy'
        for (const type of Object.keys(XDS_TYPES) as XdsType[]) {
          const state = p.types?.[type] ?? (type === 'ECDS' ? 'not-sent' : 'synced')
          if (old) {
            generic.push({typeUrl: XDS_TYPES[type], configStatus: state === 'not-sent' || state === 'unwatched' ? 2 : state === 'synced' || state === 'nack' ? 1 : 3})
            continue
          }
          if (state === 'unwatched') continue
          // debugSyncStatus: ERROR on a NACK, NOT_SENT without a sent nonce, SYNCED when acked, else STALE.
          const status = state === 'nack' ? 4 : state === 'not-sent' ? 2 : state === 'synced' ? 1 : 3
          generic.push({
            typeUrl: XDS_TYPES[type],
            configStatus: status,
            lastUpdated: state === 'not-sent' ? '0001-01-01T00:00:00Z' : sentTime,
            ...(state === 'nack'
              ? {errorState: {lastUpdateAttempt: sentTime, details: p.lastError ?? 'Proto constraint validation failed (RouteConfigurationValidationError.VirtualHosts[0]: invalid domain)'}}
              : {}),
          })
        }
        generic.sort((a, b) => (a.typeUrl < b.typeUrl ? -1 : 1))
        const ns = p.id.slice(p.id.lastIndexOf('.') + 1)
        return {
          typeUrl: CLIENT_CONFIG_TYPE,
          value: encodeClientConfig({node: {id: p.id, metadata: {CLUSTER_ID: p.clusterId ?? istiod.clusterId, NAMESPACE: ns, ISTIO_VERSION: p.version ?? istiod.version}}, genericXdsConfigs: generic}),
        }
      })
    const identifier = JSON.stringify({Component: 'istiod', ID: istiod.name, Info: {version: istiod.version, revision: 'abc123', golang_version: 'go1.23.4', status: 'Clean', tag: istiod.version}})
    return {versionInfo: version, typeUrl: TYPE_DEBUG_SYNCZ, nonce: `${version}${randomUUID()}`, controlPlane: {identifier}, resources}
  }

  /** Stops the istiods' servers. */
  async close(): Promise<void> {
    for (const istiod of this.istiods.values()) {
      istiod.http?.closeAllConnections()
      istiod.http?.close()
      await istiod.xds?.close()
    }
  }

  /** Unique nonce, for tests that move a proxy between states. */
  static nonce(): string {
    return randomUUID()
  }
}

/** The group spec as it was before someone changed it: an older template label and port. */
function staleSnapshot(spec: unknown): unknown {
  const old = structuredClone(spec) as {template?: {labels?: Record<string, string>; ports?: Record<string, number>}}
  old.template = {...old.template, labels: {...old.template?.labels, version: 'v1'}, ports: {...old.template?.ports, http: 8000}}
  return old
}

function sameValues(a: unknown[], b: unknown[]): boolean {
  if (a.length !== b.length) return false
  for (let i = 0; i < a.length; i++) if (a[i] !== b[i]) return false
  return true
}
