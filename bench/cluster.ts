/**
 * Cluster cases for `npm run bench`: the test API server runs in this process and the commands
 * (meshvm and its kubectl baseline) run as child processes against it, so both pay the same server.
 */
import {mkdtempSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {startTestCluster, type TestCluster} from '../test/cluster/index.js'

export async function clusterWithWars(count: number): Promise<TestCluster> {
  const cluster = await startTestCluster()
  const {store} = cluster
  const namespaces = ['shop', 'payments', 'legacy', 'edge', 'data']
  for (const ns of namespaces) {
    store.create('/namespaces', 'Namespace', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: ns}})
    store.create('networking.istio.io/workloadgroups', 'WorkloadGroup', {
      apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name: 'app', namespace: ns},
      spec: {metadata: {labels: {app: 'app'}}, template: {serviceAccount: 'default', ports: {http: 8080}}},
    })
  }
  for (let i = 0; i < count; i++) {
    const ns = namespaces[i % namespaces.length]!
    const id = `i-${(0x10000000000 + i * 7919).toString(16)}`
    const group = store.get('networking.istio.io/workloadgroups', ns, 'app')!
    store.create('runtime.onboarding.tetrate.io/workloadautoregistrations', 'WorkloadAutoRegistration', {
      apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1', kind: 'WorkloadAutoRegistration',
      metadata: {
        name: `app-aws-aws-123456789012-us-east-2b-ec2-${id}`, namespace: ns,
        ownerReferences: [{apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: 'app', uid: group.metadata.uid!, controller: true}],
      },
      spec: {
        identity: {aws: {partition: 'aws', account: '123456789012', region: 'us-east-2', zone: 'us-east-2b', ec2: {instance_id: id}}},
        registration: {agent: {version: '1.4.0'}, sidecar: {istio: {version: '1.24.2'}}, host: {addresses: [{ip: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, type: 'VPC'}]}, workload: {labels: {app: 'app'}}},
      },
      status: {
        workloadGroupSnapshot: group.spec,
        activeAgentConnection: {connectedTo: 'onboarding-plane-0'},
        conditions: [{type: 'AgentConnected', status: i % 17 === 0 ? 'False' : 'True', reason: 'AgentEstablishedConnection', lastTransitionTime: '2026-11-20T10:00:00Z'}],
      },
    })
  }
  return cluster
}

export async function clusterWithProxies(count: number, istiods = 3): Promise<TestCluster> {
  const cluster = await startTestCluster()
  const {mesh, store} = cluster
  store.delete('/pods', 'istio-system', 'istiod-7d4b9c6f8-x2k9p')
  mesh.istiods.clear()
  const names = Array.from({length: istiods}, (_, i) => `istiod-5f7c9b8d4-${'abcdefghij'[i]}x${i}q9`)
  for (const name of names) mesh.addIstiod({name})
  store.create('/namespaces', 'Namespace', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'fleet'}})
  for (let i = 0; i < count; i++) {
    mesh.connect({id: `vm-${String(i).padStart(5, '0')}.fleet`, istiod: names[i % names.length]!, types: i % 50 === 0 ? {EDS: 'stale'} : undefined})
    store.create('networking.istio.io/workloadentries', 'WorkloadEntry', {
      apiVersion: 'networking.istio.io/v1', kind: 'WorkloadEntry',
      metadata: {name: `vm-${String(i).padStart(5, '0')}`, namespace: 'fleet', labels: {app: 'fleet'}, annotations: {'istio.io/autoRegistrationGroup': 'fleet', 'istio.io/connectedAt': '2026-11-20T10:00:00Z', 'istio.io/workloadController': names[i % names.length]!}},
      spec: {address: `10.${(i >> 16) & 255}.${(i >> 8) & 255}.${i & 255}`, labels: {app: 'fleet'}, serviceAccount: 'default'},
    })
  }
  return cluster
}

/** The 4 objects of `meshvm onboard web -n apps -p http=8080 -s web-vm --create-namespace --create-service-account`, for kubectl. */
export function onboardObjectsFile(yaml: string): string {
  const dir = mkdtempSync(join(tmpdir(), 'meshvm-bench-'))
  const file = join(dir, 'objects.yaml')
  writeFileSync(file, yaml)
  return file
}
