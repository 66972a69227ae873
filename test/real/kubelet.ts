/**
 * A kubelet stand-in for the one kubelet feature meshvm uses: port-forward. The real kube-apiserver
 * authenticates and authorizes `pods/portforward`, looks up the Pod's Node, and proxies the WebSocket
 * upgrade (subprotocol `v4.channel.k8s.io`) to `https://<node InternalIP>:<kubeletEndpoint>/portForward/NS/POD?port=P`;
 * this server answers there the way kubelet's streaming server does (portforward/websocket.go): per
 * port i, channel 2i carries data and 2i+1 errors, both first carry the port (2 bytes, little-endian).
 * The "container's network namespace" is 127.0.0.1: a pod port is mapped to the real process's port,
 * so the connection arrives on istiod's loopback as a real port-forward's does.
 */
import {createServer, type Server} from 'node:https'
import {connect, type Socket} from 'node:net'
import {WebSocketServer, type WebSocket} from 'ws'

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
  const base64 = ws.protocol === 'v4.base64.channel.k8s.io'
  const send = (channel: number, data: Buffer) => {
    if (ws.readyState !== ws.OPEN) return
    if (base64) ws.send(String.fromCharCode(48 + channel) + data.toString('base64'))
    else ws.send(Buffer.concat([Buffer.from([channel]), data]))
  }
  const conns = new Map<number, Socket>()
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
      send(2 * i + 1, Buffer.from(`error forwarding port ${port} to pod ${pod}: failed to connect to localhost:${port} inside the pod: ${why}`))
      doneOne()
    }
    if (real === undefined) return refuse('connect: connection refused')
    const c = connect(real, '127.0.0.1')
    conns.set(2 * i, c)
    c.on('data', (d: Buffer) => send(2 * i, d))
    c.on('error', (err: NodeJS.ErrnoException) => {
      conns.delete(2 * i)
      refuse(`dial tcp4 127.0.0.1:${port}: ${err.code === 'ECONNREFUSED' ? 'connect: connection refused' : err.message}`)
    })
    c.on('end', () => {
      if (conns.delete(2 * i)) doneOne()
    })
  })
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
    const c = conns.get(channel)
    if (c && payload.length > 0) c.write(payload)
  })
  ws.on('close', () => {
    for (const c of conns.values()) c.destroy()
    conns.clear()
  })
  ws.on('error', () => undefined)
}
