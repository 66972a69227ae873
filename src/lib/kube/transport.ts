/**
 * The transport of the access layer: the kept-alive connection to the API server (TLS verified by
 * tls.ts, through a proxy when the kubeconfig or the environment names one), the path of a request,
 * and one exchange bounded in time and size. No retries, no credentials logic, no parsing: KubeClient
 * (client.ts) builds those on top.
 */
import {Agent as HttpAgent, type ClientRequest, type IncomingMessage, type OutgoingHttpHeaders, request as httpRequest} from 'node:http'
import {request as httpsRequest} from 'node:https'
import {ExitCode, MeshvmError} from '../errors.js'
import type {LoadedKubeConfig} from './config.js'
import type {Credentials} from './credentials.js'
import {type RequestDescription, translateNetworkError} from './errors.js'
import {proxyFor, proxyTunnel} from './proxy.js'
import {VerifiedAgent} from './tls.js'

/**
 * The largest response body meshvm reads (documented): 64 MiB, raised with MESHVM_MAX_RESPONSE_BYTES.
 * A bigger body (or a Content-Length announcing one) fails cleanly instead of filling memory.
 */
const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
/** Deepest JSON nesting accepted in an answer; Kubernetes objects are a few dozen levels deep. */
export const MAX_JSON_DEPTH = 1000

export function maxResponseBytes(env: NodeJS.ProcessEnv = process.env): number {
  const text = env.MESHVM_MAX_RESPONSE_BYTES
  if (text === undefined || text === '') return DEFAULT_MAX_RESPONSE_BYTES
  const n = Number(text)
  if (!Number.isSafeInteger(n) || n <= 0) {
    throw new MeshvmError(`MESHVM_MAX_RESPONSE_BYTES ${JSON.stringify(text)}: expected a positive number of bytes`, {exit: ExitCode.USAGE, code: 'Usage'})
  }
  return n
}

/**
 * True when `text` (JSON) nests arrays/objects deeper than `max`; strings are skipped. O(n), no recursion.
 * V8's JSON.parse is iterative, but what consumes the value is not (JSON.stringify, the YAML writer,
 * object walks): so the text is refused before it is parsed. Strings, most of a Kubernetes object's
 * text, are skipped with indexOf (native) rather than char by char (docs/decisions/cluster-commands.md).
 */
export function jsonTooDeep(text: string, max = MAX_JSON_DEPTH): boolean {
  let depth = 0
  const n = text.length
  for (let i = 0; i < n; i++) {
    const c = text.charCodeAt(i)
    if (c === 34 /* " */) {
      // The closing quote: the next one not escaped, i.e. not preceded by an odd run of backslashes.
      for (;;) {
        const end = text.indexOf('"', i + 1)
        if (end < 0) return false // an unterminated string: not JSON, which JSON.parse reports
        let k = end - 1
        while (text.charCodeAt(k) === 92 /* \\ */) k--
        i = end
        if (((end - 1 - k) & 1) === 0) break
      }
    } else if (c === 123 || c === 91) {
      if (++depth > max) return true
    } else if (c === 125 || c === 93) depth--
  }
  return false
}

/** Answers worth another attempt of a request that is safe to repeat. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status === 500 || status === 502 || status === 503 || status === 504
}

export type RetryPolicy = 'read' | 'idempotent' | 'create' | 'never'

export interface KubeRequest {
  method: 'GET' | 'POST' | 'PUT' | 'PATCH' | 'DELETE'
  path: string
  query?: Record<string, string | number | boolean | undefined>
  body?: unknown
  contentType?: string
  accept?: string
  retry?: RetryPolicy
  /** Per-request override of the client's time-out. */
  timeoutMs?: number
  /**
   * Absolute time (epoch ms) by which the request, retries included, must end: each attempt's
   * time-out shrinks to fit, and no retry starts that could not finish (e.g. proxy-status --timeout).
   */
  deadline?: number
}

export interface ResponseEvent {
  method: string
  /** Path and query, as sent. */
  path: string
  status: number
  ms: number
  bytes: number
}

export interface RawResponse {
  status: number
  headers: IncomingMessage['headers']
  body: Buffer
}

export type KubeAgent = VerifiedAgent | HttpAgent

function codedError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), {code})
}

/** A body past the size limit (maxResponseBytes). */
export function tooLarge(limit: number): NodeJS.ErrnoException {
  return codedError('MESHVM_TOO_LARGE', `response larger than ${limit} bytes`)
}

/** An answer that arrived whole but cannot be used (`why`): never "success with nothing". */
export function malformedAnswer(description: RequestDescription, why: string): MeshvmError {
  return translateNetworkError(description, codedError('MESHVM_MALFORMED', why), 0)
}

/** The first 64 KiB of an error answer's body as text (enough to say why), '' when the body fails. */
export function errorText(res: IncomingMessage, done: (text: string) => void): void {
  const chunks: Buffer[] = []
  let size = 0
  res.on('data', (c: Buffer) => {
    size += c.length
    if (size <= 64 * 1024) chunks.push(c)
  })
  let answered = false
  const answer = (text: string) => {
    if (!answered) done(text)
    answered = true
  }
  res.on('end', () => answer(Buffer.concat(chunks).toString('utf8')))
  res.on('error', () => answer(''))
}

/**
 * One keep-alive agent per client: paging and concurrent reads reuse connections. Every TLS
 * connection, direct or through a proxy (proxy-url, HTTPS_PROXY), is verified by kube/tls.ts's
 * policy before a byte of a request is written.
 */
export function createAgent(url: URL, loaded: LoadedKubeConfig, tls: Credentials['tls']): KubeAgent {
  if (url.protocol === 'http:') return new HttpAgent({keepAlive: true, maxSockets: 16})
  const proxy = proxyFor(url, loaded.cluster.proxyUrl)
  return new VerifiedAgent(tls, {keepAlive: true, maxSockets: 16}, proxy ? proxyTunnel(proxy) : undefined)
}

/** The path and query of a request as sent: below the server URL's own path, empty values left out. */
export function requestPath(server: URL, path: string, query: KubeRequest['query'] = {}): string {
  const base = server.pathname.replace(/\/+$/, '')
  const params = new URLSearchParams()
  for (const [k, v] of Object.entries(query)) if (v !== undefined && v !== '') params.set(k, String(v))
  const qs = params.toString()
  return `${base}${path}${qs ? `?${qs}` : ''}`
}

/** Starts a request to the API server over `agent` (requests and watches alike). */
export function openRequest(server: URL, agent: KubeAgent, method: string, path: string, headers: OutgoingHttpHeaders, onResponse: (res: IncomingMessage) => void): ClientRequest {
  const send = server.protocol === 'http:' ? httpRequest : httpsRequest
  return send(
    {
      protocol: server.protocol,
      hostname: server.hostname.replace(/^\[|\]$/g, ''),
      port: server.port || (server.protocol === 'http:' ? 80 : 443),
      method,
      path,
      headers,
      agent,
    },
    onResponse,
  )
}

/**
 * One attempt, no retries, no translation. One outcome per attempt: the time-out covers the whole
 * exchange, body included (a body that never ends, or arrives a byte at a time, ends here), and the
 * size limit is checked as bytes arrive, so neither can hold the process or its memory.
 */
export function exchange(
  server: URL,
  agent: KubeAgent,
  req: {method: string; path: string; headers: Record<string, string | string[]>; body?: string; timeoutMs: number},
  onResponse?: (event: ResponseEvent) => void,
): Promise<RawResponse> {
  const {method, path, headers, body} = req
  const started = Date.now()
  const limit = maxResponseBytes()
  return new Promise<RawResponse>((resolve, reject) => {
    let settled = false
    const fail = (err: unknown): void => {
      clearTimeout(timer)
      if (settled) return
      settled = true
      r.destroy()
      reject(err)
    }
    const r = openRequest(server, agent, method, path, headers, (res) => {
      const chunks: Buffer[] = []
      let size = 0
      if (Number(res.headers['content-length'] ?? 0) > limit) {
        fail(tooLarge(limit))
        return
      }
      res.on('data', (c: Buffer) => {
        size += c.length
        if (size > limit) fail(tooLarge(limit))
        else chunks.push(c)
      })
      res.on('aborted', () => fail(codedError('MESHVM_TRUNCATED', 'response aborted')))
      res.on('error', (err) => fail(err))
      res.on('end', () => {
        if (settled) return
        // A body that came in one piece (a large list often does) is used where it is, not copied.
        const buf = chunks.length === 1 ? chunks[0]! : Buffer.concat(chunks)
        const expected = Number(res.headers['content-length'] ?? Number.NaN)
        if (!res.complete || (!Number.isNaN(expected) && buf.length < expected)) {
          fail(codedError('MESHVM_TRUNCATED', 'response truncated'))
          return
        }
        clearTimeout(timer)
        settled = true
        onResponse?.({method, path, status: res.statusCode ?? 0, ms: Date.now() - started, bytes: buf.length})
        resolve({status: res.statusCode ?? 0, headers: res.headers, body: buf})
      })
    })
    const timer = setTimeout(() => fail(codedError('MESHVM_TIMEOUT', 'request timed out')), req.timeoutMs)
    r.on('error', (err) => fail(err))
    r.end(body)
  })
}
