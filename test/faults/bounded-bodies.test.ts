/**
 * Every body meshvm reads has the API client's bound (MESHVM_MAX_RESPONSE_BYTES) and a time-out
 * (issue #26): istiod's HTTP debug answer over a port-forward (with back-pressure on the forwarded
 * stream), xDS responses, and exec plugins (bounded by --request-timeout when they cannot prompt).
 */
import {appendFileSync} from 'node:fs'
import {EventEmitter} from 'node:events'
import {createServer, type Http2Server} from 'node:http2'
import type {AddressInfo} from 'node:net'
import type {Duplex} from 'node:stream'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {KubeClient} from '../../src/lib/kube/client.js'
import {loadKubeConfig} from '../../src/lib/kube/config.js'
import {runExecPlugin} from '../../src/lib/kube/exec.js'
import {PortForwardStream} from '../../src/lib/kube/portforward.js'
import {IstiodPool, IstiodReadError} from '../../src/lib/istiod/reader.js'
import {GrpcChannel, GrpcError} from '../../src/lib/grpc/client.js'
import {encodeMessage, GrpcCode} from '../../src/lib/grpc/framing.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'

const ISTIOD = 'istiod-7d4b9c6f8-x2k9p'
const LIMIT = 1024 * 1024

function logFault(fault: string, command = 'istiod reader'): void {
  const log = process.env.MESHVM_FAULT_LOG
  if (log) appendFileSync(log, JSON.stringify({command, fault, class: 'hangs and limits'}) + '\n')
}

describe('bounded bodies', () => {
  let cluster: TestCluster
  const saved = process.env.MESHVM_MAX_RESPONSE_BYTES
  beforeAll(async () => {
    cluster = await startCluster()
    process.env.MESHVM_MAX_RESPONSE_BYTES = String(LIMIT)
  })
  afterAll(async () => {
    if (saved === undefined) delete process.env.MESHVM_MAX_RESPONSE_BYTES
    else process.env.MESHVM_MAX_RESPONSE_BYTES = saved
    await cluster?.stop()
  })

  it('an endless /debug/syncz over a port-forward ends in a one-line error at the response limit, and the connection is closed', async () => {
    let written = 0
    const closed = new Promise<void>((resolve) => {
      // istiod's monitoring port answers with a body that never ends, written as fast as it is taken.
      cluster.mesh.portForward = () => (socket: Duplex) => {
        socket.on('error', () => undefined)
        socket.once('close', () => resolve())
        socket.once('data', () => {
          socket.write('HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nTransfer-Encoding: chunked\r\n\r\n')
          const chunk = `10000\r\n${'x'.repeat(0x10000)}\r\n`
          // One chunk per turn of the event loop (meshvm runs in this process too), waiting for
          // 'drain' when the forwarded connection pushes back.
          const pump = (): void => {
            if (socket.destroyed) return
            written += 0x10000
            if (socket.write(chunk)) setImmediate(pump)
            else socket.once('drain', pump)
          }
          pump()
        })
      }
    })
    const client = await KubeClient.create(loadKubeConfig({kubeconfig: cluster.kubeconfigPath}, {}), {timeoutMs: 30_000, maxRetries: 0})
    const pool = new IstiodPool(client, 'istio-system')
    const err = await pool
      .reader({kind: 'pod', name: ISTIOD, namespace: 'istio-system', monitoringPort: 15014})
      .syncz({timeoutMs: 60_000})
      .then(
        () => undefined,
        (e: unknown) => e,
      )
    logFault('endless /debug/syncz body over port-forward')
    pool.close()
    client.close()
    expect(err).toBeInstanceOf(IstiodReadError)
    const e = err as IstiodReadError
    expect(e.message).toBe(`istiod istio-system/${ISTIOD}: GET /debug/syncz over port-forward to :15014: the answer is larger than the limit (${LIMIT} bytes)`)
    expect(e.exit).toBe(1)
    await closed
    // What the pod could push before meshvm stopped is bounded by the limit and the buffers between.
    expect(written).toBeLessThan(LIMIT + 64 * 1024 * 1024)
  })

  it('the forwarded stream pushes back: the WebSocket pauses while the reader is behind, and resumes when it reads', () => {
    const ws = Object.assign(new EventEmitter(), {
      isPaused: false,
      readyState: 1,
      pause() {
        this.isPaused = true
      },
      resume() {
        this.isPaused = false
      },
      terminate() {},
    })
    const stream = new PortForwardStream(ws as never, 'pod p port 1')
    const frame = (payload: Buffer) => ws.emit('message', Buffer.concat([Buffer.from([0]), payload]), true)
    frame(Buffer.from([0x50, 0x00]))
    for (let i = 0; i < 8 && !ws.isPaused; i++) frame(Buffer.alloc(16 * 1024))
    logFault('port-forward data faster than it is read', 'port-forward')
    expect(ws.isPaused).toBe(true)
    while (stream.read() !== null);
    expect(ws.isPaused).toBe(false)
    stream.destroy()
  })

  describe('xDS', () => {
    let server: Http2Server
    let port = 0
    beforeAll(async () => {
      server = createServer()
      server.on('stream', (stream) => {
        stream.respond({':status': 200, 'content-type': 'application/grpc'}, {waitForTrailers: true})
        // One message larger than the limit, announced in its 5-byte header.
        stream.write(encodeMessage(new Uint8Array(LIMIT + 1)))
        stream.on('error', () => undefined)
      })
      await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
      port = (server.address() as AddressInfo).port
    })
    afterAll(() => new Promise<void>((r) => server.close(() => r())))

    it('a response message larger than the limit fails the call with RESOURCE_EXHAUSTED', async () => {
      const {connect} = await import('node:net')
      const channel = new GrpcChannel({authority: `127.0.0.1:${port}`, secure: false, createConnection: () => connect(port, '127.0.0.1')})
      const call = channel.call('/envoy.service.discovery.v3.AggregatedDiscoveryService/StreamAggregatedResources', {timeoutMs: 20_000, maxBytes: LIMIT})
      call.send(new Uint8Array(0))
      const err = await call.next().then(
        () => undefined,
        (e: unknown) => e,
      )
      logFault('xDS response past the limit', 'grpc')
      channel.close()
      expect(err).toBeInstanceOf(GrpcError)
      expect((err as GrpcError).code).toBe(GrpcCode.RESOURCE_EXHAUSTED)
      expect((err as GrpcError).message).toBe(`RESOURCE_EXHAUSTED: gRPC message of ${LIMIT + 1} bytes exceeds the limit of ${LIMIT}`)
    })
  })

  it('an exec plugin that cannot prompt is bounded by the request time-out', async () => {
    const saved = process.env.MESHVM_EXEC_TIMEOUT
    delete process.env.MESHVM_EXEC_TIMEOUT
    try {
      const err = await runExecPlugin({command: 'sleep', args: ['30'], apiVersion: 'client.authentication.k8s.io/v1', interactiveMode: 'Never'}, 'c', undefined, 300).then(
        () => undefined,
        (e: unknown) => e,
      )
      logFault('exec plugin that never answers', 'kube client')
      expect((err as Error).message).toBe('cannot get credentials for context "c": the credential plugin (exec: sleep) did not finish within 300ms and was stopped')
    } finally {
      if (saved !== undefined) process.env.MESHVM_EXEC_TIMEOUT = saved
    }
  })
})
