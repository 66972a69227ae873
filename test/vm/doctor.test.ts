/**
 * `meshvm doctor --vm-exec` against a simulated VM that really joined: the probe script runs in
 * /bin/sh "on" the VM (test/vm/exec.sh), reading the VM's own admin endpoints (its workload
 * certificate from the mesh CA, the root it trusts, its connection to istiod, its readiness).
 */
import {mkdirSync, mkdtempSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {BIN, REPO_ROOT, runCli, STACK_TRACE} from '../helpers/cli.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {testPki} from '../cluster/pki.js'
import {VmPlane} from '../cluster/vm-services.js'
import {startVm, type RunningVm} from './run.js'

let cluster: TestCluster
let plane: VmPlane
let dir: string
let vms: string
const running: RunningVm[] = []
const VM_EXEC = 'sh test/vm/exec.sh "$MESHVM_VM_ADDRESS"'

beforeAll(async () => {
  cluster = await startCluster({rootCertDelayMs: 50})
  plane = new VmPlane({store: cluster.store, pki: testPki(), mesh: cluster.mesh, autoregistration: {gracePeriodMs: 8000}})
  await plane.start()
  dir = mkdtempSync(join(cluster.dir, 'doctor-'))
  vms = join(dir, 'vms')
  mkdirSync(vms)
})
afterAll(async () => {
  for (const vm of running) if (vm.child.exitCode === null) vm.child.kill('SIGKILL')
  await plane?.stop()
  await cluster?.stop()
})

async function join_(address: string, bundle: string, o: {unhealthy?: boolean} = {}): Promise<RunningVm> {
  const vm = startVm(bundle, {address, hostname: `vm-${address.split('.').pop()}`, ...o})
  running.push(vm)
  await vm.waitFor(/^admin \d+$/m)
  writeFileSync(join(vms, address), `${/^admin (\d+)$/m.exec(vm.stdout())![1]} ${bundle} ${await vm.pid()}`)
  await vm.waitFor(/configuration acknowledged/)
  return vm
}

const doctor = (args: string[]) => runCli(['doctor', ...args, '-o', 'json'], {env: {...cluster.env, MESHVM_SIM_VMS: vms}, timeoutMs: 60_000})

describe('doctor --vm-exec on a simulated VM', () => {
  it("reads pilot-agent's readiness, Envoy's certificate, the root it trusts and its istiod connection from the VM", async () => {
    const bundle = join(dir, 'web')
    const onboard = await runCli(['onboard', 'web', '-n', 'vmdoc', '-p', 'http=8080', '--probe-http', '8080/ready', '--probe-period', '1', '-s', 'web-vm',
      '--create-namespace', '--create-service-account', '--apply', '--bundle', bundle, '--autoregister'], {env: cluster.env, timeoutMs: 60_000})
    expect(onboard.code, onboard.stderr).toBe(0)
    await join_('10.20.0.5', bundle)
    const r = await doctor(['web-10.20.0.5', '-n', 'vmdoc', '--vm-exec', VM_EXEC])
    expect(r.stderr).not.toMatch(STACK_TRACE)
    const report = JSON.parse(r.stdout) as {checks: {check: string; status: string; detail: string}[]}
    const vm = Object.fromEntries(report.checks.filter((c) => c.check.startsWith('vm.')).map((c) => [c.check, c]))
    expect(vm['vm.ready']).toMatchObject({status: 'pass'})
    expect(vm['vm.cert']!.status).toBe('pass')
    expect(vm['vm.cert']!.detail).toMatch(/^workload certificate valid until \d{4}-\d\d-\d\dT/)
    expect(vm['vm.root']).toMatchObject({status: 'pass', detail: "the VM's Envoy trusts the current mesh root"})
    expect(vm['vm.xds']).toMatchObject({status: 'pass', detail: `connected to istiod at ${plane.gateway.address}:15012`})
    // The simulated VM intercepts nothing: doctor says so (a warning, with the fix).
    expect(vm['vm.interception']).toMatchObject({status: 'warn'})

    // The group changes: the entry is stale, and the fix doctor prints (war rollout, restarting the VM's
    // sidecar through the same --vm-exec) brings it back from the current group: doctor passes.
    const WG = 'networking.istio.io/workloadgroups'
    const wg = cluster.store.get(WG, 'vmdoc', 'web')!
    const spec = structuredClone(wg.spec) as {metadata: {labels: Record<string, string>}}
    spec.metadata.labels.tier = 'backend'
    cluster.store.update(WG, {...wg, metadata: {...wg.metadata, resourceVersion: undefined}, spec})
    const stale = await doctor(['web-10.20.0.5', '-n', 'vmdoc', '--vm-exec', VM_EXEC])
    const staleReport = JSON.parse(stale.stdout) as {checks: {check: string; status: string; fix?: string}[]}
    const fix = staleReport.checks.find((c) => c.status === 'fail')!
    expect(fix).toMatchObject({check: 'registration.stale', fix: `meshvm war rollout web -n vmdoc --restart-command 'sh test/vm/exec.sh "$MESHVM_VM_ADDRESS" sudo systemctl restart istio'`})
    const {execFile} = await import('node:child_process')
    const {promisify} = await import('node:util')
    await promisify(execFile)('/bin/sh', ['-c', `meshvm() { ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"; }; ${fix.fix}`], {env: {...process.env, ...cluster.env, MESHVM_SIM_VMS: vms, NO_COLOR: '1'}, cwd: REPO_ROOT, timeout: 120_000})
    const after = await doctor(['web-10.20.0.5', '-n', 'vmdoc', '--vm-exec', VM_EXEC])
    expect(after.code, after.stdout).toBe(0)

    // An unhealthy app: pilot-agent is not ready on the VM, and the entry's Healthy condition says why.
    await join_('10.20.0.6', bundle, {unhealthy: true})
    const bad = await doctor(['web-10.20.0.6', '-n', 'vmdoc', '--vm-exec', VM_EXEC])
    expect(bad.code).toBe(8)
    const badReport = JSON.parse(bad.stdout) as {checks: {check: string; status: string; detail: string}[]}
    expect(badReport.checks.find((c) => c.check === 'vm.ready')).toMatchObject({status: 'fail', detail: 'pilot-agent is not ready (15021/healthz/ready: 503)'})
  })
})
