/**
 * Large clusters, for `npm run bench` and `npm run demo:cluster -- --scale wars=N,proxies=N,istiods=N`:
 * the same seeding in both, so a bench case can be reproduced by hand with meshvm and kubectl.
 */
import type {TestCluster} from './index.js'

export interface Scale {
  /** WorkloadAutoRegistrations, spread over five namespaces with a WorkloadGroup each. */
  wars: number
  /** Connected VM proxies, each with its WorkloadEntry in namespace `fleet`. */
  proxies: number
  /** istiod pods the proxies are spread over. */
  istiods: number
}

/** `wars=10000,proxies=5000,istiods=3` (any subset; istiods defaults to 3). */
export function parseScale(text: string): Scale {
  const scale: Scale = {wars: 0, proxies: 0, istiods: 3}
  for (const part of text.split(',')) {
    const m = /^(wars|proxies|istiods)=(\d{1,7})$/.exec(part.trim())
    if (!m) throw new Error(`--scale ${JSON.stringify(text)}: expected wars=N,proxies=N,istiods=N (any of them, N a whole number)`)
    scale[m[1] as keyof Scale] = Number(m[2])
  }
  if (scale.proxies > 0 && scale.istiods < 1) throw new Error(`--scale ${JSON.stringify(text)}: proxies need at least one istiod`)
  return scale
}

const WAR_NAMESPACES = ['shop', 'payments', 'legacy', 'edge', 'data']

/** `count` WorkloadAutoRegistrations (1 in 17 with its agent disconnected) in five namespaces. */
export function seedWars(cluster: TestCluster, count: number): void {
  const {store} = cluster
  for (const ns of WAR_NAMESPACES) {
    if (!store.get('/namespaces', undefined, ns)) store.create('/namespaces', 'Namespace', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: ns}})
    if (!store.get('networking.istio.io/workloadgroups', ns, 'app')) {
      store.create('networking.istio.io/workloadgroups', 'WorkloadGroup', {
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        metadata: {name: 'app', namespace: ns},
        spec: {metadata: {labels: {app: 'app'}}, template: {serviceAccount: 'default', ports: {http: 8080}}},
      })
    }
  }
  for (let i = 0; i < count; i++) {
    const ns = WAR_NAMESPACES[i % WAR_NAMESPACES.length]!
    const id = `i-${(0x10000000000 + i * 7919).toString(16)}`
    const group = store.get('networking.istio.io/workloadgroups', ns, 'app')!
    store.create('runtime.onboarding.tetrate.io/workloadautoregistrations', 'WorkloadAutoRegistration', {
      apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1',
      kind: 'WorkloadAutoRegistration',
      metadata: {
        name: `app-aws-aws-123456789012-us-east-2b-ec2-${id}`,
        namespace: ns,
        ownerReferences: [{apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: 'app', uid: group.metadata.uid!, controller: true}],
      },
      spec: {
        identity: {aws: {partition: 'aws', account: '123456789012', region: 'us-east-2', zone: 'us-east-2b', ec2: {instance_id: id}}},
        registration: {
          agent: {version: '1.4.0'},
          sidecar: {istio: {version: '1.24.2'}},
          host: {addresses: [{ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, type: 'VPC'}]},
          workload: {labels: {app: 'app'}},
        },
      },
      status: {
        workloadGroupSnapshot: group.spec,
        activeAgentConnection: {connectedTo: 'onboarding-plane-0'},
        conditions: [{type: 'AgentConnected', status: i % 17 === 0 ? 'False' : 'True', reason: 'AgentEstablishedConnection', lastTransitionTime: '2026-11-20T10:00:00Z'}],
      },
    })
  }
}

/**
 * `istiods` more istiod pods and `count` VM proxies connected round-robin to them (1 in 50 with a
 * stale EDS), each with its auto-registered WorkloadEntry in namespace `fleet`.
 */
export function seedProxies(cluster: TestCluster, count: number, istiods: number): void {
  const {mesh, store} = cluster
  const names = Array.from({length: istiods}, (_, i) => `istiod-5f7c9b8d4-${'abcdefghij'[i % 10]}x${i}q9`)
  for (const name of names) mesh.addIstiod({name})
  if (!store.get('/namespaces', undefined, 'fleet')) store.create('/namespaces', 'Namespace', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'fleet'}})
  for (let i = 0; i < count; i++) {
    const name = `vm-${String(i).padStart(5, '0')}`
    const istiod = names[i % names.length]!
    mesh.connect({id: `${name}.fleet`, istiod, types: i % 50 === 0 ? {EDS: 'stale'} : undefined})
    store.create('networking.istio.io/workloadentries', 'WorkloadEntry', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {
        name,
        namespace: 'fleet',
        labels: {app: 'fleet'},
        annotations: {'istio.io/autoRegistrationGroup': 'fleet', 'istio.io/connectedAt': '2026-11-20T10:00:00Z', 'istio.io/workloadController': istiod},
      },
      spec: {address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, labels: {app: 'fleet'}, serviceAccount: 'default'},
    })
  }
}
