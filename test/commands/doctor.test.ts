/**
 * `meshvm doctor` end to end on the test cluster: a VM that passes every step, then each failure mode
 * made in the cluster (or on the simulated VM through --vm-exec), named as the first failing step
 * with a fix that, when run, makes doctor pass again.
 */
import {afterAll, beforeAll, beforeEach, describe, expect, it} from 'vitest'
import {chmodSync, existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {BIN, runCli, STACK_TRACE, type CliResult} from '../helpers/cli.js'
import {kubectl, startCluster, type TestCluster} from '../helpers/cluster.js'
import {resourceKey} from '../cluster/index.js'
import {shellQuote} from '../../src/lib/cli/prompt.js'

let cluster: TestCluster
let dir: string
const ISTIOD = 'istiod-7d4b9c6f8-x2k9p'
const WG = resourceKey('networking.istio.io', 'workloadgroups')
const WE = resourceKey('networking.istio.io', 'workloadentries')
const SVC = resourceKey('', 'services')
const DEPLOY = resourceKey('apps', 'deployments')

interface Report {
  result: string
  workloadEntry?: string
  summary?: string
  checks: {step: number; check: string; status: string; detail: string; fix?: string}[]
}

function doctor(args: string[], env: Record<string, string> = {}): Promise<CliResult> {
  return runCli(['doctor', ...args], {env: {...cluster.env, ...env}, timeoutMs: 60_000})
}

async function report(args: string[], env: Record<string, string> = {}): Promise<{r: CliResult; report: Report}> {
  const r = await doctor([...args, '-o', 'json'], env)
  expect(r.stderr).not.toMatch(STACK_TRACE)
  expect(r.stdout, r.stderr).not.toBe('')
  return {r, report: JSON.parse(r.stdout) as Report}
}

const firstFail = (rep: Report) => rep.checks.find((c) => c.status === 'fail')

function seedGroup(name: string, namespace: string, extra: Record<string, unknown> = {}): void {
  const existing = cluster.store.get(WG, namespace, name)
  const spec = {metadata: {labels: {app: name}}, template: {serviceAccount: 'default', network: 'vm-network', ports: {http: 8080}}, probe: {httpGet: {port: 8080, path: '/ready'}}, ...extra}
  // Updated in place: deleting the group would let the garbage collector take its entries.
  if (existing) cluster.store.update(WG, {...existing, metadata: {...existing.metadata, resourceVersion: undefined}, spec})
  else cluster.store.create(WG, 'WorkloadGroup', {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name, namespace}, spec})
}

function seedService(name: string, namespace: string, selector: Record<string, string>, targetPort: number | string = 8080): void {
  if (cluster.store.get(SVC, namespace, name)) cluster.store.delete(SVC, namespace, name)
  cluster.store.create(SVC, 'Service', {apiVersion: 'v1', kind: 'Service', metadata: {name, namespace}, spec: {selector, ports: [{name: 'http', port: 80, targetPort}]}})
}

function labelNetworks(): void {
  const ns = cluster.store.get('/namespaces', undefined, 'istio-system')!
  cluster.store.update('/namespaces', {...ns, metadata: {...ns.metadata, resourceVersion: undefined, labels: {...ns.metadata.labels, 'topology.istio.io/network': 'net1'}}})
  const gw = cluster.store.get(SVC, 'istio-system', 'istio-eastwestgateway')!
  cluster.store.update(SVC, {...gw, metadata: {...gw.metadata, resourceVersion: undefined, labels: {...gw.metadata.labels, 'topology.istio.io/network': 'net1'}}})
}

beforeAll(async () => {
  cluster = await startCluster({rootCertDelayMs: 10})
  dir = mkdtempSync(join(tmpdir(), 'meshvm-doctor-'))
  labelNetworks()
})

afterAll(async () => {
  await cluster?.stop()
  rmSync(dir, {recursive: true, force: true})
})

beforeEach(() => {
  seedGroup('web', 'apps')
  seedService('web', 'apps', {app: 'web'})
  cluster.mesh.watchNamespace('apps')
  for (const we of cluster.store.list(WE, 'apps')) cluster.store.delete(WE, 'apps', we.metadata.name)
  cluster.mesh.addVm({name: 'vm-1', namespace: 'apps', group: 'web', address: '10.0.0.5', connectedTo: ISTIOD, healthy: true})
})

describe('meshvm doctor', () => {
  it('passes a connected, healthy, selected VM, found by WorkloadEntry name, address or group', async () => {
    for (const q of ['web-10.0.0.5', '10.0.0.5', 'web']) {
      const {r, report: rep} = await report([q, '-n', 'apps'])
      expect(r.code, r.stderr + r.stdout).toBe(0)
      expect(rep.workloadEntry).toBe('web-10.0.0.5')
      expect(firstFail(rep)).toBeUndefined()
      expect(rep.checks.find((c) => c.check === 'sync')?.status).toBe('pass')
      expect(rep.checks.find((c) => c.check === 'service')?.detail).toContain('Service web')
    }
    const table = await doctor(['web-10.0.0.5', '-n', 'apps'])
    expect(table.code).toBe(0)
    expect(table.stdout.split('\n')[0]).toMatch(/^STEP\s+CHECK\s+STATUS\s+DETAIL/)
    expect(table.stderr).toContain('every check passed')
  })

  it('a VM that matches nothing is exit 4 with a one-line error; no VM at all is a usage error', async () => {
    const r = await doctor(['nope', '-n', 'apps'])
    expect(r.code).toBe(4)
    expect(r.stderr.split('\n')[0]).toBe('Error: no VM "nope" in namespace "apps": no WorkloadEntry, WorkloadAutoRegistration, WorkloadGroup or proxy has that name or address')
    const u = await doctor([])
    expect(u.code).toBe(2)
    expect(u.stderr).not.toMatch(STACK_TRACE)
  })

  it('an unhealthy probe is step 4 with the probe message', async () => {
    cluster.mesh.addVm({name: 'vm-1', namespace: 'apps', group: 'web', address: '10.0.0.5', connectedTo: ISTIOD, healthy: false})
    const {r, report: rep} = await report(['web-10.0.0.5', '-n', 'apps'])
    expect(r.code).toBe(8)
    expect(firstFail(rep)).toMatchObject({step: 4, check: 'registration.healthy'})
    expect(firstFail(rep)!.detail).toContain('connection refused')
    // Without --vm-exec nothing shows why: doctor says so rather than guess.
    expect(firstFail(rep)!.detail).toMatch(/; cause not proven: run doctor with --vm-exec to see what answers on the VM$/)
    expect(firstFail(rep)!.fix).toBeUndefined()
    const table = await doctor(['web-10.0.0.5', '-n', 'apps'])
    expect(table.stderr.trim().split('\n').at(-1)).toMatch(/^Error: step 4 \(registration\): Healthy=False/)
  })

  it('a duplicate address is step 4, and its fix (delete the other entry) makes doctor pass', async () => {
    cluster.mesh.addVm({name: 'vm-old', namespace: 'apps', group: 'web-old', address: '10.0.0.5', connectedTo: ISTIOD, healthy: true})
    const {r, report: rep} = await report(['web-10.0.0.5', '-n', 'apps'])
    expect(r.code).toBe(8)
    const f = firstFail(rep)!
    expect(f).toMatchObject({step: 4, check: 'registration.duplicates'})
    expect(f.fix).toBe('kubectl delete workloadentry web-old-10.0.0.5 -n apps')
    // With --context, the fix acts on that context (never on whatever kubectl's current one is).
    const named = await report(['web-10.0.0.5', '-n', 'apps', '--context', cluster.contextName])
    expect(firstFail(named.report)!.fix).toBe(`kubectl --context ${cluster.contextName} delete workloadentry web-old-10.0.0.5 -n apps`)
    const k = await kubectl(cluster, f.fix!.replace(/^kubectl /, '').split(' '))
    expect(k.code, k.stderr).toBe(0)
    cluster.mesh.disconnect('vm-old.apps')
    expect((await doctor(['web-10.0.0.5', '-n', 'apps'])).code).toBe(0)
  })

  it('a stale entry (the group changed) is step 4 with war rollout as the fix', async () => {
    seedGroup('web', 'apps', {template: {serviceAccount: 'web-sa', network: 'vm-network', ports: {http: 8080}}})
    const {r, report: rep} = await report(['web-10.0.0.5', '-n', 'apps'])
    expect(r.code).toBe(8)
    expect(firstFail(rep)).toMatchObject({step: 4, check: 'registration.stale'})
    expect(firstFail(rep)!.detail).toContain('service account default → web-sa')
    expect(firstFail(rep)!.fix).toBe('meshvm war rollout web -n apps')
  })

  it('no Service selecting the group is step 5, and a missing named port is caught', async () => {
    cluster.store.delete(SVC, 'apps', 'web')
    let {r, report: rep} = await report(['web-10.0.0.5', '-n', 'apps'])
    expect(r.code).toBe(8)
    // The fix: the Service `meshvm onboard` makes for the group, applied with meshvm's field manager.
    const service = {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: 'web', namespace: 'apps', labels: {app: 'web', 'app.kubernetes.io/managed-by': 'meshvm'}},
      spec: {type: 'ClusterIP', selector: {app: 'web'}, ports: [{name: 'http', port: 8080, targetPort: 8080, protocol: 'TCP', appProtocol: 'http'}]},
    }
    expect(firstFail(rep)).toMatchObject({step: 5, check: 'service', fix: `printf '%s\\n' '${JSON.stringify(service)}' | kubectl apply --server-side --field-manager=meshvm -f -`})
    // Run as printed, doctor passes.
    const {execFile} = await import('node:child_process')
    const {promisify} = await import('node:util')
    await promisify(execFile)('/bin/sh', ['-c', `set -e; ${firstFail(rep)!.fix}`], {env: {...process.env, ...cluster.env}, timeout: 60_000})
    ;({r, report: rep} = await report(['web-10.0.0.5', '-n', 'apps']))
    expect(r.code, JSON.stringify(firstFail(rep))).toBe(0)
    // And the group's next `meshvm onboard --apply` takes the Service over: no conflict on its selector
    // or port names (which a `kubectl create service` would own).
    const again = await runCli(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--network', 'vm-network', '--probe-http', '8080/ready', '--apply'], {env: cluster.env, timeoutMs: 60_000})
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain('service/web unchanged')
    cluster.store.delete(SVC, 'apps', 'web')
    seedService('web', 'apps', {app: 'web'}, 'grpc')
    ;({r, report: rep} = await report(['web-10.0.0.5', '-n', 'apps']))
    expect(firstFail(rep)).toMatchObject({step: 5, check: 'service.ports'})
    expect(firstFail(rep)!.detail).toContain('port named grpc')
  })

  it('a NACK is step 6 with the error; a disconnected VM is step 4', async () => {
    cluster.mesh.addVm({name: 'vm-1', namespace: 'apps', group: 'web', address: '10.0.0.5', connectedTo: ISTIOD, healthy: true, types: {RDS: 'nack'}})
    let {report: rep} = await report(['web-10.0.0.5', '-n', 'apps'])
    expect(firstFail(rep)).toMatchObject({step: 6, check: 'sync'})
    expect(firstFail(rep)!.detail).toContain('RDS: Proto constraint validation failed')
    // Nothing in the cluster is named by the error (this cluster has no EnvoyFilter kind): doctor says
    // the cause is not proven and prints no fix rather than a guess.
    expect(firstFail(rep)!.detail).toMatch(/; cause not proven: cannot list EnvoyFilters: /)
    expect(firstFail(rep)!.fix).toBeUndefined()
    cluster.mesh.addVm({name: 'vm-1', namespace: 'apps', group: 'web', address: '10.0.0.5', healthy: true})
    ;({report: rep} = await report(['web-10.0.0.5', '-n', 'apps']))
    expect(firstFail(rep)).toMatchObject({step: 4, check: 'registration.connected'})
  })

  it('istiod without auto-registration is step 3, with the kubectl set env fix', async () => {
    const d = cluster.store.get(DEPLOY, 'istio-system', 'istiod')!
    const saved = structuredClone(d)
    const spec = structuredClone(d.spec) as {template: {spec: {containers: {env: {name: string; value: string}[]}[]}}}
    spec.template.spec.containers[0]!.env = [{name: 'PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION', value: 'false'}]
    cluster.store.update(DEPLOY, {...d, metadata: {...d.metadata, resourceVersion: undefined}, spec})
    try {
      const {report: rep} = await report(['web-10.0.0.5', '-n', 'apps'])
      expect(firstFail(rep)).toMatchObject({step: 3, check: 'istiod.autoregistration'})
      expect(firstFail(rep)!.fix).toBe('kubectl set env deployment/istiod -n istio-system PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION=true')
      // The fix, run (kubectl's strategic merge patch of the Deployment), and doctor passes.
      const k = await kubectl(
        cluster,
        firstFail(rep)!
          .fix!.replace(/^kubectl /, '')
          .split(' '),
      )
      expect(k.code, k.stderr).toBe(0)
      const after = await report(['web-10.0.0.5', '-n', 'apps'])
      expect(after.r.code, JSON.stringify(firstFail(after.report))).toBe(0)
    } finally {
      cluster.store.update(DEPLOY, {...saved, metadata: {...saved.metadata, resourceVersion: undefined}})
    }
  })

  it('an ambient east-west gateway and a missing network label are step 2', async () => {
    const gw = cluster.store.get(SVC, 'istio-system', 'istio-eastwestgateway')!
    const saved = structuredClone(gw)
    try {
      cluster.store.update(SVC, {
        ...gw,
        metadata: {...gw.metadata, resourceVersion: undefined},
        spec: {
          ...(gw.spec as object),
          ports: [
            {name: 'hbone', port: 15008},
            {name: 'status-port', port: 15021},
          ],
        },
      })
      let {report: rep} = await report(['web-10.0.0.5', '-n', 'apps'])
      expect(firstFail(rep)).toMatchObject({step: 2, check: 'gateway.kind'})
      expect(firstFail(rep)!.detail).toContain('is an ambient east-west gateway')
      expect(firstFail(rep)!.fix).toContain('--ingress-service NAME.NAMESPACE')
      cluster.store.update(SVC, {...saved, metadata: {...saved.metadata, resourceVersion: undefined, labels: {app: 'istio-eastwestgateway', istio: 'eastwestgateway'}}})
      ;({report: rep} = await report(['web-10.0.0.5', '-n', 'apps']))
      expect(firstFail(rep)).toMatchObject({step: 2, check: 'network'})
      expect(firstFail(rep)!.fix).toBe('kubectl label svc istio-eastwestgateway -n istio-system topology.istio.io/network=net1')
      const k = await kubectl(
        cluster,
        firstFail(rep)!
          .fix!.replace(/^kubectl /, '')
          .split(' '),
      )
      expect(k.code, k.stderr).toBe(0)
      expect((await doctor(['web-10.0.0.5', '-n', 'apps'])).code).toBe(0)
    } finally {
      const now = cluster.store.get(SVC, 'istio-system', 'istio-eastwestgateway')!
      cluster.store.update(SVC, {...saved, metadata: {...saved.metadata, resourceVersion: now.metadata.resourceVersion}})
    }
  })

  it('--vm-exec: reads the VM through the command, and names a wrong root, an expired certificate, no DNS', async () => {
    const serial = (await import('node:crypto')).X509Certificate
    const meshSerial = new serial(cluster.ca.rootPem).serialNumber.toLowerCase().replace(/^0+/, '')
    const answer = (o: {ready?: string; root?: string; expires?: string; dns?: string; connections?: string[]}) =>
      [
        '@@meshvm-doctor ready',
        o.ready ?? '200',
        '@@meshvm-doctor certs',
        JSON.stringify({
          certificates: [
            {
              ca_cert: [{serial_number: o.root ?? meshSerial}],
              cert_chain: [{serial_number: 'abc', days_until_expiration: '0', expiration_time: o.expires ?? new Date(Date.now() + 20 * 3600_000).toISOString()}],
            },
          ],
        }),
        '@@meshvm-doctor istiod',
        'via ss 15012',
        'Recv-Q Send-Q Local Address:Port Peer Address:Port Process',
        ...(o.connections ?? ['0 0 10.0.0.5:41234 203.0.113.10:15012']),
        '@@meshvm-doctor interception',
        '4',
        '@@meshvm-doctor dns',
        o.dns ?? '203.0.113.10 istiod.istio-system.svc',
        '@@meshvm-doctor end',
        '',
      ].join('\n')
    // The simulated VM: a command that reads the script meshvm sends, checks it is the read-only probe, and answers.
    const vm = join(dir, 'vm.sh')
    const state = join(dir, 'answer.txt')
    writeFileSync(
      vm,
      `#!/bin/sh\nscript=$(cat)\ncase "$script" in *'@@meshvm-doctor end'*) ;; *) echo "unexpected script" >&2; exit 3;; esac\n[ "$MESHVM_VM_ADDRESS" = 10.0.0.5 ] || { echo "address $MESHVM_VM_ADDRESS" >&2; exit 4; }\ncat ${JSON.stringify(state)}\n`,
    )
    chmodSync(vm, 0o755)
    const vmExec = `${vm} "$MESHVM_VM_ADDRESS"`
    writeFileSync(state, answer({}))
    let {r, report: rep} = await report(['web-10.0.0.5', '-n', 'apps', '--vm-exec', vmExec])
    expect(r.code, r.stderr).toBe(0)
    expect(rep.checks.filter((c) => c.step === 7).map((c) => `${c.check}:${c.status}`)).toEqual(['vm.ready:pass', 'vm.cert:pass', 'vm.root:pass', 'vm.xds:pass'])
    writeFileSync(state, answer({root: 'deadbeef'}))
    ;({report: rep} = await report(['web-10.0.0.5', '-n', 'apps', '--vm-exec', vmExec]))
    expect(firstFail(rep)).toMatchObject({step: 7, check: 'vm.root'})
    writeFileSync(state, answer({expires: new Date(Date.now() - 3600_000).toISOString()}))
    ;({report: rep} = await report(['web-10.0.0.5', '-n', 'apps', '--vm-exec', vmExec]))
    expect(firstFail(rep)).toMatchObject({step: 7, check: 'vm.cert'})
    writeFileSync(state, answer({dns: ''}))
    ;({report: rep} = await report(['web-10.0.0.5', '-n', 'apps', '--vm-exec', vmExec]))
    expect(firstFail(rep)).toMatchObject({step: 7, check: 'vm.dns'})
    // pilot-agent with no established connection to istiod's port: vm.xds fails (Envoy's xds-grpc
    // cluster, pilot-agent's unix socket, is not read: it cannot tell).
    writeFileSync(state, answer({connections: []}))
    ;({report: rep} = await report(['web-10.0.0.5', '-n', 'apps', '--vm-exec', vmExec]))
    expect(firstFail(rep)).toMatchObject({step: 7, check: 'vm.xds', detail: 'pilot-agent has no connection to istiod: no established TCP connection to port 15012 on the VM'})
    // A command that fails: a check that says so, never a crash.
    ;({report: rep} = await report(['web-10.0.0.5', '-n', 'apps', '--vm-exec', 'echo nope >&2; exit 255']))
    expect(firstFail(rep)).toMatchObject({step: 7, check: 'vm'})
    expect(firstFail(rep)!.detail).toBe('--vm-exec failed: exit code 255: nope (the checks did not run to the end)')
  })

  it('--bundle: an expired token and a moved gateway are named, and running each fix makes doctor pass', async () => {
    const bundleDir = join(dir, 'web-vm')
    const made = await runCli(['bundle', 'web', '-n', 'apps', '-d', bundleDir, '--autoregister'], {env: cluster.env, timeoutMs: 60_000})
    expect(made.code, made.stderr).toBe(0)
    let {r, report: rep} = await report(['--bundle', bundleDir])
    expect(r.code, JSON.stringify(firstFail(rep))).toBe(0)
    expect(rep.checks.find((c) => c.check === 'gateway.address')?.detail).toBe("the bundle's hosts entry points at the gateway's current address 203.0.113.10")

    const runFix = async (fix: string) => {
      expect(fix).toMatch(/^meshvm /)
      // The fix as printed (shell words): run through sh with meshvm standing for the built CLI, without
      // blocking this event loop (the test cluster answers from it).
      const {execFile} = await import('node:child_process')
      const {promisify} = await import('node:util')
      await promisify(execFile)('/bin/sh', ['-c', `meshvm() { ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"; }; ${fix.replace(/#.*$/, '')}`], {
        env: {...process.env, ...cluster.env, NO_COLOR: '1'},
        timeout: 60_000,
      })
    }

    // The token expired: bundle verify's refresh is the fix.
    const expired =
      [
        '{"alg":"RS256"}',
        JSON.stringify({
          aud: ['istio-ca'],
          exp: Math.floor(Date.now() / 1000) - 3600,
          sub: 'system:serviceaccount:apps:default',
          'kubernetes.io': {namespace: 'apps', serviceaccount: {name: 'default'}},
        }),
      ]
        .map((x) => Buffer.from(x).toString('base64url'))
        .join('.') + '.c2ln'
    writeFileSync(join(bundleDir, 'istio-token'), expired, {mode: 0o600})
    ;({r, report: rep} = await report(['--bundle', bundleDir]))
    expect(r.code).toBe(8)
    expect(firstFail(rep)!.step).toBe(1)
    expect(firstFail(rep)!.detail).toMatch(/expired/)
    await runFix(firstFail(rep)!.fix!)
    ;({r, report: rep} = await report(['--bundle', bundleDir]))
    expect(r.code, JSON.stringify(firstFail(rep))).toBe(0)

    // The gateway moved: a new bundle is the fix.
    const gw = cluster.store.get(SVC, 'istio-system', 'istio-eastwestgateway')!
    cluster.store.update(SVC, {...gw, metadata: {...gw.metadata, resourceVersion: undefined}, status: {loadBalancer: {ingress: [{ip: '203.0.113.99'}]}}})
    try {
      ;({r, report: rep} = await report(['--bundle', bundleDir]))
      expect(r.code).toBe(8)
      // bundle verify's own gateway check (step 1) sees it first; step 2 says what moved.
      expect(firstFail(rep)).toMatchObject({step: 1, check: 'bundle.gateway'})
      expect(rep.checks.find((c) => c.check === 'gateway.address')).toMatchObject({status: 'fail'})
      expect(rep.checks.find((c) => c.check === 'gateway.address')!.detail).toContain('now at 203.0.113.99 (the gateway moved)')
      await runFix(firstFail(rep)!.fix!)
      ;({r, report: rep} = await report(['--bundle', bundleDir]))
      expect(r.code, JSON.stringify(firstFail(rep))).toBe(0)
    } finally {
      const now = cluster.store.get(SVC, 'istio-system', 'istio-eastwestgateway')!
      cluster.store.update(SVC, {...now, metadata: {...now.metadata, resourceVersion: undefined}, status: gw.status})
    }
  })

  it('proxy-status -o wide --vm-exec adds CERT EXPIRES and ROOT MATCH for each VM', async () => {
    const meshSerial = new (await import('node:crypto')).X509Certificate(cluster.ca.rootPem).serialNumber.toLowerCase().replace(/^0+/, '')
    const vm = join(dir, 'vm-ps.sh')
    // Each VM answers from its own file; 10.0.0.6 trusts another root.
    for (const [address, root] of [
      ['10.0.0.5', meshSerial],
      ['10.0.0.6', 'deadbeef'],
    ]) {
      writeFileSync(
        join(dir, `ps-${address}`),
        [
          '@@meshvm-doctor ready',
          '200',
          '@@meshvm-doctor certs',
          JSON.stringify({certificates: [{ca_cert: [{serial_number: root}], cert_chain: [{days_until_expiration: '0', expiration_time: '2099-11-29T06:00:00Z'}]}]}),
          '@@meshvm-doctor end',
          '',
        ].join('\n'),
      )
    }
    writeFileSync(vm, `#!/bin/sh\ncat >/dev/null\ncat ${JSON.stringify(dir)}/ps-"$MESHVM_VM_ADDRESS"\n`)
    chmodSync(vm, 0o755)
    cluster.mesh.addVm({name: 'vm-2', namespace: 'apps', group: 'web', address: '10.0.0.6', connectedTo: ISTIOD, healthy: true})
    const r = await runCli(['proxy-status', '--vms', '-n', 'apps', '-o', 'wide', '--vm-exec', `${vm}`], {env: cluster.env, timeoutMs: 60_000})
    expect(r.code, r.stderr).toBe(0)
    const [header, ...rows] = r.stdout.trim().split('\n')
    expect(header).toMatch(/CERT EXPIRES\s+ROOT MATCH$/)
    expect(rows.map((l) => l.split(/\s+/).slice(-2).join(' '))).toEqual(['2099-11-29T06:00:00Z yes', '2099-11-29T06:00:00Z NO'])
    const u = await runCli(['proxy-status', '--vm-exec', vm], {env: cluster.env})
    expect(u.code).toBe(2)
    expect(u.stderr.split('\n')[0]).toBe('Error: --vm-exec adds CERT EXPIRES and ROOT MATCH to -o wide: use it with -o wide (for one VM in depth: meshvm doctor NAME --vm-exec …)')
  })

  it('--bundle made for an ambient east-west gateway: step 2 names it, and the fix (a bundle for the classic one) makes doctor pass', async () => {
    cluster.store.create(SVC, 'Service', {
      apiVersion: 'v1',
      kind: 'Service',
      metadata: {name: 'istio-eastwest', namespace: 'istio-system', labels: {'gateway.networking.k8s.io/gateway-class-name': 'istio-east-west', 'topology.istio.io/network': 'net1'}},
      spec: {
        type: 'LoadBalancer',
        ports: [
          {name: 'status-port', port: 15021},
          {name: 'mesh', port: 15008},
        ],
      },
      status: {loadBalancer: {ingress: [{ip: '203.0.113.11'}]}},
    })
    try {
      const bundleDir = join(dir, 'web-ambient')
      const made = await runCli(['bundle', 'web', '-n', 'apps', '-d', bundleDir, '--autoregister', '--ingress-service', 'istio-eastwest'], {env: cluster.env, timeoutMs: 60_000})
      expect(made.code, made.stderr).toBe(0)
      let {r, report: rep} = await report(['--bundle', bundleDir])
      expect(r.code).toBe(8)
      const kind = rep.checks.find((c) => c.check === 'gateway.kind')!
      expect(kind.status).toBe('fail')
      expect(kind.detail).toMatch(/^istio-system\/istio-eastwest is an ambient east-west gateway/)
      expect(kind.fix).toBe(`meshvm bundle web -n apps -d ${bundleDir} --ingress-service istio-eastwestgateway.istio-system`)
      const {execFile} = await import('node:child_process')
      const {promisify} = await import('node:util')
      await promisify(execFile)('/bin/sh', ['-c', `meshvm() { ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"; }; ${kind.fix}`], {
        env: {...process.env, ...cluster.env, NO_COLOR: '1'},
        timeout: 60_000,
      })
      ;({r, report: rep} = await report(['--bundle', bundleDir]))
      expect(r.code, JSON.stringify(firstFail(rep))).toBe(0)
    } finally {
      cluster.store.delete(SVC, 'istio-system', 'istio-eastwest')
    }
  })

  it('-A doctors every VM of the namespace, one row each', async () => {
    cluster.mesh.addVm({name: 'vm-2', namespace: 'apps', group: 'web', address: '10.0.0.6', connectedTo: ISTIOD, healthy: false})
    const r = await doctor(['-A', '-n', 'apps'])
    expect(r.code, r.stdout).toBe(8)
    const lines = r.stdout.trim().split('\n')
    expect(lines[0]).toMatch(/^VM\s+NAMESPACE\s+RESULT\s+FIRST FAILURE/)
    expect(lines.slice(1).map((l) => l.split(/\s+/).slice(0, 3).join(' '))).toEqual(['web-10.0.0.5 apps pass', 'web-10.0.0.6 apps fail'])
  })

  it('-A keeps --kubeconfig on every fix (meshvm and kubectl, checks and summary), as for one VM', async () => {
    seedGroup('web', 'apps', {template: {serviceAccount: 'web-sa', network: 'vm-network', ports: {http: 8080}}})
    const kc = cluster.env.KUBECONFIG!
    const r = await doctor(['-A', '-n', 'apps', '--kubeconfig', kc, '-o', 'json'])
    expect(r.code, r.stderr).toBe(8)
    const [item] = (JSON.parse(r.stdout) as {items: Report[]}).items
    const fix = `meshvm war rollout --kubeconfig ${shellQuote(kc)} web -n apps`
    expect(firstFail(item!)).toMatchObject({check: 'registration.stale', fix})
    expect(item!.summary).toMatch(new RegExp(`; fix: ${fix.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')}$`))
  })

  it('--bundle whose cluster.env names a hostile group: the bundle is refused, or no printed fix runs it', async () => {
    const bundleDir = join(dir, 'hostile-vm')
    const made = await runCli(['bundle', 'web', '-n', 'apps', '-d', bundleDir, '--autoregister'], {env: cluster.env, timeoutMs: 60_000})
    expect(made.code, made.stderr).toBe(0)
    const env = join(bundleDir, 'cluster.env')
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the payload is shell text for sh to expand, not a template
    writeFileSync(env, readFileSync(env, 'utf8').replace(/^ISTIO_META_WORKLOAD_NAME=.*$/m, "ISTIO_META_WORKLOAD_NAME='web;touch${HOME}/pwned;'"))
    // The gateway moved too, so that step 1 and step 2 both have a bundle to remake.
    const gw = cluster.store.get(SVC, 'istio-system', 'istio-eastwestgateway')!
    cluster.store.update(SVC, {...gw, metadata: {...gw.metadata, resourceVersion: undefined}, status: {loadBalancer: {ingress: [{ip: '203.0.113.99'}]}}})
    try {
      const r = await doctor(['--bundle', bundleDir, '-o', 'json'])
      expect(r.stderr).not.toMatch(STACK_TRACE)
      if (r.stdout === '') {
        expect(r.code).not.toBe(0)
        expect(r.stderr).toMatch(/ISTIO_META_WORKLOAD_NAME/)
        return
      }
      const rep = JSON.parse(r.stdout) as Report
      // `touch${HOME}/pwned` with HOME=/h is the command ./touch/h/pwned: it leaves a mark if any fix runs it.
      const work = mkdtempSync(join(dir, 'hostile-'))
      mkdirSync(join(work, 'touch', 'h'), {recursive: true})
      writeFileSync(join(work, 'touch', 'h', 'pwned'), `#!/bin/sh\ntouch ${JSON.stringify(join(work, 'PWNED'))}\n`, {mode: 0o755})
      const {execFile} = await import('node:child_process')
      const fixes = [...rep.checks.flatMap((c) => (c.fix ? [c.fix] : [])), ...(rep.summary ? [rep.summary.replace(/^.*?; fix: /, '')] : [])]
      expect(fixes.length).toBeGreaterThan(0)
      for (const fix of fixes) {
        await new Promise<void>((resolve) => execFile('/bin/sh', ['-c', `meshvm() { :; }; kubectl() { :; }; ${fix}`], {cwd: work, env: {PATH: process.env.PATH, HOME: '/h'}}, () => resolve()))
        expect(existsSync(join(work, 'PWNED')), fix).toBe(false)
      }
    } finally {
      const now = cluster.store.get(SVC, 'istio-system', 'istio-eastwestgateway')!
      cluster.store.update(SVC, {...now, metadata: {...now.metadata, resourceVersion: undefined}, status: gw.status})
    }
  })

  it('-A reads each namespace-wide list once per run, however many VMs it doctors', async () => {
    cluster.mesh.addVm({name: 'vm-2', namespace: 'apps', group: 'web', address: '10.0.0.6', connectedTo: ISTIOD, healthy: true})
    cluster.mesh.addVm({name: 'vm-3', namespace: 'apps', group: 'web', address: '10.0.0.7', connectedTo: ISTIOD, healthy: true})
    const from = cluster.requests.length
    const r = await doctor(['-A', '-n', 'apps'])
    expect(r.code, r.stdout + r.stderr).toBe(0)
    expect(r.stdout.trim().split('\n')).toHaveLength(4)
    const reads = new Map<string, number>()
    for (const q of cluster.requests.slice(from)) {
      if (q.method !== 'GET' || q.path.includes('/proxy/') || q.path.includes('/portforward')) continue
      const k = `${q.path}?${q.query}`
      reads.set(k, (reads.get(k) ?? 0) + 1)
    }
    const lists = (path: string) => [...reads].filter(([k]) => k.startsWith(`${path}?`))
    // The lists the three VMs share, each asked for once.
    for (const path of [
      '/apis/networking.istio.io/v1/namespaces/apps/workloadentries',
      '/api/v1/namespaces/apps/services',
      '/apis/networking.istio.io/v1/namespaces/apps/serviceentries',
      '/api/v1/namespaces/istio-system/pods',
      '/api/v1/namespaces/istio-system/services',
    ]) {
      expect(lists(path).length, path).toBeGreaterThan(0)
      for (const [k, n] of lists(path)) expect(n, k).toBe(1)
    }
    // And no other read is repeated, but the events of each VM (a field selector per entry).
    const repeated = [...reads].filter(([k, n]) => n > 1 && !k.includes('/events?'))
    expect(repeated).toEqual([])
  })
})

describe('several contexts', () => {
  let west: TestCluster
  beforeAll(async () => {
    west = await startCluster({istio: false, contextName: 'west'})
    west.mesh.installIstio({clusterId: 'cluster2', gatewayIp: '203.0.113.20'})
    west.mesh.addIstiod({name: 'istiod-66f9c-west1', clusterId: 'cluster2'})
  })
  afterAll(async () => {
    await west?.stop()
  })

  it('names the context that holds the VM, and its fixes act on that context', async () => {
    const env = {KUBECONFIG: [cluster.kubeconfigPath, west.kubeconfigPath].join(':')}
    const both = ['--context', 'west', '--context', cluster.contextName]
    const json = await doctor(['10.0.0.5', '-n', 'apps', ...both, '-o', 'json'], env)
    expect(json.code, json.stderr).toBe(0)
    const rep = JSON.parse(json.stdout) as Report & {context?: string}
    expect(rep.context).toBe(cluster.contextName)
    expect(rep.result).toBe('pass')
    // A second WorkloadEntry at the address: the fix deletes it in the context that holds the VM,
    // never in whatever kubectl's current context is.
    cluster.store.create(WE, 'WorkloadEntry', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {name: 'web-old-10.0.0.5', namespace: 'apps'},
      spec: {address: '10.0.0.5', labels: {app: 'web'}, serviceAccount: 'default', network: 'vm-network'},
    })
    const dup = await doctor(['web-10.0.0.5', '-n', 'apps', ...both, '-o', 'json'], env)
    expect(dup.code).toBe(8)
    const fix = firstFail(JSON.parse(dup.stdout) as Report)!.fix!
    expect(fix).toContain(`--context ${cluster.contextName}`)
    expect(fix).toMatch(/delete workloadentry web-old-10\.0\.0\.5 -n apps$/)
    // A VM no context holds is exit 4, naming every context read.
    const none = await doctor(['10.9.9.9', '-n', 'apps', ...both], env)
    expect(none.code).toBe(4)
    expect(none.stderr).not.toMatch(STACK_TRACE)
  })
})
