/**
 * istioctl's proxy-status without --xds-address, on the real control plane: it reaches istiod through
 * a port-forward of client-go (SPDY/3.1 tunnelled in a WebSocket, or plain SPDY when
 * KUBECTL_PORT_FORWARD_WEBSOCKETS=false), which the real kube-apiserver hands to the kubelet
 * stand-in as a SPDY upgrade (kubelet.ts). meshvm's proxy-status reaches the same istiod through its
 * own (WebSocket v4) port-forward: both must list the same proxies, row for row.
 */
import {execFile, spawn} from 'node:child_process'
import {mkdtempSync, rmSync} from 'node:fs'
import {connect} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, inject, it} from 'vitest'
import {runCli} from '../helpers/cli.js'
import {recordSecret} from '../helpers/secrets.js'
import {joinIstiod, type VmConnection} from './vm/client.js'
import {freePort, ISTIO_NAMESPACE, ISTIOD_POD, istioReleaseFromEnv, startRealControlPlane, type RealControlPlane} from './control-plane.js'
import {onboardWebWithBundle} from '../helpers/stories.js'

const NS = 'pf-apps'
const VMS = 3
let cp: RealControlPlane
let work: string
const vms: VmConnection[] = []

interface Run {
  code: number
  stdout: string
  stderr: string
}

const meshvm = (args: string[]): Promise<Run> => runCli(args, {env: {KUBECONFIG: cp.kubeconfigPath, HOME: work}, timeoutMs: 60_000})

const istioctl = (args: string[], env: Record<string, string> = {}): Promise<Run> =>
  new Promise((resolve) => {
    execFile(inject('realBinaries').istioctl[istioReleaseFromEnv()], args, {env: {KUBECONFIG: cp.kubeconfigPath, HOME: work, PATH: process.env.PATH, ...env}, timeout: 90_000}, (err, stdout, stderr) =>
      resolve({code: err ? (typeof err.code === 'number' ? err.code : 1) : 0, stdout, stderr}),
    )
  })

/** The table's lines, trailing blanks and ages ("SYNCED (3s)") aside: the two read istiod a moment apart. */
const rows = (out: string) =>
  out
    .split('\n')
    .map((l) => l.replace(/\s+$/, '').replace(/\(\d+(\.\d+)?(ms|s|m|h|d)\)/g, '(AGE)'))
    .filter((l) => l !== '')

beforeAll(async () => {
  cp = await startRealControlPlane({istio: istioReleaseFromEnv(), binaries: inject('realBinaries'), remote: false, onProgress: (l) => process.stderr.write(`${l}\n`)})
  recordSecret(cp.main.token)
  work = mkdtempSync(join(tmpdir(), 'meshvm-real-pf-'))
  const bundle = join(work, 'web-vm')
  const r = await meshvm(onboardWebWithBundle(NS, bundle))
  if (r.code !== 0) throw new Error(`onboard failed: ${r.stderr}`)
  for (let i = 0; i < VMS; i++) {
    const c = await joinIstiod({bundleDir: bundle, istiodAddress: cp.xdsAddress, instanceIp: `10.20.0.${i + 1}`})
    vms.push(c)
    await c.synced()
    await c.reportHealth(true)
  }
})

afterAll(async () => {
  for (const v of vms) await v.close().catch(() => {})
  await cp?.stop()
  if (work) rmSync(work, {recursive: true, force: true})
})

describe('istioctl proxy-status through a port-forward (the kubelet stand-in speaks SPDY)', () => {
  for (const [how, env] of [
    ["SPDY tunnelled in a WebSocket (client-go's default)", {}],
    ['plain SPDY (KUBECTL_PORT_FORWARD_WEBSOCKETS=false)', {KUBECTL_PORT_FORWARD_WEBSOCKETS: 'false'}],
  ] as const) {
    it(`${how}: the same rows as meshvm proxy-status (table, -n, -v 1)`, async () => {
      for (const args of [[], ['-n', NS], ['-v', '1']]) {
        // Two reads of a live istiod: a push between them may change a state; a few tries, then the last pair must agree.
        let theirs: Run | undefined
        let ours: Run | undefined
        for (let attempt = 0; attempt < 5; attempt++) {
          theirs = await istioctl(['proxy-status', ...args], env)
          ours = await meshvm(['proxy-status', ...args])
          if (theirs.code === 0 && ours.code === 0 && rows(theirs.stdout).join('\n') === rows(ours.stdout).join('\n')) break
        }
        expect(theirs!.code, `istioctl proxy-status ${args.join(' ')}: ${theirs!.stderr}`).toBe(0)
        expect(ours!.code, ours!.stderr).toBe(0)
        expect(rows(ours!.stdout), `proxy-status ${args.join(' ')}`).toEqual(rows(theirs!.stdout))
        const listed = rows(theirs!.stdout)
          .slice(1)
          .map((l) => l.split(/\s+/)[0])
        expect(listed).toEqual(vms.map((v) => v.proxyId).sort())
      }
    })
  }

  it("a pod port nothing listens on: client-go reports the error the stand-in writes on the SPDY error stream, as kubelet's", async () => {
    // istioctl dashboard keeps its port-forward open and logs each forwarded connection's error
    // (proxy-status may exit on the failed connection before client-go logs it).
    const local = await freePort()
    const child = spawn(
      inject('realBinaries').istioctl[istioReleaseFromEnv()],
      ['dashboard', 'controlz', `${ISTIOD_POD}.${ISTIO_NAMESPACE}`, '--ctrlz_port', '15999', '--browser=false', '--address', '127.0.0.1', '-p', String(local)],
      {
        env: {KUBECONFIG: cp.kubeconfigPath, HOME: work, PATH: process.env.PATH},
        stdio: ['ignore', 'pipe', 'pipe'],
      },
    )
    const exited = new Promise((resolve) => child.on('close', resolve))
    let output = ''
    const waiters: (() => void)[] = []
    const onData = (d: Buffer) => {
      output += d.toString()
      for (const w of waiters) w()
    }
    child.stdout.on('data', onData)
    child.stderr.on('data', onData)
    const seen = (re: RegExp) =>
      new Promise<void>((resolve, reject) => {
        const check = () => (re.test(output) ? resolve() : undefined)
        waiters.push(check)
        child.on('close', () => reject(new Error(`istioctl dashboard exited: ${output}`)))
        check()
      })
    try {
      await seen(new RegExp(`http://127\\.0\\.0\\.1:${local}`))
      const c = connect(local, '127.0.0.1')
      c.on('error', () => undefined)
      await seen(/error forwarding port 15999/)
      c.destroy()
      expect(output).toContain(`error forwarding port 15999 to pod ${ISTIOD_POD}: failed to connect to localhost:15999 inside the pod: connect: connection refused`)
    } finally {
      child.kill()
      await exited
    }
  })
})
