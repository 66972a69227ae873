/**
 * Integration: `meshvm onboard --apply`, `--dry-run=server`, `--diff`, partial failure and re-runs,
 * and `meshvm bundle` / `onboard --bundle`, against the test API server over real HTTPS.
 */
import {mkdtempSync, readFileSync, readdirSync, statSync, writeFileSync, existsSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {rmSync} from 'node:fs'
import {afterAll, afterEach, beforeEach, describe, expect, it} from 'vitest'
import {parse, parseAllDocuments} from 'yaml'
import {REPO_ROOT, STACK_TRACE} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {kubectl, startCluster, type TestCluster} from '../helpers/cluster.js'

let cluster: TestCluster
const tmp = () => mkdtempSync(join(tmpdir(), 'meshvm-onboard-'))
const meshvm = (args: string[], env: Record<string, string> = {}) => runCommand(args, {env: {...cluster.env, ...env}})
const WG = 'networking.istio.io/workloadgroups'

beforeEach(async () => {
  cluster = await startCluster()
  cluster.mesh.watchNamespace('apps')
})
afterEach(() => cluster?.stop())

describe('onboard --apply', () => {
  const args = ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-s', 'web-vm', '--create-service-account', '--apply']

  it('applies in dependency order with field manager meshvm, and a re-run changes nothing', async () => {
    const first = await meshvm(args)
    expect(first.stderr).toBe('')
    expect(first.stdout).toBe('serviceaccount/web-vm created\nworkloadgroup.networking.istio.io/web created\nservice/web created\n')
    expect(first.code).toBe(0)
    const wg = cluster.store.get(WG, 'apps', 'web')!
    expect((wg.metadata.managedFields as {manager: string; operation: string}[]).map((m) => `${m.manager}/${m.operation}`)).toEqual(['meshvm/Apply'])
    expect(wg.spec).toMatchObject({template: {serviceAccount: 'web-vm', ports: {http: 8080}}})
    const rv = cluster.store.resourceVersion
    const again = await meshvm(args)
    expect(again.stdout).toBe('serviceaccount/web-vm unchanged\nworkloadgroup.networking.istio.io/web unchanged\nservice/web unchanged\n')
    expect(cluster.store.resourceVersion).toBe(rv)
    // What was applied is what kubectl sees.
    const got = await kubectl(cluster, ['get', 'wg,svc', '-n', 'apps', '-o', 'name'])
    expect(got.stdout).toBe('workloadgroup.networking.istio.io/web\nservice/web\n')
  })

  it('a namespace that does not exist: the error suggests --create-namespace (issue 27)', async () => {
    const res = await meshvm(['onboard', 'web', '-n', 'nosuch', '-p', 'http=8080', '--apply'])
    expect(res.code).toBe(4)
    expect(res.stdout).toBe('')
    expect(res.stderr).toBe(
      [
        'workloadgroup.networking.istio.io/web failed: namespaces "nosuch" not found',
        'service/web not applied',
        'Error: 0 of 2 objects applied; failed: workloadgroup.networking.istio.io/web; not applied: service/web',
        'Hint: namespace "nosuch" does not exist: add --create-namespace to create it too (or kubectl create namespace nosuch)',
        '',
      ].join('\n'),
    )
    // With --create-namespace, a server dry run cannot check objects in the namespace it does not create.
    const dry = await meshvm(['onboard', 'web', '-n', 'nosuch', '-p', 'http=8080', '--create-namespace', '--dry-run=server'])
    expect(dry.stderr).toContain('Hint: namespace "nosuch" does not exist yet: a dry run (--dry-run=server, --diff) does not create it, so the objects in it cannot be checked; apply with --apply\n')
    expect(cluster.store.get('/namespaces', '', 'nosuch')).toBeUndefined()
  })

  it('--dry-run=server asks the API server and changes nothing', async () => {
    const res = await meshvm([...args.filter((a) => a !== '--apply'), '--apply', '--dry-run=server'])
    expect(res.code).toBe(0)
    expect(res.stdout).toBe('serviceaccount/web-vm created (server dry run)\nworkloadgroup.networking.istio.io/web created (server dry run)\nservice/web created (server dry run)\n')
    expect(cluster.store.get(WG, 'apps', 'web')).toBeUndefined()
    expect(cluster.requests.some((r) => r.method === 'PATCH' && r.query.includes('dryRun=All'))).toBe(true)
  })

  it('--diff prints a unified diff of each live object against the result', async () => {
    await meshvm(args)
    const res = await meshvm(['onboard', 'web', '-n', 'apps', '-p', 'http=9090', '-s', 'web-vm', '--apply', '--diff', '--dry-run=server'])
    // As kubectl diff: exit 1 when there are differences.
    expect(res.code, res.stderr).toBe(1)
    expect(res.stdout).toContain('--- live/workloadgroup.networking.istio.io/web\n+++ applied/workloadgroup.networking.istio.io/web\n')
    expect(res.stdout).toContain('-      http: 8080\n+      http: 9090\n')
    expect(cluster.store.get(WG, 'apps', 'web')!.spec).toMatchObject({template: {ports: {http: 8080}}})
  })

  it('reports what was applied, what failed (with the API server reason) and what was not applied; exit 7', async () => {
    const token = cluster.addUser('half', {
      rules: [
        {verbs: ['get', 'list', 'patch', 'create'], apiGroups: [''], resources: ['serviceaccounts', 'namespaces']},
        {verbs: ['get', 'list', 'patch', 'create'], apiGroups: ['networking.istio.io'], resources: ['workloadgroups']},
        {verbs: ['get', 'list'], apiGroups: [''], resources: ['services']},
      ],
    })
    const res = await meshvm(args, {KUBECONFIG: cluster.kubeconfigFor(token)})
    expect(res.code).toBe(7)
    expect(res.stdout).toBe('serviceaccount/web-vm created\nworkloadgroup.networking.istio.io/web created\n')
    expect(res.stderr).toContain('service/web failed: services "web" is forbidden: User "half" cannot patch resource "services" in API group "" in the namespace "apps"')
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(cluster.store.get(WG, 'apps', 'web')).toBeDefined()
    expect(cluster.store.get('/services', 'apps', 'web')).toBeUndefined()
  })

  it('reports the API server causes of an invalid object and applies nothing after it', async () => {
    cluster.faults.add({
      method: 'PATCH',
      path: '/apis/networking.istio.io/v1/namespaces/apps/workloadgroups/web',
      status: 422,
      message: 'WorkloadGroup.networking.istio.io "web" is invalid: spec.template.ports.http: Invalid value: 0: port must be between 1-65535',
    })
    const res = await meshvm(args)
    expect(res.code).toBe(7)
    expect(res.stdout).toBe('serviceaccount/web-vm created\n')
    expect(res.stderr).toContain('workloadgroup.networking.istio.io/web failed: WorkloadGroup.networking.istio.io "web" is invalid: spec.template.ports.http')
    expect(res.stderr).toContain('service/web not applied')
  })

  it('applies a WorkloadGroup read with -f', async () => {
    const dir = tmp()
    const file = join(dir, 'wg.yaml')
    writeFileSync(
      file,
      'apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata:\n  name: db\n  namespace: apps\nspec:\n  metadata:\n    labels:\n      app: db\n  template:\n    serviceAccount: default\n    ports:\n      tcp: 5432\n',
    )
    const res = await meshvm(['onboard', '-f', file, '--apply'])
    expect(res.stderr).toBe('')
    expect(res.stdout).toContain('workloadgroup.networking.istio.io/db created\n')
    expect(cluster.store.get(WG, 'apps', 'db')!.spec).toMatchObject({template: {ports: {tcp: 5432}}})
  })

  it('writes manifests the API server accepts with strict validation (kubectl apply --dry-run=server -k)', async () => {
    const dir = tmp()
    const out = join(dir, 'web')
    const gen = await meshvm(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--probe-http', '8080/ready', '-d', out, '--no-prompt'])
    expect(gen.code).toBe(0)
    const res = await kubectl(cluster, ['apply', '--dry-run=server', '-k', out])
    expect(res.stderr).toBe('')
    expect(res.stdout).toContain('workloadgroup.networking.istio.io/web created (server dry run)')
  })
})

describe('bundle against a cluster', () => {
  const TESTDATA = join(REPO_ROOT, 'test/fixtures/istioctl/workload/testdata')
  const read = (...p: string[]) => readFileSync(join(TESTDATA, ...p), 'utf8')

  function istioctlSetup(dir: string, gatewayIp: string): void {
    cluster.mesh.installIstio({revision: 'rev-1', meshConfig: read(dir, 'meshconfig.yaml'), clusterId: 'Kubernetes', gatewayIp})
    cluster.store.create('/namespaces', 'Namespace', {metadata: {name: 'bar'}})
    // istioctl's golden root-cert.pem is the text "fake-CA-cert", which meshvm refuses (only PEM
    // certificates are written to the VM): the test mesh root instead, written byte for byte.
    cluster.store.create('/configmaps', 'ConfigMap', {apiVersion: 'v1', kind: 'ConfigMap', metadata: {name: 'istio-ca-root-cert', namespace: 'bar'}, data: {'root-cert.pem': cluster.ca.rootPem}})
    cluster.store.create('/serviceaccounts', 'ServiceAccount', {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: 'vm-serviceaccount', namespace: 'bar'}})
  }

  for (const [name, gateway, internal] of [
    ['ipv4', '10.10.10.11', '10.10.10.10'],
    ['ipv6', 'fd00:10:96::2', 'fd00:10:96::1'],
  ] as const) {
    it(`reproduces istioctl's vmconfig/${name} golden files from live cluster state (revision rev-1)`, async () => {
      const dir = `vmconfig/${name}`
      istioctlSetup(dir, gateway)
      const out = join(tmp(), 'vm')
      const res = await meshvm(['bundle', '-f', join(TESTDATA, dir, 'workloadgroup.yaml'), '-r', 'rev-1', '--internal-ip', internal, '-d', out])
      expect(res.stderr).not.toMatch(/Error/)
      expect(res.code).toBe(0)
      for (const file of ['mesh.yaml', 'cluster.env', 'hosts']) expect(readFileSync(join(out, file), 'utf8'), file).toBe(read(dir, `${file}.golden`))
      expect(readFileSync(join(out, 'root-cert.pem'), 'utf8')).toBe(cluster.ca.rootPem)
      const token = readFileSync(join(out, 'istio-token'), 'utf8')
      const claims = JSON.parse(Buffer.from(token.split('.')[1]!, 'base64url').toString())
      expect(claims).toMatchObject({aud: ['istio-ca'], sub: 'system:serviceaccount:bar:vm-serviceaccount'})
      expect(statSync(join(out, 'istio-token')).mode & 0o777).toBe(0o600)
      expect(res.stdout + res.stderr).not.toContain(token)
    })
  }

  it('onboard --apply --bundle writes the bundle for the group it just applied', async () => {
    const out = join(tmp(), 'web-vm')
    const res = await meshvm(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--apply', '--bundle', out])
    expect(res.code).toBe(0)
    expect(readdirSync(out).sort()).toEqual(['cluster.env', 'hosts', 'install.sh', 'istio-token', 'mesh.yaml', 'root-cert.pem'])
    expect(readFileSync(join(out, 'hosts'), 'utf8')).toBe('203.0.113.10 istiod.istio-system.svc\n')
    expect(readFileSync(join(out, 'cluster.env'), 'utf8')).toContain("ISTIO_META_CLUSTER_ID='cluster1'\n")
  })

  it('supports a gateway that has only a load-balancer host name', async () => {
    const svc = cluster.store.get('/services', 'istio-system', 'istio-eastwestgateway')!
    cluster.store.update('/services', {...svc, status: {loadBalancer: {ingress: [{hostname: 'abc123.elb.us-east-2.amazonaws.com'}]}}})
    await meshvm(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--apply'])
    const out = join(tmp(), 'vm')
    const res = await meshvm(['bundle', 'web', '-n', 'apps', '-d', out])
    expect(res.code).toBe(0)
    expect(readFileSync(join(out, 'hosts'), 'utf8')).toContain('abc123.elb.us-east-2.amazonaws.com')
    expect(readFileSync(join(out, 'install.sh'), 'utf8')).toContain('abc123.elb.us-east-2.amazonaws.com')
  })

  it('names the missing mesh ConfigMap, with a revision hint, and writes nothing', async () => {
    await meshvm(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--apply'])
    cluster.store.delete('/configmaps', 'istio-system', 'istio')
    const out = join(tmp(), 'vm')
    const res = await meshvm(['bundle', 'web', '-n', 'apps', '-d', out])
    expect(res.code).toBe(4)
    expect(res.stderr).toContain('Error: ConfigMap istio-system/istio (the mesh config) not found')
    expect(res.stderr).toContain('Hint: if the control plane is revisioned, pass --revision')
    expect(existsSync(out)).toBe(false)
  })

  it('reports a forbidden TokenRequest with the missing permission, and writes nothing', async () => {
    await meshvm(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--apply'])
    const token = cluster.addUser('reader', {rules: [{verbs: ['get', 'list'], apiGroups: ['*'], resources: ['*']}]})
    const out = join(tmp(), 'vm')
    const res = await meshvm(['bundle', 'web', '-n', 'apps', '-d', out], {KUBECONFIG: cluster.kubeconfigFor(token)})
    expect(res.code).toBe(5)
    expect(res.stderr).toContain('cannot create resource "serviceaccounts/token" in API group "" in the namespace "apps"')
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(existsSync(out)).toBe(false)
  })

  it('without any gateway address fails with a hint; --no-hosts proceeds', async () => {
    await meshvm(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--apply'])
    cluster.store.delete('/services', 'istio-system', 'istio-eastwestgateway')
    const out = join(tmp(), 'vm')
    const res = await meshvm(['bundle', 'web', '-n', 'apps', '-d', out])
    expect(res.code).toBe(4)
    expect(res.stderr).toContain('Error: the east-west gateway Service istio-system/istio-eastwestgateway not found')
    expect(res.stderr).toContain('--no-hosts')
    const ok = await meshvm(['bundle', 'web', '-n', 'apps', '-d', out, '--no-hosts'])
    expect(ok.code).toBe(0)
    // As istioctl's no-gateway golden: an empty hosts file (the VM resolves istiod itself).
    expect(readFileSync(join(out, 'hosts'), 'utf8')).toBe('')
  })
})

describe('onboard conventions against a cluster (issue 18)', () => {
  const work = mkdtempSync(join(tmpdir(), 'meshvm-onboard-conv-'))
  afterAll(() => rmSync(work, {recursive: true, force: true}))
  const args = ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-s', 'web-vm', '--create-service-account']

  it('--diff exits 0 without differences, 1 with; --diff --apply prints the diff and what was applied', async () => {
    await meshvm([...args, '--apply'])
    const same = await meshvm([...args, '--diff'])
    expect(same.code, same.stderr).toBe(0)
    expect(same.stdout).toBe('')
    const changed = await meshvm(['onboard', 'web', '-n', 'apps', '-p', 'http=9090', '-s', 'web-vm', '--create-service-account', '--diff'])
    expect(changed.code, changed.stderr).toBe(1)
    expect(cluster.store.get(WG, 'apps', 'web')!.spec).toMatchObject({template: {ports: {http: 8080}}})
    const both = await meshvm(['onboard', 'web', '-n', 'apps', '-p', 'http=9090', '-s', 'web-vm', '--create-service-account', '--diff', '--apply'])
    expect(both.code, both.stderr).toBe(0)
    expect(both.stdout).toContain('-      http: 8080\n+      http: 9090\n')
    expect(both.stdout).toContain('workloadgroup.networking.istio.io/web configured\n')
    expect(cluster.store.get(WG, 'apps', 'web')!.spec).toMatchObject({template: {ports: {http: 9090}}})
  })

  it('-o with --apply prints the applied objects in that format; a bare --dry-run (client) applies nothing', async () => {
    const named = await meshvm([...args, '--apply', '-o', 'name'])
    expect(named.code, named.stderr).toBe(0)
    expect(named.stdout).toBe('serviceaccount/web-vm\nworkloadgroup.networking.istio.io/web\nservice/web\n')
    const path = await meshvm([...args, '--apply', '-o', 'jsonpath={.items[*].kind}'])
    expect(path.stdout).toBe('ServiceAccount WorkloadGroup Service')
    const patches = cluster.requests.filter((r) => r.method === 'PATCH').length
    const client = await meshvm(['onboard', 'db', '-n', 'apps', '-p', 'tcp=5432', '--apply', '--dry-run'])
    expect(client.code, client.stderr).toBe(0)
    expect(parseAllDocuments(client.stdout).map((d) => (d.toJS() as {kind: string}).kind)).toEqual(['WorkloadGroup', 'Service'])
    expect(cluster.requests.filter((r) => r.method === 'PATCH').length).toBe(patches)
    expect(cluster.store.get(WG, 'apps', 'db')).toBeUndefined()
  })

  it('--bundle DIR without --apply prints the manifests, warns that the group is not in the cluster, and reports whole file names', async () => {
    const res = await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--bundle', './web-vm'], {env: cluster.env, cwd: work})
    expect(res.code, res.stderr).toBe(0)
    expect(parseAllDocuments(res.stdout).map((d) => (d.toJS() as {kind: string}).kind)).toEqual(['WorkloadGroup', 'Service'])
    expect(res.stderr).toContain('Warning: WorkloadGroup apps/web is not in the cluster: the VM cannot join until it is applied')
    expect(res.stderr).toContain('Wrote the VM bundle to ./web-vm: mesh.yaml, cluster.env, root-cert.pem, istio-token, hosts, install.sh\n')
    expect(readdirSync(join(work, 'web-vm')).sort()).toEqual(['cluster.env', 'hosts', 'install.sh', 'istio-token', 'mesh.yaml', 'root-cert.pem'])
  })

  it('-f of a live object (kubectl get wg -o yaml) drops what the server and meshvm set', async () => {
    await meshvm([...args, '--apply'])
    const wg = cluster.store.get(WG, 'apps', 'web')!
    cluster.store.update(WG, {...wg, metadata: {...wg.metadata, annotations: {'rollout.meshvm.io/awaiting': '["x"]', keep: 'me'}}})
    const live = await kubectl(cluster, ['get', 'wg', 'web', '-n', 'apps', '-o', 'yaml', '--show-managed-fields'])
    const file = join(work, 'live.yaml')
    writeFileSync(file, live.stdout)
    expect(parse(live.stdout)).toMatchObject({metadata: {uid: expect.any(String), resourceVersion: expect.any(String), managedFields: expect.any(Array)}})
    const res = await meshvm(['onboard', '-f', file, '-o', 'json'])
    expect(res.code, res.stderr).toBe(0)
    const group = (JSON.parse(res.stdout) as {items: {kind: string; metadata: Record<string, unknown>; status?: unknown}[]}).items.find((o) => o.kind === 'WorkloadGroup')!
    for (const field of ['uid', 'resourceVersion', 'generation', 'managedFields', 'creationTimestamp']) expect(group.metadata, field).not.toHaveProperty(field)
    expect(group.metadata).toMatchObject({name: 'web', namespace: 'apps'})
    expect(group.metadata.annotations).toEqual({keep: 'me'})
    expect(group.status).toBeUndefined()
    const applied = await meshvm(['onboard', '-f', file, '--apply'])
    expect(applied.code, applied.stderr).toBe(0)
  })
})
