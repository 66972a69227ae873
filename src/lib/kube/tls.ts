/**
 * The one TLS policy of meshvm, used on every TLS path: the API server (directly, through a
 * `proxy-url` or HTTPS_PROXY tunnel, and the port-forward WebSocket, which uses the API client's
 * agent) and istiod over xDS (the mesh root as CA). What it refuses, in kubectl's words:
 * docs/faults.md ("Server certificates").
 *
 * - The chain is verified by OpenSSL through Node (`ca` = the kubeconfig's or the mesh's CA,
 *   `rejectUnauthorized: true`); nothing here builds or checks a chain.
 * - The host name is checked by goHostCheck, which follows Go's crypto/x509 VerifyHostname (what
 *   kubectl uses): subject alternative names only (no common-name fallback), a wildcard only as the
 *   whole left-most label, IP addresses only against IP SANs.
 * - A connection is handed to its user (HTTP, WebSocket, HTTP/2) only after 'secureConnect', i.e.
 *   after both verdicts: not one byte of a request, and so no token, reaches a server that failed.
 * - `insecure-skip-tls-verify` (kubectl: no chain and no name check) is the kubeconfig's own choice;
 *   `tls-server-name` is the name sent (SNI) and checked, as in client-go.
 */
import {X509Certificate} from 'node:crypto'
import {Agent, type AgentOptions} from 'node:https'
import {isIP} from 'node:net'
import type {Duplex} from 'node:stream'
import {connect, type ConnectionOptions, type PeerCertificate, type TLSSocket} from 'node:tls'
import {terminalSafe} from '../output/terminal.js'

/** A TLS refusal: Node's/OpenSSL's code, and kubectl's words in `x509`. */
export interface TlsRefusal extends NodeJS.ErrnoException {
  x509: string
}

function refusal(code: string, x509: string): TlsRefusal {
  // The names come from the server's certificate: never a control character on the terminal.
  const safe = terminalSafe(x509)
  return Object.assign(new Error(safe), {code, x509: safe})
}

/** The subject alternative names of a certificate, as Node prints them ("DNS:a, IP Address:1.2.3.4"). */
export function subjectAltNames(text: string | undefined): {dns: string[]; ips: string[]; any: boolean} {
  const dns: string[] = []
  const ips: string[] = []
  if (!text) return {dns, ips, any: false}
  // Node quotes a value holding a separator or a non-printable character as a JSON string.
  const entry = /\s*([A-Za-z ]+):("(?:[^"\\]|\\.)*"|[^,]*)(?:,|$)/y
  let m: RegExpExecArray | null
  while (entry.lastIndex < text.length && (m = entry.exec(text))) {
    let value = m[2]!
    if (value.startsWith('"')) {
      try {
        value = JSON.parse(value) as string
      } catch {
        continue
      }
    }
    if (m[1] === 'DNS') dns.push(value)
    else if (m[1] === 'IP Address') ips.push(value)
  }
  return {dns, ips, any: true}
}

const lower = (s: string): string => s.replace(/[A-Z]/g, (c) => c.toLowerCase())

/** Go's validHostname: letters, digits, '-' (not first), '_'; a pattern may start with the label '*'. */
function validHostname(host: string, isPattern: boolean): boolean {
  if (!isPattern && host.endsWith('.')) host = host.slice(0, -1)
  if (host.length === 0 || host === '*') return false
  return host.split('.').every((part, i) => {
    if (part === '') return false
    if (isPattern && i === 0 && part === '*') return true
    return /^[A-Za-z0-9_][A-Za-z0-9_-]*$/.test(part)
  })
}

function matchHostnames(pattern: string, host: string): boolean {
  pattern = lower(pattern)
  host = lower(host.endsWith('.') ? host.slice(0, -1) : host)
  if (pattern.length === 0 || host.length === 0) return false
  const p = pattern.split('.')
  const h = host.split('.')
  if (p.length !== h.length) return false
  return p.every((part, i) => (i === 0 && part === '*') || part === h[i])
}

function matchExactly(a: string, b: string): boolean {
  if (a === '' || a === '.' || b === '' || b === '.') return false
  return lower(a) === lower(b)
}

/** An IP address in Go's canonical comparison form (IPv4-mapped IPv6 equals its IPv4). */
function canonicalIp(ip: string): string | undefined {
  const kind = isIP(ip)
  if (kind === 4) return ip
  if (kind !== 6) return undefined
  try {
    // URL parsing normalises an IPv6 literal (compression, case); ::ffff:a.b.c.d becomes its IPv4.
    const host = new URL(`http://[${ip}]/`).hostname.slice(1, -1)
    const mapped = /^::ffff:([0-9a-f]{1,4}):([0-9a-f]{1,4})$/.exec(host)
    if (mapped) {
      const hi = parseInt(mapped[1]!, 16)
      const lo = parseInt(mapped[2]!, 16)
      return `${hi >> 8}.${hi & 255}.${lo >> 8}.${lo & 255}`
    }
    return host
  } catch {
    return undefined
  }
}

/**
 * Go's crypto/x509 Certificate.VerifyHostname, with its error texts (HostnameError). Undefined when
 * `cert` is valid for `host`. `cert` is what TLSSocket#getPeerCertificate returns (or an X509Certificate).
 */
export function goHostCheck(host: string, cert: Pick<PeerCertificate, 'subjectaltname' | 'subject'> | X509Certificate): TlsRefusal | undefined {
  const sanText = cert instanceof X509Certificate ? cert.subjectAltName : cert.subjectaltname
  const cn = cert instanceof X509Certificate ? /(?:^|\n)CN=([^\n]*)/.exec(cert.subject)?.[1] : (cert.subject as {CN?: string | string[]} | undefined)?.CN
  const commonName = Array.isArray(cn) ? (cn.at(-1) ?? '') : (cn ?? '')
  const san = subjectAltNames(sanText)
  const candidateIp = host.length >= 3 && host.startsWith('[') && host.endsWith(']') ? host.slice(1, -1) : host
  const ip = canonicalIp(candidateIp)
  const fail = (h: string): TlsRefusal => {
    if (!san.any && matchHostnames(commonName, h)) return refusal('ERR_TLS_CERT_ALTNAME_INVALID', 'x509: certificate relies on legacy Common Name field, use SANs instead')
    if (canonicalIp(h) !== undefined) {
      if (san.ips.length === 0) return refusal('ERR_TLS_CERT_ALTNAME_INVALID', `x509: cannot validate certificate for ${h} because it doesn't contain any IP SANs`)
      return refusal('ERR_TLS_CERT_ALTNAME_INVALID', `x509: certificate is valid for ${san.ips.join(', ')}, not ${h}`)
    }
    if (san.dns.length === 0) return refusal('ERR_TLS_CERT_ALTNAME_INVALID', `x509: certificate is not valid for any names, but wanted to match ${h}`)
    return refusal('ERR_TLS_CERT_ALTNAME_INVALID', `x509: certificate is valid for ${san.dns.join(', ')}, not ${h}`)
  }
  if (ip !== undefined) {
    if (san.ips.some((s) => canonicalIp(s) === ip)) return undefined
    return fail(candidateIp)
  }
  const name = lower(host)
  const validName = validHostname(name, false)
  for (const pattern of san.dns) {
    if (validName && validHostname(pattern, true) ? matchHostnames(pattern, name) : matchExactly(pattern, name)) return undefined
  }
  return fail(host)
}

/** What one verified TLS connection needs. */
export interface TlsPolicy {
  /** PEM: the only CAs trusted (the kubeconfig's, or the mesh root). Without it: Node's root store (client-go: the system's). */
  ca?: string | Buffer
  cert?: string | Buffer
  key?: string | Buffer
  /** kubectl's tls-server-name: sent as SNI and checked instead of the host. */
  servername?: string
  /** insecure-skip-tls-verify: no chain and no name check (the kubeconfig asked for it). */
  insecure?: boolean
  ALPNProtocols?: string[]
}

/** Node's TLS options for `policy`: OpenSSL verifies the chain, goHostCheck the name. */
function tlsOptions(policy: TlsPolicy, host: string): ConnectionOptions {
  // The name to check: tls-server-name, else the host. SNI is never an IP address (RFC 6066).
  const name = policy.servername || host.replace(/^\[|\]$/g, '')
  return {
    ...(policy.ca !== undefined ? {ca: policy.ca} : {}),
    ...(policy.cert !== undefined ? {cert: policy.cert} : {}),
    ...(policy.key !== undefined ? {key: policy.key} : {}),
    ...(isIP(name) ? {} : {servername: name}),
    ...(policy.ALPNProtocols ? {ALPNProtocols: policy.ALPNProtocols} : {}),
    rejectUnauthorized: !policy.insecure,
    checkServerIdentity: policy.insecure ? () => undefined : (_host: string, cert: PeerCertificate) => goHostCheck(name, cert),
  }
}

/**
 * A TLS connection to host:port (or over `socket`, a proxy tunnel or a port-forward) under `policy`;
 * `callback` gets the socket only once the chain and the name are verified.
 */
export function secureConnect(policy: TlsPolicy, target: {host: string; port: number; socket?: Duplex}, callback: (err: Error | null, socket?: TLSSocket) => void): TLSSocket {
  const socket = connect({
    ...tlsOptions(policy, target.host),
    host: target.host.replace(/^\[|\]$/g, ''),
    port: target.port,
    ...(target.socket ? {socket: target.socket} : {}),
  })
  let done = false
  const onError = (err: Error): void => {
    if (done) return
    done = true
    socket.destroy()
    callback(err)
  }
  socket.once('error', onError)
  socket.once('secureConnect', () => {
    if (done) return
    done = true
    socket.off('error', onError)
    callback(null, socket)
  })
  return socket
}

/** Opens the raw connection a TLS session runs over (a proxy tunnel), or undefined to dial directly. */
export type Tunnel = (host: string, port: number) => Promise<Duplex>

/**
 * The https.Agent of an API server: every connection is verified under `policy` (secureConnect),
 * directly or through `tunnel`, before HTTP (or the port-forward WebSocket) writes to it.
 */
export class VerifiedAgent extends Agent {
  constructor(
    readonly policy: TlsPolicy,
    options: AgentOptions,
    private readonly tunnel?: Tunnel,
  ) {
    super({...options, rejectUnauthorized: !policy.insecure})
  }

  override createConnection(options: ConnectionOptions & {host?: string; port?: number}, callback: (err: Error | null, socket?: Duplex) => void): undefined {
    const host = options.host ?? 'localhost'
    const port = Number(options.port ?? 443)
    const tls = (raw?: Duplex): void => {
      secureConnect(this.policy, {host, port, socket: raw}, (err, socket) => callback(err, socket))
    }
    if (this.tunnel) this.tunnel(host, port).then(tls, (err: Error) => callback(err))
    else tls()
    return undefined
  }
}
