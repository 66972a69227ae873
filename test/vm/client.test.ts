/**
 * The VM client that test:real runs against a real istiod (test/real/vm/client.ts), and the same
 * scenario (test/real/vm/scenario.ts), against the simulated istiod: what the simulation does for a
 * VM must be what the real one does.
 */
import {mkdtempSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {runCli, STACK_TRACE} from '../helpers/cli.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {testPki} from '../cluster/pki.js'
import {VmPlane} from '../cluster/vm-services.js'
import {vmJoinScenario, type SynczEntry, type WorkloadEntry} from '../real/vm/scenario.js'

let cluster: TestCluster
let plane: VmPlane
beforeAll(async () => {
  cluster = await startCluster({rootCertDelayMs: 0})
  plane = new VmPlane({store: cluster.store, pki: testPki(), mesh: cluster.mesh, autoregistration: {gracePeriodMs: 2000}})
  await plane.start()
})
afterAll(async () => {
  await plane?.stop()
  await cluster?.stop()
})

describe('the real-istiod VM client against the simulated istiod', () => {
  it('certificate, WorkloadEntry, Healthy True then False, SYNCED in syncz, disconnectedAt, deleted after the grace period', async () => {
    const ns = 'vmclient'
    const bundle = join(mkdtempSync(join(cluster.dir, 'vm-')), 'web')
    const res = await runCli(
      ['onboard', 'web', '-n', ns, '-p', 'http=8080', '--probe-http', '8080/ready', '-s', 'web-vm', '--create-namespace', '--create-service-account', '--apply', '--bundle', bundle, '--autoregister'],
      {env: cluster.env},
    )
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(res.code, res.stderr).toBe(0)
    const istiod = [...cluster.mesh.istiods.keys()][0]!
    await vmJoinScenario({
      bundleDir: bundle,
      istiodAddress: `${plane.gateway.address}:15012`,
      namespace: ns,
      group: 'web',
      serviceAccount: 'web-vm',
      groupLabels: {app: 'web'},
      instanceIp: '10.0.7.1',
      istiodName: istiod,
      workloadEntry: async (name) => cluster.store.get('networking.istio.io/workloadentries', ns, name) as WorkloadEntry | undefined,
      syncz: async () => cluster.mesh.syncz(istiod) as SynczEntry[],
    })
  }, 60_000)
})
