/**
 * Conformance: the real kubectl (/usr/bin/kubectl) against the test API server. If kubectl can
 * discover, get, apply (client- and server-side), describe and delete through it, the server
 * speaks enough real Kubernetes for meshvm's integration tests to mean something.
 */
import {mkdtempSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {kubectl, startCluster, type TestCluster} from '../helpers/cluster.js'

let cluster: TestCluster
let dir: string

const WORKLOAD_GROUP = `apiVersion: networking.istio.io/v1
kind: WorkloadGroup
metadata:
  name: ratings
  namespace: default
spec:
  metadata:
    labels:
      app: ratings
  template:
    serviceAccount: default
    ports:
      http: 8080
`

const WAR = `apiVersion: runtime.onboarding.tetrate.io/v1alpha1
kind: WorkloadAutoRegistration
metadata:
  name: ratings-aws-aws-123456789012-us-east-2b-ec2-i-0123456789abcdef0
  namespace: default
spec:
  identity:
    aws: {partition: aws, account: '123456789012', region: us-east-2, zone: us-east-2b, ec2: {instance_id: i-0123456789abcdef0}}
  registration:
    agent: {version: '1.4.0'}
    sidecar: {istio: {version: '1.24.2'}}
    host: {addresses: [{ip: 10.0.0.1, type: VPC}]}
`

const SECRET = `apiVersion: v1
kind: Secret
metadata:
  name: creds
  namespace: default
stringData:
  user: alice
`

function file(name: string, text: string): string {
  const path = join(dir, name)
  writeFileSync(path, text)
  return path
}

beforeAll(async () => {
  cluster = await startCluster()
  dir = mkdtempSync(join(tmpdir(), 'meshvm-kubectl-'))
})
afterAll(() => cluster?.stop())

describe('kubectl against the test API server', () => {
  it('discovers the Istio and WAR resources', async () => {
    const res = await kubectl(cluster, ['api-resources', '--api-group=runtime.onboarding.tetrate.io'])
    expect(res.stderr).toBe('')
    expect(res.stdout).toMatch(/^workloadautoregistrations\s+war\s+runtime.onboarding.tetrate.io\/v1alpha1\s+true\s+WorkloadAutoRegistration$/m)
  })

  it('applies, gets, describes and deletes a WorkloadGroup (client-side apply, server-side validation)', async () => {
    const path = file('wg.yaml', WORKLOAD_GROUP)
    expect((await kubectl(cluster, ['apply', '-f', path])).stdout.trim()).toBe('workloadgroup.networking.istio.io/ratings created')
    expect((await kubectl(cluster, ['apply', '-f', path])).stdout.trim()).toBe('workloadgroup.networking.istio.io/ratings unchanged')
    const yaml = await kubectl(cluster, ['get', 'wg', 'ratings', '-o', 'yaml'])
    expect(yaml.stdout).toMatch(/^  uid: [0-9a-f-]{36}$/m)
    expect(yaml.stdout).toContain('      http: 8080')
    const table = await kubectl(cluster, ['get', 'workloadgroups'])
    expect(table.stdout).toMatch(/^NAME\s+AGE\nratings\s+\d+s\n$/)
    const described = await kubectl(cluster, ['describe', 'wg', 'ratings'])
    expect(described.stdout).toMatch(/^Name:\s+ratings$/m)
    expect(described.stdout).toMatch(/^Kind:\s+WorkloadGroup$/m)
    expect(described.stdout).toMatch(/^Events:\s+<none>$/m)
    expect((await kubectl(cluster, ['delete', 'wg', 'ratings'])).stdout.trim()).toBe('workloadgroup.networking.istio.io "ratings" deleted')
    expect((await kubectl(cluster, ['get', 'wg', 'ratings'])).stderr.trim()).toBe('Error from server (NotFound): workloadgroups.networking.istio.io "ratings" not found')
  })

  it('reports schema errors the way kube-apiserver does', async () => {
    const unknown = file('unknown.yaml', WORKLOAD_GROUP.replace('  template:', '  bogus: 1\n  template:'))
    const strict = await kubectl(cluster, ['apply', '-f', unknown])
    expect(strict.code).not.toBe(0)
    expect(strict.stderr).toContain('strict decoding error: unknown field "spec.bogus"')
    const invalid = file('invalid.yaml', WORKLOAD_GROUP.replace('http: 8080', 'http: 70000'))
    const res = await kubectl(cluster, ['apply', '-f', invalid])
    expect(res.stderr).toContain('The WorkloadGroup "ratings" is invalid: spec.template.ports.http: Invalid value')
  })

  it('server-side applies a WAR and shows the AGENT CONNECTED column with get war -A', async () => {
    const path = file('war.yaml', WAR)
    const applied = await kubectl(cluster, ['apply', '--server-side', '-f', path])
    expect(applied.stdout.trim()).toBe('workloadautoregistration.runtime.onboarding.tetrate.io/ratings-aws-aws-123456789012-us-east-2b-ec2-i-0123456789abcdef0 serverside-applied')
    const war = cluster.store.get('runtime.onboarding.tetrate.io/workloadautoregistrations', 'default', 'ratings-aws-aws-123456789012-us-east-2b-ec2-i-0123456789abcdef0')!
    cluster.store.update('runtime.onboarding.tetrate.io/workloadautoregistrations', {...war, status: {conditions: [{type: 'AgentConnected', status: 'True', reason: 'AgentEstablishedConnection'}]}})
    const table = await kubectl(cluster, ['get', 'war', '-A'])
    expect(table.stdout).toMatch(/^NAMESPACE\s+NAME\s+AGENT CONNECTED\s+AGE\ndefault\s+ratings-aws-aws-123456789012-us-east-2b-ec2-i-0123456789abcdef0\s+True\s+\d+s\n$/)
    const described = await kubectl(cluster, ['describe', 'war'])
    expect(described.stdout).toMatch(/Agent Connected|Type:\s+AgentConnected/)
    expect((await kubectl(cluster, ['delete', '-f', path])).code).toBe(0)
  })

  it('applies, describes and deletes a Secret without printing its data', async () => {
    const path = file('secret.yaml', SECRET)
    expect((await kubectl(cluster, ['apply', '-f', path])).stdout.trim()).toBe('secret/creds created')
    const described = await kubectl(cluster, ['describe', 'secret', 'creds'])
    expect(described.stdout).toMatch(/^user:\s+5 bytes$/m)
    expect(described.stdout).not.toContain('alice')
    const yaml = await kubectl(cluster, ['get', 'secret', 'creds', '-o', 'jsonpath={.data.user}'])
    expect(Buffer.from(yaml.stdout, 'base64').toString()).toBe('alice')
    expect((await kubectl(cluster, ['delete', 'secret', 'creds'])).stdout.trim()).toBe('secret "creds" deleted')
  })

  // kubectl sends typed requests such as `auth can-i`'s SelfSubjectAccessReview as protobuf, which
  // this server does not decode; meshvm only speaks JSON, so the forbidden path is what matters.
  it('denies what a user is not granted, with the kube-apiserver message', async () => {
    const token = cluster.addUser('viewer', {rules: [{verbs: ['get', 'list'], apiGroups: ['networking.istio.io'], resources: ['workloadgroups']}]})
    const kubeconfig = cluster.kubeconfigFor(token)
    const env = {KUBECONFIG: kubeconfig}
    expect((await kubectl(cluster, ['get', 'workloadgroups'], {env})).code).toBe(0)
    const forbidden = await kubectl(cluster, ['get', 'secrets'], {env})
    expect(forbidden.stderr.trim()).toBe('Error from server (Forbidden): secrets is forbidden: User "viewer" cannot list resource "secrets" in API group "" in the namespace "default"')
  })
})
