/**
 * `meshvm doctor --vm-exec` against a simulated VM that really joined: the probe script runs in
 * /bin/sh "on" the VM (test/vm/exec.sh), reading the VM's own admin endpoints (its workload
 * certificate from the mesh CA, the root it trusts, its connection to istiod, its readiness).
 */
import {cpSync, mkdirSync, mkdtempSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {BIN, REPO_ROOT, runCli, STACK_TRACE} from '../helpers/cli.js'
import {kubectl, startCluster, type TestCluster} from '../helpers/cluster.js'
import {testPki} from '../cluster/pki.js'
import {createMeshCa} from '../cluster/mesh-ca.js'
import {resourceKey} from '../cluster/index.js'
import {waitUntil} from '../helpers/spawn.js'
import {VmPlane} from '../cluster/vm-services.js'
import {hasCondition, onboardWebWithBundle, type WithConditions} from '../helpers/stories.js'
import {startVm, type RunningVm} from './run.js'
import {shellQuote} from '../../src/lib/cli/prompt.js'

let cluster: TestCluster
let plane: VmPlane
let dir: string
let vms: string
const running: RunningVm[] = []
const VM_EXEC = 'sh test/vm/exec.sh "$MESHVM_VM_ADDRESS"'
// The same, from any directory: a fix that writes a bundle is run in a directory of its own.
const VM_EXEC_ANYWHERE = `sh ${JSON.stringify(fileURLToPath(new URL('./exec.sh', import.meta.url)))} "$MESHVM_VM_ADDRESS"`
const CM = resourceKey('', 'configmaps')
// The cluster ID the simulated VMs' bundles carry in mesh.yaml (what meshvm bundle reads from istiod).
const CLUSTER_ID = 'cluster1'
const WE = resourceKey('networking.istio.io', 'workloadentries')

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

async function join_(address: string, bundle: string, o: {unhealthy?: boolean; appPorts?: number[]} = {}): Promise<RunningVm> {
  const vm = startVm(bundle, {address, hostname: `vm-${address.split('.').pop()}`, ...o})
  running.push(vm)
  await vm.waitFor(/^admin \d+$/m)
  writeFileSync(join(vms, address), `${/^admin (\d+)$/m.exec(vm.stdout())![1]} ${bundle} ${await vm.pid()}`)
  await vm.waitFor(/configuration acknowledged/)
  return vm
}

const doctor = (args: string[]) => runCli(['doctor', ...args, '-o', 'json'], {env: {...cluster.env, MESHVM_SIM_VMS: vms}, timeoutMs: 60_000})

interface Check {
  step: number
  check: string
  status: string
  detail: string
  fix?: string
}
/** A waitUntil predicate: the WorkloadEntry's Healthy condition is `status`. */
const entryHealthyIs = (namespace: string, name: string, status: string) => () => hasCondition('Healthy', status)(cluster.store.get(WE, namespace, name) as WithConditions | undefined)
const firstFail = (stdout: string) => (JSON.parse(stdout) as {checks: Check[]}).checks.find((c) => c.status === 'fail')

/** Runs a printed fix as a user would: through sh, in a directory of its own, meshvm standing for the built CLI. */
async function runFix(fix: string): Promise<void> {
  const {execFile} = await import('node:child_process')
  const {promisify} = await import('node:util')
  const cwd = mkdtempSync(join(dir, 'fix-'))
  await promisify(execFile)('/bin/sh', ['-c', `set -e; meshvm() { ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"; }; ${fix}`], {
    env: {...process.env, ...cluster.env, MESHVM_SIM_VMS: vms, NO_COLOR: '1'},
    cwd,
    timeout: 120_000,
  })
}

async function onboard(group: string, namespace: string, bundle: string, extra: string[]): Promise<void> {
  const r = await runCli(['onboard', group, '-n', namespace, '-s', `${group}-vm`, '--create-namespace', '--create-service-account', '--apply', '--bundle', bundle, '--autoregister', ...extra], {
    env: cluster.env,
    timeoutMs: 60_000,
  })
  expect(r.code, r.stderr).toBe(0)
}

describe('doctor --vm-exec on a simulated VM', () => {
  it("reads pilot-agent's readiness, Envoy's certificate, the root it trusts and its istiod connection from the VM", async () => {
    const bundle = join(dir, 'web')
    const onboard = await runCli([...onboardWebWithBundle('vmdoc', bundle), '--probe-period', '1'], {env: cluster.env, timeoutMs: 60_000})
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
    // pilot-agent's TCP connection to istiod's port, at the address the VM's hosts file gives (Envoy's
    // xds-grpc cluster is pilot-agent's unix socket, as on a real VM: not what doctor reads).
    expect(vm['vm.xds']).toMatchObject({status: 'pass', detail: `pilot-agent is connected to istiod at ${plane.gateway.address}:15012`})
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
    // The restart goes on the template's standard input, as every command doctor sends the VM.
    expect(fix).toMatchObject({
      check: 'registration.stale',
      fix: `meshvm war rollout web -n vmdoc --restart-command ${shellQuote(`printf '%s\\n' 'sudo systemctl restart istio' | sh -c ${shellQuote(VM_EXEC)}`)}`,
    })
    const {execFile} = await import('node:child_process')
    const {promisify} = await import('node:util')
    await promisify(execFile)('/bin/sh', ['-c', `meshvm() { ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"; }; ${fix.fix}`], {
      env: {...process.env, ...cluster.env, MESHVM_SIM_VMS: vms, NO_COLOR: '1'},
      cwd: REPO_ROOT,
      timeout: 120_000,
    })
    const after = await doctor(['web-10.20.0.5', '-n', 'vmdoc', '--vm-exec', VM_EXEC])
    expect(after.code, after.stdout).toBe(0)

    // An unhealthy app: as on a real VM, pilot-agent's /healthz/ready is Envoy's readiness only (ready
    // once it got its configuration), so vm.ready passes; the entry's Healthy=False (step 4) names it.
    await join_('10.20.0.6', bundle, {unhealthy: true})
    await waitUntil(() => JSON.stringify(cluster.store.get(WE, 'vmdoc', 'web-10.20.0.6')?.status ?? {}).includes('"Healthy","status":"False"'), 'Healthy=False', 30_000)
    const bad = await doctor(['web-10.20.0.6', '-n', 'vmdoc', '--vm-exec', VM_EXEC])
    expect(bad.code).toBe(8)
    const badReport = JSON.parse(bad.stdout) as {checks: Check[]}
    expect(badReport.checks.find((c) => c.check === 'vm.ready')).toMatchObject({status: 'pass', detail: 'pilot-agent is ready (15021/healthz/ready: 200)'})
    // Its cause is the application's own answer (which meshvm cannot fix: no fix is printed, rather
    // than a guess).
    const unhealthy = firstFail(bad.stdout)!
    expect(unhealthy).toMatchObject({step: 4, check: 'registration.healthy'})
    expect(unhealthy.detail).toMatch(/; the application answers HTTP 503 at 127\.0\.0\.1:8080\/ready: it reports itself not ready \(a cause in the application, which meshvm cannot fix\)$/)
    expect(unhealthy.fix).toBeUndefined()
  })

  it('a VM that does not trust the new mesh root: step 7 names it, and the printed fix (a new bundle, its root-cert.pem installed on the VM, the sidecar restarted) makes doctor pass', async () => {
    const bundle = join(dir, 'db')
    await onboard('db', 'vmroot', bundle, ['-p', 'tcp=5432'])
    const vm = await join_('10.20.1.5', bundle)
    const args = ['db-10.20.1.5', '-n', 'vmroot', '--vm-exec', VM_EXEC_ANYWHERE]
    expect((await doctor(args)).code).toBe(0)
    // A root rotation begins: istio-ca-root-cert holds the next root beside the current one.
    const next = createMeshCa('next-root')
    const cm = cluster.store.get(CM, 'vmroot', 'istio-ca-root-cert')!
    const current = (cm.data as Record<string, string>)['root-cert.pem']!
    cluster.store.update(CM, {...cm, metadata: {...cm.metadata, resourceVersion: undefined}, data: {'root-cert.pem': next.rootPem + current}})
    const bad = await doctor(args)
    expect(bad.code).toBe(8)
    const fail = firstFail(bad.stdout)!
    expect(fail).toMatchObject({step: 7, check: 'vm.root'})
    expect(fail.detail).toMatch(/^the VM's Envoy does not trust the mesh root [0-9a-f]+ of istio-ca-root-cert \(which holds [0-9a-f]+, [0-9a-f]+\); it trusts [0-9a-f]+$/)
    expect(fail.fix).toBe(
      `meshvm bundle db -n vmroot -d db-vm --autoregister --cluster-id ${CLUSTER_ID} && test -s db-vm/root-cert.pem && { printf '%s\\n' 'base64 -d <<\\MESHVM_EOF | sudo tee /etc/certs/root-cert.pem >/dev/null || exit 1'; base64 < db-vm/root-cert.pem; printf '%s\\n' MESHVM_EOF; printf '%s\\n' 'sudo systemctl restart istio'; } | MESHVM_VM_NAME=db-10.20.1.5 MESHVM_VM_ADDRESS=10.20.1.5 MESHVM_VM_HOSTNAME=10.20.1.5 MESHVM_NAMESPACE=vmroot sh -c '${VM_EXEC_ANYWHERE}'`,
    )
    await runFix(fail.fix!)
    // The sidecar restarted with both roots and connected again (istiod still serves with the current one).
    await vm.waitFor(/configuration acknowledged[\s\S]*configuration acknowledged/)
    const after = await doctor(args)
    expect(after.code, after.stdout).toBe(0)
    expect(JSON.parse(after.stdout).checks.find((c: Check) => c.check === 'vm.root')).toMatchObject({status: 'pass', detail: "the VM's Envoy trusts the current mesh roots"})

    // With --bundle (the operator's copy of the VM's files), step 1 sees the next rotation first, and its
    // fix remakes that bundle with its own flags and sends its root-cert.pem to the VM.
    const mine = join(dir, 'db-operator')
    cpSync(bundle, mine, {recursive: true, dereference: true})
    const third = createMeshCa('third-root')
    const cm2 = cluster.store.get(CM, 'vmroot', 'istio-ca-root-cert')!
    cluster.store.update(CM, {...cm2, metadata: {...cm2.metadata, resourceVersion: undefined}, data: {'root-cert.pem': third.rootPem + current}})
    const withBundle = ['--bundle', mine, '--vm-exec', VM_EXEC_ANYWHERE]
    const bad2 = await doctor(withBundle)
    expect(bad2.code).toBe(8)
    const fail2 = firstFail(bad2.stdout)!
    expect(fail2).toMatchObject({step: 1, check: 'bundle.root-cert'})
    expect(fail2.fix).toBe(
      `meshvm bundle db -n vmroot --autoregister -d ${mine} && test -s ${mine}/root-cert.pem && { printf '%s\\n' 'base64 -d <<\\MESHVM_EOF | sudo tee /etc/certs/root-cert.pem >/dev/null || exit 1'; base64 < ${mine}/root-cert.pem; printf '%s\\n' MESHVM_EOF; printf '%s\\n' 'sudo systemctl restart istio'; } | MESHVM_VM_NAME=db-10.20.1.5 MESHVM_VM_ADDRESS=10.20.1.5 MESHVM_VM_HOSTNAME=10.20.1.5 MESHVM_NAMESPACE=vmroot sh -c '${VM_EXEC_ANYWHERE}'`,
    )
    await runFix(fail2.fix!)
    await vm.waitFor(/(configuration acknowledged[\s\S]*){3}/)
    const after2 = await doctor(withBundle)
    expect(after2.code, after2.stdout).toBe(0)
  })

  it('an unhealthy probe on a port nothing listens on: step 4 proves the port from what answers on the VM, and the printed fix makes the entry Healthy', async () => {
    const bundle = join(dir, 'api')
    // The application listens on 8080 (the group's http port); the probe asks 9090.
    await onboard('api', 'vmprobe', bundle, ['-p', 'http=8080', '--probe-http', '9090/ready', '--probe-period', '1'])
    const vm = await join_('10.20.2.5', bundle, {appPorts: [8080]})
    const healthyIs = (status: string) => entryHealthyIs('vmprobe', 'api-10.20.2.5', status)
    await waitUntil(healthyIs('False'), 'Healthy=False on the entry', 30_000)
    const args = ['api-10.20.2.5', '-n', 'vmprobe', '--vm-exec', VM_EXEC_ANYWHERE]
    const bad = await doctor(args)
    expect(bad.code).toBe(8)
    const fail = firstFail(bad.stdout)!
    expect(fail).toMatchObject({step: 4, check: 'registration.healthy'})
    expect(fail.detail).toBe(
      "Healthy=False: Get \"http://127.0.0.1:9090/ready\": dial tcp 127.0.0.1:9090: connect: connection refused (the VM's readiness probe fails, so istiod sends it no traffic); nothing listens on the probe's port 9090, and the application accepts connections on the group's port http=8080, the only one of its ports that does: the probe names the wrong port (the fix points it there, and gives the VM the new probe in mesh.yaml)",
    )
    expect(fail.fix).toBe(
      `kubectl patch workloadgroup api -n vmprobe --type=json -p '[{"op":"replace","path":"/spec/probe/httpGet/port","value":8080}]' && meshvm bundle api -n vmprobe -d api-vm --autoregister --cluster-id ${CLUSTER_ID} && test -s api-vm/mesh.yaml && { printf '%s\\n' 'base64 -d <<\\MESHVM_EOF | sudo tee /etc/istio/config/mesh >/dev/null || exit 1'; base64 < api-vm/mesh.yaml; printf '%s\\n' MESHVM_EOF; printf '%s\\n' 'sudo systemctl restart istio'; } | MESHVM_VM_NAME=api-10.20.2.5 MESHVM_VM_ADDRESS=10.20.2.5 MESHVM_VM_HOSTNAME=10.20.2.5 MESHVM_NAMESPACE=vmprobe sh -c '${VM_EXEC_ANYWHERE}'`,
    )
    await runFix(fail.fix!)
    await vm.waitFor(/readiness probe: healthy/)
    await waitUntil(healthyIs('True'), 'Healthy=True on the entry', 30_000)
    const after = await doctor(args)
    expect(after.code, after.stdout).toBe(0)
  })

  it("a group whose probe was fixed in the cluster only: the VM still probes the old port; the printed fix sends it the group's mesh.yaml", async () => {
    const bundle = join(dir, 'api2')
    await onboard('api2', 'vmprobe2', bundle, ['-p', 'http=8080', '--probe-http', '9090/ready', '--probe-period', '1'])
    const vm = await join_('10.20.4.5', bundle, {appPorts: [8080]})
    const healthyIs = (status: string) => entryHealthyIs('vmprobe2', 'api2-10.20.4.5', status)
    await waitUntil(healthyIs('False'), 'Healthy=False on the entry', 30_000)
    const patched = await kubectl(cluster, ['patch', 'workloadgroup', 'api2', '-n', 'vmprobe2', '--type=json', '-p', '[{"op":"replace","path":"/spec/probe/httpGet/port","value":8080}]'])
    expect(patched.code, patched.stderr).toBe(0)
    const args = ['api2-10.20.4.5', '-n', 'vmprobe2', '--vm-exec', VM_EXEC_ANYWHERE]
    const fail = firstFail((await doctor(args)).stdout)!
    expect(fail).toMatchObject({step: 4, check: 'registration.healthy'})
    expect(fail.detail).toContain("the VM probes port 9090, but the group's probe is on 8080, where the application answers (HTTP 200): the VM runs an older probe")
    // Remade with the VM's own settings (its mesh.yaml's cluster ID and DNS capture), as the probe read them.
    expect(fail.fix).toMatch(new RegExp(`^meshvm bundle api2 -n vmprobe2 -d api2-vm --autoregister --cluster-id ${CLUSTER_ID} && test -s api2-vm/mesh\\.yaml && \\{ printf`))
    await runFix(fail.fix!)
    await vm.waitFor(/readiness probe: healthy/)
    await waitUntil(healthyIs('True'), 'Healthy=True on the entry', 30_000)
    const after = await doctor(args)
    expect(after.code, after.stdout).toBe(0)
  })

  it("a NACK caused by an EnvoyFilter: step 6 names the EnvoyFilter from the VM's Envoy's error, and the printed fix (delete it) makes doctor pass", async () => {
    const bundle = join(dir, 'pay')
    await onboard('pay', 'vmnack', bundle, ['-p', 'http=8080'])
    const vm = await join_('10.20.3.5', bundle)
    const args = ['pay-10.20.3.5', '-n', 'vmnack', '--vm-exec', VM_EXEC_ANYWHERE]
    expect((await doctor(args)).code).toBe(0)
    // Istio's EnvoyFilter kind (as an Istio install has it), then one that adds a Lua filter by its v2
    // type, which Envoy no longer has: istiod pushes it, and the VM's Envoy rejects the listeners.
    const crd = await kubectl(cluster, ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'apiextensions.k8s.io/v1',
        kind: 'CustomResourceDefinition',
        metadata: {name: 'envoyfilters.networking.istio.io'},
        spec: {
          group: 'networking.istio.io',
          scope: 'Namespaced',
          names: {kind: 'EnvoyFilter', plural: 'envoyfilters', singular: 'envoyfilter', listKind: 'EnvoyFilterList'},
          versions: [{name: 'v1alpha3', served: true, storage: true, schema: {openAPIV3Schema: {type: 'object', properties: {spec: {type: 'object', 'x-kubernetes-preserve-unknown-fields': true}}}}}],
        },
      }),
    })
    expect(crd.code, crd.stderr).toBe(0)
    const ef = await kubectl(cluster, ['apply', '-f', '-'], {
      input: JSON.stringify({
        apiVersion: 'networking.istio.io/v1alpha3',
        kind: 'EnvoyFilter',
        metadata: {name: 'lua-headers', namespace: 'vmnack'},
        spec: {
          workloadSelector: {labels: {app: 'pay'}},
          configPatches: [
            {
              applyTo: 'HTTP_FILTER',
              match: {context: 'SIDECAR_INBOUND', listener: {filterChain: {filter: {name: 'envoy.filters.network.http_connection_manager'}}}},
              patch: {
                operation: 'INSERT_BEFORE',
                value: {name: 'envoy.filters.http.lua', typed_config: {'@type': 'type.googleapis.com/envoy.extensions.filters.http.lua.v2.Lua', inlineCode: 'function envoy_on_request(h) end'}},
              },
            },
          ],
        },
      }),
    })
    expect(ef.code, ef.stderr).toBe(0)
    await vm.waitFor(/rejected \(NACK\)/)
    const bad = await doctor(args)
    expect(bad.code).toBe(8)
    const fail = firstFail(bad.stdout)!
    expect(fail).toMatchObject({step: 6, check: 'sync'})
    expect(fail.detail).toBe(
      "the VM's Envoy rejected (NACK) LDS: Error adding/updating listener(s) virtualInbound: Didn't find a registered implementation for 'envoy.filters.http.lua' with type URL: 'envoy.extensions.filters.http.lua.v2.Lua'; EnvoyFilter vmnack/lua-headers applies to the VM and adds 'envoy.filters.http.lua', 'envoy.extensions.filters.http.lua.v2.Lua', which the error names: deleting it makes istiod push the listeners without that filter (for every workload it selects; to mend it rather than lose it, save it first: kubectl get envoyfilter lua-headers -n vmnack -o yaml > lua-headers.yaml)",
    )
    expect(fail.fix).toBe('kubectl delete envoyfilter lua-headers -n vmnack')
    await runFix(fail.fix!)
    await vm.waitFor(/accepted \(ACK\) \S+ again/)
    const after = await doctor(args)
    expect(after.code, after.stdout).toBe(0)
  })

  it('a VM istiod serves but did not register (auto-registration off): doctor HOSTNAME.NAMESPACE finds its proxy and names step 3', async () => {
    await onboard('reg', 'vmreg', join(dir, 'reg-unused'), ['-p', 'http=8080'])
    // A bundle without --autoregister: the proxy connects and is served, and istiod registers nothing.
    const bundle = join(dir, 'reg')
    const made = await runCli(['bundle', 'reg', '-n', 'vmreg', '-d', bundle], {env: cluster.env, timeoutMs: 60_000})
    expect(made.code, made.stderr).toBe(0)
    await join_('10.20.5.5', bundle)
    expect(cluster.store.list(WE, 'vmreg')).toEqual([])
    const DEPLOY = resourceKey('apps', 'deployments')
    const d = cluster.store.get(DEPLOY, 'istio-system', 'istiod')!
    const saved = structuredClone(d)
    const spec = structuredClone(d.spec) as {template: {spec: {containers: {env?: {name: string; value: string}[]}[]}}}
    spec.template.spec.containers[0]!.env = [...(spec.template.spec.containers[0]!.env ?? []), {name: 'PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION', value: 'false'}]
    cluster.store.update(DEPLOY, {...d, metadata: {...d.metadata, resourceVersion: undefined}, spec})
    try {
      const r = await doctor(['vm-5.vmreg', '-n', 'vmreg'])
      expect(r.stderr).not.toMatch(STACK_TRACE)
      expect(r.code, r.stderr).toBe(8)
      const report = JSON.parse(r.stdout) as {checks: Check[]}
      expect(firstFail(r.stdout)).toMatchObject({step: 3, check: 'istiod.autoregistration', fix: 'kubectl set env deployment/istiod -n istio-system PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION=true'})
      expect(report.checks.find((c) => c.check === 'registration')!.detail).toMatch(
        /^no WorkloadEntry matches vm-5\.vmreg: istiod \S+ reports the proxy vm-5\.vmreg connected, but registered no entry for it/,
      )
      expect(report.checks.find((c) => c.check === 'sync')).toMatchObject({status: 'pass'})
      // By its address too: the proxy that reports it (istiod's /debug/adsz, INSTANCE_IPS); --vm-exec reaches it there.
      const byAddress = await doctor(['10.20.5.5', '-n', 'vmreg', '--vm-exec', VM_EXEC])
      expect(byAddress.code, byAddress.stderr).toBe(8)
      const addressReport = JSON.parse(byAddress.stdout) as {checks: Check[]}
      expect(firstFail(byAddress.stdout)).toMatchObject({step: 3, check: 'istiod.autoregistration'})
      expect(addressReport.checks.find((c) => c.check === 'vm.xds')).toMatchObject({status: 'pass', detail: `pilot-agent is connected to istiod at ${plane.gateway.address}:15012`})
      // An address no proxy reports is still not found.
      expect((await doctor(['10.20.5.99', '-n', 'vmreg'])).code).toBe(4)
    } finally {
      const now = cluster.store.get(DEPLOY, 'istio-system', 'istiod')!
      cluster.store.update(DEPLOY, {...saved, metadata: {...saved.metadata, resourceVersion: now.metadata.resourceVersion}})
    }
  })
})
