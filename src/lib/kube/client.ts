/**
 * The one Kubernetes access layer: every request meshvm sends goes through KubeClient.request, which
 * owns authentication (from the kubeconfig read by config.ts), TLS, time-outs, retries
 * with jittered exponential backoff, paging and error translation.
 *
 * Retries (documented in the README): up to MAX_RETRIES more attempts, delay drawn uniformly from
 * [0, min(BACKOFF_CAP_MS, BACKOFF_BASE_MS·2^attempt)], or the server's Retry-After when it sends one.
 * Only requests that are safe to repeat are retried: reads, server-side apply, merge patches, deletes
 * (a 404 after a lost answer means done) and creates (a 409 after a lost answer is reported as such).
 */
import {request as httpsRequest} from 'node:https'
import {request as httpRequest, Agent as HttpAgent, type IncomingMessage} from 'node:http'
import type {LoadedKubeConfig} from './config.js'
import {VerifiedAgent} from './tls.js'
import {ExitCode, MeshvmError} from '../errors.js'
import {CREDENTIAL_EXPIRY_MARGIN_MS, tlsAndCredentials, type Credentials} from './credentials.js'
import {proxyFor, proxyTunnel} from './proxy.js'
import {KubeApiError, isTransientNetworkError, translateHttpError, translateNetworkError, type RequestDescription} from './errors.js'
import {sleep} from '../util/sleep.js'

export const MAX_RETRIES = 5
export const BACKOFF_BASE_MS = 200
export const BACKOFF_CAP_MS = 5_000
/** Retry-After values above this are treated as "give up": the user asked for an answer, not a nap. */
const RETRY_AFTER_CAP_MS = 30_000
/**
 * The largest response body meshvm reads (documented): 64 MiB, raised with MESHVM_MAX_RESPONSE_BYTES.
 * A bigger body (or a Content-Length announcing one) fails cleanly instead of filling memory.
 */
export const DEFAULT_MAX_RESPONSE_BYTES = 64 * 1024 * 1024
/** Deepest JSON nesting accepted in an answer; Kubernetes objects are a few dozen levels deep. */
export const MAX_JSON_DEPTH = 1000
/** Pages a list may take before meshvm stops (a continue token that never ends). */
export const MAX_LIST_PAGES = 10_000
/** A watch that ends sooner than this without a change counts as "closed at once". */
const WATCH_QUICK_END_MS = 1_000
/** Watches of one path closed at once in a row before meshvm gives up. */
export const MAX_QUICK_WATCH_ENDS = 8

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
 * V8's JSON.parse is iterative (Node 20: a 1,000,000-deep array parses), but what consumes the value
 * is not (JSON.stringify, the YAML writer, object walks): so the text is refused before it is parsed.
 * Strings, most of a Kubernetes object's text, are skipped with indexOf (native) rather than char by
 * char: ~2.5× cheaper (10,000 WARs, 11 MB: 16 ms instead of 42 ms).
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

/**
 * The continue token of a list page, read from its text without parsing it, where kube-apiserver
 * writes it: before the items for built-in types (`{"kind":…,"apiVersion":…,"metadata":
 * {"resourceVersion":…,"continue":"TOKEN",…},"items":[…`, ListMeta's field order), after them for
 * custom resources (`{"apiVersion":…,"items":[…],"kind":…,"metadata":{"continue":"TOKEN",…}}`: an
 * unstructured list's keys sorted, apimachinery's streamingEncodeUnstructuredList). Undefined for
 * another shape. Only a guess, to request the next page early: listPages confirms it against the
 * parsed page.
 */
export function continueTokenOf(text: string): string | undefined {
  const m = CONTINUE_HEAD.exec(text) ?? CONTINUE_TAIL.exec(text.length > 2048 ? text.slice(-2048) : text)
  return m ? m[1] : undefined
}
const CONTINUE_HEAD = /^\{"kind":"[^"\\]*","apiVersion":"[^"\\]*","metadata":\{(?:"selfLink":"[^"\\]*",)?(?:"resourceVersion":"[^"\\]*",)?"continue":"([^"\\]+)"/
const CONTINUE_TAIL = /\],"kind":"[^"\\]*","metadata":\{"continue":"([^"\\]+)"(?:,"remainingItemCount":\d+)?(?:,"resourceVersion":"[^"\\]*")?(?:,"selfLink":"[^"\\]*")?\}\}\s*$/

/** Answers worth another attempt of a request that is safe to repeat. */
export function isRetryableStatus(status: number): boolean {
  return status === 429 || status === 500 || status === 502 || status === 503 || status === 504
}

export const PATCH = {
  merge: 'application/merge-patch+json',
  json: 'application/json-patch+json',
  strategic: 'application/strategic-merge-patch+json',
  apply: 'application/apply-patch+yaml',
} as const

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

export interface RetryEvent {
  attempt: number
  delayMs: number
  reason: string
  method: string
  path: string
}

export interface KubeClientOptions {
  timeoutMs: number
  maxRetries?: number
  backoffBaseMs?: number
  userAgent?: string
  /** Called before each retry, e.g. to log with --debug (never with headers or bodies). */
  onRetry?: (event: RetryEvent) => void
  /** Called after each answer (any status), e.g. to log with --debug (never with headers or bodies). */
  onResponse?: (event: ResponseEvent) => void
  random?: () => number
}

export interface ResponseEvent {
  method: string
  /** Path and query, as sent. */
  path: string
  status: number
  ms: number
  bytes: number
}

interface RawResponse {
  status: number
  headers: IncomingMessage['headers']
  body: Buffer
}

export interface ListPage<T> {
  items: T[]
  metadata: {resourceVersion?: string; continue?: string; remainingItemCount?: number}
  apiVersion?: string
  kind?: string
}

export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'
  object: T
}

function codedError(code: string, message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), {code})
}

export class KubeClient {
  readonly server: string
  readonly context: string
  readonly namespace: string
  private readonly url: URL
  private readonly agent: VerifiedAgent | HttpAgent
  private headers: Credentials['headers']
  private readonly options: Required<Omit<KubeClientOptions, 'onRetry' | 'onResponse'>> & Pick<KubeClientOptions, 'onRetry' | 'onResponse'>

  private constructor(
    private readonly loaded: LoadedKubeConfig,
    {tls, headers, expiresAt}: Credentials,
    options: KubeClientOptions,
  ) {
    this.server = loaded.server
    this.context = loaded.contextName
    this.namespace = loaded.namespace
    this.url = new URL(loaded.server)
    this.options = {
      maxRetries: MAX_RETRIES,
      backoffBaseMs: Number(process.env.MESHVM_RETRY_BASE_MS ?? BACKOFF_BASE_MS),
      userAgent: 'meshvm',
      random: Math.random,
      ...options,
    }
    // One keep-alive agent per client: paging and concurrent reads reuse connections. Every TLS
    // connection, direct or through a proxy (proxy-url, HTTPS_PROXY), is verified by kube/tls.ts's
    // policy before a byte of a request is written.
    const proxy = this.url.protocol === 'https:' ? proxyFor(this.url, loaded.cluster.proxyUrl) : undefined
    this.agent =
      this.url.protocol === 'http:'
        ? new HttpAgent({keepAlive: true, maxSockets: 16})
        : new VerifiedAgent(tls, {keepAlive: true, maxSockets: 16}, proxy ? proxyTunnel(proxy) : undefined)
    this.headers = headers
    this.expiresAt = expiresAt
  }

  /** When the current credentials expire (exec plugins' expirationTimestamp). */
  private expiresAt: number | undefined

  /**
   * What a connection upgrade (pods/portforward, portforward.ts) needs: the URL of a path, the
   * credential headers and the kubeconfig's TLS settings. Never logged: the headers hold secrets.
   */
  /** Fetches the credentials again if they are about to expire (see send); for upgrades and watches. */
  async freshCredentials(): Promise<void> {
    if (this.expiresAt !== undefined && Date.now() >= this.expiresAt - CREDENTIAL_EXPIRY_MARGIN_MS) await this.refreshCredentials(this.credentialsGeneration)
  }

  upgradeTarget(path: string, query: KubeRequest['query'] = {}): {url: URL; headers: Record<string, string | string[]>; agent: VerifiedAgent | HttpAgent; describe: RequestDescription} {
    const url = new URL(this.fullPath({method: 'GET', path, query}), this.url)
    // agent: the upgrade connects (and verifies the server) as every request does, without a TLS context of its own.
    return {url, headers: {...this.headers, 'User-Agent': this.options.userAgent}, agent: this.agent, describe: this.describe({method: 'GET', path})}
  }

  /** Reports a retry to --debug (for requests sent outside send(), such as upgrades). */
  reportRetry(event: RetryEvent): void {
    this.options.onRetry?.(event)
  }

  /** Reports an answer to --debug (for requests sent outside send(), such as upgrades). */
  reportResponse(event: ResponseEvent): void {
    this.options.onResponse?.(event)
  }

  static async create(loaded: LoadedKubeConfig, options: KubeClientOptions): Promise<KubeClient> {
    return new KubeClient(loaded, await tlsAndCredentials(loaded, options.timeoutMs), options)
  }

  /** Bumped each time the credentials are fetched again. */
  private credentialsGeneration = 0
  private refreshing?: Promise<void>

  /**
   * Credentials from exec plugins, OIDC and token files expire: fetch fresh headers once after a 401.
   * Concurrent requests that all got a 401 share one refresh (an exec plugin such as a cloud login
   * can take seconds, and runs once), and a request whose 401 answers credentials that were already
   * replaced only retries with the new ones.
   */
  private async refreshCredentials(usedGeneration: number): Promise<void> {
    if (usedGeneration !== this.credentialsGeneration) return
    this.refreshing ??= (async () => {
      try {
        const fresh = await tlsAndCredentials(this.loaded, this.options.timeoutMs)
        this.headers = fresh.headers
        this.expiresAt = fresh.expiresAt
        this.credentialsGeneration++
      } finally {
        this.refreshing = undefined
      }
    })()
    await this.refreshing
  }

  close(): void {
    this.agent.destroy()
  }

  private describe(req: KubeRequest): RequestDescription {
    return {method: req.method, path: req.path, server: this.server, context: this.context}
  }

  private fullPath(req: KubeRequest): string {
    const base = this.url.pathname.replace(/\/+$/, '')
    const params = new URLSearchParams()
    for (const [k, v] of Object.entries(req.query ?? {})) if (v !== undefined && v !== '') params.set(k, String(v))
    const qs = params.toString()
    return `${base}${req.path}${qs ? `?${qs}` : ''}`
  }

  /** One attempt, no retries, no translation. */
  private once(req: KubeRequest): Promise<RawResponse> {
    const timeoutMs = req.timeoutMs ?? this.options.timeoutMs
    const body = req.body === undefined ? undefined : typeof req.body === 'string' ? req.body : JSON.stringify(req.body)
    const headers: Record<string, string | string[]> = {
      ...this.headers,
      Accept: req.accept ?? 'application/json',
      'User-Agent': this.options.userAgent,
    }
    if (body !== undefined) {
      headers['Content-Type'] = req.contentType ?? 'application/json'
      headers['Content-Length'] = String(Buffer.byteLength(body))
    }
    const send = this.url.protocol === 'http:' ? httpRequest : httpsRequest
    const path = this.fullPath(req)
    const started = Date.now()
    const limit = maxResponseBytes()
    return new Promise<RawResponse>((resolve, reject) => {
      // One outcome per attempt: the time-out covers the whole exchange, body included (a body that
      // never ends, or arrives a byte at a time, ends here), and the size limit is checked as bytes
      // arrive, so neither can hold the process or its memory.
      let settled = false
      const fail = (err: unknown): void => {
        clearTimeout(timer)
        if (settled) return
        settled = true
        r.destroy()
        reject(err)
      }
      const r = send(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname.replace(/^\[|\]$/g, ''),
          port: this.url.port || (this.url.protocol === 'http:' ? 80 : 443),
          method: req.method,
          path,
          headers,
          agent: this.agent,
        },
        (res) => {
          const chunks: Buffer[] = []
          let size = 0
          const tooLarge = () => codedError('MESHVM_TOO_LARGE', `response larger than ${limit} bytes`)
          if (Number(res.headers['content-length'] ?? 0) > limit) {
            fail(tooLarge())
            return
          }
          res.on('data', (c: Buffer) => {
            size += c.length
            if (size > limit) fail(tooLarge())
            else chunks.push(c)
          })
          res.on('aborted', () => fail(codedError('MESHVM_TRUNCATED', 'response aborted')))
          res.on('error', (err) => fail(err))
          res.on('end', () => {
            if (settled) return
            const buf = Buffer.concat(chunks)
            const expected = Number(res.headers['content-length'] ?? Number.NaN)
            if (!res.complete || (!Number.isNaN(expected) && buf.length < expected)) {
              fail(codedError('MESHVM_TRUNCATED', 'response truncated'))
              return
            }
            clearTimeout(timer)
            settled = true
            this.options.onResponse?.({method: req.method, path, status: res.statusCode ?? 0, ms: Date.now() - started, bytes: buf.length})
            resolve({status: res.statusCode ?? 0, headers: res.headers, body: buf})
          })
        },
      )
      const timer = setTimeout(() => fail(codedError('MESHVM_TIMEOUT', 'request timed out')), timeoutMs)
      r.on('error', (err) => fail(err))
      r.end(body)
    })
  }

  private defaultRetry(req: KubeRequest): RetryPolicy {
    if (req.method === 'GET') return 'read'
    if (req.method === 'DELETE') return 'idempotent'
    if (req.method === 'POST') return 'create'
    if (req.method === 'PATCH' && req.contentType !== PATCH.json) return 'idempotent'
    return 'never'
  }

  /** How many more attempts a transient failure gets (MAX_RETRIES unless the client was told otherwise). */
  get maxRetries(): number {
    return this.options.maxRetries
  }

  /**
   * The one retry delay of the access layer (requests here, port-forward upgrades in portforward.ts):
   * the server's Retry-After when it sends one (undefined past RETRY_AFTER_CAP_MS: give up), else a
   * jittered exponential backoff drawn from [0, min(BACKOFF_CAP_MS, base·2^attempt)].
   */
  retryDelay(attempt: number, retryAfterHeader: string | string[] | undefined): number | undefined {
    const header = Array.isArray(retryAfterHeader) ? retryAfterHeader[0] : retryAfterHeader
    if (header !== undefined && /^\d+$/.test(header)) {
      const ms = Number(header) * 1000
      return ms > RETRY_AFTER_CAP_MS ? undefined : ms
    }
    const ceiling = Math.min(BACKOFF_CAP_MS, this.options.backoffBaseMs * 2 ** attempt)
    return Math.round(this.options.random() * ceiling)
  }

  /** Sends a request with retries; returns the raw successful response or throws a MeshvmError. */
  async send(req: KubeRequest): Promise<RawResponse> {
    const policy = req.retry ?? this.defaultRetry(req)
    const description = this.describe(req)
    const timeoutMs = req.timeoutMs ?? this.options.timeoutMs
    let refreshed = false
    let lostAnswer = false
    for (let attempt = 0; ; attempt++) {
      let reason: string
      let retryAfter: string | string[] | undefined
      let failure: () => MeshvmError
      try {
        // An exec credential about to expire is fetched again first, as client-go does.
        if (this.expiresAt !== undefined && Date.now() >= this.expiresAt - CREDENTIAL_EXPIRY_MARGIN_MS) await this.refreshCredentials(this.credentialsGeneration)
        const remaining = req.deadline === undefined ? undefined : Math.max(1, req.deadline - Date.now())
        const generation = this.credentialsGeneration
        const res = await this.once(remaining === undefined ? req : {...req, timeoutMs: Math.min(timeoutMs, remaining)})
        // Only the documented success statuses are success. A 3xx is never "created" or
        // "configured", and a redirect is never followed (it would carry the token elsewhere).
        if (res.status >= 200 && res.status < 300) return res
        if (res.status < 400 || res.status > 599) throw translateHttpError(description, res.status, res.body.toString('utf8'), res.headers.location)
        if (res.status === 401 && !refreshed) {
          refreshed = true
          await this.refreshCredentials(generation)
          attempt--
          continue
        }
        // A delete whose first answer was lost may have succeeded: 404 now means it is gone.
        if (res.status === 404 && policy === 'idempotent' && req.method === 'DELETE' && lostAnswer) return {...res, status: 200, body: Buffer.from('{}')}
        const retryable = policy !== 'never' && isRetryableStatus(res.status)
        if (!retryable || attempt >= this.options.maxRetries) throw translateHttpError(description, res.status, res.body.toString('utf8'))
        reason = `HTTP ${res.status}`
        retryAfter = res.headers['retry-after']
        failure = () => translateHttpError(description, res.status, res.body.toString('utf8'))
      } catch (err) {
        if (err instanceof KubeApiError) throw err
        const retryable = policy !== 'never' && isTransientNetworkError(err)
        if (!retryable || attempt >= this.options.maxRetries) throw translateNetworkError(description, err, timeoutMs)
        lostAnswer = req.method !== 'GET'
        reason = (err as NodeJS.ErrnoException).code ?? 'network error'
        failure = () => translateNetworkError(description, err, timeoutMs)
      }
      const delayMs = this.retryDelay(attempt, retryAfter)
      if (delayMs === undefined) throw translateHttpError(description, 429, '')
      if (req.deadline !== undefined && Date.now() + delayMs >= req.deadline) throw failure()
      this.options.onRetry?.({attempt: attempt + 1, delayMs, reason, method: req.method, path: req.path})
      await sleep(delayMs)
    }
  }

  /**
   * A request whose answer is a JSON object. An empty body, `null`, a scalar or a document nested
   * deeper than MAX_JSON_DEPTH is a malformed answer (never "success with nothing").
   */
  async request<T = unknown>(req: KubeRequest, onText?: (text: string) => boolean): Promise<T> {
    for (let attempt = 0; ; attempt++) {
      const res = await this.send(req)
      const text = res.body.toString('utf8')
      // listPages sends the next page's request from the raw text (see there): one turn of the event
      // loop puts it on the wire before the parse below holds the thread.
      if (onText?.(text)) await new Promise((resolve) => setImmediate(resolve))
      let value: unknown
      let why: string
      if (text.trim() === '') why = 'an empty body'
      else if (jsonTooDeep(text)) why = `JSON nested deeper than ${MAX_JSON_DEPTH} levels`
      else {
        try {
          value = JSON.parse(text)
          if (value !== null && typeof value === 'object' && !Array.isArray(value)) return value as T
          why = `${value === null ? 'null' : Array.isArray(value) ? 'an array' : `a ${typeof value}`} instead of an object`
        } catch {
          why = 'a body that is not JSON'
        }
      }
      // A complete but unusable body is not a network blip; one more read is all it gets.
      if (req.method !== 'GET' || attempt >= 1) throw translateNetworkError(this.describe(req), codedError('MESHVM_MALFORMED', why), 0)
    }
  }

  get<T = unknown>(path: string, query?: KubeRequest['query']): Promise<T> {
    return this.request<T>({method: 'GET', path, query})
  }

  /** GET that answers undefined for 404 instead of throwing. */
  async getOptional<T = unknown>(path: string, query?: KubeRequest['query']): Promise<T | undefined> {
    try {
      return await this.get<T>(path, query)
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) return undefined
      throw err
    }
  }

  /**
   * Pages through a list with `limit`/`continue`. When a continue token expires (410 Gone) the list
   * restarts from a fresh snapshot and items already yielded are skipped, so callers never see an
   * item twice. Memory stays at two pages plus the keys of items seen.
   *
   * Pipelined: the next page is requested as soon as the current page's text arrives, with the
   * continue token read from that text before it is parsed (continueTokenOf), so the server prepares and
   * sends page N+1 while page N is checked, parsed and used (10,000 WARs in pages of 500: the
   * parse no longer waits for the server, nor the server for the parse). The token is then confirmed
   * against the parsed page: a guess that differs (or a page whose head does not have the usual
   * shape) is dropped and the page is requested as before. At most one page is requested ahead.
   */
  async *listPages<T extends {metadata?: {uid?: string; name?: string; namespace?: string}}>(
    path: string,
    query: KubeRequest['query'] = {},
    pageSize = 500,
  ): AsyncGenerator<ListPage<T>> {
    const seen = new Set<string>()
    let restarts = 0
    let token: string | undefined
    const tokens = new Set<string>()
    interface PageRead {
      token: string | undefined
      page: Promise<ListPage<T>>
      /** The next token read from the head of this page's text, once it has arrived. */
      next?: string
      /** True once the loop waits for this page: its text may then start the next request. */
      current: boolean
    }
    let pages = 0
    let ahead: PageRead | undefined
    const prefetch = (read: PageRead): boolean => {
      const next = read.next
      if (ahead !== undefined || next === undefined || next === read.token || tokens.has(next) || pages + 1 >= MAX_LIST_PAGES) return false
      ahead = start(next)
      return true
    }
    const start = (t: string | undefined): PageRead => {
      const read: PageRead = {token: t, current: false, page: undefined as unknown as Promise<ListPage<T>>}
      read.page = this.request<ListPage<T>>({method: 'GET', path, query: {...query, limit: pageSize, continue: t}}, (text) => {
        read.next = continueTokenOf(text)
        return read.current && prefetch(read)
      })
      // A page read ahead and never used (the caller stopped, or the guess was wrong) fails unheard;
      // a page that is used is awaited below, where its error is thrown.
      read.page.catch(() => undefined)
      return read
    }
    try {
      for (; ; pages++) {
        if (pages >= MAX_LIST_PAGES) throw translateNetworkError(this.describe({method: 'GET', path}), codedError('MESHVM_MALFORMED', `a list that did not end after ${MAX_LIST_PAGES} pages`), 0)
        let page: ListPage<T>
        const read: PageRead = ahead !== undefined && ahead.token === token ? ahead : start(token)
        ahead = undefined
        read.current = true
        // Its text may have arrived while the caller used the previous page.
        prefetch(read)
        try {
          page = await read.page
        } catch (err) {
          if (err instanceof KubeApiError && err.status === 410 && token !== undefined && restarts < 3) {
            restarts++
            token = undefined
            ahead = undefined
            continue
          }
          throw err
        }
        // kubectl decodes a null items as an empty list; anything else that is not a list of objects is malformed.
        if ((page.items !== undefined && page.items !== null && !Array.isArray(page.items)) || (page.items ?? []).some((i) => i === null || typeof i !== 'object' || Array.isArray(i))) {
          throw translateNetworkError(this.describe({method: 'GET', path}), codedError('MESHVM_MALFORMED', 'a list whose items are not objects'), 0)
        }
        const items = (page.items ?? []).filter((item) => {
          const key = item.metadata?.uid ?? `${item.metadata?.namespace ?? ''}/${item.metadata?.name ?? ''}`
          if (seen.has(key)) return false
          seen.add(key)
          return true
        })
        token = page.metadata?.continue || undefined
        // The page read ahead is kept only if it asked for the token the page really has.
        if (ahead !== undefined && (ahead as PageRead).token !== token) ahead = undefined
        yield {...page, items}
        if (!token) return
        // A server that hands back a token it already gave would page forever.
        if (tokens.has(token)) throw translateNetworkError(this.describe({method: 'GET', path}), codedError('MESHVM_MALFORMED', 'a list whose continue token repeats'), 0)
        tokens.add(token)
      }
    } finally {
      ahead = undefined
    }
  }

  async list<T extends {metadata?: {uid?: string; name?: string; namespace?: string}}>(path: string, query?: KubeRequest['query']): Promise<T[]> {
    const all: T[] = []
    for await (const page of this.listPages<T>(path, query)) all.push(...page.items)
    return all
  }

  /** Server-side apply: idempotent, so safe to retry and to re-run. */
  apply<T = unknown>(path: string, object: unknown, options: {fieldManager: string; force?: boolean; dryRun?: boolean}): Promise<T> {
    return this.request<T>({
      method: 'PATCH',
      path,
      body: JSON.stringify(object),
      contentType: PATCH.apply,
      query: {fieldManager: options.fieldManager, force: options.force ? 'true' : undefined, dryRun: options.dryRun ? 'All' : undefined},
    })
  }

  /** Per watched path: how many watches in a row ended at once, without a change. */
  private readonly quickWatchEnds = new Map<string, number>()

  /**
   * Streams watch events until the server closes the stream or `signal` aborts. Resolves with the
   * last resourceVersion seen so the caller can resume.
   *
   * Re-watch loops are bounded here, for every caller: a watch that the server ends within
   * WATCH_QUICK_END_MS without a change makes the next watch of that path wait (jittered backoff,
   * as for retries), and after MAX_QUICK_WATCH_ENDS such ends in a row the watch fails. Each call
   * removes its abort listener when it ends, so long watches never pile listeners on `signal`.
   */
  async watch<T extends {metadata?: {resourceVersion?: string}}>(
    path: string,
    query: KubeRequest['query'],
    onEvent: (event: WatchEvent<T>) => void,
    signal?: AbortSignal,
  ): Promise<string | undefined> {
    const req: KubeRequest = {method: 'GET', path, query: {...query, watch: 'true', allowWatchBookmarks: 'true'}}
    const quick = this.quickWatchEnds.get(path) ?? 0
    if (quick >= MAX_QUICK_WATCH_ENDS) {
      this.quickWatchEnds.delete(path)
      throw translateNetworkError(this.describe(req), codedError('MESHVM_MALFORMED', `the watch was closed at once ${quick} times in a row`), 0)
    }
    if (quick > 0) {
      const delayMs = Math.round(this.options.random() * Math.min(BACKOFF_CAP_MS, this.options.backoffBaseMs * 2 ** quick))
      await sleep(delayMs, signal)
    }
    const typedVersion = typeof query?.resourceVersion === 'string' ? query.resourceVersion : undefined
    if (signal?.aborted) return typedVersion
    await this.freshCredentials()
    const started = Date.now()
    let changes = 0
    const result = await this.watchOnce<T>(req, typedVersion, (event) => {
      if (event.type === 'ADDED' || event.type === 'MODIFIED' || event.type === 'DELETED') changes++
      onEvent(event)
    }, signal)
    if (changes === 0 && Date.now() - started < WATCH_QUICK_END_MS && !signal?.aborted) this.quickWatchEnds.set(path, quick + 1)
    else this.quickWatchEnds.delete(path)
    return result
  }

  private watchOnce<T extends {metadata?: {resourceVersion?: string}}>(
    req: KubeRequest,
    version: string | undefined,
    onEvent: (event: WatchEvent<T>) => void,
    signal?: AbortSignal,
  ): Promise<string | undefined> {
    const send = this.url.protocol === 'http:' ? httpRequest : httpsRequest
    let lastVersion = version
    const limit = maxResponseBytes()
    return new Promise((resolve, reject) => {
      let settled = false
      const finish = (err?: unknown): void => {
        if (settled) return
        settled = true
        signal?.removeEventListener('abort', onAbort)
        if (err === undefined) resolve(lastVersion)
        else reject(err)
      }
      const onAbort = (): void => {
        r.destroy()
        finish()
      }
      const r = send(
        {
          protocol: this.url.protocol,
          hostname: this.url.hostname.replace(/^\[|\]$/g, ''),
          port: this.url.port || (this.url.protocol === 'http:' ? 80 : 443),
          method: 'GET',
          path: this.fullPath(req),
          headers: {...this.headers, Accept: 'application/json', 'User-Agent': this.options.userAgent},
          agent: this.agent,
        },
        (res) => {
          const status = res.statusCode ?? 0
          if (status < 200 || status >= 300) {
            const chunks: Buffer[] = []
            let size = 0
            res.on('data', (c: Buffer) => {
              size += c.length
              if (size <= 64 * 1024) chunks.push(c)
            })
            res.on('end', () => finish(translateHttpError(this.describe(req), status, Buffer.concat(chunks).toString('utf8'), res.headers.location)))
            res.on('error', () => finish(translateHttpError(this.describe(req), status, '', res.headers.location)))
            return
          }
          let buffer = ''
          res.setEncoding('utf8')
          res.on('data', (chunk: string) => {
            buffer += chunk
            // One event is one line: a line that grows past the response limit is not an event.
            if (buffer.length > limit) {
              r.destroy()
              finish(translateNetworkError(this.describe(req), codedError('MESHVM_TOO_LARGE', `response larger than ${limit} bytes`), 0))
              return
            }
            let nl: number
            while ((nl = buffer.indexOf('\n')) >= 0) {
              const line = buffer.slice(0, nl).trim()
              buffer = buffer.slice(nl + 1)
              if (!line) continue
              let event: WatchEvent<T>
              try {
                if (jsonTooDeep(line)) throw new Error('too deep')
                event = JSON.parse(line) as WatchEvent<T>
                if (event === null || typeof event !== 'object' || event.object === null || typeof event.object !== 'object') throw new Error('not an event')
              } catch {
                r.destroy()
                finish(translateNetworkError(this.describe(req), codedError('MESHVM_MALFORMED', 'malformed'), 0))
                return
              }
              lastVersion = event.object?.metadata?.resourceVersion ?? lastVersion
              onEvent(event)
            }
          })
          res.on('end', () => finish())
          res.on('error', () => finish())
        },
      )
      r.on('error', (err) => {
        if (signal?.aborted) finish()
        else finish(translateNetworkError(this.describe(req), err, this.options.timeoutMs))
      })
      if (signal?.aborted) onAbort()
      else signal?.addEventListener('abort', onAbort, {once: true})
      r.end()
    })
  }
}
