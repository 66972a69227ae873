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

/** A managedFields entry's FieldsV1 tree: each field it names holds another tree (`{}` at a leaf). */
interface FieldsV1 {
  [field: string]: FieldsV1
}

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
    expect(yaml.stdout).toMatch(/^ {2}uid: [0-9a-f-]{36}$/m)
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
    expect(res.stderr).toContain('The WorkloadGroup "ratings" is invalid: spec.template.ports[http]: Invalid value: 70000: port must be between 1-65535')
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

  it('denies what a user is not granted, with the kube-apiserver message', async () => {
    const token = cluster.addUser('viewer', {rules: [{verbs: ['get', 'list'], apiGroups: ['networking.istio.io'], resources: ['workloadgroups']}]})
    const kubeconfig = cluster.kubeconfigFor(token)
    const env = {KUBECONFIG: kubeconfig}
    expect((await kubectl(cluster, ['get', 'workloadgroups'], {env})).code).toBe(0)
    const forbidden = await kubectl(cluster, ['get', 'secrets'], {env})
    expect(forbidden.stderr.trim()).toBe('Error from server (Forbidden): secrets is forbidden: User "viewer" cannot list resource "secrets" in API group "" in the namespace "default"')
  })

  // kubectl sends these typed requests as protobuf (Content-Type application/vnd.kubernetes.protobuf,
  // Accept protobuf or JSON): the server decodes their bodies and answers JSON.
  it('creates tokens, service accounts, config maps, secrets and namespaces with kubectl create', async () => {
    expect((await kubectl(cluster, ['create', 'namespace', 'made'])).stdout.trim()).toBe('namespace/made created')
    expect((await kubectl(cluster, ['create', 'serviceaccount', 'robot', '-n', 'made'])).stdout.trim()).toBe('serviceaccount/robot created')
    expect((await kubectl(cluster, ['create', 'configmap', 'settings', '-n', 'made', '--from-literal=mode=fast'])).stdout.trim()).toBe('configmap/settings created')
    expect((await kubectl(cluster, ['create', 'secret', 'generic', 'creds', '-n', 'made', '--from-literal=user=bob'])).stdout.trim()).toBe('secret/creds created')
    expect(cluster.store.get('/configmaps', 'made', 'settings')?.data).toEqual({mode: 'fast'})
    expect(cluster.store.get('/secrets', 'made', 'creds')?.data).toEqual({user: Buffer.from('bob').toString('base64')})
    const token = await kubectl(cluster, ['create', 'token', 'robot', '-n', 'made', '--audience=vault', '--duration=20m'])
    expect(token.stderr).toBe('')
    const claims = JSON.parse(Buffer.from(token.stdout.trim().split('.')[1]!, 'base64url').toString()) as {sub: string; aud: string[]; exp: number; iat: number}
    expect(claims).toMatchObject({sub: 'system:serviceaccount:made:robot', aud: ['vault']})
    expect(claims.exp - claims.iat).toBe(1200)
  })

  it('answers kubectl auth can-i, can-i --list and whoami for a restricted user', async () => {
    const token = cluster.addUser('auditor', {groups: ['auditors'], rules: [{verbs: ['get', 'list'], apiGroups: [''], resources: ['configmaps']}]})
    const env = {KUBECONFIG: cluster.kubeconfigFor(token)}
    expect((await kubectl(cluster, ['auth', 'can-i', 'list', 'configmaps'], {env})).stdout.trim()).toBe('yes')
    const no = await kubectl(cluster, ['auth', 'can-i', 'delete', 'configmaps'], {env})
    expect([no.code, no.stdout.trim()]).toEqual([1, 'no'])
    const list = await kubectl(cluster, ['auth', 'can-i', '--list'], {env})
    expect(list.stdout).toMatch(/^configmaps\s+\[\]\s+\[\]\s+\[get list\]$/m)
    expect(list.stdout).toMatch(/^selfsubjectaccessreviews\.authorization\.k8s\.io\s+\[\]\s+\[\]\s+\[create\]$/m)
    const whoami = await kubectl(cluster, ['auth', 'whoami'], {env})
    expect(whoami.stdout).toMatch(/^Username\s+auditor$/m)
    expect(whoami.stdout).toMatch(/^Groups\s+\[auditors system:authenticated\]$/m)
  })

  it("warns about unknown fields with fieldValidation=Warn (kube-apiserver's default) and prunes them", async () => {
    const path = file('warn.yaml', WORKLOAD_GROUP.replace('name: ratings', 'name: warned').replace('  template:', '  bogus: 1\n  template:'))
    const res = await kubectl(cluster, ['create', '--validate=warn', '-f', path])
    expect(res.stdout.trim()).toBe('workloadgroup.networking.istio.io/warned created')
    expect(res.stderr.trim()).toBe('Warning: unknown field "spec.bogus"')
    // Fails as well when the object or its spec is missing.
    expect(cluster.store.get('networking.istio.io/workloadgroups', 'default', 'warned')?.spec).not.toHaveProperty('bogus')
  })

  it('refuses kubectl replace of a custom resource without resourceVersion, as kube-apiserver does', async () => {
    // `kubectl replace -f` fills in the live resourceVersion itself; `--raw` sends the PUT as it is.
    const path = file(
      'replace.json',
      JSON.stringify({apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name: 'replaced', namespace: 'default'}, spec: {template: {serviceAccount: 'default'}}}),
    )
    expect((await kubectl(cluster, ['create', '-f', path])).code).toBe(0)
    const res = await kubectl(cluster, ['replace', '--raw', '/apis/networking.istio.io/v1/namespaces/default/workloadgroups/replaced', '-f', path])
    expect(res.stderr.trim()).toBe('The workloadgroups "replaced" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update')
  })

  it('deletes a namespace: Terminating, new content refused, gone once empty', async () => {
    expect((await kubectl(cluster, ['create', 'namespace', 'short-lived'])).code).toBe(0)
    const held = file('held.yaml', WORKLOAD_GROUP.replace('name: ratings', 'name: held\n  finalizers: [example.com/keep]').replace('namespace: default', 'namespace: short-lived'))
    expect((await kubectl(cluster, ['create', '-f', held])).code).toBe(0)
    expect((await kubectl(cluster, ['delete', 'namespace', 'short-lived', '--wait=false'])).stdout.trim()).toBe('namespace "short-lived" deleted')
    expect((await kubectl(cluster, ['get', 'namespace', 'short-lived'])).stdout).toMatch(/^short-lived\s+Terminating\s+\d+s$/m)
    const refused = await kubectl(cluster, ['create', 'configmap', 'late', '-n', 'short-lived'])
    expect(refused.stderr.trim()).toBe('error: failed to create configmap: configmaps "late" is forbidden: unable to create new content in namespace short-lived because it is being terminated')
    expect((await kubectl(cluster, ['patch', 'wg', 'held', '-n', 'short-lived', '--type=merge', '-p', '{"metadata":{"finalizers":null}}'])).code).toBe(0)
    await expect
      .poll(async () => (await kubectl(cluster, ['get', 'namespace', 'short-lived'])).stderr.trim(), {timeout: 10_000})
      .toBe('Error from server (NotFound): namespaces "short-lived" not found')
  })

  it("keeps a foreground deletion's object with its foregroundDeletion finalizer while dependents remain", async () => {
    const path = file('fg.yaml', WORKLOAD_GROUP.replace('name: ratings', 'name: fg\n  finalizers: [example.com/keep]'))
    expect((await kubectl(cluster, ['create', '-f', path])).code).toBe(0)
    expect((await kubectl(cluster, ['delete', 'wg', 'fg', '--cascade=foreground', '--wait=false'])).stdout.trim()).toBe('workloadgroup.networking.istio.io "fg" deleted')
    const live = await kubectl(cluster, ['get', 'wg', 'fg', '-o', 'jsonpath={.metadata.finalizers} {.metadata.deletionTimestamp}'])
    expect(live.stdout).toMatch(/^\["example.com\/keep"(,"foregroundDeletion")?\] \d{4}-\d\d-\d\dT/)
  })

  const service = (name: string, ports: number[]) => `apiVersion: v1
kind: Service
metadata:
  name: ${name}
  namespace: default
spec:
  selector:
    app: ${name}
  ports:
${ports.map((p) => `  - name: p${p}\n    port: ${p}`).join('\n')}
`
  const ports = async (name: string) => (await kubectl(cluster, ['get', 'svc', name, '-o', 'jsonpath={.spec.ports[*].port}'])).stdout

  it('server-side apply merges Service ports by port and protocol: a port no longer applied disappears', async () => {
    expect((await kubectl(cluster, ['apply', '--server-side', '-f', file('ssa-svc.yaml', service('ssa-svc', [80, 443]))])).stdout.trim()).toBe('service/ssa-svc serverside-applied')
    const managed = JSON.parse((await kubectl(cluster, ['get', 'svc', 'ssa-svc', '-o', 'jsonpath={.metadata.managedFields}', '--show-managed-fields'])).stdout) as {
      manager: string
      operation: string
      fieldsV1: FieldsV1
    }[]
    expect(managed.map((m) => `${m.manager}/${m.operation}`)).toEqual(['kubectl/Apply'])
    expect(managed[0]!.fieldsV1['f:spec']?.['f:ports']?.['k:{"port":443,"protocol":"TCP"}']).toEqual({'.': {}, 'f:name': {}, 'f:port': {}})
    expect((await kubectl(cluster, ['apply', '--server-side', '-f', file('ssa-svc.yaml', service('ssa-svc', [80]))])).code).toBe(0)
    expect(await ports('ssa-svc')).toBe('80')
  })

  it('migrates client-side-applied fields to server-side apply (kubectl csaupgrade reads the FieldsV1 tree)', async () => {
    expect((await kubectl(cluster, ['apply', '-f', file('csa-svc.yaml', service('csa-svc', [80, 443]))])).stdout.trim()).toBe('service/csa-svc created')
    const ssa = await kubectl(cluster, ['apply', '--server-side', '-f', file('csa-svc.yaml', service('csa-svc', [80]))])
    expect(ssa.stderr).toBe('')
    expect(await ports('csa-svc')).toBe('80')
    const managers = (await kubectl(cluster, ['get', 'svc', 'csa-svc', '-o', 'jsonpath={range .metadata.managedFields[*]}{.manager}/{.operation} {end}', '--show-managed-fields'])).stdout.trim()
    // kubectl moved the client-side manager's fields to its own Apply entry; the annotation it keeps
    // up to date has its own manager, as on a real cluster.
    expect(managers.split(' ').sort()).toEqual(['kubectl-last-applied/Apply', 'kubectl/Apply'])
  })

  it('reports a server-side apply conflict with another manager as kube-apiserver does', async () => {
    const cm = (value: string) => `apiVersion: v1\nkind: ConfigMap\nmetadata:\n  name: owned\n  namespace: default\ndata:\n  mode: ${value}\n`
    expect((await kubectl(cluster, ['apply', '--server-side', '--field-manager=helm', '-f', file('owned.yaml', cm('fast'))])).code).toBe(0)
    const res = await kubectl(cluster, ['apply', '--server-side', '-f', file('owned.yaml', cm('slow'))])
    expect(res.code).not.toBe(0)
    expect(res.stderr).toContain('Apply failed with 1 conflict: conflict with "helm": .data.mode')
    expect((await kubectl(cluster, ['apply', '--server-side', '--force-conflicts', '-f', file('owned.yaml', cm('slow'))])).code).toBe(0)
    expect(cluster.store.get('/configmaps', 'default', 'owned')?.data).toEqual({mode: 'slow'})
  })

  it('client-side apply: strategic merge by the built-in patch keys (Service ports by port), atomic lists replaced (RBAC subjects)', async () => {
    expect((await kubectl(cluster, ['apply', '-f', file('smp-svc.yaml', service('smp-svc', [80, 443]))])).code).toBe(0)
    expect((await kubectl(cluster, ['apply', '-f', file('smp-svc.yaml', service('smp-svc', [80]))])).stdout.trim()).toBe('service/smp-svc configured')
    expect(await ports('smp-svc')).toBe('80')
    const binding = (users: string[]) => `apiVersion: rbac.authorization.k8s.io/v1
kind: ClusterRoleBinding
metadata:
  name: readers
roleRef: {apiGroup: rbac.authorization.k8s.io, kind: ClusterRole, name: view}
subjects:
${users.map((u) => `- {apiGroup: rbac.authorization.k8s.io, kind: User, name: ${u}}`).join('\n')}
`
    expect((await kubectl(cluster, ['apply', '-f', file('crb.yaml', binding(['alice', 'bob']))])).code).toBe(0)
    expect((await kubectl(cluster, ['apply', '-f', file('crb.yaml', binding(['carol']))])).code).toBe(0)
    const subjects = (await kubectl(cluster, ['get', 'clusterrolebinding', 'readers', '-o', 'jsonpath={.subjects[*].name}'])).stdout
    expect(subjects).toBe('carol')
  })
})
