/**
 * A kubelet stand-in for the one kubelet feature meshvm and istioctl use: port-forward. The real
 * kube-apiserver authenticates and authorizes `pods/portforward`, looks up the Pod's Node, and proxies
 * the upgrade to `https://<node InternalIP>:<kubeletEndpoint>/portForward/NS/POD`; this server answers
 * there the way kubelet's streaming server does, in both of its protocols:
 *
 * - WebSocket (subprotocol `v4.channel.k8s.io`, what meshvm asks for; portforward/websocket.go): ports
 *   in the query, per port i channel 2i carries data and 2i+1 errors, both first carry the port
 *   (2 bytes, little-endian).
 * - SPDY/3.1 (`X-Stream-Protocol-Version: portforward.k8s.io`; portforward/httpstream.go). client-go
 *   (kubectl, istioctl) either upgrades to SPDY through the API server, or tunnels SPDY in a WebSocket
 *   (`SPDY/3.1+portforward.k8s.io`), which the API server unwraps and sends here as a SPDY upgrade: so
 *   SPDY is all a kubelet meets. Per forwarded connection the client opens an `error` and a `data`
 *   stream (headers `streamtype`, `port`, `requestid`).
 *
 * The "container's network namespace" is 127.0.0.1: a pod port is mapped to the real process's port,
 * so the connection arrives on istiod's loopback as a real port-forward's does.
 */
import {createServer, type Server} from 'node:https'
import {connect, type Socket} from 'node:net'
import type {Duplex} from 'node:stream'
import {constants as zlibConstants, inflateSync} from 'node:zlib'
import {WebSocketServer, type WebSocket} from 'ws'
import {v4Channels} from '../cluster/portforward.js'

export interface KubeletStandIn {
  port: number
  close(): Promise<void>
}

const PROTOCOLS = ['v4.channel.k8s.io', 'v4.base64.channel.k8s.io']
const PATH = /^\/portForward\/([^/]+)\/([^/]+)$/

export async function startKubeletStandIn(o: {cert: string; key: string; target: (namespace: string, pod: string, port: number) => number | undefined}): Promise<KubeletStandIn> {
  const server: Server = createServer({cert: o.cert, key: o.key}, (_req, res) => {
    res.writeHead(404).end('only port-forward is served here\n')
  })
  const wss = new WebSocketServer({noServer: true, handleProtocols: (offered) => [...offered].find((p) => PROTOCOLS.includes(p)) ?? false})
  const sockets = new Set<Socket>()
  server.on('connection', (s: Socket) => {
    sockets.add(s)
    s.on('close', () => sockets.delete(s))
  })
  server.on('upgrade', (req, socket, head) => {
    socket.on('error', () => undefined)
    const url = new URL(req.url ?? '/', 'https://kubelet')
    const m = PATH.exec(url.pathname)
    if (/^spdy\/3\.1$/i.test(String(req.headers.upgrade ?? ''))) {
      // as httpstream.Handshake answers: the port comes later, in each stream's headers
      const offered = String(req.headers['x-stream-protocol-version'] ?? '')
        .split(',')
        .map((p) => p.trim())
      if (!m) return void socket.end('HTTP/1.1 404 Not Found\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
      if (!offered.includes(SPDY_PROTOCOL)) {
        return void socket.end(`HTTP/1.1 403 Forbidden\r\nX-Accepted-Stream-Protocol-Versions: ${SPDY_PROTOCOL}\r\nConnection: close\r\nContent-Length: 0\r\n\r\n`)
      }
      socket.write(`HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: ${SPDY_PROTOCOL}\r\n\r\n`)
      const [namespace, pod] = [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)]
      serveSpdy(socket, head, (port) => o.target(namespace, pod, port), pod)
      return
    }
    const ports = [...url.searchParams.getAll('port'), ...url.searchParams.getAll('ports')].flatMap((v) => v.split(',')).map((p) => Number(p.trim()))
    if (!m || ports.length === 0 || ports.some((p) => !(p >= 1 && p <= 65535))) {
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
      return
    }
    const [namespace, pod] = [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)]
    wss.handleUpgrade(req, socket, head, (ws) => serve(ws, ports, (port) => o.target(namespace, pod, port), pod))
  })
  await new Promise<void>((resolve, reject) => {
    server.once('error', reject)
    server.listen(0, '127.0.0.1', () => resolve())
  })
  return {
    port: (server.address() as {port: number}).port,
    close: () =>
      new Promise<void>((resolve) => {
        for (const c of wss.clients) c.terminate()
        for (const s of sockets) s.destroy()
        server.close(() => resolve())
      }),
  }
}

function serve(ws: WebSocket, ports: number[], target: (port: number) => number | undefined, pod: string): void {
  const conns = new Map<number, Socket>()
  const send = v4Channels(ws, (channel, payload) => conns.get(channel)?.write(payload))
  let open = ports.length
  const doneOne = () => {
    if (--open <= 0) ws.close(1000)
  }
  ports.forEach((port, i) => {
    const bytes = Buffer.alloc(2)
    bytes.writeUInt16LE(port)
    send(2 * i, bytes)
    send(2 * i + 1, bytes)
    const real = target(port)
    const refuse = (why: string) => {
      send(2 * i + 1, Buffer.from(forwardError(port, pod, why)))
      doneOne()
    }
    if (real === undefined) {
      refuse('connect: connection refused')
      return
    }
    const c = connect(real, '127.0.0.1')
    conns.set(2 * i, c)
    c.on('data', (d: Buffer) => send(2 * i, d))
    c.on('error', (err: NodeJS.ErrnoException) => {
      conns.delete(2 * i)
      refuse(dialError(port, err))
    })
    c.on('end', () => {
      if (conns.delete(2 * i)) doneOne()
    })
  })
  ws.on('close', () => {
    for (const c of conns.values()) c.destroy()
    conns.clear()
  })
}

function forwardError(port: number, pod: string, why: string): string {
  return `error forwarding port ${port} to pod ${pod}: failed to connect to localhost:${port} inside the pod: ${why}`
}

function dialError(port: number, err: NodeJS.ErrnoException): string {
  return `dial tcp4 127.0.0.1:${port}: ${err.code === 'ECONNREFUSED' ? 'connect: connection refused' : err.message}`
}

const SPDY_PROTOCOL = 'portforward.k8s.io'
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
 * The zlib dictionary of SPDY/3 header blocks (SPDY Protocol draft 3, section 2.6.10.1): HTTP header
 * names each after a 32-bit big-endian length, then a run of common values.
 */
const SPDY_DICTIONARY = Buffer.concat([
  ...(
    'options head post put delete trace accept accept-charset accept-encoding accept-language accept-ranges age allow authorization cache-control ' +
    'connection content-base content-encoding content-language content-length content-location content-md5 content-range content-type date etag expect ' +
    'expires from host if-match if-modified-since if-none-match if-range if-unmodified-since last-modified location max-forwards pragma proxy-authenticate ' +
    'proxy-authorization range referer retry-after server te trailer transfer-encoding upgrade user-agent vary via warning www-authenticate method get ' +
    'status 200-OK version HTTP/1.1 url public set-cookie keep-alive origin'
  )
    .split(' ')
    .map((w) => w.replace('200-OK', '200 OK'))
    .flatMap((w) => {
      const len = Buffer.alloc(4)
      len.writeUInt32BE(w.length)
      return [len, Buffer.from(w, 'latin1')]
    }),
  Buffer.from(
    '100101201202205206300302303304305306307402405406407408409410411412413414415416417502504505' +
      '203 Non-Authoritative Information204 No Content301 Moved Permanently400 Bad Request401 Unauthorized403 Forbidden404 Not Found' +
      '500 Internal Server Error501 Not Implemented503 Service UnavailableJan Feb Mar Apr May Jun Jul Aug Sept Oct Nov Dec' +
      ' 00:00:00 Mon, Tue, Wed, Thu, Fri, Sat, Sun, GMTchunked,text/html,image/png,image/jpg,image/gif,application/xml,' +
      'application/xhtml+xml,text/plain,text/javascript,publicprivatemax-age=gzip,deflate,sdchcharset=utf-8charset=iso-8859-1,utf-,*,enq=0.',
    'latin1',
  ),
])

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
    const out = inflateSync(this.input, {dictionary: SPDY_DICTIONARY, finishFlush: zlibConstants.Z_SYNC_FLUSH})
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
  conn?: Socket
}

/**
 * The server side of a SPDY/3.1 port-forward session: every stream the client opens is accepted with
 * an empty SYN_REPLY (as spdystream replies), streams are paired by `requestid`, and each complete
 * pair is a connection to the pod port; a refused one writes kubelet's error on the error stream and
 * resets both. Pings are answered; flow control is not used (spdystream does not use it either).
 */
function serveSpdy(socket: Duplex, head: Buffer, target: (port: number) => number | undefined, pod: string): void {
  let pending = head
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
  const reset = (stream: number | undefined) => {
    if (stream !== undefined) control(RST_STREAM, 0, Buffer.concat([u32(stream), u32(STATUS_CANCEL)]))
  }
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
  const fail = (p: SpdyPair, message: string) => {
    if (!pairs.has(p.id)) return
    if (p.error !== undefined) data(p.error, Buffer.from(message))
    reset(p.data)
    reset(p.error)
    forget(p)
  }
  const forward = (p: SpdyPair) => {
    const real = target(p.port)
    if (real === undefined) return fail(p, forwardError(p.port, pod, 'connect: connection refused'))
    const c = connect(real, '127.0.0.1')
    p.conn = c
    c.on('data', (d: Buffer) => data(p.data!, d))
    c.on('error', (err: NodeJS.ErrnoException) => fail(p, forwardError(p.port, pod, dialError(p.port, err))))
    c.on('end', () => {
      if (!pairs.has(p.id)) return
      // the pod closed: kubelet's PortForward returns and closes both streams
      data(p.data!, Buffer.alloc(0), true)
      data(p.error!, Buffer.alloc(0), true)
      forget(p)
    })
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
  const read = (chunk: Buffer) => {
    pending = pending.length === 0 ? chunk : Buffer.concat([pending, chunk])
    while (pending.length >= 8) {
      const len = pending.readUIntBE(5, 3)
      if (pending.length < 8 + len) break
      frame(pending.subarray(0, 8 + len))
      pending = pending.subarray(8 + len)
    }
  }
  socket.on('data', read)
  socket.on('close', () => {
    for (const p of [...pairs.values()]) forget(p)
  })
  if (pending.length > 0) {
    const first = pending
    pending = Buffer.alloc(0)
    read(first)
  }
}
