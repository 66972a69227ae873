import {mkdtempSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {runCli} from '../helpers/cli.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {DEMO_ISTIODS, seedDemoMesh, startDemoVmPlane} from '../cluster/demo-mesh.js'
import type {VmPlane} from '../cluster/vm-services.js'
import {startVm} from './run.js'

let cluster: TestCluster
let plane: VmPlane
beforeAll(async () => {
  cluster = await startCluster({rootCertDelayMs: 500})
  seedDemoMesh(cluster)
  plane = await startDemoVmPlane(cluster)
})
afterAll(async () => {
  await plane?.stop()
  await cluster?.stop()
})

describe('the demo', () => {
  it('names a loopback east-west gateway where istiod answers: a bundle written against the demo (canary revision) works as is', async () => {
    const svc = cluster.store.get('/services', 'istio-system', 'istio-eastwestgateway')!
    expect((svc.status as {loadBalancer: {ingress: {ip: string}[]}}).loadBalancer.ingress[0]!.ip).toBe(plane.gateway.address)
    const bundle = join(mkdtempSync(join(cluster.dir, 'demo-')), 'db')
    const res = await runCli(['onboard', 'db', '-n', 'demo-vms', '--create-namespace', '-p', 'tcp=5432', '--apply', '--bundle', bundle, '--autoregister', '-r', '1-31'], {env: cluster.env})
    expect(res.code, res.stderr).toBe(0)
    expect(readFileSync(join(bundle, 'hosts'), 'utf8')).toBe(`${plane.gateway.address} istiod-1-31.istio-system.svc\n`)
    const vm = startVm(bundle, {address: '10.10.0.5', hostname: 'db-1'})
    try {
      await vm.waitFor(/configuration acknowledged \(SYNCED\)/)
      // The gateway routed on SNI to the canary istiod, which now holds the VM's entry.
      const we = cluster.store.get('networking.istio.io/workloadentries', 'demo-vms', 'db-10.10.0.5')!
      expect(we.metadata.annotations?.['istio.io/workloadController']).toBe(DEMO_ISTIODS.canary)
      expect(cluster.mesh.proxies.get('db-1.demo-vms')?.istiod).toBe(DEMO_ISTIODS.canary)
    } finally {
      vm.child.kill('SIGTERM')
      await vm.done
    }
  }, 120_000)
})
