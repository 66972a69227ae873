/**
 * Reading istiod's debug data the way a real cluster allows (istio/istio PR #33403 moved istioctl off the pod proxy):
 *
 * 1. port-forward to the monitoring port (`prometheus.io/port`, else 15014) and GET the debug path:
 *    the connection arrives on istiod's loopback, which istiod trusts (pilot/pkg/xds/debug.go
 *    allowAuthenticatedOrLocalhost). The API server's pod proxy is never used: istiod answers it 401.
 * 2. when that port has no HTTP debug (ENABLE_DEBUG_ON_HTTP=false: 404) or refuses the connection,
 *    port-forward to 15012 and ask over xDS, as istioctl 1.22+ does (istioctl/pkg/multixds): gRPC ADS
 *    over TLS, verified against the mesh root (ConfigMap istio-ca-root-cert) and the SAN
 *    istiod[-REV].NS.svc (istioctl skips verification; meshvm does not), a bearer token from a
 *    TokenRequest for service account `default` in the Istio namespace (audience istio-ca), node
 *    metadata {GENERATOR: event, SERVICE_ACCOUNT: default, NAMESPACE}, one DiscoveryRequest of the
 *    debug type.
 * 3. --xds-address HOST:PORT: an istiod outside the cluster, xDS only, same TLS checks and token.
 *
 * One reader per istiod keeps its port-forward (HTTP keep-alive, or one HTTP/2 session) for the
 * whole command, and remembers which path answered.
 */
import {randomBytes} from 'node:crypto'
import {Agent} from 'node:http'
import type {TLSSocket} from 'node:tls'
import type {Duplex} from 'node:stream'
import {fetchRootCert, requestToken} from '../bundle/fetch.js'
import {ExitCode, MeshvmError} from '../errors.js'
import {GrpcChannel, GrpcError} from '../grpc/client.js'
import {GrpcCode} from '../grpc/framing.js'
import {ADS_METHOD, decodeDiscoveryResponse, discoveryResponseJson, encodeDiscoveryRequest, type DiscoveryResponse} from '../grpc/xds.js'
import {exchange, maxResponseBytes, type KubeClient} from '../kube/client.js'
import {KubeApiError, rbacHint, x509Words} from '../kube/errors.js'
import {secureConnect} from '../kube/tls.js'
import {openPortForward, portForwardHint, PortForwardRefused} from '../kube/portforward.js'
import {istiodServiceName, resolveRevision, type ResolvedRevision} from './revision.js'

export const DEFAULT_MONITORING_PORT = 15014
export const XDS_PORT = 15012
/** TokenRequest's minimum lifetime: the token for istiod is asked for with the shortest allowed expiry. */
const XDS_TOKEN_SECONDS = 600

export type IstiodPath = 'http' | 'xds'

/** Where an istiod is: a pod (port-forward) or an address (--xds-address). */
export type IstiodTarget = {kind: 'pod'; name: string; namespace: string; revision?: string; monitoringPort: number} | {kind: 'address'; address: string; namespace: string; revision?: string}

export type FailureKind = 'timeout' | 'forbidden' | 'error'

/** A failed read: what went wrong, on which path, as a MeshvmError with hints. */
export class IstiodReadError extends MeshvmError {
  /** The failure without the istiod and path prefix. */
  readonly detail: string
  constructor(
    readonly kind: FailureKind,
    message: string,
    options: {exit: (typeof ExitCode)[keyof typeof ExitCode]; code: string; hints?: string[]; detail?: string},
  ) {
    super(message, {exit: options.exit, code: options.code, hints: options.hints})
    this.name = 'IstiodReadError'
    this.detail = options.detail ?? message
  }
}

function formatMs(ms: number): string {
  return ms < 1000 || ms % 1000 !== 0 ? `${ms}ms` : `${ms / 1000}s`
}

function tokenHint(namespace: string): string {
  return `the xDS path needs a token for service account default in ${namespace}: verb create on serviceaccounts/token (kubectl auth can-i create serviceaccounts/token -n ${namespace})`
}

/** A MeshvmError of the layers below (API server, port-forward), as a read failure that says where it happened. */
function failedAt(where: string, err: MeshvmError): IstiodReadError {
  return new IstiodReadError('error', `${where}: ${err.message}`, {exit: err.exit, code: err.code ?? 'IstiodError', hints: err.hints})
}

/** What is left until `deadline`, at least 1 ms: a time-out of 0 would mean none to the gRPC call. */
function remaining(deadline: number): number {
  return Math.max(1, deadline - Date.now())
}

/** `make()` made once and shared; forgotten when it fails, so that the next call asks again. */
function once<T>(make: () => Promise<T>): () => Promise<T> {
  let made: Promise<T> | undefined
  return () => {
    made ??= make()
    made.catch(() => (made = undefined))
    return made
  }
}

/**
 * What every xDS read of one cluster shares: the mesh root certificate and the istio-ca token
 * (one TokenRequest per command, made only when an xDS read happens).
 */
class IstiodCredentials {
  readonly rootCert = once(() => fetchRootCert(this.client, this.istioNamespace))
  readonly bearerToken = once(() => requestToken(this.client, this.istioNamespace, 'default', XDS_TOKEN_SECONDS).then((t) => t.token))

  constructor(
    private readonly client: KubeClient,
    readonly istioNamespace: string,
  ) {}
}

export interface ReaderOptions {
  client: KubeClient
  credentials: IstiodCredentials
  /** --debug: one line per read, naming the path. */
  debug?: (line: string) => void
}

export interface DebugAnswer {
  path: IstiodPath
  /** The HTTP body text, or the DiscoveryResponse in protojson's shape. */
  body: string | Record<string, unknown>
}

/** Reads one istiod; keep it for the whole command, close() at the end. */
export class IstiodReader {
  private path?: IstiodPath
  private agent?: Agent
  private channel?: GrpcChannel
  private channelOpening?: Promise<GrpcChannel>
  readonly san: string

  constructor(
    readonly target: IstiodTarget,
    private readonly options: ReaderOptions,
  ) {
    this.san = `${istiodServiceName(target.revision)}.${target.namespace}.svc`
  }

  get who(): string {
    const t = this.target
    return t.kind === 'pod' ? `istiod ${t.namespace}/${t.name}` : `istiod at ${t.address}`
  }

  /**
   * istiod's sync status: HTTP `/debug/syncz[?namespace=]` through the monitoring port, else the xDS
   * type `istio.io/debug/syncz`. Throws IstiodReadError.
   */
  syncz(options: {namespace?: string; timeoutMs: number}): Promise<DebugAnswer> {
    const deadline = Date.now() + options.timeoutMs
    const query = options.namespace ? `?namespace=${encodeURIComponent(options.namespace)}` : ''
    return this.httpThenXds(`/debug/syncz${query}`, deadline, options.timeoutMs, async () => discoveryResponseJson(await this.xdsResponse('istio.io/debug/syncz', deadline, options.timeoutMs)))
  }

  /**
   * Any other istiod debug endpoint by name (e.g. `clusterz`): HTTP `/debug/NAME` over port-forward to
   * the monitoring port, else xDS type `istio.io/debug/NAME` over port-forward to 15012 (or
   * --xds-address), with the same TLS verification and token as syncz. Over xDS istiod routes the type
   * to its StatusGen, which hands `/debug/NAME` to DebugGen (pilot/pkg/xds/debuggen.go): it runs the
   * HTTP handler in-process and answers one resource, an Any of type `istio.io/debug` whose value is
   * the handler's body bytes (the JSON text); `istioctl x remote-clusters` unmarshals that value.
   * Returns the body text either way. Throws IstiodReadError.
   */
  debugEndpoint(name: string, timeoutMs: number): Promise<{path: IstiodPath; body: string}> {
    const deadline = Date.now() + timeoutMs
    const typeUrl = `istio.io/debug/${name}`
    return this.httpThenXds(`/debug/${name}`, deadline, timeoutMs, async () => {
      const response = await this.xdsResponse(typeUrl, deadline, timeoutMs)
      if (response.resources.length === 0) {
        throw this.unreachable(`${this.xdsWhere()}: istiod answered ${typeUrl} with no resource`)
      }
      const decoder = new TextDecoder()
      return response.resources.map((r) => decoder.decode(r.value)).join('')
    })
  }

  /** HTTP first (for a pod, until xDS has answered once), else xDS; the xDS error says why HTTP could not answer. */
  private async httpThenXds<T>(httpPath: string, deadline: number, timeoutMs: number, viaXds: () => Promise<T>): Promise<{path: IstiodPath; body: string | T}> {
    if (this.target.kind === 'address' || this.path === 'xds') return {path: 'xds', body: await viaXds()}
    const http = await this.http(httpPath, deadline, timeoutMs)
    if (http.ok) return {path: 'http', body: http.body}
    try {
      return {path: 'xds', body: await viaXds()}
    } catch (err) {
      throw this.bothPathsFailed(err, http)
    }
  }

  /** The xDS error after the HTTP path said why it could not answer (refused, 404, 401, 403). */
  private bothPathsFailed(err: unknown, http: {why: string; refused?: boolean}): unknown {
    if (err instanceof IstiodReadError && err.code === 'PortForwardRefused' && http.refused) {
      return new IstiodReadError(
        'error',
        `${this.who}: port-forward refused on :${this.target.kind === 'pod' ? this.target.monitoringPort : DEFAULT_MONITORING_PORT} (HTTP debug) and :${XDS_PORT} (xDS): ${err.detail}`,
        {exit: err.exit, code: err.code, hints: err.hints},
      )
    }
    if (err instanceof IstiodReadError) {
      return new IstiodReadError(err.kind, `${err.message} (HTTP first: ${http.why})`, {exit: err.exit, code: err.code ?? 'IstiodError', hints: err.hints})
    }
    return err
  }

  close(): void {
    this.agent?.destroy()
    this.channel?.close()
  }

  // ---- HTTP over port-forward to the monitoring port ----

  /** ok with the body, or why the xDS path should be tried; throws for failures xDS cannot fix. */
  private async http(path: string, deadline: number, timeoutMs: number): Promise<{ok: true; body: string} | {ok: false; why: string; refused?: boolean}> {
    const t = this.target
    if (t.kind !== 'pod') throw new Error('http() needs a pod')
    const port = t.monitoringPort
    const where = `${this.who}: GET ${path.split('?')[0]} over port-forward to :${port}`
    if (!this.agent) {
      const agent = new Agent({keepAlive: true, maxSockets: 1})
      // One forwarded connection, reused while istiod keeps it alive; a new one only if it closed.
      ;(agent as unknown as {createConnection: (o: unknown, cb: (err: Error | null, s?: Duplex) => void) => undefined}).createConnection = (_o, cb) => {
        openPortForward(this.options.client, {namespace: t.namespace, pod: t.name, port, timeoutMs: remaining(deadline)}).then(
          (s) => {
            // A read that gave up (time-out) dropped this agent: its late connection is not kept.
            if (this.agent !== agent) s.destroy()
            else cb(null, s)
          },
          (err: Error) => cb(err),
        )
        return undefined
      }
      this.agent = agent
    }
    const started = Date.now()
    let res: {status: number; body: string}
    try {
      // The API client's bounded exchange (time-out, size limit) over the forwarded connection. An IP
      // literal: istiod does not check the Host header (pilot/pkg/xds/debug.go allowAuthenticatedOrLocalhost
      // trusts the connection's remote address, which a port-forward makes loopback), and with a name
      // Node's Agent computes a TLS servername through net.isIP, whose first use compiles the IPv6 pattern.
      const raw = await exchange(new URL(`http://127.0.0.1:${port}`), this.agent, {method: 'GET', path, headers: {Accept: 'application/json'}, timeoutMs: remaining(deadline)})
      res = {status: raw.status, body: raw.body.toString('utf8')}
    } catch (err) {
      // The next read starts over with a new connection.
      this.agent?.destroy()
      this.agent = undefined
      if ((err as NodeJS.ErrnoException)?.code === 'MESHVM_TOO_LARGE') throw this.tooLarge(where, maxResponseBytes())
      if (err instanceof PortForwardRefused) {
        this.options.debug?.(`${where}: refused (${err.short}); trying xDS on :${XDS_PORT}`)
        return {ok: false, why: `port ${port} refused the connection`, refused: true}
      }
      throw this.portForwardFailure(err, where, timeoutMs)
    }
    this.options.debug?.(`${where} → HTTP ${res.status} (${Date.now() - started} ms, ${res.body.length} bytes)`)
    if (res.status === 200) {
      this.path = 'http'
      return {ok: true, body: res.body}
    }
    if (res.status === 404 || res.status === 401 || res.status === 403) {
      this.options.debug?.(`${where}: no HTTP debug there (ENABLE_DEBUG_ON_HTTP=false?); trying xDS on :${XDS_PORT}`)
      return {ok: false, why: `GET ${path.split('?')[0]} on :${port} answered HTTP ${res.status}`}
    }
    throw new IstiodReadError('error', `${where}: HTTP ${res.status}${res.body ? `: ${res.body.split('\n')[0]!.slice(0, 200)}` : ''}`, {
      exit: ExitCode.UNREACHABLE,
      code: 'IstiodError',
      hints: [`check the pod: kubectl -n ${t.namespace} logs ${t.name} -c discovery`],
    })
  }

  /** An answer past the response limit (MESHVM_MAX_RESPONSE_BYTES), as the API client reports one. */
  private tooLarge(where: string, limit: number): IstiodReadError {
    return new IstiodReadError('error', `${where}: the answer is larger than the limit (${limit} bytes)`, {
      exit: ExitCode.FAILURE,
      code: 'ResponseTooLarge',
      hints: ['raise the limit with MESHVM_MAX_RESPONSE_BYTES (bytes) if this answer is expected to be that large'],
    })
  }

  /** Errors of the port-forward itself (RBAC, pod gone, API server unreachable, time-out). */
  private portForwardFailure(err: unknown, where: string, timeoutMs: number): IstiodReadError {
    const ns = this.target.namespace
    if (err instanceof KubeApiError && err.status === 403) {
      const hint = rbacHint(err.message)
      return new IstiodReadError('forbidden', `${where}: ${err.message}`, {
        exit: ExitCode.FORBIDDEN,
        code: 'Forbidden',
        hints: [portForwardHint(ns), ...(hint && !hint.includes('pods/portforward') ? [hint] : [])],
      })
    }
    if ((err as NodeJS.ErrnoException)?.code === 'MESHVM_TIMEOUT' || (err instanceof MeshvmError && err.code === 'Timeout')) return this.timeout(timeoutMs)
    if (err instanceof PortForwardRefused)
      return new IstiodReadError('error', `${where}: ${err.short}`, {exit: ExitCode.UNREACHABLE, code: 'PortForwardRefused', hints: this.podHints(), detail: err.short})
    if (err instanceof MeshvmError) return failedAt(where, err)
    const e = err as NodeJS.ErrnoException
    return this.unreachable(`${where}: ${e?.code ?? e?.message ?? String(err)}`)
  }

  /** istiod or the way to it failed: with a hint to check the pod. */
  private unreachable(message: string): IstiodReadError {
    return new IstiodReadError('error', message, {exit: ExitCode.UNREACHABLE, code: 'IstiodError', hints: this.podHints()})
  }

  private podHints(): string[] {
    const t = this.target
    return t.kind === 'pod' ? [`is the pod ready and its monitoring port ${t.monitoringPort} right (annotation prometheus.io/port)? kubectl -n ${t.namespace} get pod ${t.name}`] : []
  }

  private timeout(timeoutMs: number): IstiodReadError {
    const t = this.target
    return new IstiodReadError('timeout', `${this.who} did not answer within ${formatMs(timeoutMs)}`, {
      exit: ExitCode.UNREACHABLE,
      code: 'Timeout',
      hints: [
        t.kind === 'pod' ? `raise --timeout, or check the pod: kubectl -n ${t.namespace} logs ${t.name} -c discovery` : `raise --timeout, or check that ${t.address} is istiod's gRPC port (15012)`,
      ],
    })
  }

  // ---- xDS over port-forward to 15012 (or --xds-address) ----

  private xdsWhere(): string {
    return this.target.kind === 'pod' ? `${this.who}: xDS over port-forward to :${XDS_PORT}` : `${this.who}: xDS`
  }

  private async openChannel(deadline: number, timeoutMs: number): Promise<GrpcChannel> {
    const t = this.target
    const root = await this.options.credentials.rootCert()
    let socket: Duplex | undefined
    if (t.kind === 'pod') {
      try {
        socket = await openPortForward(this.options.client, {namespace: t.namespace, pod: t.name, port: XDS_PORT, timeoutMs: remaining(deadline)})
      } catch (err) {
        throw this.portForwardFailure(err, this.xdsWhere(), timeoutMs)
      }
    }
    const [host, portText] = t.kind === 'address' ? splitAddress(t.address) : ['127.0.0.1', String(XDS_PORT)]
    // Verified against the mesh root and istiod's Service name (kube/tls.ts: OpenSSL for the chain,
    // Go's rules for the name), never skipped; HTTP/2 gets the socket, and sends the token, only after.
    let tls: TLSSocket
    try {
      tls = await new Promise<TLSSocket>((resolve, reject) => {
        const timer = setTimeout(() => {
          pending.destroy()
          reject(Object.assign(new Error('timeout'), {code: 'MESHVM_TIMEOUT'}))
        }, remaining(deadline))
        const pending = secureConnect({ca: root, servername: this.san, ALPNProtocols: ['h2']}, {host, port: Number(portText), socket}, (err, s) => {
          clearTimeout(timer)
          if (err) reject(err)
          else resolve(s!)
        })
      })
    } catch (err) {
      socket?.destroy()
      throw this.xdsFailure(new GrpcError(GrpcCode.UNAVAILABLE, (err as Error).message, err as NodeJS.ErrnoException), this.xdsWhere(), timeoutMs)
    }
    return new GrpcChannel({authority: `${this.san}:${XDS_PORT}`, secure: true, createConnection: () => tls})
  }

  /** One DiscoveryRequest of typeUrl; the first response of that type, decoded. */
  private async xdsResponse(typeUrl: string, deadline: number, timeoutMs: number): Promise<DiscoveryResponse> {
    const where = this.xdsWhere()
    const ns = this.options.credentials.istioNamespace
    let token: string
    try {
      token = await this.options.credentials.bearerToken()
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 403) {
        throw new IstiodReadError('forbidden', `${where}: cannot get a token for service account ${ns}/default: ${err.message}`, {exit: ExitCode.FORBIDDEN, code: 'Forbidden', hints: [tokenHint(ns)]})
      }
      if (err instanceof MeshvmError) throw failedAt(where, err)
      throw err
    }
    if (!this.channel || this.channel.session.destroyed || this.channel.session.closed) {
      this.channelOpening ??= this.openChannel(deadline, timeoutMs).finally(() => (this.channelOpening = undefined))
      this.channel = await this.channelOpening
    }
    const started = Date.now()
    const call = this.channel.call(ADS_METHOD, {metadata: {authorization: `Bearer ${token}`}, timeoutMs: remaining(deadline), maxBytes: maxResponseBytes()})
    const nodeId = `sidecar~0.0.0.0~meshvm-${randomBytes(4).toString('hex')}.${ns}~${ns}.svc.cluster.local`
    call.send(encodeDiscoveryRequest({node: {id: nodeId, metadata: {GENERATOR: 'event', SERVICE_ACCOUNT: 'default', NAMESPACE: ns}}, typeUrl}))
    let response: DiscoveryResponse
    try {
      for (;;) {
        const message = await call.next()
        if (message === undefined) throw new GrpcError(GrpcCode.UNAVAILABLE, `the stream ended before a response of type ${typeUrl}`)
        response = decodeDiscoveryResponse(message)
        if (response.typeUrl === typeUrl) break
      }
    } catch (err) {
      call.cancel()
      throw this.xdsFailure(err, where, timeoutMs)
    }
    call.cancel()
    this.path = 'xds'
    this.options.debug?.(`${where} (TLS verified for ${this.san} against ${ns}/istio-ca-root-cert) → ${typeUrl}: ${response.resources.length} resources (${Date.now() - started} ms)`)
    return response
  }

  private xdsFailure(err: unknown, where: string, timeoutMs: number): IstiodReadError {
    const ns = this.options.credentials.istioNamespace
    if (err instanceof IstiodReadError) return err
    if (!(err instanceof GrpcError)) {
      if (err instanceof MeshvmError) return failedAt(where, err)
      return new IstiodReadError('error', `${where}: ${(err as Error).message}`, {exit: ExitCode.UNREACHABLE, code: 'IstiodError'})
    }
    const transport = err.transport
    if (transport instanceof PortForwardRefused) return this.portForwardFailure(transport, where, timeoutMs)
    const tlsCode = transport?.code ?? ''
    if (transport?.code === 'MESHVM_TIMEOUT') return this.timeout(timeoutMs)
    const x509 = x509Words(transport)
    if (x509 || /ERR_SSL|ERR_TLS/.test(tlsCode)) {
      const notOurs =
        tlsCode === 'ERR_TLS_CERT_ALTNAME_INVALID'
          ? `its certificate does not name ${this.san} (${x509})`
          : `its certificate is not signed by the mesh root CA in ConfigMap ${ns}/istio-ca-root-cert (${tlsCode})`
      return new IstiodReadError('error', `${where}: TLS verification failed: ${notOurs}`, {
        exit: ExitCode.UNREACHABLE,
        code: 'TLSError',
        hints: notOurs.startsWith('its certificate does not name')
          ? ['is --revision right? istiod of revision REV serves istiod-REV.NS.svc']
          : [`check that ${ns}/istio-ca-root-cert holds the root that signed istiod's certificate (a plugged-in CA changes it); meshvm never skips this check`],
      })
    }
    if (err.code === GrpcCode.DEADLINE_EXCEEDED) return this.timeout(timeoutMs)
    if (err.code === GrpcCode.RESOURCE_EXHAUSTED) return this.tooLarge(where, maxResponseBytes())
    if (err.code === GrpcCode.UNAUTHENTICATED || err.code === GrpcCode.PERMISSION_DENIED) {
      return new IstiodReadError('forbidden', `${where}: istiod refused the token (${err.message})`, {
        exit: ExitCode.FORBIDDEN,
        code: 'Unauthenticated',
        hints: [`istiod accepts tokens of audience istio-ca for service accounts it trusts; check istiod's logs: kubectl -n ${ns} logs -l app=istiod -c discovery | grep -i authentic`],
      })
    }
    return this.unreachable(`${where}: ${err.message}`)
  }
}

/** `host:port`, `[v6]:port`. */
function splitAddress(address: string): [string, string] {
  const m = /^\[([^\]]+)\]:(\d+)$/.exec(address) ?? /^([^:]+):(\d+)$/.exec(address)
  if (!m) throw new MeshvmError(`--xds-address ${JSON.stringify(address)}: expected HOST:PORT (e.g. istiod.example.com:15012)`, {exit: ExitCode.USAGE, code: 'Usage'})
  return [m[1]!, m[2]!]
}

/** Readers of one cluster, by istiod, kept for the whole command (watch frames reuse them). */
export class IstiodPool {
  private readonly readers = new Map<string, IstiodReader>()
  readonly credentials: IstiodCredentials

  constructor(
    private readonly client: KubeClient,
    istioNamespace: string,
    private readonly debug?: (line: string) => void,
  ) {
    this.credentials = new IstiodCredentials(client, istioNamespace)
  }

  private resolved?: Promise<ResolvedRevision>

  /** The revision to read (--revision, else the default tag's), resolved once per command. */
  revision(flag: string | undefined): Promise<ResolvedRevision> {
    this.resolved ??= resolveRevision(this.client, flag).then((r) => {
      if (r.source === 'default-tag') this.debug?.(`revision ${r.revision} (the default tag: MutatingWebhookConfiguration istio-revision-tag-default)`)
      return r
    })
    this.resolved.catch(() => (this.resolved = undefined))
    return this.resolved
  }

  reader(target: IstiodTarget): IstiodReader {
    const key = target.kind === 'pod' ? `pod/${target.namespace}/${target.name}/${target.monitoringPort}` : `address/${target.address}/${target.revision ?? ''}`
    let r = this.readers.get(key)
    if (!r) {
      r = new IstiodReader(target, {client: this.client, credentials: this.credentials, debug: this.debug})
      this.readers.set(key, r)
    }
    return r
  }

  close(): void {
    for (const r of this.readers.values()) r.close()
    this.readers.clear()
  }
}
