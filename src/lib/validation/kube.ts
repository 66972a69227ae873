/**
 * Kubernetes naming and syntax rules (apimachinery's validation package), as pure functions that
 * return a problem description or undefined. Messages say what would be valid.
 */

const DNS1123_LABEL = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?$/
const DNS1035_LABEL = /^[a-z]([-a-z0-9]*[a-z0-9])?$/
const DNS1123_SUBDOMAIN = /^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*$/
const QUALIFIED_NAME_PART = /^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]$/
const LABEL_VALUE = /^(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])?$/

/** A name checked as apimachinery's validation does: not empty, at most `max` characters, matching `pattern` (else `rule`). */
function checkedName(value: string, max: number, pattern: RegExp, rule: string): string | undefined {
  if (value.length === 0) return 'must not be empty'
  if (value.length > max) return `must be no more than ${max} characters (got ${value.length})`
  return pattern.test(value) ? undefined : rule
}

export function dns1123Label(value: string, max = 63): string | undefined {
  return checkedName(value, max, DNS1123_LABEL, "must be a DNS-1123 label: lower case letters, digits and '-', starting and ending with a letter or digit (e.g. 'my-name')")
}

/** Service names are stricter than most: they must start with a letter. */
export function dns1035Label(value: string, max = 63): string | undefined {
  return dns1123Label(value, max) ?? (DNS1035_LABEL.test(value) ? undefined : "must start with a letter to be a Service name (DNS-1035 label, e.g. 'web-1')")
}

export function dns1123Subdomain(value: string, max = 253): string | undefined {
  return checkedName(value, max, DNS1123_SUBDOMAIN, "must be a DNS-1123 subdomain: lower case letters, digits, '-' and '.', starting and ending with a letter or digit (e.g. 'example.com')")
}

/** Label and annotation keys: `[prefix/]name`, prefix a DNS subdomain, name ≤63 qualified chars. */
export function qualifiedName(key: string): string | undefined {
  if (key.length === 0) return 'key must not be empty'
  const parts = key.split('/')
  if (parts.length > 2) return "key may contain at most one '/' (prefix/name)"
  const [prefixOrName, maybeName] = parts as [string, string | undefined]
  const name = maybeName ?? prefixOrName
  if (maybeName !== undefined) {
    if (prefixOrName.length === 0) return 'key prefix before / must not be empty'
    const p = dns1123Subdomain(prefixOrName)
    if (p) return `key prefix ${JSON.stringify(prefixOrName)} ${p}`
  }
  if (name.length === 0) return 'key name must not be empty'
  if (name.length > 63) return `key name must be no more than 63 characters (got ${name.length})`
  if (!QUALIFIED_NAME_PART.test(name)) {
    return "key name must consist of letters, digits, '-', '_' or '.', and start and end with a letter or digit"
  }
  return undefined
}

export function labelValue(value: string): string | undefined {
  if (value.length > 63) return `value must be no more than 63 characters (got ${value.length})`
  if (!LABEL_VALUE.test(value)) {
    return "value must be empty or consist of letters, digits, '-', '_' or '.', and start and end with a letter or digit"
  }
  return undefined
}

/** An IPv4 or IPv6 address (what `hosts`, ISTIO_SVC_IP and the gateway entry may hold). */
export function ipAddress(value: string): string | undefined {
  // Loaded on first use: every command imports this module, and node:net is not loaded otherwise when stdout is a file.
  const {isIP} = process.getBuiltinModule('node:net') as typeof import('node:net')
  return isIP(value) === 0 ? 'must be an IPv4 or IPv6 address' : undefined
}

/** A host name as Kubernetes stores one (a load balancer's `hostname`): a DNS-1123 subdomain. */
export function hostName(value: string): string | undefined {
  const problem = dns1123Subdomain(value)
  return problem ? `must be a DNS host name (${problem.replace(/^must be /, '')})` : undefined
}

/** A variable name a POSIX shell assigns (`cluster.env` is sourced by the VM's start script). */
export function envVarName(value: string): string | undefined {
  return /^[A-Za-z_][A-Za-z0-9_]*$/.test(value) ? undefined : "must be an environment variable name: letters, digits and '_', not starting with a digit"
}

/** Free text that is written into files read line by line (cluster.env): no control characters. */
export function singleLineText(value: string): string | undefined {
  // eslint-disable-next-line no-control-regex
  return /[\u0000-\u001f\u007f-\u009f\u2028\u2029]/.test(value) ? 'must not contain control characters or line breaks' : undefined
}

/**
 * An Istio cluster ID (`values.global.multiCluster.clusterName`, `--cluster-id`): it is the value of
 * the topology.istio.io/cluster label, so a non-empty label value.
 */
export function clusterIdValue(value: string): string | undefined {
  if (value === '') return 'must not be empty'
  const problem = labelValue(value)
  return problem ? `must be a label value: ${problem.replace(/^value must be /, '')}` : undefined
}

/** Annotation values are free text, but all annotations of an object share a 256 KiB budget. */
export function annotationsSize(annotations: Record<string, string>): string | undefined {
  let total = 0
  for (const [k, v] of Object.entries(annotations)) total += k.length + v.length
  return total > 256 * 1024 ? `annotations must be no more than 262144 bytes in total (got ${total})` : undefined
}

export function portNumber(n: number): string | undefined {
  return Number.isInteger(n) && n >= 1 && n <= 65535 ? undefined : 'must be a whole number between 1 and 65535'
}

/** Hostnames for ServiceEntry hosts: a DNS name, optionally with a leading `*.` wildcard; never bare `*`. */
export function serviceEntryHost(host: string): string | undefined {
  if (host === '*') return "a bare '*' would capture all traffic; use a wildcard domain such as '*.example.com'"
  const name = host.startsWith('*.') ? host.slice(2) : host
  const problem = dns1123Subdomain(name)
  return problem ? `must be a DNS name, optionally with a leading '*.' (${problem})` : undefined
}

/**
 * The longest time meshvm can wait: Node's timers hold at most 2^31-1 ms (about 24.8 days) and fire
 * at once beyond it (with a TimeoutOverflowWarning). Flags that set a wait (time-outs, intervals)
 * refuse longer values: see durationFlag in src/lib/cli/base-command.ts. Durations that are not
 * waits (token lifetimes, probe periods in seconds) have their own, larger limits.
 */
export const MAX_DURATION_MS = 2 ** 31 - 1

const DURATION_UNITS_MS: Record<string, number> = {ms: 1, s: 1000, m: 60_000, h: 3_600_000}

/** A duration in ms, as kubectl's --request-timeout takes one ("90" seconds, "10s", "1m30s", "500ms", "2h"); undefined if not a duration. */
export function parseDuration(text: string): number | undefined {
  if (/^\d+$/.test(text)) return Number(text) * 1000
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy
  let total = 0
  let matched = 0
  for (let m = re.exec(text); m !== null; m = re.exec(text)) {
    total += Number(m[1]) * DURATION_UNITS_MS[m[2]!]!
    matched = re.lastIndex
  }
  return matched === text.length && text.length > 0 ? total : undefined
}

/**
 * An HTTP header value as Go's net/http (httpguts.ValidHeaderFieldValue) accepts it: no control
 * characters (CR and LF would split the header; tab is allowed) and no DEL.
 */
export function httpHeaderValue(value: string): string | undefined {
  // eslint-disable-next-line no-control-regex
  return /[\u0000-\u0008\u000a-\u001f\u007f]/.test(value) ? 'header values must not contain CR, LF or other control characters' : undefined
}

/** What the yaml library makes of the YAML tags that are not JSON data. */
const NOT_DATA: [abstract new (...args: never[]) => unknown, string][] = [
  [Uint8Array, 'binary data (a !!binary tag)'],
  [Set, 'a set (a !!set tag)'],
  [Map, 'an ordered map (a !!omap or !!pairs tag)'],
  [Date, 'a timestamp (write it as a quoted string)'],
]

/**
 * The first place in `value` that is not plain JSON data (what the API server stores): YAML tags
 * such as !!binary, !!set, !!omap or !!timestamp give byte arrays, sets, maps and dates, and a
 * document nested deeper than `maxDepth` is refused. Iterative: a deep document cannot overflow.
 */
export function plainDataProblem(value: unknown, maxDepth = 1000): {path: string; problem: string} | undefined {
  const stack: {v: unknown; path: string; depth: number}[] = [{v: value, path: '', depth: 0}]
  while (stack.length > 0) {
    const {v, path, depth} = stack.pop()!
    if (v === null || typeof v === 'string' || typeof v === 'boolean') continue
    if (typeof v === 'number') {
      if (!Number.isFinite(v)) return {path, problem: 'must be a finite number (.inf and .nan are not JSON)'}
      continue
    }
    if (depth >= maxDepth) return {path, problem: `is nested deeper than ${maxDepth} levels`}
    if (Array.isArray(v)) {
      for (const [i, item] of v.entries()) stack.push({v: item, path: `${path}[${i}]`, depth: depth + 1})
      continue
    }
    if (typeof v === 'object' && Object.getPrototypeOf(v) === Object.prototype) {
      for (const [k, item] of Object.entries(v as Record<string, unknown>)) stack.push({v: item, path: path ? `${path}.${k}` : k, depth: depth + 1})
      continue
    }
    const what = NOT_DATA.find(([type]) => v instanceof type)?.[1] ?? `a ${typeof v}`
    return {path, problem: `is ${what}; only plain strings, numbers, booleans, lists and mappings are allowed`}
  }
  return undefined
}
