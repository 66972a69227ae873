/**
 * pods/portforward of the test API server, proven with a client nobody here wrote: the Kubernetes
 * Python client (Debian python3-kubernetes, kubernetes.stream.portforward).
 */
import {execFile, spawn} from 'node:child_process'
import {existsSync} from 'node:fs'
import https from 'node:https'
import {fileURLToPath} from 'node:url'
import {promisify} from 'node:util'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {startTestCluster, type TestCluster} from './index.js'

const run = promisify(execFile)
const PYTHON = '/usr/bin/python3'
const SCRIPT = fileURLToPath(new URL('../fixtures/python/portforward_get.py', import.meta.url))
const ISTIOD = 'istiod-7d4b9c6f8-x2k9p'
const hasPythonClient =
  existsSync(PYTHON) &&
  (await run(PYTHON, ['-c', 'import kubernetes.stream'], {timeout: 20_000}).then(
    () => true,
    () => false,
  ))

async function pyGet(kubeconfig: string, namespace: string, pod: string, port: number, path: string): Promise<string> {
  const {stdout} = await run(PYTHON, [SCRIPT, kubeconfig, namespace, pod, String(port), path], {timeout: 30_000})
  return stdout
}

describe.skipIf(!hasPythonClient)('pods/portforward with the Python client', () => {
  let cluster: TestCluster
  beforeAll(async () => {
    cluster = await startTestCluster()
    cluster.mesh.addPod({name: 'web-1', namespace: 'shop', istiod: ISTIOD})
  })
  afterAll(() => cluster.stop())

  it('reaches istiod /debug/syncz from loopback (no authentication needed)', async () => {
    const out = await pyGet(cluster.kubeconfigPath, 'istio-system', ISTIOD, 15014, '/debug/syncz')
    expect(out).toMatch(/^HTTP\/1\.1 200 OK/)
    expect(out).toContain('"proxy":"web-1.shop"')
    const record = cluster.requests.find((r) => r.path.endsWith(`/pods/${ISTIOD}/portforward`))
    expect(record).toMatchObject({method: 'GET', query: '?ports=15014', status: 101})
  })

  it('while the pod proxy gets 401 from the same istiod', async () => {
    const status = await new Promise<number>((resolve, reject) => {
      https
        .get(`${cluster.url}/api/v1/namespaces/istio-system/pods/${ISTIOD}:15014/proxy/debug/syncz`, {ca: cluster.caPem, headers: {Authorization: `Bearer ${cluster.token}`}}, (r) => {
          r.resume()
          resolve(r.statusCode ?? 0)
        })
        .on('error', reject)
    })
    expect(status).toBe(401)
  })

  it('reports a closed port on the error channel', async () => {
    const out = await pyGet(cluster.kubeconfigPath, 'istio-system', ISTIOD, 8080, '/')
    expect(out).toMatch(/^ERROR error forwarding port 8080 to pod istiod-7d4b9c6f8-x2k9p, uid : .*connection refused/)
  })

  it('refuses a user without get on pods/portforward (403) and a missing pod (404)', async () => {
    const reader = cluster.addUser('reader', {rules: [{verbs: ['get', 'list'], apiGroups: [''], resources: ['pods']}]})
    expect(await pyGet(cluster.kubeconfigFor(reader), 'istio-system', ISTIOD, 15014, '/debug/syncz')).toMatch(/^APIERROR 0 .*403/)
    expect(await pyGet(cluster.kubeconfigPath, 'istio-system', 'nope', 15014, '/')).toMatch(/^APIERROR 0 .*404/)
    const forwarder = cluster.addUser('forwarder', {rules: [{verbs: ['get'], apiGroups: [''], resources: ['pods/portforward']}]})
    expect(await pyGet(cluster.kubeconfigFor(forwarder), 'istio-system', ISTIOD, 15014, '/debug/syncz')).toMatch(/^HTTP\/1\.1 200 OK/)
  })

  it('answers 404 for /debug/syncz when HTTP debug is off', async () => {
    cluster.mesh.setIstiod(ISTIOD, {debugHttp: false})
    try {
      expect(await pyGet(cluster.kubeconfigPath, 'istio-system', ISTIOD, 15014, '/debug/syncz')).toMatch(/^HTTP\/1\.1 404/)
    } finally {
      cluster.mesh.setIstiod(ISTIOD, {debugHttp: true})
    }
  })

  it('kubectl port-forward: SPDY/3.1 tunnelled in a WebSocket (and plain, its fallback) reaches istiod, twice on one connection', async () => {
    const kc = spawn('kubectl', ['--kubeconfig', cluster.kubeconfigPath, '-n', 'istio-system', 'port-forward', `pod/${ISTIOD}`, ':15014'], {env: {...process.env, KUBECACHEDIR: `${cluster.dir}/kc`}})
    let out = ''
    kc.stdout.on('data', (d: Buffer) => (out += d.toString()))
    kc.stderr.on('data', (d: Buffer) => (out += d.toString()))
    try {
      const port = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`kubectl did not start forwarding: ${out}`)), 15_000)
        const check = () => {
          const m = /Forwarding from 127\.0\.0\.1:(\d+) -> 15014/.exec(out)
          if (m) {
            clearTimeout(timer)
            resolve(m[1]!)
          } else setTimeout(check, 50)
        }
        check()
      })
      for (let i = 0; i < 2; i++) {
        const res = await fetch(`http://127.0.0.1:${port}/debug/syncz`)
        expect(res.status).toBe(200)
        expect(await res.text()).toContain('"proxy":"web-1.shop"')
      }
      const tries = cluster.requests.filter((r) => r.path.endsWith(`/pods/${ISTIOD}/portforward`) && r.userAgent?.startsWith('kubectl/'))
      expect(tries.map((r) => [r.method, r.status])).toEqual([['GET', 101]])
    } finally {
      kc.kill()
    }
    // The plain SPDY upgrade kubectl falls back to, as a server without the tunnel makes it do.
    const remove = cluster.faults.add({method: 'GET', path: `/api/v1/namespaces/istio-system/pods/${ISTIOD}/portforward`, status: 400, message: 'no tunnel', times: 1})
    const plain = spawn('kubectl', ['--kubeconfig', cluster.kubeconfigPath, '-n', 'istio-system', 'port-forward', `pod/${ISTIOD}`, ':15014'], {
      env: {...process.env, KUBECACHEDIR: `${cluster.dir}/kc`},
    })
    let plainOut = ''
    plain.stdout.on('data', (d: Buffer) => (plainOut += d.toString()))
    try {
      const port = await new Promise<string>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`kubectl did not start forwarding: ${plainOut}`)), 15_000)
        const check = () => {
          const m = /Forwarding from 127\.0\.0\.1:(\d+) -> 15014/.exec(plainOut)
          if (m) {
            clearTimeout(timer)
            resolve(m[1]!)
          } else setTimeout(check, 50)
        }
        check()
      })
      const res = await fetch(`http://127.0.0.1:${port}/debug/syncz`)
      expect(res.status).toBe(200)
      const tries = cluster.requests.filter((r) => r.path.endsWith(`/pods/${ISTIOD}/portforward`) && r.userAgent?.startsWith('kubectl/'))
      expect(tries.slice(1).map((r) => [r.method, r.status])).toEqual([
        ['GET', 400],
        ['POST', 101],
      ])
    } finally {
      plain.kill()
      remove()
    }
  })
})
