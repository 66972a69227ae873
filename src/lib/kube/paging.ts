/**
 * Paging through a list (`limit`/`continue`), pipelined: KubeClient.listPages is this generator over
 * the client's own requests.
 */
import {KubeApiError, type RequestDescription} from './errors.js'
import {type KubeRequest, malformedAnswer} from './transport.js'

/** Pages a list may take before meshvm stops (a continue token that never ends). */
const MAX_LIST_PAGES = 10_000

export interface ListPage<T> {
  items: T[]
  metadata: {resourceVersion?: string; continue?: string; remainingItemCount?: number}
  apiVersion?: string
  kind?: string
}

/** What paging needs of the client: a request whose raw text is shown to `onText` before it is parsed. */
export interface PageReader {
  request<T>(req: KubeRequest, onText?: (text: string) => boolean): Promise<T>
  describe(req: Pick<KubeRequest, 'method' | 'path'>): RequestDescription
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

/**
 * Pages through a list with `limit`/`continue`. When a continue token expires (410 Gone) the list
 * restarts from a fresh snapshot and items already yielded are skipped, so callers never see an
 * item twice. Memory stays at two pages plus the keys of items seen.
 *
 * Pipelined (docs/decisions/cluster-commands.md): the next page is requested as soon as the current
 * page's text arrives, with the token read from that text (continueTokenOf); a guess the parsed page
 * does not confirm is dropped and the page requested as before. At most one page is read ahead.
 */
export async function* listPages<T extends {metadata?: {uid?: string; name?: string; namespace?: string}}>(
  reader: PageReader,
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
    read.page = reader.request<ListPage<T>>({method: 'GET', path, query: {...query, limit: pageSize, continue: t}}, (text) => {
      read.next = continueTokenOf(text)
      return read.current && prefetch(read)
    })
    // A page read ahead and never used (the caller stopped, or the guess was wrong) fails unheard;
    // a page that is used is awaited below, where its error is thrown.
    read.page.catch(() => undefined)
    return read
  }
  const malformed = (why: string) => malformedAnswer(reader.describe({method: 'GET', path}), why)
  try {
    for (; ; pages++) {
      if (pages >= MAX_LIST_PAGES) throw malformed(`a list that did not end after ${MAX_LIST_PAGES} pages`)
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
        throw malformed('a list whose items are not objects')
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
      if (tokens.has(token)) throw malformed('a list whose continue token repeats')
      tokens.add(token)
    }
  } finally {
    ahead = undefined
  }
}
