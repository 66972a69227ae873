/**
 * The HTTPS agent for an API server whose kubeconfig names its certificate authority.
 *
 * Node 20 builds its whole root store (~140 Mozilla certificates, parsed one by one) the first time
 * a TLS context is given a `ca`, even though that context then trusts only the given CA: ~25 ms of
 * every cluster command's start-up (Node's SecureContext::SetCACert compares the context's store with
 * GetOrCreateRootCertStore(), which creates it). kubectl does not pay it. This agent gives TLS no CA
 * at all (an empty list, which builds nothing), lets the handshake finish without OpenSSL's verdict,
 * and hands the socket to HTTP only after it has verified the server itself, as kubectl (Go's
 * crypto/x509) and OpenSSL would: the chain up to a kubeconfig CA (signatures, CA flags), every
 * certificate's dates, the server-auth key usage, and the host name or IP address
 * (tls.checkServerIdentity, Node's own check). No byte of the request, and so no token, is written
 * before that. Failures carry OpenSSL's and Node's error codes, so they read as before.
 *
 * When NODE_EXTRA_CA_CERTS is set, Node has built the root store at start-up anyway, and this agent
 * changes nothing but who verifies.
 */
import {X509Certificate} from 'node:crypto'
import {Agent, type AgentOptions} from 'node:https'
import {checkServerIdentity, connect, type ConnectionOptions, type DetailedPeerCertificate, type TLSSocket} from 'node:tls'
import type {Duplex} from 'node:stream'

/** A TLS error with OpenSSL's or Node's code (UNABLE_TO_VERIFY_LEAF_SIGNATURE, CERT_HAS_EXPIRED…). */
function tlsError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), {code})
}

/** The certificates of a PEM bundle (a kubeconfig's certificate-authority-data may hold several). */
export function parseCaBundle(ca: string | Buffer | (string | Buffer)[]): X509Certificate[] {
  const text = (Array.isArray(ca) ? ca : [ca]).map((c) => c.toString()).join('\n')
  const blocks = text.match(/-----BEGIN CERTIFICATE-----[\s\S]+?-----END CERTIFICATE-----/g) ?? []
  return blocks.map((pem) => new X509Certificate(pem))
}

const SERVER_AUTH = '1.3.6.1.5.5.7.3.1'
const ANY_EKU = '2.5.29.37.0'
const MAX_DEPTH = 10

function checkDates(cert: X509Certificate, now: number): NodeJS.ErrnoException | undefined {
  if (now < Date.parse(cert.validFrom)) return tlsError('CERT_NOT_YET_VALID', 'certificate is not yet valid')
  if (now > Date.parse(cert.validTo)) return tlsError('CERT_HAS_EXPIRED', 'certificate has expired')
  return undefined
}

function selfSigned(cert: X509Certificate): boolean {
  try {
    return cert.subject === cert.issuer && cert.verify(cert.publicKey)
  } catch {
    return false
  }
}

function issuedBy(cert: X509Certificate, issuer: X509Certificate): boolean {
  try {
    return cert.checkIssued(issuer) && cert.verify(issuer.publicKey)
  } catch {
    return false
  }
}

/**
 * Verifies a server's certificate chain against `anchors` (the kubeconfig's CAs) and `host`.
 * `peer` is what TLSSocket#getPeerCertificate(true) returns: the leaf, then what the server sent.
 */
export function verifyServerCertificate(peer: DetailedPeerCertificate, anchors: X509Certificate[], host: string, now = Date.now()): NodeJS.ErrnoException | undefined {
  if (!peer?.raw) return tlsError('UNABLE_TO_VERIFY_LEAF_SIGNATURE', 'the server sent no certificate')
  const sent: X509Certificate[] = []
  const seen = new Set<DetailedPeerCertificate>()
  for (let c: DetailedPeerCertificate | undefined = peer; c?.raw && !seen.has(c) && sent.length <= MAX_DEPTH; c = c.issuerCertificate) {
    seen.add(c)
    sent.push(new X509Certificate(c.raw))
  }
  const leaf = sent[0]!
  let cert = leaf
  for (let depth = 0; ; depth++) {
    const dates = checkDates(cert, now)
    if (dates) return dates
    // A kubeconfig may also trust the server's own (self-signed) certificate directly.
    if (anchors.some((a) => a.raw.equals(cert.raw))) break
    const anchor = anchors.find((a) => issuedBy(cert, a))
    if (anchor) {
      const anchorDates = checkDates(anchor, now)
      if (anchorDates) return anchorDates
      break
    }
    const next = depth < MAX_DEPTH ? sent.find((s) => s !== cert && s.ca && issuedBy(cert, s)) : undefined
    if (!next) {
      if (depth === 0 && selfSigned(cert)) return tlsError('DEPTH_ZERO_SELF_SIGNED_CERT', 'self-signed certificate')
      if (depth > 0 && selfSigned(cert)) return tlsError('SELF_SIGNED_CERT_IN_CHAIN', 'self-signed certificate in certificate chain')
      return tlsError(depth === 0 ? 'UNABLE_TO_VERIFY_LEAF_SIGNATURE' : 'UNABLE_TO_GET_ISSUER_CERT_LOCALLY', 'unable to verify the first certificate')
    }
    cert = next
  }
  // Extended key usage, as Go's crypto/x509 checks for a TLS server: absent, or server auth (or any).
  const eku = leaf.keyUsage
  if (eku && eku.length > 0 && !eku.includes(SERVER_AUTH) && !eku.includes(ANY_EKU)) return tlsError('INVALID_PURPOSE', 'unsupported certificate purpose')
  return checkServerIdentity(host, peer) as NodeJS.ErrnoException | undefined
}

/** When a verdict on a chain holds: every certificate of `peer`'s chain and every anchor in its dates. */
function validityWindow(peer: DetailedPeerCertificate, anchors: X509Certificate[]): {from: number; to: number} {
  let from = -Infinity
  let to = Infinity
  const narrow = (validFrom: string, validTo: string): void => {
    from = Math.max(from, Date.parse(validFrom))
    to = Math.min(to, Date.parse(validTo))
  }
  const seen = new Set<DetailedPeerCertificate>()
  for (let c: DetailedPeerCertificate | undefined = peer; c?.raw && !seen.has(c) && seen.size <= MAX_DEPTH; c = c.issuerCertificate) {
    seen.add(c)
    narrow(c.valid_from, c.valid_to)
  }
  for (const a of anchors) narrow(a.validFrom, a.validTo)
  // An unparsable date never lets a verdict be reused.
  return Number.isNaN(from) || Number.isNaN(to) ? {from: Infinity, to: -Infinity} : {from, to}
}

/**
 * An https.Agent that trusts exactly `ca` (see above). Sessions are not resumed: every connection
 * shows its certificate and is checked.
 *
 * A verdict is reused within the agent: a connection whose server shows the very leaf certificate
 * (same DER bytes) that an earlier connection to the same host name verified, at a time when every
 * certificate of that chain and every kubeconfig CA is still within its dates, is accepted without
 * building the chain again. The TLS handshake itself proved that this server holds the leaf's private
 * key; the chain, key usage and name checks depend only on those bytes, that host and these CAs, and
 * the dates are re-checked against the narrowest window. proxy-status opens 4 connections to one API
 * server (the API and 3 port-forwards): 3 are spared getPeerCertificate(true) and the chain check.
 */
export class KubeconfigCaAgent extends Agent {
  private readonly anchors: X509Certificate[]
  /** Verified leaves: host, then SHA-256 fingerprint → the DER bytes and the window of the verdict. */
  private readonly verified = new Map<string, {raw: Buffer; from: number; to: number}>()
  private readonly now: () => number
  /** Chains verified in full (for tests: reused verdicts do not count). */
  fullVerifications = 0

  constructor(options: AgentOptions & {ca: string | Buffer | (string | Buffer)[]; now?: () => number}) {
    const {now, ...agentOptions} = options
    super({...agentOptions, ca: undefined, rejectUnauthorized: true})
    this.now = now ?? Date.now
    this.anchors = parseCaBundle(options.ca)
    if (this.anchors.length === 0) throw tlsError('ERR_TLS_INVALID_CA', 'the kubeconfig certificate authority holds no PEM certificate')
  }

  /** Undefined when `socket`'s server is trusted for `host`; the TLS error otherwise. */
  private verify(socket: TLSSocket, host: string): NodeJS.ErrnoException | undefined {
    const now = this.now()
    // The leaf alone (~0.03 ms; the chain: ~0.2 ms warm, more on first use). Not getPeerX509Certificate:
    // on Node 20 a later getPeerCertificate(true) on that socket then answers {}.
    const leaf = socket.getPeerCertificate(false)
    const key = leaf?.raw ? `${host}\n${leaf.fingerprint256}` : undefined
    const known = key === undefined ? undefined : this.verified.get(key)
    if (known && known.raw.equals(leaf.raw) && now >= known.from && now <= known.to) return undefined
    this.fullVerifications++
    const peer = socket.getPeerCertificate(true)
    const err = verifyServerCertificate(peer, this.anchors, host, now)
    if (!err && key !== undefined && peer.raw?.equals(leaf.raw)) this.verified.set(key, {raw: peer.raw, ...validityWindow(peer, this.anchors)})
    return err
  }

  override createConnection(options: ConnectionOptions & {servername?: string; host?: string}, callback: (err: Error | null, socket?: Duplex) => void): undefined {
    const host = options.servername || options.host || 'localhost'
    // `ca: []` gives OpenSSL an empty trust store without building Node's root store; the handshake
    // completes, and the socket reaches HTTP (callback) only once verified here.
    const socket: TLSSocket = connect({...options, ca: [], rejectUnauthorized: false, session: undefined})
    const onError = (err: Error): void => callback(err)
    socket.once('error', onError)
    socket.once('secureConnect', () => {
      socket.off('error', onError)
      let err: NodeJS.ErrnoException | undefined
      try {
        err = this.verify(socket, host)
      } catch (e) {
        err = tlsError('UNABLE_TO_VERIFY_LEAF_SIGNATURE', `the server certificate could not be read: ${(e as Error).message}`)
      }
      if (err) {
        socket.destroy()
        callback(err)
        return
      }
      callback(null, socket)
    })
    return undefined
  }
}
