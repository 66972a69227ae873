/**
 * Watches (`?watch=true`): one event per line of a long response, and a bound on re-watch loops.
 * KubeClient.watch is Watcher.watch over the client's connection and credentials.
 */
import type {IncomingMessage} from 'node:http'
import {type RequestDescription, translateHttpError, translateNetworkError} from './errors.js'
import {errorText, jsonTooDeep, type KubeAgent, type KubeRequest, malformedAnswer, maxResponseBytes, openRequest, tooLarge} from './transport.js'
import {sleep} from '../util/sleep.js'

/** A watch that ends sooner than this without a change counts as "closed at once". */
const WATCH_QUICK_END_MS = 1_000
/** Watches of one path closed at once in a row before meshvm gives up. */
export const MAX_QUICK_WATCH_ENDS = 8

export interface WatchEvent<T> {
  type: 'ADDED' | 'MODIFIED' | 'DELETED' | 'BOOKMARK' | 'ERROR'
  object: T
}

/** Where a watch is sent: what KubeClient.upgradeTarget gives (the same agent, credentials and path). */
export interface WatchTarget {
  url: URL
  /** Path and query, as sent. */
  path: string
  headers: Record<string, string | string[]>
  agent: KubeAgent
  describe: RequestDescription
}

/** What watching needs of the client. */
export interface WatchHost {
  readonly options: {readonly timeoutMs: number}
  upgradeTarget(path: string, query: KubeRequest['query']): WatchTarget
  retryDelay(attempt: number, retryAfterHeader: undefined): number | undefined
  freshCredentials(): Promise<void>
}

type Versioned = {metadata?: {resourceVersion?: string}}

export class Watcher {
  /** Per watched path: how many watches in a row ended at once, without a change. */
  private readonly quickEnds = new Map<string, number>()

  constructor(private readonly host: WatchHost) {}

  /**
   * Streams watch events until the server closes the stream or `signal` aborts. Resolves with the
   * last resourceVersion seen so the caller can resume.
   *
   * Re-watch loops are bounded here, for every caller: a watch that the server ends within
   * WATCH_QUICK_END_MS without a change makes the next watch of that path wait (jittered backoff,
   * as for retries), and after MAX_QUICK_WATCH_ENDS such ends in a row the watch fails. Each call
   * removes its abort listener when it ends, so long watches never pile listeners on `signal`.
   */
  async watch<T extends Versioned>(path: string, query: KubeRequest['query'], onEvent: (event: WatchEvent<T>) => void, signal?: AbortSignal): Promise<string | undefined> {
    const watchQuery = {...query, watch: 'true', allowWatchBookmarks: 'true'}
    const quick = this.quickEnds.get(path) ?? 0
    if (quick >= MAX_QUICK_WATCH_ENDS) {
      this.quickEnds.delete(path)
      throw malformedAnswer(this.host.upgradeTarget(path, watchQuery).describe, `the watch was closed at once ${quick} times in a row`)
    }
    if (quick > 0) await sleep(this.host.retryDelay(quick, undefined) ?? 0, signal)
    const typedVersion = typeof query?.resourceVersion === 'string' ? query.resourceVersion : undefined
    if (signal?.aborted) return typedVersion
    await this.host.freshCredentials()
    const started = Date.now()
    let changes = 0
    const target = this.host.upgradeTarget(path, watchQuery)
    const result = await watchOnce<T>(
      target,
      this.host.options.timeoutMs,
      typedVersion,
      (event) => {
        if (event.type === 'ADDED' || event.type === 'MODIFIED' || event.type === 'DELETED') changes++
        onEvent(event)
      },
      signal,
    )
    if (changes === 0 && Date.now() - started < WATCH_QUICK_END_MS && !signal?.aborted) this.quickEnds.set(path, quick + 1)
    else this.quickEnds.delete(path)
    return result
  }
}

/** One watch request: its events, until the server ends the stream or `signal` aborts; resolves with the last resourceVersion. */
function watchOnce<T extends Versioned>(
  target: WatchTarget,
  timeoutMs: number,
  version: string | undefined,
  onEvent: (event: WatchEvent<T>) => void,
  signal?: AbortSignal,
): Promise<string | undefined> {
  const {describe} = target
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
    const onResponse = (res: IncomingMessage): void => {
      const status = res.statusCode ?? 0
      if (status < 200 || status >= 300) {
        errorText(res, (text) => finish(translateHttpError(describe, status, text, res.headers.location)))
        return
      }
      let buffer = ''
      res.setEncoding('utf8')
      res.on('data', (chunk: string) => {
        buffer += chunk
        // One event is one line: a line that grows past the response limit is not an event.
        if (buffer.length > limit) {
          r.destroy()
          finish(translateNetworkError(describe, tooLarge(limit), 0))
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
            finish(malformedAnswer(describe, 'malformed'))
            return
          }
          lastVersion = event.object?.metadata?.resourceVersion ?? lastVersion
          onEvent(event)
        }
      })
      res.on('end', () => finish())
      res.on('error', () => finish())
    }
    const r = openRequest(target.url, target.agent, 'GET', target.path, {...target.headers, Accept: 'application/json'}, onResponse)
    r.on('error', (err) => {
      if (signal?.aborted) finish()
      else finish(translateNetworkError(describe, err, timeoutMs))
    })
    if (signal?.aborted) onAbort()
    else signal?.addEventListener('abort', onAbort, {once: true})
    r.end()
  })
}
