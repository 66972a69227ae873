/**
 * The certificate matrix of issue #26: every class of server certificate kubectl (Go's crypto/x509)
 * refuses or accepts, served by a TLS server on 127.0.0.1, read with meshvm's KubeClient (kube/tls.ts:
 * OpenSSL verifies the chain, goHostCheck the name) directly and through an HTTP CONNECT proxy
 * (proxy-url). Each verdict is asserted; where kubectl is installed, kubectl reads the same kubeconfig
 * (`kubectl get --raw /version`) and its verdict must equal meshvm's. On every refusal the server
 * must have received no byte of a request, so no token.
 * Certificates: node-forge signs (any date, digest or extension), Node's crypto makes the keys.
 */
import {spawn, spawnSync} from 'node:child_process'
import {generateKeyPairSync} from 'node:crypto'
import {mkdtempSync, rmSync, writeFileSync, appendFileSync} from 'node:fs'
import {createServer as createHttpServer, type Server as HttpServer} from 'node:http'
import {connect as netConnect, createServer as createNetServer, type AddressInfo, type Server as NetServer, type Socket} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {createServer, type Server, type TLSSocket} from 'node:tls'
import forge from 'node-forge'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {KubeClient} from '../../src/lib/kube/client.js'
import {loadKubeConfig} from '../../src/lib/kube/config.js'
import {MeshvmError} from '../../src/lib/errors.js'

const HOUR = 3600_000
const DAY = 24 * HOUR
const TOKEN = 'matrix-s3cr3t-token'
const KUBECTL = spawnSync('kubectl', ['version', '--client'], {stdio: 'ignore'}).status === 0 ? 'kubectl' : undefined

interface Keys {
  priv: forge.pki.rsa.PrivateKey
  pub: forge.pki.rsa.PublicKey
  pem: string
}
function keys(): Keys {
  const {privateKey} = generateKeyPairSync('rsa', {modulusLength: 2048})
  const pem = privateKey.export({type: 'pkcs1', format: 'pem'}) as string
  const priv = forge.pki.privateKeyFromPem(pem) as forge.pki.rsa.PrivateKey
  return {priv, pub: forge.pki.setRsaPublicKey(priv.n, priv.e), pem}
}

interface Cert {
  pem: string
  keys: Keys
  subject: string
}

interface IssueOptions {
  ca?: boolean
  /** basicConstraints absent altogether. */
  noBasicConstraints?: boolean
  pathLen?: number
  dns?: string[]
  ips?: string[]
  cn?: string
  from?: number
  to?: number
  eku?: ('serverAuth' | 'clientAuth')[]
  digest?: 'sha256' | 'sha1' | 'md5'
  /** Name constraints: permitted DNS subtrees. */
  permitted?: string[]
  unknownCritical?: boolean
  /** The notAfter field replaced by this text (a date that does not parse). */
  badNotAfter?: string
}

let serial = 1
function issue(subject: string, own: Keys, issuer: Cert | undefined, o: IssueOptions = {}): Cert {
  const cert = forge.pki.createCertificate()
  cert.publicKey = own.pub
  cert.serialNumber = (0x100 + serial++).toString(16)
  const now = Date.now()
  cert.validity.notBefore = new Date(now + (o.from ?? -HOUR))
  cert.validity.notAfter = new Date(now + (o.to ?? 30 * DAY))
  const name = [{name: 'commonName', value: o.cn ?? subject}]
  cert.setSubject(name)
  cert.setIssuer(issuer ? [{name: 'commonName', value: issuer.subject}] : name)
  const ext: object[] = []
  if (!o.noBasicConstraints) ext.push({name: 'basicConstraints', cA: Boolean(o.ca), critical: true, ...(o.pathLen !== undefined ? {pathLenConstraint: o.pathLen} : {})})
  ext.push({name: 'keyUsage', critical: true, keyCertSign: Boolean(o.ca), cRLSign: Boolean(o.ca), digitalSignature: true, keyEncipherment: !o.ca})
  const alt = [...(o.dns ?? []).map((value) => ({type: 2, value})), ...(o.ips ?? []).map((ip) => ({type: 7, ip}))]
  if (alt.length > 0) ext.push({name: 'subjectAltName', altNames: alt})
  if (o.eku) ext.push({name: 'extKeyUsage', ...Object.fromEntries(o.eku.map((e) => [e, true]))})
  if (o.permitted) {
    const A = forge.asn1
    const subtrees = o.permitted.map((d) => A.create(A.Class.UNIVERSAL, A.Type.SEQUENCE, true, [A.create(A.Class.CONTEXT_SPECIFIC, 2, false, d)]))
    const value = A.toDer(A.create(A.Class.UNIVERSAL, A.Type.SEQUENCE, true, [A.create(A.Class.CONTEXT_SPECIFIC, 0, true, subtrees)])).getBytes()
    ext.push({id: '2.5.29.30', critical: true, value})
  }
  if (o.unknownCritical) ext.push({id: '1.3.6.1.4.1.99999.1', critical: true, value: '\x05\x00'})
  cert.setExtensions(ext)
  const md = () => (o.digest === 'md5' ? forge.md.md5.create() : o.digest === 'sha1' ? forge.md.sha1.create() : forge.md.sha256.create())
  const signer = (issuer?.keys ?? own).priv
  cert.sign(signer, md())
  if (o.badNotAfter) {
    // Re-sign a TBSCertificate whose notAfter text does not parse as a date.
    const tbs = (forge.pki as unknown as {getTBSCertificate: (c: forge.pki.Certificate) => forge.asn1.Asn1}).getTBSCertificate(cert)
    const validity = (tbs.value as forge.asn1.Asn1[])[4]!
    ;(validity.value as forge.asn1.Asn1[])[1]!.value = o.badNotAfter
    const digest = md()
    digest.update(forge.asn1.toDer(tbs).getBytes())
    ;(cert as unknown as {tbsCertificate: forge.asn1.Asn1}).tbsCertificate = tbs
    ;(cert as unknown as {signature: string}).signature = signer.sign(digest)
  }
  return {pem: forge.pki.certificateToPem(cert), keys: own, subject}
}

interface Case {
  name: string
  /** The leaf first, then what the server sends. */
  chain: Cert[]
  ca: Cert[]
  /** tls-server-name; without it the server's address (127.0.0.1) is checked. */
  serverName?: string
  accept: boolean
  /** Through the HTTP CONNECT and the SOCKS5 proxy (proxy-url) too. */
  proxy?: boolean
  /** Where OpenSSL is stricter than Go: meshvm refuses and kubectl accepts (docs/faults.md). */
  kubectlAccepts?: boolean
}

const work = mkdtempSync(join(tmpdir(), 'meshvm-tls-matrix-'))
const servers: (Server | HttpServer | NetServer)[] = []
const sockets = new Set<Socket>()
let proxyUrl = ''
let socksUrl = ''
/** Destinations the SOCKS5 proxy was asked for. */
const socksTargets: string[] = []
const cases: Case[] = []

function logFault(fault: string): void {
  const log = process.env.MESHVM_FAULT_LOG
  if (log) appendFileSync(log, JSON.stringify({command: 'kube client', fault, class: 'certificates'}) + '\n')
}

beforeAll(async () => {
  const rootKeys = keys()
  const intKeys = keys()
  const leafKeys = keys()
  const otherKeys = keys()
  const root = issue('matrix-root', rootKeys, undefined, {ca: true})
  const other = issue('other-root', otherKeys, undefined, {ca: true})
  const leaf = (o: IssueOptions, by: Cert = root) => issue('apiserver', leafKeys, by, {dns: ['api.example'], ...o})
  const int = issue('matrix-int', intKeys, root, {ca: true})
  const root0 = issue('matrix-root0', rootKeys, undefined, {ca: true, pathLen: 0})
  const int0 = issue('matrix-int0', intKeys, root0, {ca: true})
  const ncRoot = issue('matrix-nc', rootKeys, undefined, {ca: true, permitted: ['allowed.example']})
  const clientOnlyInt = issue('matrix-int-client', intKeys, root, {ca: true, eku: ['clientAuth']})
  const clientOnlyRoot = issue('matrix-root-client', rootKeys, undefined, {ca: true, eku: ['clientAuth']})
  const critInt = issue('matrix-int-crit', intKeys, root, {ca: true, unknownCritical: true})
  const notCaRoot = issue('matrix-notca', rootKeys, undefined, {ca: false})
  const noBcRoot = issue('matrix-nobc', rootKeys, undefined, {noBasicConstraints: true})
  const expiredRoot = issue('matrix-renewed', rootKeys, undefined, {ca: true, from: -60 * DAY, to: -DAY})
  const renewedRoot = issue('matrix-renewed', rootKeys, undefined, {ca: true})
  const staleInt = issue('matrix-int', intKeys, root, {ca: true, from: -60 * DAY, to: -DAY})
  const int2Keys = keys()
  const int2 = issue('matrix-int2', int2Keys, int, {ca: true})
  const sha1Root = issue('matrix-root', rootKeys, undefined, {ca: true, digest: 'sha1'})
  const n = 'api.example'
  cases.push(
    {name: 'valid: DNS SAN, checked as tls-server-name', chain: [leaf({})], ca: [root], serverName: n, accept: true, proxy: true},
    {name: 'valid: IP SAN 127.0.0.1', chain: [leaf({dns: [], ips: ['127.0.0.1']})], ca: [root], accept: true, proxy: true},
    {name: 'valid: wildcard as the whole left-most label', chain: [leaf({dns: ['*.example']})], ca: [root], serverName: n, accept: true},
    {name: 'valid: intermediates sent out of order', chain: [issue('apiserver', leafKeys, int2, {dns: [n]}), int, int2], ca: [root], serverName: n, accept: true},
    {name: 'valid: CA bundle with an expired and a renewed copy of the CA', chain: [leaf({}, renewedRoot)], ca: [expiredRoot, renewedRoot], serverName: n, accept: true},
    {name: 'valid: a stale intermediate of the same subject sent first', chain: [leaf({}, int), staleInt, int], ca: [root], serverName: n, accept: true},
    {name: 'valid: a SHA-1 self-signature on the trusted root itself', chain: [leaf({}, sha1Root)], ca: [sha1Root], serverName: n, accept: true},
    {name: 'unknown authority', chain: [leaf({}, other)], ca: [root], serverName: n, accept: false, proxy: true},
    {name: 'self-signed leaf not in the CA data', chain: [issue('apiserver', leafKeys, undefined, {dns: [n]})], ca: [root], serverName: n, accept: false},
    {name: 'another host name', chain: [leaf({dns: ['other.example']})], ca: [root], serverName: n, accept: false},
    {name: 'another IP address', chain: [leaf({dns: [], ips: ['10.0.0.1']})], ca: [root], accept: false},
    {name: 'an IP address only as a DNS SAN', chain: [leaf({dns: ['127.0.0.1']})], ca: [root], accept: false},
    {name: 'CN only, no SAN (no common-name fallback)', chain: [leaf({dns: [], cn: n})], ca: [root], serverName: n, accept: false, proxy: true},
    {name: 'partial-label wildcard a*.example', chain: [leaf({dns: ['a*.example']})], ca: [root], serverName: n, accept: false, proxy: true},
    {name: 'wildcard matching two labels', chain: [leaf({dns: ['*.example']})], ca: [root], serverName: 'a.api.example', accept: false},
    {name: 'expired leaf', chain: [leaf({from: -60 * DAY, to: -DAY})], ca: [root], serverName: n, accept: false},
    {name: 'leaf not valid yet', chain: [leaf({from: DAY})], ca: [root], serverName: n, accept: false},
    {name: 'expired CA', chain: [leaf({}, expiredRoot)], ca: [expiredRoot], serverName: n, accept: false},
    {name: 'unparsable notAfter date', chain: [leaf({badNotAfter: '261399000000Z'})], ca: [root], serverName: n, accept: false},
    {name: 'path length constraint of the root exceeded', chain: [issue('apiserver', leafKeys, int0, {dns: [n]}), int0], ca: [root0], serverName: n, accept: false},
    {name: 'name constraints of the root violated', chain: [leaf({}, ncRoot)], ca: [ncRoot], serverName: n, accept: false},
    {name: 'extended key usage of the intermediate (client only)', chain: [leaf({eku: ['serverAuth']}, clientOnlyInt), clientOnlyInt], ca: [root], serverName: n, accept: false},
    {name: 'extended key usage of the root (client only)', chain: [leaf({eku: ['serverAuth']}, clientOnlyRoot)], ca: [clientOnlyRoot], serverName: n, accept: false},
    {name: 'leaf for client authentication only', chain: [leaf({eku: ['clientAuth']})], ca: [root], serverName: n, accept: false},
    {name: 'unknown critical extension on the intermediate', chain: [leaf({}, critInt), critInt], ca: [root], serverName: n, accept: false},
    {name: 'SHA-1 signature on the leaf', chain: [leaf({digest: 'sha1'})], ca: [root], serverName: n, accept: false},
    {name: 'MD5 signature on the leaf', chain: [leaf({digest: 'md5'})], ca: [root], serverName: n, accept: false},
    {name: 'CA:FALSE certificate in certificate-authority-data as issuer', chain: [leaf({}, notCaRoot)], ca: [notCaRoot], serverName: n, accept: false},
    {name: 'certificate without basic constraints in certificate-authority-data as issuer', chain: [leaf({}, noBcRoot)], ca: [noBcRoot], serverName: n, accept: false},
    {
      name: 'intermediate without CA:TRUE',
      chain: [leaf({}, issue('matrix-int', intKeys, root, {ca: false})), issue('matrix-int', intKeys, root, {ca: false})],
      ca: [root],
      serverName: n,
      accept: false,
    },
  )
  // An HTTP CONNECT proxy on loopback (proxy-url), that only relays bytes.
  const proxy = createHttpServer((_req, res) => res.writeHead(405).end())
  proxy.on('connect', (req, client: Socket) => {
    const [host, port] = (req.url ?? '').split(':')
    const upstream = netConnect(Number(port), host!, () => {
      client.write('HTTP/1.1 200 Connection established\r\n\r\n')
      upstream.pipe(client)
      client.pipe(upstream)
    })
    for (const s of [client, upstream]) {
      sockets.add(s)
      s.on('error', () => undefined)
      s.on('close', () => {
        sockets.delete(s)
        client.destroy()
        upstream.destroy()
      })
    }
  })
  servers.push(proxy)
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  proxyUrl = `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`
  const socks = createNetServer((client) => socks5(client))
  servers.push(socks)
  await new Promise<void>((r) => socks.listen(0, '127.0.0.1', r))
  socksUrl = `socks5://127.0.0.1:${(socks.address() as AddressInfo).port}`
})

/** A SOCKS5 proxy (RFC 1928: no authentication, CONNECT to an IPv4 address or a name) that relays bytes. */
function socks5(client: Socket): void {
  sockets.add(client)
  client.on('error', () => undefined)
  client.on('close', () => sockets.delete(client))
  let buffer = Buffer.alloc(0)
  let stage: 'greeting' | 'request' = 'greeting'
  const onData = (d: Buffer): void => {
    buffer = Buffer.concat([buffer, d])
    if (stage === 'greeting') {
      if (buffer.length < 2 || buffer.length < 2 + buffer[1]!) return
      buffer = buffer.subarray(2 + buffer[1]!)
      client.write(Buffer.from([5, 0]))
      stage = 'request'
    }
    if (buffer.length < 5) return
    const type = buffer[3]
    const hostEnd = type === 1 ? 8 : type === 3 ? 5 + buffer[4]! : -1
    if (hostEnd < 0) return void client.destroy()
    if (buffer.length < hostEnd + 2) return
    const host = type === 1 ? [...buffer.subarray(4, 8)].join('.') : buffer.subarray(5, hostEnd).toString('latin1')
    const port = buffer.readUInt16BE(hostEnd)
    const rest = buffer.subarray(hostEnd + 2)
    client.off('data', onData)
    socksTargets.push(`${host}:${port}`)
    const upstream = netConnect(port, host, () => {
      client.write(Buffer.from([5, 0, 0, 1, 0, 0, 0, 0, 0, 0]))
      if (rest.length > 0) upstream.write(rest)
      upstream.pipe(client)
      client.pipe(upstream)
    })
    sockets.add(upstream)
    upstream.on('error', () => client.destroy())
    upstream.on('close', () => {
      sockets.delete(upstream)
      client.destroy()
    })
    client.on('close', () => upstream.destroy())
  }
  client.on('data', onData)
}

afterAll(async () => {
  for (const s of sockets) s.destroy()
  await Promise.all(servers.map((s) => new Promise((r) => s.close(r))))
  rmSync(work, {recursive: true, force: true})
})

/** A TLS server presenting `chain`; it records every byte of application data it receives. */
async function serve(chain: Cert[]): Promise<{port: number; received: () => string; reset: () => void}> {
  let data = ''
  const server = createServer({cert: chain.map((c) => c.pem).join(''), key: chain[0]!.keys.pem, ciphers: 'DEFAULT:@SECLEVEL=0'}, (socket: TLSSocket) => {
    sockets.add(socket)
    socket.on('close', () => sockets.delete(socket))
    socket.setEncoding('latin1')
    let request = ''
    socket.on('data', (d: string) => {
      data += d
      request += d
      if (request.includes('\r\n\r\n')) {
        request = ''
        const body = '{"major":"1","minor":"35","gitVersion":"v1.35.0"}'
        socket.write(`HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: ${body.length}\r\n\r\n${body}`)
      }
    })
    socket.on('error', () => undefined)
  })
  server.on('tlsClientError', () => undefined)
  servers.push(server)
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  return {port: (server.address() as AddressInfo).port, received: () => data, reset: () => (data = '')}
}

type Via = 'direct' | 'proxy-url http' | 'proxy-url socks5'

function kubeconfig(c: Case, port: number, via: Via): string {
  const file = join(work, `kubeconfig-${cases.indexOf(c)}-${via.replace(/\W/g, '')}`)
  const lines = [
    'apiVersion: v1',
    'kind: Config',
    'clusters:',
    '- name: m',
    '  cluster:',
    `    server: https://127.0.0.1:${port}`,
    `    certificate-authority-data: ${Buffer.from(c.ca.map((x) => x.pem).join('')).toString('base64')}`,
    ...(c.serverName ? [`    tls-server-name: ${c.serverName}`] : []),
    ...(via === 'proxy-url http' ? [`    proxy-url: ${proxyUrl}`] : via === 'proxy-url socks5' ? [`    proxy-url: ${socksUrl}`] : []),
    'users:',
    '- name: m',
    '  user:',
    `    token: ${TOKEN}`,
    'contexts:',
    '- name: m',
    '  context: {cluster: m, user: m}',
    'current-context: m',
    '',
  ]
  writeFileSync(file, lines.join('\n'), {mode: 0o600})
  return file
}

async function meshvm(file: string): Promise<{ok: boolean; message?: string; exit?: number}> {
  const client = await KubeClient.create(loadKubeConfig({kubeconfig: file}, {}), {timeoutMs: 20_000, maxRetries: 0})
  try {
    await client.get('/version')
    return {ok: true}
  } catch (err) {
    return {ok: false, message: (err as Error).message, exit: err instanceof MeshvmError ? err.exit : undefined}
  } finally {
    client.close()
  }
}

function kubectl(file: string): Promise<{ok: boolean; stderr: string}> {
  return new Promise((resolve) => {
    const env = {PATH: process.env.PATH ?? '/usr/bin:/bin', HOME: work, KUBECACHEDIR: join(work, 'cache')}
    const child = spawn(KUBECTL!, ['--kubeconfig', file, 'get', '--raw', '/version', '--request-timeout=20s'], {env, stdio: ['ignore', 'ignore', 'pipe']})
    let stderr = ''
    child.stderr.on('data', (d: Buffer) => (stderr += d.toString()))
    child.on('close', (code) => resolve({ok: code === 0, stderr}))
  })
}

describe('server certificates: meshvm against kubectl', () => {
  it('reaches the same verdict as kubectl for every class, and sends nothing to a server it refuses', {timeout: 300_000}, async () => {
    const rows: string[] = []
    for (const c of cases) {
      const server = await serve(c.chain)
      for (const via of (c.proxy ? ['direct', 'proxy-url http', 'proxy-url socks5'] : ['direct']) as Via[]) {
        const file = kubeconfig(c, server.port, via)
        const where = `${c.name}${via === 'direct' ? '' : ` (${via})`}`
        server.reset()
        socksTargets.length = 0
        const ours = await meshvm(file)
        // Through SOCKS5, the connection really went through the proxy.
        if (via === 'proxy-url socks5') expect.soft(socksTargets, where).toEqual([`127.0.0.1:${server.port}`])
        logFault(`certificate: ${c.name}`)
        expect.soft(ours.ok, `${where}: meshvm ${ours.ok ? 'accepted' : `refused: ${ours.message}`}`).toBe(c.accept)
        if (ours.ok) expect.soft(server.received(), where).toContain(`Authorization: Bearer ${TOKEN}`)
        else {
          expect.soft(server.received(), `${where}: bytes reached a refused server`).toBe('')
          expect.soft(ours.exit, where).toBe(3)
          expect.soft(ours.message, where).toMatch(/tls: failed to verify certificate: x509: /)
        }
        if (process.env.MESHVM_TLS_MATRIX_REPORT) rows.push(`${where}: meshvm: ${ours.message ?? 'ok'}`)
        if (KUBECTL) {
          server.reset()
          const theirs = await kubectl(file)
          rows.push(`${where}: meshvm ${ours.ok ? 'accepts' : 'refuses'}, kubectl ${theirs.ok ? 'accepts' : `refuses (${theirs.stderr.trim().split('\n').at(-1)})`}`)
          expect.soft(theirs.ok, `${where}: kubectl ${theirs.ok ? 'accepts' : 'refuses'}: ${theirs.stderr}`).toBe(c.kubectlAccepts ?? ours.ok)
          // In kubectl's words: its message holds meshvm's (up to any detail in parentheses).
          const words = /x509: [^(]*[^( ]/.exec(ours.message ?? '')?.[0]
          if (!ours.ok && !theirs.ok && c.name !== 'unparsable notAfter date') expect.soft(theirs.stderr, where).toContain(words)
        }
      }
    }
    if (process.env.MESHVM_TLS_MATRIX_REPORT) console.log(rows.join('\n'))
  })
})
