import {execFile, spawn, type ChildProcess} from 'node:child_process'
import {once} from 'node:events'
import {mkdtempSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {runCli} from '../helpers/cli.js'
import {kubectl, startCluster, type TestCluster} from '../helpers/cluster.js'
import {DEMO_ISTIODS, seedDemoMesh} from './demo-mesh.js'

let cluster: TestCluster
beforeAll(async () => {
  cluster = await startCluster()
  seedDemoMesh(cluster)
})
afterAll(() => cluster?.stop())

describe('demo mesh', () => {
  it('has 3 namespaces, 2 istiod revisions, 40 pods with sidecars and 12 VMs, some unhealthy, disconnected or stale', async () => {
    const appPods = ['shop', 'payments', 'legacy'].flatMap((ns) => cluster.store.list('/pods', ns))
    expect(appPods).toHaveLength(40)
    const istiods = cluster.store.list('/pods', 'istio-system')
    expect(istiods.map((p) => p.metadata.labels?.['istio.io/rev']).sort()).toEqual(['1-31', 'default'])
    const entries = ['shop', 'payments', 'legacy'].flatMap((ns) => cluster.store.list('networking.istio.io/workloadentries', ns))
    expect(entries).toHaveLength(12)
    const unhealthy = entries.filter((e) => (e.status as {conditions?: {status: string}[]} | undefined)?.conditions?.[0]?.status === 'False')
    expect(unhealthy.length).toBeGreaterThanOrEqual(2)
    expect([...cluster.mesh.proxies.values()].filter((p) => p.istiod === DEMO_ISTIODS.canary).length).toBeGreaterThan(0)
    const wars = ['shop', 'legacy'].flatMap((ns) => cluster.store.list('runtime.onboarding.tetrate.io/workloadautoregistrations', ns))
    expect(wars.filter((w) => (w.status as {conditions: {status: string}[]}).conditions[0]!.status === 'False')).toHaveLength(2)
    const res = await kubectl(cluster, ['get', 'war', '-A'])
    expect(res.stdout.split('\n').filter((l) => /\sFalse\s/.test(l))).toHaveLength(2)
  })

  it('every demo istiod serves /debug/clusterz (remote-secret status and rotate read it): the config cluster, synced', async () => {
    const clusterz = cluster.mesh.debugHandlers.get('/debug/clusterz')
    expect(clusterz).toBeDefined()
    for (const istiod of cluster.mesh.istiods.values()) {
      expect(await clusterz!(istiod)).toEqual([{id: 'cluster1', secretName: '', syncStatus: 'synced'}])
    }
  })

  it('proxy-status reads the demo over HTTP debug, and over xDS alone as with demo:cluster --no-debug-http: the same proxies and states', async () => {
    // Status words only: xDS reports no nonces (no "Never Acknowledged") and gives 1.21-shape istiods ages.
    const states = (table: string) =>
      table
        .trim()
        .split('\n')
        .slice(1)
        .map((l) =>
          l
            .replace(/ \([^)]*\)/g, '')
            .split(/\s{2,}/)
            .slice(0, 7)
            .join('|'),
        )
        .sort()
    const http = await runCli(['proxy-status', '-v', '1'], {env: cluster.env})
    expect(http.code, http.stderr).toBe(0)
    for (const name of cluster.mesh.istiods.keys()) cluster.mesh.setIstiod(name, {debugHttp: false})
    try {
      const xds = await runCli(['proxy-status', '-v', '1', '--debug'], {env: cluster.env})
      expect(xds.code, xds.stderr).toBe(0)
      expect(states(xds.stdout)).toEqual(states(http.stdout))
      expect(xds.stderr.match(/: xDS over port-forward to :15012 \(TLS verified for istiod(-1-31)?\.istio-system\.svc.* → istio\.io\/debug\/syncz:/g)).toHaveLength(2)
    } finally {
      for (const name of cluster.mesh.istiods.keys()) cluster.mesh.setIstiod(name, {debugHttp: true})
    }
  })
})

describe('npm run demo:cluster -- --name NAME --cluster-id ID', () => {
  const work = mkdtempSync(join(tmpdir(), 'meshvm-demo-'))
  const demos: ChildProcess[] = []
  afterAll(async () => {
    const running = demos.filter((d) => d.exitCode === null && d.signalCode === null)
    const exited = running.map((d) => once(d, 'exit'))
    for (const d of running) d.kill('SIGTERM')
    await Promise.all(exited)
    rmSync(work, {recursive: true, force: true})
  })
  const DEMO = fileURLToPath(new URL('./demo.ts', import.meta.url))
  const start = (args: string[], dir: string): Promise<{out: string; code: number | null}> =>
    new Promise((resolve) => {
      const child = spawn(process.execPath, ['--import', 'tsx', DEMO, ...args], {env: {...process.env, MESHVM_DEMO_DIR: dir}, stdio: ['ignore', 'pipe', 'pipe']})
      demos.push(child)
      let out = ''
      child.stdout.on('data', (d: Buffer) => {
        out += d.toString()
        if (out.includes('Press Ctrl-C')) resolve({out, code: null})
      })
      child.stderr.on('data', (d: Buffer) => (out += d.toString()))
      child.once('exit', (code) => resolve({out, code}))
    })

  it('runs two demo clusters side by side, each with its own context and Istio cluster ID', async () => {
    const [east, west] = await Promise.all([start(['--name', 'east', '--cluster-id', 'east-1'], join(work, 'east')), start(['--context', 'west', '--cluster-id', 'west-1'], join(work, 'west'))])
    expect(east.out).toContain('meshvm demo cluster east (Istio cluster ID east-1)')
    expect(west.out).toContain('meshvm demo cluster west (Istio cluster ID west-1)')
    const env = {...process.env, KUBECONFIG: `${join(work, 'east', 'kubeconfig')}:${join(work, 'west', 'kubeconfig')}`, KUBECACHEDIR: join(work, 'kube-cache')}
    const run = (args: string[]): Promise<string> =>
      new Promise((resolve, reject) => execFile('kubectl', args, {env, encoding: 'utf8'}, (err, stdout, stderr) => (err ? reject(new Error(stderr)) : resolve(stdout))))
    expect((await run(['config', 'get-contexts', '-o', 'name'])).split('\n').filter(Boolean).sort()).toEqual(['east', 'west'])
    for (const [context, id] of [
      ['east', 'east-1'],
      ['west', 'west-1'],
    ] as const) {
      const values = await run(['--context', context, 'get', 'configmap', 'istio-sidecar-injector', '-n', 'istio-system', '-o', 'jsonpath={.data.values}'])
      expect(JSON.parse(values)).toMatchObject({global: {multiCluster: {clusterName: id}}})
    }
  }, 60_000)

  it('a bad flag is a one-line error, exit 2', async () => {
    const res = await start(['--nmae', 'x'], join(work, 'bad'))
    expect(res.code).toBe(2)
    expect(res.out.split('\n')[0]).toMatch(/^Error: Unknown option '--nmae'/)
  }, 30_000)
})
