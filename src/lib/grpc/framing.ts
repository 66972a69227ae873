/**
 * gRPC message framing over HTTP/2 (https://github.com/grpc/grpc/blob/master/doc/PROTOCOL-HTTP2.md):
 * every message is a 5-byte prefix (compressed flag, 4-byte big-endian length) and the protobuf
 * bytes; the call's outcome is the `grpc-status` / `grpc-message` trailer (or header, for a
 * "trailers-only" answer). Pure and transport-free, so the client and the test server share it.
 */

/** Messages larger than this are refused (gRPC's default receive limit is 4 MiB; syncz of 5,000 proxies is ~2 MiB). */
export const MAX_MESSAGE_BYTES = 64 * 1024 * 1024

/** gRPC status codes by number (https://grpc.github.io/grpc/core/md_doc_statuscodes.html). */
const GRPC_STATUS = [
  'OK',
  'CANCELLED',
  'UNKNOWN',
  'INVALID_ARGUMENT',
  'DEADLINE_EXCEEDED',
  'NOT_FOUND',
  'ALREADY_EXISTS',
  'PERMISSION_DENIED',
  'RESOURCE_EXHAUSTED',
  'FAILED_PRECONDITION',
  'ABORTED',
  'OUT_OF_RANGE',
  'UNIMPLEMENTED',
  'INTERNAL',
  'UNAVAILABLE',
  'DATA_LOSS',
  'UNAUTHENTICATED',
] as const
export type GrpcStatusName = (typeof GRPC_STATUS)[number]
export const GrpcCode = Object.fromEntries(GRPC_STATUS.map((n, i) => [n, i])) as Record<GrpcStatusName, number>

export function grpcStatusName(code: number): string {
  return GRPC_STATUS[code] ?? `code ${code}`
}

/** One length-prefixed, uncompressed message. */
export function encodeMessage(message: Uint8Array): Buffer {
  const out = Buffer.allocUnsafe(5 + message.length)
  out[0] = 0
  out.writeUInt32BE(message.length, 1)
  out.set(message, 5)
  return out
}

export class GrpcFramingError extends Error {}

/** Splits a byte stream into gRPC messages; feed it chunks, it returns the complete messages. */
export class MessageDecoder {
  private chunks: Buffer[] = []
  private buffered = 0

  constructor(private readonly maxBytes = MAX_MESSAGE_BYTES) {}

  push(chunk: Buffer): Buffer[] {
    this.chunks.push(chunk)
    this.buffered += chunk.length
    const out: Buffer[] = []
    while (this.buffered >= 5) {
      const head = this.peek(5)
      if (head[0] !== 0) throw new GrpcFramingError(head[0] === 1 ? 'compressed gRPC message (no grpc-encoding was negotiated)' : `bad gRPC message flag ${head[0]}`)
      const length = head.readUInt32BE(1)
      if (length > this.maxBytes) throw new GrpcFramingError(`gRPC message of ${length} bytes exceeds the limit of ${this.maxBytes}`)
      if (this.buffered < 5 + length) break
      const whole = this.take(5 + length)
      out.push(whole.subarray(5))
    }
    return out
  }

  /** Bytes of an incomplete message still buffered (non-zero at end of stream means truncation). */
  get pending(): number {
    return this.buffered
  }

  private peek(n: number): Buffer {
    if (this.chunks[0]!.length < n) this.chunks = [Buffer.concat(this.chunks)]
    return this.chunks[0]!.subarray(0, n)
  }

  private take(n: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks)
    const head = all.subarray(0, n)
    const rest = all.subarray(n)
    this.chunks = rest.length > 0 ? [rest] : []
    this.buffered = rest.length
    return head
  }
}

/** `grpc-message` is percent-encoded (PROTOCOL-HTTP2.md); a bad escape leaves the text as it is. */
export function decodeGrpcMessage(value: string | string[] | undefined): string {
  const text = Array.isArray(value) ? value[0] : value
  if (!text) return ''
  try {
    return decodeURIComponent(text)
  } catch {
    return text
  }
}

/** `grpc-timeout` header value for a time-out in ms (at most 8 digits, PROTOCOL-HTTP2.md). */
export function grpcTimeout(ms: number): string {
  const m = Math.max(1, Math.ceil(ms))
  return m < 1e8 ? `${m}m` : `${Math.ceil(m / 1000)}S`
}
