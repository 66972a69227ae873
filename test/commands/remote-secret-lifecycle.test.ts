/**
 * End to end on two test clusters (east and west, one kubeconfig with both contexts), each with a
 * simulated istiod that serves /debug/clusterz (test/cluster/clusterz.ts: it loads each remote
 * secret and lists from the remote API server with it): `remote-secret create` (alias of
 * create-remote-secret), `list` (legacy and bound tokens, expiry), `status` (the credentials
 * from here and istiod's view), `rotate` (istiod sees the new Secret, the old token is revoked),
 * and a rotation that fails half-way and leaves the old Secret working.
 */
import {execFile} from 'node:child_process'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {STACK_TRACE, type CliResult} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {kubectl, startCluster, type TestCluster} from '../helpers/cluster.js'
import {recordSecret} from '../helpers/secrets.js'
import {installClusterz} from '../cluster/clusterz.js'

let east: TestCluster
let west: TestCluster
let env: Record<string, string>

const SECRETS = '/secrets'
const NS = 'istio-system'
const REMOTE = 'istio-remote-secret-west'

function meshvm(args: string[]): Promise<CliResult> {
  return runCommand(args, {env, timeoutMs: 60_000})
}

function kubeconfigIn(cluster: TestCluster, name: string): string {
  const s = cluster.store.get(SECRETS, NS, name)
  const data = s?.data as Record<string, string> | undefined
  return Buffer.from(Object.values(data ?? {})[0] ?? '', 'base64').toString('utf8')
}

const tokenOfKubeconfig = (kc: string): string => /^\s+token: (\S+)$/m.exec(kc)?.[1] ?? ''

interface Item {
  context: string
  secret: string
  cluster: string
  tokenKind: string
  expiresAt?: string
  reachable?: boolean
  denied?: string[]
  istiods?: {istiod: string; syncStatus?: string}[]
  verdict?: string
}

/** A TokenRequest made by the Kubernetes Python client (a client nobody here wrote). */
function pythonTokenRequest(cluster: TestCluster, serviceAccount: string, seconds: number): Promise<string> {
  const script = [
    'import sys, kubernetes',
    'kubernetes.config.load_kube_config(config_file=sys.argv[1])',
    'api = kubernetes.client.CoreV1Api()',
    'body = kubernetes.client.AuthenticationV1TokenRequest(spec=kubernetes.client.V1TokenRequestSpec(audiences=[], expiration_seconds=int(sys.argv[4])))',
    'print(api.create_namespaced_service_account_token(sys.argv[3], sys.argv[2], body).status.token)',
  ].join('\n')
  return new Promise((resolve, reject) => {
    execFile('/usr/bin/python3', ['-c', script, cluster.kubeconfigPath, NS, serviceAccount, String(seconds)], {encoding: 'utf8', timeout: 30_000}, (err, stdout, stderr) => {
      if (err) reject(new Error(`python TokenRequest failed: ${stderr.split('\n').slice(-2).join(' ')}`))
      else resolve(stdout.trim())
    })
  })
}

/** A TokenReview made by the Python client: is the token still accepted? (prints True/False and the error) */
function pythonTokenReview(cluster: TestCluster, token: string): Promise<string> {
  const script = [
    'import sys, kubernetes',
    'kubernetes.config.load_kube_config(config_file=sys.argv[1])',
    'api = kubernetes.client.AuthenticationV1Api()',
    'st = api.create_token_review(kubernetes.client.V1TokenReview(spec=kubernetes.client.V1TokenReviewSpec(token=sys.stdin.read()))).status',
    'print(st.authenticated, st.error)',
  ].join('\n')
  return new Promise((resolve, reject) => {
    const child = execFile('/usr/bin/python3', ['-c', script, cluster.kubeconfigPath], {encoding: 'utf8', timeout: 30_000}, (err, stdout, stderr) => {
      if (err) reject(new Error(`python TokenReview failed: ${stderr.split('\n').slice(-2).join(' ')}`))
      else resolve(stdout.trim())
    })
    child.stdin?.end(token)
  })
}

beforeAll(async () => {
  east = await startCluster({contextName: 'east'})
  west = await startCluster({contextName: 'west'})
  installClusterz(east.mesh, east.store)
  installClusterz(west.mesh, west.store)
  env = {KUBECONFIG: `${east.kubeconfigPath}:${west.kubeconfigPath}`, KUBECACHEDIR: east.env.KUBECACHEDIR!}
  // istiod in east reads west (and west reads east), as the multi-cluster guide sets it up.
  const a = await meshvm(['remote-secret', 'create', '--context', 'west', '--name', 'west', '--apply-to', 'east'])
  expect(a.stderr).not.toMatch(STACK_TRACE)
  expect(a.code, a.stderr).toBe(0)
  expect(a.stdout).toBe(`secret/${REMOTE} created (context east, namespace ${NS})\n`)
  const b = await meshvm(['create-remote-secret', '--context', 'east', '--name', 'east', '--apply-to', 'west'])
  expect(b.code, b.stderr).toBe(0)
}, 60_000)

afterAll(async () => {
  await east?.stop()
  await west?.stop()
})

describe.sequential('remote-secret lifecycle on two clusters', () => {
  it('list: one row per cluster in each context, legacy and bound tokens with their expiry', async () => {
    // A bound (expiring) token, issued by kubectl itself, in a second remote secret in east.
    // (kubectl create token sends a protobuf body this test server does not read; the Python client sends JSON.)
    const token = await pythonTokenRequest(west, 'istio-reader-service-account', 3600)
    recordSecret(token)
    const kc = `apiVersion: v1\nkind: Config\nclusters:\n- name: w2\n  cluster:\n    server: ${west.url}\n    certificate-authority-data: ${Buffer.from(west.caPem).toString('base64')}\ncontexts:\n- name: w2\n  context:\n    cluster: w2\n    user: w2\ncurrent-context: w2\nusers:\n- name: w2\n  user:\n    token: ${token}\n`
    const secret = {apiVersion: 'v1', kind: 'Secret', metadata: {name: 'istio-remote-secret-w2', namespace: NS, labels: {'istio/multiCluster': 'true'}}, stringData: {w2: kc}}
    const applied = await kubectl(east, ['apply', '-f', '-'], {input: JSON.stringify(secret)})
    expect(applied.code, applied.stderr).toBe(0)

    const r = await meshvm(['remote-secret', 'list', '--context', 'east', '--context', 'west', '-o', 'json'])
    expect(r.code, r.stderr).toBe(0)
    const items = (JSON.parse(r.stdout) as {items: Item[]}).items
    expect(items.map((i) => [i.context, i.secret, i.cluster, i.tokenKind])).toEqual([
      ['east', 'istio-remote-secret-w2', 'w2', 'bound'],
      ['east', REMOTE, 'west', 'legacy'],
      ['west', 'istio-remote-secret-east', 'east', 'legacy'],
    ])
    const expiry = Date.parse(items[0]!.expiresAt!) - Date.now()
    expect(expiry).toBeGreaterThan(50 * 60_000)
    expect(expiry).toBeLessThanOrEqual(60 * 60_000)
    expect(items[1]!.expiresAt).toBeUndefined()
    expect(r.stdout).not.toContain(token)

    const table = await meshvm(['remote-secret', 'list', '--context', 'east'])
    expect(table.code, table.stderr).toBe(0)
    const lines = table.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^CONTEXT\s+SECRET\s+CLUSTER\s+SERVER\s+AUTH\s+TOKEN\s+AGE\s+EXPIRES$/)
    expect(lines[1]).toMatch(/^east\s+istio-remote-secret-w2\s+w2\s+https:\/\/127\.0\.0\.1:\d+\s+bearer-token\s+bound\s+\S+\s+in (59m|60m)$/)
    expect(lines[2]).toMatch(/^east\s+istio-remote-secret-west\s+west\s+https:\/\/127\.0\.0\.1:\d+\s+bearer-token\s+legacy\s+\S+\s+never$/)
    // The shared output flags: -o name, jsonpath, --no-headers, as on every listing command.
    const names = await meshvm(['remote-secret', 'list', '--context', 'east', '-o', 'name'])
    expect(names.code, names.stderr).toBe(0)
    expect(names.stdout).toBe('secret/istio-remote-secret-w2\nsecret/istio-remote-secret-west\n')
    const clusters = await meshvm(['remote-secret', 'list', '--context', 'east', '--context', 'west', '-o', 'jsonpath={.items[*].cluster}'])
    expect(clusters.stdout).toBe('w2 west east')
    const bare = await meshvm(['remote-secret', 'list', '--context', 'east', '--no-headers', '--sort-by', '.cluster'])
    expect(bare.stdout.split('\n')[0]).toMatch(/^east\s+istio-remote-secret-w2\s+w2\s/)
    const del = await kubectl(east, ['delete', 'secret', 'istio-remote-secret-w2', '-n', NS])
    expect(del.code, del.stderr).toBe(0)
  })

  it('status: the credentials work from here and istiod reports the cluster synced', async () => {
    const r = await meshvm(['remote-secret', 'status', '--context', 'east', '--context', 'west', '-o', 'json'])
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code, r.stderr).toBe(0)
    const items = (JSON.parse(r.stdout) as {items: Item[]}).items
    expect(items.map((i) => [i.context, i.cluster, i.reachable, i.denied, i.istiods?.map((x) => x.syncStatus), i.verdict])).toEqual([
      ['east', 'west', true, [], ['synced'], 'ok'],
      ['west', 'east', true, [], ['synced'], 'ok'],
    ])
  })

  it('rotate: a new token in place, istiod synced with it, the old token revoked', async () => {
    const oldKubeconfig = kubeconfigIn(east, REMOTE)
    const oldToken = tokenOfKubeconfig(oldKubeconfig)
    const rvBefore = east.store.get(SECRETS, NS, REMOTE)!.metadata.resourceVersion
    const r = await meshvm(['remote-secret', 'rotate', REMOTE, '--context', 'east', '--from', 'west'])
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toMatch(
      /^secret\/istio-remote-secret-west rotated \(context east, namespace istio-system\): cluster west, ServiceAccount istio-system\/istio-reader-service-account, token Secret istio-reader-service-account-istio-remote-secret-token-[0-9a-z]+; istiod synced: istiod-/,
    )
    expect(r.stdout).toContain('old token Secret istio-reader-service-account-istio-remote-secret-token deleted in context west')
    const newKubeconfig = kubeconfigIn(east, REMOTE)
    const newToken = tokenOfKubeconfig(newKubeconfig)
    expect(newToken).not.toBe('')
    expect(newToken).not.toBe(oldToken)
    expect(east.store.get(SECRETS, NS, REMOTE)!.metadata.resourceVersion).not.toBe(rvBefore)
    // Updated in place by server-side apply: the field manager is meshvm's.
    expect(JSON.stringify(east.store.get(SECRETS, NS, REMOTE)!.metadata.managedFields)).toContain('"manager":"meshvm"')
    // Same server and cluster; only the credential changed.
    expect(newKubeconfig.replace(newToken, 'T')).toBe(oldKubeconfig.replace(oldToken, 'T'))
    expect(west.store.get(SECRETS, NS, 'istio-reader-service-account-istio-remote-secret-token')).toBeUndefined()
    // The old token no longer works against west (its Secret is gone); the new one does.
    const oldUse = await kubectl(west, ['--kubeconfig', west.kubeconfigFor(oldToken), 'get', 'namespaces'])
    expect(oldUse.code).not.toBe(0)
    expect(oldUse.stderr).toMatch(/Unauthorized|must be logged in/)
    const newUse = await kubectl(west, ['--kubeconfig', west.kubeconfigFor(newToken), 'get', 'namespaces'])
    expect(newUse.code, newUse.stderr).toBe(0)
    expect(await pythonTokenReview(west, oldToken)).toBe('False [invalid bearer token, Token has been invalidated]')
    expect(await pythonTokenReview(west, newToken)).toBe('True None')
    // istiod in east sees the rotated Secret.
    const s = await meshvm(['remote-secret', 'status', REMOTE, '--context', 'east', '-o', 'json'])
    expect(s.code, s.stderr).toBe(0)
    const item = (JSON.parse(s.stdout) as {items: Item[]}).items[0]!
    expect([item.reachable, item.istiods?.map((x) => x.syncStatus), item.verdict]).toEqual([true, ['synced'], 'ok'])
  })

  it('a rotation that fails half-way (the Secret update is refused) leaves the old Secret in force', async () => {
    const before = east.store.get(SECRETS, NS, REMOTE)!
    const tokenSecretsBefore = west.store
      .list(SECRETS, NS)
      .map((s) => s.metadata.name)
      .sort()
    const remove = east.faults.add({method: 'PATCH', path: `/api/v1/namespaces/${NS}/secrets/${REMOTE}`, status: 500})
    let r: CliResult
    try {
      r = await meshvm(['remote-secret', 'rotate', 'west', '--context', 'east', '--from', 'west', '--request-timeout', '5s'])
    } finally {
      remove()
    }
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code).not.toBe(0)
    expect(r.stderr).toMatch(/^Error: cannot update Secret istio-system\/istio-remote-secret-west in context east: /m)
    expect(r.stderr).toContain('the old Secret is still in force')
    const after = east.store.get(SECRETS, NS, REMOTE)!
    expect(after.metadata.resourceVersion).toBe(before.metadata.resourceVersion)
    expect(after.data).toEqual(before.data)
    // The new token Secret was removed again; the old one is still there.
    expect(
      west.store
        .list(SECRETS, NS)
        .map((s) => s.metadata.name)
        .sort(),
    ).toEqual(tokenSecretsBefore)
    const s = await meshvm(['remote-secret', 'status', REMOTE, '--context', 'east', '-o', 'json'])
    expect(s.code, s.stderr).toBe(0)
    expect((JSON.parse(s.stdout) as {items: Item[]}).items[0]!.verdict).toBe('ok')
  })

  it('a rotation istiod does not take (not synced in time) puts the old kubeconfig back and revokes nothing', async () => {
    const before = east.store.get(SECRETS, NS, REMOTE)!
    const tokenSecretsBefore = west.store
      .list(SECRETS, NS)
      .map((s) => s.metadata.name)
      .sort()
    const oldToken = tokenOfKubeconfig(kubeconfigIn(east, REMOTE))
    // istiod in east cannot sync west with what it is given (say, the server is unreachable from there).
    const real = east.mesh.debugHandlers.get('/debug/clusterz')!
    east.mesh.debugHandlers.set('/debug/clusterz', async (i) => ((await real(i)) as {id: string; syncStatus: string}[]).map((c) => (c.id === 'west' ? {...c, syncStatus: 'timeout'} : c)))
    let r: CliResult
    try {
      r = await meshvm(['remote-secret', 'rotate', REMOTE, '--context', 'east', '--from', 'west', '--istiod-timeout', '1s'])
    } finally {
      east.mesh.debugHandlers.set('/debug/clusterz', real)
    }
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code).toBe(8)
    expect(r.stderr).toMatch(
      /^Error: istiod did not report cluster west synced within 1s after the update \(istiod-7d4b9c6f8-x2k9p: timeout\); the old kubeconfig was put back into Secret istio-system\/istio-remote-secret-west$/m,
    )
    expect(r.stderr).toContain('the old Secret is still in force')
    expect(east.store.get(SECRETS, NS, REMOTE)!.data).toEqual(before.data)
    expect(
      west.store
        .list(SECRETS, NS)
        .map((s) => s.metadata.name)
        .sort(),
    ).toEqual(tokenSecretsBefore)
    const oldUse = await kubectl(west, ['--kubeconfig', west.kubeconfigFor(oldToken), 'get', 'namespaces'])
    expect(oldUse.code, oldUse.stderr).toBe(0)
  })

  it('status and rotate with HTTP debug off (ENABLE_DEBUG_ON_HTTP=false): clusterz is read over xDS', async () => {
    const all = [east, west].flatMap((c) => [...c.mesh.istiods.keys()].map((name) => [c, name] as const))
    for (const [c, name] of all) c.mesh.setIstiod(name, {debugHttp: false})
    const tried = east.mesh.debugRequests.length
    try {
      const s = await meshvm(['remote-secret', 'status', '--context', 'east', '--context', 'west', '-o', 'json'])
      expect(s.stderr).not.toMatch(STACK_TRACE)
      expect(s.code, s.stderr).toBe(0)
      const items = (JSON.parse(s.stdout) as {items: Item[]}).items
      expect(items.map((i) => [i.context, i.cluster, i.istiods?.map((x) => x.syncStatus), i.verdict])).toEqual([
        ['east', 'west', ['synced'], 'ok'],
        ['west', 'east', ['synced'], 'ok'],
      ])
      // HTTP was asked first (and answered 404), so the answer came over xDS.
      expect(east.mesh.debugRequests.slice(tried).some((line) => line.endsWith(' /debug/clusterz'))).toBe(true)

      const oldToken = tokenOfKubeconfig(kubeconfigIn(east, REMOTE))
      const r = await meshvm(['remote-secret', 'rotate', REMOTE, '--context', 'east', '--from', 'west'])
      expect(r.stderr).not.toMatch(STACK_TRACE)
      expect(r.code, r.stderr).toBe(0)
      expect(r.stdout).toMatch(/; istiod synced: istiod-/)
      expect(tokenOfKubeconfig(kubeconfigIn(east, REMOTE))).not.toBe(oldToken)
      const after = await meshvm(['remote-secret', 'status', REMOTE, '--context', 'east', '-o', 'json'])
      expect(after.code, after.stderr).toBe(0)
      expect((JSON.parse(after.stdout) as {items: Item[]}).items[0]!.verdict).toBe('ok')
    } finally {
      for (const [c, name] of all) c.mesh.setIstiod(name, {debugHttp: true})
    }
  })

  it('status fails (exit 8) when the token was revoked, while istiod still holds the cluster', async () => {
    const kc = kubeconfigIn(west, 'istio-remote-secret-east')
    const token = tokenOfKubeconfig(kc)
    const holder = east.store
      .list(SECRETS, NS)
      .find((s) => s.type === 'kubernetes.io/service-account-token' && Buffer.from(String((s.data as Record<string, string>).token), 'base64').toString('utf8') === token)
    expect(holder).toBeDefined()
    const del = await kubectl(east, ['delete', 'secret', holder!.metadata.name, '-n', NS])
    expect(del.code, del.stderr).toBe(0)
    const r = await meshvm(['remote-secret', 'status', '--context', 'west'])
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code).toBe(8)
    const lines = r.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^CONTEXT\s+SECRET\s+CLUSTER\s+REACHABLE\s+PERMISSIONS\s+ISTIOD$/)
    expect(lines[1]).toMatch(/^west\s+istio-remote-secret-east\s+east\s+no\s+-\s+synced$/)
    expect(r.stderr).toMatch(/^Error: 1 of 1 remote cluster credentials failing: west\/istio-remote-secret-east$/m)
  })

  it('bad input: one line naming the flag', async () => {
    const o = await meshvm(['remote-secret', 'status', '-o', 'names'])
    expect(o.code).toBe(2)
    expect(o.stderr.split('\n')[0]).toBe('Error: -o/--output "names": expected one of table, wide, json, yaml, name, jsonpath=TEMPLATE, jsonpath-as-json=TEMPLATE, custom-columns=HEADER:PATH,…')
    const r = await meshvm(['remote-secret', 'rotate', 'west', '--context', 'east', '--from', 'west', '--istiod-timeout', 'soon'])
    expect(r.code).toBe(2)
    expect(r.stderr.split('\n')[0]).toBe('Error: --istiod-timeout "soon": expected a duration such as 10s, 1m or 500ms, at most 596h (24.8 days)')
    const m = await meshvm(['remote-secret', 'rotate', 'west', '--context', 'east'])
    expect(m.code).toBe(2)
    expect(m.stderr.split('\n')[0]).toBe('Error: missing required flag --from')
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(m.stderr).not.toMatch(STACK_TRACE)
  })
})
