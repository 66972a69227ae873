/**
 * `meshvm doctor --vm-exec` on the real control plane (kube-apiserver, etcd and istiod built from
 * their Go modules): a VM host (vm/host.ts) joins real istiod from the bundle `meshvm onboard
 * --bundle --autoregister` wrote, and exposes, from its real state, what doctor reads on a VM (through
 * vm/exec.sh, standing in for ssh). doctor passes every step; then each failure mode that is real here
 * is produced by what a user would do, doctor names it as the first failing step, its fix is run as
 * printed, and doctor passes again.
 */
import {execFile} from 'node:child_process'
import {X509Certificate} from 'node:crypto'
import {cpSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, inject, it} from 'vitest'
import {BIN, REPO_ROOT, runCli, STACK_TRACE} from '../helpers/cli.js'
import {recordSecret} from '../helpers/secrets.js'
import {ISTIOD_POD, istioReleaseFromEnv, startRealControlPlane, type RealControlPlane} from './control-plane.js'
import {hasCondition, onboardWebWithBundle} from '../helpers/stories.js'
import {VmHost} from './vm/host.js'
import {waitFor, type WorkloadEntry} from './vm/scenario.js'
import {shellQuote} from '../../src/lib/cli/prompt.js'

const NS = 'vm-doctor'
const VM_IP = '10.30.0.5'
const WE = `web-${VM_IP}`
/** The --vm-exec template, as a user would give `ssh "$MESHVM_VM_ADDRESS"`. */
const VM_EXEC = 'sh test/real/vm/exec.sh "$MESHVM_VM_ADDRESS"'

let cp: RealControlPlane
let work: string
let registry: string
/** The bundle meshvm wrote, and the VM's copy of it (its files on the VM). */
let bundle: string
let vmDir: string
const hosts: VmHost[] = []
let vm: VmHost

beforeAll(async () => {
  // A grace period long enough for doctor to see a stopped VM's entry before istiod deletes it.
  cp = await startRealControlPlane({istio: istioReleaseFromEnv(), binaries: inject('realBinaries'), gracePeriod: '60s', remote: false, onProgress: (l) => process.stderr.write(`${l}\n`)})
  recordSecret(cp.main.token)
  work = mkdtempSync(join(tmpdir(), 'meshvm-real-doctor-'))
  registry = join(work, 'vms')
  mkdirSync(registry)
  bundle = join(work, 'web')
  const r = await meshvm(onboardWebWithBundle(NS, bundle), {timeoutMs: 90_000})
  expect(r.stderr).not.toMatch(STACK_TRACE)
  expect(r.code, r.stderr).toBe(0)
  recordSecret(readFileSync(join(bundle, 'istio-token'), 'utf8').trim())
  vmDir = join(work, 'on-the-vm')
  // The files as copied to the VM (the bundle directory is a link to its current version).
  cpSync(bundle, vmDir, {recursive: true, dereference: true})
})

afterAll(async () => {
  for (const h of hosts) await h.close()
  await cp?.stop()
  if (work) rmSync(work, {recursive: true, force: true})
})

const env = () => ({KUBECONFIG: cp.kubeconfigPath, HOME: work, MESHVM_REAL_VMS: registry})

function meshvm(args: string[], o: {timeoutMs?: number} = {}) {
  return runCli(args, {env: env(), timeoutMs: o.timeoutMs ?? 60_000})
}

interface Check {
  step: number
  check: string
  status: 'pass' | 'warn' | 'fail' | 'skip'
  detail: string
  fix?: string
}
interface Report {
  result: string
  checks: Check[]
  summary?: string
}

async function doctor(args: string[]): Promise<{code: number; report: Report; stderr: string}> {
  const r = await meshvm(['doctor', ...args, '-n', NS, '--vm-exec', VM_EXEC, '-o', 'json'], {timeoutMs: 90_000})
  expect(r.stderr).not.toMatch(STACK_TRACE)
  let report: Report
  try {
    report = JSON.parse(r.stdout) as Report
  } catch {
    throw new Error(`doctor printed no report (exit ${r.code}):\n${r.stdout}\n${r.stderr}`)
  }
  return {code: r.code, report, stderr: r.stderr}
}

const firstFail = (report: Report) => report.checks.find((c) => c.status === 'fail')
const check = (report: Report, id: string) => report.checks.find((c) => c.check === id)
const show = (report: Report) => report.checks.map((c) => `${c.step} ${c.check} ${c.status}: ${c.detail}${c.fix ? ` — fix: ${c.fix}` : ''}`).join('\n')

/** doctor passes: exit 0, nothing failing (the warnings are listed by the caller). */
async function expectPass(args: string[]): Promise<Report> {
  const {code, report, stderr} = await doctor(args)
  expect(firstFail(report), show(report)).toBeUndefined()
  expect(code, `${show(report)}\n${stderr}`).toBe(0)
  return report
}

/** doctor fails with `id` as its first failing check: exit 8, the summary names it. */
async function expectFirstFail(args: string[], id: string): Promise<Check> {
  const {code, report} = await doctor(args)
  const first = firstFail(report)
  expect(first?.check, show(report)).toBe(id)
  expect(code).toBe(8)
  expect(report.summary).toContain(first!.detail)
  return first!
}

/**
 * Runs a fix as doctor printed it, as a user would paste it: in sh, in the directory the --vm-exec
 * template's path is relative to, with meshvm on PATH. The template names "$MESHVM_VM_ADDRESS", which
 * doctor sets for --vm-exec (and war rollout for --restart-command) but a pasted fix does not: it is
 * set here, as the user would have to.
 */
function runFix(fix: string | undefined, address = VM_IP): Promise<{stdout: string; stderr: string}> {
  expect(fix, 'the check has a fix').toBeDefined()
  return new Promise((resolve, reject) => {
    const script = `meshvm() { ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"; }\n${fix}`
    execFile('/bin/sh', ['-c', script], {cwd: REPO_ROOT, timeout: 150_000, env: {...process.env, ...env(), MESHVM_VM_ADDRESS: address, NO_COLOR: '1'}}, (err, stdout, stderr) =>
      err ? reject(new Error(`fix failed: ${fix}\n${stdout}\n${stderr}`)) : resolve({stdout, stderr}),
    )
  })
}

const wePath = (name: string) => `/apis/networking.istio.io/v1/namespaces/${NS}/workloadentries/${name}`
/** The entry connected (connectedAt, no disconnectedAt) and Healthy=True: what istiod writes once the VM is back. */
const backAndHealthy = (o: WorkloadEntry | undefined) =>
  o?.metadata.annotations?.['istio.io/connectedAt'] !== undefined && o.metadata.annotations['istio.io/disconnectedAt'] === undefined && hasCondition('Healthy')(o)
const disconnected = (o: WorkloadEntry | undefined) => o?.metadata.annotations?.['istio.io/disconnectedAt'] !== undefined

async function startHost(ip: string, o: {firstValiditySeconds?: number} = {}): Promise<VmHost> {
  const h = await VmHost.start({bundleDir: vmDir, istiodAddress: () => cp.xdsAddress, instanceIp: ip, registryDir: registry, hostname: `vm-${ip.split('.').pop()}`, ...o})
  hosts.push(h)
  await cp.main.kube.waitFor(wePath(`web-${ip}`), backAndHealthy, `WorkloadEntry web-${ip} connected and Healthy`)
  return h
}

/** What the istiod Deployment's controller does after `kubectl set env`: istiod runs again with the Deployment's environment. */
async function rollIstiod(): Promise<void> {
  type Deployment = {spec: {template: {spec: {containers: {env: {name: string; value?: string}[]}[]}}}}
  const d = await cp.main.kube.must<Deployment>('GET', '/apis/apps/v1/namespaces/istio-system/deployments/istiod')
  const env = Object.fromEntries(d.spec.template.spec.containers[0]!.env.map((e) => [e.name, e.value ?? '']))
  await cp.stopIstiod()
  await cp.startIstiod(env)
}

describe('doctor --vm-exec on a VM joined to real istiod', () => {
  it('passes every step: bundle, gateway, istiod, registration, Service, sync, and on the VM its readiness, the certificate real istiod issued, the root it trusts', async () => {
    vm = await startHost(VM_IP)
    const report = await expectPass([WE, '--bundle', vmDir])
    for (const step of [1, 2, 3, 4, 5, 6, 7])
      expect(
        report.checks.some((c) => c.step === step && c.status === 'pass'),
        `step ${step}\n${show(report)}`,
      ).toBe(true)
    expect(check(report, 'registration')!.detail).toContain(`WorkloadEntry ${NS}/${WE} at ${VM_IP}`)
    expect(check(report, 'sync')!.detail).toBe(`SYNCED with ${ISTIOD_POD}`)
    expect(check(report, 'vm.ready')).toMatchObject({status: 'pass', detail: 'pilot-agent is ready (15021/healthz/ready: 200)'})
    // The certificate the VM shows is the one real istiod's CA issued it.
    const leaf = new X509Certificate(vm.connection!.certificateChain[0]!)
    expect(check(report, 'vm.cert')).toMatchObject({status: 'pass', detail: `workload certificate valid until ${new Date(leaf.validTo).toISOString().replace(/\.\d+Z$/, 'Z')}`})
    expect(check(report, 'vm.root')).toMatchObject({status: 'pass', detail: "the VM's Envoy trusts the current mesh root"})
    // Envoy's xds-grpc cluster is pilot-agent's xDS proxy on a unix socket (Istio's bootstrap), which
    // says nothing of istiod: doctor reads pilot-agent's own connection to istiod's port, at the address
    // the VM's hosts file gives istiod's name.
    const gateway = /^(\S+)\s+.*\bistiod\.istio-system\.svc\b/m.exec(readFileSync(join(vmDir, 'hosts'), 'utf8'))![1]
    expect(check(report, 'vm.xds')).toMatchObject({status: 'pass', detail: `pilot-agent is connected to istiod at ${gateway}:15012`})
    // This sidecar intercepts nothing (INTERCEPTION_MODE NONE): doctor says so, as a warning.
    expect(report.checks.filter((c) => c.status === 'warn').map((c) => c.check)).toEqual(['vm.interception'])
  })

  it('an invalid token (its service account deleted and made again): step 1 token.review; the printed fix writes a new token and doctor passes', async () => {
    const sa = `/api/v1/namespaces/${NS}/serviceaccounts/web-vm`
    type ServiceAccount = {metadata: {uid: string}}
    const old = await cp.main.kube.must<ServiceAccount>('GET', sa)
    await cp.main.kube.must('DELETE', sa)
    await cp.main.kube.waitFor<ServiceAccount>(sa, (o) => o === undefined || o.metadata.uid !== old.metadata.uid, 'service account deleted')
    await cp.main.kube.create(`/api/v1/namespaces/${NS}/serviceaccounts`, {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: 'web-vm', namespace: NS}})
    // kube-apiserver keeps a token it accepted in its authentication cache for a while: until it rejects it.
    const token = readFileSync(join(vmDir, 'istio-token'), 'utf8').trim()
    await waitFor(
      'the API server to reject the old token',
      async () => {
        const review = await cp.main.kube.must<{status?: {authenticated?: boolean}}>('POST', '/apis/authentication.k8s.io/v1/tokenreviews', {
          apiVersion: 'authentication.k8s.io/v1',
          kind: 'TokenReview',
          spec: {token, audiences: ['istio-ca']},
        })
        return review.status?.authenticated !== true
      },
      60_000,
    )
    const failing = await expectFirstFail([WE, '--bundle', vmDir], 'bundle.token.review')
    expect(failing.detail).toMatch(/^the API server rejects it/)
    await runFix(failing.fix)
    recordSecret(readFileSync(join(vmDir, 'istio-token'), 'utf8').trim())
    await expectPass([WE, '--bundle', vmDir])
  })

  it('a bundle with another root (the Kubernetes CA instead of the mesh root): step 1 root-cert, the sidecar cannot reconnect; the printed fix (a new bundle, its root sent to the VM, the sidecar restarted) makes doctor pass', async () => {
    writeFileSync(join(vmDir, 'root-cert.pem'), readFileSync(join(cp.dir, 'pki', 'ca.crt'), 'utf8'))
    // Real istiod's serving certificate does not verify against that root: the restarted sidecar gets nothing.
    const restart = await runFix(`${VM_EXEC} sudo systemctl restart istio`).then(
      () => undefined,
      (e: Error) => e,
    )
    expect(restart?.message).toMatch(/istio: .*(certificate|self.signed|UNAVAILABLE)/i)
    await cp.main.kube.waitFor(wePath(WE), disconnected, 'entry disconnected')
    const failing = await expectFirstFail([WE, '--bundle', vmDir], 'bundle.root-cert')
    expect(failing.detail).toContain('istio-ca-root-cert')
    await runFix(failing.fix)
    recordSecret(readFileSync(join(vmDir, 'istio-token'), 'utf8').trim())
    expect(readFileSync(join(vmDir, 'root-cert.pem'), 'utf8').trim()).toBe(readFileSync(join(bundle, 'root-cert.pem'), 'utf8').trim())
    // The fix sent the new root-cert.pem to the VM through --vm-exec (sudo tee) and restarted the sidecar.
    await cp.main.kube.waitFor(wePath(WE), backAndHealthy, 'entry back')
    await expectPass([WE, '--bundle', vmDir])
  })

  it("an unhealthy application (pilot-agent reports the failing probe): step 4 registration.healthy with the probe's message; once it passes again, so does doctor", async () => {
    const message = 'Get "http://127.0.0.1:8080/ready": dial tcp 127.0.0.1:8080: connect: connection refused'
    await vm.setAppHealth(false, message)
    await cp.main.kube.waitFor(wePath(WE), hasCondition('Healthy', 'False'), 'Healthy=False')
    const {report} = await doctor([WE])
    // Nothing listens on the VM's 8080 (this host runs no application): doctor proves that much and
    // prints no fix (meshvm does not know how to start it).
    expect(firstFail(report)).toMatchObject({
      check: 'registration.healthy',
      detail: `Healthy=False: ${message} (the VM's readiness probe fails, so istiod sends it no traffic); nothing listens on 127.0.0.1:8080 nor answers on the group's other ports (http=8080): the application is not running on the VM (start it; meshvm does not know how)`,
    })
    expect(firstFail(report)!.fix).toBeUndefined()
    // pilot-agent's /healthz/ready is Envoy's readiness, which the application's probe does not enter.
    expect(check(report, 'vm.ready')).toMatchObject({status: 'pass'})
    await vm.setAppHealth(true)
    await cp.main.kube.waitFor(wePath(WE), hasCondition('Healthy'), 'Healthy=True')
    await expectPass([WE])
  })

  it("another WorkloadEntry at the VM's address: step 4 registration.duplicates; the printed kubectl delete makes doctor pass", async () => {
    await cp.main.kube.must('POST', `/apis/networking.istio.io/v1/namespaces/${NS}/workloadentries`, {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {name: 'web-by-hand', namespace: NS},
      spec: {address: VM_IP, labels: {app: 'web'}, serviceAccount: 'web-vm'},
    })
    const failing = await expectFirstFail([WE], 'registration.duplicates')
    expect(failing.detail).toBe(`2 WorkloadEntries share address ${VM_IP}: ${WE}, web-by-hand (istiod sends traffic to each)`)
    expect(failing.fix).toBe(`kubectl delete workloadentry web-by-hand -n ${NS}`)
    await runFix(failing.fix)
    await expectPass([WE])
  })

  // Before the stale case, whose `meshvm onboard --apply` must take over the Service the fix made.
  it("no Service selecting the group: step 5 service; the printed fix (the Service onboard makes, applied with meshvm's field manager) makes doctor pass, and onboard --apply takes it over", async () => {
    await cp.main.kube.must('DELETE', `/api/v1/namespaces/${NS}/services/web`)
    const failing = await expectFirstFail([WE], 'service')
    expect(failing.fix).toMatch(/^printf '%s\\n' '\{"apiVersion":"v1","kind":"Service",.*\}' \| kubectl apply --server-side --field-manager=meshvm -f -$/)
    await runFix(failing.fix)
    const report = await expectPass([WE])
    expect(check(report, 'service')!.detail).toBe('selected by Service web')
    // The group's own onboard --apply: no conflict with the fix's fields (kubectl create service's
    // selector and port names made real kube-apiserver refuse it), the Service unchanged.
    const again = await meshvm(['onboard', 'web', '-n', NS, '-p', 'http=8080', '--probe-http', '8080/ready', '-s', 'web-vm', '--apply'])
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain('service/web unchanged')
  })

  it('a changed WorkloadGroup: step 4 registration.stale; the printed war rollout restarts the sidecar through --vm-exec and doctor passes', async () => {
    const change = await meshvm(['onboard', 'web', '-n', NS, '-p', 'http=8080', '--probe-http', '8080/ready', '-s', 'web-vm', '-l', 'tier=backend', '--apply'])
    expect(change.code, change.stderr).toBe(0)
    const failing = await expectFirstFail([WE], 'registration.stale')
    expect(failing.detail).toContain('label tier=(none) → backend')
    // The restart goes on the template's standard input, as every command doctor sends the VM.
    expect(failing.fix).toBe(`meshvm war rollout web -n ${NS} --restart-command ${shellQuote(`printf '%s\\n' 'sudo systemctl restart istio' | sh -c ${shellQuote(VM_EXEC)}`)}`)
    await runFix(failing.fix)
    await cp.main.kube.waitFor(wePath(WE), backAndHealthy, 'entry back')
    await expectPass([WE])
  })

  it("configuration the VM's Envoy rejects (a NACK of LDS, as real istiod records it): step 6 sync with the error; once the configuration is gone, doctor passes", async () => {
    const error = 'Error adding/updating listener(s) 0.0.0.0_9090: Proto constraint validation failed (HttpConnectionManagerValidationError.StatPrefix: value length must be at least 1 characters)'
    const lds = 'type.googleapis.com/envoy.config.listener.v3.Listener'
    const proxy = vm.connection!.proxyId
    type Syncz = {proxy: string; resources?: Record<string, {lastError?: string}>}
    const ldsError = async () => (JSON.parse((await cp.istiodDebug('/debug/syncz')).body) as Syncz[]).find((e) => e.proxy === proxy)?.resources?.[lds]?.lastError
    // A Service the VM's Envoy cannot take: istiod pushes the mesh's listeners with it, the VM answers with a NACK.
    vm.rejectConfig(lds, error)
    const svc = {apiVersion: 'v1', kind: 'Service', metadata: {name: 'metrics', namespace: NS}, spec: {ports: [{name: 'http', port: 9090}]}}
    await cp.main.kube.must('POST', `/api/v1/namespaces/${NS}/services`, svc)
    await waitFor("the NACK in istiod's syncz", async () => (await ldsError()) === error, 30_000)
    const failing = await expectFirstFail([WE], 'sync')
    // No EnvoyFilter adds what the error names (a Service's listener did it): doctor says the cause is
    // not proven and prints no fix rather than a guess.
    expect(failing.detail).toBe(`the VM's Envoy rejected (NACK) LDS: ${error}; cause not proven: the error names nothing an EnvoyFilter that applies to the VM adds (none applies)`)
    expect(failing.fix).toBeUndefined()
    vm.rejectConfig(lds, undefined)
    await cp.main.kube.must('DELETE', `/api/v1/namespaces/${NS}/services/metrics`)
    await waitFor('istiod to record the ACK', async () => (await ldsError()) === undefined, 30_000)
    await expectPass([WE])
  })

  it('a stopped sidecar: step 4 registration.connected (istio.io/disconnectedAt); the printed restart through --vm-exec makes doctor pass', async () => {
    await runFix(`${VM_EXEC} sudo systemctl stop istio`)
    await cp.main.kube.waitFor(wePath(WE), disconnected, 'entry disconnected')
    const {report} = await doctor([WE])
    // The restart, as the VM's shell reads it on its standard input (with the variables doctor gave --vm-exec).
    expect(firstFail(report)).toMatchObject({
      check: 'registration.connected',
      fix: `printf '%s\\n' 'sudo systemctl restart istio' | MESHVM_VM_NAME=${WE} MESHVM_VM_ADDRESS=${VM_IP} MESHVM_VM_HOSTNAME=${VM_IP} MESHVM_NAMESPACE=${NS} sh -c '${VM_EXEC}'`,
    })
    expect(firstFail(report)!.detail).toMatch(/^the VM disconnected from istiod .* ago; istiod deletes the entry after its grace period$/)
    // On the VM, pilot-agent's and Envoy's ports are closed.
    expect(check(report, 'vm.ready')).toMatchObject({status: 'fail', detail: 'pilot-agent does not answer on 15021: the sidecar is not running'})
    await runFix(firstFail(report)!.fix)
    await cp.main.kube.waitFor(wePath(WE), backAndHealthy, 'entry back')
    await expectPass([WE])
  })

  it('an expired workload certificate (the sidecar could not renew it): step 7 vm.cert; the printed restart gets a new one and doctor passes', async () => {
    const ip = '10.30.0.6'
    const other = await startHost(ip, {firstValiditySeconds: 5})
    const notAfter = Date.parse(new X509Certificate(other.connection!.certificateChain[0]!).validTo)
    // Until the certificate real istiod issued is past its notAfter (what the check reads).
    await new Promise((resolve) => setTimeout(resolve, Math.max(0, notAfter - Date.now()) + 1000))
    const failing = await expectFirstFail([`web-${ip}`], 'vm.cert')
    expect(failing.detail).toBe(`Envoy's workload certificate has expired (${new Date(notAfter).toISOString().replace(/\.\d+Z$/, 'Z')})`)
    await runFix(failing.fix, ip)
    await cp.main.kube.waitFor(wePath(`web-${ip}`), backAndHealthy, 'entry back')
    await expectPass([`web-${ip}`])
    await other.close()
  })
  it('istiod without auto-registration: step 3 istiod.autoregistration, the VM that connects gets no entry; the printed kubectl set env (istiod rolled with it) makes doctor pass', async () => {
    const ip = '10.30.0.7'
    await runFix('kubectl set env deployment/istiod -n istio-system PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION=false')
    await rollIstiod()
    // The bundle on the VM, current with its group (which changed above).
    const fresh = await meshvm(['bundle', 'web', '-n', NS, '--autoregister', '-d', vmDir])
    expect(fresh.code, fresh.stderr).toBe(0)
    recordSecret(readFileSync(join(vmDir, 'istio-token'), 'utf8').trim())
    const h = await VmHost.start({bundleDir: vmDir, istiodAddress: () => cp.xdsAddress, instanceIp: ip, registryDir: registry, hostname: 'vm-7'})
    hosts.push(h)
    // Connected and configured, yet real istiod registered nothing (it would have before the first push).
    expect((await cp.main.kube.get(wePath(`web-${ip}`))).status).toBe(404)
    // Without --bundle too: the proxy istiod reports connected is the VM asked about, with no entry.
    const byProxy = await expectFirstFail([`vm-7.${NS}`], 'istiod.autoregistration')
    expect(check((await doctor([`vm-7.${NS}`])).report, 'registration')!.detail).toMatch(
      new RegExp(`^no WorkloadEntry matches vm-7\\.${NS}: istiod \\S+ reports the proxy vm-7\\.${NS} connected, but registered no entry for it`),
    )
    expect(byProxy.fix).toBe('kubectl set env deployment/istiod -n istio-system PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION=true')
    // And by its address, which real istiod's /debug/adsz has from the proxy's INSTANCE_IPS; --vm-exec
    // reaches the VM there and sees pilot-agent connected.
    await expectFirstFail([ip], 'istiod.autoregistration')
    expect(check((await doctor([ip])).report, 'vm.xds')).toMatchObject({status: 'pass'})
    const failing = await expectFirstFail([`vm-7.${NS}`, '--bundle', vmDir], 'istiod.autoregistration')
    expect(failing.fix).toBe('kubectl set env deployment/istiod -n istio-system PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION=true')
    await runFix(failing.fix)
    await rollIstiod()
    // pilot-agent connects to the new istiod by itself, which now registers it.
    await cp.main.kube.waitFor(wePath(`web-${ip}`), backAndHealthy, `WorkloadEntry web-${ip} connected and Healthy`)
    await expectPass([`web-${ip}`, '--bundle', vmDir])
    await h.close()
  })
})
