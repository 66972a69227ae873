/**
 * kubelet's port-forward protocol over SPDY/3.1 (`portforward.k8s.io`; kubelet
 * pkg/kubelet/cri/streaming/portforward/httpstream.go over k8s.io/apimachinery's spdy connection and
 * moby/spdystream), server side: what kubectl and istioctl (client-go) speak, plain or tunnelled in a
 * WebSocket. Used by the simulated API server (portforward.ts) and by test:real's kubelet stand-in.
 *
 * Every stream the client opens is accepted with an empty SYN_REPLY (as spdystream replies); streams
 * are paired by `requestid` (headers `streamtype` error or data, and `port`), and each complete pair
 * is a connection to the pod's port. A refusal is written on the error stream and both streams are
 * closed, as kubelet's portForward does (`defer Close()`). Pings are answered; SETTINGS and
 * WINDOW_UPDATE are ignored (spdystream does no flow control).
 */
import type {Duplex} from 'node:stream'
import {constants, inflateSync} from 'node:zlib'

/** SPDY/3's header dictionary (draft 3, section 2.6.10.1), as in Go's spdy package (BSD licence). */
const DICTIONARY = Buffer.from(
  'AAAAB29wdGlvbnMAAAAEaGVhZAAAAARwb3N0AAAAA3B1dAAAAAZkZWxldGUAAAAFdHJhY2UAAAAGYWNjZXB0AAAADmFjY2VwdC1jaGFyc2V0AAAAD2FjY2VwdC1lbmNvZGluZwAAAA9hY2NlcHQtbGFuZ3VhZ2UAAAANYWNjZXB0LXJhbmdlcwAAAANhZ2UAAAAFYWxsb3cAAAANYXV0aG9yaXphdGlvbgAAAA1jYWNoZS1jb250cm9sAAAACmNvbm5lY3Rpb24AAAAMY29udGVudC1iYXNlAAAAEGNvbnRlbnQtZW5jb2RpbmcAAAAQY29udGVudC1sYW5ndWFnZQAAAA5jb250ZW50LWxlbmd0aAAAABBjb250ZW50LWxvY2F0aW9uAAAAC2NvbnRlbnQtbWQ1AAAADWNvbnRlbnQtcmFuZ2UAAAAMY29udGVudC10eXBlAAAABGRhdGUAAAAEZXRhZwAAAAZleHBlY3QAAAAHZXhwaXJlcwAAAARmcm9tAAAABGhvc3QAAAAIaWYtbWF0Y2gAAAARaWYtbW9kaWZpZWQtc2luY2UAAAANaWYtbm9uZS1tYXRjaAAAAAhpZi1yYW5nZQAAABNpZi11bm1vZGlmaWVkLXNpbmNlAAAADWxhc3QtbW9kaWZpZWQAAAAIbG9jYXRpb24AAAAMbWF4LWZvcndhcmRzAAAABnByYWdtYQAAABJwcm94eS1hdXRoZW50aWNhdGUAAAATcHJveHktYXV0aG9yaXphdGlvbgAAAAVyYW5nZQAAAAdyZWZlcmVyAAAAC3JldHJ5LWFmdGVyAAAABnNlcnZlcgAAAAJ0ZQAAAAd0cmFpbGVyAAAAEXRyYW5zZmVyLWVuY29kaW5nAAAAB3VwZ3JhZGUAAAAKdXNlci1hZ2VudAAAAAR2YXJ5AAAAA3ZpYQAAAAd3YXJuaW5nAAAAEHd3dy1hdXRoZW50aWNhdGUAAAAGbWV0aG9kAAAAA2dldAAAAAZzdGF0dXMAAAAGMjAwIE9LAAAAB3ZlcnNpb24AAAAISFRUUC8xLjEAAAADdXJsAAAABnB1YmxpYwAAAApzZXQtY29va2llAAAACmtlZXAtYWxpdmUAAAAGb3JpZ2luMTAwMTAxMjAxMjAyMjA1MjA2MzAwMzAyMzAzMzA0MzA1MzA2MzA3NDAyNDA1NDA2NDA3NDA4NDA5NDEwNDExNDEyNDEzNDE0NDE1NDE2NDE3NTAyNTA0NTA1MjAzIE5vbi1BdXRob3JpdGF0aXZlIEluZm9ybWF0aW9uMjA0IE5vIENvbnRlbnQzMDEgTW92ZWQgUGVybWFuZW50bHk0MDAgQmFkIFJlcXVlc3Q0MDEgVW5hdXRob3JpemVkNDAzIEZvcmJpZGRlbjQwNCBOb3QgRm91bmQ1MDAgSW50ZXJuYWwgU2VydmVyIEVycm9yNTAxIE5vdCBJbXBsZW1lbnRlZDUwMyBTZXJ2aWNlIFVuYXZhaWxhYmxlSmFuIEZlYiBNYXIgQXByIE1heSBKdW4gSnVsIEF1ZyBTZXB0IE9jdCBOb3YgRGVjIDAwOjAwOjAwIE1vbiwgVHVlLCBXZWQsIFRodSwgRnJpLCBTYXQsIFN1biwgR01UY2h1bmtlZCx0ZXh0L2h0bWwsaW1hZ2UvcG5nLGltYWdlL2pwZyxpbWFnZS9naWYsYXBwbGljYXRpb24veG1sLGFwcGxpY2F0aW9uL3hodG1sK3htbCx0ZXh0L3BsYWluLHRleHQvamF2YXNjcmlwdCxwdWJsaWNwcml2YXRlbWF4LWFnZT1nemlwLGRlZmxhdGUsc2RjaGNoYXJzZXQ9dXRmLThjaGFyc2V0PWlzby04ODU5LTEsdXRmLSwqLGVucT0wLg==',
  'base64',
)

// SPDY/3 frame types and flags (the SPDY/3 draft, as github.com/moby/spdystream/spdy reads them)
const SYN_STREAM = 1
const SYN_REPLY = 2
const RST_STREAM = 3
const PING = 6
const GOAWAY = 7
const FLAG_FIN = 0x01
const STATUS_CANCEL = 5
/** One DATA frame's largest payload that this server sends (the protocol allows 2^24 - 1). */
const MAX_DATA = 0xffff

/**
 * The header blocks of one direction of a SPDY session are one zlib stream (with the dictionary),
 * flushed at each frame. Re-inflating everything received so far keeps this synchronous; a session
 * carries a few streams per forwarded connection, so the input stays small.
 */
class HeaderInflater {
  private input = Buffer.alloc(0)
  private seen = 0
  next(block: Buffer): Buffer {
    this.input = Buffer.concat([this.input, block])
    const out = inflateSync(this.input, {dictionary: DICTIONARY, finishFlush: constants.Z_SYNC_FLUSH})
    const fresh = out.subarray(this.seen)
    this.seen = out.length
    return fresh
  }
}

function parseHeaderBlock(b: Buffer): Map<string, string> {
  const headers = new Map<string, string>()
  let at = 0
  const take = () => {
    const n = b.readUInt32BE(at)
    const s = b.toString('latin1', at + 4, at + 4 + n)
    at += 4 + n
    return s
  }
  const count = b.readUInt32BE(at)
  at += 4
  for (let i = 0; i < count; i++) {
    const name = take().toLowerCase()
    headers.set(name, take().split('\0')[0]!)
  }
  return headers
}

interface SpdyPair {
  id: string
  port: number
  error?: number
  data?: number
  conn?: Duplex
}

/**
 * Serves one SPDY session on `socket`. `open(port)` is the connection to the pod's port, or kubelet's
 * error text when nothing listens there; an error on an open connection is written as `errorText`.
 */
export function serveSpdyPortForward(socket: Duplex, open: (port: number) => Duplex | string, errorText: (port: number, err: NodeJS.ErrnoException) => string = (_port, err) => err.message): void {
  let pending: Buffer = Buffer.alloc(0)
  const inflater = new HeaderInflater()
  let repliedOnce = false
  const pairs = new Map<string, SpdyPair>()
  const streams = new Map<number, SpdyPair>()
  const write = (b: Buffer) => {
    if (!socket.destroyed && socket.writable) socket.write(b)
  }
  const control = (type: number, flags: number, payload: Buffer) => {
    const h = Buffer.alloc(8)
    h.writeUInt16BE(0x8000 | 3, 0)
    h.writeUInt16BE(type, 2)
    h[4] = flags
    h.writeUIntBE(payload.length, 5, 3)
    write(Buffer.concat([h, payload]))
  }
  const data = (stream: number, payload: Buffer, fin = false) => {
    let at = 0
    do {
      const chunk = payload.subarray(at, at + MAX_DATA)
      at += MAX_DATA
      const h = Buffer.alloc(8)
      h.writeUInt32BE(stream & 0x7fffffff, 0)
      h[4] = fin && at >= payload.length ? FLAG_FIN : 0
      h.writeUIntBE(chunk.length, 5, 3)
      write(Buffer.concat([h, chunk]))
    } while (at < payload.length)
  }
  const u32 = (n: number) => {
    const b = Buffer.alloc(4)
    b.writeUInt32BE(n >>> 0)
    return b
  }
  const reset = (stream: number) => control(RST_STREAM, 0, Buffer.concat([u32(stream), u32(STATUS_CANCEL)]))
  // Our header blocks are one zlib stream too, with no dictionary needed to write them: a stored
  // (uncompressed) deflate block holding "0 headers", then the empty stored block a sync flush ends
  // with (Go's inflater hands out a block's bytes only once it has read the next block's header).
  const reply = (stream: number) => {
    const empty = Buffer.from([0x00, 0x04, 0x00, 0xfb, 0xff, 0, 0, 0, 0, 0x00, 0x00, 0x00, 0xff, 0xff])
    control(SYN_REPLY, 0, Buffer.concat([u32(stream), repliedOnce ? empty : Buffer.concat([Buffer.from([0x78, 0x01]), empty])]))
    repliedOnce = true
  }
  const forget = (p: SpdyPair) => {
    pairs.delete(p.id)
    if (p.error !== undefined) streams.delete(p.error)
    if (p.data !== undefined) streams.delete(p.data)
    p.conn?.destroy()
  }
  // kubelet's portForward ends by closing both streams (a FIN each), after its error text if any.
  const close = (p: SpdyPair, message?: string) => {
    if (!pairs.has(p.id)) return
    if (message !== undefined) data(p.error!, Buffer.from(message))
    data(p.data!, Buffer.alloc(0), true)
    data(p.error!, Buffer.alloc(0), true)
    forget(p)
  }
  const forward = (p: SpdyPair) => {
    const conn = open(p.port)
    if (typeof conn === 'string') return close(p, conn)
    p.conn = conn
    conn.on('data', (d: Buffer) => data(p.data!, d))
    conn.on('error', (err: NodeJS.ErrnoException) => close(p, errorText(p.port, err)))
    // the pod closed: kubelet's PortForward returns
    conn.on('end', () => close(p))
  }
  const synStream = (payload: Buffer) => {
    const stream = payload.readUInt32BE(0) & 0x7fffffff
    let headers: Map<string, string>
    try {
      headers = parseHeaderBlock(inflater.next(payload.subarray(10)))
    } catch {
      return reset(stream)
    }
    const port = Number(headers.get('port'))
    const type = headers.get('streamtype')
    // httpStreamReceived: a stream without a valid port or stream type is refused
    if (!Number.isInteger(port) || port < 1 || port > 65535 || (type !== 'error' && type !== 'data')) return reset(stream)
    // clients before request IDs: the error stream's ID, and the data stream's one less 2
    const id = headers.get('requestid') || String(type === 'error' ? stream : stream - 2)
    let p = pairs.get(id)
    if (!p) pairs.set(id, (p = {id, port}))
    if (p[type] !== undefined) return reset(stream)
    p[type] = stream
    streams.set(stream, p)
    reply(stream)
    if (p.error !== undefined && p.data !== undefined) forward(p)
  }
  const frame = (b: Buffer) => {
    if (b[0]! & 0x80) {
      const type = b.readUInt16BE(2)
      const payload = b.subarray(8)
      if (type === SYN_STREAM) synStream(payload)
      else if (type === RST_STREAM) {
        const p = streams.get(payload.readUInt32BE(0) & 0x7fffffff)
        if (p) forget(p)
      } else if (type === PING) control(PING, 0, payload.subarray(0, 4))
      else if (type === GOAWAY) socket.end()
      // SETTINGS, WINDOW_UPDATE, HEADERS: nothing to do here
      return
    }
    const stream = b.readUInt32BE(0) & 0x7fffffff
    const p = streams.get(stream)
    if (!p || stream !== p.data || !p.conn) return // the client's error stream carries nothing
    const payload = b.subarray(8)
    if (payload.length > 0) p.conn.write(payload)
    if (b[4]! & FLAG_FIN) p.conn.end()
  }
  socket.on('data', (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    while (pending.length >= 8) {
      const len = pending.readUIntBE(5, 3)
      if (pending.length < 8 + len) break
      const b = pending.subarray(0, 8 + len)
      pending = pending.subarray(8 + len)
      try {
        frame(b)
      } catch {
        // a malformed frame: the session ends, as spdystream's framer error ends it
        socket.destroy()
        return
      }
    }
  })
  socket.on('error', () => undefined)
  socket.on('close', () => {
    for (const p of [...pairs.values()]) forget(p)
  })
}
