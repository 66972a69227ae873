/**
 * Pairing proxies with their registrations (vms.ts), by what the proxy reports of itself (istiod's
 * /debug/adsz, adsz.ts), and the detail view never saying something it does not know (detail.ts).
 */
import {describe, expect, it} from 'vitest'
import {parseAdsz} from '../../src/lib/proxy-status/adsz.js'
import {renderProxyDetail, rowsForTarget} from '../../src/lib/proxy-status/detail.js'
import {proxyStatusRows, type IstiodRef, type ProxySync, type XdsType} from '../../src/lib/proxy-status/status.js'
import {pairVms, vmRecords, type VmRecord} from '../../src/lib/proxy-status/vms.js'

const ISTIOD: IstiodRef = {name: 'istiod-a', namespace: 'istio-system', version: '1.30.8'}
const NOW = new Date('2026-11-23T10:00:00Z')

function sync(proxyId: string): ProxySync {
  const types = {} as ProxySync['types']
  for (const t of ['CDS', 'LDS', 'EDS', 'RDS', 'ECDS'] as XdsType[]) types[t] = {state: 'SYNCED', subscribed: true, neverAcknowledged: false, lastSent: '2026-11-23T09:58:00Z'}
  return {proxyId, namespace: 'payments', clusterId: 'cluster1', proxyVersion: '1.30.8', istiod: ISTIOD, types, shape: 'http-resources'}
}

/** An auto-registered entry as istiod writes it: GROUP-IP, its group, its istiod, a Healthy condition. */
function entry(ip: string, extra: {labels?: Record<string, string>; conditions?: {type: string; status: string; reason?: string; message?: string}[]; annotations?: Record<string, string>} = {}) {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadEntry',
    metadata: {
      name: `mainframe-gw-${ip}`,
      namespace: 'payments',
      labels: {app: 'mainframe-gw', ...extra.labels},
      annotations: {
        'istio.io/autoRegistrationGroup': 'mainframe-gw',
        'istio.io/workloadController': 'istiod-a',
        'istio.io/connectedAt': '2026-11-23T09:58:00Z',
        'proxy.istio.io/health-checks-enabled': 'true',
        ...extra.annotations,
      },
    },
    spec: {address: ip, labels: {app: 'mainframe-gw'}, serviceAccount: 'default'},
    status: {conditions: [{type: 'Healthy', status: 'True', lastTransitionTime: '2026-11-23T09:59:00Z'}, ...(extra.conditions ?? [])]},
  }
}

/** /debug/adsz as istiod 1.30 answers it: the VM's peer is the east-west gateway, its address is in INSTANCE_IPS. */
const ADSZ = JSON.stringify({
  totalClients: 3,
  clients: [
    {
      connectionId: 'gw-a.payments-7',
      connectedAt: '2026-11-23T09:58:00Z',
      address: '10.244.0.9:40001',
      metadata: {INSTANCE_IPS: '192.168.10.22,fe80::1', NAMESPACE: 'payments', AUTO_REGISTER_GROUP: 'mainframe-gw'},
    },
    {
      connectionId: 'gw-b.payments-8',
      connectedAt: '2026-11-23T09:58:00Z',
      address: '10.244.0.9:40002',
      metadata: {INSTANCE_IPS: '192.168.10.21', NAMESPACE: 'payments', AUTO_REGISTER_GROUP: 'mainframe-gw'},
    },
    {connectionId: 'istioctl-3', connectedAt: '2026-11-23T09:58:00Z', address: '127.0.0.1:1'},
  ],
})

function pair(withAdsz: boolean): {records: VmRecord[]; vms: VmRecord[]} {
  const records = vmRecords(
    [
      entry('192.168.10.21'),
      entry('192.168.10.22', {
        labels: {'networking.istio.io/tunnel': 'http'},
        conditions: [{type: 'istio.io/WaypointBound', status: 'False', reason: 'WaypointNotFound', message: 'waypoint "wp" not found'}],
      }),
    ],
    [],
  )
  const {vms} = pairVms({
    syncs: [sync('gw-a.payments'), sync('gw-b.payments')],
    vms: records,
    pods: {labels: new Map(), listed: new Set(['payments'])},
    nodes: withAdsz ? parseAdsz(ADSZ) : undefined,
  })
  return {records, vms}
}

describe('adsz', () => {
  it('reads proxy ID (connection ID without its counter), INSTANCE_IPS in order, group and namespace; skips connections without metadata', () => {
    const nodes = parseAdsz(ADSZ)
    expect([...nodes.keys()]).toEqual(['gw-a.payments', 'gw-b.payments'])
    expect(nodes.get('gw-a.payments')).toEqual({proxyId: 'gw-a.payments', ips: ['192.168.10.22', 'fe80::1'], namespace: 'payments', autoRegisterGroup: 'mainframe-gw'})
    expect(parseAdsz('<html>')).toEqual(new Map())
    expect(parseAdsz({clients: 'x'})).toEqual(new Map())
  })
})

describe('pairing two VMs of one group on one istiod', () => {
  it('pairs each proxy with the entry of the address it reports (not the order, not the peer address)', () => {
    const {vms} = pair(true)
    const byProxy = Object.fromEntries(vms.map((v) => [v.proxyId, v.workloadEntry]))
    expect(byProxy).toEqual({'gw-a.payments': 'mainframe-gw-192.168.10.22', 'gw-b.payments': 'mainframe-gw-192.168.10.21'})
    const rows = proxyStatusRows([sync('gw-a.payments'), sync('gw-b.payments')], {vms, now: NOW})
    expect(rows.map((r) => [r.name, r.address, r.health])).toEqual([
      ['gw-a.payments', '192.168.10.22', 'Healthy'],
      ['gw-b.payments', '192.168.10.21', 'Healthy'],
    ])
  })

  it('NAME by registration finds its proxy; the detail shows health, the tunnel label and WaypointBound from the entry', () => {
    const {vms} = pair(true)
    const rows = proxyStatusRows([sync('gw-a.payments'), sync('gw-b.payments')], {vms, now: NOW})
    const of = (r: {name: string}) => vms.find((v) => v.proxyId === r.name)
    const found = rowsForTarget(rows, {name: 'mainframe-gw-192.168.10.22', namespace: 'payments'}, of)
    expect(found.map((r) => r.name)).toEqual(['gw-a.payments'])
    const text = renderProxyDetail(found, of, NOW)
    expect(text).toContain('  WorkloadEntry:  mainframe-gw-192.168.10.22\n')
    expect(text).toContain('  Health:         Healthy (since 60s)\n')
    expect(text).toContain('  Tunnel:         http (label networking.istio.io/tunnel)\n')
    expect(text).toContain('  WaypointBound:  False (WaypointNotFound): waypoint "wp" not found\n')
    expect(text).not.toContain('health checks off')
  })

  it('without adsz: no guess, but the registration name still finds the proxies it may be, and nothing false is said', () => {
    const {vms} = pair(false)
    const rows = proxyStatusRows([sync('gw-a.payments'), sync('gw-b.payments')], {vms, now: NOW})
    expect(rows.map((r) => [r.name, r.address ?? '', r.health ?? ''])).toEqual([
      ['gw-a.payments', '', ''],
      ['gw-b.payments', '', ''],
    ])
    const of = (r: {name: string}) => vms.find((v) => v.proxyId === r.name)
    const found = rowsForTarget(rows, {name: 'mainframe-gw-192.168.10.21', namespace: 'payments'}, of)
    expect(found.map((r) => r.name)).toEqual(['gw-a.payments', 'gw-b.payments'])
    const text = renderProxyDetail(found, of, NOW)
    expect(text).toContain('  WorkloadEntry:  one of mainframe-gw-192.168.10.21, mainframe-gw-192.168.10.22 (istiod did not say which: its /debug/adsz could not be read)\n')
    expect(text).not.toContain('Health:')
  })

  it('an entry without a Healthy condition: "health checks off" only when the entry has no health-checks annotation', () => {
    const on = vmRecords([{...entry('10.0.0.1'), status: {}}], [])
    const off = vmRecords([{...entry('10.0.0.1', {annotations: {'proxy.istio.io/health-checks-enabled': 'false'}}), status: {}}], [])
    const row = proxyStatusRows([], {vms: on, now: NOW})
    expect(renderProxyDetail(row, () => on[0], NOW)).toContain('Health:         <no Healthy condition yet: health checks on, no probe result reported>')
    expect(renderProxyDetail(row, () => off[0], NOW)).toContain('Health:         <no Healthy condition: health checks off (no proxy.istio.io/health-checks-enabled annotation)>')
  })
})

describe('an ambiguous proxy of a large group', () => {
  it('names the first five entries it may be, and how many more', () => {
    const ips = Array.from({length: 8}, (_, i) => `10.0.0.${i + 1}`)
    const records = vmRecords(
      ips.map((ip) => entry(ip)),
      [],
    )
    const ids = ips.map((_, i) => `gw-${i}.payments`)
    const {vms} = pairVms({syncs: ids.map(sync), vms: records, pods: {labels: new Map(), listed: new Set(['payments'])}})
    const rows = proxyStatusRows(ids.map(sync), {vms, now: NOW})
    const text = renderProxyDetail(rows.slice(0, 1), (r) => vms.find((v) => v.proxyId === r.name), NOW)
    expect(text).toContain(
      'WorkloadEntry:  one of mainframe-gw-10.0.0.1, mainframe-gw-10.0.0.2, mainframe-gw-10.0.0.3, mainframe-gw-10.0.0.4, mainframe-gw-10.0.0.5 and 3 more (istiod did not say which',
    )
  })
})
