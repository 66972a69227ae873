/**
 * A VM joins the REAL istiod (built from its Go module, started by ../control-plane.ts) with the
 * bundle `meshvm onboard --bundle --autoregister` wrote, through test/real/vm/client.ts (grpc-js and
 * the upstream protos): the scenario of scenario.ts, which test/vm/client.test.ts runs against the
 * simulated istiod too; then what real istiod refuses, as the simulation refuses it.
 */
import {mkdtempSync, readFileSync, rmSync, writeFileSync, cpSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, inject, it} from 'vitest'
import {runCli, STACK_TRACE} from '../../helpers/cli.js'
import {recordSecret} from '../../helpers/secrets.js'
import {ISTIOD_POD, istioReleaseFromEnv, startRealControlPlane, type RealControlPlane} from '../control-plane.js'
import {onboardWebWithBundle} from '../../helpers/stories.js'
import {decodeDiscoveryResponse, discoveryResponseJson} from '../../../src/lib/grpc/xds.js'
import {decodeMessage, structToJson, type ProtoStruct} from '../../fixtures/protos/load.js'
import {joinIstiod} from './client.js'
import {xdsDebugBytes} from './debug.js'
import {vmJoinScenario, type SynczEntry, type WorkloadEntry} from './scenario.js'

const NS = 'vm-join'
let cp: RealControlPlane
let work: string
let bundle: string

beforeAll(async () => {
  cp = await startRealControlPlane({istio: istioReleaseFromEnv(), binaries: inject('realBinaries'), gracePeriod: '3s', onProgress: (l) => process.stderr.write(`${l}\n`)})
  recordSecret(cp.main.token)
  work = mkdtempSync(join(tmpdir(), 'meshvm-real-vm-'))
  bundle = join(work, 'web')
  const r = await runCli([...onboardWebWithBundle(NS, bundle), '--no-hosts'], {env: {KUBECONFIG: cp.kubeconfigPath, HOME: work}, timeoutMs: 90_000})
  expect(r.stderr).not.toMatch(STACK_TRACE)
  expect(r.code, r.stderr).toBe(0)
  recordSecret(readFileSync(join(bundle, 'istio-token'), 'utf8').trim())
})

afterAll(async () => {
  await cp?.stop()
  if (work) rmSync(work, {recursive: true, force: true})
})

const workloadEntry = async (name: string) => {
  const r = await cp.main.kube.get<WorkloadEntry>(`/apis/networking.istio.io/v1/namespaces/${NS}/workloadentries/${name}`)
  if (r.status === 404) return undefined
  if (r.status !== 200) throw new Error(`GET workloadentry ${name}: HTTP ${r.status}`)
  return r.json
}
const syncz = async () => JSON.parse((await cp.istiodDebug('/debug/syncz')).body) as SynczEntry[]

describe('a VM joins real istiod with the bundle meshvm wrote', () => {
  it("certificate for the group's SA, WorkloadEntry, Healthy True then False, SYNCED in syncz, disconnectedAt, deleted after the grace period", async () => {
    await vmJoinScenario({
      bundleDir: bundle,
      istiodAddress: cp.xdsAddress,
      namespace: NS,
      group: 'web',
      serviceAccount: 'web-vm',
      groupLabels: {app: 'web'},
      instanceIp: '10.20.0.5',
      istiodName: ISTIOD_POD,
      workloadEntry,
      syncz,
    })
  })
})

describe("real istiod's xDS syncz bytes, read by meshvm's codec and by the upstream protos", () => {
  it('the same proxies, types, statuses and times both ways', async () => {
    const vm = await joinIstiod({bundleDir: bundle, istiodAddress: cp.xdsAddress, instanceIp: '10.20.0.9'})
    try {
      await vm.synced()
      // A reader identity in istiod's namespace (no kube-controller-manager: its SA is made here).
      await cp.main.kube.create('/api/v1/namespaces/istio-system/serviceaccounts', {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: 'syncz-reader'}})
      const tr = await cp.main.kube.must<{status: {token: string}}>('POST', '/api/v1/namespaces/istio-system/serviceaccounts/syncz-reader/token', {
        apiVersion: 'authentication.k8s.io/v1',
        kind: 'TokenRequest',
        spec: {audiences: ['istio-ca'], expirationSeconds: 600},
      })
      recordSecret(tr.status.token)
      const bytes = await xdsDebugBytes({
        istiodAddress: cp.xdsAddress,
        rootCert: readFileSync(join(bundle, 'root-cert.pem'), 'utf8'),
        token: tr.status.token,
        namespace: 'istio-system',
        typeUrl: 'istio.io/debug/syncz',
      })

      type Generic = {typeUrl: string; configStatus?: string; lastUpdated?: {seconds: string; nanos?: number}}
      const real = decodeMessage<{versionInfo?: string; nonce?: string; controlPlane?: {identifier?: string}; resources?: {type_url: string; value: Uint8Array}[]}>(
        'envoy.service.discovery.v3.DiscoveryResponse',
        bytes,
      )
      const proxies = (real.resources ?? []).map((a) => {
        expect(a.type_url).toBe('type.googleapis.com/envoy.service.status.v3.ClientConfig')
        const cc = decodeMessage<{node?: {id?: string; metadata?: ProtoStruct}; genericXdsConfigs?: Generic[]}>('envoy.service.status.v3.ClientConfig', a.value)
        return {
          id: cc.node?.id,
          metadata: structToJson(cc.node?.metadata),
          types: (cc.genericXdsConfigs ?? []).map((g) => ({
            typeUrl: g.typeUrl,
            status: g.configStatus ?? 'UNKNOWN',
            ms: g.lastUpdated ? Number(g.lastUpdated.seconds) * 1000 + Math.floor((g.lastUpdated.nanos ?? 0) / 1e6) : undefined,
          })),
        }
      })
      expect(proxies.map((p) => p.id)).toContain(vm.proxyId)

      const mine = discoveryResponseJson(decodeDiscoveryResponse(bytes)) as {
        versionInfo?: string
        nonce?: string
        controlPlane?: {identifier: string}
        resources: {node?: {id?: string; metadata?: unknown}; genericXdsConfigs: {typeUrl: string; configStatus?: string; lastUpdated?: string}[]}[]
      }
      expect({versionInfo: mine.versionInfo, nonce: mine.nonce, identifier: mine.controlPlane?.identifier}).toEqual({
        versionInfo: real.versionInfo,
        nonce: real.nonce,
        identifier: real.controlPlane?.identifier,
      })
      expect(
        mine.resources.map((r) => ({
          id: r.node?.id,
          metadata: r.node?.metadata ?? {},
          types: r.genericXdsConfigs.map((g) => ({typeUrl: g.typeUrl, status: g.configStatus ?? 'UNKNOWN', ms: g.lastUpdated ? Date.parse(g.lastUpdated) : undefined})),
        })),
      ).toEqual(proxies)
      const ours = proxies.find((p) => p.id === vm.proxyId)!
      expect(ours.types.filter((t) => t.typeUrl.endsWith('.Cluster') || t.typeUrl.endsWith('.Listener')).map((t) => t.status)).toEqual(['SYNCED', 'SYNCED'])
    } finally {
      await vm.close()
    }
  })
})

describe('what real istiod refuses (test/vm/join.test.ts has the simulation refuse the same)', () => {
  /** A copy of the bundle with one change to mesh.yaml's proxyMetadata or the token. */
  const variant = (name: string, change: {metadata?: Record<string, string>; token?: string}) => {
    const dir = join(work, name)
    cpSync(bundle, dir, {recursive: true, dereference: true})
    if (change.token !== undefined) writeFileSync(join(dir, 'istio-token'), change.token, {mode: 0o600})
    for (const [k, v] of Object.entries(change.metadata ?? {})) {
      const mesh = readFileSync(join(dir, 'mesh.yaml'), 'utf8')
      writeFileSync(join(dir, 'mesh.yaml'), mesh.replace(new RegExp(`^(    ${k}: ).*$`, 'm'), `$1${JSON.stringify(v)}`))
    }
    return dir
  }

  it('a token that is not a service-account JWT: the CA answers UNAUTHENTICATED', async () => {
    const err = await joinIstiod({bundleDir: variant('bad-token', {token: 'not-a-jwt'}), istiodAddress: cp.xdsAddress, instanceIp: '10.20.0.6'}).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect((err as {code?: number}).code).toBe(16)
  })

  it('a cluster ID istiod does not know: UNAUTHENTICATED', async () => {
    const err = await joinIstiod({bundleDir: variant('bad-cluster', {metadata: {ISTIO_META_CLUSTER_ID: 'cluster9'}}), istiodAddress: cp.xdsAddress, instanceIp: '10.20.0.7'}).then(
      () => undefined,
      (e: unknown) => e,
    )
    expect((err as {code?: number}).code).toBe(16)
  })

  it('a group that does not exist: the ADS stream ends FAILED_PRECONDITION and no entry is made', async () => {
    const vm = await joinIstiod({bundleDir: variant('no-group', {metadata: {ISTIO_META_AUTO_REGISTER_GROUP: 'nope'}}), istiodAddress: cp.xdsAddress, instanceIp: '10.20.0.8'})
    try {
      const err = await vm.synced().then(
        () => undefined,
        (e: unknown) => e,
      )
      expect((err as {code?: number}).code).toBe(9)
      expect((err as Error).message).toContain('cannot find WorkloadGroup')
    } finally {
      await vm.close()
    }
    expect(await workloadEntry('nope-10.20.0.8')).toBeUndefined()
  })
})
