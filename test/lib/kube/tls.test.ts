/**
 * src/lib/kube/tls.ts: the agent that trusts exactly the kubeconfig's CA verifies the server itself
 * (chain, dates, key usage, host or IP) before any byte of a request, and so any token, is sent.
 * Real TLS servers on 127.0.0.1 with certificates made here (node-forge signs, Node's crypto makes keys).
 */
import {generateKeyPairSync} from 'node:crypto'
import {request} from 'node:https'
import {createServer, type Server, type TLSSocket} from 'node:tls'
import type {AddressInfo} from 'node:net'
import forge from 'node-forge'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {KubeconfigCaAgent, verifyServerCertificate} from '../../../src/lib/kube/tls.js'

const HOUR = 3600_000

interface Keys {
  privateKeyPem: string
  publicKeyPem: string
}
function keys(): Keys {
  const {privateKey, publicKey} = generateKeyPairSync('rsa', {modulusLength: 2048})
  return {privateKeyPem: privateKey.export({type: 'pkcs1', format: 'pem'}) as string, publicKeyPem: publicKey.export({type: 'spki', format: 'pem'}) as string}
}

interface Issued {
  cert: forge.pki.Certificate
  pem: string
  keys: Keys
}

let serial = 1
function issue(
  subject: string,
  own: Keys,
  issuer: Issued | undefined,
  options: {ca?: boolean; dns?: string[]; ips?: string[]; notBefore?: number; notAfter?: number; eku?: 'serverAuth' | 'clientAuth'} = {},
): Issued {
  const cert = forge.pki.createCertificate()
  cert.publicKey = forge.pki.publicKeyFromPem(own.publicKeyPem)
  cert.serialNumber = (serial++).toString(16).padStart(2, '0')
  cert.validity.notBefore = new Date(Date.now() + (options.notBefore ?? -HOUR))
  cert.validity.notAfter = new Date(Date.now() + (options.notAfter ?? 24 * HOUR))
  const name = [{name: 'commonName', value: subject}]
  cert.setSubject(name)
  cert.setIssuer(issuer ? issuer.cert.subject.attributes : name)
  const extensions: object[] = [{name: 'basicConstraints', cA: Boolean(options.ca)}, {name: 'keyUsage', keyCertSign: Boolean(options.ca), digitalSignature: true, keyEncipherment: !options.ca}]
  const altNames = [...(options.dns ?? []).map((value) => ({type: 2, value})), ...(options.ips ?? []).map((ip) => ({type: 7, ip}))]
  if (altNames.length > 0) extensions.push({name: 'subjectAltName', altNames})
  if (options.eku) extensions.push({name: 'extKeyUsage', [options.eku]: true})
  cert.setExtensions(extensions)
  cert.sign(forge.pki.privateKeyFromPem((issuer?.keys ?? own).privateKeyPem), forge.md.sha256.create())
  return {cert, pem: forge.pki.certificateToPem(cert), keys: own}
}

let caKeys: Keys
let leafKeys: Keys
let ca: Issued
let otherCa: Issued
const servers: Server[] = []

beforeAll(() => {
  caKeys = keys()
  leafKeys = keys()
  ca = issue('kube-ca', caKeys, undefined, {ca: true})
  otherCa = issue('other-ca', keys(), undefined, {ca: true})
})
afterAll(async () => {
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))))
})

/** A TLS server that presents `chain` and records whether any application data reached it. */
async function serve(chain: Issued[]): Promise<{port: number; received: () => string}> {
  let data = ''
  const server = createServer({cert: chain.map((c) => c.pem).join(''), key: chain[0]!.keys.privateKeyPem}, (socket: TLSSocket) => {
    socket.setEncoding('utf8')
    socket.on('data', (d: string) => {
      data += d
      socket.end('HTTP/1.1 200 OK\r\ncontent-length: 2\r\nconnection: close\r\n\r\nok')
    })
    socket.on('error', () => {})
  })
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {port: (server.address() as AddressInfo).port, received: () => data}
}

/** One GET with a bearer token through a KubeconfigCaAgent: the body, or the error's code. */
function get(port: number, caPem: string, options: {host?: string; servername?: string} = {}): Promise<{body?: string; code?: string}> {
  const agent = new KubeconfigCaAgent({ca: caPem, keepAlive: false, ...(options.servername ? {servername: options.servername} : {})})
  return new Promise((resolve) => {
    const req = request({host: options.host ?? '127.0.0.1', port, path: '/api', agent, headers: {Authorization: 'Bearer secret-token'}}, (res) => {
      let body = ''
      res.setEncoding('utf8').on('data', (d: string) => (body += d))
      res.on('end', () => resolve({body}))
    })
    req.on('error', (err: NodeJS.ErrnoException) => resolve({code: err.code}))
    req.end()
  }).finally(() => agent.destroy()) as Promise<{body?: string; code?: string}>
}

describe('KubeconfigCaAgent', () => {
  it('connects to a server whose certificate the kubeconfig CA signed for this IP address (IP SAN), and sends the request', async () => {
    const server = await serve([issue('apiserver', leafKeys, ca, {ips: ['127.0.0.1'], eku: 'serverAuth'})])
    expect(await get(server.port, ca.pem)).toEqual({body: 'ok'})
    expect(server.received()).toContain('Authorization: Bearer secret-token')
  })

  it('refuses a server signed by another CA before sending anything', async () => {
    const server = await serve([issue('apiserver', leafKeys, otherCa, {ips: ['127.0.0.1']})])
    expect(await get(server.port, ca.pem)).toEqual({code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'})
    expect(server.received()).toBe('')
  })

  it('refuses an expired certificate, and one not valid yet', async () => {
    const expired = await serve([issue('apiserver', leafKeys, ca, {ips: ['127.0.0.1'], notBefore: -48 * HOUR, notAfter: -HOUR})])
    expect(await get(expired.port, ca.pem)).toEqual({code: 'CERT_HAS_EXPIRED'})
    expect(expired.received()).toBe('')
    const early = await serve([issue('apiserver', leafKeys, ca, {ips: ['127.0.0.1'], notBefore: HOUR})])
    expect(await get(early.port, ca.pem)).toEqual({code: 'CERT_NOT_YET_VALID'})
    expect(early.received()).toBe('')
  })

  it('refuses a certificate for another host name or IP address', async () => {
    const byName = await serve([issue('apiserver', leafKeys, ca, {dns: ['api.example.com']})])
    expect(await get(byName.port, ca.pem)).toEqual({code: 'ERR_TLS_CERT_ALTNAME_INVALID'})
    expect(byName.received()).toBe('')
    const otherIp = await serve([issue('apiserver', leafKeys, ca, {ips: ['10.0.0.1']})])
    expect(await get(otherIp.port, ca.pem)).toEqual({code: 'ERR_TLS_CERT_ALTNAME_INVALID'})
    expect(otherIp.received()).toBe('')
  })

  it('checks the name given as tls-server-name (servername) instead of the address', async () => {
    const server = await serve([issue('apiserver', leafKeys, ca, {dns: ['kubernetes.default.svc']})])
    expect(await get(server.port, ca.pem, {servername: 'kubernetes.default.svc'})).toEqual({body: 'ok'})
    expect(await get(server.port, ca.pem, {servername: 'kubernetes.other.svc'})).toEqual({code: 'ERR_TLS_CERT_ALTNAME_INVALID'})
  })

  it('follows an intermediate CA the server sends, but not an intermediate that is no CA', async () => {
    const intermediate = issue('intermediate', keys(), ca, {ca: true})
    const viaIntermediate = await serve([issue('apiserver', leafKeys, intermediate, {ips: ['127.0.0.1']}), intermediate])
    expect(await get(viaIntermediate.port, ca.pem)).toEqual({body: 'ok'})
    const notCa = issue('not-a-ca', keys(), ca, {ca: false})
    const viaNotCa = await serve([issue('apiserver', leafKeys, notCa, {ips: ['127.0.0.1']}), notCa])
    expect(await get(viaNotCa.port, ca.pem)).toEqual({code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'})
    expect(viaNotCa.received()).toBe('')
  })

  it('refuses a certificate for client authentication only (extended key usage)', async () => {
    const server = await serve([issue('apiserver', leafKeys, ca, {ips: ['127.0.0.1'], eku: 'clientAuth'})])
    expect(await get(server.port, ca.pem)).toEqual({code: 'INVALID_PURPOSE'})
    expect(server.received()).toBe('')
  })

  it('trusts a self-signed server certificate only when the kubeconfig names it, and refuses an expired CA', async () => {
    const selfSigned = issue('apiserver', leafKeys, undefined, {ips: ['127.0.0.1']})
    const server = await serve([selfSigned])
    expect(await get(server.port, selfSigned.pem)).toEqual({body: 'ok'})
    expect(await get(server.port, ca.pem)).toEqual({code: 'DEPTH_ZERO_SELF_SIGNED_CERT'})
    const oldKeys = keys()
    const expiredCa = issue('expired-ca', oldKeys, undefined, {ca: true, notBefore: -48 * HOUR, notAfter: -HOUR})
    const underExpired = await serve([issue('apiserver', leafKeys, expiredCa, {ips: ['127.0.0.1']})])
    expect(await get(underExpired.port, expiredCa.pem)).toEqual({code: 'CERT_HAS_EXPIRED'})
    expect(underExpired.received()).toBe('')
  })

  it('accepts a CA bundle of several certificates', async () => {
    const server = await serve([issue('apiserver', leafKeys, ca, {ips: ['127.0.0.1']})])
    expect(await get(server.port, otherCa.pem + ca.pem)).toEqual({body: 'ok'})
  })

  describe('a verdict reused within one agent', () => {
    /** One GET through `agent` (kept by the caller): the body, or the error's code. */
    function getWith(agent: KubeconfigCaAgent, port: number, options: {servername?: string} = {}): Promise<{body?: string; code?: string}> {
      return new Promise((resolve) => {
        const req = request({host: '127.0.0.1', port, path: '/api', agent, ...(options.servername ? {servername: options.servername} : {}), headers: {Authorization: 'Bearer secret-token'}}, (res) => {
          let body = ''
          res.setEncoding('utf8').on('data', (d: string) => (body += d))
          res.on('end', () => resolve({body}))
        })
        req.on('error', (err: NodeJS.ErrnoException) => resolve({code: err.code}))
        req.end()
      })
    }

    it('verifies the chain once for the same leaf and host, and again for another leaf or host name', async () => {
      const leaf = issue('apiserver', leafKeys, ca, {ips: ['127.0.0.1'], dns: ['kubernetes.default.svc']})
      const a = await serve([leaf])
      const b = await serve([leaf])
      const agent = new KubeconfigCaAgent({ca: ca.pem, keepAlive: false})
      try {
        expect(await getWith(agent, a.port)).toEqual({body: 'ok'})
        expect(await getWith(agent, a.port)).toEqual({body: 'ok'})
        expect(await getWith(agent, b.port)).toEqual({body: 'ok'})
        expect(agent.fullVerifications).toBe(1)
        // Another name for the same certificate is checked in full (and holds).
        expect(await getWith(agent, a.port, {servername: 'kubernetes.default.svc'})).toEqual({body: 'ok'})
        expect(await getWith(agent, a.port, {servername: 'kubernetes.other.svc'})).toEqual({code: 'ERR_TLS_CERT_ALTNAME_INVALID'})
        expect(agent.fullVerifications).toBe(3)
        // A different leaf for the same address (another CA's, then the same subject re-issued by another CA) is checked in full and refused.
        const forged = await serve([issue('apiserver', leafKeys, otherCa, {ips: ['127.0.0.1'], dns: ['kubernetes.default.svc']})])
        expect(await getWith(agent, forged.port)).toEqual({code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'})
        expect(forged.received()).toBe('')
        // A refused leaf is never remembered: it is refused again.
        expect(await getWith(agent, forged.port)).toEqual({code: 'UNABLE_TO_VERIFY_LEAF_SIGNATURE'})
        expect(agent.fullVerifications).toBe(5)
      } finally {
        agent.destroy()
      }
    })

    it('verifies again once a certificate of the chain or a CA is past its dates', async () => {
      let clock = Date.now()
      const intermediate = issue('intermediate', keys(), ca, {ca: true, notAfter: 2 * HOUR})
      const server = await serve([issue('apiserver', leafKeys, intermediate, {ips: ['127.0.0.1'], notAfter: 10 * HOUR}), intermediate])
      const agent = new KubeconfigCaAgent({ca: ca.pem, keepAlive: false, now: () => clock})
      try {
        expect(await getWith(agent, server.port)).toEqual({body: 'ok'})
        clock += HOUR
        expect(await getWith(agent, server.port)).toEqual({body: 'ok'})
        expect(agent.fullVerifications).toBe(1)
        // The intermediate has expired: the reused verdict no longer holds, and the full check refuses.
        clock += 2 * HOUR
        expect(await getWith(agent, server.port)).toEqual({code: 'CERT_HAS_EXPIRED'})
        expect(agent.fullVerifications).toBe(2)
      } finally {
        agent.destroy()
      }
    })
  })

  it('rejects a CA that holds no certificate when the agent is made', () => {
    expect(() => new KubeconfigCaAgent({ca: 'not a certificate'})).toThrow(/no PEM certificate/)
  })
})

describe('verifyServerCertificate', () => {
  it('refuses a peer that sent no certificate', () => {
    expect(verifyServerCertificate({} as never, [], 'localhost')?.code).toBe('UNABLE_TO_VERIFY_LEAF_SIGNATURE')
  })
})
