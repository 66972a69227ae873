/**
 * istiod over xDS (--xds-address) is verified by the same TLS policy as the API server (kube/tls.ts):
 * OpenSSL against the mesh root (ConfigMap istio-ca-root-cert), Go's host-name rules for
 * istiod.<ns>.svc. A refused istiod receives no byte of HTTP/2, so never the bearer token.
 */
import {appendFileSync} from 'node:fs'
import type {AddressInfo} from 'node:net'
import {createServer, type Server, type TLSSocket} from 'node:tls'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {KubeClient} from '../../src/lib/kube/client.js'
import {loadKubeConfig} from '../../src/lib/kube/config.js'
import {IstiodPool, IstiodReadError} from '../../src/lib/istiod/reader.js'
import {createMeshCa} from '../cluster/index.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'

describe('istiod over xDS: the mesh root and Go host-name rules, nothing sent before the verdict', () => {
  let cluster: TestCluster
  const servers: Server[] = []
  beforeAll(async () => {
    cluster = await startCluster()
  })
  afterAll(async () => {
    await Promise.all(servers.map((s) => new Promise((r) => s.close(r))))
    await cluster?.stop()
  })

  async function serve(cert: {certPem: string; keyPem: string}): Promise<{port: number; received: () => number}> {
    let received = 0
    const server = createServer({cert: cert.certPem, key: cert.keyPem, ALPNProtocols: ['h2']}, (socket: TLSSocket) => {
      socket.on('data', (d: Buffer) => {
        received += d.length
        socket.destroy()
      })
      socket.on('error', () => undefined)
    })
    server.on('tlsClientError', () => undefined)
    servers.push(server)
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    return {port: (server.address() as AddressInfo).port, received: () => received}
  }

  async function read(port: number): Promise<unknown> {
    const client = await KubeClient.create(loadKubeConfig({kubeconfig: cluster.kubeconfigPath}, {}), {timeoutMs: 10_000, maxRetries: 0})
    const pool = new IstiodPool(client, 'istio-system')
    try {
      return await pool
        .reader({kind: 'address', address: `127.0.0.1:${port}`, namespace: 'istio-system'})
        .syncz({timeoutMs: 10_000})
        .then(
          () => undefined,
          (e: unknown) => e,
        )
    } finally {
      pool.close()
      client.close()
    }
  }

  it.each([
    ['another CA', () => createMeshCa('elsewhere').issue({dnsNames: ['istiod.istio-system.svc']}), /is not signed by the mesh root CA in ConfigMap istio-system\/istio-ca-root-cert/],
    [
      'another name (istiod of another revision)',
      () => cluster.ca.issue({dnsNames: ['istiod-canary.istio-system.svc']}),
      /does not name istiod\.istio-system\.svc \(x509: certificate is valid for istiod-canary\.istio-system\.svc, not istiod\.istio-system\.svc\)/,
    ],
    ['the name only as the subject CN', () => cluster.ca.issue({commonName: 'istiod.istio-system.svc'}), /x509: certificate relies on legacy Common Name field, use SANs instead/],
  ])('refuses %s before sending anything', async (name, cert, message) => {
    const server = await serve(cert())
    const err = await read(server.port)
    const log = process.env.MESHVM_FAULT_LOG
    if (log) appendFileSync(log, JSON.stringify({command: 'istiod reader', fault: `xDS certificate: ${name}`, class: 'certificates'}) + '\n')
    expect(err).toBeInstanceOf(IstiodReadError)
    expect((err as IstiodReadError).code).toBe('TLSError')
    expect((err as IstiodReadError).exit).toBe(3)
    expect((err as IstiodReadError).message).toMatch(message)
    expect((err as IstiodReadError).message.split('\n')).toHaveLength(1)
    expect(server.received()).toBe(0)
  })

  it('talks HTTP/2 to an istiod whose certificate the mesh root signed for istiod.<ns>.svc', async () => {
    const server = await serve(cluster.ca.issue({dnsNames: ['istiod.istio-system.svc']}))
    await read(server.port)
    expect(server.received()).toBeGreaterThan(0)
  })
})
