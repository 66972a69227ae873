import {readFileSync} from 'node:fs'
import {fileURLToPath} from 'node:url'
import {describe, expect, it} from 'vitest'
import {MeshvmError, stripAnsi} from '../../src/lib/errors.js'
import {
  istioctlSyncz,
  isVersionSkewed,
  nonceState,
  parseSyncz,
  proxyStatusJsonItem,
  proxyStatusList,
  proxyStatusRows,
  renderProxyStatusTable,
  xdsStatus,
  XDS_TYPE_URLS,
  type IstiodRef,
  type ProxySync,
  type VmInfo,
} from '../../src/lib/proxy-status/status.js'
import {vmRecords} from '../../src/lib/proxy-status/vms.js'
import {parseYamlStream} from '../../src/lib/yaml.js'
import {expectMatchesGoldenFile} from '../helpers/golden.js'

/** istioctl's proxy-status goldens of its current release (1.31). */
const ISTIOCTL_TESTDATA = new URL('../fixtures/istioctl/pilot-1.31/', import.meta.url)
const GOLDEN = fileURLToPath(new URL('../golden/proxy-status/', import.meta.url))

const istioctlGolden = (name: string) => readFileSync(new URL(name, ISTIOCTL_TESTDATA), 'utf8')

/** istioctl 1.24.6's multiXdsStatusMultiPilot.txt (meshvm's --layout types; the other goldens are 1.31's). */
function istioctl124Golden(): string {
  return readFileSync(new URL('../fixtures/istioctl/writer/pilot/testdata-1.24.6/multiXdsStatusMultiPilot.txt', import.meta.url), 'utf8')
}

const NOW = new Date('2024-11-05T10:20:00Z')
const ISTIOD: IstiodRef = {name: 'istiod-7d4b9c6f8-x2k9p', namespace: 'istio-system', version: '1.24.2'}

// --- istioctl's own test inputs (istioctl/pkg/writer/pilot/status_test.go), as protojson -------------

type Status = 'SYNCED' | 'STALE' | 'NOT_SENT' | 'ERROR' | 'UNKNOWN'
interface ClientConfigInput {
  proxyID: string
  clusterID: string
  version: string
  cds?: Status
  lds?: Status
  rds?: Status
  eds?: Status
  ecds?: Status
  namespace?: string
}

function clientConfig(c: ClientConfigInput): unknown {
  const entries: [string, Status | undefined][] = [
    [XDS_TYPE_URLS.CDS, c.cds],
    [XDS_TYPE_URLS.LDS, c.lds],
    [XDS_TYPE_URLS.RDS, c.rds],
    [XDS_TYPE_URLS.EDS, c.eds],
    [XDS_TYPE_URLS.ECDS, c.ecds],
  ]
  return {
    '@type': 'type.googleapis.com/envoy.service.status.v3.ClientConfig',
    node: {id: c.proxyID, metadata: {CLUSTER_ID: c.clusterID, ISTIO_VERSION: c.version, ...(c.namespace ? {NAMESPACE: c.namespace} : {})}},
    // protojson omits UNKNOWN (0)
    genericXdsConfigs: entries.filter(([, s]) => s !== undefined).map(([typeUrl, s]) => (s === 'UNKNOWN' ? {typeUrl} : {typeUrl, configStatus: s})),
  }
}

function xdsResponse(istiodID: string, inputs: ClientConfigInput[]): unknown {
  return {
    versionInfo: '1.1',
    resources: inputs.map(clientConfig),
    typeUrl: 'type.googleapis.com/envoy.service.status.v3.ClientConfig',
    controlPlane: {
      identifier: JSON.stringify({Component: 'istiod', ID: istiodID, Info: {version: '1.1', revision: '', golang_version: '', status: '', tag: ''}}),
    },
  }
}

const proxy1: ClientConfigInput = {proxyID: 'proxy1', clusterID: 'cluster1', version: '1.20', cds: 'STALE', lds: 'SYNCED', rds: 'NOT_SENT', eds: 'SYNCED', ecds: 'SYNCED'}
const proxy2: ClientConfigInput = {proxyID: 'proxy2', clusterID: 'cluster2', version: '1.19', cds: 'STALE', lds: 'SYNCED', rds: 'SYNCED', eds: 'STALE', ecds: 'STALE'}
const proxy3: ClientConfigInput = {proxyID: 'proxy3', clusterID: 'cluster3', version: '1.20', cds: 'NOT_SENT', lds: 'ERROR', rds: 'NOT_SENT', eds: 'STALE', ecds: 'NOT_SENT'}
const proxy4: ClientConfigInput = {proxyID: 'proxy4', clusterID: 'cluster4', version: '1.20', cds: 'UNKNOWN', lds: 'UNKNOWN', rds: 'UNKNOWN', eds: 'UNKNOWN', ecds: 'UNKNOWN'}

/** What the command does: parse every istiod's answer (the name passed in is the pod meshvm asked). */
function parseAll(responses: Record<string, unknown>): ProxySync[] {
  return Object.entries(responses).flatMap(([pod, body]) => parseSyncz(body, {name: pod, namespace: 'istio-system'}))
}

const multiPilot = () =>
  parseAll({
    istiod1: xdsResponse('istiod1', [proxy1]),
    istiod2: xdsResponse('istiod2', [proxy2]),
    istiod3: xdsResponse('istiod3', [proxy3]),
    istiod4: xdsResponse('istiod4', [proxy4]),
  })
// istioctl's single-pilot case (given out of order here, to check the sort)
const singlePilot = () =>
  parseAll({
    istiod1: xdsResponse('istiod1', [
      {...proxy2, version: '1.20', ecds: 'NOT_SENT'},
      {...proxy1, ecds: 'NOT_SENT'},
    ]),
  })

describe('istioctl goldens', () => {
  it('the default layout equals istioctl 1.31 multiXdsStatusMultiPilot.txt byte for byte', () => {
    expect(renderProxyStatusTable(proxyStatusRows(multiPilot(), {now: NOW}), {color: false})).toBe(istioctlGolden('multiXdsStatusMultiPilot.txt'))
    expect(renderProxyStatusTable(proxyStatusRows(multiPilot(), {now: NOW}), {color: false, layout: 'subscribed'})).toBe(istioctlGolden('multiXdsStatusMultiPilot.txt'))
  })
  it('the default layout equals istioctl 1.31 multiXdsStatusSinglePilot.txt (rows sorted by proxy ID)', () => {
    const out = renderProxyStatusTable(proxyStatusRows(singlePilot(), {now: NOW}), {color: false})
    expect(out).toBe(istioctlGolden('multiXdsStatusSinglePilot.txt'))
  })
  it('--layout types equals istioctl 1.24.6 multiXdsStatusMultiPilot.txt byte for byte', () => {
    expect(renderProxyStatusTable(proxyStatusRows(multiPilot(), {now: NOW}), {color: false, layout: 'types'})).toBe(istioctl124Golden())
  })
  it('the verbose layout (-v 1) equals istioctl 1.31 multiXdsStatusMultiPilot_verbose.txt', () => {
    const syncs = parseAll({istiod1: xdsResponse('istiod1', [proxy1])})
    const out = renderProxyStatusTable(proxyStatusRows(syncs, {now: NOW}), {color: false, layout: 'verbose'})
    expect(out).toBe(istioctlGolden('multiXdsStatusMultiPilot_verbose.txt'))
  })
  // istioctl's -o json|yaml goldens, compared as data (istioctl's protojson output is not byte-stable by
  // design); versionInfo (istiod's push version) and typeUrl (istioctl's test input says ClientConfig,
  // a real istiod istio.io/debug/syncz) are left out: meshvm does not know the first over HTTP.
  const withoutVersion = (doc: unknown) => {
    const {versionInfo: _v, typeUrl: _t, ...rest} = doc as Record<string, unknown>
    return rest
  }
  it('--schema istioctl -o json|yaml: istioctl 1.31 multiXdsStatusSinglePilot.json and .yaml, as data', () => {
    const rows = proxyStatusRows(parseAll({istiod1: xdsResponse('istiod1', [proxy1])}), {now: NOW})
    const [doc, ...more] = istioctlSyncz(rows)
    expect(more).toEqual([])
    expect(doc!.typeUrl).toBe('istio.io/debug/syncz')
    expect(withoutVersion(doc)).toEqual(withoutVersion(JSON.parse(istioctlGolden('multiXdsStatusSinglePilot.json'))))
    expect(withoutVersion(doc)).toEqual(withoutVersion(parseYamlStream(istioctlGolden('multiXdsStatusSinglePilot.yaml'), 'golden')[0]!.value))
  })
  it("--schema istioctl with -n: only that namespace's proxies (istioctl 1.31 multiXdsStatusSingleNamespace.yaml)", () => {
    const syncs = parseAll({
      istiod1: xdsResponse('istiod1', [
        {...proxy1, namespace: 'foo'},
        {...proxy2, namespace: 'bar'},
      ]),
    })
    // collect.ts keeps the proxies of -n (istiod filters them too, when it knows ?namespace=)
    const rows = proxyStatusRows(
      syncs.filter((s) => s.namespace === 'foo'),
      {now: NOW},
    )
    expect(istioctlSyncz(rows).map(withoutVersion)).toEqual([withoutVersion(parseYamlStream(istioctlGolden('multiXdsStatusSingleNamespace.yaml'), 'golden')[0]!.value)])
  })
  it('prints only the header when no istiod reports a proxy, as istioctl 1.28+', () => {
    expect(renderProxyStatusTable([], {color: false})).toBe('NAME     CLUSTER     ISTIOD     VERSION     SUBSCRIBED TYPES\n')
    expect(renderProxyStatusTable([], {color: false, layout: 'types'})).toBe('NAME     CLUSTER     CDS     LDS     EDS     RDS     ECDS     ISTIOD     VERSION\n')
  })
})

// --- Legacy HTTP /debug/syncz (Istio 1.20–1.22) ------------------------------------------------------

const N1 = '2024-05-01T10:00:00Z/7'
const N2 = '2024-05-01T10:00:05Z/8'

describe('HTTP syncz, Istio 1.21 shape', () => {
  // istioctl 1.21's statusInput1-3 and statusInputProxyVersion, with ECDS and a cluster added
  const body = [
    {
      cluster_id: 'cluster1',
      proxy: 'proxy1.default',
      istio_version: '1.21.2',
      cluster_sent: N1,
      cluster_acked: N2,
      listener_sent: N1,
      listener_acked: N1,
      endpoint_sent: N1,
      endpoint_acked: N1,
      extensionconfig_sent: N1,
      extensionconfig_acked: N1,
    },
    {cluster_id: 'cluster1', proxy: 'proxy3.default', istio_version: '1.21.2', cluster_sent: N1, listener_acked: N1, endpoint_sent: N1, route_sent: N1, route_acked: N1},
    {
      cluster_id: 'cluster1',
      proxy: 'proxy2.legacy',
      proxy_version: '1.1',
      cluster_sent: N1,
      cluster_acked: N2,
      listener_sent: N1,
      listener_acked: N1,
      endpoint_sent: N1,
      endpoint_acked: N2,
      route_sent: N1,
      route_acked: N1,
    },
    {cluster_id: 'cluster1', proxy: 'ztunnel-abcde.istio-system', proxy_type: 'ztunnel', istio_version: '1.21.2'},
  ]
  const istiod: IstiodRef = {name: 'istiod-6c9f7d-abcde', namespace: 'istio-system', version: '1.21.2'}

  it('computes SYNCED / STALE / NOT SENT / STALE (Never Acknowledged) like istioctl 1.21', () => {
    const syncs = parseSyncz(body, istiod)
    expect(syncs.map((s) => s.shape)).toEqual(['http-legacy', 'http-legacy', 'http-legacy', 'http-legacy'])
    const rows = proxyStatusRows(syncs, {now: NOW})
    expect(rows.map((r) => r.name)).toEqual(['proxy1.default', 'proxy2.legacy', 'proxy3.default', 'ztunnel-abcde.istio-system'])
    const [p1, p2, p3, zt] = rows
    expect(p1!.status).toEqual({CDS: 'STALE', LDS: 'SYNCED', EDS: 'SYNCED', RDS: 'NOT SENT', ECDS: 'SYNCED'})
    expect(p3!.status).toEqual({CDS: 'STALE (Never Acknowledged)', LDS: 'NOT SENT', EDS: 'STALE (Never Acknowledged)', RDS: 'SYNCED', ECDS: 'NOT SENT'})
    expect(p2!.version).toBe('1.1*') // istioctl's proxy_version fallback
    expect(zt!.status.CDS).toBe('IGNORED') // nothing sent to a ztunnel is IGNORED, not NOT SENT
    expect(p1!.namespace).toBe('default')
    expectMatchesGoldenFile(renderProxyStatusTable(rows, {color: false, layout: 'types'}), `${GOLDEN}legacy-http.txt`)
    expect(renderProxyStatusTable(rows, {color: false})).toMatch(/^proxy1\.default +cluster1 +istiod-6c9f7d-abcde +1\.21\.2 +5 \(CDS,LDS,EDS,RDS,ECDS\)\nproxy2/m)
  })

  it('accepts the raw body text', () => {
    expect(parseSyncz(JSON.stringify(body), istiod)).toEqual(parseSyncz(body, istiod))
  })
})

// --- HTTP /debug/syncz with the resources map (Istio 1.23+), VMs ------------------------------------

function res(sent: string | undefined, acked: string | undefined, sentTime?: string, lastError?: string) {
  return {...(sent ? {sent} : {}), ...(acked ? {acked} : {}), ...(sentTime ? {sentTime} : {}), ...(lastError ? {lastError} : {})}
}

const SENT = '2024-11-05T10:17:55Z' // 2m5s before NOW
const resourcesBody = [
  {
    cluster_id: 'cluster1',
    proxy: 'web-7b9d8-abcde.apps',
    istio_version: '1.24.2',
    cluster_sent: N1,
    cluster_acked: N1, // legacy fields are ignored when resources is present
    resources: {
      [XDS_TYPE_URLS.CDS]: res(N2, N2, SENT),
      [XDS_TYPE_URLS.LDS]: res(N2, N2, '2024-11-05T10:05:00Z'),
      [XDS_TYPE_URLS.EDS]: res(N2, N1, '2024-11-05T10:19:59Z'),
      [XDS_TYPE_URLS.RDS]: res(N2, N2, '2024-11-04T06:00:00Z'),
      // ECDS not watched → IGNORED
    },
  },
  {
    cluster_id: 'cluster1',
    proxy: 'vm-1.vm-ns',
    istio_version: '1.22.3',
    resources: {
      [XDS_TYPE_URLS.CDS]: res(N2, N2, SENT),
      [XDS_TYPE_URLS.LDS]: res(N2, N1, SENT, 'Proto constraint validation failed (ListenerValidationError.Name: value length must be at least 1 characters)'),
      [XDS_TYPE_URLS.EDS]: res(N2, undefined, SENT),
      [XDS_TYPE_URLS.RDS]: res(undefined, undefined),
      [XDS_TYPE_URLS.ECDS]: res(N2, N2, '0001-01-01T00:00:00Z'),
    },
  },
  {
    cluster_id: 'cluster2',
    proxy: 'db-vm.data',
    istio_version: '1.24.1',
    resources: Object.fromEntries(Object.values(XDS_TYPE_URLS).map((u) => [u, res(N1, N1, '2024-11-03T08:20:00Z')])),
  },
]

const vms: VmInfo[] = [
  {name: 'vm-1', namespace: 'vm-ns', address: '10.0.0.5', health: 'Healthy', registration: 'WorkloadEntry', connected: true},
  {name: 'db-vm', namespace: 'data', address: '10.0.1.7', health: 'Unhealthy', registration: 'WorkloadAutoRegistration', connected: true},
  {name: 'batch-vm', namespace: 'jobs', address: '192.168.4.20', health: 'Unknown', registration: 'WorkloadEntry', connected: false},
  {name: 'legacy-vm-we', namespace: 'vm-ns', address: '10.0.0.9', registration: 'WorkloadEntry', connected: true, proxyId: 'legacy-host.vm-ns'},
]

describe('HTTP syncz, Istio 1.23+ resources map', () => {
  const rows = () => proxyStatusRows(parseSyncz(resourcesBody, ISTIOD), {vms, now: NOW})

  it('adds the age since the last send, in kubectl HumanDuration form', () => {
    const web = rows().find((r) => r.name === 'web-7b9d8-abcde.apps')!
    expect(web.status).toEqual({CDS: 'SYNCED (2m5s)', LDS: 'SYNCED (15m)', EDS: 'STALE (1s)', RDS: 'SYNCED (28h)', ECDS: 'IGNORED'})
    expect(web.subscribed).toEqual(['CDS', 'LDS', 'EDS', 'RDS'])
    expect(web.type).toBe('pod')
  })

  it('shows a NACK as ERROR and keeps its detail; never acknowledged; zero time means no age', () => {
    const vm = rows().find((r) => r.name === 'vm-1.vm-ns')!
    expect(vm.status).toEqual({CDS: 'SYNCED (2m5s)', LDS: 'ERROR (2m5s)', EDS: 'STALE (Never Acknowledged)', RDS: 'NOT SENT', ECDS: 'SYNCED'})
    expect(vm.xds.LDS.error).toMatch(/^Proto constraint validation failed/)
    expect(vm.xds.EDS).toMatchObject({state: 'STALE', neverAcknowledged: true})
    expect(vm).toMatchObject({type: 'vm', address: '10.0.0.5', health: 'Healthy', registration: 'WorkloadEntry'})
  })

  it('flags version skew between proxy and istiod (major.minor)', () => {
    const byName = Object.fromEntries(rows().map((r) => [r.name, r]))
    expect(byName['vm-1.vm-ns']!.versionSkew).toBe(true) // 1.22.3 vs 1.24.2
    expect(byName['db-vm.data']!.versionSkew).toBe(false) // 1.24.1 vs 1.24.2
    expect(byName['batch-vm.jobs']!.versionSkew).toBe(false) // not connected: unknown
    expect(isVersionSkewed('1.1*', '1.1.0')).toBe(false)
    expect(isVersionSkewed('1.23', '1.24')).toBe(true)
    expect(isVersionSkewed('', '1.24')).toBe(false)
  })

  it('lists registered VMs that no istiod reports as NOT CONNECTED', () => {
    const r = rows()
    const batch = r.find((x) => x.name === 'batch-vm.jobs')!
    expect(batch).toMatchObject({type: 'vm', connected: false, address: '192.168.4.20', health: 'Unknown'})
    expect(Object.values(batch.status)).toEqual(Array(5).fill('NOT CONNECTED'))
    expect(r.find((x) => x.name === 'legacy-host.vm-ns')).toMatchObject({connected: false, registration: 'WorkloadEntry'})
    expect(r.map((x) => x.name)).toEqual(['batch-vm.jobs', 'db-vm.data', 'legacy-host.vm-ns', 'vm-1.vm-ns', 'web-7b9d8-abcde.apps'])
  })

  it('shows an unhealthy VM that is in sync', () => {
    const db = rows().find((r) => r.name === 'db-vm.data')!
    expect(db).toMatchObject({type: 'vm', connected: true, health: 'Unhealthy', cluster: 'cluster2'})
    expect(db.status.CDS).toBe('SYNCED (2d2h)')
  })

  it('renders the default (subscribed) wide table, and the types layout and its wide form (goldens)', () => {
    expect(renderProxyStatusTable(rows(), {color: false, wide: true})).toBe(renderProxyStatusTable(rows(), {color: false, layout: 'subscribed', wide: true}))
    expectMatchesGoldenFile(renderProxyStatusTable(rows(), {color: false, wide: true}), `${GOLDEN}vms-subscribed-wide.txt`)
    expectMatchesGoldenFile(renderProxyStatusTable(rows(), {color: false, layout: 'types'}), `${GOLDEN}vms.txt`)
    expectMatchesGoldenFile(renderProxyStatusTable(rows(), {color: false, wide: true, layout: 'types'}), `${GOLDEN}vms-wide.txt`)
  })

  it('renders the stable JSON (golden)', () => {
    // As the command prints it: each row through proxyStatusJsonItem (placeholder rows are table-only), in the list document.
    const list = proxyStatusList(
      rows()
        .filter((r) => r.type !== 'istiod')
        .map(proxyStatusJsonItem),
      [],
    )
    expect(list.apiVersion).toBe('meshvm.io/v1alpha1')
    expect(list.kind).toBe('ProxyStatusList')
    expectMatchesGoldenFile(JSON.stringify(list, null, 2) + '\n', `${GOLDEN}vms.json`)
  })

  it('colours statuses only when asked, without moving columns', () => {
    const plain = renderProxyStatusTable(rows(), {color: false, wide: true, layout: 'types'})
    expect(plain).not.toMatch(/\u001B\[/)
    const coloured = renderProxyStatusTable(rows(), {color: true, wide: true, layout: 'types'})
    expect(stripAnsi(coloured)).toBe(plain)
    expect(coloured).toContain('\u001B[32mSYNCED (2m5s)\u001B[39m')
    expect(coloured).toContain('\u001B[33mSTALE (Never Acknowledged)\u001B[39m')
    expect(coloured).toContain('\u001B[31mERROR (2m5s)\u001B[39m')
    expect(coloured).toContain('\u001B[31mNOT CONNECTED\u001B[39m')
    expect(coloured).toContain('\u001B[31mUnhealthy\u001B[39m')
  })
})

// --- xDS istio.io/debug/syncz with times and errors (Istio 1.24) ----------------------------------

describe('xDS syncz, Istio 1.24 shape', () => {
  // the sample payload of istioctl-behaviour.md §4.4
  const sample = {
    versionInfo: '2024-11-05T10:15:30Z/57',
    typeUrl: 'istio.io/debug/syncz',
    nonce: '2024-11-05T10:15:30Z/5731f6c7e2-8a5d-4c1e-9a0b-2f1d7c3e9b41',
    controlPlane: {
      identifier: '{"Component":"istiod","ID":"istiod-7d4b9c6f8-x2k9p","Info":{"version":"1.24.2","revision":"abc123","golang_version":"go1.23.4","status":"Clean","tag":"1.24.2"}}',
    },
    resources: [
      {
        '@type': 'type.googleapis.com/envoy.service.status.v3.ClientConfig',
        node: {id: 'vm-1.vm-ns', metadata: {CLUSTER_ID: 'cluster1', NAMESPACE: 'vm-ns', ISTIO_VERSION: '1.24.2'}},
        genericXdsConfigs: [
          {typeUrl: XDS_TYPE_URLS.CDS, configStatus: 'SYNCED', lastUpdated: '2024-11-05T10:15:31.120Z'},
          {typeUrl: XDS_TYPE_URLS.ECDS, configStatus: 'NOT_SENT', lastUpdated: '0001-01-01T00:00:00Z'},
          {typeUrl: XDS_TYPE_URLS.EDS, configStatus: 'STALE', lastUpdated: '2024-11-05T10:15:31.300Z'},
          {typeUrl: XDS_TYPE_URLS.LDS, configStatus: 'SYNCED', lastUpdated: '2024-11-05T10:15:31.150Z'},
          {
            typeUrl: XDS_TYPE_URLS.RDS,
            configStatus: 'ERROR',
            lastUpdated: '2024-11-05T10:15:31.200Z',
            errorState: {lastUpdateAttempt: '2024-11-05T10:15:31.200Z', details: 'Proto constraint validation failed ...'},
          },
          {typeUrl: 'type.googleapis.com/istio.networking.nds.v1.NameTable', configStatus: 'SYNCED'},
        ],
      },
    ],
  }

  it('reads statuses, ages, NACK details and the istiod identity', () => {
    const [s] = parseSyncz(sample, {name: 'istiod', namespace: 'istio-system'})
    expect(s).toMatchObject({proxyId: 'vm-1.vm-ns', namespace: 'vm-ns', clusterId: 'cluster1', proxyVersion: '1.24.2', shape: 'xds'})
    // Info.revision ("abc123") is istiod's git commit (BuildInfo.GitRevision), not its istio.io/rev.
    expect(s!.istiod).toEqual({name: 'istiod-7d4b9c6f8-x2k9p', namespace: 'istio-system', version: '1.24.2'})
    expect(parseSyncz(sample, {name: 'istiod', namespace: 'istio-system', revision: 'canary'})[0]!.istiod.revision).toBe('canary')
    const [row] = proxyStatusRows([s!], {now: NOW})
    expect(row!.status).toEqual({CDS: 'SYNCED (4m28s)', LDS: 'SYNCED (4m28s)', EDS: 'STALE (4m28s)', RDS: 'ERROR (4m28s)', ECDS: 'NOT SENT'})
    expect(row!.xds.RDS.error).toBe('Proto constraint validation failed ...')
  })

  it('keeps the pod name meshvm asked when controlPlane is missing or bad', () => {
    const {controlPlane: _, ...noCp} = sample
    expect(parseSyncz(noCp, ISTIOD)[0]!.istiod).toEqual(ISTIOD)
    expect(parseSyncz({...sample, controlPlane: {identifier: '{bad'}}, ISTIOD)[0]!.istiod).toEqual(ISTIOD)
  })

  it('understands the deprecated per-type xdsConfig', () => {
    const [s] = parseSyncz(
      {
        resources: [
          {
            node: {id: 'old.ns'},
            xdsConfig: [
              {status: 'SYNCED', listenerConfig: {}},
              {status: 'STALE', clusterConfig: {}},
            ],
          },
        ],
      },
      ISTIOD,
    )
    expect(xdsStatus(s!.types.LDS)).toBe('SYNCED')
    expect(xdsStatus(s!.types.CDS)).toBe('STALE')
    expect(xdsStatus(s!.types.RDS)).toBe('IGNORED')
  })

  it('returns no proxies for an empty response', () => {
    expect(parseSyncz({typeUrl: 'istio.io/debug/syncz', resources: []}, ISTIOD)).toEqual([])
    expect(parseSyncz([], ISTIOD)).toEqual([])
  })
})

describe('status logic', () => {
  it('orders ERROR > NOT SENT > SYNCED > never acknowledged > STALE', () => {
    expect(nonceState('a', 'a', 'nack')).toEqual({state: 'ERROR', neverAcknowledged: false})
    expect(nonceState('', 'a')).toEqual({state: 'NOT_SENT', neverAcknowledged: false})
    expect(nonceState(undefined, undefined)).toEqual({state: 'NOT_SENT', neverAcknowledged: false})
    expect(nonceState('a', 'a')).toEqual({state: 'SYNCED', neverAcknowledged: false})
    expect(nonceState('b', '')).toEqual({state: 'STALE', neverAcknowledged: true})
    expect(nonceState('b', 'a')).toEqual({state: 'STALE', neverAcknowledged: false})
  })
  it('formats ages like Go HumanDuration, including clock skew', () => {
    const at = (ms: number) => xdsStatus({state: 'SYNCED', subscribed: true, neverAcknowledged: false, lastSent: new Date(NOW.getTime() - ms).toISOString()}, NOW)
    expect(at(45_000)).toBe('SYNCED (45s)')
    expect(at(125_000)).toBe('SYNCED (2m5s)')
    expect(at(3 * 3600_000 + 4 * 60_000)).toBe('SYNCED (3h4m)')
    expect(at(76 * 3600_000)).toBe('SYNCED (3d4h)')
    expect(at(-1500)).toBe('SYNCED (0s)') // Go truncates -1.5s to -1s
    expect(at(-5000)).toBe('SYNCED (<invalid>)')
  })
})

describe('garbage input', () => {
  const cases: [string, unknown, RegExp][] = [
    ["istioctl's gobbledygook", 'gobbledygook', /: not JSON$/],
    ['null', null, /got null$/],
    ['a number', 42, /got a number$/],
    ['an unrelated object', {hello: 'world'}, /got an object$/],
    ['an array of strings', ['x'], /item 0 must be an object, got a string$/],
    ['an item without proxy', [{cluster_id: 'c'}], /item 0 has no "proxy"$/],
    ['a non-string nonce', [{proxy: 'p.ns', cluster_sent: 5}], /item 0 \(p\.ns\): "cluster_sent" must be a string, got a number$/],
    ['resources not a map', [{proxy: 'p.ns', resources: []}], /"resources" must be an object keyed by type URL, got an array$/],
    ['a bad resources entry', [{proxy: 'p.ns', resources: {[XDS_TYPE_URLS.CDS]: 'x'}}], /must be an object, got a string$/],
    ['xDS resources not an array', {typeUrl: 'istio.io/debug/syncz', resources: 'x'}, /"resources" must be an array, got a string$/],
    ['a ClientConfig without node id', {resources: [{genericXdsConfigs: []}]}, /resources\[0\] has no node\.id$/],
    ['an unknown config status', {resources: [{node: {id: 'p.ns'}, genericXdsConfigs: [{typeUrl: XDS_TYPE_URLS.CDS, configStatus: 'WEIRD'}]}]}, /unknown config status "WEIRD"$/],
    // An inherited property's name is not a status either.
    [
      'a config status named after an Object property',
      {resources: [{node: {id: 'p.ns'}, genericXdsConfigs: [{typeUrl: XDS_TYPE_URLS.CDS, configStatus: 'constructor'}]}]},
      /unknown config status "constructor"$/,
    ],
  ]
  it.each(cases)('%s → a one-line MeshvmError naming the istiod', (_name, input, tail) => {
    let err: unknown
    try {
      parseSyncz(input, ISTIOD)
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(MeshvmError)
    const message = (err as Error).message
    expect(message.startsWith('istiod istio-system/istiod-7d4b9c6f8-x2k9p: unreadable /debug/syncz response: ')).toBe(true)
    expect(message).toMatch(tail)
    expect(message).not.toContain('\n')
  })
})

describe('VM records and rows for many proxies', () => {
  const we = (name: string, labels: Record<string, string>) => ({
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadEntry',
    metadata: {name, namespace: 'vms', labels, annotations: {'istio.io/autoRegistrationGroup': 'web', 'istio.io/workloadController': 'istiod-a', 'istio.io/connectedAt': '2024-01-01T00:00:00Z'}},
    spec: {address: '10.0.0.1', labels: {app: 'web', tier: 'spec'}},
  })

  it('builds labels (spec.labels overridden by metadata.labels) unless asked not to; the rest is the same', () => {
    const entries = [we('web-10.0.0.1', {tier: 'meta'}), we('web-10.0.0.2', {})]
    const full = vmRecords(entries, [])
    expect(full.map((r) => r.labels)).toEqual([
      {app: 'web', tier: 'meta'},
      {app: 'web', tier: 'spec'},
    ])
    const bare = vmRecords(entries, [], {labels: false})
    expect(bare.map((r) => r.labels)).toEqual([{}, {}])
    expect(bare.map(({labels: _l, ...rest}) => rest)).toEqual(full.map(({labels: _l, ...rest}) => rest))
  })

  it('marks version skew per row when consecutive rows change versions', () => {
    const a: IstiodRef = {name: 'istiod-a', namespace: 'istio-system', version: '1.24.2'}
    const b: IstiodRef = {name: 'istiod-b', namespace: 'istio-system', version: '1.23.1'}
    const sync = (proxyId: string, proxyVersion: string, istiod: IstiodRef): ProxySync => ({
      proxyId,
      namespace: 'apps',
      clusterId: 'c1',
      proxyVersion,
      istiod,
      shape: 'http-resources',
      types: parseSyncz([{proxy: 'x.apps'}], a)[0]!.types,
    })
    const rows = proxyStatusRows([
      sync('p1.apps', '1.24.2', a),
      sync('p2.apps', '1.24.2', a),
      sync('p3.apps', '1.24.2', b),
      sync('p4.apps', '1.23.0', b),
      sync('p5.apps', '1.23.0', a),
      sync('p6.apps', '', a),
    ])
    expect(rows.map((r) => [r.name, r.versionSkew])).toEqual([
      ['p1.apps', false],
      ['p2.apps', false],
      ['p3.apps', true],
      ['p4.apps', false],
      ['p5.apps', true],
      ['p6.apps', false],
    ])
  })
})
