/**
 * Port-forward to a pod through the API server (`pods/portforward`), as a Node Duplex: no local
 * listening port. The WebSocket channel protocol is the one kube-apiserver/kubelet serve and
 * @kubernetes/client-node's PortForward and the Python client's portforward speak
 * (kubelet pkg/kubelet/cri/streaming/portforward/websocket.go):
 *
 * - `GET /api/v1/namespaces/NS/pods/POD/portforward?ports=PORT`, subprotocol `v4.channel.k8s.io`;
 * - every binary message starts with its channel: 0 = data, 1 = errors (for the first port);
 * - the first message of each channel is the port number (2 bytes, little-endian), skipped here;
 * - what we send on channel 0 reaches the pod's port; text on channel 1 is kubelet's error
 *   ("error forwarding port ... connection refused"), after which the stream ends.
 *
 * RBAC: the upgrade is a GET, authorized as `get` on pods/portforward; Kubernetes 1.35+ also requires
 * `create` (gate AuthorizePodWebsocketUpgradeCreatePermission). Each Duplex is one TCP connection.
 */
import {Duplex} from 'node:stream'
import {WebSocket} from 'ws'
import {ExitCode, MeshvmError} from '../errors.js'
import type {KubeClient} from './client.js'
import {errorText, isRetryableStatus} from './transport.js'
import {translateHttpError, translateNetworkError} from './errors.js'
import {Resources, resourcePath} from './resources.js'
import {sleep} from '../util/sleep.js'

const PORTFORWARD_PROTOCOL = 'v4.channel.k8s.io'

/** The RBAC reading istiod needs (port-forward, and a token for the xDS path), with the lines to check it. */
export function portForwardHint(namespace: string): string {
  return `reading istiod needs verbs get and create on pods/portforward (create is checked from Kubernetes 1.35) and, for the xDS path, create on serviceaccounts/token, in namespace ${namespace} (kubectl auth can-i create pods/portforward -n ${namespace}; kubectl auth can-i create serviceaccounts/token -n ${namespace}); a cluster admin can grant them with: kubectl create role meshvm-istiod -n ${namespace} --verb=get,create --resource=pods/portforward,serviceaccounts/token && kubectl create rolebinding meshvm-istiod -n ${namespace} --role=meshvm-istiod --user=YOU`
}

/** Kubelet's refusal on the error channel (nothing listens on the port, or the pod is gone). */
export class PortForwardRefused extends MeshvmError {
  constructor(
    readonly target: string,
    readonly detail: string,
  ) {
    super(`port-forward to ${target} refused: ${detail}`, {exit: ExitCode.UNREACHABLE, code: 'PortForwardRefused'})
    this.name = 'PortForwardRefused'
  }

  /** Kubelet's text without the network-namespace noise: `dial tcp4 127.0.0.1:15014: connect: connection refused`. */
  get short(): string {
    return /IPv4: (.*?)(?: IPv6 |$)/.exec(this.detail)?.[1]?.trim() ?? this.detail
  }
}

/** A forwarded connection. It has the few net.Socket methods http/tls/http2 call on their sockets. */
export class PortForwardStream extends Duplex {
  /** The channels whose first message (it starts with the port number) has arrived. */
  private readonly started = new Set<number>()
  private errorText = ''

  constructor(
    private readonly ws: WebSocket,
    readonly target: string,
  ) {
    // The channel protocol has no half-close (ending the writable side sends nothing): the connection
    // ends when the WebSocket closes.
    super({allowHalfOpen: false})
    ws.on('message', (data: Buffer, isBinary: boolean) => this.onMessage(data, isBinary))
    ws.on('close', () => this.onClose())
    ws.on('error', (err) => this.destroy(err))
  }

  private onMessage(data: Buffer, isBinary: boolean): void {
    if (!isBinary || data.length === 0) return
    const channel = data[0]!
    let payload = data.subarray(1)
    if (!this.started.has(channel)) {
      this.started.add(channel)
      payload = payload.subarray(2)
    }
    if (channel === 0) {
      // Back-pressure: while the reader is behind, the WebSocket (and so the TCP connection to the
      // API server) stops reading, instead of buffering whatever the pod sends.
      if (payload.length > 0 && !this.push(payload)) this.ws.pause()
    } else if (channel === 1) {
      // Kubelet's error is one line; a channel that never ends is not kept.
      if (this.errorText.length < 64 * 1024) this.errorText += payload.toString('utf8')
    }
  }

  private onClose(): void {
    if (this.errorText.trim() !== '') this.destroy(new PortForwardRefused(this.target, this.errorText.trim()))
    else this.push(null)
  }

  override _read(): void {
    if (this.ws.isPaused) this.ws.resume()
  }

  override _write(chunk: Buffer, _enc: BufferEncoding, cb: (err?: Error | null) => void): void {
    if (this.ws.readyState !== WebSocket.OPEN) {
      cb(this.errorText ? new PortForwardRefused(this.target, this.errorText.trim()) : Object.assign(new Error('port-forward closed'), {code: 'ECONNRESET'}))
      return
    }
    this.ws.send(Buffer.concat([Buffer.from([0]), chunk]), {binary: true}, (err) => cb(err ?? null))
  }

  override _destroy(err: Error | null, cb: (err?: Error | null) => void): void {
    if (this.ws.readyState === WebSocket.OPEN || this.ws.readyState === WebSocket.CONNECTING) this.ws.terminate()
    cb(err)
  }

  // net.Socket's knobs, as no-ops: there is no TCP socket of ours to tune.
  setTimeout(_ms: number, cb?: () => void): this {
    if (cb) this.once('timeout', cb)
    return this
  }

  setNoDelay(): this {
    return this
  }

  setKeepAlive(): this {
    return this
  }

  ref(): this {
    return this
  }

  unref(): this {
    return this
  }
}

/**
 * Opens one forwarded connection to `pod:port`. Rejects with the API server's error (403 with the
 * RBAC hint, 404 for a missing pod) or a network error; a refused port shows up as a
 * PortForwardRefused error on the stream, once kubelet reports it.
 */
export async function openPortForward(client: KubeClient, options: {namespace: string; pod: string; port: number; timeoutMs: number}): Promise<PortForwardStream> {
  // Transient API server faults are retried as KubeClient retries reads (its retryDelay: jittered
  // backoff or Retry-After, its number of retries), but only within the time-out: the caller's
  // deadline is never exceeded.
  const deadline = Date.now() + options.timeoutMs
  const path = resourcePath(Resources.pods, {namespace: options.namespace, name: options.pod, subresource: 'portforward'})
  for (let attempt = 0; ; attempt++) {
    await client.freshCredentials()
    const opened = await openOnce(client, path, {...options, timeoutMs: Math.max(1, deadline - Date.now())})
    if (opened instanceof PortForwardStream) return opened
    const delay = attempt < client.options.maxRetries ? client.retryDelay(attempt, opened.retryAfter) : undefined
    if (delay === undefined || Date.now() + delay >= deadline) throw opened.error
    client.options.onRetry?.({attempt: attempt + 1, delayMs: delay, reason: opened.reason, method: 'GET', path})
    await sleep(delay)
  }
}

/** A failed upgrade worth another try (429, 5xx, a reset connection). */
interface TransientFailure {
  error: MeshvmError
  reason: string
  retryAfter?: string | string[]
}

/** One upgrade: the stream, a transient failure to retry, or (rejected) any other failure. */
function openOnce(client: KubeClient, path: string, options: {namespace: string; pod: string; port: number; timeoutMs: number}): Promise<PortForwardStream | TransientFailure> {
  const {url, headers, agent, describe} = client.upgradeTarget(path, {ports: options.port})
  url.protocol = url.protocol === 'http:' ? 'ws:' : 'wss:'
  const target = `pod ${options.namespace}/${options.pod} port ${options.port}`
  const started = Date.now()
  const report = (status: number) => client.options.onResponse?.({method: 'GET', path: `${path}?ports=${options.port}`, status, ms: Date.now() - started, bytes: 0})
  return new Promise((resolve, reject) => {
    const ws = new WebSocket(url, [PORTFORWARD_PROTOCOL], {
      headers,
      // The client's own agent opens the connection: its TLS policy (CA, client certificate,
      // tls-server-name, proxy; kube/tls.ts), verified before the upgrade request is written.
      agent,
      handshakeTimeout: options.timeoutMs,
      perMessageDeflate: false,
      followRedirects: false,
    })
    let settled = false
    ws.on('unexpected-response', (_req, res) => {
      errorText(res, (text) => {
        settled = true
        const status = res.statusCode ?? 0
        report(status)
        const err = translateHttpError(describe, status, text)
        if (isRetryableStatus(status)) {
          resolve({error: err, reason: `HTTP ${status}`, retryAfter: res.headers['retry-after']})
        } else {
          reject(err.status === 403 ? new MeshvmError(err.message, {exit: err.exit, code: err.code, hints: [portForwardHint(options.namespace)]}) : err)
        }
        ws.terminate()
      })
    })
    ws.once('open', () => {
      settled = true
      report(101)
      if (ws.protocol !== PORTFORWARD_PROTOCOL) {
        ws.terminate()
        reject(
          new MeshvmError(`port-forward to ${target}: the API server chose subprotocol ${JSON.stringify(ws.protocol)}, expected ${PORTFORWARD_PROTOCOL}`, {
            exit: ExitCode.UNREACHABLE,
            code: 'PortForwardProtocol',
          }),
        )
        return
      }
      resolve(new PortForwardStream(ws, target))
    })
    ws.once('error', (err: NodeJS.ErrnoException) => {
      if (settled) return
      settled = true
      const timedOut = /timed out|timeout/i.test(err.message)
      const translated = translateNetworkError(describe, timedOut ? Object.assign(err, {code: 'MESHVM_TIMEOUT'}) : err, options.timeoutMs)
      const reset = err.code === 'ECONNRESET' || err.code === 'EPIPE' || /socket hang up|closed before/i.test(err.message)
      if (reset) resolve({error: translated, reason: err.code ?? 'connection reset'})
      else reject(translated)
    })
  })
}
