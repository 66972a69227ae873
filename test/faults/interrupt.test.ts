/**
 * Ctrl-C, for real: the built CLI runs as a child process against the test API server, a latency
 * fault holds one request so the command is provably mid-operation, and the test sends SIGINT while
 * that request is still unanswered. Each command must exit 130, say what it did and did not do, leave
 * the cluster and the file system consistent (nothing half-written, no temporary files), and a re-run
 * must finish the job (issue 9).
 */
import {existsSync, mkdirSync, mkdtempSync, readdirSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {resourceKey} from '../cluster/index.js'
import {runCli, STACK_TRACE} from '../helpers/cli.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {startCli, waitUntil} from '../helpers/spawn.js'

const WG_KEY = resourceKey('networking.istio.io', 'workloadgroups')
const WAR_KEY = resourceKey('runtime.onboarding.tetrate.io', 'workloadautoregistrations')
const LEASE_KEY = resourceKey('coordination.k8s.io', 'leases')
const SA_KEY = resourceKey('', 'serviceaccounts')
const SVC_KEY = resourceKey('', 'services')
const NS_KEY = resourceKey('', 'namespaces')
const WAR_PATH = '/apis/runtime.onboarding.tetrate.io/v1alpha1'
/** Where war rollout remembers the registrations it deleted that are not back yet. */
const AWAITING = 'rollout.meshvm.io/awaiting'
const ISTIOD = 'istiod-7d4b9c6f8-x2k9p'
/** Long enough that SIGINT surely lands while the request is held; short enough for a fast suite. */
const LATENCY_MS = 1000

let cluster: TestCluster
const work = mkdtempSync(join(tmpdir(), 'meshvm-interrupt-'))

/** Fast retries, as in the other fault tests. */
const env = () => ({...cluster.env, MESHVM_RETRY_BASE_MS: '5'})

/** True while a request matching method and path has reached the server and is not answered yet. */
const pending = (method: string, path: string | RegExp) => () => cluster.requests.some((r) => r.method === method && r.status === 0 && (typeof path === 'string' ? r.path === path : path.test(r.path)))

/** Every file in dir, temporaries (".NAME.PID.RANDOM.tmp") included. */
const filesIn = (dir: string): string[] => (existsSync(dir) ? readdirSync(dir) : [])

function ensureNamespace(name: string): void {
  if (!cluster.store.get(NS_KEY, undefined, name)) {
    cluster.store.create(NS_KEY, 'Namespace', {apiVersion: 'v1', kind: 'Namespace', metadata: {name, labels: {'kubernetes.io/metadata.name': name}}, status: {phase: 'Active'}})
  }
}

/**
 * Runs meshvm, holds one request (a latency fault) and sends SIGINT while it is unanswered, after
 * `check` has looked at the output so far. Returns the result, checked for a clean exit 130.
 */
async function interruptWhileHeld(args: string[], hold: {method: string; path: string}, what: string, check?: (run: ReturnType<typeof startCli>) => void) {
  const remove = cluster.faults.add({...hold, latencyMs: LATENCY_MS, times: 1})
  try {
    const run = startCli(args, {env: env()})
    await waitUntil(pending(hold.method, hold.path), what)
    check?.(run)
    run.kill('SIGINT')
    const res = await run.done
    expect(res.signal).toBeNull()
    expect(res.code, res.stderr).toBe(130)
    expect(res.stderr).not.toMatch(STACK_TRACE)
    return res
  } finally {
    remove()
  }
}

beforeAll(async () => {
  cluster = await startCluster()
})
afterAll(() => cluster?.stop())

describe('Ctrl-C during onboard --apply', () => {
  const args = ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-s', 'web-vm', '--create-service-account', '--apply']
  const wgPath = '/apis/networking.istio.io/v1/namespaces/apps/workloadgroups/web'

  it('finishes the object in progress, reports applied and not applied objects, exits 130; a re-run completes and is idempotent', async () => {
    cluster.mesh.watchNamespace('apps')
    // The 2nd object (the WorkloadGroup, after the ServiceAccount) is applied slowly.
    const res = await interruptWhileHeld(args, {method: 'PATCH', path: wgPath}, 'the WorkloadGroup apply to reach the server', (run) => expect(run.stdout()).toBe('serviceaccount/web-vm created\n'))
    // What was applied on stdout (the object in progress was finished), what was not on stderr.
    expect(res.stdout).toBe('serviceaccount/web-vm created\nworkloadgroup.networking.istio.io/web created\n')
    expect(res.stderr).toBe(
      ['Interrupted: finishing the object in progress, then stopping.', 'service/web not applied', 'Error: interrupted: 2 of 3 objects applied; not applied: service/web', ''].join('\n'),
    )
    // The cluster holds exactly the objects reported as applied.
    expect(cluster.store.get(SA_KEY, 'apps', 'web-vm')).toBeDefined()
    expect(cluster.store.get(WG_KEY, 'apps', 'web')).toBeDefined()
    expect(cluster.store.get(SVC_KEY, 'apps', 'web')).toBeUndefined()
    expect(cluster.requests.some((r) => r.method === 'PATCH' && r.path === '/api/v1/namespaces/apps/services/web')).toBe(false)

    // Re-running applies the rest; once more changes nothing.
    const again = await runCli(args, {env: env()})
    expect(again.code, again.stderr).toBe(0)
    expect(again.stderr).toBe('')
    expect(again.stdout).toBe('serviceaccount/web-vm unchanged\nworkloadgroup.networking.istio.io/web unchanged\nservice/web created\n')
    expect(cluster.store.get(SVC_KEY, 'apps', 'web')).toBeDefined()
    const rv = cluster.store.resourceVersion
    const third = await runCli(args, {env: env()})
    expect(third.code, third.stderr).toBe(0)
    expect(third.stdout).toBe('serviceaccount/web-vm unchanged\nworkloadgroup.networking.istio.io/web unchanged\nservice/web unchanged\n')
    expect(cluster.store.resourceVersion).toBe(rv)
  })
})

describe('Ctrl-C during bundle', () => {
  const tokenPath = (ns: string, sa: string) => `/api/v1/namespaces/${ns}/serviceaccounts/${sa}/token`

  it('meshvm bundle: interrupted during a slow cluster read, exits 130, writes nothing, issues no token', async () => {
    ensureNamespace('vm')
    cluster.mesh.watchNamespace('vm')
    cluster.store.create(SA_KEY, 'ServiceAccount', {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: 'db-vm', namespace: 'vm'}})
    cluster.store.create(WG_KEY, 'WorkloadGroup', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: {name: 'db', namespace: 'vm'},
      spec: {metadata: {labels: {app: 'db'}}, template: {serviceAccount: 'db-vm', ports: {tcp: 5432}}},
    })
    // An existing, empty output directory: afterwards it must still be empty (no files, no temporaries).
    const out = join(work, 'bundle-out')
    mkdirSync(out)
    const rootCert = '/api/v1/namespaces/vm/configmaps/istio-ca-root-cert'
    const res = await interruptWhileHeld(['bundle', 'db', '-n', 'vm', '-d', out], {method: 'GET', path: rootCert}, 'the root certificate read to reach the server')
    expect(res.stdout).toBe('')
    expect(res.stderr).toContain('Interrupted: stopping before any file is written.\n')
    expect(res.stderr.trimEnd().split('\n').pop()).toBe(`Error: interrupted: nothing was written to ${out}`)
    expect(filesIn(out)).toEqual([])
    // The token is the one value that grants something: after Ctrl-C it is not even requested.
    expect(cluster.requests.some((r) => r.path === tokenPath('vm', 'db-vm'))).toBe(false)

    // Without Ctrl-C the same command writes the whole bundle.
    const ok = await runCli(['bundle', 'db', '-n', 'vm', '-d', out], {env: env()})
    expect(ok.code, ok.stderr).toBe(0)
    expect(filesIn(out).sort()).toEqual(['cluster.env', 'hosts', 'install.sh', 'istio-token', 'mesh.yaml', 'root-cert.pem'])
  })

  it('onboard --apply --bundle: interrupted during the slow TokenRequest, keeps what was applied, writes no file, exits 130', async () => {
    cluster.mesh.watchNamespace('shop')
    const out = join(work, 'onboard-bundle-out')
    const token = tokenPath('shop', 'default')
    const res = await interruptWhileHeld(['onboard', 'cart', '-n', 'shop', '-p', 'http=8080', '--apply', '--bundle', out], {method: 'POST', path: token}, 'the TokenRequest to reach the server')
    expect(res.stdout).toBe('workloadgroup.networking.istio.io/cart created\nservice/cart created\n')
    expect(res.stderr).toContain('Interrupted: stopping before any file is written.\n')
    expect(res.stderr.trimEnd().split('\n').pop()).toBe(`Error: interrupted: nothing was written to ${out}`)
    expect(existsSync(out)).toBe(false)
    expect(cluster.store.get(WG_KEY, 'shop', 'cart')).toBeDefined()
    expect(cluster.store.get(SVC_KEY, 'shop', 'cart')).toBeDefined()
  })
})

describe('Ctrl-C during war rollout', () => {
  /** What the simulated agent of a WAR does when it is deleted: come back after a moment (default), or wait to be released. */
  const held = new Set<string>()
  const addresses = new Map<string, string>()
  const warName = (ns: string, i: string) => `${ns}-aws-aws-123456789012-us-east-2b-ec2-i-${i}`
  const war = (ns: string, name: string) => cluster.store.get(WAR_KEY, ns, name)
  const isStale = (ns: string, name: string): boolean => {
    const group = cluster.store.get(WG_KEY, ns, 'ratings')!
    return JSON.stringify((war(ns, name)!.status as {workloadGroupSnapshot?: unknown}).workloadGroupSnapshot) !== JSON.stringify(group.spec)
  }
  const comeBack = (ns: string, name: string) =>
    cluster.mesh.addVm({name, namespace: ns, group: 'ratings', address: addresses.get(`${ns}/${name}`)!, connectedTo: ISTIOD, healthy: true, source: 'war'})

  function setup(ns: string, suffixes: string[]): string[] {
    ensureNamespace(ns)
    cluster.store.create(WG_KEY, 'WorkloadGroup', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: {name: 'ratings', namespace: ns},
      spec: {metadata: {labels: {app: 'ratings'}}, template: {serviceAccount: 'ratings', ports: {http: 9080}}, probe: {periodSeconds: 10, httpGet: {path: '/ready', port: 9080}}},
    })
    return suffixes.map((s) => {
      const name = warName(ns, s)
      addresses.set(`${ns}/${name}`, `10.8.${addresses.size >> 8}.${addresses.size & 255}`)
      cluster.mesh.addVm({name, namespace: ns, group: 'ratings', address: addresses.get(`${ns}/${name}`)!, connectedTo: ISTIOD, healthy: true, source: 'war', stale: true})
      return name
    })
  }

  beforeAll(() => {
    // The onboarding agents of namespaces int-*: a deleted WAR comes back (from the current group spec) after a moment.
    cluster.store.onEvent((e) => {
      const ns = e.object.metadata.namespace ?? ''
      const name = e.object.metadata.name
      if (e.type !== 'DELETED' || e.resource !== WAR_KEY || !ns.startsWith('int-') || held.has(`${ns}/${name}`)) return
      setTimeout(() => comeBack(ns, name), 150)
    })
  })

  it('interrupted while waiting for a workload to come back: exits 130, says what was done; a re-run continues and finishes', async () => {
    const ns = 'int-wait'
    const [a, b, c] = setup(ns, ['a', 'b', 'c']) as [string, string, string]
    held.add(`${ns}/${b}`)
    const uidA = war(ns, a)!.metadata.uid
    const uidC = war(ns, c)!.metadata.uid
    const args = ['war', 'rollout', 'ratings', '-n', ns, '--poll-interval', '100ms', '--timeout', '20s']
    // The rollout checks on b (deleted, its agent not back yet) with a slow read: Ctrl-C lands during it.
    const bPath = `${WAR_PATH}/namespaces/${ns}/workloadautoregistrations/${b}`
    const res = await interruptWhileHeld(args, {method: 'GET', path: bPath}, `the check on ${b} to reach the server`, (run) =>
      expect(run.stderr()).toContain(`[2/3] deleted ${b}; waiting for its agent to re-onboard it\n`),
    )
    // stderr: what was done, step by step, then the interruption and how to continue.
    expect(res.stderr).toMatch(new RegExp(`^\\[1/3\\] deleted ${a}; waiting for its agent to re-onboard it$`, 'm'))
    expect(res.stderr).toMatch(new RegExp(`^\\[1/3\\] ${a} re-onboarded in \\d+\\.\\ds: connected to onboarding-plane-${ISTIOD}, healthy$`, 'm'))
    expect(res.stderr).toMatch(new RegExp(`^\\[2/3\\] deleted ${b}; waiting for its agent to re-onboard it$`, 'm'))
    expect(res.stderr).not.toContain(c)
    expect(res.stderr).toContain(`Error: rollout of workloadgroup ${ns}/ratings (generation 1) interrupted\n`)
    expect(res.stderr).toContain(`Hint: re-run "meshvm war rollout ratings -n ${ns}" to continue: registrations already re-onboarded are up to date and are not touched again (1 not started)\n`)
    // stdout: the report of every registration.
    expect(res.stdout).toMatch(new RegExp(`^${a} +re-onboarded +\\d+\\.\\ds +connected to onboarding-plane-${ISTIOD}, healthy$`, 'm'))
    expect(res.stdout).toMatch(new RegExp(`^${b} +interrupted +- +deleted; interrupted while waiting \\(the agent has not re-registered the workload\\)$`, 'm'))
    expect(res.stdout).toMatch(new RegExp(`^${c} +not started +-$`, 'm'))
    // The cluster is as reported: a re-onboarded, b deleted (its agent has not come back), c untouched.
    expect(war(ns, a)!.metadata.uid).not.toBe(uidA)
    expect(isStale(ns, a)).toBe(false)
    expect(war(ns, b)).toBeUndefined()
    expect(war(ns, c)!.metadata.uid).toBe(uidC)
    expect(isStale(ns, c)).toBe(true)

    // b's agent re-onboards it later, as agents do; the re-run touches only what is still stale.
    held.delete(`${ns}/${b}`)
    comeBack(ns, b)
    const uidA2 = war(ns, a)!.metadata.uid
    const uidB2 = war(ns, b)!.metadata.uid
    const resumed = await runCli([...args, '-o', 'json'], {env: env()})
    expect(resumed.code, resumed.stderr).toBe(0)
    const report = JSON.parse(resumed.stdout) as {status: string; upToDate: number; items: {name: string; result: string}[]}
    expect(report).toMatchObject({status: 'complete', registrations: 3, upToDate: 2})
    expect(report.items.map((i) => [i.name, i.result])).toEqual([[c, 're-onboarded']])
    expect(war(ns, a)!.metadata.uid).toBe(uidA2)
    expect(war(ns, b)!.metadata.uid).toBe(uidB2)
    for (const name of [a, b, c]) expect(isStale(ns, name)).toBe(false)
  })

  it('a re-run after Ctrl-C waits for the registration the interrupted run deleted, instead of reporting complete', async () => {
    const ns = 'int-resume'
    const [a, b, c] = setup(ns, ['a', 'b', 'c']) as [string, string, string]
    // The rollout's record lives in its Lease, not on the user's group.
    const awaiting = () => cluster.store.get(LEASE_KEY, ns, 'meshvm-rollout-ratings')?.metadata.annotations?.[AWAITING]
    held.add(`${ns}/${b}`)
    const uidC = war(ns, c)!.metadata.uid
    const args = ['war', 'rollout', 'ratings', '-n', ns, '--poll-interval', '100ms']
    const bPath = `${WAR_PATH}/namespaces/${ns}/workloadautoregistrations/${b}`
    await interruptWhileHeld([...args, '--timeout', '20s'], {method: 'GET', path: bPath}, `the check on ${b} to reach the server`, (run) =>
      expect(run.stderr()).toContain(`[2/3] deleted ${b}; waiting for its agent to re-onboard it\n`),
    )
    // b is deleted and its agent has not come back: it is invisible in the cluster, but remembered in the Lease.
    expect(war(ns, b)).toBeUndefined()
    expect(awaiting()).toBe(JSON.stringify([b]))

    // Re-run while b's agent is still held back: it waits for b (which takes the one slot, so c does not start), and times out naming b.
    const stuck = await runCli([...args, '--timeout', '1s'], {env: env()})
    expect(stuck.stderr).not.toMatch(STACK_TRACE)
    expect(stuck.code, stuck.stderr).toBe(9)
    expect(stuck.stderr).not.toContain('complete')
    expect(stuck.stderr).toContain(
      `Rolling out workloadgroup ${ns}/ratings (generation 1): 1 of 2 registration(s) are stale; 1 deleted by an earlier rollout is not back yet; re-onboarding 1, up to 1 at a time, waiting up to 1s for each\n`,
    )
    expect(stuck.stderr).toContain(`[1/2] waiting for ${b} to re-onboard (deleted by an earlier rollout): the agent has not re-registered the workload\n`)
    expect(stuck.stderr).toContain(`Error: rollout of workloadgroup ${ns}/ratings (generation 1) stopped: ${b} did not come back connected within 1s\n`)
    expect(stuck.stdout).toMatch(new RegExp(`^${b} +timed out +\\d+\\.\\ds +not back connected within 1s: the agent has not re-registered the workload$`, 'm'))
    expect(stuck.stdout).toMatch(new RegExp(`^${c} +not started +-$`, 'm'))
    expect(stuck.stdout).not.toContain(a)
    expect(war(ns, c)!.metadata.uid).toBe(uidC)
    expect(awaiting()).toBe(JSON.stringify([b]))
    // Nothing was deleted again: b is gone already, and c never started.
    expect(cluster.requests.filter((r) => r.method === 'DELETE' && r.path.startsWith(`${WAR_PATH}/namespaces/${ns}/`)).map((r) => r.path)).toEqual([
      `${WAR_PATH}/namespaces/${ns}/workloadautoregistrations/${a}`,
      bPath,
    ])

    // b's agent re-onboards it; the next run counts b as up to date, re-onboards c, and forgets b.
    held.delete(`${ns}/${b}`)
    comeBack(ns, b)
    const uidB = war(ns, b)!.metadata.uid
    const done = await runCli([...args, '--timeout', '20s', '-o', 'json'], {env: env()})
    expect(done.code, done.stderr).toBe(0)
    expect(done.stderr).toContain(`${b}, deleted by an earlier rollout, is back: connected to onboarding-plane-${ISTIOD}, healthy\n`)
    const report = JSON.parse(done.stdout) as {status: string; items: {name: string; result: string}[]}
    expect(report).toMatchObject({status: 'complete', registrations: 3, upToDate: 2, awaited: 0})
    expect(report.items.map((i) => [i.name, i.result])).toEqual([[c, 're-onboarded']])
    expect(war(ns, b)!.metadata.uid).toBe(uidB)
    for (const name of [a, b, c]) expect(isStale(ns, name)).toBe(false)
    expect(awaiting()).toBeUndefined()
    expect(cluster.store.get(WG_KEY, ns, 'ratings')!.metadata.annotations ?? {}).not.toHaveProperty(AWAITING)
  })

  it('interrupted during a slow delete with --max-unavailable 2: finishes that delete, starts no other, exits 130', async () => {
    const ns = 'int-del'
    const [a, b, c] = setup(ns, ['a', 'b', 'c']) as [string, string, string]
    const uids = [b, c].map((n) => war(ns, n)!.metadata.uid)
    const aPath = `${WAR_PATH}/namespaces/${ns}/workloadautoregistrations/${a}`
    const res = await interruptWhileHeld(
      ['war', 'rollout', 'ratings', '-n', ns, '--max-unavailable', '2', '--poll-interval', '100ms'],
      {method: 'DELETE', path: aPath},
      `the delete of ${a} to reach the server`,
    )
    expect(res.stderr).toMatch(new RegExp(`^\\[1/3\\] deleted ${a}; waiting for its agent to re-onboard it$`, 'm'))
    expect(res.stderr).toContain(`Error: rollout of workloadgroup ${ns}/ratings (generation 1) interrupted\n`)
    expect(res.stderr).toContain('(2 not started)')
    expect(res.stdout).toMatch(new RegExp(`^${a} +interrupted +`, 'm'))
    expect(res.stdout).toMatch(new RegExp(`^${b} +not started +-$`, 'm'))
    expect(res.stdout).toMatch(new RegExp(`^${c} +not started +-$`, 'm'))
    // No deletion was started after Ctrl-C.
    expect(cluster.requests.filter((r) => r.method === 'DELETE' && r.path.startsWith(`${WAR_PATH}/namespaces/${ns}/`)).map((r) => r.path)).toEqual([aPath])
    expect([b, c].map((n) => war(ns, n)!.metadata.uid)).toEqual(uids)

    // a's agent is back by now; the re-run re-onboards b and c and finishes.
    await waitUntil(() => war(ns, a) !== undefined, `${a} to be re-registered`)
    const resumed = await runCli(['war', 'rollout', 'ratings', '-n', ns, '--max-unavailable', '2', '--poll-interval', '100ms', '-o', 'json'], {env: env()})
    expect(resumed.code, resumed.stderr).toBe(0)
    const report = JSON.parse(resumed.stdout) as {status: string; items: {name: string; result: string}[]}
    expect(report.status).toBe('complete')
    expect(report.items.map((i) => [i.name, i.result])).toEqual([
      [b, 're-onboarded'],
      [c, 're-onboarded'],
    ])
    for (const name of [a, b, c]) expect(isStale(ns, name)).toBe(false)
  })
})
