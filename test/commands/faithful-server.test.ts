/**
 * meshvm's write, prune and watch paths against the faithful test API server: what a real
 * kube-apiserver does that a lenient stand-in would hide. A server dry run keeps the stored
 * resourceVersion (so "unchanged" must come from comparing objects); a field another manager owns
 * is a conflict unless --force-conflicts; a delete precondition that no longer holds is a 409; a
 * watch from an expired resourceVersion gets 410 and must re-list; an object whose labels leave a
 * selector arrives as DELETED.
 */
import {spawn} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {BIN, REPO_ROOT, STACK_TRACE} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {waitUntil} from '../helpers/spawn.js'
import {kubectl, startCluster, type TestCluster} from '../helpers/cluster.js'
import {resourceKey} from '../cluster/index.js'

const WG = 'networking.istio.io/workloadgroups'
const WAR_KEY = resourceKey('runtime.onboarding.tetrate.io', 'workloadautoregistrations')
const WAR_PATH = '/apis/runtime.onboarding.tetrate.io/v1alpha1'
const ISTIOD = 'istiod-7d4b9c6f8-x2k9p'

let cluster: TestCluster
let dir: string
const meshvm = (args: string[]) => runCommand(args, {env: cluster.env})

beforeAll(async () => {
  cluster = await startCluster()
  cluster.mesh.watchNamespace('apps')
  dir = mkdtempSync(join(tmpdir(), 'meshvm-faithful-'))
})
afterAll(async () => {
  await cluster?.stop()
  if (dir) rmSync(dir, {recursive: true, force: true})
})

/** A CLI run read while it runs (--watch). */
function startCli(args: string[]) {
  const child = spawn(process.execPath, [BIN, ...args], {cwd: REPO_ROOT, env: {...process.env, NO_COLOR: '1', ...cluster.env}, stdio: ['ignore', 'pipe', 'pipe']})
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const exited = new Promise<void>((resolve) => child.on('close', () => resolve()))
  return {
    get stdout() {
      return stdout
    },
    async waitFor(pattern: RegExp, timeoutMs = 20_000): Promise<void> {
      const start = Date.now()
      while (!pattern.test(stdout)) {
        if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${pattern}; stdout:\n${stdout}\nstderr:\n${stderr}`)
        await new Promise((r) => setTimeout(r, 20))
      }
    },
    async stop(): Promise<void> {
      child.kill()
      await exited
    },
  }
}

describe('onboard: outcomes and conflicts', () => {
  const args = (port: number) => ['onboard', 'web', '-n', 'apps', '-p', `http=${port}`, '-s', 'web-vm', '--create-service-account']

  it('--dry-run=server calls a changing object configured (the dry run keeps the stored resourceVersion)', async () => {
    expect((await meshvm([...args(8080), '--apply'])).code).toBe(0)
    const rv = cluster.store.get(WG, 'apps', 'web')!.metadata.resourceVersion
    const res = await meshvm([...args(9090), '--apply', '--dry-run=server'])
    expect(res.stderr).toBe('')
    expect(res.stdout).toBe('serviceaccount/web-vm unchanged (server dry run)\nworkloadgroup.networking.istio.io/web configured (server dry run)\nservice/web configured (server dry run)\n')
    expect(cluster.store.get(WG, 'apps', 'web')!.metadata.resourceVersion).toBe(rv)
    const same = await meshvm([...args(8080), '--apply', '--dry-run=server'])
    expect(same.stdout).toBe('serviceaccount/web-vm unchanged (server dry run)\nworkloadgroup.networking.istio.io/web unchanged (server dry run)\nservice/web unchanged (server dry run)\n')
  })

  it('refuses to take a field another manager owns, naming field and manager; --force-conflicts takes it', async () => {
    const file = join(dir, 'helm-wg.yaml')
    writeFileSync(
      file,
      'apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata:\n  name: db\n  namespace: apps\nspec:\n  metadata:\n    labels:\n      app: db\n  template:\n    serviceAccount: db-vm\n    ports:\n      tcp: 5433\n',
    )
    const helm = await kubectl(cluster, ['apply', '--server-side', '--field-manager=helm', '-f', file])
    expect(helm.stdout.trim()).toBe('workloadgroup.networking.istio.io/db serverside-applied')
    const onboard = ['onboard', 'db', '-n', 'apps', '-p', 'tcp=5432', '-s', 'db-vm', '--apply']
    const refused = await meshvm(onboard)
    expect(refused.stderr).not.toMatch(STACK_TRACE)
    expect(refused.code).toBe(6)
    expect(refused.stderr).toContain('workloadgroup.networking.istio.io/db failed: server-side apply conflict: .spec.template.ports.tcp is managed by "helm"')
    expect(refused.stderr).toContain('--force-conflicts')
    expect((cluster.store.get(WG, 'apps', 'db')!.spec as {template: {ports: Record<string, number>}}).template.ports.tcp).toBe(5433)
    const forced = await meshvm([...onboard, '--force-conflicts'])
    expect(forced.code, forced.stderr).toBe(0)
    expect(forced.stdout).toBe('workloadgroup.networking.istio.io/db configured\nservice/db created\n')
    expect((cluster.store.get(WG, 'apps', 'db')!.spec as {template: {ports: Record<string, number>}}).template.ports.tcp).toBe(5432)
  })
})

describe('create-remote-secret: the same server-side apply path', () => {
  it('leaves a reader ClusterRole another manager owns with other rules as it is (conflict, not forced)', async () => {
    const ns = 'remote-conflict'
    const role = `istio-reader-clusterrole-${ns}`
    expect((await kubectl(cluster, ['create', 'namespace', ns])).code).toBe(0)
    const file = join(dir, 'helm-role.yaml')
    writeFileSync(file, `apiVersion: rbac.authorization.k8s.io/v1\nkind: ClusterRole\nmetadata:\n  name: ${role}\nrules:\n- apiGroups: ['']\n  resources: [pods]\n  verbs: [get]\n`)
    expect((await kubectl(cluster, ['apply', '--server-side', '--field-manager=helm', '-f', file])).code).toBe(0)
    const res = await runCommand(['create-remote-secret', '-n', ns], {env: cluster.env, stdoutMayHoldSecrets: true})
    expect(res.code, res.stderr).toBe(0)
    expect(res.stderr).toContain(`clusterrole.rbac.authorization.k8s.io/${role} exists and is managed by another tool with different content; left unchanged`)
    expect(cluster.store.get('rbac.authorization.k8s.io/clusterroles', undefined, role)?.rules).toEqual([{apiGroups: [''], resources: ['pods'], verbs: ['get']}])
  })
})

describe('war prune and war list --watch', () => {
  const ns = 'faithful'
  const iso = (msAgo: number) => new Date(Date.now() - msAgo).toISOString().replace(/\.\d+Z$/, 'Z')

  it('prune keeps a registration that changed between its re-read and the delete (409 on the resourceVersion precondition)', async () => {
    cluster.mesh.addVm({name: 'flaky', namespace: ns, group: 'ratings', address: '10.9.0.1', source: 'war', disconnectedAgoMs: 20 * 60_000})
    const war = cluster.store.get(WAR_KEY, ns, 'flaky')!
    cluster.store.update(WAR_KEY, {...war, metadata: {...war.metadata, creationTimestamp: iso(3_600_000)}})
    const path = `${WAR_PATH}/namespaces/${ns}/workloadautoregistrations/flaky`
    // The DELETE is held back; meanwhile the agent reconnects, so its precondition no longer holds.
    const remove = cluster.faults.add({method: 'DELETE', path, latencyMs: 1500, times: 1})
    const running = meshvm(['war', 'prune', '-n', ns, '--yes'])
    const start = Date.now()
    while (!cluster.requests.some((r) => r.method === 'DELETE' && r.path === path)) {
      if (Date.now() - start > 20_000) throw new Error('prune never sent the DELETE')
      await new Promise((r) => setTimeout(r, 10))
    }
    cluster.mesh.addVm({name: 'flaky', namespace: ns, group: 'ratings', address: '10.9.0.1', source: 'war', connectedTo: ISTIOD})
    const res = await running
    remove()
    expect(res.code, res.stderr).toBe(0)
    // The command (run in this process) can read the answer before the server's 'finish' records it.
    const deleted = cluster.requests.find((r) => r.method === 'DELETE' && r.path === path)!
    await waitUntil(() => deleted.status !== 0, 'the DELETE to be answered')
    expect(deleted.status).toBe(409)
    expect(res.stderr).toContain('Kept workloadautoregistration.runtime.onboarding.tetrate.io "flaky": its agent reconnected.')
    expect(cluster.store.get(WAR_KEY, ns, 'flaky')).toBeDefined()
  })

  it('--watch re-lists after its resourceVersion expired (410) and shows what changed meanwhile', async () => {
    cluster.mesh.addVm({name: 'steady', namespace: ns, group: 'web', address: '10.9.0.2', source: 'war', connectedTo: ISTIOD})
    const run = startCli(['war', 'list', '-n', ns, '--source', 'war', '--watch'])
    try {
      await run.waitFor(/^steady +True/m)
      // Nobody watches while the watch is down: the change below happens in the gap, then the
      // history is compacted, so resuming from the old resourceVersion gets 410 Expired.
      const watches = () => cluster.requests.filter((r) => r.path === `${WAR_PATH}/namespaces/${ns}/workloadautoregistrations` && r.query.includes('watch=true'))
      const before = watches().length
      // All three in one turn of the event loop: meshvm cannot re-watch in between.
      cluster.server.closeWatches()
      cluster.mesh.addVm({name: 'gap', namespace: ns, group: 'web', address: '10.9.0.3', source: 'war', connectedTo: ISTIOD})
      cluster.store.compact()
      await run.waitFor(/^gap +True/m)
      expect(watches().length).toBeGreaterThan(before)
    } finally {
      await run.stop()
    }
  })

  it('--watch with a label selector shows a registration whose labels leave the selector', async () => {
    cluster.mesh.addVm({name: 'labelled', namespace: ns, group: 'web', address: '10.9.0.4', source: 'war', connectedTo: ISTIOD})
    const war = cluster.store.get(WAR_KEY, ns, 'labelled')!
    cluster.store.update(WAR_KEY, {...war, metadata: {...war.metadata, labels: {tier: 'front'}}})
    const run = startCli(['war', 'list', '-n', ns, '--source', 'war', '-l', 'tier=front', '--watch'])
    try {
      await run.waitFor(/^labelled +True/m)
      const current = cluster.store.get(WAR_KEY, ns, 'labelled')!
      cluster.store.update(WAR_KEY, {
        ...current,
        metadata: {...current.metadata, labels: {tier: 'back'}},
        status: {conditions: [{type: 'AgentConnected', status: 'False', reason: 'AgentDisconnected', lastTransitionTime: iso(0)}]},
      })
      // The change takes it out of the selector: the watch reports it (DELETED), so its last row is shown.
      await run.waitFor(/^labelled +False/m)
    } finally {
      await run.stop()
    }
  })
})
