/**
 * A small gRPC client on node:http2 (PROTOCOL-HTTP2.md): one HTTP/2 session per server, calls as
 * HTTP/2 streams with `content-type: application/grpc`, `te: trailers`, length-prefixed messages
 * (framing.ts) and the outcome in the `grpc-status` trailer. Enough for xDS (a bidirectional ADS
 * stream); no compression, no retries, no name resolution: the caller
 * supplies the connection (a TLS socket over a port-forward, or to --xds-address).
 */
import {connect, constants, type ClientHttp2Session, type ClientHttp2Stream, type IncomingHttpHeaders} from 'node:http2'
import type {Duplex} from 'node:stream'
import {decodeGrpcMessage, encodeMessage, grpcStatusName, grpcTimeout, GrpcCode, type GrpcFramingError, MAX_MESSAGE_BYTES, MessageDecoder} from './framing.js'

export class GrpcError extends Error {
  constructor(
    /** gRPC status code; UNAVAILABLE for transport failures, DEADLINE_EXCEEDED for time-outs. */
    readonly code: number,
    /** The server's `grpc-message`, or what went wrong on the way. */
    readonly details: string,
    /** The underlying transport error's code (ECONNRESET, ERR_TLS_CERT_ALTNAME_INVALID, ...), if any. */
    readonly transport?: NodeJS.ErrnoException,
  ) {
    super(`${grpcStatusName(code)}${details ? `: ${details}` : ''}`)
    this.name = 'GrpcError'
  }
}

export interface GrpcChannelOptions {
  /** `:authority` (host:port); for TLS, the name checked against the certificate is the socket's business. */
  authority: string
  /** A connected socket (TLS with ALPN h2 for https, or plaintext h2c). */
  createConnection: () => Duplex
  secure: boolean
}

export interface CallOptions {
  metadata?: Record<string, string>
  timeoutMs?: number
  /**
   * The most a call holds of the server's answer: one message, and the messages received but not yet
   * read (next()), in bytes. Past it the call fails with RESOURCE_EXHAUSTED. Default MAX_MESSAGE_BYTES.
   */
  maxBytes?: number
}

/** One HTTP/2 session; close it when done (each call is a stream on it). */
export class GrpcChannel {
  readonly session: ClientHttp2Session
  /** The session's own error (TLS, connection), once it failed: the cause of its streams' failures. */
  transportError?: NodeJS.ErrnoException

  constructor(options: GrpcChannelOptions) {
    this.session = connect(`${options.secure ? 'https' : 'http'}://${options.authority}`, {createConnection: () => options.createConnection()})
    this.session.on('error', (err: NodeJS.ErrnoException) => {
      this.transportError = err
    })
  }

  /** Opens a call; messages are written with send() and read with next(). */
  call(path: string, options: CallOptions = {}): GrpcCall {
    return new GrpcCall(this, path, options)
  }

  close(): void {
    if (!this.session.destroyed) this.session.close()
    // A session whose peer never answers the GOAWAY is torn down shortly after.
    setTimeout(() => this.session.destroy(), 1000).unref()
  }
}

/** A gRPC call: a bidirectional stream of messages. */
export class GrpcCall {
  private readonly stream: ClientHttp2Stream
  private readonly decoder: MessageDecoder
  private readonly queue: Buffer[] = []
  private queued = 0
  private readonly maxBytes: number
  private waiters: {resolve: (m: Buffer | undefined) => void; reject: (e: GrpcError) => void}[] = []
  private outcome?: GrpcError | 'ok'
  private timer?: NodeJS.Timeout

  constructor(channel: GrpcChannel, path: string, options: CallOptions) {
    this.maxBytes = options.maxBytes ?? MAX_MESSAGE_BYTES
    this.decoder = new MessageDecoder(this.maxBytes)
    const headers: Record<string, string> = {
      [constants.HTTP2_HEADER_METHOD]: 'POST',
      [constants.HTTP2_HEADER_PATH]: path,
      [constants.HTTP2_HEADER_CONTENT_TYPE]: 'application/grpc',
      te: 'trailers',
      'user-agent': 'meshvm-grpc',
      ...(options.timeoutMs ? {'grpc-timeout': grpcTimeout(options.timeoutMs)} : {}),
      ...options.metadata,
    }
    this.stream = channel.session.request(headers)
    if (options.timeoutMs) {
      this.timer = setTimeout(() => this.fail(new GrpcError(GrpcCode.DEADLINE_EXCEEDED, `no answer within ${options.timeoutMs} ms`)), options.timeoutMs)
      this.timer.unref?.()
    }
    this.stream.on('response', (h) => {
      const status = Number(h[constants.HTTP2_HEADER_STATUS])
      if (status !== 200) {
        this.fail(new GrpcError(httpToGrpc(status), `HTTP status ${status}${h['grpc-message'] ? `: ${decodeGrpcMessage(h['grpc-message'])}` : ''}`))
        return
      }
      // Trailers-only answer: the status is in the headers.
      if (h['grpc-status'] !== undefined) this.finish(h)
    })
    this.stream.on('data', (chunk: Buffer) => {
      let messages: Buffer[]
      try {
        messages = this.decoder.push(chunk)
      } catch (err) {
        const tooLarge = /exceeds the limit/.test((err as GrpcFramingError).message)
        this.fail(new GrpcError(tooLarge ? GrpcCode.RESOURCE_EXHAUSTED : GrpcCode.INTERNAL, (err as GrpcFramingError).message))
        return
      }
      for (const m of messages) {
        const w = this.waiters.shift()
        if (w) w.resolve(m)
        else {
          this.queue.push(m)
          this.queued += m.length
        }
      }
      // Messages nobody reads are not kept without bound.
      if (this.queued > this.maxBytes) this.fail(new GrpcError(GrpcCode.RESOURCE_EXHAUSTED, `more than ${this.maxBytes} bytes of messages received and not read`))
    })
    this.stream.on('trailers', (t) => this.finish(t))
    this.stream.on('end', () => {
      if (this.outcome === undefined) this.fail(new GrpcError(GrpcCode.INTERNAL, this.decoder.pending > 0 ? 'the stream ended inside a message' : 'the stream ended without a grpc-status'))
    })
    this.stream.on('close', () => {
      if (this.outcome === undefined) {
        const cause = channel.transportError
        this.fail(new GrpcError(GrpcCode.UNAVAILABLE, cause ? cause.message : `the stream was reset (HTTP/2 code ${this.stream.rstCode})`, cause))
      }
    })
    this.stream.on('error', (err: NodeJS.ErrnoException) => {
      // A stream cancelled because its session failed carries the session's error (TLS, connection) as cause.
      const cause = ((err as {cause?: NodeJS.ErrnoException}).cause ?? channel.transportError ?? err) as NodeJS.ErrnoException
      this.fail(new GrpcError(GrpcCode.UNAVAILABLE, cause.message, cause))
    })
  }

  private finish(h: IncomingHttpHeaders): void {
    if (this.outcome !== undefined) return
    const code = Number(h['grpc-status'])
    if (code === 0) this.settle('ok')
    else this.fail(new GrpcError(Number.isInteger(code) ? code : GrpcCode.UNKNOWN, decodeGrpcMessage(h['grpc-message'])))
  }

  private fail(err: GrpcError): void {
    if (this.outcome !== undefined) return
    this.settle(err)
    if (!this.stream.destroyed) this.stream.close(constants.NGHTTP2_CANCEL)
  }

  private settle(outcome: GrpcError | 'ok'): void {
    this.outcome = outcome
    clearTimeout(this.timer)
    for (const w of this.waiters.splice(0)) {
      if (outcome === 'ok') w.resolve(undefined)
      else w.reject(outcome)
    }
  }

  send(message: Uint8Array): void {
    this.stream.write(encodeMessage(message))
  }

  /** The next message; undefined once the server ended the call with OK; throws its error otherwise. */
  next(): Promise<Buffer | undefined> {
    const m = this.queue.shift()
    if (m) {
      this.queued -= m.length
      return Promise.resolve(m)
    }
    if (this.outcome === 'ok') return Promise.resolve(undefined)
    if (this.outcome) return Promise.reject(this.outcome)
    return new Promise((resolve, reject) => this.waiters.push({resolve, reject}))
  }

  /** Ends the call from our side (RST_STREAM CANCEL), as a client does once it has its answer. */
  cancel(): void {
    if (this.outcome === undefined) this.settle(new GrpcError(GrpcCode.CANCELLED, 'cancelled by the client'))
    clearTimeout(this.timer)
    if (!this.stream.destroyed) this.stream.close(constants.NGHTTP2_CANCEL)
  }
}

/** HTTP status → gRPC code, for answers that are not gRPC (PROTOCOL-HTTP2.md / http-grpc-status-mapping.md). */
function httpToGrpc(status: number): number {
  if (status === 400) return GrpcCode.INTERNAL
  if (status === 401) return GrpcCode.UNAUTHENTICATED
  if (status === 403) return GrpcCode.PERMISSION_DENIED
  if (status === 404) return GrpcCode.UNIMPLEMENTED
  if (status === 429 || status === 502 || status === 503 || status === 504) return GrpcCode.UNAVAILABLE
  return GrpcCode.UNKNOWN
}
