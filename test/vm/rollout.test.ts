/**
 * war rollout --restart-command against simulated VMs: the environment the command gets, at most
 * --max-unavailable entries gone at once, and a command that fails.
 */
import {mkdtempSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {runCli, STACK_TRACE} from '../helpers/cli.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {testPki} from '../cluster/pki.js'
import {VmPlane} from '../cluster/vm-services.js'
import {startVm, type RunningVm} from './run.js'

const WE = 'networking.istio.io/workloadentries'
const WG = 'networking.istio.io/workloadgroups'

let cluster: TestCluster
let plane: VmPlane
let dir: string
const vms: RunningVm[] = []
beforeAll(async () => {
  cluster = await startCluster({rootCertDelayMs: 100})
  plane = new VmPlane({store: cluster.store, pki: testPki(), mesh: cluster.mesh, autoregistration: {gracePeriodMs: 60_000}})
  await plane.start()
  dir = mkdtempSync(join(cluster.dir, 'roll-'))
})
afterAll(async () => {
  for (const vm of vms) if (vm.child.exitCode === null) vm.child.kill('SIGKILL')
  await plane?.stop()
  await cluster?.stop()
})

describe('war rollout --restart-command', {timeout: 180_000}, () => {
  it('runs the command with MESHVM_VM_* for each stale entry, never more than --max-unavailable entries away at once', async () => {
    const ns = 'roll-vms'
    const bundle = join(dir, 'web')
    const res = await runCli(['onboard', 'web', '-n', ns, '-p', 'http=8080', '--create-namespace', '--apply', '--bundle', bundle, '--autoregister'], {env: cluster.env})
    expect(res.code, res.stderr).toBe(0)
    const running = ['10.0.2.1', '10.0.2.2', '10.0.2.3'].map((address, i) => {
      const v = startVm(bundle, {address, hostname: `vm-${i}`})
      vms.push(v)
      return v
    })
    for (const v of running) await v.waitFor(/SYNCED/)
    const pids = await Promise.all(running.map((v) => v.pid()))
    const g = cluster.store.get(WG, ns, 'web')!
    cluster.store.update(WG, {...g, spec: {...(g.spec as object), template: {serviceAccount: 'default', ports: {http: 9090}}}})

    // How many of the three entries are missing at once.
    let missing = 0
    let mostMissing = 0
    const stop = cluster.store.onEvent((e) => {
      if (e.resource !== WE || e.object.metadata.namespace !== ns) return
      if (e.type === 'DELETED') missing++
      if (e.type === 'ADDED') missing--
      mostMissing = Math.max(mostMissing, missing)
    })
    const log = join(dir, 'restarts.log')
    // The command finds the VM's pid by its address (a real one would ssh to "$MESHVM_VM_ADDRESS").
    const table = ['10.0.2.1', '10.0.2.2', '10.0.2.3'].map((a, i) => `${a}) kill -HUP ${pids[i]} ;;`).join(' ')
    const command = `echo "$MESHVM_VM_NAME $MESHVM_VM_ADDRESS $MESHVM_VM_HOSTNAME $MESHVM_NAMESPACE" >> ${log}; case "$MESHVM_VM_ADDRESS" in ${table} esac`
    try {
      const rolled = await runCli(['war', 'rollout', 'web', '-n', ns, '--restart-command', command, '--max-unavailable', '1', '--poll-interval', '100ms'], {env: cluster.env, timeoutMs: 120_000})
      expect(rolled.stderr).not.toMatch(STACK_TRACE)
      expect(rolled.code, rolled.stderr).toBe(0)
      expect(rolled.stderr).toContain(`[1/3] deleted WorkloadEntry web-10.0.2.1; restarting the sidecar of 10.0.2.1 (--restart-command)`)
      expect(rolled.stderr).toContain(`Rollout of workloadgroup ${ns}/web complete: 3 re-onboarded, 0 already up to date.`)
    } finally {
      stop()
    }
    expect(readFileSync(log, 'utf8')).toBe(['10.0.2.1', '10.0.2.2', '10.0.2.3'].map((a) => `web-${a} ${a} ${a} ${ns}\n`).join(''))
    expect(mostMissing).toBe(1)
    for (const a of ['10.0.2.1', '10.0.2.2', '10.0.2.3']) expect((cluster.store.get(WE, ns, `web-${a}`)!.spec as {ports: unknown}).ports).toEqual({http: 9090})
  })

  it('stops when the command fails: exit 1, the entry stays awaited for the next run', async () => {
    const ns = 'roll-vms'
    const g = cluster.store.get(WG, ns, 'web')!
    cluster.store.update(WG, {...g, spec: {...(g.spec as object), template: {serviceAccount: 'default', ports: {http: 9191}}}})
    const res = await runCli(
      ['war', 'rollout', 'web', '-n', ns, '--restart-command', 'echo "ssh: connect to host $MESHVM_VM_ADDRESS port 22: Connection refused" >&2; exit 255', '--poll-interval', '100ms'],
      {env: cluster.env, timeoutMs: 60_000},
    )
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(res.code).toBe(1)
    expect(res.stderr).toContain(`Error: rollout of workloadgroup ${ns}/web (generation 3) stopped: the restart command for web-10.0.2.1 (10.0.2.1) exited with code 255`)
    expect(res.stdout).toMatch(/^web-10\.0\.2\.1 +failed +- +deleted; the restart command exited with code 255: ssh: connect to host 10\.0\.2\.1 port 22: Connection refused$/m)
    // Remembered in the rollout's Lease, which it gave back; the group carries nothing of the rollout.
    const lease = cluster.store.get('coordination.k8s.io/leases', ns, 'meshvm-rollout-web')!
    expect(JSON.parse(lease.metadata.annotations!['rollout.meshvm.io/awaiting']!)).toEqual(['workloadentry/web-10.0.2.1'])
    expect((lease.spec as {holderIdentity?: string}).holderIdentity).toBeUndefined()
    expect(Object.keys(cluster.store.get(WG, ns, 'web')!.metadata.annotations ?? {}).filter((k) => k.startsWith('rollout.meshvm.io/'))).toEqual([])
  })

  it("an entry that does not come back in time: exit 9, and the hint points at Istio's sidecar service, not the TSB agent", async () => {
    const ns = 'roll-vms'
    // The command "succeeds" but restarts nothing: web-10.0.2.1 (deleted by the run above) never returns.
    const res = await runCli(['war', 'rollout', 'web', '-n', ns, '--restart-command', 'true', '--timeout', '2s', '--poll-interval', '100ms'], {env: cluster.env, timeoutMs: 60_000})
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(res.code).toBe(9)
    expect(res.stdout).toMatch(/^web-10\.0\.2\.1 +timed out +/m)
    expect(res.stderr).toContain("Hint: check Istio's sidecar service (journalctl -u istio; /var/log/istio/istio.log) on VM web-10.0.2.1, or raise --timeout\n")
    expect(res.stderr).not.toContain('onboarding-agent')
  })
})

describe('TSB mode: a WorkloadAutoRegistration alongside the entry; war rollout re-onboards the agent', {timeout: 180_000}, () => {
  let tsb: TestCluster
  let tsbPlane: VmPlane
  beforeAll(async () => {
    tsb = await startCluster({rootCertDelayMs: 100})
    tsbPlane = new VmPlane({store: tsb.store, pki: testPki(), mesh: tsb.mesh, autoregistration: {mode: 'tsb', gracePeriodMs: 60_000}})
    await tsbPlane.start()
  })
  afterAll(async () => {
    await tsbPlane?.stop()
    await tsb?.stop()
  })

  it('joins with a WAR holding the group snapshot; after a group change the WAR is STALE and war rollout re-onboards it from the current spec', async () => {
    const ns = 'tsb-vms'
    const bundle = join(dir, 'tsb')
    const res = await runCli(['onboard', 'web', '-n', ns, '-p', 'http=8080', '--probe-tcp', '8080', '--probe-period', '1', '--create-namespace', '--apply', '--bundle', bundle, '--autoregister'], {
      env: tsb.env,
    })
    expect(res.code, res.stderr).toBe(0)
    const v = startVm(bundle, {address: '10.0.3.1', hostname: 'vm-a'})
    vms.push(v)
    await v.waitFor(/SYNCED/)
    await v.waitFor(/readiness probe: healthy/)
    const war = tsb.store.get('runtime.onboarding.tetrate.io/workloadautoregistrations', ns, 'web-jwt-k8s-vm-a')!
    expect((war.status as {workloadGroupSnapshot: unknown}).workloadGroupSnapshot).toEqual(tsb.store.get(WG, ns, 'web')!.spec)
    const list = await runCli(['war', 'list', '-n', ns], {env: tsb.env})
    expect(list.stdout).toMatch(/^web-jwt-k8s-vm-a +True +\S+$/m)
    const g = tsb.store.get(WG, ns, 'web')!
    tsb.store.update(WG, {...g, spec: {...(g.spec as object), metadata: {labels: {app: 'web', version: 'v2'}}}})
    const wide = await runCli(['war', 'list', '-n', ns, '-o', 'wide'], {env: tsb.env})
    expect(wide.stdout).toMatch(/^web-jwt-k8s-vm-a .* true +- +- +war$/m)
    const rolled = await runCli(['war', 'rollout', 'web', '-n', ns, '--poll-interval', '100ms', '--timeout', '60s'], {env: tsb.env, timeoutMs: 120_000})
    expect(rolled.code, rolled.stderr).toBe(0)
    expect(rolled.stdout).toMatch(/^web-jwt-k8s-vm-a +re-onboarded +\S+ +connected to istiod-7d4b9c6f8-x2k9p, healthy$/m)
    await v.waitFor(/istiod closed the connection; reconnecting/)
    const again = tsb.store.get('runtime.onboarding.tetrate.io/workloadautoregistrations', ns, 'web-jwt-k8s-vm-a')!
    expect(again.metadata.uid).not.toBe(war.metadata.uid)
    expect((again.status as {workloadGroupSnapshot: {metadata: unknown}}).workloadGroupSnapshot.metadata).toEqual({labels: {app: 'web', version: 'v2'}})
    expect(tsb.store.get(WE, ns, 'web-jwt-k8s-vm-a')!.metadata.labels).toMatchObject({version: 'v2'})
    v.child.kill('SIGTERM')
    await v.done
  })
})
