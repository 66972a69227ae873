/**
 * Fault injection, per route: a test adds rules and the server applies the first one that matches a
 * request (latency first, then the failure). Rules run `times` times (default: until removed).
 */

export interface FaultRule {
  /** HTTP method to match (any when unset). */
  method?: string
  /** Path prefix (string) or pattern (RegExp) matched against the URL path. */
  path?: string | RegExp
  /** Only requests whose query has this parameter (e.g. `continue`, `watch`). */
  query?: string
  times?: number
  latencyMs?: number
  /** Answer with this HTTP status and a Status body (429 and 503 carry Retry-After when set). */
  status?: number
  retryAfterSeconds?: number
  message?: string
  /** Destroy the connection without an answer. */
  reset?: boolean
  /** Send the headers and half of the body, then close. */
  truncate?: boolean
  /** Answer 200 with a body that is not JSON. */
  malformed?: boolean
  /** Answer 410 Expired to a list that carries a continue token. */
  expireContinue?: boolean
}

export interface ActiveFault extends FaultRule {
  hits: number
}

export class Faults {
  private rules: ActiveFault[] = []

  /** Adds a rule; returns a function that removes it. */
  add(rule: FaultRule): () => void {
    const active = {...rule, hits: 0}
    this.rules.push(active)
    return () => {
      this.rules = this.rules.filter((r) => r !== active)
    }
  }

  clear(): void {
    this.rules = []
  }

  /** The rule for this request, counting it as used. */
  take(method: string, path: string, query: URLSearchParams): ActiveFault | undefined {
    const rule = this.rules.find(
      (r) =>
        (!r.method || r.method === method) &&
        (!r.path || (typeof r.path === 'string' ? path.startsWith(r.path) : r.path.test(path))) &&
        (!r.query || query.has(r.query)) &&
        (r.times === undefined || r.hits < r.times),
    )
    if (rule) rule.hits++
    return rule
  }
}
