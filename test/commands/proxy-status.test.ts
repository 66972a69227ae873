/**
 * `meshvm proxy-status` against the test API server and its simulated mesh: istiods that answer
 * /debug/syncz through the pods/proxy subresource (Istio 1.21 and 1.23+ shapes), pods and VMs
 * (auto-registered WorkloadEntries and WARs), revisions, failing istiods, several contexts, --watch.
 *
 * The mesh reports push times relative to "now", so goldens hold `(AGE)` and `<time>` instead of the
 * ages and timestamps (their widths do not change between runs: every push is 2m5s old).
 */
import {mkdtempSync, readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {spawn} from '@lydell/node-pty'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {stripAnsi} from '../../src/lib/errors.js'
import {BIN, REPO_ROOT, runCli, STACK_TRACE, type CliResult} from '../helpers/cli.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {runCommand} from '../helpers/in-process.js'
import {expectMatchesGoldenFile} from '../helpers/golden.js'
import {kubeconfigYaml} from '../cluster/index.js'
import {DEMO_ISTIODS, seedDemoMesh, startDemoVmPlane} from '../cluster/demo-mesh.js'
import type {VmPlane} from '../cluster/vm-services.js'
import {startVm} from '../vm/run.js'

const GOLDEN = fileURLToPath(new URL('../golden/proxy-status/', import.meta.url))
const ISTIOD = 'istiod-7d4b9c6f8-x2k9p'

function ps(c: TestCluster | {env: Record<string, string>}, args: string[], env: Record<string, string | undefined> = {}): Promise<CliResult> {
  return runCommand(['proxy-status', ...args], {env: {...c.env, ...env}})
}

/** Ages in status cells → `(AGE)`; the column widths stay those of the real ages. */
const tableAges = (text: string) => text.replace(/\((?:\d+[smhdy])+\)/g, '(AGE)')
/** Everything that depends on the clock: timestamps, then durations. */
const clockFree = (text: string) =>
  tableAges(text)
    .replace(/\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?Z/g, '<time>')
    .replace(/\b\d+[smhdy](?:\d+[smhdy])?\b/g, 'AGE')
const firstLine = (text: string) => text.split('\n')[0]
/** Table rows as cell lists (cells are separated by 2+ spaces), ages removed. */
const cells = (table: string) =>
  table
    .replace(/ \((?:\d+[smhdy])+\)/g, '')
    .trimEnd()
    .split('\n')
    .map((l) => l.split(/\s{2,}/))

/** istioctl 1.24.6's multiXdsStatusMultiPilot.txt: meshvm's --layout types. */
function istioctl124Golden(): string {
  return readFileSync(new URL('../fixtures/istioctl/writer/pilot/testdata-1.24.6/multiXdsStatusMultiPilot.txt', import.meta.url), 'utf8')
}

/** istioctl's proxy-status goldens of its current release (1.31). */
const istioctlGolden = (name: string) => readFileSync(new URL(`../fixtures/istioctl/pilot-1.31/${name}`, import.meta.url), 'utf8')

// ---------------------------------------------------------------------------------------------------

describe.concurrent('istioctl testdata: the same statuses', () => {
  let cluster: TestCluster
  beforeAll(async () => {
    cluster = await startCluster()
    const m = cluster.mesh
    // istioctl/pkg/writer/pilot/status_test.go: four proxies on four istiods
    for (const n of [1, 2, 3, 4]) m.addIstiod({name: `istiod${n}`, version: '1.1'}) // status_test.go's istiods report version 1.1
    m.connect({id: 'proxy1', istiod: 'istiod1', clusterId: 'cluster1', version: '1.20', types: {CDS: 'stale', LDS: 'synced', EDS: 'synced', RDS: 'not-sent', ECDS: 'synced'}})
    m.connect({id: 'proxy2', istiod: 'istiod2', clusterId: 'cluster2', version: '1.19', types: {CDS: 'stale', LDS: 'synced', EDS: 'stale', RDS: 'synced', ECDS: 'stale'}})
    m.connect({id: 'proxy3', istiod: 'istiod3', clusterId: 'cluster3', version: '1.20', types: {CDS: 'not-sent', LDS: 'nack', EDS: 'stale', RDS: 'not-sent', ECDS: 'not-sent'}})
    m.connect({id: 'proxy4', istiod: 'istiod4', clusterId: 'cluster4', version: '1.20', types: {CDS: 'unwatched', LDS: 'unwatched', EDS: 'unwatched', RDS: 'unwatched', ECDS: 'unwatched'}})
  })
  afterAll(() => cluster?.stop())

  it('multiXdsStatusMultiPilot: by default, what istioctl 1.31 prints, byte for byte', async () => {
    const res = await ps(cluster, [])
    expect(res.stderr).toBe('')
    expect(res.code).toBe(0)
    expect(res.stdout).toBe(istioctlGolden('multiXdsStatusMultiPilot.txt'))
  })

  it('-v 1: per-type columns in alphabetical order, as istioctl 1.31 -v 1 (multiXdsStatusMultiPilot_verbose.txt, ages aside)', async () => {
    const res = await ps(cluster, ['-v', '1'])
    expect(res.code, res.stderr).toBe(0)
    const golden = cells(istioctlGolden('multiXdsStatusMultiPilot_verbose.txt'))
    expect(cells(res.stdout).filter((c) => c[0] === 'NAME' || c[0] === 'proxy1')).toEqual(golden)
    expect(await ps(cluster, ['--layout', 'verbose']).then((r) => tableAges(r.stdout))).toBe(tableAges(res.stdout))
  })

  it('--layout types: every cell as istioctl 1.24.6 prints it (ages aside), columns aligned like its tabwriter', async () => {
    const res = await ps(cluster, ['--layout', 'types'])
    expect(res.stderr).toBe('')
    expect(res.code).toBe(0)
    expect(cells(res.stdout)).toEqual(cells(istioctl124Golden()))
    expectMatchesGoldenFile(tableAges(res.stdout), join(GOLDEN, 'istioctl-multi-pilot.txt'))
    // tabwriter: 5 spaces after the widest cell, nothing after the last column
    expect(res.stdout.split('\n')[0]).toMatch(/^NAME {7}CLUSTER {6}CDS {2,}LDS .* ISTIOD {5,}VERSION$/)
    expect(res.stdout).not.toMatch(/ \n/)
  })

  it('`ps` is an alias', async () => {
    const res = await runCli(['ps'], {env: cluster.env})
    expect(res.code).toBe(0)
    expect(res.stdout).toBe(istioctlGolden('multiXdsStatusMultiPilot.txt'))
  })

  it('--schema istioctl -o json|yaml: one syncz DiscoveryResponse per istiod, as istioctl 1.30+ prints (its golden, as data)', async () => {
    const [json, yaml, table] = await Promise.all([ps(cluster, ['--schema', 'istioctl', '-o', 'json']), ps(cluster, ['--schema', 'istioctl', '-o', 'yaml']), ps(cluster, ['--schema', 'istioctl'])])
    expect(json.code, json.stderr).toBe(0)
    // istioctl's Fprintln per istiod: JSON indented by 4, one document after the other.
    const docs = json.stdout
      .trimEnd()
      .split(/\n(?=\{$)/m)
      .map((d) => JSON.parse(d) as {resources: {node: {id: string}; genericXdsConfigs: Record<string, unknown>[]}[]; controlPlane: unknown})
    expect(docs.map((d) => d.resources.map((r) => r.node.id))).toEqual([['proxy1'], ['proxy2'], ['proxy3'], ['proxy4']])
    expect(json.stdout).toMatch(/^\{\n {4}"resources": \[\n/)
    // The simulated istiod reports push times (lastUpdated); istioctl's test input has none.
    for (const r of docs[0]!.resources) for (const g of r.genericXdsConfigs) delete g.lastUpdated
    const golden = JSON.parse(istioctlGolden('multiXdsStatusSinglePilot.json')) as Record<string, unknown>
    expect({resources: docs[0]!.resources, controlPlane: docs[0]!.controlPlane}).toEqual({resources: golden.resources, controlPlane: golden.controlPlane})
    expect(yaml.code, yaml.stderr).toBe(0)
    expect(yaml.stdout).toMatch(/^controlPlane:\n {2}identifier: /)
    expect([table.code, table.stderr]).toEqual([2, 'Error: --schema "istioctl": is the shape of -o json|yaml: add -o json or -o yaml (the table is istioctl\'s by default)\n'])
  })

  it('-v with --layout other than verbose is a usage error', async () => {
    const res = await ps(cluster, ['-v', '1', '--layout', 'types'])
    expect(res.code).toBe(2)
    expect(res.stderr).toBe('Error: --layout "types": cannot be combined with -v 1 (which is --layout verbose); give one of them\n')
  })

  it('colours statuses only when colour is on, never in JSON', async () => {
    const plain = await ps(cluster, ['--layout', 'types'])
    expect(plain.stdout).not.toMatch(/\u001B\[/) // not a terminal
    const coloured = await ps(cluster, ['--layout', 'types'], {NO_COLOR: undefined, FORCE_COLOR: '1'})
    expect(coloured.stdout).toContain('\u001B[31mERROR')
    expect(coloured.stdout).toContain('\u001B[33mSTALE')
    expect(tableAges(stripAnsi(coloured.stdout))).toBe(tableAges(plain.stdout)) // same layout
    const json = await ps(cluster, ['-o', 'json'], {NO_COLOR: undefined, FORCE_COLOR: '1'})
    expect(json.stdout).not.toMatch(/\u001B\[/)
  })
})

describe('Istio 1.21 syncz (nonces only, no resources map)', () => {
  let cluster: TestCluster
  beforeAll(async () => {
    cluster = await startCluster({istio: false})
    cluster.mesh.installIstio({gatewayIp: '203.0.113.10'})
    cluster.mesh.addIstiod({name: 'istiod-6c9f7d-abcde', version: '1.21.2', shape: 'legacy'})
    cluster.mesh.addPod({name: 'productpage-v1-6b746f74dc-9stvs', namespace: 'bookinfo', istiod: 'istiod-6c9f7d-abcde', version: '1.21.2'})
    cluster.mesh.addPod({name: 'reviews-v1-545db77b95-mffvg', namespace: 'bookinfo', istiod: 'istiod-6c9f7d-abcde', version: '1.21.2', types: {CDS: 'never-acked', EDS: 'stale', RDS: 'not-sent'}})
  })
  afterAll(() => cluster?.stop())

  it('computes SYNCED / STALE / STALE (Never Acknowledged) / NOT SENT like istioctl 1.21, without ages', async () => {
    const res = await ps(cluster, ['--layout', 'types'])
    expect(res.code).toBe(0)
    expect(res.stdout).not.toMatch(/\(\d/)
    expectMatchesGoldenFile(res.stdout, join(GOLDEN, 'legacy-1.21-cluster.txt'))
  })
})

// ---------------------------------------------------------------------------------------------------

describe.concurrent('VMs: connected, not connected, unhealthy, WARs', () => {
  let cluster: TestCluster
  beforeAll(async () => {
    cluster = await startCluster()
    const m = cluster.mesh
    m.addPod({name: 'web-7b9d8-abcde', namespace: 'apps', istiod: ISTIOD})
    m.addPod({
      name: 'ratings-5c8d9-k2j4f',
      namespace: 'apps',
      istiod: ISTIOD,
      types: {RDS: 'nack'},
      lastError: 'Proto constraint validation failed (RouteConfigurationValidationError.VirtualHosts[0]: invalid domain "*.*")',
    })
    // auto-registered WorkloadEntries (web-<address>) and a WAR
    m.addVm({name: 'vm-1', namespace: 'vms', group: 'web', address: '10.0.0.5', connectedTo: ISTIOD, healthy: true})
    m.addVm({name: 'vm-2', namespace: 'vms', group: 'web', address: '10.0.0.6', healthy: false})
    m.addVm({name: 'vm-3', namespace: 'vms', group: 'web', address: '10.0.0.7', source: 'war', connectedTo: ISTIOD, version: '1.22.1'})
    m.addVm({name: 'db-vm', namespace: 'data', group: 'db', address: '10.0.1.7', connectedTo: ISTIOD, healthy: false, types: {EDS: 'stale'}})
    // two VMs of one group on one istiod in one namespace: which proxy is which cannot be told
    m.addVm({name: 'batch-a', namespace: 'batch', group: 'batch', address: '10.0.2.1', connectedTo: ISTIOD})
    m.addVm({name: 'batch-b', namespace: 'batch', group: 'batch', address: '10.0.2.2', connectedTo: ISTIOD})
  })
  afterAll(() => cluster?.stop())

  it('default table: each VM is a row; the registered but disconnected VM is NOT CONNECTED', async () => {
    const res = await ps(cluster, [])
    expect(res.stderr).toBe('')
    expect(res.code).toBe(0)
    expectMatchesGoldenFile(tableAges(res.stdout), join(GOLDEN, 'vms-cluster.txt'))
    expect(res.stdout).toMatch(/^web-10\.0\.0\.6\.vms +- +- +- +NOT CONNECTED$/m)
  })

  it('-o wide: TYPE, ADDRESS, HEALTH, REGISTRATION and version skew', async () => {
    const res = await ps(cluster, ['-o', 'wide'])
    expect(res.code).toBe(0)
    expectMatchesGoldenFile(tableAges(res.stdout), join(GOLDEN, 'vms-cluster-wide.txt'))
    const row = (name: string) => res.stdout.split('\n').find((l) => l.startsWith(name + ' '))!
    expect(row('vm-1.vms')).toMatch(/ vm +10\.0\.0\.5 +Healthy +auto\/web$/)
    expect(row('web-10.0.0.6.vms')).toMatch(/ vm +10\.0\.0\.6 +Unhealthy +auto\/web$/)
    expect(row('vm-3.vms')).toMatch(/1\.22\.1 \(skew: istiod 1\.30\.8\) +5 \(CDS,LDS,EDS,RDS,ECDS\) +vm +10\.0\.0\.7 +- +war\/vm-3$/)
    expect(row('db-vm.data')).toMatch(/ vm +10\.0\.1\.7 +Unhealthy +auto\/db$/)
    expect(row('web-7b9d8-abcde.apps')).toMatch(/ pod +- +- +-$/)
    // Two VMs of one group on one istiod: told apart by the address each proxy reports (istiod's /debug/adsz).
    expect(row('batch-a.batch')).toMatch(/ vm +10\.0\.2\.1 +- +auto\/batch$/)
    expect(row('batch-b.batch')).toMatch(/ vm +10\.0\.2\.2 +- +auto\/batch$/)
  })

  it('--vms shows VMs only; -n one namespace', async () => {
    const [vms, ns] = await Promise.all([ps(cluster, ['--vms']), ps(cluster, ['-n', 'vms'])])
    const names = (out: string) =>
      out
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(' ')[0])
    expect(names(vms.stdout)).toEqual(['batch-a.batch', 'batch-b.batch', 'db-vm.data', 'vm-1.vms', 'vm-3.vms', 'web-10.0.0.6.vms'])
    expect(names(ns.stdout)).toEqual(['vm-1.vms', 'vm-3.vms', 'web-10.0.0.6.vms'])
    // Through port-forward to istiod's monitoring port (never the pod proxy, which istiod answers 401).
    expect(cluster.requests.some((r) => r.path.endsWith('/portforward') && r.query === '?ports=15014' && r.status === 101)).toBe(true)
    expect(cluster.requests.some((r) => r.path.includes('/proxy/'))).toBe(false)
    expect(cluster.mesh.debugRequests).toContain(`${ISTIOD} /debug/syncz?namespace=vms`)
  })

  it('-l filters pods by pod labels and VMs by WorkloadEntry labels', async () => {
    const [web, notWeb] = await Promise.all([ps(cluster, ['-l', 'app=web']), ps(cluster, ['-l', 'app notin (web,batch)'])])
    const names = (out: string) =>
      out
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(' ')[0])
    expect(web.code).toBe(0)
    expect(names(web.stdout)).toEqual(['vm-1.vms', 'vm-3.vms', 'web-10.0.0.6.vms', 'web-7b9d8-abcde.apps'])
    expect(names(notWeb.stdout)).toEqual(['db-vm.data', 'ratings-5c8d9-k2j4f.apps'])
  })

  it('NAME.NS shows one VM in detail: status per type, nonces, istiod, registration, health', async () => {
    const res = await ps(cluster, ['vm-1.vms'])
    expect(res.stderr).toBe('')
    expect(res.code).toBe(0)
    expectMatchesGoldenFile(clockFree(res.stdout), join(GOLDEN, 'detail-vm.txt'))
  })

  it('a NACKed proxy: ERROR in the table, the error detail in NAME.NS', async () => {
    const [table, detail] = await Promise.all([ps(cluster, ['-n', 'apps', '--layout', 'types']), ps(cluster, ['ratings-5c8d9-k2j4f', '-n', 'apps'])])
    expect(table.stdout).toMatch(/^ratings-5c8d9-k2j4f\.apps +cluster1 +SYNCED \(2m\d+s\) +SYNCED \(2m\d+s\) +SYNCED \(2m\d+s\) +ERROR \(2m\d+s\) +NOT SENT /m)
    expect(detail.code).toBe(0)
    expectMatchesGoldenFile(clockFree(detail.stdout), join(GOLDEN, 'detail-nack.txt'))
    expect(detail.stdout).toContain('Last Error:\n  RDS: Proto constraint validation failed (RouteConfigurationValidationError.VirtualHosts[0]: invalid domain "*.*")\n')
  })

  it('a disconnected VM in detail, found by its WorkloadEntry name', async () => {
    const res = await ps(cluster, ['web-10.0.0.6.vms'])
    expect(res.code).toBe(0)
    // The WorkloadEntry name (GROUP-IP) with -n: its dots are part of the name, not a namespace.
    const withNs = await ps(cluster, ['web-10.0.0.6', '-n', 'vms'])
    expect(withNs.code, withNs.stderr).toBe(0)
    expect(clockFree(withNs.stdout)).toBe(clockFree(res.stdout))
    expect(clockFree(res.stdout)).toBe(
      [
        'Name:       web-10.0.0.6.vms',
        'Namespace:  vms',
        'Type:       vm',
        'Context:    meshvm-test',
        'Registration:',
        '  Source:         auto/web',
        '  WorkloadEntry:  web-10.0.0.6',
        '  WorkloadGroup:  web',
        '  Address:        10.0.0.6',
        '  Identity:       serviceaccount vms/default',
        '  Connected:      False (disconnected AGE ago)',
        '  Health:         Unhealthy (HTTPGetFailed, since AGE): Get "http://127.0.0.1:8080/ready": connection refused',
        'xDS:',
        '  not connected to any istiod that was asked',
        '',
      ].join('\n'),
    )
  })

  it('-o json: the stable schema (snapshot)', async () => {
    const res = await ps(cluster, ['-o', 'json', '-n', 'vms'])
    expect(res.code).toBe(0)
    const list = JSON.parse(res.stdout) as {apiVersion: string; kind: string; items: Record<string, unknown>[]; errors: unknown[]}
    expect(Object.keys(list)).toEqual(['apiVersion', 'kind', 'items', 'errors'])
    for (const item of list.items) {
      expect(Object.keys(item)).toEqual(['name', 'namespace', 'type', 'connected', 'cluster', 'context', 'version', 'istiod', 'versionSkew', 'xds', 'vm'])
      expect(Object.keys(item.xds as object)).toEqual(['CDS', 'LDS', 'EDS', 'RDS', 'ECDS'])
    }
    expectMatchesGoldenFile(clockFree(res.stdout), join(GOLDEN, 'schema.json'))
    const yaml = await ps(cluster, ['-o', 'yaml', '-n', 'vms'])
    expect(yaml.stdout).toMatch(/^apiVersion: meshvm\.io\/v1alpha1\nkind: ProxyStatusList\nitems:\n/)
  })

  it("kubectl's formats through the one printer: -o name (namespace, then name), fed back as TYPE/NAME", async () => {
    const res = await ps(cluster, ['-o', 'name'])
    expect(res.code, res.stderr).toBe(0)
    expect(res.stdout).toBe(
      [
        'pod/ratings-5c8d9-k2j4f',
        'pod/web-7b9d8-abcde',
        // two proxies of one group, told apart by the address each reports
        'workloadentry.networking.istio.io/batch-10.0.2.1',
        'workloadentry.networking.istio.io/batch-10.0.2.2',
        'workloadentry.networking.istio.io/db-10.0.1.7',
        'workloadentry.networking.istio.io/web-10.0.0.5', // vm-1.vms, auto-registered
        'workloadentry.networking.istio.io/vm-3', // the WorkloadEntry of WAR vm-3
        'workloadentry.networking.istio.io/web-10.0.0.6',
        '',
      ].join('\n'),
    )
    const [pod, podById, we, byId] = await Promise.all([
      ps(cluster, ['pod/ratings-5c8d9-k2j4f', '-n', 'apps']),
      ps(cluster, ['ratings-5c8d9-k2j4f.apps']),
      ps(cluster, ['workloadentry.networking.istio.io/web-10.0.0.6', '-n', 'vms']),
      ps(cluster, ['web-10.0.0.6.vms']),
    ])
    expect(pod.code, pod.stderr).toBe(0)
    expect(firstLine(pod.stdout)).toMatch(/^Name: +ratings-5c8d9-k2j4f\.apps$/)
    expect(clockFree(pod.stdout)).toBe(clockFree(podById.stdout))
    expect(we.code, we.stderr).toBe(0)
    expect(clockFree(we.stdout)).toBe(clockFree(byId.stdout))
  })

  it('-o jsonpath, jsonpath-as-json, custom-columns, --sort-by and --no-headers read the ProxyStatusList schema', async () => {
    const [jp, asJson, cc, sorted, plain, bare] = await Promise.all([
      ps(cluster, ['-n', 'vms', '-o', 'jsonpath={range .items[*]}{.name} {.xds.CDS.status}{"\\n"}{end}']),
      ps(cluster, ['-n', 'vms', '-o', 'jsonpath-as-json={.items[*].vm.address}']),
      ps(cluster, ['-o', 'custom-columns=NAME:.name,NS:.namespace,HEALTH:.vm.health', '--no-headers']),
      ps(cluster, ['--vms', '-o', 'custom-columns=NAME:.name,ADDRESS:.vm.address', '--sort-by', '.vm.address']),
      ps(cluster, ['-n', 'apps']),
      ps(cluster, ['-n', 'apps', '--no-headers']),
    ])
    expect(jp.stdout).toBe('vm-1.vms SYNCED\nvm-3.vms SYNCED\nweb-10.0.0.6.vms NOT_CONNECTED\n')
    expect(JSON.parse(asJson.stdout)).toEqual(['10.0.0.5', '10.0.0.7', '10.0.0.6'])
    expect(cc.stdout.split('\n')[0]).toMatch(/^ratings-5c8d9-k2j4f\.apps +apps +<none>$/)
    expect(cc.stdout).toMatch(/^db-vm\.data +data +Unhealthy$/m)
    expect(cells(sorted.stdout).map((c) => c[0])).toEqual(['NAME', 'vm-1.vms', 'web-10.0.0.6.vms', 'vm-3.vms', 'db-vm.data', 'batch-a.batch', 'batch-b.batch'])
    // --no-headers: the table without its first line (widths from the rows alone, as kubectl's).
    expect(cells(bare.stdout)).toEqual(cells(plain.stdout).slice(1))
    for (const r of [jp, asJson, cc, sorted, bare]) expect(r.code, r.stderr).toBe(0)
  })

  it("nothing to show: istioctl 1.28+'s header alone on stdout (exit 0), a one-line note on stderr; -A is the default listing", async () => {
    const [none, vmsNone, all, dflt, json] = await Promise.all([
      ps(cluster, ['-n', 'nowhere']),
      ps(cluster, ['--vms', '-n', 'apps']),
      ps(cluster, ['-A']),
      ps(cluster, []),
      ps(cluster, ['-n', 'nowhere', '-o', 'json']),
    ])
    expect([none.code, none.stdout, none.stderr]).toEqual([0, 'NAME     CLUSTER     ISTIOD     VERSION     SUBSCRIBED TYPES\n', 'No proxies found in namespace nowhere.\n'])
    expect([vmsNone.code, vmsNone.stdout, vmsNone.stderr]).toEqual([0, 'NAME     CLUSTER     ISTIOD     VERSION     SUBSCRIBED TYPES\n', 'No VMs found in namespace apps.\n'])
    const bare = await ps(cluster, ['-n', 'nowhere', '--no-headers'])
    expect([bare.code, bare.stdout]).toEqual([0, ''])
    // JSON is a document: an empty list, no note.
    expect(JSON.parse(json.stdout)).toEqual({apiVersion: 'meshvm.io/v1alpha1', kind: 'ProxyStatusList', items: [], errors: []})
    expect(json.stderr).toBe('')
    expect(all.code).toBe(0)
    expect(tableAges(all.stdout)).toBe(tableAges(dflt.stdout))
  })

  it('an unknown proxy is exit 4 with a hint', async () => {
    const res = await ps(cluster, ['nope.vms'])
    expect(res.code).toBe(4)
    expect(res.stderr).toBe(
      'Error: proxy "nope.vms" not found: no istiod reports it and no WorkloadEntry or WorkloadAutoRegistration registers it\nHint: list the proxies of the namespace with: meshvm proxy-status -n vms\n',
    )
    expect(res.stdout).toBe('')
  })
})

// ---------------------------------------------------------------------------------------------------

describe('the seeded demo: three VMs of payments/mainframe-gw connected to one istiod (issue 27)', () => {
  let cluster: TestCluster
  beforeAll(async () => {
    cluster = await startCluster()
    seedDemoMesh(cluster)
  })
  afterAll(() => cluster?.stop())

  it('NAME by registration name finds the proxy whose reported address the entry has; HOSTNAME shows its health; -o wide its address and health', async () => {
    const [byEntry, byHost, wide] = await Promise.all([
      ps(cluster, ['mainframe-gw-192.168.10.22', '-n', 'payments']),
      ps(cluster, ['mainframe-gw-2.payments']),
      ps(cluster, ['-n', 'payments', '--vms', '-o', 'wide']),
    ])
    expect(byEntry.code, byEntry.stderr).toBe(0)
    expect(firstLine(byEntry.stdout)).toBe('Name:           mainframe-gw-2.payments')
    expect(clockFree(byEntry.stdout)).toBe(clockFree(byHost.stdout))
    expect(byHost.stdout).toContain('  WorkloadEntry:  mainframe-gw-192.168.10.22\n')
    expect(byHost.stdout).toMatch(/^ {2}Health: +Healthy \(since \S+\)$/m)
    expect(byHost.stdout).not.toContain('health checks off')
    const row = (name: string) => wide.stdout.split('\n').find((l) => l.startsWith(name + ' '))!
    expect(row('mainframe-gw-1.payments')).toMatch(/ vm +192\.168\.10\.21 +Healthy +auto\/mainframe-gw$/)
    expect(row('mainframe-gw-2.payments')).toMatch(/ vm +192\.168\.10\.22 +Healthy +auto\/mainframe-gw$/)
    expect(row('mainframe-gw-3.payments')).toMatch(/ vm +192\.168\.10\.23 +Unhealthy +auto\/mainframe-gw$/)
    expect(cluster.mesh.debugRequests).toContain(`${DEMO_ISTIODS.stable} /debug/adsz`)
  })

  it("NAME reads the VM's WorkloadEntry itself (its tunnel label), which a table does not keep", async () => {
    const path = 'networking.istio.io/workloadentries'
    const we = cluster.store.get(path, 'payments', 'mainframe-gw-192.168.10.22')!
    cluster.store.update(path, {...we, metadata: {...we.metadata, labels: {...we.metadata.labels, 'networking.istio.io/tunnel': 'http'}}})
    const [detail, table] = await Promise.all([ps(cluster, ['mainframe-gw-2.payments']), ps(cluster, ['-n', 'payments', '--vms'])])
    expect(detail.code, detail.stderr).toBe(0)
    expect(detail.stdout).toContain('  Tunnel:         http (label networking.istio.io/tunnel)\n')
    expect(table.code, table.stderr).toBe(0)
  })

  it('over xDS alone (ENABLE_DEBUG_ON_HTTP=false) the pairing is the same', async () => {
    const http = await ps(cluster, ['-n', 'payments', '--vms', '-o', 'wide'])
    for (const name of cluster.mesh.istiods.keys()) cluster.mesh.setIstiod(name, {debugHttp: false})
    try {
      const xds = await ps(cluster, ['-n', 'payments', '--vms', '-o', 'wide'])
      expect(xds.code, xds.stderr).toBe(0)
      expect(cells(xds.stdout)).toEqual(cells(http.stdout))
    } finally {
      for (const name of cluster.mesh.istiods.keys()) cluster.mesh.setIstiod(name, {debugHttp: true})
    }
  })

  it('when istiod cannot say which proxy is which (no /debug/adsz): the entry still finds the proxies it may be, and nothing false is printed', async () => {
    cluster.mesh.setIstiod(DEMO_ISTIODS.stable, {adsz: false})
    try {
      const [byEntry, byHost, wide] = await Promise.all([
        ps(cluster, ['mainframe-gw-192.168.10.21', '-n', 'payments']),
        ps(cluster, ['mainframe-gw-1.payments']),
        ps(cluster, ['-n', 'payments', '--vms', '-o', 'wide']),
      ])
      expect(byEntry.code, byEntry.stderr).toBe(0)
      expect(byEntry.stdout.match(/^Name: .*$/gm)).toEqual(['Name:           mainframe-gw-1.payments', 'Name:           mainframe-gw-2.payments', 'Name:           mainframe-gw-3.payments'])
      expect(byHost.stdout).toContain(
        '  WorkloadEntry:  one of mainframe-gw-192.168.10.21, mainframe-gw-192.168.10.22, mainframe-gw-192.168.10.23 (istiod did not say which: its /debug/adsz could not be read)\n',
      )
      for (const out of [byEntry.stdout, byHost.stdout]) {
        expect(out).not.toMatch(/Health:|health checks off|not found/)
      }
      expect(wide.stdout).toMatch(/^mainframe-gw-1\.payments .* vm +- +- +auto\/mainframe-gw$/m)
    } finally {
      cluster.mesh.setIstiod(DEMO_ISTIODS.stable, {adsz: true})
    }
  })
})

// ---------------------------------------------------------------------------------------------------

describe.concurrent('two istiods of one revision, and a second revision', () => {
  let cluster: TestCluster
  const REPLICA = 'istiod-7d4b9c6f8-m4n5q'
  const CANARY = 'istiod-canary-6b8f9-q7w2e'
  beforeAll(async () => {
    cluster = await startCluster()
    const m = cluster.mesh
    m.addIstiod({name: REPLICA})
    m.addIstiod({name: CANARY, revision: 'canary', version: '1.25.1', port: 15015})
    m.addPod({name: 'web-7b9d8-abcde', namespace: 'apps', istiod: ISTIOD})
    m.addPod({name: 'web-7b9d8-fghij', namespace: 'apps', istiod: REPLICA, types: {EDS: 'stale'}})
    m.addPod({name: 'web-canary-5d6f7-klmno', namespace: 'apps', istiod: CANARY, version: '1.25.1'})
    m.addPod({name: 'old-1-pqrst', namespace: 'apps', istiod: CANARY, version: '1.23.4'})
    m.addVm({name: 'vm-1', namespace: 'vms', group: 'web', address: '10.0.0.5', connectedTo: ISTIOD, healthy: true})
    m.addVm({name: 'vm-c', namespace: 'vms', group: 'web', address: '10.0.0.9', connectedTo: CANARY, healthy: true, version: '1.25.1'})
  })
  afterAll(() => cluster?.stop())

  it('every istiod is asked (on its prometheus.io/port), one table sorted by name', async () => {
    const res = await ps(cluster, ['-o', 'wide'])
    expect(res.stderr).toBe('')
    expect(res.code).toBe(0)
    expectMatchesGoldenFile(tableAges(res.stdout), join(GOLDEN, 'revisions-wide.txt'))
    expect(cluster.requests.some((r) => r.path === `/api/v1/namespaces/istio-system/pods/${CANARY}/portforward` && r.query === '?ports=15015')).toBe(true)
  })

  it("--revision canary: only that revision's istiod and its proxies", async () => {
    const res = await ps(cluster, ['-r', 'canary'])
    expect(res.code).toBe(0)
    const names = res.stdout
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split(/\s+/)[0])
    expect(names).toEqual(['old-1-pqrst.apps', 'vm-c.vms', 'web-canary-5d6f7-klmno.apps'])
  })

  it('NAME of a VM connected to another revision\'s istiod: exit 4 saying so, never "no WorkloadEntry registers it"', async () => {
    const res = await ps(cluster, ['web-10.0.0.9', '-n', 'vms', '-r', 'default'])
    expect(res.code).toBe(4)
    expect(res.stderr).toBe(
      `Error: proxy "web-10.0.0.9.vms" is not in this revision's view: WorkloadEntry web-10.0.0.9 is connected to istiod ${CANARY}, of another revision\n` +
        'Hint: leave --revision out to read every istiod, or pass the revision of that istiod with -r\n',
    )
    const found = await ps(cluster, ['web-10.0.0.9', '-n', 'vms', '-r', 'canary'])
    expect(found.code, found.stderr).toBe(0)
  })

  it('an unknown revision is exit 4, naming the revisions that run', async () => {
    const res = await ps(cluster, ['-r', 'nope'])
    expect(res.code).toBe(4)
    expect(res.stderr).toBe(
      'Error: no running istiod pods of revision "nope" in namespace "istio-system" (labels app=istiod,istio.io/rev=nope)\n' +
        'Hint: revisions running in istio-system: canary, default; pass one of them with --revision, or leave --revision out\n',
    )
    expect(res.stderr).not.toMatch(STACK_TRACE)
  })
})

// ---------------------------------------------------------------------------------------------------

describe('an istiod that does not answer', () => {
  let cluster: TestCluster
  const SLOW = 'istiod-7d4b9c6f8-zz9yx'
  beforeAll(async () => {
    cluster = await startCluster()
    const m = cluster.mesh
    m.addIstiod({name: SLOW})
    m.addPod({name: 'web-7b9d8-abcde', namespace: 'apps', istiod: ISTIOD})
    m.addPod({name: 'web-7b9d8-fghij', namespace: 'apps', istiod: SLOW})
    m.addVm({name: 'vm-1', namespace: 'vms', group: 'web', address: '10.0.0.5', connectedTo: ISTIOD, healthy: true})
    m.addVm({name: 'vm-2', namespace: 'vms', group: 'web', address: '10.0.0.6', connectedTo: SLOW, healthy: true})
  })
  afterAll(() => cluster?.stop())

  it('times out: its rows are marked NO ANSWER, a warning names it, the rest is printed, exit 7', async () => {
    cluster.mesh.setIstiod(SLOW, {latencyMs: 6000})
    try {
      const res = await ps(cluster, ['--timeout', '2s', '-o', 'wide'])
      expect(res.code).toBe(7)
      expectMatchesGoldenFile(tableAges(res.stdout), join(GOLDEN, 'istiod-timeout-wide.txt'))
      expect(res.stderr).toBe(
        `Warning: istiod istio-system/${SLOW} did not answer within 2s; its proxies are missing from the table (rows marked NO ANSWER)\n` +
          `Hint: raise --timeout, or check the pod: kubectl -n istio-system logs ${SLOW} -c discovery\n` +
          `Error: proxy status is incomplete: 1 istiod did not answer (${SLOW})\n`,
      )
      const json = await ps(cluster, ['--timeout', '2s', '-o', 'json'])
      expect(json.code).toBe(7)
      const list = JSON.parse(json.stdout) as {items: {name: string; xds: {CDS: {status: string}}}[]; errors: unknown[]}
      expect(list.errors).toEqual([{context: 'meshvm-test', istiod: SLOW, message: `istiod istio-system/${SLOW} did not answer within 2s`}])
      expect(list.items.map((i) => [i.name, i.xds.CDS.status])).toEqual([
        ['vm-1.vms', 'SYNCED'],
        ['web-10.0.0.6.vms', 'NO_ANSWER'],
        ['web-7b9d8-abcde.apps', 'SYNCED'],
      ])
    } finally {
      cluster.mesh.setIstiod(SLOW, {latencyMs: 0})
    }
  })

  it('refuses connections or answers garbage: the same, with the reason', async () => {
    cluster.mesh.setIstiod(SLOW, {down: true})
    try {
      const res = await ps(cluster, ['--layout', 'types'])
      expect(res.code).toBe(7)
      expect(firstLine(res.stderr)).toBe(
        `Warning: istiod istio-system/${SLOW}: port-forward refused on :15014 (HTTP debug) and :15012 (xDS): dial tcp4 127.0.0.1:15012: connect: connection refused; its proxies are missing from the table (rows marked NO ANSWER)`,
      )
      expect(res.stdout).toMatch(/^\* +- +NO ANSWER {2,}NO ANSWER/m)
      expect(res.stdout).toMatch(/^web-7b9d8-abcde\.apps +cluster1 +SYNCED/m)
    } finally {
      cluster.mesh.setIstiod(SLOW, {down: false})
    }
    cluster.mesh.setIstiod(SLOW, {malformed: true})
    try {
      const res = await ps(cluster, [])
      expect(res.code).toBe(7)
      expect(firstLine(res.stderr)).toBe(`Warning: istiod istio-system/${SLOW}: unreadable /debug/syncz response: not JSON; its proxies are missing from the table (rows marked NO ANSWER)`)
    } finally {
      cluster.mesh.setIstiod(SLOW, {malformed: false})
    }
  })

  it('when every istiod times out there is nothing to print: exit 3', async () => {
    cluster.mesh.setIstiod(SLOW, {latencyMs: 2500})
    cluster.mesh.setIstiod(ISTIOD, {latencyMs: 2500})
    try {
      const res = await ps(cluster, ['--timeout', '500ms'])
      expect(res.code).toBe(3)
      expect(res.stdout).toBe('')
      expect(firstLine(res.stderr)).toMatch(/^Error: istiod istio-system\/istiod-7d4b9c6f8-\w+ did not answer within 500ms \(and 1 more istiod alike\)$/)
    } finally {
      cluster.mesh.setIstiod(SLOW, {latencyMs: 0})
      cluster.mesh.setIstiod(ISTIOD, {latencyMs: 0})
    }
  })
})

describe.concurrent('errors', () => {
  let cluster: TestCluster
  let elsewhere: TestCluster
  beforeAll(async () => {
    ;[cluster, elsewhere] = await Promise.all([startCluster(), startCluster({istio: false})])
    elsewhere.mesh.installIstio({namespace: 'istio-alt'})
    elsewhere.mesh.addIstiod({name: 'istiod-5b7c8-abcde', namespace: 'istio-alt'})
  })
  afterAll(async () => {
    await cluster?.stop()
    await elsewhere?.stop()
  })

  it('no istiod in the namespace: exit 4, with a hint', async () => {
    const res = await ps(cluster, ['-i', 'nowhere'])
    expect(res.code).toBe(4)
    expect(res.stderr).toBe('Error: no running istiod pods in namespace "nowhere" (labels app=istiod)\nHint: istiod runs in namespace istio-system: pass -i istio-system\n')
    const alt = await ps(elsewhere, [])
    expect(alt.code).toBe(4)
    expect(alt.stderr).toBe('Error: no running istiod pods in namespace "istio-system" (labels app=istiod)\nHint: istiod runs in namespace istio-alt: pass -i istio-alt\n')
    const ok = await ps(elsewhere, ['-i', 'istio-alt'])
    expect(ok.code).toBe(0)
  })

  it('pods/portforward forbidden: exit 5 and the RBAC rule needed', async () => {
    const token = cluster.addUser('viewer', {
      rules: [
        {verbs: ['get', 'list'], apiGroups: [''], resources: ['pods', 'pods/proxy']},
        {verbs: ['list'], apiGroups: ['networking.istio.io', 'runtime.onboarding.tetrate.io'], resources: ['*']},
      ],
    })
    const res = await ps({env: {KUBECONFIG: cluster.kubeconfigFor(token)}}, [])
    expect(res.code).toBe(5)
    expect(res.stdout).toBe('')
    expect(res.stderr).toBe(
      `Error: istiod istio-system/${ISTIOD}: GET /debug/syncz over port-forward to :15014: pods "${ISTIOD}" is forbidden: User "viewer" cannot get resource "pods/portforward" in API group "" in the namespace "istio-system"\n` +
        'Hint: reading istiod needs verbs get and create on pods/portforward (create is checked from Kubernetes 1.35) and, for the xDS path, create on serviceaccounts/token, in namespace istio-system (kubectl auth can-i create pods/portforward -n istio-system; kubectl auth can-i create serviceaccounts/token -n istio-system); a cluster admin can grant them with: kubectl create role meshvm-istiod -n istio-system --verb=get,create --resource=pods/portforward,serviceaccounts/token && kubectl create rolebinding meshvm-istiod -n istio-system --role=meshvm-istiod --user=YOU\n',
    )
    // pods/proxy is of no use: nothing asks for it.
    expect(cluster.requests.some((r) => r.path.includes('/proxy/'))).toBe(false)
  })

  it('WorkloadEntries forbidden: the table still prints, with a warning', async () => {
    cluster.mesh.addPod({name: 'web-7b9d8-abcde', namespace: 'apps', istiod: ISTIOD})
    const token = cluster.addUser('podreader', {rules: [{verbs: ['get', 'list'], apiGroups: [''], resources: ['pods', 'pods/portforward']}]})
    const res = await ps({env: {KUBECONFIG: cluster.kubeconfigFor(token)}}, [])
    expect(res.code).toBe(0)
    expect(res.stdout).toMatch(/^NAME +CLUSTER .*\nweb-7b9d8-abcde\.apps /)
    expect(firstLine(res.stderr)).toMatch(
      /^Warning: cannot list WorkloadEntries: workloadentries\.networking\.istio\.io is forbidden: User "podreader" cannot list resource "workloadentries" .*; VM rows may be missing/,
    )
  })
})

// ---------------------------------------------------------------------------------------------------

describe.concurrent('several contexts', () => {
  let east: TestCluster
  let west: TestCluster
  let kubeconfig: string
  beforeAll(async () => {
    ;[east, west] = await Promise.all([startCluster({contextName: 'east'}), startCluster({istio: false, contextName: 'west'})])
    west.mesh.installIstio({clusterId: 'cluster2', gatewayIp: '203.0.113.20'})
    west.mesh.addIstiod({name: 'istiod-66f9c-west1', clusterId: 'cluster2'})
    east.mesh.addPod({name: 'web-7b9d8-abcde', namespace: 'apps', istiod: ISTIOD})
    east.mesh.addVm({name: 'vm-1', namespace: 'vms', group: 'web', address: '10.0.0.5', connectedTo: ISTIOD, healthy: true})
    west.mesh.addPod({name: 'web-84c6d-vwxyz', namespace: 'apps', istiod: 'istiod-66f9c-west1', types: {CDS: 'stale'}})
    west.mesh.addVm({name: 'vm-9', namespace: 'vms', group: 'web', address: '10.1.0.9', healthy: false})
    // a third context whose API server is gone
    const gone = join(east.dir, 'kubeconfig-gone')
    writeFileSync(gone, kubeconfigYaml({server: 'https://127.0.0.1:1', caPem: east.caPem, token: 'not-a-secret', name: 'gone'}), {mode: 0o600})
    kubeconfig = [east.kubeconfigPath, west.kubeconfigPath, gone].join(':')
  })
  afterAll(async () => {
    await east?.stop()
    await west?.stop()
  })
  const env = () => ({KUBECONFIG: kubeconfig})

  it('--context twice: one table, the CLUSTER column from each', async () => {
    const res = await ps({env: env()}, ['--context', 'east', '--context', 'west'])
    expect(res.stderr).toBe('')
    expect(res.code).toBe(0)
    expectMatchesGoldenFile(tableAges(res.stdout), join(GOLDEN, 'two-contexts.txt'))
    const wide = await ps({env: env()}, ['--context', 'east', '--context', 'west', '-o', 'wide'])
    expectMatchesGoldenFile(tableAges(wide.stdout), join(GOLDEN, 'two-contexts-wide.txt'))
  })

  it('two clusters with the same cluster ID stay apart: CONTEXT tells their rows apart', async () => {
    const again = east.kubeconfigFor(east.token, {contextName: 'east-again'})
    const res = await ps({env: {KUBECONFIG: [east.kubeconfigPath, again].join(':')}}, ['--context', 'east', '--context', 'east-again'])
    expect(res.code, res.stderr).toBe(0)
    expect(cells(res.stdout).map((c) => [c[0], c[1], c.at(-1)])).toEqual([
      ['NAME', 'CLUSTER', 'CONTEXT'],
      ['vm-1.vms', 'cluster1', 'east'],
      ['vm-1.vms', 'cluster1', 'east-again'],
      ['web-7b9d8-abcde.apps', 'cluster1', 'east'],
      ['web-7b9d8-abcde.apps', 'cluster1', 'east-again'],
    ])
    // One context read: no CONTEXT column.
    const one = await ps({env: env()}, ['--context', 'east'])
    expect(firstLine(one.stdout)).not.toMatch(/CONTEXT/)
  })

  it('-o json names the context of every item', async () => {
    const res = await ps({env: env()}, ['--context', 'east', '--context', 'west', '-o', 'json'])
    const list = JSON.parse(res.stdout) as {items: {name: string; context: string; cluster: string | null}[]}
    expect(list.items.map((i) => [i.name, i.context, i.cluster])).toEqual([
      ['vm-1.vms', 'east', 'cluster1'],
      ['web-10.1.0.9.vms', 'west', null],
      ['web-7b9d8-abcde.apps', 'east', 'cluster1'],
      ['web-84c6d-vwxyz.apps', 'west', 'cluster2'],
    ])
  })

  it('an unreachable context is reported and the others still print (exit 7); --all-contexts alike', async () => {
    const two = await ps({env: env()}, ['--context', 'east', '--context', 'west'])
    for (const args of [['--context', 'east', '--context', 'gone', '--context', 'west'], ['--all-contexts']]) {
      const res = await ps({env: env()}, args)
      expect(res.code).toBe(7)
      expect(tableAges(res.stdout)).toBe(tableAges(two.stdout))
      expect(res.stderr).toBe(
        'Warning: context gone: cannot connect to the API server at https://127.0.0.1:1 (context "gone"): connection refused; its proxies are missing from the table\n' +
          'Hint: is the cluster running, and is this the right --context?\n' +
          'Error: proxy status is incomplete: 1 context could not be read (gone)\n',
      )
    }
  })

  it('only an unreachable context: its error, exit 3; an unknown context: exit 4', async () => {
    const res = await ps({env: env()}, ['--context', 'gone'])
    expect(res.code).toBe(3)
    expect(firstLine(res.stderr)).toBe('Error: cannot connect to the API server at https://127.0.0.1:1 (context "gone"): connection refused')
    const unknown = await ps({env: env()}, ['--context', 'east', '--context', 'north'])
    expect(unknown.code).toBe(7)
    expect(firstLine(unknown.stderr)).toMatch(/^Warning: context north: context "north" not found in /)
  })
})

// ---------------------------------------------------------------------------------------------------

describe('--watch', () => {
  let cluster: TestCluster
  const OTHER = 'istiod-7d4b9c6f8-w8v7u'
  beforeAll(async () => {
    cluster = await startCluster()
    cluster.mesh.addIstiod({name: OTHER})
    cluster.mesh.addPod({name: 'web-7b9d8-abcde', namespace: 'apps', istiod: ISTIOD})
    cluster.mesh.addPod({name: 'web-7b9d8-fghij', namespace: 'apps', istiod: OTHER, types: {EDS: 'stale'}})
  })
  afterAll(() => cluster?.stop())

  it('without a terminal: prints a new table per frame, changed cells marked with *', async () => {
    // The first frame finds one istiod silent past --timeout; the second sees it again.
    const remove = cluster.faults.add({path: new RegExp(`/pods/${OTHER}/portforward`), latencyMs: 1500, times: 1})
    try {
      const res = await ps(cluster, ['--watch', '--watch-count', '2', '--interval', '200ms', '--timeout', '700ms', '--layout', 'types'])
      expect(res.code).toBe(0)
      const [first, second] = tableAges(res.stdout).split('\n\n')
      expect(first).toMatch(/^\* +- +NO ANSWER/m)
      expect(first).toMatch(/^web-7b9d8-abcde\.apps /m)
      expect(first).not.toContain('web-7b9d8-fghij')
      // the new row lights up (NAME marked); unchanged rows do not
      expect(second).toMatch(/^\*web-7b9d8-fghij\.apps +cluster1 +SYNCED \(AGE\) +SYNCED \(AGE\) +STALE \(AGE\)/m)
      expect(second).toMatch(/^web-7b9d8-abcde\.apps +cluster1 +SYNCED \(AGE\)/m)
      expect(second).not.toMatch(/NO ANSWER/)
      expect(res.stderr).toContain(`Warning: istiod istio-system/${OTHER} did not answer within 700ms; its proxies are missing from the table (rows marked NO ANSWER)`)
      expect(res.stderr).toContain('gone: *\n')
    } finally {
      remove()
    }
  })

  it('on a terminal: redraws in place, in colour', async () => {
    const env = {...process.env, ...cluster.env, TERM: 'xterm'} as Record<string, string>
    delete env.NO_COLOR
    const pty = spawn(process.execPath, [BIN, 'proxy-status', '--watch', '--watch-count', '2', '--interval', '100ms', '-v', '1'], {cols: 200, rows: 50, cwd: REPO_ROOT, env})
    let screen = ''
    pty.onData((d) => (screen += d))
    const code = await new Promise<number>((resolve) => pty.onExit(({exitCode}) => resolve(exitCode)))
    expect(code).toBe(0)
    expect(screen.split('\u001B[H\u001B[2J')).toHaveLength(3) // two frames, each drawn from the top
    expect(screen).toMatch(/Every 100ms: meshvm proxy-status/)
    expect(screen).toContain('\u001B[32mSYNCED')
  })
})

describe.concurrent('bad input: exit 2, one line, no stack trace', () => {
  const cases: [string[], string][] = [
    // the one typed duration flag (cli/base-command.ts)
    [['--timeout', 'soon'], 'Error: --timeout "soon": expected a duration such as 10s, 1m or 500ms, at most 596h (24.8 days)'],
    [['--watch', '--interval', '0s'], 'Error: --interval "0s": expected a duration such as 10s, 1m or 500ms, at most 596h (24.8 days)'],
    [['-l', 'app in web'], 'Error: -l "app in web": cannot parse "app in web"; expected key=value, key!=value, key in (a,b), key notin (a,b), key or !key'],
    [['-l', 'app=-web'], "Error: -l \"app=-web\": label value \"-web\": value must be empty or consist of letters, digits, '-', '_' or '.', and start and end with a letter or digit"],
    // oclif's exclusive/dependsOn: the message names both flags.
    [['--all-contexts', '--context', 'east'], 'Error: --all-contexts and --context=east cannot be combined: give one of them'],
    [['-A', '-n', 'apps'], 'Error: --all-namespaces and --namespace=apps cannot be combined: give one of them'],
    [['vm-1.vms', '--watch'], 'Error: NAME and --watch are exclusive: --watch redraws the whole table'],
    [['--watch-count', '2'], 'Error: --watch-count: only applies with --watch'],
    [['-o', 'xml'], 'Error: -o/--output "xml": expected one of table, wide, json, yaml, name, jsonpath=TEMPLATE, jsonpath-as-json=TEMPLATE, custom-columns=HEADER:PATH,…'],
    [['-o', 'jsonpath={.items[*'], 'Error: -o/--output "jsonpath={.items[*": unterminated array'],
    [['--sort-by', '.a['], 'Error: --sort-by ".a[": unterminated array'],
    [['--show-labels'], 'Error: unknown flag --show-labels'],
  ]
  it.each(cases)('%j', async (args, line) => {
    const res = await runCli(['proxy-status', ...args], {env: {KUBECONFIG: '/nonexistent'}})
    expect(res.code).toBe(2)
    expect(firstLine(res.stderr)).toBe(line)
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(res.stdout).toBe('')
  })
})

// ---------------------------------------------------------------------------------------------------

describe('the xDS path (istiod with ENABLE_DEBUG_ON_HTTP=false), --xds-address, the default tag', () => {
  let cluster: TestCluster
  const REPLICA = 'istiod-7d4b9c6f8-m4n5q'
  const debugOff = (on: boolean) => {
    for (const name of [ISTIOD, REPLICA]) cluster.mesh.setIstiod(name, {debugHttp: !on})
  }
  beforeAll(async () => {
    cluster = await startCluster()
    const m = cluster.mesh
    m.addIstiod({name: REPLICA})
    m.addPod({name: 'web-7b9d8-abcde', namespace: 'apps', istiod: ISTIOD})
    m.addPod({name: 'web-7b9d8-fghij', namespace: 'apps', istiod: REPLICA, types: {EDS: 'stale', RDS: 'nack'}})
    m.addVm({name: 'vm-1', namespace: 'vms', group: 'web', address: '10.0.0.5', connectedTo: ISTIOD, healthy: true})
  })
  afterAll(() => cluster?.stop())

  it('HTTP debug off: every istiod is read over xDS through a port-forward to 15012, with the same rows as over HTTP', async () => {
    const http = await ps(cluster, ['-o', 'wide', '--layout', 'types'])
    expect(http.code).toBe(0)
    debugOff(true)
    try {
      const before = cluster.requests.length
      const xds = await ps(cluster, ['-o', 'wide', '--layout', 'types', '--debug'])
      expect(xds.code, xds.stderr).toBe(0)
      expect(cells(xds.stdout)).toEqual(cells(http.stdout))
      expect(xds.stdout).toMatch(/^web-7b9d8-fghij\.apps +cluster1 +SYNCED \(\d+m\d+s\) +SYNCED \(\S+\) +STALE \(\S+\) +ERROR \(\S+\) +NOT SENT /m)
      for (const name of [ISTIOD, REPLICA]) {
        expect(xds.stderr).toContain(`debug: istiod istio-system/${name}: GET /debug/syncz over port-forward to :15014 → HTTP 404`)
        expect(xds.stderr).toMatch(
          new RegExp(
            `debug: istiod istio-system/${name}: xDS over port-forward to :15012 \\(TLS verified for istiod\\.istio-system\\.svc against istio-system/istio-ca-root-cert\\) → istio\\.io/debug/syncz: \\d+ resources`,
          ),
        )
      }
      const mine = cluster.requests.slice(before)
      // One TokenRequest (SA default in the Istio namespace) for both istiods; nothing through the pod proxy.
      expect(mine.filter((r) => r.method === 'POST' && r.path === '/api/v1/namespaces/istio-system/serviceaccounts/default/token')).toHaveLength(1)
      expect(mine.filter((r) => r.path.endsWith('/portforward') && r.query === '?ports=15012')).toHaveLength(2)
      expect(mine.some((r) => r.path.includes('/proxy/'))).toBe(false)
      // The detail view reads the same way.
      const detail = await ps(cluster, ['vm-1.vms'])
      expect(detail.code, detail.stderr).toBe(0)
      expect(detail.stdout).toMatch(/SYNCED/)
    } finally {
      debugOff(false)
    }
  })

  it('a token istiod refuses: exit 5, the path and the reason', async () => {
    debugOff(true)
    cluster.mesh.xds(ISTIOD).refuseTokens = true
    cluster.mesh.xds(REPLICA).refuseTokens = true
    try {
      const res = await ps(cluster, [])
      expect(res.code).toBe(5)
      expect(res.stdout).toBe('')
      expect(firstLine(res.stderr)).toMatch(
        /^Error: istiod istio-system\/istiod-7d4b9c6f8-\w+: xDS over port-forward to :15012: istiod refused the token \(UNAUTHENTICATED: authentication failure\) \(HTTP first: GET \/debug\/syncz on :15014 answered HTTP 404\) \(and 1 more istiod alike\)$/,
      )
      expect(res.stderr).toMatch(/^Hint: istiod accepts tokens of audience istio-ca/m)
    } finally {
      cluster.mesh.xds(ISTIOD).refuseTokens = false
      cluster.mesh.xds(REPLICA).refuseTokens = false
      debugOff(false)
    }
  })

  it('no right to create the token: exit 5 with the RBAC rule and the can-i line', async () => {
    debugOff(true)
    const token = cluster.addUser('forwarder', {
      rules: [
        {verbs: ['get', 'list'], apiGroups: [''], resources: ['pods', 'configmaps']},
        {verbs: ['get', 'create'], apiGroups: [''], resources: ['pods/portforward']},
        {verbs: ['list'], apiGroups: ['networking.istio.io', 'runtime.onboarding.tetrate.io', 'admissionregistration.k8s.io'], resources: ['*']},
      ],
    })
    try {
      const res = await ps({env: {KUBECONFIG: cluster.kubeconfigFor(token)}}, [])
      expect(res.code).toBe(5)
      expect(firstLine(res.stderr)).toMatch(
        /^Error: istiod istio-system\/istiod-7d4b9c6f8-\w+: xDS over port-forward to :15012: cannot get a token for service account istio-system\/default: serviceaccounts "default" is forbidden: User "forwarder" cannot create resource "serviceaccounts\/token"/,
      )
      expect(res.stderr).toContain(
        'Hint: the xDS path needs a token for service account default in istio-system: verb create on serviceaccounts/token (kubectl auth can-i create serviceaccounts/token -n istio-system)\n',
      )
    } finally {
      debugOff(false)
    }
  })

  it('an istiod whose certificate the mesh root did not sign: a clean TLS error for it, the rest prints (exit 7)', async () => {
    const ROGUE = 'istiod-7d4b9c6f8-r0gue'
    cluster.mesh.addIstiod({name: ROGUE, debugHttp: false, untrustedCertificate: true})
    try {
      const res = await ps(cluster, [])
      expect(res.code).toBe(7)
      expect(res.stderr).not.toMatch(STACK_TRACE)
      expect(firstLine(res.stderr)).toMatch(
        new RegExp(
          `^Warning: istiod istio-system/${ROGUE}: xDS over port-forward to :15012: TLS verification failed: its certificate is not signed by the mesh root CA in ConfigMap istio-system/istio-ca-root-cert \\((UNABLE_TO_VERIFY_LEAF_SIGNATURE|UNABLE_TO_GET_ISSUER_CERT_LOCALLY|SELF_SIGNED_CERT_IN_CHAIN)\\) \\(HTTP first: GET /debug/syncz on :15014 answered HTTP 404\\); its proxies are missing`,
        ),
      )
      expect(res.stdout).toMatch(/^web-7b9d8-abcde\.apps /m)
    } finally {
      cluster.mesh.setIstiod(ROGUE, {down: true})
      cluster.store.delete('/pods', 'istio-system', ROGUE)
    }
  })

  it('one istiod timing out over xDS while the other answers: NO ANSWER for it, exit 7', async () => {
    debugOff(true)
    cluster.mesh.setIstiod(REPLICA, {latencyMs: 4000})
    try {
      const res = await ps(cluster, ['--timeout', '1500ms', '--layout', 'types'])
      expect(res.code).toBe(7)
      expect(firstLine(res.stderr)).toBe(`Warning: istiod istio-system/${REPLICA} did not answer within 1500ms; its proxies are missing from the table (rows marked NO ANSWER)`)
      expect(res.stdout).toMatch(/^\* +- +NO ANSWER/m)
      expect(res.stdout).toMatch(/^web-7b9d8-abcde\.apps +cluster1 +SYNCED/m)
    } finally {
      cluster.mesh.setIstiod(REPLICA, {latencyMs: 0})
      debugOff(false)
    }
  })

  it('--xds-address (and MESHVM_XDS_ADDRESS): one istiod outside the cluster, over xDS with the same checks', async () => {
    const address = await cluster.mesh.xdsAddress(ISTIOD)
    const before = cluster.requests.length
    const res = await ps(cluster, ['--xds-address', address, '--debug'])
    expect(res.code, res.stderr).toBe(0)
    const names = res.stdout
      .trim()
      .split('\n')
      .slice(1)
      .map((l) => l.split(/\s+/)[0])
    expect(names).toEqual(['vm-1.vms', 'web-7b9d8-abcde.apps'])
    expect(res.stdout).toMatch(new RegExp(`^web-7b9d8-abcde\\.apps +cluster1 +${ISTIOD} +1\\.30\\.8 +5 \\(CDS,LDS,EDS,RDS,ECDS\\)$`, 'm'))
    expect(res.stderr).toContain(`debug: istiod at ${address}: xDS (TLS verified for istiod.istio-system.svc against istio-system/istio-ca-root-cert) → istio.io/debug/syncz: 2 resources`)
    // No istiod pod lookup, no port-forward.
    expect(cluster.requests.slice(before).some((r) => r.path.endsWith('/portforward') || r.query.includes('app%3Distiod'))).toBe(false)
    const env = await ps(cluster, [], {MESHVM_XDS_ADDRESS: address})
    expect(tableAges(env.stdout)).toBe(tableAges(res.stdout))
    const bad = await ps(cluster, ['--xds-address', 'istiod.example.com'])
    expect(bad.code).toBe(2)
    expect(bad.stderr).toMatch(/^Error: --xds-address "istiod\.example\.com": expected HOST:PORT/)
  })
})

describe('the default revision, as istioctl 1.28 resolves it', () => {
  let cluster: TestCluster
  const CANARY = 'istiod-canary-6b8f9-q7w2e'
  beforeAll(async () => {
    cluster = await startCluster()
    const m = cluster.mesh
    m.addIstiod({name: CANARY, revision: 'canary', version: '1.25.1', debugHttp: false})
    m.addPod({name: 'web-7b9d8-abcde', namespace: 'apps', istiod: ISTIOD})
    m.addPod({name: 'web-canary-5d6f7-klmno', namespace: 'apps', istiod: CANARY, version: '1.25.1'})
  })
  afterAll(() => cluster?.stop())

  it("without --revision: every istiod while no default tag exists, the tag's revision once it does (xDS SAN istiod-canary.NS.svc)", async () => {
    const all = await ps(cluster, [])
    expect(all.code, all.stderr).toBe(0)
    expect(
      all.stdout
        .trim()
        .split('\n')
        .slice(1)
        .map((l) => l.split(/\s+/)[0]),
    ).toEqual(['web-7b9d8-abcde.apps', 'web-canary-5d6f7-klmno.apps'])
    cluster.mesh.setDefaultTag('canary')
    try {
      const tagged = await ps(cluster, ['--debug'])
      expect(tagged.code, tagged.stderr).toBe(0)
      expect(
        tagged.stdout
          .trim()
          .split('\n')
          .slice(1)
          .map((l) => l.split(/\s+/)[0]),
      ).toEqual(['web-canary-5d6f7-klmno.apps'])
      expect(tagged.stderr).toContain('debug: revision canary (the default tag: MutatingWebhookConfiguration istio-revision-tag-default)')
      expect(tagged.stderr).toContain(`debug: istiod istio-system/${CANARY}: xDS over port-forward to :15012 (TLS verified for istiod-canary.istio-system.svc`)
      // --revision still wins.
      const explicit = await ps(cluster, ['-r', 'default'])
      expect(
        explicit.stdout
          .trim()
          .split('\n')
          .slice(1)
          .map((l) => l.split(/\s+/)[0]),
      ).toEqual(['web-7b9d8-abcde.apps'])
    } finally {
      cluster.mesh.setDefaultTag(undefined)
    }
  })
})

describe("the README's walkthrough with a second VM: two real sidecars of one group on one istiod (issue 27)", () => {
  let cluster: TestCluster
  let plane: VmPlane
  beforeAll(async () => {
    cluster = await startCluster({rootCertDelayMs: 200})
    seedDemoMesh(cluster)
    plane = await startDemoVmPlane(cluster)
  })
  afterAll(async () => {
    await plane?.stop()
    await cluster?.stop()
  })

  it('each proxy is paired with the entry istiod made from the address it reported', async () => {
    const bundle = join(mkdtempSync(join(cluster.dir, 'readme-')), 'web-vm')
    const onboard = await runCli(['onboard', 'web', '-n', 'demo-vms', '--create-namespace', '-p', 'http=8080', '--probe-http', '8080/ready', '--apply', '--bundle', bundle, '--autoregister'], {
      env: cluster.env,
    })
    expect(onboard.code, onboard.stderr).toBe(0)
    const vms = [startVm(bundle, {address: '10.10.0.5', hostname: 'vm-1'}), startVm(bundle, {address: '10.10.0.6', hostname: 'vm-2'})]
    try {
      await Promise.all(vms.map((vm) => vm.waitFor(/readiness probe: healthy/)))
      const [wide, byEntry] = await Promise.all([ps(cluster, ['-o', 'wide', '-n', 'demo-vms']), ps(cluster, ['web-10.10.0.6', '-n', 'demo-vms'])])
      expect(wide.code, wide.stderr).toBe(0)
      expect(wide.stdout).toMatch(/^vm-1\.demo-vms +cluster1 .* vm +10\.10\.0\.5 +Healthy +auto\/web$/m)
      expect(wide.stdout).toMatch(/^vm-2\.demo-vms +cluster1 .* vm +10\.10\.0\.6 +Healthy +auto\/web$/m)
      expect(byEntry.code, byEntry.stderr).toBe(0)
      expect(firstLine(byEntry.stdout)).toBe('Name:           vm-2.demo-vms')
      expect(byEntry.stdout).toContain('  WorkloadEntry:  web-10.10.0.6\n')
    } finally {
      for (const vm of vms) vm.child.kill('SIGTERM')
      await Promise.all(vms.map((vm) => vm.done))
    }
  }, 120_000)
})
