/**
 * The README's story on the real control plane (kube-apiserver, etcd, istiod built from their Go
 * modules; test/real/control-plane.ts), for the Istio release MESHVM_REAL_ISTIO names. Run with
 * `npm run test:real` (both pinned releases, one after the other).
 */
import {X509Certificate} from 'node:crypto'
import {execFile} from 'node:child_process'
import {cpSync, existsSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {createServer} from 'node:http'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, inject, it} from 'vitest'
import {parse as parseYaml, stringify as stringifyYaml} from 'yaml'
import {runCli, STACK_TRACE} from '../helpers/cli.js'
import {recordSecret} from '../helpers/secrets.js'
import {joinIstiod, type VmConnection} from './vm/client.js'
import {vmJoinScenario, type SynczEntry, type WorkloadEntry} from './vm/scenario.js'
import {createIstiodPod, imageTag, kubeconfigYaml, ISTIO_NAMESPACE, ISTIOD_POD, istioReleaseFromEnv, startRealControlPlane, type RealControlPlane} from './control-plane.js'
import {hasCondition} from '../helpers/stories.js'

const NS = 'vm-apps'
let cp: RealControlPlane
let work: string
let env: Record<string, string>

beforeAll(async () => {
  cp = await startRealControlPlane({istio: istioReleaseFromEnv(), binaries: inject('realBinaries'), gracePeriod: '15s', onProgress: (l) => process.stderr.write(`${l}\n`)})
  recordSecret(cp.main.token)
  if (cp.remote) recordSecret(cp.remote.token)
  work = mkdtempSync(join(tmpdir(), 'meshvm-real-work-'))
  env = {KUBECONFIG: cp.kubeconfigPath, HOME: work}
})

afterAll(async () => {
  await vm?.close()
  await cp?.stop()
  if (work) rmSync(work, {recursive: true, force: true})
})

const meshvm = (args: string[], o: {timeoutMs?: number; stdoutMayHoldSecrets?: boolean; env?: Record<string, string>} = {}) =>
  runCli(args, {env: {...env, ...o.env}, timeoutMs: o.timeoutMs ?? 60_000, stdoutMayHoldSecrets: o.stdoutMayHoldSecrets})

/** What these tests read of the WorkloadGroup web that meshvm applies. */
interface WorkloadGroup {
  metadata: {managedFields: {manager: string; operation: string}[]}
  spec: {metadata: {labels: Record<string, string>}; probe: {httpGet: {path: string}}}
}
const workloadGroup = async () => (await cp.main.kube.get<WorkloadGroup>(`/apis/networking.istio.io/v1/namespaces/${NS}/workloadgroups/web`)).json

// no kube-controller-manager makes a namespace's `default` ServiceAccount here: the group gets its own
const ONBOARD = ['onboard', 'web', '-n', NS, '-p', 'http=8080', '--probe-http', '8080/ready', '-s', 'web-vm', '--create-service-account']

describe('onboard on the real kube-apiserver', () => {
  it('--apply --bundle --autoregister: namespace, WorkloadGroup and Service by server-side apply (manager meshvm), and the bundle once istiod published the root', async () => {
    const bundle = join(work, 'web-vm')
    const r = await meshvm([...ONBOARD, '--create-namespace', '--apply', '--bundle', bundle, '--autoregister'], {timeoutMs: 90_000})
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain(`namespace/${NS} created`)
    expect(r.stdout).toContain('workloadgroup.networking.istio.io/web created')
    expect(r.stdout).toContain('service/web created')
    expect(r.stdout).toContain('serviceaccount/web-vm created')
    const wg = await workloadGroup()
    expect(wg.metadata.managedFields.map((m) => `${m.manager}/${m.operation}`)).toContain('meshvm/Apply')
    for (const f of ['mesh.yaml', 'cluster.env', 'root-cert.pem', 'istio-token', 'hosts', 'install.sh']) expect(existsSync(join(bundle, f)), f).toBe(true)
    recordSecret(readFileSync(join(bundle, 'istio-token'), 'utf8').trim())
    // the root in the bundle is the one real istiod published (istio-ca-root-cert in the namespace)
    const cm = (await cp.main.kube.get<{data: {'root-cert.pem': string}}>(`/api/v1/namespaces/${NS}/configmaps/istio-ca-root-cert`)).json
    expect(readFileSync(join(bundle, 'root-cert.pem'), 'utf8').trim()).toBe(cm.data['root-cert.pem'].trim())
  })

  it('the same again: unchanged; --diff shows nothing and exits 0', async () => {
    const again = await meshvm([...ONBOARD, '--apply'])
    expect(again.code, again.stderr).toBe(0)
    expect(again.stdout).toContain('workloadgroup.networking.istio.io/web unchanged')
    const diff = await meshvm([...ONBOARD, '--diff'])
    expect(diff.code, diff.stderr).toBe(0)
    expect(diff.stdout).toBe('')
  })

  it('--dry-run=server with a new label: the API server answers what would change (configured), nothing changes', async () => {
    const r = await meshvm([...ONBOARD, '-l', 'version=v2', '--apply', '--dry-run=server'])
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout).toContain('workloadgroup.networking.istio.io/web configured (server dry run)')
    const wg = await workloadGroup()
    expect(wg.spec.metadata.labels.version).toBeUndefined()
  })

  it('--diff with a new label: a unified diff of the live WorkloadGroup, exit 1, nothing changed', async () => {
    const r = await meshvm([...ONBOARD, '-l', 'version=v2', '--diff'])
    expect(r.code, r.stderr).toBe(1)
    expect(r.stdout).toMatch(/^\+\s+version: v2$/m)
    const wg = await workloadGroup()
    expect(wg.spec.metadata.labels.version).toBeUndefined()
  })

  it('a field another manager owns with another value: a conflict naming the field and the manager; --force-conflicts takes it over', async () => {
    // another tool (kubectl apply --server-side, manager "ops-tool") sets the probe's path
    const patch = {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name: 'web', namespace: NS}, spec: {probe: {httpGet: {path: '/healthz', port: 8080}}}}
    await cp.main.kube.must('PATCH', `/apis/networking.istio.io/v1/namespaces/${NS}/workloadgroups/web?fieldManager=ops-tool&force=true`, patch, {contentType: 'application/apply-patch+yaml'})
    const r = await meshvm([...ONBOARD, '--apply'])
    expect(r.code).not.toBe(0)
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.stderr.split('\n')[0]).toMatch(/conflict/i)
    expect(r.stderr).toContain('ops-tool')
    expect(r.stderr).toContain('.spec.probe.httpGet.path')
    const forced = await meshvm([...ONBOARD, '--apply', '--force-conflicts'])
    expect(forced.code, forced.stderr).toBe(0)
    expect(forced.stdout).toContain('workloadgroup.networking.istio.io/web configured')
    const wg = await workloadGroup()
    expect(wg.spec.probe.httpGet.path).toBe('/ready')
  })
})

describe('precheck and bundle verify on the real API server', () => {
  it('precheck: every check passes, the RBAC ones through real SelfSubjectAccessReviews, istiod through the port-forward', async () => {
    const r = await meshvm(['precheck', 'web', '-n', NS, '-o', 'json'])
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code, r.stderr).toBe(0)
    const {checks} = JSON.parse(r.stdout) as {checks: {check: string; status: string}[]}
    expect(checks.filter((c) => c.check.startsWith('RBAC:')).length).toBeGreaterThan(5)
    expect(checks.filter((c) => c.status !== 'pass')).toEqual([])
  })

  it('precheck as a user with no rights: the real API server denies and precheck says which permission is missing', async () => {
    // a ServiceAccount with no RoleBinding, through a TokenRequest of the real API server
    await cp.main.kube.create(`/api/v1/namespaces/${NS}/serviceaccounts`, {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: 'nobody'}})
    const tr = await cp.main.kube.must<{status: {token: string}}>('POST', `/api/v1/namespaces/${NS}/serviceaccounts/nobody/token`, {
      apiVersion: 'authentication.k8s.io/v1',
      kind: 'TokenRequest',
      spec: {expirationSeconds: 600},
    })
    recordSecret(tr.status.token)
    const kc = join(work, 'nobody.kubeconfig')
    writeFileSync(kc, kubeconfigYaml({server: cp.main.url, caPem: readFileSync(join(cp.dir, 'pki/ca.crt'), 'utf8'), token: tr.status.token, name: 'nobody', namespace: NS}), {mode: 0o600})
    const r = await meshvm(['precheck', 'web', '-n', NS], {env: {KUBECONFIG: kc}})
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code).not.toBe(0)
    expect(`${r.stdout}\n${r.stderr}`).toMatch(/forbidden|not allowed|denied|missing/i)
  })

  it("bundle verify: the istio-token passes a real TokenReview of audience istio-ca for the group's service account", async () => {
    const r = await meshvm(['bundle', 'verify', join(work, 'web-vm'), '-n', NS])
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0)
  })
})

/** The real istioctl of the same release, against the same cluster. */
const istioctl = (args: string[]) =>
  new Promise<{code: number; stdout: string; stderr: string}>((resolve) => {
    execFile(inject('realBinaries').istioctl[istioReleaseFromEnv()], args, {env: {KUBECONFIG: cp.kubeconfigPath, HOME: work, PATH: process.env.PATH}, timeout: 90_000}, (err, stdout, stderr) =>
      resolve({code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr}),
    )
  })

describe('byte for byte with the real istioctl of the same release', () => {
  it('bundle: mesh.yaml, cluster.env, hosts and root-cert.pem as istioctl x workload entry configure writes them', async () => {
    const wg = await workloadGroup()
    const wgFile = join(work, 'wg.json')
    writeFileSync(wgFile, JSON.stringify(wg))
    const theirs = join(work, 'istioctl-bundle')
    const ic = await istioctl(['x', 'workload', 'entry', 'configure', '-f', wgFile, '-o', theirs, '--autoregister'])
    expect(ic.code, ic.stderr).toBe(0)
    recordSecret(readFileSync(join(theirs, 'istio-token'), 'utf8').trim())
    const ours = join(work, 'meshvm-bundle')
    const r = await meshvm(['bundle', 'web', '-n', NS, '-d', ours, '--autoregister'])
    expect(r.code, r.stderr).toBe(0)
    recordSecret(readFileSync(join(ours, 'istio-token'), 'utf8').trim())
    for (const f of ['mesh.yaml', 'cluster.env', 'hosts', 'root-cert.pem']) expect(readFileSync(join(ours, f), 'utf8'), f).toBe(readFileSync(join(theirs, f), 'utf8'))
  })
})

const BUNDLE = () => join(work, 'web-vm')
const VM_IP = '10.10.0.5'
let vm: VmConnection | undefined

/** Joins (or re-joins) the VM at `ip` with the bundle: certificate, ADS, ACKs, then a healthy probe. */
async function joinVm(ip = VM_IP): Promise<VmConnection> {
  const c = await joinIstiod({bundleDir: BUNDLE(), istiodAddress: cp.xdsAddress, instanceIp: ip})
  await c.synced()
  await c.reportHealth(true)
  return c
}

const wePath = (name: string) => `/apis/networking.istio.io/v1/namespaces/${NS}/workloadentries/${name}`
const WE = `web-${VM_IP}`

/**
 * proxy-status (per-type states) until the VM's row is SYNCED: a read while istiod pushes (an entry
 * created or changed makes it push) shows STALE until the VM's ACK, rightly. Bounded: 20 reads.
 */
async function untilSynced(args: string[]): Promise<Awaited<ReturnType<typeof meshvm>>> {
  const row = (out: string) => out.split('\n').find((l) => l.startsWith(vm!.proxyId)) ?? ''
  let r = await meshvm(args)
  for (let i = 0; i < 20 && !/SYNCED/.test(row(r.stdout)); i++) {
    await new Promise((res) => setTimeout(res, 250))
    r = await meshvm(args)
  }
  return r
}

describe('a VM joins real istiod with the bundle meshvm wrote', () => {
  it("gets a workload certificate for the group's identity; istiod creates its WorkloadEntry and marks it Healthy", async () => {
    vm = await joinVm()
    expect(vm.workloadEntryName).toBe(WE)
    expect(new X509Certificate(vm.certificateChain[0]!).subjectAltName).toContain(`URI:spiffe://cluster.local/ns/${NS}/sa/web-vm`)
    const we = (await cp.main.kube.waitFor<WorkloadEntry>(wePath(WE), hasCondition('Healthy'), 'WorkloadEntry Healthy'))!
    expect(we.metadata.annotations).toMatchObject({'istio.io/autoRegistrationGroup': 'web', 'istio.io/workloadController': ISTIOD_POD})
    expect(we.metadata.annotations?.['istio.io/connectedAt']).toBeDefined()
    expect(we.spec.address).toBe(VM_IP)
  })

  it('war list and describe: registered and connected, controlled by the istiod pod', async () => {
    const list = await meshvm(['war', 'list', '-n', NS])
    expect(list.code, list.stderr).toBe(0)
    expect(list.stdout).toMatch(new RegExp(`^${WE.replace(/\./g, '\\.')}\\s+True\\s`, 'm'))
    const describe = await meshvm(['war', 'describe', WE, '-n', NS])
    expect(describe.code, describe.stderr).toBe(0)
    expect(describe.stdout).toMatch(/Agent Connected:\s+True/)
    expect(describe.stdout).toContain(ISTIOD_POD)
  })

  it('proxy-status: the VM is SYNCED, in the table, wide (vm, its address, Healthy, auto/web), json and by NAME', async () => {
    const table = await meshvm(['proxy-status', '-n', NS])
    expect(table.code, table.stderr).toBe(0)
    // istioctl 1.28+'s default table counts the subscribed types; -v 1 shows each type's state.
    const row = table.stdout.split('\n').find((l) => l.startsWith(vm!.proxyId))
    expect(row, table.stdout).toMatch(/\s2 \(CDS,LDS\)(\s|$)/)
    const perType = await untilSynced(['proxy-status', '-n', NS, '-v', '1'])
    expect(perType.code, perType.stderr).toBe(0)
    const typeRow = perType.stdout.split('\n').find((l) => l.startsWith(vm!.proxyId))
    expect(typeRow, perType.stdout).toMatch(/SYNCED/)
    expect(typeRow).not.toMatch(/STALE|ERROR/)
    const wide = await meshvm(['proxy-status', '-n', NS, '-o', 'wide'])
    expect(wide.code, wide.stderr).toBe(0)
    const wideRow = wide.stdout.split('\n').find((l) => l.startsWith(vm!.proxyId))!
    expect(wideRow).toMatch(new RegExp(`\\svm\\s+${VM_IP.replace(/\./g, '\\.')}\\s+Healthy\\s+auto/web`))
    expect(wideRow).toContain(ISTIOD_POD)
    const json = await meshvm(['proxy-status', '-n', NS, '-o', 'json'])
    expect(json.code, json.stderr).toBe(0)
    expect(json.stdout).toContain(vm!.proxyId)
    JSON.parse(json.stdout)
    const one = await meshvm(['proxy-status', vm!.proxyId])
    expect(one.code, one.stderr).toBe(0)
    expect(one.stdout).toContain(vm!.proxyId)
  })

  it('proxy-status --xds-address: the VM SYNCED through xDS with a token', async () => {
    const r = await untilSynced(['proxy-status', '-n', NS, '-v', '1', '--xds-address', cp.xdsAddress])
    expect(r.code, r.stderr).toBe(0)
    expect(r.stdout.split('\n').find((l) => l.startsWith(vm!.proxyId))).toMatch(/SYNCED/)
  })

  it('war reconcile: a connected, registered, healthy VM is no finding', async () => {
    const r = await meshvm(['war', 'reconcile', '-n', NS, '-o', 'json'])
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code, r.stderr).toBe(0)
    expect(JSON.parse(r.stdout).findings).toEqual([])
  })

  it('a group change makes the entry STALE; war rollout --restart-command re-onboards it from the new group', async () => {
    const change = await meshvm([...ONBOARD, '-l', 'version=v2', '--apply'])
    expect(change.code, change.stderr).toBe(0)
    const wide = await meshvm(['war', 'list', '-n', NS, '-o', 'wide'])
    expect(wide.stdout.split('\n').find((l) => l.startsWith(WE))).toMatch(/\strue\s/)
    // The restart command reaches this test's VM as ssh would reach a real one.
    const restarts: string[] = []
    const server = createServer((req, res) => {
      const ip = new URL(req.url ?? '/', 'http://x').searchParams.get('ip') ?? ''
      restarts.push(ip)
      const old = vm
      vm = undefined
      ;(async () => {
        await old?.close()
        vm = await joinVm(ip)
      })().then(
        () => res.end('ok'),
        (err: Error) => res.writeHead(500).end(err.message),
      )
    })
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    const port = (server.address() as {port: number}).port
    try {
      const cmd = `node -e "fetch('http://127.0.0.1:${port}/?ip='+process.env.MESHVM_VM_ADDRESS).then(r=>process.exit(r.ok?0:1))"`
      const r = await meshvm(['war', 'rollout', 'web', '-n', NS, '--restart-command', cmd], {timeoutMs: 120_000})
      expect(r.stderr).not.toMatch(STACK_TRACE)
      expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0)
      expect(restarts).toEqual([VM_IP])
      expect(r.stdout).toMatch(new RegExp(`${WE.replace(/\./g, '\\.')}\\s+re-onboarded`))
    } finally {
      server.close()
    }
    const we = (await cp.main.kube.get<WorkloadEntry>(wePath(WE))).json
    expect(we.spec.labels?.version).toBe('v2')
    const after = await meshvm(['war', 'list', '-n', NS, '-o', 'wide'])
    expect(after.stdout.split('\n').find((l) => l.startsWith(WE))).toMatch(/\sfalse\s/)
  })

  it('war delete removes the entry; istiod makes it again when the VM reconnects', async () => {
    const r = await meshvm(['war', 'delete', WE, '-n', NS, '--yes'])
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0)
    await cp.main.kube.waitFor(wePath(WE), (o) => o === undefined, 'WorkloadEntry deleted')
    await vm?.close()
    vm = await joinVm()
    await cp.main.kube.waitFor<WorkloadEntry>(wePath(WE), (o) => o?.metadata.annotations?.['istio.io/connectedAt'] !== undefined, 'WorkloadEntry back')
  })

  it("a stopped VM is marked disconnected (war describe); war prune --grace-period 0 deletes it before istiod's grace ends", async () => {
    await vm?.close()
    vm = undefined
    await cp.main.kube.waitFor<WorkloadEntry>(wePath(WE), (o) => o?.metadata.annotations?.['istio.io/disconnectedAt'] !== undefined, 'disconnectedAt')
    const describe = await meshvm(['war', 'describe', WE, '-n', NS])
    expect(describe.code, describe.stderr).toBe(0)
    expect(describe.stdout).toMatch(/Agent Connected:\s+False/)
    expect(describe.stdout).toMatch(/Disconnected At:\s+\d{4}-/)
    const prune = await meshvm(['war', 'prune', '-n', NS, '--grace-period', '0', '--yes'])
    expect(prune.code, `${prune.stdout}\n${prune.stderr}`).toBe(0)
    expect(prune.stdout + prune.stderr).toContain(WE)
    expect((await cp.main.kube.get(wePath(WE))).status).toBe(404)
  })

  it("a stopped VM's entry is deleted by istiod once the grace period has passed", async () => {
    const other = await joinVm('10.10.0.6')
    await cp.main.kube.waitFor(wePath('web-10.10.0.6'), (o) => o !== undefined, 'second VM registered')
    await other.close()
    await cp.main.kube.waitFor(wePath('web-10.10.0.6'), (o) => o === undefined, 'deletion after the grace period', 90_000)
    const list = await meshvm(['war', 'list', '-n', NS])
    expect(list.code, list.stderr).toBe(0)
    expect(`${list.stdout}${list.stderr}`).toContain(`No registrations found in namespace ${NS}.`)
  })
})

describe('the VM scenario shared with the simulation (test/vm/client.test.ts), against real istiod', () => {
  it('certificate, WorkloadEntry, Healthy True then False, SYNCED in syncz, disconnectedAt, deleted after the grace period', async () => {
    await vmJoinScenario({
      bundleDir: BUNDLE(),
      istiodAddress: cp.xdsAddress,
      namespace: NS,
      group: 'web',
      serviceAccount: 'web-vm',
      groupLabels: {app: 'web', version: 'v2'},
      instanceIp: '10.0.7.1',
      istiodName: ISTIOD_POD,
      timeoutMs: 60_000,
      workloadEntry: async (name) => {
        const r = await cp.main.kube.get<WorkloadEntry>(wePath(name))
        return r.status === 404 ? undefined : r.json
      },
      syncz: async () => JSON.parse((await cp.istiodDebug('/debug/syncz')).body) as SynczEntry[],
    })
  })
})

describe('the HBONE tunnel label (release note 60788: Istio 1.31, backported to 1.30.4)', () => {
  // istiod labels an auto-registered entry networking.istio.io/tunnel=http when the proxy sends
  // ENABLE_HBONE and istiod may listen for sidecar HBONE (PILOT_ENABLE_SIDECAR_LISTENING_HBONE, which
  // istiod ignores unless PILOT_ENABLE_AMBIENT=true: pilot/pkg/features/ambient.go). This istiod runs
  // the default (sidecar) profile: no label, and reconcile must not ask for one.
  it('an HBONE-capable VM on istiod without ambient mode gets no tunnel label, and war reconcile reports none missing', async () => {
    const dir = join(work, 'hbone-vm')
    cpSync(BUNDLE(), dir, {recursive: true, dereference: true})
    const mesh = parseYaml(readFileSync(join(dir, 'mesh.yaml'), 'utf8')) as {defaultConfig: {proxyMetadata: Record<string, string>}}
    mesh.defaultConfig.proxyMetadata.ISTIO_META_ENABLE_HBONE = 'true'
    writeFileSync(join(dir, 'mesh.yaml'), stringifyYaml(mesh))
    const ip = '10.10.0.7'
    const hbone = await joinIstiod({bundleDir: dir, istiodAddress: cp.xdsAddress, instanceIp: ip})
    try {
      await hbone.synced()
      const we = (await cp.main.kube.waitFor<WorkloadEntry>(wePath(`web-${ip}`), (o) => o !== undefined, 'HBONE VM registered'))!
      expect(we.metadata.labels?.['networking.istio.io/tunnel']).toBeUndefined()
      const wide = await meshvm(['war', 'list', '-n', NS, '-o', 'wide'])
      expect(wide.code, wide.stderr).toBe(0)
      const header = wide.stdout.split('\n')[0]!
      const row = wide.stdout.split('\n').find((l) => l.startsWith(`web-${ip}`))!
      expect(row.slice(header.indexOf('TUNNEL')).split(/\s+/)[0]).toBe('<none>')
      const reconcile = await meshvm(['war', 'reconcile', '-n', NS, '-o', 'json'])
      expect(reconcile.stderr).not.toMatch(STACK_TRACE)
      expect(reconcile.stdout).not.toContain('MissingTunnelLabel')
    } finally {
      await hbone.close()
      await cp.main.kube.request('DELETE', wePath(`web-${ip}`))
    }
  })
})

describe('proxy-status against real istiod', () => {
  it("finds the istiod pod and reads /debug/syncz over the real API server's port-forward (HTTP, loopback monitoring port)", async () => {
    const r = await meshvm(['proxy-status', '--debug'])
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).toMatch(new RegExp(`istiod ${ISTIO_NAMESPACE}/${ISTIOD_POD}: GET /debug/syncz over port-forward to :15014 → HTTP 200`))
  })

  it('--xds-address: the same istiod over xDS with a token, TLS verified against the mesh root', async () => {
    const r = await meshvm(['proxy-status', '--xds-address', cp.xdsAddress, '--debug'])
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).toMatch(/xDS/)
  })

  it('-o json is a list', async () => {
    const r = await meshvm(['proxy-status', '-o', 'json'])
    expect(r.code, r.stderr).toBe(0)
    expect(() => JSON.parse(r.stdout)).not.toThrow()
  })
})

describe('multi-cluster: create-remote-secret and remote-secret on real API servers and istiod', () => {
  it('create-remote-secret --verify for the reader ServiceAccount Istio installed (its token Secret filled by the real token controller), applied to the main cluster: istiod connects to the remote API server', async () => {
    const r = await meshvm(['create-remote-secret', '--context', 'remote', '--name', 'remote', '--verify', '--apply-to', 'main'], {stdoutMayHoldSecrets: true, timeoutMs: 90_000})
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code, r.stderr).toBe(0)
    const secret = (await cp.main.kube.get<{metadata: {labels: Record<string, string>}; data: {remote: string}}>(`/api/v1/namespaces/${ISTIO_NAMESPACE}/secrets/istio-remote-secret-remote`)).json
    expect(secret.metadata.labels['istio/multiCluster']).toBe('true')
    recordSecret(
      Buffer.from(secret.data.remote, 'base64')
        .toString('utf8')
        .match(/token: (\S+)/)?.[1] ?? '',
    )
    // istiod's own view, on its loopback debug port
    const deadline = Date.now() + 60_000
    let clusterz: {id: string; syncStatus: string}[] = []
    while (Date.now() < deadline) {
      clusterz = JSON.parse((await cp.istiodDebug('/debug/clusterz')).body)
      if (clusterz.some((c) => c.id === 'remote' && c.syncStatus === 'synced')) break
      await new Promise((res) => setTimeout(res, 250))
    }
    expect(clusterz.find((c) => c.id === 'remote')).toMatchObject({syncStatus: 'synced'})
  })

  it('create-remote-secret prints what istioctl create-remote-secret prints, byte for byte (the token aside)', async () => {
    const ours = await meshvm(['create-remote-secret', '--context', 'remote', '--name', 'remote', '-n', ISTIO_NAMESPACE], {stdoutMayHoldSecrets: true})
    expect(ours.code, ours.stderr).toBe(0)
    // istioctl takes the context's namespace (default here) unless told
    const theirs = await istioctl(['create-remote-secret', '--context', 'remote', '--name', 'remote', '-n', ISTIO_NAMESPACE])
    expect(theirs.code, theirs.stderr).toBe(0)
    const token = (s: string) => /^\s+token: (\S+)$/m.exec(s)?.[1]
    recordSecret(token(theirs.stdout) ?? '')
    expect(token(ours.stdout) === token(theirs.stdout), 'the same token (the same token Secret)').toBe(true)
    const masked = (s: string) => s.replace(/^(\s+token: )\S+$/m, '$1TOKEN')
    expect(masked(ours.stdout)).toBe(masked(theirs.stdout))
  })

  it("remote-secret list and status read the secret and istiod's real clusterz (through port-forward)", async () => {
    const list = await meshvm(['remote-secret', 'list'])
    expect(list.code, list.stderr).toBe(0)
    expect(list.stdout).toMatch(/istio-remote-secret-remote/)
    const status = await meshvm(['remote-secret', 'status', '-o', 'json'])
    expect(status.stderr).not.toMatch(STACK_TRACE)
    expect(status.code, status.stderr).toBe(0)
    const rows = JSON.parse(status.stdout) as {cluster: string; verdict: string; istiods: {istiod: string; syncStatus?: string}[]}[]
    const remote = (Array.isArray(rows) ? rows : (rows as {items: typeof rows}).items).find((x) => x.cluster === 'remote')
    expect(remote).toMatchObject({verdict: 'ok', istiods: [{istiod: ISTIOD_POD, syncStatus: 'synced'}]})
  })

  it('rotate: a new token from the remote cluster, applied; istiod stays connected', async () => {
    const r = await meshvm(['remote-secret', 'rotate', 'remote', '--from', 'remote'], {timeoutMs: 90_000})
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code, `${r.stdout}\n${r.stderr}`).toBe(0)
    const clusterz = JSON.parse((await cp.istiodDebug('/debug/clusterz')).body) as {id: string; syncStatus: string}[]
    expect(clusterz.find((c) => c.id === 'remote')).toMatchObject({syncStatus: 'synced'})
  })
})

describe('a stopped istiod', () => {
  it("a replica whose process is gone (port-forward refused): its VM shows NO ANSWER, a warning names it, the live istiod's VM stays SYNCED", async () => {
    vm = await joinVm()
    await createIstiodPod(cp.main.kube, 'istiod-real-1', imageTag(cp.istioVersion))
    // a VM that was connected to the replica: its entry as istiod left it
    const we = {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadEntry',
      metadata: {
        name: 'web-10.10.0.9',
        namespace: NS,
        labels: {app: 'web'},
        annotations: {'istio.io/autoRegistrationGroup': 'web', 'istio.io/workloadController': 'istiod-real-1', 'istio.io/connectedAt': new Date().toISOString()},
      },
      spec: {address: '10.10.0.9', serviceAccount: 'web-vm', labels: {app: 'web'}},
    }
    await cp.main.kube.create(`/apis/networking.istio.io/v1/namespaces/${NS}/workloadentries`, we)
    try {
      // The new entry makes istiod push to the live VM (untilSynced).
      const r = await untilSynced(['proxy-status', '-n', NS, '-v', '1', '-o', 'wide', '--timeout', '10s'])
      expect(r.stderr).not.toMatch(STACK_TRACE)
      expect(r.stdout.split('\n').find((l) => l.startsWith(vm!.proxyId))).toMatch(/SYNCED/)
      expect(r.stdout.split('\n').find((l) => l.includes('10.10.0.9'))).toMatch(/NO ANSWER/)
      expect(r.stderr).toContain('istiod-real-1')
    } finally {
      await cp.main.kube.request('DELETE', `/apis/networking.istio.io/v1/namespaces/${NS}/workloadentries/web-10.10.0.9`)
      await cp.main.kube.request('DELETE', `/api/v1/namespaces/${ISTIO_NAMESPACE}/pods/istiod-real-1?gracePeriodSeconds=0`)
    }
  })

  it('the only istiod stopped: proxy-status fails in one line naming the refused port-forward; it answers again once istiod is back', async () => {
    await cp.stopIstiod()
    try {
      const r = await meshvm(['proxy-status', '--timeout', '5s'])
      expect(r.stderr).not.toMatch(STACK_TRACE)
      expect(r.code).not.toBe(0)
      expect(r.stderr.split('\n')[0]).toMatch(new RegExp(`^Error: istiod ${ISTIO_NAMESPACE}/${ISTIOD_POD}: port-forward refused on :15014 \\(HTTP debug\\) and :15012 \\(xDS\\)`))
    } finally {
      await vm?.close()
      vm = undefined
      await cp.startIstiod()
    }
    const again = await meshvm(['proxy-status'])
    expect(again.code, again.stderr).toBe(0)
  })
})
