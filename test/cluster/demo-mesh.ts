/**
 * The demo mesh of `npm run demo:cluster`: 3 application namespaces, 2 istiod revisions of the
 * releases meshvm names (`default` on 1.30, a `1-31` canary on 1.31; both answer syncz in the 1.23+
 * shape, the only one istioctl 1.28+ reads), 40 pods with sidecars (some still on 1.28) and 12 VMs,
 * some unhealthy, disconnected or stale, so every meshvm command has something to show. The TSB-style
 * VMs (WorkloadAutoRegistrations) run an onboarding agent, so `war rollout` and `war delete` work on
 * them as on TSB. Beside the classic east-west gateway there is an ambient one (`istio-eastwest`,
 * class istio-east-west), for precheck to tell apart.
 */
import {installClusterz} from './clusterz.js'
import type {TestCluster} from './index.js'
import type {VmSpec, XdsState} from './mesh.js'
import {OnboardingAgents} from './onboarding-agent.js'
import type {Store} from './store.js'
import {testPki} from './pki.js'
import {VmPlane} from './vm-services.js'

export const DEMO_NAMESPACES = ['shop', 'payments', 'legacy'] as const
export const DEMO_ISTIODS = {stable: 'istiod-6c9f8d7b5-k2x4p', canary: 'istiod-1-31-5f7c9b8d4-q8w2n'} as const
/** The releases of the demo's revisions, and of the older sidecars still connected (n-2, as Istio supports). */
export const DEMO_VERSIONS = {stable: '1.30.8', canary: '1.31.0', old: '1.28.10'} as const
export const DEMO_CANARY_REVISION = '1-31'

/**
 * An ambient east-west gateway's Service, as the deployment controller makes it for a Gateway of
 * class istio-east-west (ambient multicluster): HBONE on 15008 and the status port, the GEP-1762
 * labels naming the Gateway and its class.
 */
export function addAmbientEastWestGateway(store: Store, options: {name?: string; namespace?: string; ip: string}): void {
  const name = options.name ?? 'istio-eastwest'
  const namespace = options.namespace ?? 'istio-system'
  const labels = {'gateway.networking.k8s.io/gateway-name': name, 'gateway.networking.k8s.io/gateway-class-name': 'istio-east-west', 'topology.istio.io/network': 'network1'}
  store.create('/services', 'Service', {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {name, namespace, labels},
    spec: {
      type: 'LoadBalancer',
      clusterIP: '10.96.0.31',
      selector: {'gateway.networking.k8s.io/gateway-name': name},
      ports: [
        {name: 'status-port', port: 15021, protocol: 'TCP'},
        {name: 'mesh', port: 15008, protocol: 'TCP'},
      ],
    },
    status: {loadBalancer: {ingress: [{ip: options.ip}]}},
  })
}

export function seedDemoMesh(cluster: TestCluster, options: {clusterId?: string} = {}): {agents: OnboardingAgents} {
  const {mesh, store} = cluster
  const clusterId = options.clusterId ?? 'cluster1'
  // Both revisions' injector configs carry the cluster ID (bundles read ISTIO_META_CLUSTER_ID from there).
  mesh.installIstio({clusterId, gatewayIp: '203.0.113.10'})
  // A revisioned install's mesh config names its own istiod (as the istio-discovery chart renders it).
  mesh.installIstio({
    revision: DEMO_CANARY_REVISION,
    clusterId,
    gatewayIp: '203.0.113.10',
    meshConfig: `defaultConfig:\n  discoveryAddress: istiod-${DEMO_CANARY_REVISION}.istio-system.svc:15012\n  proxyMetadata: {}\ntrustDomain: cluster.local\n`,
  })
  // startTestCluster() already runs one default-revision istiod; the demo uses its own names.
  for (const pod of store.list('/pods', 'istio-system')) store.delete('/pods', 'istio-system', pod.metadata.name)
  mesh.istiods.clear()
  mesh.addIstiod({name: DEMO_ISTIODS.stable, revision: 'default', version: DEMO_VERSIONS.stable, shape: 'resources', clusterId})
  mesh.addIstiod({name: DEMO_ISTIODS.canary, revision: DEMO_CANARY_REVISION, version: DEMO_VERSIONS.canary, shape: 'resources', clusterId})
  for (const ns of DEMO_NAMESPACES) mesh.watchNamespace(ns)
  // istiod's multi-cluster secret controller: /debug/clusterz (HTTP) and istio.io/debug/clusterz (xDS),
  // as a real istiod serves it, so `remote-secret status` / `rotate` work on the demo.
  installClusterz(mesh, store)

  const apps: Record<(typeof DEMO_NAMESPACES)[number], string[]> = {
    shop: ['frontend', 'cart', 'catalog', 'search', 'reviews'],
    payments: ['payments', 'ledger', 'fraud'],
    legacy: ['inventory', 'reports'],
  }
  const problems: XdsState[] = ['stale', 'never-acked', 'nack', 'not-sent']
  let n = 0
  for (const ns of DEMO_NAMESPACES) {
    for (const app of apps[ns]) {
      for (let replica = 0; replica < 4; replica++) {
        const canary = ns === 'legacy'
        const problem = n % 9 === 4 ? problems[((n / 9) % problems.length) | 0] : undefined
        mesh.addPod({
          name: `${app}-${(0x5d4c3b + n * 7919).toString(16).slice(-6)}-${String.fromCharCode(97 + replica)}${n % 10}x${replica}`,
          namespace: ns,
          istiod: canary ? DEMO_ISTIODS.canary : DEMO_ISTIODS.stable,
          labels: {app, version: 'v1'},
          version: canary ? DEMO_VERSIONS.canary : n % 13 === 0 ? DEMO_VERSIONS.old : DEMO_VERSIONS.stable,
          sentAgoMs: 30_000 + n * 17_000,
          ...(problem ? {types: {[['CDS', 'LDS', 'EDS', 'RDS'][n % 4]!]: problem}} : {}),
        })
        n++
      }
    }
  }

  const groups: {ns: (typeof DEMO_NAMESPACES)[number]; group: string; port: number; source: VmSpec['source']}[] = [
    {ns: 'shop', group: 'recommender', port: 8080, source: 'war'},
    {ns: 'payments', group: 'mainframe-gw', port: 9443, source: 'workloadentry'},
    {ns: 'legacy', group: 'oracle-db', port: 1521, source: 'war'},
  ]
  for (const g of groups) {
    store.create('networking.istio.io/workloadgroups', 'WorkloadGroup', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: {name: g.group, namespace: g.ns},
      spec: {metadata: {labels: {app: g.group}}, template: {serviceAccount: 'default', ports: {tcp: g.port}}, probe: {tcpSocket: {port: g.port}, periodSeconds: 5}},
    })
    store.create('/services', 'Service', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: g.group, namespace: g.ns, labels: {app: g.group}},
      spec: {type: 'ClusterIP', clusterIP: `10.96.${groups.indexOf(g) + 5}.10`, selector: {app: g.group}, ports: [{name: 'tcp', port: g.port, protocol: 'TCP'}]},
    })
  }
  // 12 VMs: healthy and connected, unhealthy, disconnected (recently and long ago), stale snapshots.
  const vms: Omit<VmSpec, 'namespace' | 'group' | 'source'>[][] = [
    [
      {name: 'recommender-aws-aws-123456789012-us-east-2a-ec2-i-0a1b2c3d4e5f60001', address: '10.0.1.11', connectedTo: DEMO_ISTIODS.stable, healthy: true},
      {name: 'recommender-aws-aws-123456789012-us-east-2b-ec2-i-0a1b2c3d4e5f60002', address: '10.0.1.12', connectedTo: DEMO_ISTIODS.stable, healthy: true, stale: true},
      {name: 'recommender-aws-aws-123456789012-us-east-2c-ec2-i-0a1b2c3d4e5f60003', address: '10.0.1.13', connectedTo: DEMO_ISTIODS.stable, healthy: false, types: {EDS: 'stale'}},
      {name: 'recommender-aws-aws-123456789012-us-east-2a-ec2-i-0a1b2c3d4e5f60004', address: '10.0.1.14', healthy: undefined, disconnectedAgoMs: 45 * 60_000},
    ],
    [
      {name: 'mainframe-gw-1', address: '192.168.10.21', connectedTo: DEMO_ISTIODS.stable, healthy: true},
      {name: 'mainframe-gw-2', address: '192.168.10.22', connectedTo: DEMO_ISTIODS.stable, healthy: true, version: DEMO_VERSIONS.old},
      {name: 'mainframe-gw-3', address: '192.168.10.23', connectedTo: DEMO_ISTIODS.stable, healthy: false},
      {name: 'mainframe-gw-4', address: '192.168.10.24', disconnectedAgoMs: 2 * 60_000},
    ],
    [
      {name: 'oracle-db-aws-aws-123456789012-us-east-2a-ec2-i-0f9e8d7c6b5a40001', address: '10.0.3.31', connectedTo: DEMO_ISTIODS.canary, healthy: true, version: DEMO_VERSIONS.canary},
      {name: 'oracle-db-aws-aws-123456789012-us-east-2b-ec2-i-0f9e8d7c6b5a40002', address: '10.0.3.32', connectedTo: DEMO_ISTIODS.canary, healthy: true, version: DEMO_VERSIONS.canary, stale: true},
      {name: 'oracle-db-aws-aws-123456789012-us-east-2c-ec2-i-0f9e8d7c6b5a40003', address: '10.0.3.33', connectedTo: DEMO_ISTIODS.canary, version: DEMO_VERSIONS.canary, types: {RDS: 'nack'}},
      {name: 'oracle-db-aws-aws-123456789012-us-east-2a-ec2-i-0f9e8d7c6b5a40004', address: '10.0.3.34', disconnectedAgoMs: 3 * 3600_000, agentConnected: false},
    ],
  ]
  // The TSB-style VMs run an onboarding agent: a deleted registration of a connected VM comes back from the current group.
  const agents = new OnboardingAgents(cluster)
  groups.forEach((g, i) => {
    for (const vm of vms[i]!) {
      const spec = {...vm, namespace: g.ns, group: g.group, source: g.source}
      if (g.source === 'war') agents.add(spec)
      else mesh.addVm(spec)
    }
  })
  addAmbientEastWestGateway(store, {ip: '203.0.113.11'})
  // The VMs are on their own network (vm-network), as in Istio's VM guide: the cluster's network is
  // named on the Istio namespace and on its east-west gateway, so istiod can route across.
  for (const [resource, namespace, name] of [
    ['/namespaces', undefined, 'istio-system'],
    ['/services', 'istio-system', 'istio-eastwestgateway'],
  ] as const) {
    const obj = store.get(resource, namespace, name)
    if (obj) store.update(resource, {...obj, metadata: {...obj.metadata, resourceVersion: undefined, labels: {...obj.metadata.labels, 'topology.istio.io/network': 'network1'}}})
  }
  return {agents}
}

/**
 * Lets VMs join the demo for real: each istiod serves the CA and ADS, and the east-west gateway
 * listens on a loopback address (port 15012) that the istio-eastwestgateway Service now names, so
 * a bundle written against the demo (`meshvm onboard … --apply --bundle DIR --autoregister`) works
 * as it is with `npm run demo:vm -- DIR --address IP --hostname NAME`.
 */
export async function startDemoVmPlane(cluster: TestCluster, options: {gracePeriodMs?: number} = {}): Promise<VmPlane> {
  const plane = new VmPlane({store: cluster.store, pki: testPki(), mesh: cluster.mesh, autoregistration: {gracePeriodMs: options.gracePeriodMs}})
  await plane.start()
  return plane
}
