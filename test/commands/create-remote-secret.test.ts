/**
 * Integration: `meshvm create-remote-secret` against the test API server over real HTTPS: istioctl's
 * output byte for byte (the §5.4 reference YAML in test/golden/remote-secret/, with this cluster's
 * UID, token, CA and server put back to the reference's values), ServiceAccount creation, the token
 * controller wait and time-out, Kubernetes < 1.24, --secret-name, --output-file, --apply-to between
 * two API servers, --verify, the terminal confirmation, and a scan of every stderr for the tokens.
 */
import {mkdtempSync, readFileSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {spawn} from '@lydell/node-pty'
import {afterAll, afterEach, beforeEach, describe, expect, it} from 'vitest'
import {parse as parseYaml} from 'yaml'
import {BIN, REPO_ROOT, STACK_TRACE, type CliResult} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {recordSecret} from '../helpers/secrets.js'
import {waitUntil} from '../helpers/spawn.js'
import {stripAnsi} from '../../src/lib/errors.js'
import {normalizeBooleanArgs} from '../../src/commands/create-remote-secret.js'

const GOLDEN = join(REPO_ROOT, 'test', 'golden', 'remote-secret')
const golden = (file: string) => readFileSync(join(GOLDEN, file), 'utf8')

// The values istioctl's TestCreateRemoteSecrets uses (and the golden files hold).
const REF = {uid: '54643f96-eca0-11e9-bb97-42010a80000a', token: 'fake-token-abc123', ca: 'Y2FEYXRh', server: 'server'}

const SECRETS = '/secrets'
const SAS = '/serviceaccounts'
const NAMESPACES = '/namespaces'
const CLUSTER_ROLES = 'rbac.authorization.k8s.io/clusterroles'
const CLUSTER_ROLE_BINDINGS = 'rbac.authorization.k8s.io/clusterrolebindings'
const READER = 'istio-reader-service-account'
const TOKEN_SECRET = `${READER}-istio-remote-secret-token`
const SA_TOKEN_TYPE = 'kubernetes.io/service-account-token'
const LOCALHOST_WARNING = /^Warning: the API server in the kubeconfig is https:\/\/127\.0\.0\.1:\d+, which istiod in another cluster cannot reach; pass --server with an address reachable from there/m

/** Every run of this file, for the final stderr scan; every token seen, likewise. */
const runs: {args: string[]; result: CliResult}[] = []
const tokensSeen = new Set<string>()

async function meshvm(cluster: TestCluster, args: string[], options: {env?: Record<string, string>; timeoutMs?: number} = {}): Promise<CliResult> {
  const result = await runCommand(['create-remote-secret', ...args], {env: {...cluster.env, ...options.env}, stdoutMayHoldSecrets: true, timeoutMs: options.timeoutMs ?? 30_000})
  runs.push({args, result})
  for (const t of tokensIn(cluster)) tokensSeen.add(t)
  return result
}

/** Tokens held in the cluster's Secrets (decoded). */
function tokensIn(cluster: TestCluster): string[] {
  return cluster.store
    .list(SECRETS)
    .map((s) => (s.data as Record<string, string> | undefined)?.token)
    .filter((t): t is string => typeof t === 'string' && t !== '')
    .map((t) => Buffer.from(t, 'base64').toString('utf8'))
}

function tokenOf(cluster: TestCluster, namespace: string, name: string): string {
  const data = cluster.store.get(SECRETS, namespace, name)?.data as Record<string, string> | undefined
  expect(data?.token, `Secret ${namespace}/${name} has a token`).toBeTruthy()
  return Buffer.from(data!.token!, 'base64').toString('utf8')
}

function kubeSystemUid(cluster: TestCluster): string {
  return cluster.store.get(NAMESPACES, undefined, 'kube-system')!.metadata.uid!
}

/** Puts the reference's values in place of this cluster's, so the output can be compared with §5.4. */
function toReference(yaml: string, cluster: TestCluster, token: string | undefined, extra: [string, string][] = []): string {
  let out = yaml
  if (token) out = out.split(token).join(REF.token)
  out = out.split(Buffer.from(cluster.caPem).toString('base64')).join(REF.ca)
  out = out.split(`server: ${cluster.url}\n`).join(`server: ${REF.server}\n`)
  out = out.split(kubeSystemUid(cluster)).join(REF.uid)
  for (const [from, to] of extra) out = out.split(from).join(to)
  return out
}

function addNamespace(cluster: TestCluster, name: string): void {
  if (cluster.store.get(NAMESPACES, undefined, name)) return
  cluster.store.create(NAMESPACES, 'Namespace', {apiVersion: 'v1', kind: 'Namespace', metadata: {name}, status: {phase: 'Active'}})
}

function addServiceAccount(cluster: TestCluster, namespace: string, name: string): void {
  addNamespace(cluster, namespace)
  cluster.store.create(SAS, 'ServiceAccount', {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name, namespace}})
}

function addSecret(cluster: TestCluster, namespace: string, name: string, type: string, serviceAccount?: string): void {
  cluster.store.create(SECRETS, 'Secret', {
    apiVersion: 'v1',
    kind: 'Secret',
    type,
    metadata: {name, namespace, ...(serviceAccount ? {annotations: {'kubernetes.io/service-account.name': serviceAccount}} : {})},
  })
}

const firstLine = (text: string) => text.split('\n')[0]
const errorLine = (stderr: string) => stderr.split('\n').find((l) => l.startsWith('Error:'))
const tmp = () => mkdtempSync(join(tmpdir(), 'meshvm-rs-'))

/** The kubeconfig inside a printed Secret. */
function kubeconfigIn(yaml: string): {clusters: {cluster: {server: string; 'certificate-authority-data'?: string}}[]; users: {user: {token?: string}}[]} {
  const secret = parseYaml(yaml.replace(/---\n$/, '')) as {stringData: Record<string, string>}
  return parseYaml(Object.values(secret.stringData)[0]!)
}

describe('create-remote-secret: istioctl output (Kubernetes 1.32)', () => {
  let cluster: TestCluster
  beforeEach(async () => {
    cluster = await startCluster()
  })
  afterEach(() => cluster?.stop())

  it('bearer token, cluster named after the kube-system UID: the §5.4 YAML; creates the reader SA, RBAC and token Secret', async () => {
    addNamespace(cluster, 'istio-system-test')
    const res = await meshvm(cluster, ['-n', 'istio-system-test'])
    expect(res.code, res.stderr).toBe(0)
    const token = tokenOf(cluster, 'istio-system-test', TOKEN_SECRET)
    expect(token.split('.')).toHaveLength(3) // the JWT the token controller issued
    expect(toReference(res.stdout, cluster, token)).toBe(golden('bearer-token.yaml'))

    const clusterRole = 'istio-reader-clusterrole-istio-system-test'
    expect(res.stderr.split('\n')).toEqual([
      expect.stringMatching(LOCALHOST_WARNING),
      `ServiceAccount istio-system-test/${READER} not found: creating it and ClusterRole/ClusterRoleBinding ${clusterRole} (server-side apply, field manager meshvm)`,
      `serviceaccount/${READER} created`,
      `clusterrole.rbac.authorization.k8s.io/${clusterRole} created`,
      `clusterrolebinding.rbac.authorization.k8s.io/${clusterRole} created`,
      `Creating token Secret istio-system-test/${TOKEN_SECRET} for ServiceAccount ${READER}`,
      `Waiting up to 30s for the token controller to fill "token" and "ca.crt" in Secret istio-system-test/${TOKEN_SECRET}...`,
      '',
    ])

    // Only the SA and the reader ClusterRole/Binding, by server-side apply (field manager meshvm).
    const managers = (o: {metadata: {managedFields?: unknown}}) => (o.metadata.managedFields as {manager: string; operation: string}[]).map((m) => `${m.manager}/${m.operation}`)
    const sa = cluster.store.get(SAS, 'istio-system-test', READER)!
    expect(managers(sa)).toEqual(['meshvm/Apply'])
    const role = cluster.store.get(CLUSTER_ROLES, undefined, clusterRole)!
    expect(managers(role)).toEqual(['meshvm/Apply'])
    expect(role.rules).toContainEqual({
      apiGroups: [''],
      resources: ['endpoints', 'pods', 'services', 'nodes', 'replicationcontrollers', 'namespaces', 'secrets', 'configmaps'],
      verbs: ['get', 'list', 'watch'],
    })
    const binding = cluster.store.get(CLUSTER_ROLE_BINDINGS, undefined, clusterRole)!
    expect(binding.roleRef).toEqual({apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name: clusterRole})
    expect(binding.subjects).toEqual([{kind: 'ServiceAccount', name: READER, namespace: 'istio-system-test'}])
    expect(
      cluster.store
        .list(CLUSTER_ROLES)
        .map((r) => r.metadata.name)
        .filter((n) => n.startsWith('istio')),
    ).toEqual([clusterRole])
    const tokenSecret = cluster.store.get(SECRETS, 'istio-system-test', TOKEN_SECRET)!
    expect(tokenSecret.type).toBe(SA_TOKEN_TYPE)
    expect(tokenSecret.metadata.annotations).toMatchObject({'kubernetes.io/service-account.name': READER})

    // A second run finds everything and prints the same Secret.
    const again = await meshvm(cluster, ['-n', 'istio-system-test'])
    expect(again.code).toBe(0)
    expect(again.stdout).toBe(res.stdout)
    expect(again.stderr).toMatch(LOCALHOST_WARNING)
    expect(again.stderr.split('\n').filter(Boolean)).toHaveLength(1)
  })

  it("--type config: istio-kubeconfig with key config, for istiod's ServiceAccount", async () => {
    addServiceAccount(cluster, 'istio-system-test', 'istiod')
    const res = await meshvm(cluster, ['--type', 'config', '--name', 'primary', '-n', 'istio-system-test'])
    expect(res.code, res.stderr).toBe(0)
    const token = tokenOf(cluster, 'istio-system-test', 'istiod-istio-remote-secret-token')
    expect(toReference(res.stdout, cluster, token)).toBe(golden('config-type.yaml'))
    expect(cluster.store.list(CLUSTER_ROLES).filter((r) => r.metadata.name.startsWith('istio-reader'))).toEqual([])
  })

  it('--server and --tls-server-name; --server suppresses the localhost warning', async () => {
    addNamespace(cluster, 'istio-system-test')
    // istioctl's test passes `--server gateway`; meshvm wants a URL (issue 27), the rest is the same bytes.
    const res = await meshvm(cluster, ['--name', 'primary', '-n', 'istio-system-test', '--server', 'https://gateway', '--tls-server-name', 'server'])
    expect(res.code, res.stderr).toBe(0)
    const token = tokenOf(cluster, 'istio-system-test', TOKEN_SECRET)
    expect(toReference(res.stdout, cluster, token).replace('server: https://gateway\n', 'server: gateway\n')).toBe(golden('tls-server-name.yaml'))
    expect(res.stderr).not.toMatch(/Warning/)

    const remote = await meshvm(cluster, ['--name', 'primary', '--server', 'https://remote.example:6443'])
    expect(remote.code).toBe(0)
    expect(remote.stderr).not.toMatch(/Warning/)
    expect(kubeconfigIn(remote.stdout).clusters[0]!.cluster.server).toBe('https://remote.example:6443')
  })

  it('--auth-type plugin (oidc): --auth-plugin-config is honoured; no token in the output', async () => {
    const res = await meshvm(cluster, [
      '--name',
      'cluster-west',
      '--server',
      'https://api.west.example.com:6443',
      '--auth-type',
      'plugin',
      '--auth-plugin-name',
      'oidc',
      '--auth-plugin-config',
      'idp-issuer-url=https://issuer.example.com',
      '--auth-plugin-config',
      'client-id=mesh-reader',
      '--auth-plugin-config',
      'scopes=openid,groups',
    ])
    expect(res.code, res.stderr).toBe(0)
    expect(toReference(res.stdout, cluster, undefined)).toBe(golden('plugin-oidc.yaml'))
    for (const t of tokensIn(cluster)) expect(res.stdout).not.toContain(t)
    expect(res.stderr).not.toMatch(/Warning/)
  })

  it('warns about an auth provider istiod rejects by default', async () => {
    const res = await meshvm(cluster, ['--name', 'c1', '--server', 'https://10.0.0.1:6443', '--auth-type', 'plugin', '--auth-plugin-name', 'gcp'])
    expect(res.code, res.stderr).toBe(0)
    expect(res.stderr).toContain('Warning: istiod rejects auth provider "gcp" by default ("auth provider gcp is not allowed")')
    expect(res.stdout).toContain('        auth-provider:\n          config: {}\n          name: gcp\n')
  })

  it('reuses a token Secret that references the ServiceAccount, and creates nothing', async () => {
    addServiceAccount(cluster, 'istio-system', READER)
    addSecret(cluster, 'istio-system', 'reader-token-x1', SA_TOKEN_TYPE, READER)
    addSecret(cluster, 'istio-system', 'unrelated', 'Opaque')
    // The token controller fills it after its delay.
    await waitUntil(() => Boolean((cluster.store.get(SECRETS, 'istio-system', 'reader-token-x1')?.data as Record<string, string> | undefined)?.token), 'the token controller to fill reader-token-x1')
    const res = await meshvm(cluster, ['--name', 'c1'])
    expect(res.code, res.stderr).toBe(0)
    expect(kubeconfigIn(res.stdout).users[0]!.user.token).toBe(tokenOf(cluster, 'istio-system', 'reader-token-x1'))
    expect(cluster.store.get(SECRETS, 'istio-system', TOKEN_SECRET)).toBeUndefined()
    expect(res.stderr).not.toMatch(/Creating|Waiting|created/)
  })

  it('--create-service-account=false (istioctl spelling) with a missing ServiceAccount: exit 4, nothing created', async () => {
    for (const flag of ['--create-service-account=false', '--no-create-service-account']) {
      const res = await meshvm(cluster, ['--name', 'c1', flag])
      expect(res.code).toBe(4)
      expect(errorLine(res.stderr)).toBe(`Error: ServiceAccount istio-system/${READER} not found, and --create-service-account=false`)
      expect(res.stderr).toContain('Hint: install a minimal Istio profile on the cluster first (it creates the ServiceAccount), or run without --create-service-account=false')
      expect(res.stderr).not.toMatch(STACK_TRACE)
      expect(res.stdout).toBe('')
    }
    expect(cluster.store.get(SAS, 'istio-system', READER)).toBeUndefined()
  })

  it('a missing ServiceAccount other than the reader is not created; a missing namespace is named', async () => {
    const other = await meshvm(cluster, ['--name', 'c1', '--service-account', 'my-reader'])
    expect(other.code).toBe(4)
    expect(other.stderr).toContain(`Error: ServiceAccount istio-system/my-reader not found; meshvm creates only ${READER} with its reader RBAC\n`)
    const config = await meshvm(cluster, ['--name', 'c1', '--type', 'config'])
    expect(config.code).toBe(4)
    expect(config.stderr).toContain("Hint: --type config uses istiod's own ServiceAccount: install istiod in this cluster first, or pass --service-account")
    const noNs = await meshvm(cluster, ['--name', 'c1', '-n', 'nowhere'])
    expect(noNs.code).toBe(4)
    expect(noNs.stderr).toContain(`Error: namespace "nowhere" does not exist, so ServiceAccount nowhere/${READER} cannot be used or created\n`)
    expect(
      cluster.store
        .list(SAS)
        .map((s) => s.metadata.name)
        .filter((n) => n !== 'default'),
    ).toEqual([])
  })

  describe('--secret-name', () => {
    beforeEach(() => addServiceAccount(cluster, 'istio-system', READER))

    it('a Secret that is not a token Secret of the ServiceAccount is refused (exit 2)', async () => {
      addSecret(cluster, 'istio-system', 'plain', 'Opaque')
      const res = await meshvm(cluster, ['--name', 'c1', '--secret-name', 'plain'])
      expect(res.code).toBe(2)
      expect(errorLine(res.stderr)).toBe(`Error: --secret-name "plain": Secret istio-system/plain does not reference ServiceAccount ${READER}: its type is "Opaque", not ${SA_TOKEN_TYPE}`)
      expect(res.stdout).toBe('')
    })

    it('a token Secret of another ServiceAccount is refused, with a hint to use that ServiceAccount', async () => {
      addServiceAccount(cluster, 'istio-system', 'other')
      addSecret(cluster, 'istio-system', 'other-token', SA_TOKEN_TYPE, 'other')
      const res = await meshvm(cluster, ['--name', 'c1', '--secret-name', 'other-token'])
      expect(res.code).toBe(2)
      expect(res.stderr).toContain(`Error: --secret-name "other-token": Secret istio-system/other-token does not reference ServiceAccount ${READER}: it belongs to ServiceAccount "other"\n`)
      expect(res.stderr).toContain('Hint: or keep the Secret and pass --service-account other\n')
      expect(res.stderr).not.toMatch(STACK_TRACE)
    })

    it('a missing Secret is exit 4; a matching one is used', async () => {
      const missing = await meshvm(cluster, ['--name', 'c1', '--secret-name', 'nope'])
      expect(missing.code).toBe(4)
      expect(missing.stderr).toContain('Error: --secret-name "nope": Secret istio-system/nope not found\n')
      addSecret(cluster, 'istio-system', 'pick-me', SA_TOKEN_TYPE, READER)
      addSecret(cluster, 'istio-system', 'not-me', SA_TOKEN_TYPE, READER)
      const res = await meshvm(cluster, ['--name', 'c1', '--secret-name', 'pick-me'])
      expect(res.code, res.stderr).toBe(0)
      expect(kubeconfigIn(res.stdout).users[0]!.user.token).toBe(tokenOf(cluster, 'istio-system', 'pick-me'))
    })
  })
})

describe('create-remote-secret: the token controller', () => {
  let cluster: TestCluster | undefined
  afterEach(() => cluster?.stop())

  it('waits for a slow token controller, with progress on stderr', async () => {
    cluster = await startCluster({tokenControllerDelayMs: 2500})
    const res = await meshvm(cluster, ['--name', 'c1'])
    expect(res.code, res.stderr).toBe(0)
    expect(res.stderr).toContain(`Waiting up to 30s for the token controller to fill "token" and "ca.crt" in Secret istio-system/${TOKEN_SECRET}...\n`)
    expect(kubeconfigIn(res.stdout).users[0]!.user.token).toBe(tokenOf(cluster, 'istio-system', TOKEN_SECRET))
  })

  it('gives up after --token-timeout with exit 9 and a hint; the Secret is kept for the next run', async () => {
    cluster = await startCluster({tokenControllerDelayMs: false})
    const res = await meshvm(cluster, ['--name', 'c1', '--token-timeout', '1s'])
    expect(res.code).toBe(9)
    expect(res.stdout).toBe('')
    const lines = res.stderr.split('\n')
    const error = lines.findIndex((l) => l.startsWith('Error:'))
    expect(lines.slice(error)).toEqual([
      `Error: timed out after 1s waiting for the token controller to fill Secret istio-system/${TOKEN_SECRET}: no "token" and "ca.crt" data yet`,
      `Hint: the token controller (kube-controller-manager) fills Secrets of type ${SA_TOKEN_TYPE}; check the Secret with: kubectl describe secret ${TOKEN_SECRET} -n istio-system`,
      'Hint: raise --token-timeout (e.g. --token-timeout 2m); the Secret is kept and reused by the next run',
      '',
    ])
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(cluster.store.get(SECRETS, 'istio-system', TOKEN_SECRET)).toBeDefined()
  })

  it('auth plugins need only ca.crt', async () => {
    cluster = await startCluster({tokenControllerDelayMs: false})
    addServiceAccount(cluster, 'istio-system', READER)
    cluster.store.create(SECRETS, 'Secret', {
      apiVersion: 'v1',
      kind: 'Secret',
      type: SA_TOKEN_TYPE,
      metadata: {name: 'ca-only', namespace: 'istio-system', annotations: {'kubernetes.io/service-account.name': READER}},
      data: {'ca.crt': Buffer.from(cluster.caPem).toString('base64')},
    })
    const res = await meshvm(cluster, ['--name', 'c1', '--server', 'https://10.0.0.1', '--auth-type', 'plugin', '--auth-plugin-name', 'oidc', '--token-timeout', '1s'])
    expect(res.code, res.stderr).toBe(0)
    expect(kubeconfigIn(res.stdout).clusters[0]!.cluster['certificate-authority-data']).toBe(Buffer.from(cluster.caPem).toString('base64'))
  })

  it('Kubernetes 1.23: uses the Secret listed by the ServiceAccount, creates no token Secret', async () => {
    cluster = await startCluster({gitVersion: 'v1.23.17'})
    const res = await meshvm(cluster, ['--name', 'legacy'])
    expect(res.code, res.stderr).toBe(0)
    const sa = cluster.store.get(SAS, 'istio-system', READER)!
    const listed = (sa.secrets as {name: string}[]).map((s) => s.name)
    expect(listed).toHaveLength(1)
    expect(listed[0]).toMatch(new RegExp(`^${READER}-token-`))
    expect(kubeconfigIn(res.stdout).users[0]!.user.token).toBe(tokenOf(cluster, 'istio-system', listed[0]!))
    expect(cluster.store.get(SECRETS, 'istio-system', TOKEN_SECRET)).toBeUndefined()
    expect(res.stderr).not.toContain('Creating token Secret')

    // Next to another Secret (OpenShift lists a dockercfg one too), the token Secret is picked.
    addSecret(cluster, 'istio-system', 'reader-dockercfg', 'kubernetes.io/dockercfg')
    cluster.store.update(SAS, {...sa, secrets: [{name: 'reader-dockercfg'}, ...(sa.secrets as {name: string}[])]})
    const two = await meshvm(cluster, ['--name', 'legacy'])
    expect(two.code, two.stderr).toBe(0)
    expect(two.stdout).toBe(res.stdout)

    // --secret-name must be one the ServiceAccount lists.
    const wrong = await meshvm(cluster, ['--name', 'legacy', '--secret-name', 'elsewhere'])
    expect(wrong.code).toBe(2)
    expect(wrong.stderr).toContain(`Error: --secret-name "elsewhere": not one of the Secrets of ServiceAccount istio-system/${READER} (it lists: reader-dockercfg, ${listed[0]})\n`)
  })
})

describe('create-remote-secret: --output-file, --verify', () => {
  let cluster: TestCluster
  beforeEach(async () => {
    cluster = await startCluster()
  })
  afterEach(() => cluster?.stop())

  it('--output-file writes the Secret with mode 0600 and prints nothing on stdout', async () => {
    const dir = tmp()
    const file = join(dir, 'remote-secret.yaml')
    writeFileSync(file, 'old contents', {mode: 0o644})
    const res = await meshvm(cluster, ['--name', 'c1', '--output-file', file])
    expect(res.code, res.stderr).toBe(0)
    expect(res.stdout).toBe('')
    expect(statSync(file).mode & 0o777).toBe(0o600)
    const token = tokenOf(cluster, 'istio-system', TOKEN_SECRET)
    const written = readFileSync(file, 'utf8')
    expect(kubeconfigIn(written).users[0]!.user.token).toBe(token)
    expect(written.startsWith('# This file is autogenerated, do not edit.\napiVersion: v1\nkind: Secret\n')).toBe(true)
    expect(res.stderr).toContain(`Wrote Secret istio-remote-secret-c1 for cluster c1 to ${file} (mode 0600)\n`)

    const asDir = await meshvm(cluster, ['--name', 'c1', '--output-file', dir])
    expect(asDir.code).toBe(2)
    expect(firstLine(asDir.stderr)).toBe(`Error: --output-file ${JSON.stringify(dir)}: must be a file path (the Secret is written there with mode 0600)`)
  })

  it('--verify passes with the reader ServiceAccount meshvm created', async () => {
    const res = await meshvm(cluster, ['--name', 'c1', '--verify'])
    expect(res.code, res.stderr).toBe(0)
    expect(res.stderr).toContain(`Verifying the generated kubeconfig against ${cluster.url}...\n`)
    expect(res.stderr).toMatch(
      new RegExp(`Verified: reached ${cluster.url.replace(/\./g, '\\.')} \\(Kubernetes v1\\.32\\.0\\) with the generated kubeconfig; \\d+ permissions istiod needs checked, all allowed\n`),
    )
    expect(res.stdout).toContain('kind: Secret\n')
    // The checks ran as the ServiceAccount, with its token.
    const ssars = cluster.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/selfsubjectaccessreviews'))
    expect(ssars.length).toBeGreaterThan(10)
  })

  it('--verify fails (exit 8) for a ServiceAccount without read permissions; nothing is printed', async () => {
    addServiceAccount(cluster, 'istio-system', 'bare')
    const res = await meshvm(cluster, ['--name', 'c1', '--service-account', 'bare', '--verify'])
    expect(res.code).toBe(8)
    expect(res.stdout).toBe('')
    expect(errorLine(res.stderr)).toMatch(
      /^Error: --verify: ServiceAccount istio-system\/bare lacks 28 permission\(s\) istiod needs: get pods, list pods, watch pods, get services, .*, create tokenreviews\.authentication\.k8s\.io$/,
    )
    expect(res.stderr).toContain(
      'Hint: bind it to the reader ClusterRole: kubectl create clusterrolebinding bare-istio-reader --clusterrole istio-reader-clusterrole-istio-system --serviceaccount istio-system:bare\n',
    )
    expect(res.stderr).toContain('Hint: nothing was printed, written or applied\n')
  })

  it('--verify fails (exit 8) when the server in the kubeconfig cannot be reached', async () => {
    const res = await meshvm(cluster, ['--name', 'c1', '--server', 'https://127.0.0.1:1', '--verify'])
    expect(res.code).toBe(8)
    expect(res.stdout).toBe('')
    expect(res.stderr).toContain('Error: --verify: the generated kubeconfig does not work: cannot connect to the API server at https://127.0.0.1:1 (context "c1"): connection refused\n')
    expect(res.stderr).toContain('Warning: --server https://127.0.0.1:1 is a loopback address')
  })
})

describe('create-remote-secret --apply-to: between two API servers', () => {
  let c1: TestCluster
  let c2: TestCluster
  let kubeconfig: string
  beforeEach(async () => {
    c1 = await startCluster({contextName: 'c1'})
    c2 = await startCluster({contextName: 'c2'})
    kubeconfig = join(c1.dir, 'merged-kubeconfig')
    const entry = (c: TestCluster, name: string) => ({
      cluster: [`- name: ${name}`, '  cluster:', `    server: ${c.url}`, `    certificate-authority-data: ${Buffer.from(c.caPem).toString('base64')}`],
      user: [`- name: ${name}`, '  user:', `    token: ${c.token}`],
      context: [`- name: ${name}`, '  context:', `    cluster: ${name}`, `    user: ${name}`],
    })
    const e1 = entry(c1, 'c1')
    const e2 = entry(c2, 'c2')
    writeFileSync(
      kubeconfig,
      ['apiVersion: v1', 'kind: Config', 'clusters:', ...e1.cluster, ...e2.cluster, 'users:', ...e1.user, ...e2.user, 'contexts:', ...e1.context, ...e2.context, 'current-context: c1', ''].join('\n'),
      {mode: 0o600},
    )
  })
  afterEach(async () => {
    await c1?.stop()
    await c2?.stop()
  })

  it("applies cluster 1's Secret into cluster 2's istio-system, by server-side apply; a re-run is unchanged", async () => {
    const args = ['--kubeconfig', kubeconfig, '--context', 'c1', '--name', 'cluster1', '--apply-to', 'c2']
    const res = await meshvm(c1, args)
    expect(res.code, res.stderr).toBe(0)
    expect(res.stdout).toBe('secret/istio-remote-secret-cluster1 created (context c2, namespace istio-system)\n')
    const secret = c2.store.get(SECRETS, 'istio-system', 'istio-remote-secret-cluster1')!
    expect(secret.metadata.labels).toEqual({'istio/multiCluster': 'true'})
    expect(secret.metadata.annotations).toEqual({'networking.istio.io/cluster': 'cluster1'})
    expect((secret.metadata.managedFields as {manager: string}[]).map((m) => m.manager)).toEqual(['meshvm'])
    const kc = parseYaml(Buffer.from((secret.data as Record<string, string>).cluster1!, 'base64').toString('utf8')) as ReturnType<typeof kubeconfigIn>
    expect(kc.users[0]!.user.token).toBe(tokenOf(c1, 'istio-system', TOKEN_SECRET))
    expect(kc.clusters[0]!.cluster.server).toBe(c1.url)
    // The reader identity lives in cluster 1; nothing else changed in cluster 2.
    expect(c1.store.get(SECRETS, 'istio-system', 'istio-remote-secret-cluster1')).toBeUndefined()
    expect(c2.store.get(SAS, 'istio-system', READER)).toBeUndefined()

    const again = await meshvm(c1, args)
    expect(again.code).toBe(0)
    expect(again.stdout).toBe('secret/istio-remote-secret-cluster1 unchanged (context c2, namespace istio-system)\n')
  })

  it('a missing Istio namespace in the target cluster is exit 4 with a hint', async () => {
    // -n: the reader in cluster 1's istio-system; -i: where istiod of cluster 2 would be.
    const res2 = await meshvm(c1, ['--kubeconfig', kubeconfig, '--context', 'c1', '--name', 'cluster1', '--apply-to', 'c2', '-n', 'istio-system', '-i', 'istio-elsewhere'])
    expect(res2.code).toBe(4)
    expect(res2.stderr).toContain('Error: --apply-to c2: cannot apply Secret istio-elsewhere/istio-remote-secret-cluster1: namespaces "istio-elsewhere" not found\n')
    expect(res2.stderr).toContain('Hint: istiod in context c2 runs in another namespace? pass -i; or install Istio there first\n')
    expect(res2.stdout).toBe('')
  })

  it('an unknown --apply-to context fails before anything is created', async () => {
    const res = await meshvm(c1, ['--kubeconfig', kubeconfig, '--name', 'cluster1', '--apply-to', 'c3'])
    expect(res.code).toBe(4)
    expect(firstLine(res.stderr)).toBe(`Error: context "c3" not found in ${kubeconfig}`)
    expect(c1.store.get(SAS, 'istio-system', READER)).toBeUndefined()
  })
})

describe('create-remote-secret: bad input (exit 2, one line, nothing sent)', () => {
  let cluster: TestCluster
  beforeEach(async () => {
    cluster = await startCluster()
  })
  afterEach(() => cluster?.stop())

  it.each([
    [['--name', 'Bad_Name'], `Error: --name "Bad_Name": must be a DNS-1123 label: lower case letters, digits and '-', starting and ending with a letter or digit (e.g. 'my-name')`],
    [['--type', 'primary'], 'Error: --type "primary": must be one of remote, config (remote: a secret for a remote cluster; config: istio-kubeconfig for an external control plane)'],
    [['--auth-type', 'token'], 'Error: --auth-type "token": must be one of bearer-token, plugin'],
    [['--auth-type', 'plugin'], 'Error: --auth-plugin-name: required with --auth-type=plugin (e.g. --auth-plugin-name oidc)'],
    [['--token-timeout', 'soon'], 'Error: --token-timeout "soon": expected a duration such as 10s, 1m or 500ms (0 allowed), at most 596h (24.8 days)'],
    [['--auth-type', 'plugin', '--auth-plugin-name', 'oidc', '--verify'], 'Error: --verify: only works with --auth-type=bearer-token: meshvm cannot run the auth plugin istiod will use'],
    [['--server', 'ftp://x'], `Error: --server "ftp://x": must be the API server's URL, reachable from the other cluster: https://HOST[:PORT]`],
    [['--server', 'notaurl'], `Error: --server "notaurl": must be the API server's URL, reachable from the other cluster: https://HOST[:PORT]`],
    // oclif reads a word after a command without arguments as a sub-command.
    [['extra-arg'], 'Error: Unexpected argument: extra-arg'],
  ])('%j', async (args, line) => {
    const before = cluster.requests.length
    const res = await meshvm(cluster, args)
    expect(res.code).toBe(2)
    expect(firstLine(res.stderr)).toBe(line)
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(res.stdout).toBe('')
    expect(cluster.requests.length).toBe(before)
  })

  it('normalizes istioctl-style booleans', () => {
    expect(normalizeBooleanArgs(['--create-service-account=false', '--verify=true', '--yes=False', '--name=x', '--', '--verify=false'])).toEqual([
      '--no-create-service-account',
      '--verify',
      '--no-yes',
      '--name=x',
      '--',
      '--verify=false',
    ])
  })
})

describe('create-remote-secret in a terminal', () => {
  let cluster: TestCluster
  beforeEach(async () => {
    cluster = await startCluster()
  })
  afterEach(() => cluster?.stop())

  function inTerminal(args: string[]): {screen: () => string; write: (s: string) => void; waitFor: (t: string) => Promise<void>; exit: Promise<number>} {
    let buffer = ''
    const pty = spawn(process.execPath, [BIN, 'create-remote-secret', ...args], {
      cols: 200,
      rows: 50,
      cwd: REPO_ROOT,
      env: {...process.env, ...cluster.env, NO_COLOR: '1', TERM: 'xterm'} as Record<string, string>,
    })
    pty.onData((d) => (buffer += d))
    const exit = new Promise<number>((resolve) => pty.onExit(({exitCode}) => resolve(exitCode)))
    const screen = () => stripAnsi(buffer).replace(/\r/g, '')
    return {
      screen,
      write: (s) => pty.write(s),
      exit,
      async waitFor(text) {
        const start = Date.now()
        while (!screen().includes(text)) {
          if (Date.now() - start > 15_000) throw new Error(`timed out waiting for ${JSON.stringify(text)}; screen:\n${screen()}`)
          await new Promise((r) => setTimeout(r, 20))
        }
      },
    }
  }

  it('asks before printing the Secret; "no" prints nothing and changes nothing', async () => {
    const t = inTerminal(['--name', 'c1'])
    await t.waitFor('Print it to the terminal?')
    t.write('n\r')
    expect(await t.exit).toBe(1)
    expect(t.screen()).toContain('Error: not printed: answered no')
    expect(t.screen()).not.toContain('kind: Secret')
    expect(cluster.store.get(SAS, 'istio-system', READER)).toBeUndefined()
  })

  it('"yes" prints it; --yes does not ask', async () => {
    const t = inTerminal(['--name', 'c1'])
    await t.waitFor('Print it to the terminal?')
    t.write('y\r')
    expect(await t.exit).toBe(0)
    expect(t.screen()).toContain('name: istio-remote-secret-c1\n')
    const y = inTerminal(['--name', 'c1', '--yes'])
    expect(await y.exit).toBe(0)
    expect(y.screen()).not.toContain('Print it to the terminal?')
    expect(y.screen()).toContain('name: istio-remote-secret-c1\n')
    for (const token of tokensIn(cluster)) tokensSeen.add(token)
  })
})

afterAll(() => {
  for (const t of tokensSeen) recordSecret(t)
})

describe('the token never reaches stderr', () => {
  it("no stderr of this file's runs holds a token any cluster issued", () => {
    expect(runs.length).toBeGreaterThan(20)
    expect(tokensSeen.size).toBeGreaterThan(5)
    const leaks = runs.filter((r) => [...tokensSeen].some((t) => r.result.stderr.includes(t)))
    expect(leaks.map((r) => r.args.join(' '))).toEqual([])
    // Nor does an error carry a kubeconfig or a CA.
    for (const r of runs) expect(r.result.stderr).not.toMatch(/certificate-authority-data|BEGIN CERTIFICATE|^\s*token: /m)
  })
})
