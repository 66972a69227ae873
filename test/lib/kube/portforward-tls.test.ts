/**
 * src/lib/kube/portforward.ts opens its WebSocket through the KubeClient's own agent: the upgrade is
 * verified exactly as every API request is (the kubeconfig CA, kube/tls.ts), and no bearer token
 * reaches a server the kubeconfig does not trust.
 */
import {writeFileSync} from 'node:fs'
import {createServer, type Server} from 'node:http'
import {connect, type AddressInfo, type Socket} from 'node:net'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {KubeClient} from '../../../src/lib/kube/client.js'
import {loadKubeConfig} from '../../../src/lib/kube/config.js'
import {openPortForward} from '../../../src/lib/kube/portforward.js'
import {kubeconfigYaml, startTestCluster, type TestCluster} from '../../cluster/index.js'

const ISTIOD = 'istiod-7d4b9c6f8-x2k9p'

describe('port-forward TLS', () => {
  let cluster: TestCluster
  beforeAll(async () => {
    cluster = await startTestCluster()
  })
  afterAll(() => cluster.stop())

  async function client(caPem: string, proxyUrl?: string): Promise<KubeClient> {
    const path = join(cluster.dir, `kubeconfig-${caPem === cluster.caPem ? 'own' : 'other'}-ca${proxyUrl ? '-proxy' : ''}`)
    let yaml = kubeconfigYaml({server: cluster.url, caPem, token: cluster.token, name: 'pf'})
    if (proxyUrl) yaml = yaml.replace(/^( +)server: .*$/m, (line, indent: string) => `${line}\n${indent}proxy-url: ${proxyUrl}`)
    writeFileSync(path, yaml, {mode: 0o600})
    return KubeClient.create(loadKubeConfig({kubeconfig: path}), {timeoutMs: 5000, maxRetries: 0})
  }

  /** GET /debug/syncz over a forwarded stream: the status line. */
  async function syncz(c: KubeClient): Promise<string> {
    const stream = await openPortForward(c, {namespace: 'istio-system', pod: ISTIOD, port: 15014, timeoutMs: 5000})
    const answer = await new Promise<string>((resolve, reject) => {
      let text = ''
      stream.on('data', (d: Buffer) => {
        text += d.toString('utf8')
        if (text.includes('\r\n\r\n')) resolve(text)
      })
      stream.on('error', reject)
      stream.write('GET /debug/syncz HTTP/1.1\r\nHost: localhost\r\n\r\n')
    })
    stream.destroy()
    return answer.split('\r\n')[0]!
  }

  it('forwards through the kubeconfig CA, and refuses an API server signed by another CA before the upgrade is sent', async () => {
    const good = await client(cluster.caPem)
    expect(await syncz(good)).toBe('HTTP/1.1 200 OK')
    good.close()
    const forwards = () => cluster.requests.filter((r) => r.path.endsWith(`/pods/${ISTIOD}/portforward`)).length
    expect(forwards()).toBe(1)

    // Another CA: the mesh root (a CA certificate that did not sign the API server's).
    expect(cluster.ca.rootPem).not.toBe(cluster.caPem)
    const wrong = await client(cluster.ca.rootPem)
    const err = await openPortForward(wrong, {namespace: 'istio-system', pod: ISTIOD, port: 15014, timeoutMs: 5000}).then(
      () => undefined,
      (e: Error) => e,
    )
    wrong.close()
    expect(err?.message).toMatch(/certificate|verify|TLS/i)
    // The handshake was refused on our side: the API server never saw the upgrade (nor the token).
    expect(forwards()).toBe(1)
  })

  it("goes through the cluster's proxy-url, as kubectl port-forward does, TLS verified end to end", async () => {
    const connects: string[] = []
    const sockets = new Set<Socket>()
    const proxy: Server = createServer((_q, res) => res.writeHead(405).end())
    proxy.on('connect', (req, from: Socket) => {
      connects.push(req.url ?? '')
      const upstream = connect(Number((req.url ?? '').split(':').pop()), '127.0.0.1', () => {
        from.write('HTTP/1.1 200 Connection Established\r\n\r\n')
        upstream.pipe(from)
        from.pipe(upstream)
      })
      sockets.add(from).add(upstream)
      upstream.on('error', () => from.destroy())
      from.on('error', () => upstream.destroy())
    })
    await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
    try {
      const c = await client(cluster.caPem, `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`)
      expect(await syncz(c)).toBe('HTTP/1.1 200 OK')
      c.close()
      expect(connects).toEqual([new URL(cluster.url).host])
    } finally {
      for (const so of sockets) so.destroy()
      await new Promise((r) => proxy.close(r))
    }
  })
})
