import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {runCli} from '../helpers/cli.js'
import {kubectl, startCluster, type TestCluster} from '../helpers/cluster.js'
import {DEMO_ISTIODS, seedDemoMesh} from './demo-mesh.js'

let cluster: TestCluster
beforeAll(async () => {
  cluster = await startCluster()
  seedDemoMesh(cluster)
})
afterAll(() => cluster?.stop())

describe('demo mesh', () => {
  it('has 3 namespaces, 2 istiod revisions, 40 pods with sidecars and 12 VMs, some unhealthy, disconnected or stale', async () => {
    const appPods = ['shop', 'payments', 'legacy'].flatMap((ns) => cluster.store.list('/pods', ns))
    expect(appPods).toHaveLength(40)
    const istiods = cluster.store.list('/pods', 'istio-system')
    expect(istiods.map((p) => p.metadata.labels?.['istio.io/rev']).sort()).toEqual(['1-23', 'default'])
    const entries = ['shop', 'payments', 'legacy'].flatMap((ns) => cluster.store.list('networking.istio.io/workloadentries', ns))
    expect(entries).toHaveLength(12)
    const unhealthy = entries.filter((e) => (e.status as {conditions?: {status: string}[]} | undefined)?.conditions?.[0]?.status === 'False')
    expect(unhealthy.length).toBeGreaterThanOrEqual(2)
    expect([...cluster.mesh.proxies.values()].filter((p) => p.istiod === DEMO_ISTIODS.canary).length).toBeGreaterThan(0)
    const wars = ['shop', 'legacy'].flatMap((ns) => cluster.store.list('runtime.onboarding.tetrate.io/workloadautoregistrations', ns))
    expect(wars.filter((w) => (w.status as {conditions: {status: string}[]}).conditions[0]!.status === 'False')).toHaveLength(2)
    const res = await kubectl(cluster, ['get', 'war', '-A'])
    expect(res.stdout.split('\n').filter((l) => /\sFalse\s/.test(l))).toHaveLength(2)
  })

  it('proxy-status reads the demo over HTTP debug, and over xDS alone as with demo:cluster --no-debug-http: the same proxies and states', async () => {
    // Status words only: xDS reports no nonces (no "Never Acknowledged") and gives 1.21-shape istiods ages.
    const states = (table: string) => table.trim().split('\n').slice(1).map((l) => l.replace(/ \([^)]*\)/g, '').split(/\s{2,}/).slice(0, 7).join('|')).sort()
    const http = await runCli(['proxy-status'], {env: cluster.env})
    expect(http.code, http.stderr).toBe(0)
    for (const name of cluster.mesh.istiods.keys()) cluster.mesh.setIstiod(name, {debugHttp: false})
    try {
      const xds = await runCli(['proxy-status', '--debug'], {env: cluster.env})
      expect(xds.code, xds.stderr).toBe(0)
      expect(states(xds.stdout)).toEqual(states(http.stdout))
      expect(xds.stderr.match(/: xDS over port-forward to :15012 \(TLS verified for istiod(-1-23)?\.istio-system\.svc/g)).toHaveLength(2)
    } finally {
      for (const name of cluster.mesh.istiods.keys()) cluster.mesh.setIstiod(name, {debugHttp: true})
    }
  })
})
