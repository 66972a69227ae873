/**
 * The one Kubernetes access layer: every request meshvm sends goes through KubeClient.request, which
 * owns authentication (from the kubeconfig read by config.ts, credentials.ts), time-outs, retries
 * with jittered exponential backoff and error translation, over transport.ts's kept-alive
 * connection; lists page through paging.ts, watches go through watch.ts. Code outside src/lib/kube
 * imports this module only: it re-exports what that code uses of the others. Which requests are
 * retried, how often and after what delay: docs/conventions.md ("Cluster access"); a delete whose
 * answer was lost is done on a 404, a create whose answer was lost reports its 409 as such.
 */
import type {LoadedKubeConfig} from './config.js'
import {CREDENTIAL_EXPIRY_MARGIN_MS, tlsAndCredentials, type Credentials} from './credentials.js'
import {KubeApiError, isTransientNetworkError, translateHttpError, translateNetworkError, type RequestDescription} from './errors.js'
import {type ListPage, listPages} from './paging.js'
import {
  createAgent,
  exchange,
  isRetryableStatus,
  jsonTooDeep,
  type KubeAgent,
  type KubeRequest,
  malformedAnswer,
  MAX_JSON_DEPTH,
  type RawResponse,
  requestPath,
  type ResponseEvent,
  type RetryPolicy,
} from './transport.js'
import {type WatchEvent, Watcher, type WatchTarget} from './watch.js'
import type {MeshvmError} from '../errors.js'
import {sleep} from '../util/sleep.js'

export {continueTokenOf} from './paging.js'
export {exchange, jsonTooDeep, MAX_JSON_DEPTH, maxResponseBytes} from './transport.js'
export type {KubeRequest} from './transport.js'
export {MAX_QUICK_WATCH_ENDS} from './watch.js'

const MAX_RETRIES = 5
const BACKOFF_BASE_MS = 200
const BACKOFF_CAP_MS = 5_000
/** Retry-After values above this are treated as "give up": the user asked for an answer, not a nap. */
const RETRY_AFTER_CAP_MS = 30_000

const PATCH = {json: 'application/json-patch+json', apply: 'application/apply-patch+yaml'} as const

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
}

export class KubeClient {
  readonly server: string
  readonly context: string
  readonly namespace: string
  private readonly url: URL
  private readonly agent: KubeAgent
  private headers: Credentials['headers']
  /** With the defaults filled in; the upgrades (portforward.ts) and watches (watch.ts) time out, retry and report with them too. */
  readonly options: Required<Omit<KubeClientOptions, 'onRetry' | 'onResponse'>> & Pick<KubeClientOptions, 'onRetry' | 'onResponse'>
  private readonly watcher = new Watcher(this)

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
      ...options,
    }
    this.agent = createAgent(this.url, loaded, tls)
    this.headers = headers
    this.expiresAt = expiresAt
  }

  /** When the current credentials expire (exec plugins' expirationTimestamp). */
  private expiresAt: number | undefined

  /** An exec credential about to expire is fetched again before it is sent, as client-go does (requests, upgrades, watches). */
  async freshCredentials(): Promise<void> {
    if (this.expiresAt !== undefined && Date.now() >= this.expiresAt - CREDENTIAL_EXPIRY_MARGIN_MS) await this.refreshCredentials(this.credentialsGeneration)
  }

  /**
   * What a connection upgrade (pods/portforward, portforward.ts) or a watch needs: the URL of a path
   * and the path as sent, the credential headers, and the agent (the upgrade connects and verifies the
   * server as every request does, without a TLS context of its own). Never logged: the headers hold secrets.
   */
  upgradeTarget(path: string, query: KubeRequest['query'] = {}): WatchTarget {
    const sent = requestPath(this.url, path, query)
    return {url: new URL(sent, this.url), path: sent, headers: {...this.headers, 'User-Agent': this.options.userAgent}, agent: this.agent, describe: this.describe({method: 'GET', path})}
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

  describe(req: Pick<KubeRequest, 'method' | 'path'>): RequestDescription {
    return {method: req.method, path: req.path, server: this.server, context: this.context}
  }

  /** One attempt, no retries, no translation. */
  private once(req: KubeRequest): Promise<RawResponse> {
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
    const path = requestPath(this.url, req.path, req.query)
    return exchange(this.url, this.agent, {method: req.method, path, headers, body, timeoutMs: req.timeoutMs ?? this.options.timeoutMs}, this.options.onResponse)
  }

  private defaultRetry(req: KubeRequest): RetryPolicy {
    if (req.method === 'GET') return 'read'
    if (req.method === 'DELETE') return 'idempotent'
    if (req.method === 'POST') return 'create'
    if (req.method === 'PATCH' && req.contentType !== PATCH.json) return 'idempotent'
    return 'never'
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
    return Math.round(Math.random() * ceiling)
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
      let failure: MeshvmError
      try {
        await this.freshCredentials()
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
        failure = translateHttpError(description, res.status, res.body.toString('utf8'))
        if (policy === 'never' || !isRetryableStatus(res.status) || attempt >= this.options.maxRetries) throw failure
        reason = `HTTP ${res.status}`
        retryAfter = res.headers['retry-after']
      } catch (err) {
        if (err instanceof KubeApiError) throw err
        failure = translateNetworkError(description, err, timeoutMs)
        if (policy === 'never' || !isTransientNetworkError(err) || attempt >= this.options.maxRetries) throw failure
        lostAnswer = req.method !== 'GET'
        reason = (err as NodeJS.ErrnoException).code ?? 'network error'
      }
      const delayMs = this.retryDelay(attempt, retryAfter)
      if (delayMs === undefined) throw translateHttpError(description, 429, '')
      if (req.deadline !== undefined && Date.now() + delayMs >= req.deadline) throw failure
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
      if (req.method !== 'GET' || attempt >= 1) throw malformedAnswer(this.describe(req), why)
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

  /** Pages through a list (paging.ts: pipelined, restarted on 410 without repeating items). */
  listPages<T extends {metadata?: {uid?: string; name?: string; namespace?: string}}>(path: string, query: KubeRequest['query'] = {}, pageSize = 500): AsyncGenerator<ListPage<T>> {
    return listPages<T>(this, path, query, pageSize)
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

  /** Streams watch events until the server closes the stream or `signal` aborts (watch.ts); resolves with the last resourceVersion seen. */
  watch<T extends {metadata?: {resourceVersion?: string}}>(path: string, query: KubeRequest['query'], onEvent: (event: WatchEvent<T>) => void, signal?: AbortSignal): Promise<string | undefined> {
    return this.watcher.watch(path, query, onEvent, signal)
  }
}
