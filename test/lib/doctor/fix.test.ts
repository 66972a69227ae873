/**
 * doctor's fixes as a user runs them: through sh, into the --vm-exec template of a simulated VM
 * (test/vm/exec.sh and its sudo shim, which write the VM's Istio files into a directory and restart its
 * "sidecar", a process that takes SIGHUP). A file sent to the VM arrives byte for byte whatever it
 * holds, nothing else runs, and the cluster flags go on each command without touching the template.
 */
import {execFile, spawn, type ChildProcess} from 'node:child_process'
import {existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {afterAll, afterEach, beforeEach, describe, expect, it} from 'vitest'
import {diagnose, type Evidence} from '../../../src/lib/doctor/diagnose.js'

const EXEC_SH = fileURLToPath(new URL('../../vm/exec.sh', import.meta.url))
// As `ssh VM sudo sh`: a shell on the VM that reads the commands on its standard input, and only there.
const VM_EXEC = `sh ${JSON.stringify(EXEC_SH)} "$MESHVM_VM_ADDRESS" sh`
const HOSTILE =
  '-----BEGIN CERTIFICATE-----\nMIIB\n-----END CERTIFICATE-----\nMESHVM_EOF\ntouch "$HOME/pwned"\nsudo tee /etc/istio/config/mesh </dev/null\nsudo systemctl restart istio\nMESHVM_EOF\nno final newline'

let tmp: string
let sidecar: ChildProcess
let sidecarExit: Promise<NodeJS.Signals | null>
const dirs: string[] = []

beforeEach(() => {
  tmp = mkdtempSync(join(tmpdir(), 'meshvm-doctor-fix-'))
  dirs.push(tmp)
  for (const d of ['vm', 'vms', 'work/web-vm', 'home']) mkdirSync(join(tmp, d), {recursive: true})
  writeFileSync(join(tmp, 'vm', 'root-cert.pem'), 'old root\n')
  writeFileSync(join(tmp, 'vm', 'mesh.yaml'), 'old mesh\n')
  writeFileSync(join(tmp, 'vm', 'hosts'), '127.0.0.1 localhost\n')
  // The VM's sidecar: a process the sudo shim's `systemctl restart istio` sends SIGHUP.
  sidecar = spawn('/bin/sh', ['-c', 'read x'], {stdio: ['pipe', 'ignore', 'ignore']})
  sidecarExit = new Promise((resolve) => sidecar.on('exit', (_code, signal) => resolve(signal)))
  writeFileSync(join(tmp, 'vms', '10.0.0.5'), `1 ${join(tmp, 'vm')} ${sidecar.pid}`)
})
afterEach(() => {
  if (sidecar.exitCode === null && sidecar.signalCode === null) sidecar.kill('SIGKILL')
})
afterAll(() => {
  for (const d of dirs) rmSync(d, {recursive: true, force: true})
})

function evidence(o: {roots?: boolean; dns?: boolean; stale?: boolean; vmExec?: string} = {}): Evidence {
  return {
    now: new Date('2026-11-28T01:00:00Z'),
    namespace: 'apps',
    query: 'web-10.0.0.5',
    gateway: {
      name: 'istio-eastwestgateway',
      namespace: 'istio-system',
      service: {
        metadata: {name: 'istio-eastwestgateway', namespace: 'istio-system'},
        spec: {type: 'LoadBalancer', ports: [15012, 15017, 15021, 15443].map((port) => ({name: `p${port}`, port}))},
        status: {loadBalancer: {ingress: [{ip: '203.0.113.10'}]}},
      },
    },
    istiod: {pods: [{name: 'istiod-1', ready: true}], env: {}},
    group: {metadata: {name: 'web', namespace: 'apps'}, spec: {template: {ports: {http: 8080}}, probe: {httpGet: {port: 9090, path: '/ready'}}}},
    groupName: 'web',
    entry: {
      metadata: {name: 'web-10.0.0.5', namespace: 'apps', annotations: {'istio.io/autoRegistrationGroup': 'web'}},
      spec: {address: '10.0.0.5', labels: {app: 'web'}},
      status: {conditions: [{type: 'Healthy', status: 'False', message: 'Get "http://127.0.0.1:9090/ready": connection refused'}]},
    },
    ...(o.stale ? {staleBecause: 'service account default → web-sa'} : {}),
    duplicates: [],
    events: [],
    services: [{metadata: {name: 'web', namespace: 'apps'}, spec: {selector: {app: 'web'}, ports: [{port: 80, targetPort: 8080}]}}],
    serviceEntries: [],
    sync: {connected: true, types: [{type: 'LDS', state: 'SYNCED'}]},
    probe: {
      probe: {
        ready: '200',
        rootSerials: ['a1'],
        sections: ['end'],
        mesh: {dnsCapture: true},
        ...(o.dns ? {dns: ''} : {}),
        app: [
          {port: 9090, code: '000', connected: false, exit: 7},
          {port: 8080, code: '200', connected: true, exit: 0},
        ],
      },
    },
    meshRootSerials: o.roots ? ['b2'] : [],
    vmExec: o.vmExec ?? VM_EXEC,
  }
}

const fixOf = (e: Evidence, check: string, cli = {}) => diagnose(e, cli).checks.find((c) => c.check === check)!.fix!

/** Runs a printed fix through sh in the work directory, meshvm and kubectl standing for commands that only record their arguments. */
async function run(fix: string, extra = ''): Promise<{code: number; stderr: string}> {
  const script = `meshvm() { printf '%s\\n' "$@" >> meshvm.args; }; kubectl() { printf '%s\\n' "$@" >> kubectl.args; }; ${extra}${fix}`
  return new Promise((resolve) => {
    execFile('/bin/sh', ['-c', script], {cwd: join(tmp, 'work'), env: {PATH: process.env.PATH, HOME: join(tmp, 'home'), MESHVM_SIM_VMS: join(tmp, 'vms')}}, (err, _stdout, stderr) =>
      resolve({code: err ? Number((err as {code?: number}).code ?? 1) : 0, stderr}),
    )
  })
}

describe('a file doctor sends to the VM', () => {
  it('arrives byte for byte, whatever it holds (a MESHVM_EOF line, shell text, no final newline); nothing but the write and the restart runs', async () => {
    writeFileSync(join(tmp, 'work', 'web-vm', 'root-cert.pem'), HOSTILE)
    const fix = fixOf(evidence({roots: true}), 'vm.root')
    const r = await run(fix)
    expect(r.code, r.stderr).toBe(0)
    expect(await sidecarExit).toBe('SIGHUP')
    expect(readFileSync(join(tmp, 'vm', 'root-cert.pem'), 'utf8')).toBe(HOSTILE)
    expect(readFileSync(join(tmp, 'vm', 'mesh.yaml'), 'utf8')).toBe('old mesh\n')
    expect(existsSync(join(tmp, 'home', 'pwned'))).toBe(false)
  })

  it('a file missing here stops the fix before the VM: its file stays, the sidecar is not restarted', async () => {
    const fix = fixOf(evidence({roots: true}), 'vm.root')
    const r = await run(fix)
    expect(r.code).not.toBe(0)
    expect(readFileSync(join(tmp, 'vm', 'root-cert.pem'), 'utf8')).toBe('old root\n')
    expect(sidecar.exitCode === null && sidecar.signalCode === null).toBe(true)
  })

  it("vm.dns: the bundle's hosts is appended to the VM's /etc/hosts with sudo, through the same send, without a restart", async () => {
    writeFileSync(join(tmp, 'work', 'web-vm', 'hosts'), '203.0.113.10 istiod.istio-system.svc\n')
    const fix = fixOf(evidence({dns: true}), 'vm.dns')
    const r = await run(fix)
    expect(r.code, r.stderr).toBe(0)
    expect(readFileSync(join(tmp, 'vm', 'hosts'), 'utf8')).toBe('127.0.0.1 localhost\n203.0.113.10 istiod.istio-system.svc\n')
    expect(sidecar.exitCode === null && sidecar.signalCode === null).toBe(true)
  })
})

describe("registration.stale: war rollout's --restart-command", () => {
  it('sends the restart on the standard input of the --vm-exec template, which reaches the VM', async () => {
    const fix = fixOf(evidence({stale: true}), 'registration.stale')
    expect(fix).toMatch(/^meshvm war rollout web -n apps --restart-command /)
    // war rollout runs the restart command with sh -c and the VM's variables.
    const r = await run(fix, `meshvm() { while [ $# -gt 0 ]; do if [ "$1" = --restart-command ]; then MESHVM_VM_ADDRESS=10.0.0.5 sh -c "$2"; return; fi; shift; done; }; `)
    expect(r.code, r.stderr).toBe(0)
    expect(await sidecarExit).toBe('SIGHUP')
  })
})

describe('the cluster flags of a fix', () => {
  it('go on each kubectl and meshvm command as it is built; the --vm-exec template, even one that runs kubectl, reaches sh -c unchanged', async () => {
    const template = 'ssh jump kubectl exec -i -n vms vm-0 -- sh'
    const cli = {kubeconfig: '/home/me/k c', context: 'east'}
    const fix = fixOf(evidence({vmExec: template}), 'registration.healthy', cli)
    expect(fix.startsWith(`kubectl --kubeconfig '/home/me/k c' --context east patch workloadgroup web -n apps --type=json -p `)).toBe(true)
    expect(fix).toContain(` && meshvm bundle --kubeconfig '/home/me/k c' --context east web -n apps -d web-vm --autoregister && `)
    // The words of the fix, as sh reads them: the template is one word, as given.
    const words = await new Promise<string>((resolve, reject) => execFile('/bin/sh', ['-c', `set -- ${fix.split(' sh -c ')[1]}; printf %s "$1"`], (err, out) => (err ? reject(err) : resolve(out))))
    expect(words).toBe(template)
    expect(fixOf(evidence({stale: true, vmExec: template}), 'registration.stale', cli)).toMatch(/^meshvm war rollout --kubeconfig '\/home\/me\/k c' --context east web -n apps --restart-command /)
    // A whole command line from bundle verify gets them from the caller.
    const e = evidence()
    e.bundle = {checks: [{id: 'token', status: 'fail', detail: 'expired', fix: 'meshvm bundle web -n apps --refresh-token -d dir'}], dir: 'dir', group: 'web'}
    expect(diagnose(e, {...cli, external: (line) => `${line} # external`}).checks.find((c) => c.check === 'bundle.token')!.fix).toBe('meshvm bundle web -n apps --refresh-token -d dir # external')
  })

  it("a value from the cluster in a fix's trailing comment cannot break out of it (a line break there would start a command)", async () => {
    const e = evidence()
    e.services = []
    e.group = undefined
    e.entry = {...e.entry!, spec: {address: '10.0.0.5', labels: {app: 'web\ntouch "$HOME/pwned"'}}}
    const fix = fixOf(e, 'service')
    expect(fix).not.toMatch(/\n/)
    expect((await run(fix)).code).toBe(0)
    expect(existsSync(join(tmp, 'home', 'pwned'))).toBe(false)
  })

  it("istiod's fixes name the Istio namespace doctor read (-i) and the revision's Deployment", () => {
    const e = evidence()
    e.istiod = {pods: [], namespace: 'mesh-system', revision: '1-24', env: {PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION: 'false', PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS: 'false'}}
    const checks = diagnose(e).checks
    expect(checks.find((c) => c.check === 'istiod.running')!.fix).toBe('kubectl get pods -n mesh-system -l app=istiod,istio.io/rev=1-24')
    expect(checks.find((c) => c.check === 'istiod.autoregistration')!.fix).toBe('kubectl set env deployment/istiod-1-24 -n mesh-system PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION=true')
    expect(checks.find((c) => c.check === 'istiod.healthchecks')!.fix).toBe('kubectl set env deployment/istiod-1-24 -n mesh-system PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS=true')
  })
})
