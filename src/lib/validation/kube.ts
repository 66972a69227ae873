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
  const base = dns1123Label(value, max)
  if (base) return base
  if (!DNS1035_LABEL.test(value)) return "must start with a letter to be a Service name (DNS-1035 label, e.g. 'web-1')"
  return undefined
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

/** Annotation values are free text, but all annotations of an object share a 256 KiB budget. */
export function annotationsSize(annotations: Record<string, string>): string | undefined {
  let total = 0
  for (const [k, v] of Object.entries(annotations)) total += k.length + v.length
  return total > 256 * 1024 ? `annotations must be no more than 262144 bytes in total (got ${total})` : undefined
}

export function portNumber(n: number): string | undefined {
  if (!Number.isInteger(n) || n < 1 || n > 65535) return 'must be a whole number between 1 and 65535'
  return undefined
}

/** Hostnames for ServiceEntry hosts: a DNS name, optionally with a leading `*.` wildcard; never bare `*`. */
export function serviceEntryHost(host: string): string | undefined {
  if (host === '*') return "a bare '*' would capture all traffic; use a wildcard domain such as '*.example.com'"
  const name = host.startsWith('*.') ? host.slice(2) : host
  const problem = dns1123Subdomain(name)
  return problem ? `must be a DNS name, optionally with a leading '*.' (${problem})` : undefined
}

/** Go duration strings as kubectl accepts them for --request-timeout: 500ms, 30s, 1m30s, or a bare number of seconds. */
export function parseDuration(text: string): number | undefined {
  if (/^\d+$/.test(text)) return Number(text) * 1000
  const re = /(\d+(?:\.\d+)?)(ms|s|m|h)/gy
  let total = 0
  let matched = 0
  let m: RegExpExecArray | null
  while ((m = re.exec(text)) !== null) {
    const value = Number(m[1])
    const unit = m[2]
    total += value * (unit === 'ms' ? 1 : unit === 's' ? 1000 : unit === 'm' ? 60_000 : 3_600_000)
    matched = re.lastIndex
  }
  if (matched !== text.length || text.length === 0) return undefined
  return total
}
