/**
 * A kubelet stand-in for the one kubelet feature meshvm and istioctl use: port-forward. The real
 * kube-apiserver authenticates and authorizes `pods/portforward`, looks up the Pod's Node, and proxies
 * the upgrade to `https://<node InternalIP>:<kubeletEndpoint>/portForward/NS/POD`; this server answers
 * there the way kubelet's streaming server does, in both of its protocols:
 *
 * - WebSocket (subprotocol `v4.channel.k8s.io`, what meshvm asks for; portforward/websocket.go): ports
 *   in the query, per port i channel 2i carries data and 2i+1 errors.
 * - SPDY/3.1 (`X-Stream-Protocol-Version: portforward.k8s.io`; portforward/httpstream.go). client-go
 *   (kubectl, istioctl) either upgrades to SPDY through the API server, or tunnels SPDY in a WebSocket
 *   (`SPDY/3.1+portforward.k8s.io`), which the API server unwraps and sends here as a SPDY upgrade: so
 *   SPDY is all a kubelet meets. Per forwarded connection the client opens an `error` and a `data`
 *   stream (headers `streamtype`, `port`, `requestid`).
 *
 * Both sessions are the simulated API server's (test/cluster/portforward.ts, spdy.ts); this stand-in's
 * own part is where a pod's port leads. The "container's network namespace" is 127.0.0.1: a pod port
 * is mapped to the real process's port, so the connection arrives on istiod's loopback as a real
 * port-forward's does.
 */
import {createServer, type Server} from 'node:https'
import {connect, type Socket} from 'node:net'
import {WebSocketServer} from 'ws'
import {serveWebSocketPortForward} from '../cluster/portforward.js'
import {serveSpdyPortForward} from '../cluster/spdy.js'

export interface KubeletStandIn {
  port: number
  close(): Promise<void>
}

const PROTOCOLS = ['v4.channel.k8s.io', 'v4.base64.channel.k8s.io']
const PATH = /^\/portForward\/([^/]+)\/([^/]+)$/
const SPDY_PROTOCOL = 'portforward.k8s.io'

export async function startKubeletStandIn(o: {cert: string; key: string; target: (namespace: string, pod: string, port: number) => number | undefined}): Promise<KubeletStandIn> {
  const server: Server = createServer({cert: o.cert, key: o.key}, (_req, res) => {
    res.writeHead(404).end('only port-forward is served here\n')
  })
  const wss = new WebSocketServer({noServer: true, handleProtocols: (offered) => [...offered].find((p) => PROTOCOLS.includes(p)) ?? false})
  /** A pod's port is istiod's port on 127.0.0.1 that `target` maps it to; none is kubelet's refusal. */
  const dialer = (namespace: string, pod: string) => (port: number) => {
    const real = o.target(namespace, pod, port)
    return real === undefined ? forwardError(port, pod, 'connect: connection refused') : connect(real, '127.0.0.1')
  }
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
      if (head.length > 0) socket.unshift(head)
      serveSpdyPortForward(socket, dialer(namespace, pod), (port, err) => forwardError(port, pod, dialError(port, err)))
      return
    }
    const ports = [...url.searchParams.getAll('port'), ...url.searchParams.getAll('ports')].flatMap((v) => v.split(',')).map((p) => Number(p.trim()))
    if (!m || ports.length === 0 || ports.some((p) => !(p >= 1 && p <= 65535))) {
      socket.end('HTTP/1.1 400 Bad Request\r\nConnection: close\r\nContent-Length: 0\r\n\r\n')
      return
    }
    const [namespace, pod] = [decodeURIComponent(m[1]!), decodeURIComponent(m[2]!)]
    wss.handleUpgrade(req, socket, head, (ws) => serveWebSocketPortForward(ws, ports, dialer(namespace, pod), (port, err) => forwardError(port, pod, dialError(port, err))))
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

function forwardError(port: number, pod: string, why: string): string {
  return `error forwarding port ${port} to pod ${pod}: failed to connect to localhost:${port} inside the pod: ${why}`
}

function dialError(port: number, err: NodeJS.ErrnoException): string {
  return `dial tcp4 127.0.0.1:${port}: ${err.code === 'ECONNREFUSED' ? 'connect: connection refused' : err.message}`
}
