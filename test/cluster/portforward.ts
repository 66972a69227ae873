/**
 * `pods/portforward` as kube-apiserver + kubelet serve it over WebSocket
 * (kubelet pkg/kubelet/cri/streaming/portforward/websocket.go, wsstream in k8s.io/apimachinery):
 *
 * - `GET /api/v1/namespaces/NS/pods/NAME/portforward?ports=P[,P2]` with `Upgrade: websocket`;
 *   subprotocols `v4.channel.k8s.io` (binary), `v4.base64.channel.k8s.io` (text), or none (binary);
 * - authorized like any request from its method: a GET is verb `get` on `pods/portforward`; from
 *   Kubernetes 1.35 (gate AuthorizePodWebsocketUpgradeCreatePermission) the upgrade also needs `create`;
 * - per port i, channel 2i carries data and 2i+1 errors; every message starts with its channel byte;
 *   the server first writes the port (2 bytes, little-endian) on both channels of each port;
 * - the connection to the pod's port is dialled at once; when nothing listens, the error channel
 *   gets kubelet's "error forwarding port ..." text and the socket closes.
 *
 * kubectl's forms: plain SPDY/3.1 (`POST`, `Upgrade: SPDY/3.1`, `X-Stream-Protocol-Version:
 * portforward.k8s.io`; authorized as `create`) and SPDY tunnelled in a WebSocket's binary messages
 * (subprotocol `SPDY/3.1+portforward.k8s.io`, kubectl 1.30+'s first try) are served by spdy.ts.
 */
import type {IncomingMessage} from 'node:http'
import type {Socket} from 'node:net'
import {Duplex} from 'node:stream'
import {WebSocketServer, type WebSocket} from 'ws'
import type {Attributes, UserInfo} from './auth.js'
import {serveSpdyPortForward} from './spdy.js'
import {ApiError, badRequest, notFound, statusBody} from './status.js'

/** Accepts one TCP connection to a pod's port (a simulated container listening there). */
export type PortAcceptor = (socket: Duplex) => void

export interface PortForwardContext {
  user: UserInfo | undefined
  authorize(attrs: Attributes): boolean
  forbidden(attrs: Attributes): ApiError
  podExists(namespace: string, name: string): {uid: string} | undefined
  /** The listener on a pod's port, or undefined (connection refused). */
  connect(namespace: string, pod: string, port: number): PortAcceptor | undefined
  /** Kubernetes minor version the server reports (1.35+ adds the create check). */
  minor: number
}

const PROTOCOLS = ['v4.channel.k8s.io', 'v4.base64.channel.k8s.io']
const SPDY_TUNNEL = 'SPDY/3.1+portforward.k8s.io'
const SPDY_TUNNEL_TOKEN = 'meshvm-spdy-tunnel'
const PATH = /^\/api\/v1\/namespaces\/([^/]+)\/pods\/([^/]+)\/portforward$/

const wss = new WebSocketServer({
  noServer: true,
  // wsstream picks the first protocol it knows from the client's list; no header means binary.
  handleProtocols: (offered) => (offered.has(SPDY_TUNNEL_TOKEN) ? SPDY_TUNNEL : ([...offered].find((p) => PROTOCOLS.includes(p)) ?? false)),
})

/** A pair of connected Duplex streams (node:stream's duplexPair is Node 22+). */
function duplexPair(): [Duplex, Duplex] {
  let a!: Duplex
  let b!: Duplex
  const make = (other: () => Duplex) =>
    new Duplex({
      read() {},
      write(chunk: Buffer, _enc, cb) {
        other().push(chunk)
        cb()
      },
      final(cb) {
        other().push(null)
        cb()
      },
      destroy(err, cb) {
        const o = other()
        if (!o.destroyed) o.destroy()
        cb(err)
      },
    })
  a = make(() => b)
  b = make(() => a)
  return [a, b]
}

/** A WebSocket's binary messages as a byte stream (the SPDY tunnel). */
function webSocketStream(ws: WebSocket): Duplex {
  const stream = new Duplex({
    read() {},
    write(chunk: Buffer, _enc, cb) {
      if (ws.readyState !== ws.OPEN) return cb()
      ws.send(chunk, {binary: true}, () => cb())
    },
    final(cb) {
      ws.close(1000)
      cb()
    },
    destroy(err, cb) {
      if (ws.readyState === ws.OPEN) ws.close(1000)
      cb(err)
    },
  })
  ws.on('message', (data: Buffer) => stream.push(data))
  ws.on('close', () => stream.push(null))
  ws.on('error', () => stream.destroy())
  return stream
}

/** kubelet's text for a pod port nothing listens on (containerd dials it inside the pod's network namespace). */
function refusal(port: number, pod: string, uid: string): string {
  return `error forwarding port ${port} to pod ${pod}, uid : failed to execute portforward in network namespace "/var/run/netns/cni-${uid}": failed to connect to localhost:${port} inside namespace "${uid}", IPv4: dial tcp4 127.0.0.1:${port}: connect: connection refused IPv6 dial tcp6 [::1]:${port}: connect: connection refused `
}

function writeError(socket: Socket, err: ApiError): void {
  const body = JSON.stringify(statusBody(err))
  const reason = {400: 'Bad Request', 401: 'Unauthorized', 403: 'Forbidden', 404: 'Not Found'}[err.code] ?? 'Error'
  socket.end(`HTTP/1.1 ${err.code} ${reason}\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\nConnection: close\r\n\r\n${body}`)
}

/** Returns the HTTP status the upgrade got (101 when it succeeded). */
export function handlePortForward(req: IncomingMessage, socket: Socket, head: Buffer, ctx: PortForwardContext): number {
  socket.on('error', () => undefined)
  const url = new URL(req.url ?? '/', 'https://test')
  const m = PATH.exec(url.pathname)
  const fail = (err: ApiError) => {
    writeError(socket, err)
    return err.code
  }
  if (!m) return fail(new ApiError(404, 'NotFound', 'the server could not find the requested resource'))
  if (!ctx.user) return fail(new ApiError(401, 'Unauthorized', 'Unauthorized'))
  const namespace = decodeURIComponent(m[1]!)
  const name = decodeURIComponent(m[2]!)
  const verbs = req.method === 'GET' ? (ctx.minor >= 35 ? ['get', 'create'] : ['get']) : req.method === 'POST' ? ['create'] : []
  if (verbs.length === 0) return fail(new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource'))
  for (const verb of verbs) {
    const attrs: Attributes = {verb, group: '', resource: 'pods', subresource: 'portforward', namespace, name}
    if (!ctx.authorize(attrs)) return fail(ctx.forbidden(attrs))
  }
  const pod = ctx.podExists(namespace, name)
  if (!pod) return fail(notFound('', 'pods', name))
  // The connection to a pod port: the simulated container's listener, or kubelet's refusal.
  const openPort = (port: number): Duplex | string => {
    const acceptor = ctx.connect(namespace, name, port)
    if (!acceptor) return refusal(port, name, pod.uid)
    const [ours, theirs] = duplexPair()
    acceptor(theirs)
    return ours
  }
  // kubectl 1.32 asks for SPDY first tunnelled in a WebSocket (subprotocol SPDY/3.1+portforward.k8s.io),
  // then as a plain SPDY upgrade (POST, X-Stream-Protocol-Version); with SPDY the ports travel in each
  // stream's headers, not in the query.
  const upgrade = String(req.headers.upgrade ?? '').toLowerCase()
  const streamProtocols = String(req.headers['x-stream-protocol-version'] ?? '')
    .split(',')
    .map((p) => p.trim())
  if (req.method === 'POST' && upgrade === 'spdy/3.1') {
    // Plain SPDY (kubectl's fallback): the ports come in each stream's headers.
    if (!streamProtocols.includes('portforward.k8s.io'))
      return fail(badRequest(`unable to upgrade connection: unable to negotiate protocol: client supports ${JSON.stringify(streamProtocols)}, server supports ["portforward.k8s.io"]`))
    socket.write('HTTP/1.1 101 Switching Protocols\r\nConnection: Upgrade\r\nUpgrade: SPDY/3.1\r\nX-Stream-Protocol-Version: portforward.k8s.io\r\n\r\n')
    if (head.length > 0) socket.unshift(head)
    serveSpdyPortForward(socket, openPort)
    return 101
  }
  if (
    String(req.headers['sec-websocket-protocol'] ?? '')
      .split(',')
      .map((p) => p.trim())
      .includes(SPDY_TUNNEL)
  ) {
    // SPDY tunnelled in a WebSocket (kubectl 1.30+'s first try; apiserver PortForwardWebsockets): the
    // WebSocket's binary messages carry the SPDY byte stream.
    // The ws package refuses '/' and '+' in a subprotocol (not RFC 7230 token characters); Go's
    // gorilla/websocket, which kube-apiserver uses, accepts them. Offer ws a token and answer the real name.
    req.headers['sec-websocket-protocol'] = SPDY_TUNNEL_TOKEN
    wss.handleUpgrade(req, socket, head, (ws) => serveSpdyPortForward(webSocketStream(ws), openPort))
    return 101
  }
  // kubelet's portforward.NewV4Options: `ports` values, each comma-separated, each 1..65535.
  const ports: number[] = []
  for (const value of url.searchParams.getAll('ports')) {
    for (const p of value.split(',')) {
      const n = /^\d+$/.test(p.trim()) ? Number(p.trim()) : Number.NaN
      if (!(n >= 1 && n <= 65535)) return fail(badRequest(`unable to parse "${p}" as a port: ${p.trim() === '' ? 'invalid syntax' : 'port must be > 0 and <= 65535'}`))
      ports.push(n)
    }
  }
  if (ports.length === 0) return fail(badRequest('at least 1 port must be specified'))
  if (String(req.headers.upgrade ?? '').toLowerCase() !== 'websocket') return fail(badRequest('unable to upgrade connection: expected a WebSocket upgrade'))
  const offered = String(req.headers['sec-websocket-protocol'] ?? '')
    .split(',')
    .map((s) => s.trim())
    .filter(Boolean)
  if (offered.length > 0 && !offered.some((p) => PROTOCOLS.includes(p))) {
    return fail(badRequest(`unable to upgrade connection: requested protocols ${JSON.stringify(offered)} are not supported`))
  }
  wss.handleUpgrade(req, socket, head, (ws) => serveWebSocketPortForward(ws, ports, openPort))
  return 101
}

/**
 * kubelet's WebSocket channel framing (wsstream): in v4.channel.k8s.io a message is its channel byte
 * and the payload; in v4.base64.channel.k8s.io, the channel as a digit and the payload in base64.
 * `onData` gets each non-empty payload the client writes; the function returned writes to a channel
 * while the socket is open. Socket errors are dropped: the client sees the connection end.
 */
function v4Channels(ws: WebSocket, onData: (channel: number, payload: Buffer) => void): (channel: number, data: Buffer) => void {
  const base64 = ws.protocol === 'v4.base64.channel.k8s.io'
  ws.on('message', (data: Buffer, isBinary: boolean) => {
    let channel: number
    let payload: Buffer
    if (base64 && !isBinary) {
      const text = data.toString('utf8')
      channel = text.charCodeAt(0) - 48
      payload = Buffer.from(text.slice(1), 'base64')
    } else {
      if (data.length === 0) return
      channel = data[0]!
      payload = data.subarray(1)
    }
    if (payload.length > 0) onData(channel, payload)
  })
  ws.on('error', () => undefined)
  return (channel, data) => {
    if (ws.readyState !== ws.OPEN) return
    if (base64) ws.send(String.fromCharCode(48 + channel) + data.toString('base64'))
    else ws.send(Buffer.concat([Buffer.from([channel]), data]))
  }
}

/**
 * kubelet's WebSocket port-forward session (portforward/websocket.go): per port i, channel 2i carries
 * data and 2i+1 errors, and both first carry the port (2 bytes, little-endian). `open(port)` is the
 * connection to the pod's port, or kubelet's error text when nothing listens there; an error on an open
 * connection is written as `errorText`. The socket closes once every port's connection has ended.
 */
export function serveWebSocketPortForward(
  ws: WebSocket,
  ports: number[],
  open: (port: number) => Duplex | string,
  errorText: (port: number, err: NodeJS.ErrnoException) => string = (_port, err) => err.message,
): void {
  const conns = new Map<number, Duplex>()
  const send = v4Channels(ws, (channel, payload) => conns.get(channel)?.write(payload))
  let left = ports.length
  const doneOne = () => {
    if (--left <= 0) ws.close(1000)
  }
  for (const [i, port] of ports.entries()) {
    const portBytes = Buffer.alloc(2)
    portBytes.writeUInt16LE(port)
    send(2 * i, portBytes)
    send(2 * i + 1, portBytes)
    // The error arrives after kubelet's dial attempt, not in the same write as the port frames
    // (the Python client's select loop does not see frames buffered together with earlier ones).
    const refuse = (message: string) =>
      setTimeout(() => {
        send(2 * i + 1, Buffer.from(message))
        setTimeout(doneOne, 20)
      }, 20)
    const conn = open(port)
    if (typeof conn === 'string') {
      refuse(conn)
      continue
    }
    conns.set(2 * i, conn)
    conn.on('data', (chunk: Buffer) => send(2 * i, chunk))
    conn.on('error', (err: NodeJS.ErrnoException) => {
      if (conns.delete(2 * i)) refuse(errorText(port, err))
    })
    conn.on('end', () => {
      if (conns.delete(2 * i)) doneOne()
    })
  }
  ws.on('close', () => {
    for (const c of conns.values()) c.destroy()
    conns.clear()
  })
}
