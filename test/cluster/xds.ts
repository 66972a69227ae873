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
import {createSecureServer, constants, type Http2SecureServer, type IncomingHttpHeaders, type ServerHttp2Stream} from 'node:http2'
import type {AddressInfo} from 'node:net'
import type {TLSSocket} from 'node:tls'
import type {Duplex} from 'node:stream'
import {encodeGrpcMessage, encodeMessage, GrpcCode, MessageDecoder} from '../../src/lib/grpc/framing.js'
import {ADS_METHOD, decodeDiscoveryRequest, encodeDiscoveryResponse, type DiscoveryRequest, type DiscoveryResponse} from '../../src/lib/grpc/xds.js'
import type {IssuedCert} from './mesh-ca.js'
import type {Pki} from './pki.js'
import {verifyToken, type TokenClaims} from './tokens.js'

export const ISTIO_CA_AUDIENCE = 'istio-ca'

/** One call on the server: read requests with next(), answer with send(), close with end(). */
export interface ServerCall {
  path: string
  metadata: IncomingHttpHeaders
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

export class XdsServer {
  private readonly server: Http2SecureServer
  private readonly handlers = new Map<string, {handler: CallHandler; auth: 'required' | 'none'}>()
  private readonly discovery = new Map<string, DiscoveryHandler>()
  private readonly streamWatchers: ((call: ServerCall, first: DiscoveryRequest) => void)[] = []
  private readonly sockets = new Set<Duplex>()
  /** Set to make every call fail authentication (a token istiod refuses), or to delay answers. */
  refuseTokens = false
  latencyMs = 0
  address?: {host: string; port: number}

  constructor(private readonly options: XdsServerOptions) {
    this.server = createSecureServer({
      key: options.certificate.keyPem, cert: options.certificate.certPem, allowHTTP1: false,
      // A client certificate is asked for but optional; only one the mesh root signed counts (peerIdentity).
      ...(options.clientCaPem ? {requestCert: true, rejectUnauthorized: false, ca: options.clientCaPem} : {}),
    })
    this.server.on('stream', (stream, headers) => this.dispatch(stream, headers))
    this.server.on('session', (session) => session.on('error', () => undefined))
    this.server.on('secureConnection', (s) => s.on('error', () => undefined))
    this.server.on('tlsClientError', () => undefined)
    this.handle(ADS_METHOD, (call) => this.ads(call))
  }

  handle(path: string, handler: CallHandler, options: {auth?: 'required' | 'none'} = {}): void {
    this.handlers.set(path, {handler, auth: options.auth ?? 'required'})
  }

  onDiscovery(typeUrl: string, fn: DiscoveryHandler): void {
    this.discovery.set(typeUrl, fn)
  }

  onAdsStream(fn: (call: ServerCall, first: DiscoveryRequest) => void): void {
    this.streamWatchers.push(fn)
  }

  async listen(): Promise<{host: string; port: number}> {
    await new Promise<void>((resolve) => this.server.listen(0, '127.0.0.1', resolve))
    const a = this.server.address() as AddressInfo
    this.address = {host: '127.0.0.1', port: a.port}
    return this.address
  }

  /** A connection that arrived through pods/portforward (already "inside the pod"). */
  acceptConnection(socket: Duplex): void {
    this.sockets.add(socket)
    socket.on('close', () => this.sockets.delete(socket))
    socket.on('error', () => undefined)
    this.server.emit('connection', socket)
  }

  async close(): Promise<void> {
    for (const s of this.sockets) s.destroy()
    if (!this.server.listening) return
    await new Promise<void>((resolve) => {
      this.server.close(() => resolve())
      // Open HTTP/2 sessions would keep close() waiting.
      setTimeout(resolve, 200).unref()
    })
  }

  private authenticate(headers: IncomingHttpHeaders): TokenClaims | undefined {
    if (this.refuseTokens) return undefined
    const m = /^Bearer\s+(\S+)$/i.exec(String(headers.authorization ?? ''))
    const claims = m ? verifyToken(this.options.pki, m[1]!) : undefined
    const ok = claims !== undefined && (claims.aud ?? []).includes(ISTIO_CA_AUDIENCE)
    this.options.onAuth?.(ok)
    return ok ? claims : undefined
  }

  private dispatch(stream: ServerHttp2Stream, headers: IncomingHttpHeaders): void {
    stream.on('error', () => undefined)
    const trailersOnly = (code: number, message: string) => {
      if (stream.destroyed) return
      stream.respond({[constants.HTTP2_HEADER_STATUS]: 200, 'content-type': 'application/grpc', 'grpc-status': String(code), 'grpc-message': encodeGrpcMessage(message)}, {endStream: true})
    }
    if (headers[constants.HTTP2_HEADER_METHOD] !== 'POST' || !String(headers['content-type'] ?? '').startsWith('application/grpc')) {
      stream.respond({[constants.HTTP2_HEADER_STATUS]: 415}, {endStream: true})
      return
    }
    const path = String(headers[constants.HTTP2_HEADER_PATH] ?? '')
    const entry = this.handlers.get(path)
    if (!entry) {
      trailersOnly(GrpcCode.UNIMPLEMENTED, `unknown method ${path}`)
      return
    }
    const identity = this.authenticate(headers)
    const peer = identity || this.refuseTokens ? undefined : peerIdentity(stream)
    if (entry.auth === 'required' && !identity && !peer) {
      trailersOnly(GrpcCode.UNAUTHENTICATED, 'authentication failure')
      return
    }
    const call = serverCall(stream, path, headers, identity, this.latencyMs)
    if (peer) call.peer = peer
    Promise.resolve(entry.handler(call)).catch((err: unknown) => call.end(GrpcCode.INTERNAL, (err as Error).message))
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
      const request = decodeDiscoveryRequest(raw)
      if (first) {
        first = false
        for (const w of this.streamWatchers) w(call, request)
      }
      const fn = request.typeUrl ? this.discovery.get(request.typeUrl) : undefined
      if (!fn) continue // an ACK, or a type nobody generates: istiod sends nothing
      const response = await fn(request, call)
      if (response && !call.closed) call.send(encodeDiscoveryResponse(response))
    }
  }
}

/** The SPIFFE URI SAN of a verified client certificate. */
function peerIdentity(stream: ServerHttp2Stream): string | undefined {
  const socket = stream.session?.socket as (TLSSocket & {authorized?: boolean}) | undefined
  if (!socket?.authorized) return undefined
  const san = socket.getPeerCertificate?.()?.subjectaltname ?? ''
  return /URI:(spiffe:\/\/[^,\s]+)/.exec(san)?.[1]
}

function serverCall(stream: ServerHttp2Stream, path: string, metadata: IncomingHttpHeaders, identity: TokenClaims | undefined, latencyMs: number): ServerCall {
  const decoder = new MessageDecoder()
  const queue: Buffer[] = []
  const waiters: {resolve: (m: Buffer | undefined) => void; reject: (e: Error) => void}[] = []
  let ended = false
  let closed = false
  let responded = false
  const closers: (() => void)[] = []
  const respond = () => {
    if (responded || stream.destroyed) return
    responded = true
    stream.respond({[constants.HTTP2_HEADER_STATUS]: 200, 'content-type': 'application/grpc'}, {waitForTrailers: true})
    stream.on('wantTrailers', () => stream.sendTrailers(trailers))
  }
  let trailers: Record<string, string> = {'grpc-status': '0'}
  stream.on('data', (chunk: Buffer) => {
    let messages: Buffer[]
    try {
      messages = decoder.push(chunk)
    } catch (err) {
      call.end(GrpcCode.INTERNAL, (err as Error).message)
      return
    }
    for (const m of messages) {
      const w = waiters.shift()
      if (w) w.resolve(m)
      else queue.push(m)
    }
  })
  stream.on('end', () => {
    ended = true
    for (const w of waiters.splice(0)) w.resolve(undefined)
  })
  stream.on('close', () => {
    closed = true
    for (const w of waiters.splice(0)) w.reject(new Error('cancelled'))
    for (const c of closers.splice(0)) c()
  })
  const call: ServerCall = {
    path, metadata, identity,
    get closed() {
      return closed
    },
    next() {
      const m = queue.shift()
      if (m) return Promise.resolve(m)
      if (closed) return Promise.reject(new Error('cancelled'))
      if (ended) return Promise.resolve(undefined)
      return new Promise((resolve, reject) => waiters.push({resolve, reject}))
    },
    send(message) {
      if (closed) return
      respond()
      const frame = encodeMessage(message)
      if (latencyMs > 0) setTimeout(() => !stream.destroyed && stream.write(frame), latencyMs).unref()
      else stream.write(frame)
    },
    end(code = GrpcCode.OK, message = '') {
      if (closed || stream.destroyed) return
      trailers = {'grpc-status': String(code), ...(message ? {'grpc-message': encodeGrpcMessage(message)} : {})}
      if (!responded) {
        responded = true
        stream.respond({[constants.HTTP2_HEADER_STATUS]: 200, 'content-type': 'application/grpc', ...trailers}, {endStream: true})
        return
      }
      const finish = () => !stream.destroyed && stream.end()
      if (latencyMs > 0) setTimeout(finish, latencyMs).unref()
      else finish()
    },
    onClose(fn) {
      if (closed) fn()
      else closers.push(fn)
    },
  }
  return call
}
