import {mkdtempSync, rmSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {runCli} from '../helpers/cli.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {testPki} from '../cluster/pki.js'
import {VmPlane} from '../cluster/vm-services.js'
import {startVm} from './run.js'

let cluster: TestCluster
let plane: VmPlane
let dir: string
beforeAll(async () => {
  cluster = await startCluster({rootCertDelayMs: 100})
  plane = new VmPlane({store: cluster.store, pki: testPki(), mesh: cluster.mesh, autoregistration: {gracePeriodMs: 1500}})
  await plane.start()
  dir = mkdtempSync(join(cluster.dir, 'vm-'))
})
afterAll(async () => {
  await plane?.stop()
  await cluster?.stop()
})

describe('a VM joins with the bundle meshvm writes', () => {
  it('joins', async () => {
    cluster.store.create('/namespaces', 'Namespace', {metadata: {name: 'apps', labels: {'kubernetes.io/metadata.name': 'apps'}}})
    await new Promise((r) => setTimeout(r, 300))
    const bundle = join(dir, 'web')
    const res = await runCli(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--probe-http', '8080/ready', '--probe-period', '1', '-s', 'web-vm', '--create-service-account', '--apply', '--bundle', bundle, '--autoregister'], {env: cluster.env})
    expect(res.stderr).not.toMatch(/Error/)
    expect(res.code).toBe(0)
    const vm = startVm(bundle, {address: '10.0.0.5', hostname: 'vm-1'})
    await vm.waitFor(/SYNCED/)
    await vm.waitFor(/readiness probe: healthy/)
    console.log(vm.stdout(), vm.stderr())
    const we = cluster.store.get('networking.istio.io/workloadentries', 'apps', 'web-10.0.0.5')
    console.log(JSON.stringify(we, null, 1))
    vm.child.kill('SIGTERM')
    await vm.done
  })
})
