/**
 * The ambient era for auto-registered VMs: a simulated mesh upgraded from Istio 1.30 to 1.31
 * behaviour (test/cluster/autoregistration.ts). 1.31 labels the entries it creates for HBONE-capable
 * proxies networking.istio.io/tunnel=http and writes WaypointBound (release notes 60788, 59993); the
 * entries made under 1.30 keep no label until they re-register. `war reconcile` finds them
 * (MissingTunnelLabel), and `war rollout --missing-tunnel-label` re-registers them, never more than
 * --max-unavailable away at once, each back connected, healthy and labelled.
 *
 * The VMs' sidecars are driven in-process; --restart-command restarts one by calling a loopback hook.
 */
import {createServer, type Server} from 'node:http'
import type {AddressInfo} from 'node:net'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {AutoRegistration, TUNNEL_LABEL, type ProxyInfo} from '../cluster/autoregistration.js'
import {resourceKey, type KubeObj} from '../cluster/index.js'
import {STACK_TRACE} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'

const NS = 'amb'
const ISTIOD = 'istiod-7d4b9c6f8-x2k9p'
const WE = resourceKey('networking.istio.io', 'workloadentries')
const WG = resourceKey('networking.istio.io', 'workloadgroups')
const PODS = resourceKey('', 'pods')
const CMS = resourceKey('', 'configmaps')

let cluster: TestCluster
let autoreg: AutoRegistration
let hook: Server
let restartCommand: string
const proxies: ProxyInfo[] = []
/** Entries deleted and not yet re-made, now and at most. */
let away = 0
let mostAway = 0
const restarts: string[] = []

const meshvm = (args: string[]) => runCommand(args, {env: cluster.env, timeoutMs: 60_000})
const entry = (name: string): KubeObj | undefined => cluster.store.get(WE, NS, name)
const labelOf = (name: string) => entry(name)?.metadata.labels?.[TUNNEL_LABEL]

/** What an upgrade of istiod does here: its image (meshvm reads the version from it) and its auto-registration. */
function setIstiodVersion(version: '1.30.2' | '1.31.0'): void {
  const pod = cluster.store.get(PODS, 'istio-system', ISTIOD)!
  const spec = structuredClone(pod.spec) as {containers: {image: string}[]}
  spec.containers[0]!.image = `docker.io/istio/pilot:${version}`
  cluster.store.update(PODS, {...pod, spec})
  autoreg.istioVersion = version.startsWith('1.31') ? '1.31' : '1.30'
}

/** A sidecar (re)connects: auto-registration, then a passing health check. */
function connect(p: ProxyInfo): void {
  autoreg.connect(p, new Date())
  autoreg.health(p.id, {healthy: true})
}

interface Finding {
  type: string
  name: string
  reason: string
  fix: string
}
async function reconcileFindings(): Promise<Finding[]> {
  const res = await meshvm(['war', 'reconcile', '-n', NS, '-o', 'json'])
  expect(res.stderr).not.toMatch(STACK_TRACE)
  return (JSON.parse(res.stdout) as {findings: Finding[]}).findings
}

beforeAll(async () => {
  cluster = await startCluster()
  // The ambient profile's mesh config: every proxy advertises HBONE (ISTIO_META_ENABLE_HBONE=true).
  const mesh = cluster.store.get(CMS, 'istio-system', 'istio')!
  cluster.store.update(CMS, {
    ...mesh,
    data: {mesh: 'defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\n  proxyMetadata:\n    ISTIO_META_ENABLE_HBONE: "true"\ntrustDomain: cluster.local\n'},
  })
  // ... and istiod in ambient mode (PILOT_ENABLE_AMBIENT=true), without which it ignores HBONE on sidecars.
  const DEPLOY = resourceKey('apps', 'deployments')
  const istiod = cluster.store.get(DEPLOY, 'istio-system', 'istiod')!
  const spec = structuredClone(istiod.spec) as {template: {spec: {containers: {env: {name: string; value: string}[]}[]}}}
  spec.template.spec.containers[0]!.env.push({name: 'PILOT_ENABLE_AMBIENT', value: 'true'})
  cluster.store.update(DEPLOY, {...istiod, metadata: {...istiod.metadata, resourceVersion: undefined}, spec})
  cluster.store.create(resourceKey('', 'namespaces'), 'Namespace', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: NS}, status: {phase: 'Active'}})
  cluster.store.create(WG, 'WorkloadGroup', {
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: {name: 'web', namespace: NS},
    spec: {
      metadata: {labels: {app: 'web', 'istio.io/use-waypoint': 'waypoint'}},
      template: {serviceAccount: 'default', ports: {http: 8080}},
      probe: {httpGet: {path: '/ready', port: 8080}, periodSeconds: 5},
    },
  })
  autoreg = new AutoRegistration(cluster.store, {instanceId: ISTIOD, waypoints: [`${NS}/waypoint`]})
  setIstiodVersion('1.30.2')
  for (let i = 1; i <= 4; i++) {
    const p: ProxyInfo = {id: `vm-${i}.${NS}`, namespace: NS, ips: [`10.20.0.${i}`], autoRegisterGroup: 'web', identity: {namespace: NS, serviceAccount: 'default'}, readinessProbe: true, hbone: true}
    proxies.push(p)
    connect(p)
    cluster.mesh.connect({id: p.id, istiod: ISTIOD})
  }
  cluster.store.onEvent((e) => {
    if (e.resource !== WE || e.object.metadata.namespace !== NS) return
    if (e.type === 'DELETED') mostAway = Math.max(mostAway, ++away)
    if (e.type === 'ADDED') away--
  })
  // --restart-command: restarts the sidecar of the VM at MESHVM_VM_ADDRESS (a moment later, as systemd would).
  hook = createServer((req, res) => {
    const address = decodeURIComponent(req.url!.slice('/restart/'.length))
    const p = proxies.find((x) => x.ips[0] === address)
    if (!p) return void res.writeHead(404).end()
    restarts.push(address)
    res.writeHead(200).end()
    autoreg.disconnect(p.id)
    setTimeout(() => connect(p), 200)
  })
  await new Promise<void>((resolve) => hook.listen(0, '127.0.0.1', resolve))
  const port = (hook.address() as AddressInfo).port
  restartCommand = `"${process.execPath}" -e "fetch('http://127.0.0.1:${port}/restart/' + process.env.MESHVM_VM_ADDRESS).then((r) => process.exit(r.ok ? 0 : 1), () => process.exit(1))"`
})

afterAll(async () => {
  autoreg?.stop()
  await new Promise((resolve) => hook?.close(resolve))
  await cluster?.stop()
})

describe('auto-registered VMs across an upgrade from Istio 1.30 to 1.31', () => {
  const names = ['web-10.20.0.1', 'web-10.20.0.2', 'web-10.20.0.3', 'web-10.20.0.4']

  it('1.30: no tunnel label, no WaypointBound; reconcile says to label them (re-registering would not help), rollout skips them', async () => {
    for (const n of names) expect(labelOf(n)).toBeUndefined()
    const list = await meshvm(['war', 'list', '-n', NS, '-o', 'wide'])
    expect(list.code, list.stderr).toBe(0)
    expect(list.stdout.split('\n')[0]).toMatch(/ STALE +TUNNEL +WAYPOINT +SOURCE$/)
    for (const n of names) expect(list.stdout).toMatch(new RegExp(`^${n.replace(/\./g, '\\.')} .* false +<none> +<none> +workloadentry$`, 'm'))
    const findings = (await reconcileFindings()).filter((f) => f.type === 'MissingTunnelLabel')
    expect(findings.map((f) => f.name)).toEqual(names)
    expect(findings[0]!.reason).toBe(
      `no ${TUNNEL_LABEL} label, though its proxy is HBONE-capable (the mesh config of revision default sets proxyMetadata ISTIO_META_ENABLE_HBONE=true): it was registered before istiod labelled new entries (Istio 1.31, release note 60788), so ambient workloads reach it over plaintext`,
    )
    expect(findings[0]!.fix).toBe(
      `istiod ${ISTIOD} (1.30.2) is older than 1.31 and would re-register it without the label: label it: kubectl label workloadentry web-10.20.0.1 -n ${NS} ${TUNNEL_LABEL}=http --context ${cluster.contextName}`,
    )
    const roll = await meshvm(['war', 'rollout', 'web', '-n', NS, '--missing-tunnel-label', '--restart-command', restartCommand])
    expect(roll.code, roll.stderr).toBe(0)
    expect(roll.stderr).toContain(
      `Warning: skipping web-10.20.0.1: istiod ${ISTIOD} (1.30.2) is older than 1.31 and would re-register it without the label; label it instead: kubectl label workloadentry web-10.20.0.1 -n ${NS} ${TUNNEL_LABEL}=http`,
    )
    expect(restarts).toEqual([])
  })

  it('1.31: reconcile finds the entries missing the tunnel label; rollout --missing-tunnel-label re-registers them, at most --max-unavailable away, each back healthy and labelled', async () => {
    setIstiodVersion('1.31.0')
    // A VM that merely reconnects keeps its entry as it was: still no label (that is the upgrade note).
    autoreg.disconnect(proxies[0]!.id)
    connect(proxies[0]!)
    expect(labelOf(names[0]!)).toBeUndefined()
    const before = await reconcileFindings()
    const missing = before.filter((f) => f.type === 'MissingTunnelLabel')
    expect(missing.map((f) => f.name)).toEqual(names)
    expect(missing[0]!.fix).toBe(
      `re-register the group's entries, --max-unavailable at a time, with health gates: meshvm war rollout web -n ${NS} --missing-tunnel-label --restart-command '…' --context ${cluster.contextName}; or label it: kubectl label workloadentry web-10.20.0.1 -n ${NS} ${TUNNEL_LABEL}=http --context ${cluster.contextName}`,
    )
    const uids = names.map((n) => entry(n)!.metadata.uid)

    const dry = await meshvm(['war', 'rollout', 'web', '-n', NS, '--missing-tunnel-label', '--dry-run', '--restart-command', restartCommand])
    expect(dry.code, dry.stderr).toBe(0)
    expect(dry.stderr).toBe(`Dry run: 4 of 4 registration(s) of workloadgroup ${NS}/web would be re-onboarded, up to 1 at a time; nothing was changed.\n`)

    const res = await meshvm([
      'war',
      'rollout',
      'web',
      '-n',
      NS,
      '--missing-tunnel-label',
      '--max-unavailable',
      '2',
      '--restart-command',
      restartCommand,
      '--poll-interval',
      '100ms',
      '--timeout',
      '30s',
    ])
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(res.code, res.stderr).toBe(0)
    expect(res.stderr.split('\n')[0]).toBe(
      `Rolling out workloadgroup ${NS}/web (generation 1): 4 of 4 registration(s) lack the HBONE tunnel label; re-onboarding 4, up to 2 at a time, waiting up to 30s for each`,
    )
    for (const n of names)
      expect(res.stdout).toMatch(new RegExp(`^${n.replace(/\./g, '\\.')} +re-onboarded +\\d+\\.\\ds +connected to ${ISTIOD}, ${TUNNEL_LABEL.replace(/\./g, '\\.')}=http, healthy$`, 'm'))
    expect(res.stderr.trimEnd().split('\n').pop()).toBe(`Rollout of workloadgroup ${NS}/web complete: 4 re-onboarded, 0 already up to date.`)
    // Never more than --max-unavailable entries away at once (and it did use both slots).
    expect(mostAway).toBe(2)
    expect([...restarts].sort()).toEqual(['10.20.0.1', '10.20.0.2', '10.20.0.3', '10.20.0.4'])
    // Each entry was re-made (new UID) with the label, healthy, and bound to its waypoint.
    names.forEach((n, i) => {
      expect(entry(n)!.metadata.uid).not.toBe(uids[i])
      expect(labelOf(n)).toBe('http')
      const conds = (entry(n)!.status as {conditions: {type: string; status: string}[]}).conditions
      expect(conds.find((c) => c.type === 'Healthy')?.status).toBe('True')
      expect(conds.find((c) => c.type === 'istio.io/WaypointBound')?.status).toBe('True')
    })
    expect((await reconcileFindings()).filter((f) => f.type === 'MissingTunnelLabel')).toEqual([])
    // The user's group is only read.
    expect(Object.keys(cluster.store.get(WG, NS, 'web')!.metadata.annotations ?? {})).toEqual([])
  })

  it('war list -o wide and war describe show the tunnel label and WaypointBound', async () => {
    const list = await meshvm(['war', 'list', '-n', NS, '-o', 'wide'])
    expect(list.code, list.stderr).toBe(0)
    for (const n of names) expect(list.stdout).toMatch(new RegExp(`^${n.replace(/\./g, '\\.')} .* false +http +True +workloadentry$`, 'm'))
    const d = await meshvm(['war', 'describe', 'web-10.20.0.1', '-n', NS])
    expect(d.code, d.stderr).toBe(0)
    expect(d.stdout).toMatch(new RegExp(`^  Tunnel: +http \\(${TUNNEL_LABEL.replace(/\./g, '\\.')}: ambient workloads reach it over HBONE\\)$`, 'm'))
    expect(d.stdout).toMatch(/^ {2}Waypoint Bound: +True \(WaypointAccepted, \S+ ago\): bound to amb\/waypoint$/m)
    // Nothing left: a second rollout finds nothing to do.
    const again = await meshvm(['war', 'rollout', 'web', '-n', NS, '--missing-tunnel-label', '--restart-command', restartCommand])
    expect(again.code, again.stderr).toBe(0)
    expect(again.stderr).toBe(`workloadgroup ${NS}/web (generation 1): all 4 registration(s) are up to date, nothing to roll out\n`)
  })
})
