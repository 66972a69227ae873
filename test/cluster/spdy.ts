/**
 * kubectl's port-forward protocol, server side: SPDY/3.1 with `portforward.k8s.io` (kubelet
 * pkg/kubelet/cri/streaming/portforward/httpstream.go over k8s.io/apimachinery's spdy connection and
 * moby/spdystream). Enough of SPDY/3 for kubectl: SYN_STREAM (answered by SYN_REPLY), DATA with FIN,
 * RST_STREAM, PING (echoed), SETTINGS/WINDOW_UPDATE (ignored: spdystream does no flow control),
 * GOAWAY. Per forwarded connection kubectl opens an error stream and a data stream with headers
 * `streamtype`, `port` and `requestid`; once both are there the pod's port is dialled, and a
 * refusal is written on the error stream, as kubelet does.
 *
 * Header blocks are zlib-compressed with SPDY/3's dictionary, one zlib stream per direction: ours
 * through one deflater, sync-flushed per block; kubectl's inflated by re-inflating everything received
 * so far (a test server sees a handful of blocks).
 */
import {constants, createDeflate, inflateSync} from 'node:zlib'
import type {Duplex} from 'node:stream'
import {duplexPair, type PortAcceptor} from './portforward.js'

/** SPDY/3's header dictionary (draft 3, section 2.6.10.1), as in Go's spdy package (BSD licence). */
const DICTIONARY = Buffer.from(
  'AAAAB29wdGlvbnMAAAAEaGVhZAAAAARwb3N0AAAAA3B1dAAAAAZkZWxldGUAAAAFdHJhY2UAAAAGYWNjZXB0AAAADmFjY2VwdC1jaGFyc2V0AAAAD2FjY2VwdC1lbmNvZGluZwAAAA9hY2NlcHQtbGFuZ3VhZ2UAAAANYWNjZXB0LXJhbmdlcwAAAANhZ2UAAAAFYWxsb3cAAAANYXV0aG9yaXphdGlvbgAAAA1jYWNoZS1jb250cm9sAAAACmNvbm5lY3Rpb24AAAAMY29udGVudC1iYXNlAAAAEGNvbnRlbnQtZW5jb2RpbmcAAAAQY29udGVudC1sYW5ndWFnZQAAAA5jb250ZW50LWxlbmd0aAAAABBjb250ZW50LWxvY2F0aW9uAAAAC2NvbnRlbnQtbWQ1AAAADWNvbnRlbnQtcmFuZ2UAAAAMY29udGVudC10eXBlAAAABGRhdGUAAAAEZXRhZwAAAAZleHBlY3QAAAAHZXhwaXJlcwAAAARmcm9tAAAABGhvc3QAAAAIaWYtbWF0Y2gAAAARaWYtbW9kaWZpZWQtc2luY2UAAAANaWYtbm9uZS1tYXRjaAAAAAhpZi1yYW5nZQAAABNpZi11bm1vZGlmaWVkLXNpbmNlAAAADWxhc3QtbW9kaWZpZWQAAAAIbG9jYXRpb24AAAAMbWF4LWZvcndhcmRzAAAABnByYWdtYQAAABJwcm94eS1hdXRoZW50aWNhdGUAAAATcHJveHktYXV0aG9yaXphdGlvbgAAAAVyYW5nZQAAAAdyZWZlcmVyAAAAC3JldHJ5LWFmdGVyAAAABnNlcnZlcgAAAAJ0ZQAAAAd0cmFpbGVyAAAAEXRyYW5zZmVyLWVuY29kaW5nAAAAB3VwZ3JhZGUAAAAKdXNlci1hZ2VudAAAAAR2YXJ5AAAAA3ZpYQAAAAd3YXJuaW5nAAAAEHd3dy1hdXRoZW50aWNhdGUAAAAGbWV0aG9kAAAAA2dldAAAAAZzdGF0dXMAAAAGMjAwIE9LAAAAB3ZlcnNpb24AAAAISFRUUC8xLjEAAAADdXJsAAAABnB1YmxpYwAAAApzZXQtY29va2llAAAACmtlZXAtYWxpdmUAAAAGb3JpZ2luMTAwMTAxMjAxMjAyMjA1MjA2MzAwMzAyMzAzMzA0MzA1MzA2MzA3NDAyNDA1NDA2NDA3NDA4NDA5NDEwNDExNDEyNDEzNDE0NDE1NDE2NDE3NTAyNTA0NTA1MjAzIE5vbi1BdXRob3JpdGF0aXZlIEluZm9ybWF0aW9uMjA0IE5vIENvbnRlbnQzMDEgTW92ZWQgUGVybWFuZW50bHk0MDAgQmFkIFJlcXVlc3Q0MDEgVW5hdXRob3JpemVkNDAzIEZvcmJpZGRlbjQwNCBOb3QgRm91bmQ1MDAgSW50ZXJuYWwgU2VydmVyIEVycm9yNTAxIE5vdCBJbXBsZW1lbnRlZDUwMyBTZXJ2aWNlIFVuYXZhaWxhYmxlSmFuIEZlYiBNYXIgQXByIE1heSBKdW4gSnVsIEF1ZyBTZXB0IE9jdCBOb3YgRGVjIDAwOjAwOjAwIE1vbiwgVHVlLCBXZWQsIFRodSwgRnJpLCBTYXQsIFN1biwgR01UY2h1bmtlZCx0ZXh0L2h0bWwsaW1hZ2UvcG5nLGltYWdlL2pwZyxpbWFnZS9naWYsYXBwbGljYXRpb24veG1sLGFwcGxpY2F0aW9uL3hodG1sK3htbCx0ZXh0L3BsYWluLHRleHQvamF2YXNjcmlwdCxwdWJsaWNwcml2YXRlbWF4LWFnZT1nemlwLGRlZmxhdGUsc2RjaGNoYXJzZXQ9dXRmLThjaGFyc2V0PWlzby04ODU5LTEsdXRmLSwqLGVucT0wLg==',
  'base64',
)

const SYN_STREAM = 1
const SYN_REPLY = 2
const RST_STREAM = 3
const PING = 6
const GOAWAY = 7
const FLAG_FIN = 1

interface Stream {
  id: number
  headers: Record<string, string>
  /** Bytes kubectl sent on this stream. */
  onData?: (data: Buffer) => void
  onFin?: () => void
  closedByUs: boolean
}

export function serveSpdyPortForward(socket: Duplex, target: {namespace: string; name: string; uid: string}, connect: (port: number) => PortAcceptor | undefined): void {
  let buffer = Buffer.alloc(0)
  let compressedIn = Buffer.alloc(0)
  let inflatedSoFar = 0
  const streams = new Map<number, Stream>()
  const pairs = new Map<string, {data?: Stream; error?: Stream}>()

  const write = (frame: Buffer) => {
    inOrder(() => {
      if (!socket.destroyed) socket.write(frame)
    })
  }
  const control = (type: number, flags: number, body: Buffer) => {
    const head = Buffer.alloc(8)
    head.writeUInt16BE(0x8003, 0)
    head.writeUInt16BE(type, 2)
    head.writeUInt32BE(body.length, 4)
    head[4] = flags
    write(Buffer.concat([head, body]))
  }
  const data = (id: number, payload: Buffer, fin: boolean) => {
    const head = Buffer.alloc(8)
    head.writeUInt32BE(id & 0x7fffffff, 0)
    head.writeUInt32BE(payload.length, 4)
    head[4] = fin ? FLAG_FIN : 0
    write(Buffer.concat([head, payload]))
  }
  // One zlib stream (with SPDY's dictionary) for every header block we send, each ended by a sync
  // flush, as Go's spdy framer writes them; blocks and frames go out in order through one queue.
  const deflater = createDeflate({dictionary: DICTIONARY})
  let queue: Promise<void> = Promise.resolve()
  const headerBlock = (): Promise<Buffer> =>
    new Promise((resolve) => {
      const chunks: Buffer[] = []
      const onData = (c: Buffer) => chunks.push(c)
      deflater.on('data', onData)
      deflater.write(Buffer.alloc(4)) // zero name/value pairs
      deflater.flush(constants.Z_SYNC_FLUSH, () => {
        deflater.off('data', onData)
        resolve(Buffer.concat(chunks))
      })
    })
  const inOrder = (fn: () => Promise<void> | void) => {
    queue = queue.then(fn, fn)
  }
  const readHeaders = (block: Buffer): Record<string, string> => {
    compressedIn = Buffer.concat([compressedIn, block])
    const all = inflateSync(compressedIn, {dictionary: DICTIONARY, finishFlush: constants.Z_SYNC_FLUSH})
    const raw = all.subarray(inflatedSoFar)
    inflatedSoFar = all.length
    const headers: Record<string, string> = {}
    let pos = 4
    const count = raw.readUInt32BE(0)
    for (let i = 0; i < count; i++) {
      const nl = raw.readUInt32BE(pos)
      const name = raw.subarray(pos + 4, pos + 4 + nl).toString('utf8')
      pos += 4 + nl
      const vl = raw.readUInt32BE(pos)
      headers[name] = raw.subarray(pos + 4, pos + 4 + vl).toString('utf8')
      pos += 4 + vl
    }
    return headers
  }
  const finish = (s: Stream) => {
    if (s.closedByUs) return
    s.closedByUs = true
    data(s.id, Buffer.alloc(0), true)
  }

  const onPair = (pair: {data: Stream; error: Stream}) => {
    const port = Number(pair.data.headers.port)
    const acceptor = Number.isInteger(port) ? connect(port) : undefined
    if (!acceptor) {
      data(
        pair.error.id,
        Buffer.from(
          `error forwarding port ${port} to pod ${target.name}, uid : failed to execute portforward in network namespace "/var/run/netns/cni-${target.uid}": failed to connect to localhost:${port} inside namespace "${target.uid}", IPv4: dial tcp4 127.0.0.1:${port}: connect: connection refused IPv6 dial tcp6 [::1]:${port}: connect: connection refused `,
        ),
        false,
      )
      finish(pair.error)
      finish(pair.data)
      return
    }
    const [ours, theirs] = duplexPair()
    ours.on('data', (chunk: Buffer) => data(pair.data.id, chunk, false))
    ours.on('end', () => {
      finish(pair.data)
      finish(pair.error)
    })
    ours.on('error', () => undefined)
    pair.data.onData = (chunk) => ours.write(chunk)
    pair.data.onFin = () => ours.end()
    acceptor(theirs)
  }

  const onFrame = (frame: Buffer) => {
    if (frame[0]! & 0x80) {
      const type = frame.readUInt16BE(2)
      const flags = frame[4]!
      const body = frame.subarray(8)
      if (type === SYN_STREAM) {
        const id = body.readUInt32BE(0) & 0x7fffffff
        const headers = readHeaders(body.subarray(10))
        const s: Stream = {id, headers, closedByUs: false}
        streams.set(id, s)
        // apimachinery's spdy connection replies to every stream it accepts.
        const idBytes = Buffer.from(body.subarray(0, 4))
        const block = headerBlock()
        inOrder(async () => {
          const b = await block
          const head = Buffer.alloc(8)
          head.writeUInt16BE(0x8003, 0)
          head.writeUInt16BE(SYN_REPLY, 2)
          head.writeUInt32BE(4 + b.length, 4)
          if (!socket.destroyed) socket.write(Buffer.concat([head, idBytes, b]))
        })
        const key = headers.requestid ?? ''
        const pair = pairs.get(key) ?? {}
        if (headers.streamtype === 'data') pair.data = s
        else if (headers.streamtype === 'error') pair.error = s
        pairs.set(key, pair)
        if (flags & FLAG_FIN) s.onFin?.()
        if (pair.data && pair.error) {
          pairs.delete(key)
          onPair(pair as {data: Stream; error: Stream})
        }
      } else if (type === RST_STREAM) {
        streams.get(body.readUInt32BE(0) & 0x7fffffff)?.onFin?.()
      } else if (type === PING) {
        control(PING, 0, body)
      } else if (type === GOAWAY) {
        socket.end()
      }
      return
    }
    const id = frame.readUInt32BE(0) & 0x7fffffff
    const s = streams.get(id)
    const payload = frame.subarray(8)
    if (s && payload.length > 0) s.onData?.(payload)
    if (s && frame[4]! & FLAG_FIN) s.onFin?.()
  }

  socket.on('data', (chunk: Buffer) => {
    buffer = Buffer.concat([buffer, chunk])
    while (buffer.length >= 8) {
      const length = buffer.readUInt32BE(4) & 0xffffff
      if (buffer.length < 8 + length) break
      const frame = buffer.subarray(0, 8 + length)
      buffer = buffer.subarray(8 + length)
      try {
        onFrame(frame)
      } catch {
        socket.destroy()
        return
      }
    }
  })
  socket.on('error', () => undefined)
  socket.on('close', () => deflater.close())
}
