/**
 * A simulated istiod's gRPC server on 15012: TLS with a serving certificate for `istiod[-REV].NS.svc`
 * issued by the mesh root CA (mesh-ca.ts), a bearer-token check like istiod's JWT authenticator
 * (signature, expiry, audience `istio-ca`; pilot/pkg/xds/ads.go answers UNAUTHENTICATED
 * "authentication failure" otherwise), and a registry of handlers:
 *
 * - `handle(path, handler)` for any gRPC method (e.g. the Istio CA's
 *   `/istio.v1.auth.IstioCertificateService/CreateCertificate`);
 * - ADS (`/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources`) is built
 *   in and dispatches each DiscoveryRequest on its type URL to `onDiscovery(typeUrl, fn)`; `onAdsStream`
 *   sees every ADS stream (a simulated VM's connection) from its first request to its end.
 *
 * It listens on 127.0.0.1 (for --xds-address) and accepts connections handed over by the
 * test API server's pods/portforward (acceptConnection).
 */
import {X509Certificate} from 'node:crypto'
import type {Duplex} from 'node:stream'
import * as grpc from '@grpc/grpc-js'
import type {IssuedCert} from './mesh-ca.js'
import type {Pki} from './pki.js'
import {verifyToken, type TokenClaims} from './tokens.js'
import {decodeDiscoveryRequest, encodeDiscoveryResponse, type DiscoveryRequest, type DiscoveryResponse} from './xds-messages.js'
import {ADS_PATH} from '../fixtures/protos/load.js'

export const ISTIO_CA_AUDIENCE = 'istio-ca'

/** One call on the server: read requests with next(), answer with send(), close with end(). */
export interface ServerCall {
  path: string
  /** The call's metadata (lower-case keys; binary values left out). */
  metadata: Record<string, string>
  /** The caller's verified token claims (undefined without a valid istio-ca token). */
  identity?: TokenClaims
  /** The SPIFFE ID of a client certificate the mesh root signed (mTLS, as a VM after bootstrap), if any. */
  peer?: string
  next(): Promise<Buffer | undefined>
  send(message: Uint8Array): void
  end(code?: number, message?: string): void
  /** True once the client went away (cancelled or disconnected). */
  readonly closed: boolean
  onClose(fn: () => void): void
}

export type CallHandler = (call: ServerCall) => void | Promise<void>
export type DiscoveryHandler = (request: DiscoveryRequest, call: ServerCall) => DiscoveryResponse | undefined | Promise<DiscoveryResponse | undefined>

export interface XdsServerOptions {
  /** Verifies bearer tokens (the API server's service-account signing key). */
  pki: Pki
  certificate: IssuedCert
  /** Client certificates signed by this root authenticate callers too (istiod accepts workload certificates). */
  clientCaPem?: string
  /** Called for every token check, e.g. to count them. */
  onAuth?: (ok: boolean) => void
}

/**
 * A certificate provider that always has the same certificate (grpc-js's interface for server TLS). It
 * answers a new listener on the next tick: grpc-js adds the server as a watcher of the credentials only
 * after it subscribed, so an answer given at once would reach no server.
 */
function staticProvider(update: {caCertificate?: Buffer; certificate?: Buffer; privateKey?: Buffer}): grpc.experimental.CertificateProvider {
  return {
    addCaCertificateListener: (l) => process.nextTick(() => l(update.caCertificate ? {caCertificate: update.caCertificate} : null)),
    removeCaCertificateListener: () => undefined,
    addIdentityCertificateListener: (l) => process.nextTick(() => l(update.certificate && update.privateKey ? {certificate: update.certificate, privateKey: update.privateKey} : null)),
    removeIdentityCertificateListener: () => undefined,
  }
}

const passBytes = (b: Buffer) => b

/**
 * The server is @grpc/grpc-js (a gRPC implementation meshvm's own client in src/lib/grpc does not share
 * code with); every method is registered with pass-through (de)serializers and its handler decodes the
 * messages from the upstream .proto files (xds-messages.ts, fixtures/protos).
 */
export class XdsServer {
  private readonly server: grpc.Server
  private readonly credentials: grpc.ServerCredentials
  private readonly injector: grpc.ConnectionInjector
  /** Resolves once the injector's TLS settings arrived (the provider answers on the next tick). */
  private readonly injectorReady: Promise<void>
  private readonly rootKey?: X509Certificate
  private readonly discovery = new Map<string, DiscoveryHandler>()
  private readonly discoveryPrefixes: [string, DiscoveryHandler][] = []
  private readonly streamWatchers: ((call: ServerCall, first: DiscoveryRequest) => void)[] = []
  private readonly sockets = new Set<Duplex>()
  /** Set to make every call fail authentication (a token istiod refuses), or to delay answers. */
  refuseTokens = false
  latencyMs = 0
  address?: {host: string; port: number}

  constructor(private readonly options: XdsServerOptions) {
    this.server = new grpc.Server()
    // A client certificate is asked for but optional; only one the mesh root signed counts (peerIdentity).
    const identity = staticProvider({certificate: Buffer.from(options.certificate.certPem), privateKey: Buffer.from(options.certificate.keyPem)})
    this.credentials = grpc.experimental.createCertificateProviderServerCredentials(identity, options.clientCaPem ? staticProvider({caCertificate: Buffer.from(options.clientCaPem)}) : null, false)
    if (options.clientCaPem) this.rootKey = new X509Certificate(options.clientCaPem)
    // grpc-js drops connections that arrive before the TLS settings, which come on the next tick.
    this.injector = this.server.createConnectionInjector(this.credentials)
    this.injectorReady = new Promise((resolve) => setImmediate(resolve))
    this.handle(ADS_PATH, (call) => this.ads(call))
  }

  handle(path: string, handler: CallHandler, options: {auth?: 'required' | 'none'} = {}): void {
    const auth = options.auth ?? 'required'
    this.server.register(path, (stream: grpc.ServerDuplexStream<Buffer, Buffer>) => this.dispatch(stream, path, handler, auth), passBytes, passBytes, 'bidi')
  }

  onDiscovery(typeUrl: string, fn: DiscoveryHandler): void {
    this.discovery.set(typeUrl, fn)
  }

  /** Types no exact handler takes, by prefix (istiod hands every `istio.io/debug/*` type to one generator). */
  onDiscoveryPrefix(prefix: string, fn: DiscoveryHandler): void {
    this.discoveryPrefixes.push([prefix, fn])
  }

  onAdsStream(fn: (call: ServerCall, first: DiscoveryRequest) => void): void {
    this.streamWatchers.push(fn)
  }

  async listen(): Promise<{host: string; port: number}> {
    const port = await new Promise<number>((resolve, reject) => this.server.bindAsync('127.0.0.1:0', this.credentials, (err, p) => (err ? reject(err) : resolve(p))))
    this.address = {host: '127.0.0.1', port}
    return this.address
  }

  /** A connection that arrived through pods/portforward (already "inside the pod"). */
  acceptConnection(socket: Duplex): void {
    this.sockets.add(socket)
    socket.on('close', () => this.sockets.delete(socket))
    socket.on('error', () => undefined)
    // The socket buffers what the client sends meanwhile.
    void this.injectorReady.then(() => !socket.destroyed && this.injector.injectConnection(socket))
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    // Open streams (a connected VM's ADS) would keep a graceful shutdown waiting.
    this.server.forceShutdown()
  }

  private authenticate(metadata: Record<string, string>): TokenClaims | undefined {
    if (this.refuseTokens) return undefined
    const m = /^Bearer\s+(\S+)$/i.exec(metadata.authorization ?? '')
    const claims = m ? verifyToken(this.options.pki, m[1]!) : undefined
    const ok = claims !== undefined && (claims.aud ?? []).includes(ISTIO_CA_AUDIENCE)
    this.options.onAuth?.(ok)
    return ok ? claims : undefined
  }

  /** The SPIFFE URI SAN of a client certificate the mesh root signed (and still valid). */
  private peerIdentity(stream: grpc.ServerDuplexStream<Buffer, Buffer>): string | undefined {
    const raw = stream.getAuthContext()?.sslPeerCertificate?.raw
    if (!raw || !this.rootKey) return undefined
    const cert = new X509Certificate(raw)
    const now = Date.now()
    if (!cert.checkIssued(this.rootKey) || !cert.verify(this.rootKey.publicKey) || Date.parse(cert.validFrom) > now || Date.parse(cert.validTo) < now) return undefined
    return /URI:(spiffe:\/\/[^,\s]+)/.exec(cert.subjectAltName ?? '')?.[1]
  }

  private dispatch(stream: grpc.ServerDuplexStream<Buffer, Buffer>, path: string, handler: CallHandler, auth: 'required' | 'none'): void {
    stream.on('error', () => undefined)
    const metadata: Record<string, string> = {}
    for (const [k, v] of Object.entries(stream.metadata.getMap())) if (typeof v === 'string') metadata[k] = v
    const identity = this.authenticate(metadata)
    const peer = identity || this.refuseTokens ? undefined : this.peerIdentity(stream)
    const call = serverCall(stream, path, metadata, identity, () => this.latencyMs)
    if (peer) call.peer = peer
    if (auth === 'required' && !identity && !peer) {
      call.end(grpc.status.UNAUTHENTICATED, 'authentication failure')
      return
    }
    Promise.resolve(handler(call)).catch((err: unknown) => call.end(grpc.status.INTERNAL, (err as Error).message))
  }

  /** istiod's ADS loop, reduced to what tests need: each request answered by its type's handler. */
  private async ads(call: ServerCall): Promise<void> {
    let first = true
    for (;;) {
      let raw: Buffer | undefined
      try {
        raw = await call.next()
      } catch {
        return
      }
      if (raw === undefined) {
        call.end()
        return
      }
      let request: DiscoveryRequest
      try {
        request = decodeDiscoveryRequest(raw)
      } catch (err) {
        call.end(grpc.status.INTERNAL, `grpc: failed to unmarshal the received message: ${(err as Error).message}`)
        return
      }
      if (first) {
        first = false
        for (const w of this.streamWatchers) w(call, request)
      }
      const typeUrl = request.typeUrl
      const fn = typeUrl ? (this.discovery.get(typeUrl) ?? this.discoveryPrefixes.find(([p]) => typeUrl.startsWith(p))?.[1]) : undefined
      if (!fn) continue // an ACK, or a type nobody generates: istiod sends nothing
      const response = await fn(request, call)
      if (response && !call.closed) call.send(encodeDiscoveryResponse(response))
    }
  }
}

function serverCall(stream: grpc.ServerDuplexStream<Buffer, Buffer>, path: string, metadata: Record<string, string>, identity: TokenClaims | undefined, latencyMs: () => number): ServerCall {
  const queue: Buffer[] = []
  const waiters: {resolve: (m: Buffer | undefined) => void; reject: (e: Error) => void}[] = []
  let ended = false
  let closed = false
  let finished = false
  const closers: (() => void)[] = []
  const close = () => {
    if (closed) return
    closed = true
    for (const w of waiters.splice(0)) w.reject(new Error('cancelled'))
    for (const c of closers.splice(0)) c()
  }
  stream.on('data', (m: Buffer) => {
    const w = waiters.shift()
    if (w) w.resolve(m)
    else queue.push(m)
  })
  stream.on('end', () => {
    ended = true
    for (const w of waiters.splice(0)) w.resolve(undefined)
  })
  stream.on('cancelled', close)
  stream.on('close', close)
  const later = (fn: () => void) => {
    const ms = latencyMs()
    if (ms > 0) setTimeout(fn, ms).unref()
    else fn()
  }
  const call: ServerCall = {
    path,
    metadata,
    identity,
    get closed() {
      return closed || stream.cancelled
    },
    next() {
      const m = queue.shift()
      if (m) return Promise.resolve(m)
      if (closed) return Promise.reject(new Error('cancelled'))
      if (ended) return Promise.resolve(undefined)
      return new Promise((resolve, reject) => waiters.push({resolve, reject}))
    },
    send(message) {
      if (call.closed || finished) return
      const b = Buffer.from(message.buffer, message.byteOffset, message.byteLength)
      later(() => !stream.destroyed && !finished && stream.write(b))
    },
    end(code = grpc.status.OK, message = '') {
      if (call.closed || finished) return
      finished = true
      later(() => {
        if (stream.destroyed) return
        if (code === grpc.status.OK) stream.end()
        else stream.emit('error', Object.assign(new Error(message), {code, details: message}))
      })
    },
    onClose(fn) {
      if (closed) fn()
      else closers.push(fn)
    },
  }
  return call
}
