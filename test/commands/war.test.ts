/**
 * Integration: `meshvm war list|describe|delete|rollout|prune` against the test API server, plus the
 * streaming table and list writers they print with.
 *
 * Ages in golden files are kept stable by moving the objects' timestamps into the past (whole hours,
 * which humanDuration prints without minutes) and replacing absolute timestamps with a fixed one.
 */
import {spawn} from 'node:child_process'
import {join} from 'node:path'
import {spawn as spawnPty} from '@lydell/node-pty'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {parse} from 'yaml'
import {stripAnsi} from '../../src/lib/errors.js'
import {displayWidth} from '../../src/lib/output/width.js'
import {ISTIO_CRDS, resourceKey, type KubeObj} from '../cluster/index.js'
import {BIN, REPO_ROOT, STACK_TRACE, type CliResult} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {kubectl, startCluster, type TestCluster} from '../helpers/cluster.js'
import {expectMatchesGoldenFile} from '../helpers/golden.js'
import {logRun} from '../helpers/secrets.js'
import {waitUntil} from '../helpers/spawn.js'

const GOLDEN = join(REPO_ROOT, 'test/golden/war')
const WAR_KEY = resourceKey('runtime.onboarding.tetrate.io', 'workloadautoregistrations')
const WE_KEY = resourceKey('networking.istio.io', 'workloadentries')
const WG_KEY = resourceKey('networking.istio.io', 'workloadgroups')
const EVENTS_KEY = resourceKey('', 'events')
const NS_KEY = resourceKey('', 'namespaces')
const WAR_PATH = '/apis/runtime.onboarding.tetrate.io/v1alpha1'
const AWAITING = 'rollout.meshvm.io/awaiting'
const LEASE_KEY = resourceKey('coordination.k8s.io', 'leases')
const LEASE_NAME = 'meshvm-rollout-ratings'
const ISTIOD = 'istiod-7d4b9c6f8-x2k9p'
const MIN = 60_000
const HOUR = 60 * MIN

const iso = (msAgo: number): string => new Date(Date.now() - msAgo).toISOString().replace(/\.\d+Z$/, 'Z')
/** Absolute timestamps vary from run to run; the replacement has the same width, so alignment is kept. */
const normalise = (text: string): string => text.replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\dZ/g, '2000-01-01T00:00:00Z')
const firstLine = (text: string): string => text.split('\n')[0] ?? ''

function ensureNamespace(cluster: TestCluster, name: string): void {
  if (!cluster.store.get(NS_KEY, undefined, name)) {
    cluster.store.create(NS_KEY, 'Namespace', {apiVersion: 'v1', kind: 'Namespace', metadata: {name, labels: {'kubernetes.io/metadata.name': name}}, status: {phase: 'Active'}})
  }
}

function addGroup(cluster: TestCluster, namespace: string, name: string, spec: Record<string, unknown>): KubeObj {
  ensureNamespace(cluster, namespace)
  return cluster.store.create(WG_KEY, 'WorkloadGroup', {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name, namespace}, spec})
}

const ratingsSpec = () => ({
  metadata: {labels: {app: 'ratings'}},
  template: {serviceAccount: 'ratings', ports: {http: 9080}},
  probe: {periodSeconds: 10, httpGet: {path: '/ready', port: 9080}},
})

/**
 * Moves an object's timestamps into the past (the live store object is changed in place: the store
 * has no API for creationTimestamp). Conditions get `transition`, WorkloadEntry annotations
 * `connected`/`disconnected`.
 */
function backdate(cluster: TestCluster, key: string, namespace: string, name: string, t: {created: number; transition?: number; connected?: number; disconnected?: number}): void {
  const obj = cluster.store.get(key, namespace, name)
  if (!obj) throw new Error(`no ${key} ${namespace}/${name}`)
  obj.metadata.creationTimestamp = iso(t.created)
  const conditions = (obj.status as {conditions?: Record<string, string>[]} | undefined)?.conditions ?? []
  for (const c of conditions) {
    if (t.transition !== undefined) c.lastTransitionTime = iso(t.transition)
    if (c.lastProbeTime !== undefined && t.transition !== undefined) c.lastProbeTime = iso(t.transition)
  }
  const ann = obj.metadata.annotations
  if (ann && t.connected !== undefined && ann['istio.io/connectedAt']) ann['istio.io/connectedAt'] = iso(t.connected)
  if (ann && t.disconnected !== undefined && ann['istio.io/disconnectedAt']) ann['istio.io/disconnectedAt'] = iso(t.disconnected)
}

/** A WAR written directly, as an ECS task, in camelCase or snake_case keys. */
function ecsWar(cluster: TestCluster, namespace: string, name: string, style: 'camel' | 'snake'): void {
  ensureNamespace(cluster, namespace)
  const ecs = style === 'camel' ? {taskId: name.slice(-6), cluster: 'prod', iamRole: {name: 'ledger-task'}} : {task_id: name.slice(-6), cluster: 'prod', iam_role: {name: 'ledger-task'}}
  cluster.store.create(WAR_KEY, 'WorkloadAutoRegistration', {
    apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1',
    kind: 'WorkloadAutoRegistration',
    metadata: {name, namespace, ownerReferences: [{apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: 'ledger', uid: '00000000-0000-0000-0000-00000000ecs0', controller: true}]},
    spec: {
      identity: {aws: {partition: 'aws', account: '123456789012', region: 'us-east-2', zone: 'us-east-2b', ecs}},
      registration: {agent: {version: '1.11.0'}, sidecar: {istio: {version: '1.24.3-tetrate3'}}, host: {addresses: [{ip: `10.1.2.${style === 'camel' ? 3 : 4}`, type: 'VPC'}]}},
    },
    status: {activeAgentConnection: {connectedTo: 'onboarding-plane-1'}, conditions: [{type: 'AgentConnected', status: 'True', reason: 'ConnectionEstablished', lastTransitionTime: iso(HOUR)}]},
  })
}

/** Every column of every row starts where its header starts (the table is aligned). */
function expectAligned(text: string): void {
  const lines = text.replace(/\n$/, '').split('\n')
  const header = lines[0]!
  const starts = [0, ...[...header.matchAll(/ {3,}(?=\S)/g)].map((m) => m.index! + m[0].length)]
  for (const line of lines.slice(1)) {
    for (const s of starts.slice(1)) {
      expect(line.slice(s - 3, s), `${JSON.stringify(line)} at column ${s}`).toBe('   ')
      expect(line[s], `${JSON.stringify(line)} at column ${s}`).toMatch(/\S/)
    }
  }
}

function expectCleanFailure(res: CliResult, exit: number, first: string | RegExp): void {
  expect(res.stderr).not.toMatch(STACK_TRACE)
  expect(res.code, res.stderr).toBe(exit)
  if (typeof first === 'string') expect(firstLine(res.stderr)).toBe(first)
  else expect(firstLine(res.stderr)).toMatch(first)
}

/** A CLI run whose output is read while it runs (streaming, --watch). */
function startCli(args: string[], env: Record<string, string>) {
  const child = spawn(process.execPath, [BIN, ...args], {cwd: REPO_ROOT, env: {...process.env, NO_COLOR: '1', ...env}, stdio: ['ignore', 'pipe', 'pipe']})
  let stdout = ''
  let stderr = ''
  child.stdout.setEncoding('utf8').on('data', (d: string) => (stdout += d))
  child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
  const exited = new Promise<number>((resolve) =>
    child.on('close', (code, signal) => {
      logRun({args, stdout, stderr, stdoutMayHoldSecrets: false})
      resolve(code ?? (signal ? 128 : 1))
    }),
  )
  return {
    get stdout() {
      return stdout
    },
    get stderr() {
      return stderr
    },
    exited,
    async waitFor(pattern: RegExp, timeoutMs = 15_000): Promise<void> {
      const start = Date.now()
      while (!pattern.test(stdout)) {
        if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${pattern}; stdout:\n${stdout}\nstderr:\n${stderr}`)
        await new Promise((r) => setTimeout(r, 20))
      }
    },
    kill: () => child.kill('SIGTERM'),
  }
}

// ---- listing, describing, permissions (one read-only cluster) -----------------------------

const RATINGS = 'ratings-aws-aws-123456789012-us-east-2b-ec2-i-'
const UP_TO_DATE = `${RATINGS}0a1b2c3d`
const STALE = `${RATINGS}0e4f5a6b`
const DISCONNECTED = `${RATINGS}0c7d8e9f`

describe.concurrent('meshvm war list / describe', () => {
  let cluster: TestCluster
  const meshvm = (args: string[], env: Record<string, string> = {}) => runCommand(['war', ...args], {env: {...cluster.env, ...env}})

  beforeAll(async () => {
    cluster = await startCluster()
    addGroup(cluster, 'bookinfo', 'ratings', ratingsSpec())
    cluster.mesh.addVm({name: UP_TO_DATE, namespace: 'bookinfo', group: 'ratings', address: '10.0.0.11', connectedTo: ISTIOD, healthy: true, source: 'war'})
    cluster.mesh.addVm({name: STALE, namespace: 'bookinfo', group: 'ratings', address: '10.0.0.12', connectedTo: ISTIOD, healthy: true, source: 'war', stale: true})
    cluster.mesh.addVm({name: DISCONNECTED, namespace: 'bookinfo', group: 'ratings', address: '10.0.0.13', source: 'war'})
    for (const name of [UP_TO_DATE, STALE, DISCONNECTED]) {
      backdate(cluster, WAR_KEY, 'bookinfo', name, {created: 26 * HOUR, transition: 25 * HOUR})
      backdate(cluster, WE_KEY, 'bookinfo', name, {created: 26 * HOUR, transition: 25 * HOUR, connected: 25 * HOUR})
    }
    ecsWar(cluster, 'payments', 'ledger-aws-aws-123456789012-us-east-2b-ecs-5f6e7d', 'camel')
    ecsWar(cluster, 'payments', 'ledger-aws-aws-123456789012-us-east-2b-ecs-9a8b7c', 'snake')
    for (const name of ['ledger-aws-aws-123456789012-us-east-2b-ecs-5f6e7d', 'ledger-aws-aws-123456789012-us-east-2b-ecs-9a8b7c']) {
      backdate(cluster, WAR_KEY, 'payments', name, {created: 50 * HOUR, transition: 49 * HOUR})
    }
    addGroup(cluster, 'legacy', 'web', {metadata: {labels: {app: 'web'}}, template: {serviceAccount: 'default'}})
    cluster.mesh.addVm({name: 'web-1', namespace: 'legacy', group: 'web', address: '10.0.0.7', connectedTo: ISTIOD, healthy: true})
    cluster.mesh.addVm({name: 'web-2', namespace: 'legacy', group: 'web', address: '10.0.0.8', disconnectedAgoMs: 30 * MIN})
    backdate(cluster, WE_KEY, 'legacy', 'web-10.0.0.7', {created: 10 * HOUR, transition: 9 * HOUR, connected: 9 * HOUR})
    backdate(cluster, WE_KEY, 'legacy', 'web-10.0.0.8', {created: 10 * HOUR, disconnected: 9 * HOUR})
    // A WorkloadEntry written by hand is not a registration.
    cluster.store.create(WE_KEY, 'WorkloadEntry', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {name: 'db-manual', namespace: 'legacy', labels: {app: 'db'}},
      spec: {address: '10.0.0.99'},
    })
    // Events: two for the stale WAR, one for another object, one for an earlier object of the same name.
    const war = cluster.store.get(WAR_KEY, 'bookinfo', STALE)!
    const event = (name: string, involved: Record<string, unknown>, e: Record<string, unknown>) =>
      cluster.store.create(EVENTS_KEY, 'Event', {
        apiVersion: 'v1',
        kind: 'Event',
        metadata: {name, namespace: 'bookinfo'},
        involvedObject: {apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1', kind: 'WorkloadAutoRegistration', namespace: 'bookinfo', ...involved},
        ...e,
      })
    event(
      'e1',
      {name: STALE, uid: war.metadata.uid},
      {
        type: 'Normal',
        reason: 'Registered',
        message: 'Workload registered from 10.0.0.12',
        source: {component: 'onboarding-plane'},
        firstTimestamp: iso(26 * HOUR),
        lastTimestamp: iso(26 * HOUR),
        count: 1,
      },
    )
    event(
      'e2',
      {name: STALE, uid: war.metadata.uid},
      {
        type: 'Warning',
        reason: 'AgentDisconnected',
        message: 'Agent lost its connection',
        source: {component: 'onboarding-plane'},
        firstTimestamp: iso(24 * HOUR),
        lastTimestamp: iso(12 * HOUR),
        count: 3,
      },
    )
    event('e3', {name: UP_TO_DATE, uid: cluster.store.get(WAR_KEY, 'bookinfo', UP_TO_DATE)!.metadata.uid}, {type: 'Normal', reason: 'Registered', message: 'other object', firstTimestamp: iso(HOUR)})
    event('e4', {name: STALE, uid: 'an-earlier-uid'}, {type: 'Normal', reason: 'Registered', message: 'earlier object of the same name', firstTimestamp: iso(HOUR)})
  })
  afterAll(() => cluster?.stop())

  it.each([
    ['cli-list-bookinfo.txt', ['list', '-n', 'bookinfo']],
    ['cli-list-all.txt', ['list', '-A']],
    ['cli-list-wide.txt', ['list', '-A', '-o', 'wide']],
    ['cli-list-legacy-wide.txt', ['list', '-n', 'legacy', '-o', 'wide']],
  ])('%s (golden)', async (file, args) => {
    const res = await meshvm(args)
    expect(res.stderr).toBe('')
    expect(res.code).toBe(0)
    expectAligned(res.stdout)
    expectMatchesGoldenFile(res.stdout, join(GOLDEN, file))
  })

  it('reads ECS identities in camelCase and snake_case keys alike', async () => {
    const res = await meshvm(['list', '-n', 'payments', '-o', 'wide'])
    expect(res.code, res.stderr).toBe(0)
    expect(res.stdout).toContain('aws/ecs prod/5f6e7d us-east-2b')
    expect(res.stdout).toContain('aws/ecs prod/9a8b7c us-east-2b')
  })

  it('-o name', async () => {
    const res = await meshvm(['list', '-A', '-o', 'name'])
    expect(res.code, res.stderr).toBe(0)
    expect(res.stdout).toBe(
      [
        `workloadautoregistration.runtime.onboarding.tetrate.io/${UP_TO_DATE}`,
        `workloadautoregistration.runtime.onboarding.tetrate.io/${DISCONNECTED}`,
        `workloadautoregistration.runtime.onboarding.tetrate.io/${STALE}`,
        'workloadautoregistration.runtime.onboarding.tetrate.io/ledger-aws-aws-123456789012-us-east-2b-ecs-5f6e7d',
        'workloadautoregistration.runtime.onboarding.tetrate.io/ledger-aws-aws-123456789012-us-east-2b-ecs-9a8b7c',
        'workloadentry.networking.istio.io/web-10.0.0.7',
        'workloadentry.networking.istio.io/web-10.0.0.8',
        '',
      ].join('\n'),
    )
  })

  it("-o jsonpath and -o jsonpath-as-json: kubectl's templates over the List", async () => {
    const [names, path, asJson, range] = await Promise.all([
      meshvm(['list', '-A', '-o', 'name']),
      meshvm(['list', '-A', '-o', 'jsonpath={.items[*].metadata.name}']),
      meshvm(['list', '-n', 'legacy', '-o', 'jsonpath-as-json={.items[*].spec.address}']),
      meshvm(['list', '-n', 'legacy', '-o', 'jsonpath={range .items[*]}{.kind}/{.metadata.name}{"\\n"}{end}']),
    ])
    for (const r of [names, path, asJson, range]) expect(r.code, r.stderr).toBe(0)
    expect(path.stdout).toBe(
      names.stdout
        .trim()
        .split('\n')
        .map((n) => n.split('/')[1])
        .join(' '),
    )
    expect(asJson.stdout).toBe('[\n    "10.0.0.7",\n    "10.0.0.8"\n]\n')
    expect(range.stdout).toBe('WorkloadEntry/web-10.0.0.7\nWorkloadEntry/web-10.0.0.8\n')
  })

  it.each([
    ['jsonpath={.items[*].metadata.name}'],
    ['jsonpath={range .items[*]}{.metadata.name}{"\\t"}{.status.conditions[?(@.type=="AgentConnected")].status}{"\\n"}{end}'],
    ['jsonpath={.items[0].spec.identity}'],
    ['jsonpath={.items[*].metadata.ownerReferences[0].kind} {.items[-1:].metadata.name}'],
    ['jsonpath-as-json={.items[*].spec.registration.agent}'],
    ['custom-columns=NAME:.metadata.name,EC2:.spec.identity.aws.ec2,CONDITIONS:.status.conditions[*].type,NOPE:.spec.nope'],
  ])('prints exactly what kubectl prints for the same objects: -o %s', async (output) => {
    const [ours, theirs] = await Promise.all([meshvm(['list', '-n', 'bookinfo', '--source', 'war', '-o', output]), kubectl(cluster, ['get', 'war', '-n', 'bookinfo', '-o', output])])
    expect(theirs.code, theirs.stderr).toBe(0)
    expect(ours.code, ours.stderr).toBe(0)
    expect(ours.stdout).toBe(theirs.stdout)
  })

  it('-o custom-columns, --sort-by, --no-headers, --show-labels and -L', async () => {
    const [cc, sorted, labels] = await Promise.all([
      meshvm(['list', '-A', '-o', 'custom-columns=NS:.metadata.namespace,NAME:.metadata.name,ADDRESS:.spec.address', '--sort-by', '{.metadata.name}']),
      meshvm(['list', '-A', '-o', 'name', '--sort-by=.metadata.creationTimestamp']),
      meshvm(['list', '-n', 'legacy', '--show-labels', '-L', 'app,version', '--no-headers']),
    ])
    expect(cc.code, cc.stderr).toBe(0)
    const lines = cc.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^NS {9}NAME {53}ADDRESS$/)
    expect(lines.slice(1).map((l) => l.split(/\s+/)[1])).toEqual([...lines.slice(1).map((l) => l.split(/\s+/)[1])].sort())
    expect(lines.filter((l) => /^legacy {5}web-10\.0\.0\.7 +10\.0\.0\.7$/.test(l))).toHaveLength(1)
    expect(lines.find((l) => l.includes('ledger'))).toMatch(/<none>$/)
    expectAligned(cc.stdout)
    expect(sorted.code, sorted.stderr).toBe(0)
    // Oldest first: payments (50h), bookinfo (26h), legacy (10h).
    expect(
      sorted.stdout
        .trim()
        .split('\n')
        .map((n) => n.split('/')[1]!.split('-')[0]),
    ).toEqual(['ledger', 'ledger', 'ratings', 'ratings', 'ratings', 'web', 'web'])
    expect(labels.code, labels.stderr).toBe(0)
    const json = JSON.parse((await meshvm(['list', '-n', 'legacy', '-o', 'json'])).stdout) as {items: {metadata: {labels?: Record<string, string>}}[]}
    const first = json.items[0]!.metadata.labels ?? {}
    const shown =
      Object.keys(first)
        .sort()
        .map((k) => `${k}=${first[k]}`)
        .join(',') || '<none>'
    expect(labels.stdout.split('\n')[0]).toMatch(new RegExp(`^web-10\\.0\\.0\\.7 +True +10h +${first.app ?? ''} +${shown.replace(/[.]/g, '\\.')}$`))
  })

  it.each([
    [['list', '-l', 'app in (a'], 'Error: -l/--selector "app in (a": cannot parse "app in (a"; expected key=value, key!=value, key in (a,b), key notin (a,b), key or !key'],
    [['prune', '-l', 'a b'], 'Error: -l/--selector "a b": cannot parse "a b"; expected key=value, key!=value, key in (a,b), key notin (a,b), key or !key'],
    [
      ['list', '-o', 'go-template={{.kind}}'],
      'Error: -o/--output "go-template={{.kind}}": go-template is not supported: no maintained JavaScript library implements Go text/template, and an imitation would print different text than kubectl for the same template',
    ],
    [['list', '-o', 'jsonpath'], "Error: -o/--output jsonpath: template format specified but no template given, e.g. jsonpath='{.items[*].metadata.name}'"],
    [['list', '-o', 'jsonpath={.items[0'], 'Error: -o/--output "jsonpath={.items[0": unterminated array'],
    [['list', '-o', 'custom-columns=NAME'], 'Error: -o/--output custom-columns: unexpected custom-columns spec "NAME", expected <header>:<json-path-expr>'],
    [['list', '-o', 'tabel'], 'Error: -o/--output "tabel": expected one of table, wide, json, yaml, name, jsonpath=TEMPLATE, jsonpath-as-json=TEMPLATE, custom-columns=HEADER:PATH,…'],
  ])('bad output or selector flags are usage errors before any request: %j', async (args, first) => {
    // No cluster to reach: the flags are checked before the kubeconfig is even read.
    const res = await runCommand(['war', ...args], {env: {KUBECONFIG: '/nonexistent/kubeconfig'}})
    expectCleanFailure(res, 2, first)
  })

  it('-o json and -o yaml: the objects as a kubectl List, with apiVersion and kind', async () => {
    const [json, yaml] = await Promise.all([meshvm(['list', '-A', '-o', 'json', '--chunk-size', '2']), meshvm(['list', '-A', '-o', 'yaml'])])
    expect(json.code, json.stderr).toBe(0)
    expect(yaml.code, yaml.stderr).toBe(0)
    const list = JSON.parse(json.stdout) as {kind: string; items: {apiVersion: string; kind: string; metadata: {name: string}}[]}
    expect(list.kind).toBe('List')
    expect(list.items.map((i) => `${i.kind}/${i.metadata.name}`)).toEqual([
      `WorkloadAutoRegistration/${UP_TO_DATE}`,
      `WorkloadAutoRegistration/${DISCONNECTED}`,
      `WorkloadAutoRegistration/${STALE}`,
      'WorkloadAutoRegistration/ledger-aws-aws-123456789012-us-east-2b-ecs-5f6e7d',
      'WorkloadAutoRegistration/ledger-aws-aws-123456789012-us-east-2b-ecs-9a8b7c',
      'WorkloadEntry/web-10.0.0.7',
      'WorkloadEntry/web-10.0.0.8',
    ])
    expect(list.items[0]!.apiVersion).toBe('runtime.onboarding.tetrate.io/v1alpha1')
    expect(parse(yaml.stdout)).toEqual(list)
  })

  it.each([
    ['--group', ['list', '-A', '--group', 'web'], ['web-10.0.0.7', 'web-10.0.0.8']],
    ['-l (sent to the API server)', ['list', '-A', '-l', 'app=web'], ['web-10.0.0.7', 'web-10.0.0.8']],
    ['--source war', ['list', '-n', 'legacy', '--source', 'war'], []],
    ['--source workloadentry (WAR-owned entries too)', ['list', '-n', 'bookinfo', '--source', 'workloadentry'], [UP_TO_DATE, DISCONNECTED, STALE]],
    ['--no-headers', ['list', '-n', 'legacy', '--no-headers'], ['web-10.0.0.7', 'web-10.0.0.8']],
  ])('%s', async (_title, args, names) => {
    const res = await meshvm([...args, '-o', args.includes('--no-headers') ? 'table' : 'name'])
    expect(res.code, res.stderr).toBe(0)
    const shown = res.stdout
      .split('\n')
      .filter(Boolean)
      .map((l) => (l.includes('/') ? l.split('/').pop()! : l.split(/\s+/)[0]!))
    expect(shown).toEqual(names)
  })

  it('says so on stderr when nothing matches, with nothing on stdout', async () => {
    const res = await meshvm(['list', '-n', 'nowhere'])
    expect(res.code).toBe(0)
    expect(res.stdout).toBe('')
    expect(res.stderr).toBe('No registrations found in namespace nowhere.\n')
  })

  it('describe: a stale WAR with the snapshot difference, its WorkloadEntry, conditions and own Events (golden)', async () => {
    const res = await meshvm(['describe', STALE, '-n', 'bookinfo'])
    expect(res.stderr).toBe('')
    expect(res.code).toBe(0)
    expect(res.stdout).toContain('Snapshot:    stale:')
    expect(res.stdout).not.toContain('other object')
    expect(res.stdout).not.toContain('earlier object')
    expectMatchesGoldenFile(normalise(res.stdout), join(GOLDEN, 'cli-describe-war.txt'))
  })

  it('describe: an auto-registered WorkloadEntry, and several names at once (golden)', async () => {
    const res = await meshvm(['describe', 'web-10.0.0.7', 'web-10.0.0.8', '-n', 'legacy'])
    expect(res.stderr).toBe('')
    expect(res.code).toBe(0)
    expectMatchesGoldenFile(normalise(res.stdout), join(GOLDEN, 'cli-describe-workloadentry.txt'))
  })

  it.each([
    [
      'a name that does not exist',
      ['describe', 'nope', '-n', 'bookinfo'],
      4,
      'Error: registration "nope" not found in namespace "bookinfo": no WorkloadAutoRegistration or auto-registered WorkloadEntry has that name',
    ],
    [
      'a WorkloadEntry written by hand',
      ['describe', 'db-manual', '-n', 'legacy'],
      4,
      'Error: registration "db-manual" not found in namespace "legacy": no WorkloadAutoRegistration or auto-registered WorkloadEntry has that name (WorkloadEntry db-manual was not auto-registered: manage it with kubectl)',
    ],
    ['an invalid name', ['describe', 'Not_A_Name', '-n', 'bookinfo'], 2, /^Error: NAME "Not_A_Name": must be a DNS-1123 subdomain/],
    ['a mistyped flag', ['describe', 'x', '--bogus'], 2, /^Error: unknown flag --bogus$/],
    ['a bad --chunk-size', ['list', '--chunk-size=-1'], 2, /^Error: .*chunk-size/i],
    ['a bad --source', ['list', '--source', 'pods'], 2, /^Error: --source "pods": expected one of all, war, workloadentry$/],
  ])('describe/list: %s', async (_title, args, exit, first) => {
    expectCleanFailure(await meshvm(args), exit, first)
  })

  it('forbidden: names the verb and the resource that are missing', async () => {
    const token = cluster.addUser('entries-only', {rules: [{verbs: ['get', 'list'], apiGroups: ['networking.istio.io'], resources: ['workloadentries', 'workloadgroups']}]})
    const env = {KUBECONFIG: cluster.kubeconfigFor(token)}
    const res = await meshvm(['list', '-n', 'bookinfo'], env)
    expectCleanFailure(res, 5, 'Error: forbidden: missing permission to list workloadautoregistrations.runtime.onboarding.tetrate.io in namespace "bookinfo"')
    expect(res.stderr).toContain(
      'Hint: ask a cluster admin for a Role in namespace bookinfo allowing verb "list" on "workloadautoregistrations.runtime.onboarding.tetrate.io" (check with: kubectl auth can-i list workloadautoregistrations.runtime.onboarding.tetrate.io -n bookinfo)',
    )
    const all = await meshvm(['list', '-A'], env)
    expectCleanFailure(all, 5, 'Error: forbidden: missing permission to list workloadautoregistrations.runtime.onboarding.tetrate.io in all namespaces')
    // Without WARs in the picture, the same user lists WorkloadEntries fine.
    const entries = await meshvm(['list', '-n', 'legacy', '--source', 'workloadentry'], env)
    expect(entries.code, entries.stderr).toBe(0)
  })

  it('forbidden: delete without the delete verb changes nothing', async () => {
    const token = cluster.addUser('reader', {rules: [{verbs: ['get', 'list'], apiGroups: ['*'], resources: ['*']}]})
    const res = await meshvm(['delete', UP_TO_DATE, '-n', 'bookinfo', '--yes'], {KUBECONFIG: cluster.kubeconfigFor(token)})
    expectCleanFailure(res, 5, 'Error: 1 of 1 registration(s) not deleted: forbidden: missing permission to delete workloadautoregistrations.runtime.onboarding.tetrate.io in namespace "bookinfo"')
    expect(res.stderr).toMatch(/^Hint: ask a cluster admin for a Role in namespace bookinfo allowing verb "delete"/m)
    expect(cluster.store.get(WAR_KEY, 'bookinfo', UP_TO_DATE)).toBeDefined()
  })

  it('describe leaves out what it may not read, with a warning', async () => {
    const token = cluster.addUser('no-events', {rules: [{verbs: ['get', 'list'], apiGroups: ['networking.istio.io', 'runtime.onboarding.tetrate.io'], resources: ['*']}]})
    const res = await meshvm(['describe', STALE, '-n', 'bookinfo'], {KUBECONFIG: cluster.kubeconfigFor(token)})
    expect(res.code, res.stderr).toBe(0)
    expect(res.stderr).toBe('Warning: forbidden: missing permission to list events in namespace "bookinfo": events not shown\n')
    expect(res.stdout).toMatch(/^Events: +<none>$/m)
  })
})

// ---- paging, 410, streaming, watch ---------------------------------------------------------

describe('meshvm war list: paging', () => {
  let cluster: TestCluster
  const meshvm = (args: string[]) => runCommand(['war', ...args], {env: cluster.env})
  const minimalWar = (namespace: string, name: string, connected: boolean): KubeObj => ({
    apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1',
    kind: 'WorkloadAutoRegistration',
    metadata: {name, namespace, ownerReferences: [{apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: 'fleet', uid: '00000000-0000-0000-0000-0000000f1ee7', controller: true}]},
    spec: {
      identity: {aws: {partition: 'aws', account: '123456789012', zone: 'us-east-2b', ec2: {instance_id: `i-${name}`}}},
      registration: {agent: {version: '1.4.0'}, sidecar: {istio: {version: '1.24.2'}}},
    },
    status: {conditions: [{type: 'AgentConnected', status: connected ? 'True' : 'False', lastTransitionTime: iso(HOUR)}]},
  })
  const listRequests = (namespace: string) => cluster.requests.filter((r) => r.method === 'GET' && r.path === `${WAR_PATH}/namespaces/${namespace}/workloadautoregistrations`)

  beforeAll(async () => {
    cluster = await startCluster()
    ensureNamespace(cluster, 'paged')
    for (let i = 0; i < 25; i++) cluster.store.create(WAR_KEY, 'WorkloadAutoRegistration', minimalWar('paged', `vm-${String(i).padStart(2, '0')}`, i % 3 !== 0))
    ensureNamespace(cluster, 'big')
    for (let i = 0; i < 10_000; i++) cluster.store.create(WAR_KEY, 'WorkloadAutoRegistration', minimalWar('big', `vm-${String(i).padStart(5, '0')}`, true))
  })
  afterAll(() => cluster?.stop())

  it('aligns columns holding wide (CJK) characters and emoji by their terminal width', async () => {
    ensureNamespace(cluster, 'intl')
    const notes = ['名前', 'ok', '😀 smile']
    notes.forEach((note, i) => {
      const w = minimalWar('intl', `vm-${i}`, true)
      cluster.store.create(WAR_KEY, 'WorkloadAutoRegistration', {...w, metadata: {...w.metadata, annotations: {note}}} as KubeObj)
    })
    const res = await meshvm(['list', '-n', 'intl', '-o', 'custom-columns=NOTE:.metadata.annotations.note,NAME:.metadata.name'])
    expect(res.code, res.stderr).toBe(0)
    expect(res.stdout).toBe(['NOTE       NAME', '名前       vm-0', 'ok         vm-1', '😀 smile   vm-2', ''].join('\n'))
  })

  it('pages with limit and continue, printing every row once, aligned', async () => {
    const before = listRequests('paged').length
    const res = await meshvm(['list', '-n', 'paged', '--source', 'war', '--chunk-size', '10'])
    expect(res.code, res.stderr).toBe(0)
    const lines = res.stdout.trimEnd().split('\n')
    expect(lines[0]).toMatch(/^NAME {3,}AGENT CONNECTED {3}AGE$/)
    expect(lines.slice(1).map((l) => l.split(/\s+/)[0])).toEqual(Array.from({length: 25}, (_v, i) => `vm-${String(i).padStart(2, '0')}`))
    expectAligned(res.stdout)
    const requests = listRequests('paged').slice(before)
    expect(requests.map((r) => new URLSearchParams(r.query).get('limit'))).toEqual(['10', '10', '10'])
    expect(requests.map((r) => new URLSearchParams(r.query).has('continue'))).toEqual([false, true, true])
  })

  it('restarts a list whose continue token expired (410 Gone) without repeating rows', async () => {
    const remove = cluster.faults.add({path: `${WAR_PATH}/namespaces/paged/workloadautoregistrations`, query: 'continue', expireContinue: true, times: 1})
    try {
      const before = listRequests('paged').length
      const res = await meshvm(['list', '-n', 'paged', '--source', 'war', '--chunk-size', '10', '-o', 'name'])
      expect(res.code, res.stderr).toBe(0)
      const names = res.stdout.trimEnd().split('\n')
      expect(names).toHaveLength(25)
      expect(new Set(names).size).toBe(25)
      expect(
        listRequests('paged')
          .slice(before)
          .map((r) => r.status),
      ).toContain(410)
    } finally {
      remove()
    }
  })

  it('prints the first page before the next one has arrived', async () => {
    const remove = cluster.faults.add({path: `${WAR_PATH}/namespaces/paged/workloadautoregistrations`, query: 'continue', latencyMs: 3000, times: 1})
    try {
      const run = startCli(['war', 'list', '-n', 'paged', '--source', 'war', '--chunk-size', '10'], cluster.env)
      await run.waitFor(/^vm-09 /m)
      // The first page is on screen; the second was asked for when the first was handed to the printer
      // (one page is read ahead), and its answer is held back 3 s by the fault.
      const secondPagePending = () => listRequests('paged').some((r) => new URLSearchParams(r.query).has('continue') && r.status === 0)
      await waitUntil(secondPagePending, 'the request for the second page', 2_500)
      expect(run.stdout).toMatch(/^vm-09 /m)
      expect(run.stdout).not.toContain('vm-24')
      expect(secondPagePending()).toBe(true)
      expect(await run.exited).toBe(0)
      expect(run.stdout.trimEnd().split('\n')).toHaveLength(26)
    } finally {
      remove()
    }
  })

  it('lists 10,000 registrations in pages of --chunk-size (default 500)', async () => {
    const before = listRequests('big').length
    const res = await runCommand(['war', 'list', '-n', 'big', '--source', 'war'], {env: cluster.env, timeoutMs: 60_000})
    expect(res.code, res.stderr).toBe(0)
    const lines = res.stdout.trimEnd().split('\n')
    expect(lines).toHaveLength(10_001)
    expect(lines[10_000]).toMatch(/^vm-09999 {3}True {14}\S+$/)
    const requests = listRequests('big').slice(before)
    expect(requests).toHaveLength(20)
    expect(requests.every((r) => new URLSearchParams(r.query).get('limit') === '500')).toBe(true)
  }, 90_000)

  it('--watch prints a row for every change after the list', async () => {
    addGroup(cluster, 'watched', 'web', {metadata: {labels: {app: 'web'}}, template: {serviceAccount: 'default'}})
    cluster.mesh.addVm({name: 'web-1', namespace: 'watched', group: 'web', address: '10.0.0.1', connectedTo: ISTIOD})
    const run = startCli(['war', 'list', '-n', 'watched', '--watch'], cluster.env)
    try {
      await run.waitFor(/^web-10\.0\.0\.1 +True/m)
      cluster.mesh.addVm({name: 'web-2', namespace: 'watched', group: 'web', address: '10.0.0.2', disconnectedAgoMs: 1000})
      cluster.mesh.addVm({name: 'war-vm', namespace: 'watched', group: 'web', address: '10.0.0.3', connectedTo: ISTIOD, source: 'war'})
      await run.waitFor(/^web-10\.0\.0\.2 +False/m)
      await run.waitFor(/^war-vm +True/m)
      const lines = run.stdout.trimEnd().split('\n')
      expect(lines[0]).toMatch(/^NAME +AGENT CONNECTED +AGE$/)
      // A manual WorkloadEntry does not show up; the WAR's own WorkloadEntry does not either.
      expect(lines.filter((l) => l.startsWith('war-vm'))).toHaveLength(1)
    } finally {
      run.kill()
      await run.exited
    }
  })
})

// ---- -A: both kinds in one table -------------------------------------------------------------

describe('meshvm war list -A: one table of both kinds, ordered by namespace, then name', () => {
  let cluster: TestCluster
  const meshvm = (args: string[]) => runCommand(['war', 'list', '-A', ...args], {env: cluster.env})
  const WE_PATH = '/apis/networking.istio.io/v1/workloadentries'
  const owner = {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: 'g', uid: '00000000-0000-0000-0000-0000000000a1', controller: true}
  const war = (namespace: string, name: string, o: {labels?: Record<string, string>; agent?: string; sidecar?: string} = {}): void => {
    ensureNamespace(cluster, namespace)
    cluster.store.create(WAR_KEY, 'WorkloadAutoRegistration', {
      apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1',
      kind: 'WorkloadAutoRegistration',
      metadata: {name, namespace, ...(o.labels ? {labels: o.labels} : {}), ownerReferences: [owner]},
      spec: {
        identity: {aws: {partition: 'aws', account: '123456789012', zone: 'us-east-2b', ec2: {instance_id: `i-${name}`}}},
        registration: {agent: {version: o.agent ?? '1.4.0'}, sidecar: {istio: {version: o.sidecar ?? '1.24.2'}}},
      },
      status: {conditions: [{type: 'AgentConnected', status: 'True', lastTransitionTime: iso(HOUR)}]},
    })
    backdate(cluster, WAR_KEY, namespace, name, {created: 2 * HOUR})
  }
  const we = (namespace: string, name: string, o: {labels?: Record<string, string>; auto?: boolean; ownedBy?: string} = {}): void => {
    ensureNamespace(cluster, namespace)
    cluster.store.create(WE_KEY, 'WorkloadEntry', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {
        name,
        namespace,
        ...(o.labels ? {labels: o.labels} : {}),
        ...(o.auto === false ? {} : {annotations: {'istio.io/autoRegistrationGroup': 'g', 'istio.io/connectedAt': iso(HOUR)}}),
        ...(o.ownedBy
          ? {
              ownerReferences: [
                {apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1', kind: 'WorkloadAutoRegistration', name: o.ownedBy, uid: '00000000-0000-0000-0000-0000000000b2', controller: true},
              ],
            }
          : {}),
      },
      spec: {address: '10.0.0.1'},
    })
    backdate(cluster, WE_KEY, namespace, name, {created: 3 * HOUR})
  }
  /** NAMESPACE/NAME of each row (the header left out). */
  const rows = (stdout: string): string[] =>
    stdout
      .trimEnd()
      .split('\n')
      .slice(1)
      .map((l) => l.split(/\s+/).slice(0, 2).join('/'))

  // In etcd (and the test API server) keys are NAMESPACE/NAME, so each kind's list comes in byte order
  // of that key: team-a/… before team/… ('-' sorts before '/'). The table orders namespace, then name:
  // team before team-a, and the two kinds interleaved.
  const ORDER = [
    'apps/a-war',
    'team/dup', // a WAR and an auto-registered WorkloadEntry of the same name: the WAR first, as listed
    'team/dup',
    'team/war-a',
    'team/war-b',
    'team/war-c',
    'team/war-d',
    'team/zz',
    'team-a/m-1',
    'team-a/m-2',
    'team-a/m-3',
    'team-b/x',
    'zz-only-we/e-1',
    'zz-only-we/e-2',
  ]

  beforeAll(async () => {
    cluster = await startCluster()
    war('apps', 'a-war', {labels: {app: 'picked'}})
    war('team', 'dup')
    we('team', 'dup')
    we('team', 'war-a', {labels: {app: 'picked'}})
    war('team', 'war-b')
    we('team', 'war-c', {labels: {only: 'we'}})
    war('team', 'war-d', {labels: {app: 'picked'}})
    we('team', 'zz')
    war('team-a', 'm-1')
    we('team-a', 'm-2', {labels: {only: 'we'}})
    war('team-a', 'm-3')
    war('team-b', 'x')
    we('zz-only-we', 'e-1')
    we('zz-only-we', 'e-2')
    // Not registrations of their own: a WAR's WorkloadEntry, and one written by hand.
    we('team', 'war-b-we', {ownedBy: 'war-b'})
    we('apps', 'manual', {auto: false})
  })
  afterAll(() => cluster?.stop())

  it('is the same table for every --chunk-size: pages of 1, a kind that ends early, the other that goes on', async () => {
    const whole = await meshvm(['--chunk-size', '0'])
    expect(whole.code, whole.stderr).toBe(0)
    expect(rows(whole.stdout)).toEqual(ORDER)
    expectAligned(whole.stdout)
    for (const size of ['1', '2', '5', '500']) {
      const res = await meshvm(['--chunk-size', size])
      expect(res.code, res.stderr).toBe(0)
      expect(res.stdout, `--chunk-size ${size}`).toBe(whole.stdout)
    }
    const wide = await meshvm(['-o', 'wide', '--chunk-size', '3'])
    expect(rows(wide.stdout)).toEqual(ORDER)
    expectAligned(wide.stdout)
  })

  it.each([
    ['WorkloadAutoRegistrations', `${WAR_PATH}/workloadautoregistrations`],
    ['WorkloadEntries', WE_PATH],
  ])('a continue token of the %s list that expires (410 Gone) restarts that list: the same table, no row twice', async (_kind, path) => {
    const expected = (await meshvm(['--chunk-size', '0'])).stdout
    const before = cluster.requests.length
    const remove = cluster.faults.add({path, query: 'continue', expireContinue: true, times: 1})
    try {
      const res = await meshvm(['--chunk-size', '2'])
      expect(res.code, res.stderr).toBe(0)
      expect(res.stdout).toBe(expected)
      expect(
        cluster.requests
          .slice(before)
          .filter((r) => r.path === path)
          .map((r) => r.status),
      ).toContain(410)
    } finally {
      remove()
    }
  })

  it.each([
    ['both kinds', 'app=picked', ['apps/a-war', 'team/war-a', 'team/war-d']],
    ['WorkloadEntries only (no WAR matches)', 'only=we', ['team/war-c', 'team-a/m-2']],
    ['nothing', 'app=none', []],
  ])('-l selects on the API server: %s', async (_title, selector, expected) => {
    const res = await meshvm(['-l', selector, '--chunk-size', '1'])
    expect(res.code, res.stderr).toBe(0)
    if (expected.length === 0) {
      expect(res.stdout).toBe('')
      expect(res.stderr).toContain('No registrations found')
      return
    }
    expect(rows(res.stdout)).toEqual(expected)
    expectAligned(res.stdout)
  })

  it('shows control characters from the cluster as escapes, and aligns wide characters by their width (-o wide)', async () => {
    war('team-c', 'evil', {agent: 'v1\u001b]0;owned\u0007', sidecar: '名前-1.24'})
    war('team-c', 'plain')
    try {
      const res = await meshvm(['-o', 'wide', '--chunk-size', '1'])
      expect(res.code, res.stderr).toBe(0)
      expect(res.stdout).not.toMatch(/[\u0000-\u0008\u000b-\u001f\u007f-\u009f]/)
      const lines = res.stdout.trimEnd().split('\n')
      const evil = lines.find((l) => l.startsWith('team-c ') && l.includes(' evil '))!
      expect(evil).toContain('v1\\e]0;owned\\x07')
      expect(evil).toContain('名前-1.24')
      expect(rows(res.stdout)).toEqual([...ORDER.slice(0, 12), 'team-c/evil', 'team-c/plain', ...ORDER.slice(12)])
      // Every line's last column (SOURCE) starts at the same terminal column.
      const sourceColumn = (l: string): number => displayWidth(l.slice(0, l.lastIndexOf(' ') + 1))
      expect(new Set(lines.map(sourceColumn)).size).toBe(1)
    } finally {
      cluster.store.delete(WAR_KEY, 'team-c', 'evil')
      cluster.store.delete(WAR_KEY, 'team-c', 'plain')
    }
  })
})

// ---- no WAR CRD ------------------------------------------------------------------------------

describe.concurrent('meshvm war without the WorkloadAutoRegistration CRD', () => {
  let cluster: TestCluster
  const meshvm = (args: string[]) => runCommand(['war', ...args], {env: cluster.env})
  const NOTE = 'Note: the WorkloadAutoRegistration CRD (workloadautoregistrations.runtime.onboarding.tetrate.io) is not installed in this cluster: only auto-registered WorkloadEntries are shown.'

  beforeAll(async () => {
    cluster = await startCluster({crdFiles: [ISTIO_CRDS]})
    addGroup(cluster, 'legacy', 'web', {metadata: {labels: {app: 'web'}}, template: {serviceAccount: 'web'}})
    cluster.mesh.addVm({name: 'web-1', namespace: 'legacy', group: 'web', address: '10.0.0.7', connectedTo: ISTIOD})
  })
  afterAll(() => cluster?.stop())

  it('list shows the WorkloadEntries, with a note on stderr', async () => {
    const res = await meshvm(['list', '-n', 'legacy'])
    expect(res.code, res.stderr).toBe(0)
    expect(res.stderr).toBe(`${NOTE}\n`)
    expect(res.stdout).toMatch(/^NAME +AGENT CONNECTED +AGE\nweb-10\.0\.0\.7 +True +\S+\n$/)
  })

  it('list --source workloadentry says nothing about the CRD', async () => {
    const res = await meshvm(['list', '-n', 'legacy', '--source', 'workloadentry', '-o', 'name'])
    expect(res.code).toBe(0)
    expect(res.stderr).toBe('')
    expect(res.stdout).toBe('workloadentry.networking.istio.io/web-10.0.0.7\n')
  })

  it('list --source war is an error', async () => {
    expectCleanFailure(
      await meshvm(['list', '-n', 'legacy', '--source', 'war']),
      4,
      'Error: the WorkloadAutoRegistration CRD (workloadautoregistrations.runtime.onboarding.tetrate.io) is not installed in this cluster: there are no WorkloadAutoRegistrations to list',
    )
  })

  it('describe finds WorkloadEntries, and says where it looked', async () => {
    const ok = await meshvm(['describe', 'web-10.0.0.7', '-n', 'legacy'])
    expect(ok.code, ok.stderr).toBe(0)
    expect(ok.stdout).toMatch(/^Kind: +WorkloadEntry$/m)
    const missing = await meshvm(['describe', 'nope', '-n', 'legacy'])
    expectCleanFailure(missing, 4, 'Error: registration "nope" not found in namespace "legacy": no auto-registered WorkloadEntry has that name')
    expect(missing.stderr).toContain('Hint: the WorkloadAutoRegistration CRD (workloadautoregistrations.runtime.onboarding.tetrate.io) is not installed, so only WorkloadEntries were searched')
  })

  it('rollout without --restart-command never says "up to date" while auto-registered WorkloadEntries are stale: it lists them with what to run, exit 8', async () => {
    const res = await meshvm(['rollout', 'web', '-n', 'legacy'])
    const [note, ...rest] = res.stderr.split('\n')
    expect(note).toBe(NOTE.replace('are shown.', 'are rolled out.'))
    expectCleanFailure(
      {...res, stderr: rest.join('\n')},
      8,
      /^Error: 1 auto-registered WorkloadEntry of workloadgroup legacy\/web \(generation 1\) is stale and was not rolled out: istiod re-makes an entry from the group only when the VM's sidecar reconnects after the entry is deleted, and meshvm cannot restart a sidecar by itself$/m,
    )
    expect(res.stderr).toContain('Hint: web-10.0.0.7 (10.0.0.7): kubectl delete workloadentry web-10.0.0.7 -n legacy, then on that VM: sudo systemctl restart istio')
    expect(res.stderr).toContain(`meshvm war rollout web -n legacy --restart-command 'ssh "$MESHVM_VM_ADDRESS" sudo systemctl restart istio'`)
    expect(res.stderr).not.toMatch(/up to date|nothing to/)
    expect(res.stdout).toMatch(/^web-10\.0\.0\.7 +needs restart +- +delete the entry and restart the VM's sidecar \(or pass --restart-command\)$/m)
    expect(cluster.store.get(WE_KEY, 'legacy', 'web-10.0.0.7')).toBeDefined()
  })
})

// ---- delete, rollout, prune (they change the cluster) ------------------------------------------

describe('meshvm war delete / rollout / prune', () => {
  let cluster: TestCluster
  const meshvm = (args: string[], timeoutMs?: number) => runCommand(['war', ...args], {env: cluster.env, timeoutMs})
  /** What the simulated agents do after their WAR is deleted, by `namespace/name` (default: come back). */
  const agents = new Map<string, 'never' | 'unhealthy'>()
  const addresses = new Map<string, string>()
  /** Re-onboardings under way per namespace, and the most seen at once. */
  const inflight = new Map<string, number>()
  const maxInflight = new Map<string, number>()
  const warName = (ns: string, i: string) => `${ns}-aws-aws-123456789012-us-east-2b-ec2-i-${i}`

  function addWarVm(namespace: string, suffix: string, options: {stale?: boolean; connected?: boolean; healthy?: boolean} = {}): string {
    const name = warName(namespace, suffix)
    const address = `10.9.${addresses.size >> 8}.${addresses.size & 255}`
    addresses.set(`${namespace}/${name}`, address)
    cluster.mesh.addVm({
      name,
      namespace,
      group: 'ratings',
      address,
      source: 'war',
      stale: options.stale ?? false,
      ...(options.connected === false ? {disconnectedAgoMs: 30 * MIN} : {connectedTo: ISTIOD, healthy: options.healthy ?? true}),
    })
    return name
  }

  const war = (namespace: string, name: string) => cluster.store.get(WAR_KEY, namespace, name)
  /** The rollout's Lease of group ratings (its lock and its record of what it awaits). */
  const leaseOf = (namespace: string): KubeObj | undefined => cluster.store.get(LEASE_KEY, namespace, LEASE_NAME)
  const awaitingOf = (namespace: string): string | undefined => leaseOf(namespace)?.metadata.annotations?.[AWAITING]
  const holderOf = (namespace: string): string | undefined => (leaseOf(namespace)?.spec as {holderIdentity?: string} | undefined)?.holderIdentity
  /** The user's group is only read: no rollout.meshvm.io annotation ever lands on it. */
  const expectGroupClean = (namespace: string): void =>
    expect(Object.keys(cluster.store.get(WG_KEY, namespace, 'ratings')!.metadata.annotations ?? {}).filter((k) => k.startsWith('rollout.meshvm.io/'))).toEqual([])
  const isStale = (namespace: string, name: string): boolean => {
    const w = war(namespace, name)!
    const group = cluster.store.get(WG_KEY, namespace, 'ratings')!
    return JSON.stringify((w.status as {workloadGroupSnapshot?: unknown}).workloadGroupSnapshot) !== JSON.stringify(group.spec)
  }

  beforeAll(async () => {
    cluster = await startCluster()
    // The onboarding agents of namespaces roll-*: a deleted WAR comes back (from the current group spec) after a moment.
    cluster.store.onEvent((e) => {
      const ns = e.object.metadata.namespace ?? ''
      if (e.type !== 'DELETED' || e.resource !== WAR_KEY || !ns.startsWith('roll-')) return
      const key = `${ns}/${e.object.metadata.name}`
      const behaviour = agents.get(key)
      if (behaviour === 'never') return
      inflight.set(ns, (inflight.get(ns) ?? 0) + 1)
      maxInflight.set(ns, Math.max(maxInflight.get(ns) ?? 0, inflight.get(ns)!))
      setTimeout(() => {
        inflight.set(ns, inflight.get(ns)! - 1)
        cluster.mesh.addVm({name: e.object.metadata.name, namespace: ns, group: 'ratings', address: addresses.get(key)!, connectedTo: ISTIOD, healthy: behaviour !== 'unhealthy', source: 'war'})
      }, 150)
    })
  })
  afterAll(() => cluster?.stop())

  describe('delete', () => {
    beforeAll(() => {
      addGroup(cluster, 'del', 'ratings', ratingsSpec())
      for (const s of ['a', 'b', 'c', 'd']) addWarVm('del', s)
      addGroup(cluster, 'del', 'web', {metadata: {labels: {app: 'web'}}})
      cluster.mesh.addVm({name: 'web-1', namespace: 'del', group: 'web', address: '10.0.0.7', connectedTo: ISTIOD})
    })

    it('refuses without a terminal and without --yes, deleting nothing', async () => {
      const res = await meshvm(['delete', warName('del', 'a'), '-n', 'del'])
      expectCleanFailure(res, 2, 'Error: refusing to delete 1 registration(s) without confirmation: pass --yes (there is no terminal to ask in)')
      expect(war('del', warName('del', 'a'))).toBeDefined()
    })

    it('deletes nothing when one of the names does not exist', async () => {
      const res = await meshvm(['delete', warName('del', 'a'), 'nope', '-n', 'del', '--yes'])
      expectCleanFailure(res, 4, 'Error: registration "nope" not found in namespace "del": no WorkloadAutoRegistration or auto-registered WorkloadEntry has that name')
      expect(war('del', warName('del', 'a'))).toBeDefined()
    })

    it('--dry-run=server asks the API server and changes nothing', async () => {
      const res = await meshvm(['delete', warName('del', 'a'), '-n', 'del', '--dry-run=server'])
      expect(res.code, res.stderr).toBe(0)
      expect(res.stdout).toBe(`workloadautoregistration.runtime.onboarding.tetrate.io "${warName('del', 'a')}" deleted (server dry run)\n`)
      expect(war('del', warName('del', 'a'))).toBeDefined()
    })

    it('a bare --dry-run is client (as kubectl): the registrations are looked up, no DELETE is sent', async () => {
      const deletes = (): number => cluster.requests.filter((r) => r.method === 'DELETE').length
      const before = deletes()
      const res = await meshvm(['delete', warName('del', 'a'), '-n', 'del', '--dry-run'])
      expect(res.code, res.stderr).toBe(0)
      expect(res.stdout).toBe(`workloadautoregistration.runtime.onboarding.tetrate.io "${warName('del', 'a')}" deleted (dry run)\n`)
      expect(deletes()).toBe(before)
      const bad = await meshvm(['delete', warName('del', 'a'), '-n', 'del', '--dry-run=maybe'])
      expect(bad.code).toBe(2)
      expect(bad.stderr.split('\n')[0]).toBe('Error: --dry-run "maybe": expected one of none, client, server')
    })

    it('-o name output feeds back: war list -o name | xargs war delete --dry-run=client (TYPE/NAME arguments)', async () => {
      const list = await meshvm(['list', '-n', 'del', '-o', 'name'])
      expect(list.code, list.stderr).toBe(0)
      const names = list.stdout.trim().split('\n')
      expect(names).toContain(`workloadautoregistration.runtime.onboarding.tetrate.io/${warName('del', 'a')}`)
      expect(names).toContain('workloadentry.networking.istio.io/web-10.0.0.7')
      const res = await meshvm(['delete', ...names, '-n', 'del', '--dry-run=client'])
      expect(res.code, res.stderr).toBe(0)
      expect(res.stdout.trim().split('\n')).toEqual(names.map((n) => `${n.replace('/', ' "')}" deleted (dry run)`))
      const described = await meshvm(['describe', `we/web-10.0.0.7`, '-n', 'del'])
      expect(described.code, described.stderr).toBe(0)
      expect(described.stdout).toMatch(/^Name: +web-10\.0\.0\.7$/m)
    })

    it('TYPE/NAME: the type is honoured, and an unknown type is a usage error', async () => {
      const wrong = await meshvm(['delete', `workloadentry/${warName('del', 'a')}`, '-n', 'del', '--dry-run'])
      expect(wrong.code).toBe(4)
      const bad = await meshvm(['delete', 'pod/x', '-n', 'del', '--dry-run'])
      expectCleanFailure(bad, 2, 'Error: "pod/x": unknown TYPE "pod"; expected NAME, or workloadautoregistration/NAME or workloadentry/NAME (as -o name prints them)')
    })

    it('--yes deletes WARs (and, through the API server, their WorkloadEntries) and auto-registered WorkloadEntries, explaining the re-onboard', async () => {
      const a = warName('del', 'a')
      const b = warName('del', 'b')
      const res = await meshvm(['delete', a, b, 'web-10.0.0.7', '-n', 'del', '--yes'])
      expect(res.code, res.stderr).toBe(0)
      expect(res.stdout).toBe(
        [
          `workloadautoregistration.runtime.onboarding.tetrate.io "${a}" deleted`,
          `workloadautoregistration.runtime.onboarding.tetrate.io "${b}" deleted`,
          'workloadentry.networking.istio.io "web-10.0.0.7" deleted',
          '',
        ].join('\n'),
      )
      expect(res.stderr).toMatch(/^The onboarding agent on each VM re-onboards its workload/)
      for (const name of [a, b]) {
        expect(war('del', name)).toBeUndefined()
        expect(cluster.store.get(WE_KEY, 'del', name)).toBeUndefined()
      }
      expect(cluster.store.get(WE_KEY, 'del', 'web-10.0.0.7')).toBeUndefined()
    })

    it('asks in a terminal, explaining that the agent re-onboards; "n" keeps, "y" deletes', async () => {
      const ask = async (name: string, answer: string): Promise<{code: number; screen: string}> => {
        let buffer = ''
        const pty = spawnPty(process.execPath, [BIN, 'war', 'delete', name, '-n', 'del'], {
          cols: 200,
          rows: 50,
          cwd: REPO_ROOT,
          env: {...process.env, ...cluster.env, NO_COLOR: '1', TERM: 'xterm'} as Record<string, string>,
        })
        const exited = new Promise<number>((resolve) => pty.onExit(({exitCode}) => resolve(exitCode)))
        pty.onData((d) => (buffer += d))
        const start = Date.now()
        while (!stripAnsi(buffer).includes('Delete 1 registration(s)?')) {
          if (Date.now() - start > 15_000) throw new Error(`no prompt; screen:\n${buffer}`)
          await new Promise((r) => setTimeout(r, 20))
        }
        pty.write(answer)
        const code = await exited
        const screen = stripAnsi(buffer).replace(/\r/g, '')
        logRun({args: ['war', 'delete', name], stdout: screen, stderr: '', stdoutMayHoldSecrets: false})
        return {code, screen}
      }
      const c = warName('del', 'c')
      const no = await ask(c, 'n\r')
      expect(no.code).toBe(0)
      expect(no.screen).toContain(`workloadautoregistration.runtime.onboarding.tetrate.io/${c}`)
      expect(no.screen).toContain('The onboarding agent on each VM re-onboards its workload')
      expect(no.screen).toContain('Nothing was deleted.')
      expect(war('del', c)).toBeDefined()
      const yes = await ask(c, 'y\r')
      expect(yes.code).toBe(0)
      expect(yes.screen).toContain(`workloadautoregistration.runtime.onboarding.tetrate.io "${c}" deleted`)
      expect(war('del', c)).toBeUndefined()
    })
  })

  describe('rollout', () => {
    it('--dry-run prints the plan and changes nothing', async () => {
      addGroup(cluster, 'roll-dry', 'ratings', ratingsSpec())
      const names = [addWarVm('roll-dry', 'b', {stale: true}), addWarVm('roll-dry', 'a', {stale: true}), addWarVm('roll-dry', 'c'), addWarVm('roll-dry', 'd', {stale: true, connected: false})]
      const uids = names.map((n) => war('roll-dry', n)!.metadata.uid)
      const res = await meshvm(['rollout', 'ratings', '-n', 'roll-dry', '--dry-run'])
      expect(res.code, res.stderr).toBe(0)
      expect(res.stdout).toBe(
        [
          'STEP   NAME                                               AGENT CONNECTED   ACTION',
          `1      ${warName('roll-dry', 'a')}   True              re-onboard`,
          `2      ${warName('roll-dry', 'b')}   True              re-onboard`,
          `-      ${warName('roll-dry', 'd')}   False             skip (agent not connected)`,
          '',
        ].join('\n'),
      )
      expect(res.stderr).toBe('Dry run: 2 of 4 registration(s) of workloadgroup roll-dry/ratings would be re-onboarded, up to 1 at a time, 1 skipped (agent not connected); nothing was changed.\n')
      expect(names.map((n) => war('roll-dry', n)!.metadata.uid)).toEqual(uids)
      const json = await meshvm(['rollout', 'ratings', '-n', 'roll-dry', '--dry-run', '-o', 'json'])
      expect(JSON.parse(json.stdout)).toMatchObject({namespace: 'roll-dry', group: 'ratings', registrations: 4, upToDate: 1, stale: 3, status: 'planned'})
    })

    it('--dry-run is none|client|server as on every command: server has the API server check each delete (dryRun=All), changing nothing', async () => {
      addGroup(cluster, 'roll-srv', 'ratings', ratingsSpec())
      const names = [addWarVm('roll-srv', 'a', {stale: true}), addWarVm('roll-srv', 'b')]
      const uids = names.map((n) => war('roll-srv', n)!.metadata.uid)
      const before = cluster.requests.length
      const [client, server] = await Promise.all([meshvm(['rollout', 'ratings', '-n', 'roll-srv', '--dry-run=client']), meshvm(['rollout', 'ratings', '-n', 'roll-srv', '--dry-run=server'])])
      expect(client.code, client.stderr).toBe(0)
      expect(server.code, server.stderr).toBe(0)
      expect(server.stdout).toBe(client.stdout)
      expect(server.stderr).toBe(
        'Dry run (server: the API server accepted every delete): 1 of 2 registration(s) of workloadgroup roll-srv/ratings would be re-onboarded, up to 1 at a time; nothing was changed.\n',
      )
      const deletes = cluster.requests.slice(before).filter((r) => r.method === 'DELETE' && r.path.includes('/namespaces/roll-srv/'))
      expect(deletes.map((r) => [r.path.split('/').pop(), r.query])).toEqual([[names[0], '?dryRun=All']])
      expect(names.map((n) => war('roll-srv', n)!.metadata.uid)).toEqual(uids)
      // Without the delete verb, the server dry run says so (exit 5); the client one cannot know.
      const token = cluster.addUser('rollout-dry-reader', {rules: [{verbs: ['get', 'list'], apiGroups: ['*'], resources: ['*']}]})
      const ro = await runCommand(['war', 'rollout', 'ratings', '-n', 'roll-srv', '--dry-run=server'], {env: {...cluster.env, KUBECONFIG: cluster.kubeconfigFor(token)}})
      expectCleanFailure(
        ro,
        5,
        /^Error: server dry run of workloadgroup roll-srv\/ratings \(generation 1\): the API server refused to delete WorkloadAutoRegistration .*forbidden: missing permission to delete workloadautoregistrations/m,
      )
      const bad = await meshvm(['rollout', 'ratings', '-n', 'roll-srv', '--dry-run=maybe'])
      expect(bad.code).toBe(2)
      expect(firstLine(bad.stderr)).toBe('Error: --dry-run "maybe": expected one of none, client, server')
    })

    it('re-onboards the stale registrations, at most --max-unavailable at a time, and skips disconnected ones', async () => {
      addGroup(cluster, 'roll-ok', 'ratings', ratingsSpec())
      const stale = ['a', 'b', 'c', 'd', 'e'].map((s) => addWarVm('roll-ok', s, {stale: true}))
      const fresh = addWarVm('roll-ok', 'f')
      const away = addWarVm('roll-ok', 'g', {stale: true, connected: false})
      const freshUid = war('roll-ok', fresh)!.metadata.uid
      const res = await meshvm(['rollout', 'ratings', '-n', 'roll-ok', '--max-unavailable', '2', '--poll-interval', '100ms'], 60_000)
      expect(res.stderr).not.toMatch(STACK_TRACE)
      expect(res.code, res.stderr).toBe(0)
      const lines = res.stdout.trimEnd().split('\n')
      expect(lines[0]).toMatch(/^NAME +RESULT +TIME +DETAIL$/)
      for (const name of stale) expect(res.stdout).toMatch(new RegExp(`^${name} +re-onboarded +\\d+\\.\\ds +connected to onboarding-plane-${ISTIOD}, healthy$`, 'm'))
      expect(res.stdout).toMatch(new RegExp(`^${away} +skipped +- +agent not connected`, 'm'))
      // Progress on stderr, in order, ending with the summary.
      expect(firstLine(res.stderr)).toBe('Rolling out workloadgroup roll-ok/ratings (generation 1): 6 of 7 registration(s) are stale; re-onboarding 5, up to 2 at a time, waiting up to 5m for each')
      expect(res.stderr).toContain(`Warning: skipping ${away}: its agent is not connected`)
      expect(res.stderr).toMatch(new RegExp(`^\\[1/5\\] deleted ${stale[0]}; waiting for its agent to re-onboard it$`, 'm'))
      expect(res.stderr.trimEnd().split('\n').pop()).toBe('Rollout of workloadgroup roll-ok/ratings complete: 5 re-onboarded, 1 already up to date, 1 skipped (agent not connected).')
      expect(maxInflight.get('roll-ok')).toBe(2)
      for (const name of stale) expect(isStale('roll-ok', name)).toBe(false)
      expect(war('roll-ok', fresh)!.metadata.uid).toBe(freshUid)
      expect(isStale('roll-ok', away)).toBe(true)
      // Nothing left to do: a second run changes nothing.
      const again = await meshvm(['rollout', 'ratings', '-n', 'roll-ok'])
      expect(again.code, again.stderr).toBe(0)
      expect(again.stdout).toContain('skip (agent not connected)')
      expect(again.stderr).toContain('Nothing to re-onboard in workloadgroup roll-ok/ratings: 6 of 7 registration(s) up to date, 1 skipped (agent not connected).')
    })

    it('stops at a VM that never reconnects, reports every registration, and resumes where it stopped', async () => {
      addGroup(cluster, 'roll-stuck', 'ratings', ratingsSpec())
      const [a, b, c] = ['a', 'b', 'c'].map((s) => addWarVm('roll-stuck', s, {stale: true}))
      agents.set(`roll-stuck/${b}`, 'never')
      const cUid = war('roll-stuck', c!)!.metadata.uid
      // The resume line keeps the user's --context (and -n): it must act on the same cluster.
      const res = await meshvm(['rollout', 'ratings', '-n', 'roll-stuck', '--context', cluster.contextName, '--timeout', '2s', '--poll-interval', '100ms'], 60_000)
      expectCleanFailure(res, 9, /^Rolling out workloadgroup roll-stuck\/ratings/)
      expect(res.stderr).toContain(`Error: rollout of workloadgroup roll-stuck/ratings (generation 1) stopped: ${b} did not come back connected within 2s`)
      expect(res.stderr).toContain(
        `Hint: re-run "meshvm war rollout --context ${cluster.contextName} ratings -n roll-stuck" to continue: registrations already re-onboarded are up to date and are not touched again (1 not started)`,
      )
      expect(res.stdout).toMatch(new RegExp(`^${a} +re-onboarded +`, 'm'))
      expect(res.stdout).toMatch(new RegExp(`^${b} +timed out +\\d+\\.\\ds +not back connected within 2s: the agent has not re-registered the workload$`, 'm'))
      expect(res.stdout).toMatch(new RegExp(`^${c} +not started +-$`, 'm'))
      expect(war('roll-stuck', b!)).toBeUndefined()
      expect(war('roll-stuck', c!)!.metadata.uid).toBe(cUid)
      // b is remembered as deleted and not back, for the next run.
      expect(awaitingOf('roll-stuck')).toBe(JSON.stringify([b]))
      expect(holderOf('roll-stuck')).toBeUndefined()
      expectGroupClean('roll-stuck')
      expect(res.stderr).toContain(
        `Hint: the re-run first waits for the 1 deleted registration(s) not back yet, listed in annotation ${AWAITING} of its lease; if a VM is gone for good, remove its name there (kubectl edit lease ${LEASE_NAME} -n roll-stuck)`,
      )
      // A WorkloadAutoRegistration comes back through the TSB onboarding agent: that is where to look.
      expect(res.stderr).toContain(`Hint: check the onboarding agent (journalctl -u onboarding-agent) on VM ${b}, or raise --timeout\n`)

      // The VM comes back later; re-running re-onboards only what is still stale.
      agents.delete(`roll-stuck/${b}`)
      cluster.mesh.addVm({name: b!, namespace: 'roll-stuck', group: 'ratings', address: addresses.get(`roll-stuck/${b}`)!, connectedTo: ISTIOD, healthy: true, source: 'war'})
      const aUid = war('roll-stuck', a!)!.metadata.uid
      const resumed = await meshvm(['rollout', 'ratings', '-n', 'roll-stuck', '--timeout', '10s', '--poll-interval', '100ms', '-o', 'json'], 60_000)
      expect(resumed.code, resumed.stderr).toBe(0)
      const report = JSON.parse(resumed.stdout) as {status: string; upToDate: number; items: {name: string; result: string}[]}
      expect(report).toMatchObject({status: 'complete', upToDate: 2})
      expect(report.items.map((i) => [i.name, i.result])).toEqual([[c, 're-onboarded']])
      expect(war('roll-stuck', a!)!.metadata.uid).toBe(aUid)
      for (const name of [a!, b!, c!]) expect(isStale('roll-stuck', name)).toBe(false)
      expect(awaitingOf('roll-stuck')).toBeUndefined()
      expectGroupClean('roll-stuck')
    })

    it('fails with exit 8 when a workload comes back connected but unhealthy', async () => {
      addGroup(cluster, 'roll-sick', 'ratings', ratingsSpec())
      const a = addWarVm('roll-sick', 'a', {stale: true})
      agents.set(`roll-sick/${a}`, 'unhealthy')
      const res = await meshvm(['rollout', 'ratings', '-n', 'roll-sick', '--timeout', '1s', '--poll-interval', '100ms'], 60_000)
      expectCleanFailure(res, 8, /^Rolling out workloadgroup roll-sick\/ratings/)
      expect(res.stderr).toContain(`Error: rollout of workloadgroup roll-sick/ratings (generation 1) stopped: ${a} came back but is not healthy within 1s`)
      expect(res.stdout).toMatch(
        new RegExp(`^${a} +unhealthy +\\S+ +after 1s: connected to onboarding-plane-${ISTIOD}, but not healthy \\(HTTPGetFailed: Get "http://127.0.0.1:8080/ready": connection refused\\)$`, 'm'),
      )
    })

    it('stops with exit 5 and a report when it may not delete registrations', async () => {
      addGroup(cluster, 'roll-ro', 'ratings', ratingsSpec())
      const a = addWarVm('roll-ro', 'a', {stale: true})
      // It may write its Lease (to record what it is about to delete), so the delete is what fails.
      const token = cluster.addUser('rollout-reader', {
        rules: [
          {verbs: ['get', 'list'], apiGroups: ['*'], resources: ['*']},
          {verbs: ['create', 'get', 'update'], apiGroups: ['coordination.k8s.io'], resources: ['leases']},
        ],
      })
      const res = await runCommand(['war', 'rollout', 'ratings', '-n', 'roll-ro'], {env: {...cluster.env, KUBECONFIG: cluster.kubeconfigFor(token)}})
      expectCleanFailure(res, 5, /^Rolling out workloadgroup roll-ro\/ratings/)
      expect(res.stderr).toContain(
        `Error: rollout of workloadgroup roll-ro/ratings (generation 1) stopped: could not delete ${a}: forbidden: missing permission to delete workloadautoregistrations.runtime.onboarding.tetrate.io in namespace "roll-ro"`,
      )
      expect(res.stdout).toMatch(new RegExp(`^${a} +failed +- +delete failed: forbidden`, 'm'))
      expect(war('roll-ro', a)).toBeDefined()
      // Not deleted, so not awaited: the name recorded before the delete was taken out again.
      expect(awaitingOf('roll-ro')).toBeUndefined()
      expectGroupClean('roll-ro')
    })

    it('stops with exit 5 before deleting anything when it may not write its Lease (which records what it deletes), naming the permission', async () => {
      addGroup(cluster, 'roll-nolease', 'ratings', ratingsSpec())
      const a = addWarVm('roll-nolease', 'a', {stale: true})
      const uid = war('roll-nolease', a)!.metadata.uid
      // Everything but writing leases; patching workloadgroups is allowed and not needed.
      const token = cluster.addUser('rollout-nolease', {
        rules: [
          {verbs: ['get', 'list', 'delete'], apiGroups: ['*'], resources: ['*']},
          {verbs: ['patch', 'update'], apiGroups: ['networking.istio.io'], resources: ['workloadgroups']},
        ],
      })
      const res = await runCommand(['war', 'rollout', 'ratings', '-n', 'roll-nolease'], {env: {...cluster.env, KUBECONFIG: cluster.kubeconfigFor(token)}})
      expectCleanFailure(res, 5, /^Error: rollout of workloadgroup roll-nolease\/ratings \(generation 1\) stopped before deleting anything: could not take its lease/)
      expect(res.stderr).toContain(
        `Error: rollout of workloadgroup roll-nolease/ratings (generation 1) stopped before deleting anything: could not take its lease (lease roll-nolease/${LEASE_NAME}): forbidden: missing permission to create leases.coordination.k8s.io in namespace "roll-nolease"\n`,
      )
      expect(res.stderr).toContain('Hint: ask a cluster admin for a Role in namespace roll-nolease allowing verb "create" on "leases.coordination.k8s.io"')
      expect(res.stderr).not.toContain('workloadgroups')
      // Nothing was deleted, or even tried; nothing was written to the group.
      expect(war('roll-nolease', a)!.metadata.uid).toBe(uid)
      expect(cluster.requests.some((r) => r.method === 'DELETE' && r.path.includes('/namespaces/roll-nolease/'))).toBe(false)
      expect(cluster.requests.some((r) => r.method !== 'GET' && r.path.includes('/namespaces/roll-nolease/workloadgroups'))).toBe(false)
      expect(leaseOf('roll-nolease')).toBeUndefined()
    })

    it('two runs on one group: the second is refused while the first holds the lease, told who holds it, and never deletes anything', async () => {
      const ns = 'roll-lease'
      addGroup(cluster, ns, 'ratings', ratingsSpec())
      const [a, b, c] = ['a', 'b', 'c'].map((x) => addWarVm(ns, x, {stale: true})) as [string, string, string]
      agents.set(`${ns}/${a}`, 'never')
      const first = startCli(['war', 'rollout', 'ratings', '-n', ns, '--poll-interval', '100ms', '--timeout', '20s'], cluster.env)
      try {
        await waitUntil(() => first.stderr.includes(`[1/3] deleted ${a}; waiting`), `${a} to be deleted`, 15_000)
        const spec = leaseOf(ns)!.spec as {holderIdentity: string; leaseDurationSeconds: number; renewTime: string; acquireTime: string}
        const lease = {holder: spec.holderIdentity}
        expect(lease.holder).toMatch(/ pid \d+$/)
        expect(spec.leaseDurationSeconds).toBe(60)
        // Kubernetes' MicroTime, as client-go writes it.
        expect(spec.renewTime).toMatch(/^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$/)
        expectGroupClean(ns)
        const deletesBefore = cluster.requests.filter((r) => r.method === 'DELETE' && r.path.includes(`/namespaces/${ns}/`)).length
        const second = await meshvm(['rollout', 'ratings', '-n', ns, '--max-unavailable', '3'])
        const escaped = JSON.stringify(lease.holder).replace(/[.*+?^${}()|[\]\\]/g, '\\$&')
        expectCleanFailure(second, 6, new RegExp(`^Error: another rollout of workloadgroup ${ns}/ratings is in progress: ${escaped} holds its lease \\(since \\S+, renewed \\S+\\)$`))
        expect(second.stderr).toContain('Hint: wait for it to finish: two rollouts of one group would together take down more than --max-unavailable workloads')
        expect(cluster.requests.filter((r) => r.method === 'DELETE' && r.path.includes(`/namespaces/${ns}/`)).length).toBe(deletesBefore)
      } finally {
        agents.delete(`${ns}/${a}`)
        cluster.mesh.addVm({name: a, namespace: ns, group: 'ratings', address: addresses.get(`${ns}/${a}`)!, connectedTo: ISTIOD, healthy: true, source: 'war'})
      }
      expect(await first.exited, first.stderr).toBe(0)
      // The first run's record is intact, it finished all three, and it gave the lease back.
      expect(maxInflight.get(ns) ?? 0).toBeLessThanOrEqual(1)
      for (const name of [a, b, c]) expect(isStale(ns, name)).toBe(false)
      expect(holderOf(ns)).toBeUndefined()
      expect(awaitingOf(ns)).toBeUndefined()
      expectGroupClean(ns)
    })

    it('a live lease of another run refuses (exit 6, with the holder and when it expires); an expired one is taken over', async () => {
      const ns = 'roll-lease2'
      addGroup(cluster, ns, 'ratings', ratingsSpec())
      const a = addWarVm(ns, 'a', {stale: true})
      // Another run's Lease, as client-go would have left it.
      const setLease = (renewAgoMs: number) => {
        const renewTime = new Date(Date.now() - renewAgoMs).toISOString()
        const spec = {holderIdentity: 'alice@laptop pid 4242', acquireTime: '2026-01-01T00:00:00Z', renewTime, leaseDurationSeconds: 60, leaseTransitions: 0}
        const existing = leaseOf(ns)
        if (existing) cluster.store.update(LEASE_KEY, {...existing, spec})
        else cluster.store.create(LEASE_KEY, 'Lease', {apiVersion: 'coordination.k8s.io/v1', kind: 'Lease', metadata: {name: LEASE_NAME, namespace: ns}, spec})
        return renewTime
      }
      const renewTime = setLease(1000)
      const refused = await meshvm(['rollout', 'ratings', '-n', ns])
      expectCleanFailure(refused, 6, `Error: another rollout of workloadgroup ${ns}/ratings is in progress: "alice@laptop pid 4242" holds its lease (since 2026-01-01T00:00:00Z, renewed ${renewTime})`)
      expect(refused.stderr).toContain(
        `Hint: if that run was killed, its lease expires at ${new Date(Date.parse(renewTime) + 60_000).toISOString()}; a new run takes over after that (or release it: kubectl patch lease ${LEASE_NAME} -n ${ns} --type merge -p '{"spec":{"holderIdentity":null}}')`,
      )
      expect(war(ns, a)).toBeDefined()
      expect(isStale(ns, a)).toBe(true)
      // --dry-run only warns.
      const dry = await meshvm(['rollout', 'ratings', '-n', ns, '--dry-run'])
      expect(dry.code).toBe(0)
      expect(dry.stderr).toContain('Warning: another rollout of workloadgroup')
      setLease(61_000)
      const ok = await meshvm(['rollout', 'ratings', '-n', ns, '--poll-interval', '100ms'], 60_000)
      expect(ok.code, ok.stderr).toBe(0)
      expect(isStale(ns, a)).toBe(false)
      // Taken over (one more transition) and given back.
      expect(holderOf(ns)).toBeUndefined()
      expect((leaseOf(ns)!.spec as {leaseTransitions: number}).leaseTransitions).toBe(1)
      expectGroupClean(ns)
    })

    it('records each registration in its Lease before deleting it, and removes it once it is back', async () => {
      const ns = 'roll-note'
      addGroup(cluster, ns, 'ratings', ratingsSpec())
      const [a, b] = ['a', 'b'].map((s) => addWarVm(ns, s, {stale: true})) as [string, string]
      // Every value the annotation takes, in order (undefined: absent); renewals of the lease do not change it.
      const history: (string | undefined)[] = []
      let last: string | undefined | null = null
      const stop = cluster.store.onEvent((e) => {
        if (e.resource !== LEASE_KEY || e.object.metadata.namespace !== ns) return
        const value = e.object.metadata.annotations?.[AWAITING]
        if (value !== last) history.push(value)
        last = value
      })
      // a's agent is held back, so the test can look at the cluster while a is in flight.
      agents.set(`${ns}/${a}`, 'never')
      try {
        const run = startCli(['war', 'rollout', 'ratings', '-n', ns, '--poll-interval', '100ms', '-o', 'json'], cluster.env)
        await waitUntil(() => run.stderr.includes(`[1/2] deleted ${a}; waiting`), `${a} to be deleted`, 15_000)
        expect(war(ns, a)).toBeUndefined()
        expect(awaitingOf(ns)).toBe(JSON.stringify([a]))
        // Recorded before the delete was sent.
        const patch = cluster.requests.findIndex((r) => r.method === 'PUT' && r.path === `/apis/coordination.k8s.io/v1/namespaces/${ns}/leases/${LEASE_NAME}`)
        const del = cluster.requests.findIndex((r) => r.method === 'DELETE' && r.path === `${WAR_PATH}/namespaces/${ns}/workloadautoregistrations/${a}`)
        expect(patch).toBeGreaterThanOrEqual(0)
        expect(patch).toBeLessThan(del)
        // a's agent re-onboards it; the rollout goes on with b and finishes.
        agents.delete(`${ns}/${a}`)
        cluster.mesh.addVm({name: a, namespace: ns, group: 'ratings', address: addresses.get(`${ns}/${a}`)!, connectedTo: ISTIOD, healthy: true, source: 'war'})
        const code = await run.exited
        expect(code, run.stderr).toBe(0)
        expect(JSON.parse(run.stdout)).toMatchObject({
          status: 'complete',
          awaited: 0,
          items: [
            {name: a, result: 're-onboarded'},
            {name: b, result: 're-onboarded'},
          ],
        })
      } finally {
        stop()
      }
      // Created holding nothing, then a, then nothing, then b, then nothing.
      expect(history).toEqual([undefined, JSON.stringify([a]), undefined, JSON.stringify([b]), undefined])
      expect(awaitingOf(ns)).toBeUndefined()
      // The group is never written: same resourceVersion and generation as before the run, no annotation.
      expect(cluster.store.get(WG_KEY, ns, 'ratings')!.metadata.generation).toBe(1)
      expect(cluster.requests.some((r) => r.method !== 'GET' && r.path.includes(`/namespaces/${ns}/workloadgroups`))).toBe(false)
      expectGroupClean(ns)
    })

    it('--dry-run lists the registrations an earlier run deleted that are not back yet, and changes nothing', async () => {
      const ns = 'roll-await-dry'
      ensureNamespace(cluster, ns)
      const [gone, back, stale] = [warName(ns, 'x'), warName(ns, 'y'), warName(ns, 'z')]
      cluster.store.create(WG_KEY, 'WorkloadGroup', {
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        metadata: {name: 'ratings', namespace: ns},
        spec: ratingsSpec(),
      })
      // An earlier run's Lease, released, still listing what it awaits.
      cluster.store.create(LEASE_KEY, 'Lease', {
        apiVersion: 'coordination.k8s.io/v1',
        kind: 'Lease',
        metadata: {name: LEASE_NAME, namespace: ns, annotations: {[AWAITING]: JSON.stringify([gone, back])}},
        spec: {leaseDurationSeconds: 1, renewTime: '2026-01-01T00:00:00.000000Z', acquireTime: '2026-01-01T00:00:00.000000Z', leaseTransitions: 0},
      })
      // back: re-registered from the current spec, connected and healthy; gone: not re-registered; stale: an ordinary stale one.
      addWarVm(ns, 'y')
      addWarVm(ns, 'z', {stale: true})
      const versions = () => [WG_KEY, WAR_KEY, WE_KEY, LEASE_KEY].flatMap((key) => cluster.store.list(key, ns).map((o) => `${o.metadata.name}@${o.metadata.resourceVersion}`))
      const before = versions()
      const requests = cluster.requests.length
      const res = await meshvm(['rollout', 'ratings', '-n', ns, '--dry-run'])
      expect(res.code, res.stderr).toBe(0)
      expect(res.stdout).toBe(
        [
          'STEP   NAME                                                     AGENT CONNECTED   ACTION',
          `1      ${gone}   Unknown           wait (deleted by an earlier rollout)`,
          `2      ${stale}   True              re-onboard`,
          '',
        ].join('\n'),
      )
      expect(res.stderr).toBe(
        `Dry run: 1 of 2 registration(s) of workloadgroup ${ns}/ratings would be re-onboarded, up to 1 at a time, after waiting for 1 deleted by an earlier rollout and not back yet; nothing was changed.\n`,
      )
      const json = await meshvm(['rollout', 'ratings', '-n', ns, '--dry-run', '-o', 'json'])
      expect(json.code, json.stderr).toBe(0)
      expect(JSON.parse(json.stdout)).toMatchObject({
        status: 'planned',
        registrations: 2,
        upToDate: 1,
        stale: 1,
        awaited: 1,
        items: [
          {name: gone, result: 'planned', deletedEarlier: true, step: 1},
          {name: stale, result: 'planned', step: 2},
        ],
      })
      // Nothing changed, and nothing but reads was sent.
      expect(versions()).toEqual(before)
      expect(awaitingOf(ns)).toBe(JSON.stringify([gone, back]))
      expect(cluster.requests.slice(requests).filter((r) => r.method !== 'GET' && r.path.includes(`/namespaces/${ns}/`))).toEqual([])
      expect(cluster.requests.slice(requests).some((r) => r.method === 'GET' && r.path.includes(`/namespaces/${ns}/`))).toBe(true)
    })

    it('an awaiting list an older meshvm left on the group is carried over (and the way to remove it said); a dry run without permission to read leases still plans', async () => {
      const ns = 'roll-legacy'
      ensureNamespace(cluster, ns)
      const [gone, stale] = [warName(ns, 'x'), warName(ns, 'z')]
      cluster.store.create(WG_KEY, 'WorkloadGroup', {
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        metadata: {name: 'ratings', namespace: ns, annotations: {[AWAITING]: JSON.stringify([gone])}},
        spec: ratingsSpec(),
      })
      addWarVm(ns, 'z', {stale: true})
      const res = await meshvm(['rollout', 'ratings', '-n', ns, '--dry-run', '-o', 'json'])
      expect(res.code, res.stderr).toBe(0)
      expect(JSON.parse(res.stdout)).toMatchObject({
        awaited: 1,
        items: [
          {name: gone, deletedEarlier: true, step: 1},
          {name: stale, step: 2},
        ],
      })
      expect(res.stderr).toContain(
        `Warning: workloadgroup ${ns}/ratings carries annotation ${AWAITING} from an older meshvm: its registrations are awaited and kept in lease ${ns}/${LEASE_NAME} from now on; remove it from the group: kubectl annotate workloadgroup ratings -n ${ns} ${AWAITING}- rollout.meshvm.io/lease-\n`,
      )
      // Someone who may read WorkloadGroups and WARs but not leases: the plan, and what it cannot see.
      const token = cluster.addUser('rollout-no-lease-read', {rules: [{verbs: ['get', 'list'], apiGroups: ['networking.istio.io', 'runtime.onboarding.tetrate.io', ''], resources: ['*']}]})
      const dry = await runCommand(['war', 'rollout', 'ratings', '-n', ns, '--dry-run'], {env: {...cluster.env, KUBECONFIG: cluster.kubeconfigFor(token)}})
      expect(dry.code, dry.stderr).toBe(0)
      expect(dry.stderr).toMatch(
        /^Warning: forbidden: missing permission to get leases\.coordination\.k8s\.io in namespace "roll-legacy".*: registrations an earlier rollout deleted and that are not back yet are not shown$/m,
      )
      expect(dry.stdout).toContain(stale)
    })

    it.each([
      ['no such group', ['rollout', 'nope', '-n', 'roll-ok'], 4, 'Error: workloadgroup "nope" not found in namespace "roll-ok"'],
      ['a bad --timeout', ['rollout', 'ratings', '-n', 'roll-ok', '--timeout', 'soon'], 2, 'Error: --timeout "soon": expected a duration such as 10s, 1m or 500ms, at most 596h (24.8 days)'],
      ['--max-unavailable 0', ['rollout', 'ratings', '-n', 'roll-ok', '--max-unavailable', '0'], 2, /^Error: .*max-unavailable/i],
      ['no group', ['rollout'], 2, /^Error: missing GROUP: the WorkloadGroup whose workloads to re-onboard$/],
      // The shared -o flag: the same one-line message as every listing command.
      ['a format a report has not', ['rollout', 'ratings', '-n', 'roll-ok', '-o', 'name'], 2, 'Error: -o/--output "name": expected one of table, json, yaml'],
    ])('%s', async (_title, args, exit, first) => {
      expectCleanFailure(await meshvm(args), exit, first)
    })
  })

  describe('prune', () => {
    const ns = 'prune'
    beforeAll(() => {
      addGroup(cluster, ns, 'ratings', ratingsSpec())
      const vms: [string, number | undefined][] = [
        ['connected', undefined],
        ['away-1m', MIN],
        ['away-10m', 10 * MIN],
        ['away-9h', 9 * HOUR],
      ]
      for (const [suffix, ago] of vms) {
        const name = warName(ns, suffix)
        cluster.mesh.addVm({name, namespace: ns, group: 'ratings', address: `10.8.0.${suffix.length}`, source: 'war', ...(ago === undefined ? {connectedTo: ISTIOD} : {disconnectedAgoMs: ago})})
        backdate(cluster, WAR_KEY, ns, name, {created: 26 * HOUR, ...(ago === undefined ? {} : {transition: ago})})
      }
      addGroup(cluster, ns, 'web', {metadata: {labels: {app: 'web'}}})
      cluster.mesh.addVm({name: 'w1', namespace: ns, group: 'web', address: '10.0.1.1', connectedTo: ISTIOD})
      cluster.mesh.addVm({name: 'w2', namespace: ns, group: 'web', address: '10.0.1.2', disconnectedAgoMs: 20 * 1000})
      cluster.mesh.addVm({name: 'w3', namespace: ns, group: 'web', address: '10.0.1.3', disconnectedAgoMs: 20 * MIN})
      for (const name of ['web-10.0.1.1', 'web-10.0.1.2', 'web-10.0.1.3']) backdate(cluster, WE_KEY, ns, name, {created: 26 * HOUR})
    })

    it('lists what is disconnected for longer than the grace period (default 5m) and deletes nothing (golden)', async () => {
      const res = await meshvm(['prune', '-n', ns])
      expect(res.code, res.stderr).toBe(0)
      expect(res.stderr).toBe('3 registration(s) in namespace prune have been disconnected for longer than 5m; run again with --yes to delete them.\n')
      expectAligned(res.stdout)
      expectMatchesGoldenFile(res.stdout, join(GOLDEN, 'cli-prune.txt'))
      expect(cluster.store.list(WAR_KEY, ns)).toHaveLength(4)
    })

    it.each([
      ['--grace-period 45s', ['--grace-period', '45s', '-o', 'name'], ['away-10m', 'away-1m', 'away-9h', 'web-10.0.1.3']],
      ['--grace-period 1h', ['--grace-period', '1h', '-o', 'name'], ['away-9h']],
      ['--grace-period 0 -A --group web', ['--grace-period', '0', '-A', '--group', 'web', '-o', 'name'], ['web-10.0.1.2', 'web-10.0.1.3']],
    ])('%s', async (_title, args, expected) => {
      const res = await meshvm(['prune', '-n', ns, ...args])
      expect(res.code, res.stderr).toBe(0)
      expect(
        res.stdout
          .trimEnd()
          .split('\n')
          .map((l) => l.split('/').pop()!.replace(`${ns}-aws-aws-123456789012-us-east-2b-ec2-i-`, '')),
      ).toEqual(expected)
    })

    it('-o wide, json and yaml', async () => {
      const [wide, json, yaml] = await Promise.all([meshvm(['prune', '-n', ns, '-o', 'wide']), meshvm(['prune', '-n', ns, '-o', 'json']), meshvm(['prune', '-n', ns, '-o', 'yaml'])])
      expect(wide.stdout.split('\n')[0]).toMatch(/^NAME +SOURCE +GROUP +DISCONNECTED +AGE +IDENTITY +ADDRESSES$/)
      expectAligned(wide.stdout)
      const list = JSON.parse(json.stdout) as {kind: string; items: {kind: string; metadata: {name: string}}[]}
      expect(list.items.map((i) => i.kind)).toEqual(['WorkloadAutoRegistration', 'WorkloadAutoRegistration', 'WorkloadEntry'])
      expect(parse(yaml.stdout)).toEqual(list)
    })

    it('a bad --grace-period is a usage error', async () => {
      expectCleanFailure(
        await meshvm(['prune', '-n', ns, '--grace-period', '5 minutes']),
        2,
        'Error: --grace-period "5 minutes": expected a duration such as 10s, 1m or 500ms (0 allowed), at most 596h (24.8 days)',
      )
    })

    it('--yes deletes them (and only them), keeping one that reconnected meanwhile', async () => {
      // away-10m reconnects between the listing and the delete: its re-read is held back (fault latency)
      // and the agent reconnects while that GET is in flight.
      const back = warName(ns, 'away-10m')
      const path = `${WAR_PATH}/namespaces/${ns}/workloadautoregistrations/${back}`
      const remove = cluster.faults.add({method: 'GET', path, latencyMs: 1000, times: 1})
      const running = meshvm(['prune', '-n', ns, '--yes'])
      const start = Date.now()
      while (!cluster.requests.some((r) => r.method === 'GET' && r.path === path)) {
        if (Date.now() - start > 15_000) throw new Error('prune never re-read the registration')
        await new Promise((r) => setTimeout(r, 10))
      }
      cluster.mesh.addVm({name: back, namespace: ns, group: 'ratings', address: '10.8.0.8', connectedTo: ISTIOD, source: 'war'})
      const res = await running
      remove()
      expect(res.code, res.stderr).toBe(0)
      expect(res.stdout).toBe([`workloadautoregistration.runtime.onboarding.tetrate.io "${warName(ns, 'away-9h')}" deleted`, 'workloadentry.networking.istio.io "web-10.0.1.3" deleted', ''].join('\n'))
      expect(res.stderr).toBe(`Kept workloadautoregistration.runtime.onboarding.tetrate.io "${back}": its agent reconnected.\nPruned 2 of 3 registration(s) disconnected for longer than 5m.\n`)
      expect(
        cluster.store
          .list(WAR_KEY, ns)
          .map((o) => o.metadata.name.replace(`${ns}-aws-aws-123456789012-us-east-2b-ec2-i-`, ''))
          .sort(),
      ).toEqual(['away-10m', 'away-1m', 'connected'])
      expect(
        cluster.store
          .list(WE_KEY, ns)
          .map((o) => o.metadata.name)
          .filter((n) => n.startsWith('web-')),
      ).toEqual(['web-10.0.1.1', 'web-10.0.1.2'])
      const after = await meshvm(['prune', '-n', ns])
      expect(after.stdout).toBe('')
      expect(after.stderr).toBe('No registrations in namespace prune have been disconnected for longer than 5m.\n')
    })
  })
})
