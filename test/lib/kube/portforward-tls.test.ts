/**
 * src/lib/kube/portforward.ts opens its WebSocket through the KubeClient's own agent: the upgrade is
 * verified exactly as every API request is (the kubeconfig CA, kube/tls.ts), and no bearer token
 * reaches a server the kubeconfig does not trust.
 */
import {writeFileSync} from 'node:fs'
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

  async function client(caPem: string): Promise<KubeClient> {
    const path = join(cluster.dir, `kubeconfig-${caPem === cluster.caPem ? 'own' : 'other'}-ca`)
    writeFileSync(path, kubeconfigYaml({server: cluster.url, caPem, token: cluster.token, name: 'pf'}), {mode: 0o600})
    return KubeClient.create(loadKubeConfig({kubeconfig: path}), {timeoutMs: 5000, maxRetries: 0})
  }

  it('forwards through the kubeconfig CA, and refuses an API server signed by another CA before the upgrade is sent', async () => {
    const good = await client(cluster.caPem)
    const stream = await openPortForward(good, {namespace: 'istio-system', pod: ISTIOD, port: 15014, timeoutMs: 5000})
    const answer = await new Promise<string>((resolve, reject) => {
      let text = ''
      stream.on('data', (d: Buffer) => {
        text += d.toString('utf8')
        if (text.includes('\r\n\r\n')) resolve(text)
      })
      stream.on('error', reject)
      stream.write('GET /debug/syncz HTTP/1.1\r\nHost: localhost\r\n\r\n')
    })
    expect(answer).toMatch(/^HTTP\/1\.1 200 OK/)
    stream.destroy()
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
})
