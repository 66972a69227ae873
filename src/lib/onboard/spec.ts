/**
 * `meshvm onboard` input: raw flag strings (OnboardInput) are parsed and validated into an
 * OnboardSpec, the typed description every generator works from. Pure: no I/O.
 */
import {flagError, Problems, UsageError} from '../errors.js'
import {sortedRecord, withoutUndefined} from '../util/records.js'
import type {WorkloadGroupLike} from '../bundle/generate.js'
import {annotationsSize, dns1035Label, httpHeaderValue, dns1123Label, dns1123Subdomain, labelValue, parseDuration, portNumber, qualifiedName, serviceEntryHost} from '../validation/kube.js'

export const ISTIO_PROTOCOLS = ['HTTP', 'HTTPS', 'GRPC', 'HTTP2', 'MONGO', 'TCP', 'TLS'] as const
export type IstioProtocol = (typeof ISTIO_PROTOCOLS)[number]

/** Each part of a probe and the `onboard` flag that gives it, in the order command lines name them. */
export const PROBE_FLAGS = {
  http: 'probe-http',
  https: 'probe-https',
  tcp: 'probe-tcp',
  exec: 'probe-exec',
  host: 'probe-host',
  headers: 'probe-header',
  period: 'probe-period',
  timeout: 'probe-timeout',
  initialDelay: 'probe-initial-delay',
  successThreshold: 'probe-success-threshold',
  failureThreshold: 'probe-failure-threshold',
} as const

export const HANDLERS = ['http', 'https', 'tcp', 'exec'] as const

export type ProbeInput = {[K in keyof typeof PROBE_FLAGS]?: K extends 'headers' ? string[] : string}

/** What the user typed (flags or wizard answers), before any parsing. */
export interface OnboardInput {
  name?: string
  namespace?: string
  ports?: string[]
  labels?: string[]
  annotations?: string[]
  serviceAccount?: string
  network?: string
  locality?: string
  weight?: string
  hosts?: string[]
  serviceEntry?: boolean
  createNamespace?: boolean
  createServiceAccount?: boolean
  probe?: ProbeInput
}

export interface PortSpec {
  name: string
  port: number
  targetPort: number
  protocol: IstioProtocol
}

export type ProbeHandler =
  | {kind: 'httpGet'; port: number; path: string; host: string; scheme: 'HTTP' | 'HTTPS'; headers: {name: string; value: string}[]}
  | {kind: 'tcpSocket'; port: number; host: string}
  | {kind: 'exec'; command: string[]}

export interface ProbeSpec {
  handler: ProbeHandler
  periodSeconds?: number
  timeoutSeconds?: number
  initialDelaySeconds?: number
  successThreshold?: number
  failureThreshold?: number
}

export interface OnboardSpec {
  name: string
  namespace: string
  /** Workload labels: spec.metadata.labels of the group, selector of the Service/ServiceEntry. */
  labels: Record<string, string>
  annotations: Record<string, string>
  serviceAccount: string
  network?: string
  locality?: string
  weight?: number
  ports: PortSpec[]
  /** Service (default) or ServiceEntry (`--service-entry`). */
  serviceKind: 'Service' | 'ServiceEntry'
  hosts: string[]
  createNamespace: boolean
  createServiceAccount: boolean
  probe?: ProbeSpec
}

export const DEFAULT_PROBE_HOST = '127.0.0.1'

/** The flags that must be given when there is no terminal to ask on. */
export function missingRequired(input: OnboardInput): string[] {
  const missing: string[] = []
  if (!input.name) missing.push('NAME')
  if (!input.namespace) missing.push('--namespace')
  if (!input.ports || input.ports.length === 0) missing.push('--port')
  return missing
}

/**
 * The spec the input describes. Every problem of the input is reported at once (a UsageErrors, one
 * line each), not just the first: the checks below are independent of each other.
 */
export function parseOnboardInput(input: OnboardInput): OnboardSpec {
  const problems = new Problems()
  const missing = missingRequired(input)
  if (missing.length > 0) {
    problems.add(
      new UsageError(`missing ${missing.join(', ')}: meshvm onboard needs a name, a namespace and at least one port`, [
        'meshvm onboard web -n apps --port http=8080   (or run it in a terminal to be asked)',
      ]),
    )
  }
  const name = input.name ?? ''
  const namespace = input.namespace ?? ''
  const serviceKind = input.serviceEntry ? 'ServiceEntry' : 'Service'

  const nameProblem = name === '' ? undefined : serviceKind === 'Service' ? dns1035Label(name) : dns1123Label(name)
  if (nameProblem) problems.add(flagError('NAME', name, nameProblem))
  const nsProblem = namespace === '' ? undefined : dns1123Label(namespace)
  if (nsProblem) problems.add(flagError('--namespace', namespace, nsProblem))

  const labels = problems.check(() => parseLabels(input.labels ?? [])) ?? {}
  if (!('app' in labels) && !('app.kubernetes.io/name' in labels)) labels.app = name
  const annotations = problems.check(() => parseAnnotations(input.annotations ?? [])) ?? {}

  const serviceAccount = input.serviceAccount ?? 'default'
  const saProblem = dns1123Subdomain(serviceAccount)
  if (saProblem) problems.add(flagError('--service-account', serviceAccount, saProblem))
  if (input.createServiceAccount && serviceAccount === 'default') {
    problems.add(
      new UsageError('--create-service-account: every namespace already has the "default" ServiceAccount', ['give the VMs their own identity: --service-account NAME --create-service-account']),
    )
  }

  const network = problems.check(() => optionalText('--network', input.network, 2048))
  const locality = input.locality === undefined ? undefined : problems.check(() => parseLocality(input.locality!))
  const weight = input.weight === undefined ? undefined : problems.check(() => parseWeight(input.weight!))

  const ports = problems.check(() => parsePorts(input.ports ?? [])) ?? []

  const hosts = input.hosts ?? []
  if (hosts.length > 0 && serviceKind !== 'ServiceEntry') {
    problems.add(
      new UsageError('--host: hosts are set on a ServiceEntry; add --service-entry', [`meshvm onboard ${name || 'NAME'} -n ${namespace || 'NAMESPACE'} --service-entry --host ${hosts[0]} ...`]),
    )
  }
  for (const host of hosts) {
    const problem = serviceEntryHost(host)
    if (problem) problems.add(flagError('--host', host, problem))
  }
  const uniqueHosts = [...new Set(hosts)]
  const probe = input.probe ? problems.check(() => parseProbe(input.probe!)) : undefined
  problems.throwIfAny()

  return withoutUndefined<OnboardSpec>({
    name,
    namespace,
    labels: sortedRecord(labels),
    annotations: sortedRecord(annotations),
    serviceAccount,
    ports,
    serviceKind,
    hosts: uniqueHosts.length > 0 ? uniqueHosts : [`${name}.${namespace}.svc.cluster.local`],
    createNamespace: Boolean(input.createNamespace),
    createServiceAccount: Boolean(input.createServiceAccount),
    network,
    locality,
    weight,
    probe,
  })
}

/**
 * Splits `a=1,b=2` lists (istioctl's comma form) while keeping commas that belong to a value:
 * a comma starts a new item only when what follows looks like `key=`.
 */
export function splitKeyValueList(items: string[]): string[] {
  const out: string[] = []
  for (const item of items) {
    const pieces = item.split(',')
    let current: string | undefined
    for (const piece of pieces) {
      if (current === undefined) current = piece
      else if (/^[A-Za-z0-9][-A-Za-z0-9_./]*=/.test(piece)) {
        out.push(current)
        current = piece
      } else current += ',' + piece
    }
    if (current !== undefined) out.push(current)
  }
  return out
}

function parseKeyValues(flag: string, items: string[], problems: Problems): Record<string, string> {
  const out: Record<string, string> = {}
  for (const item of splitKeyValueList(items)) {
    const eq = item.indexOf('=')
    if (eq < 0) {
      problems.add(flagError(flag, item, 'expected key=value'))
      continue
    }
    const key = item.slice(0, eq)
    const value = item.slice(eq + 1)
    const keyProblem = qualifiedName(key)
    if (keyProblem) problems.add(flagError(flag, item, keyProblem))
    else if (key in out && out[key] !== value) problems.add(flagError(flag, item, `key ${JSON.stringify(key)} is given twice with different values`))
    else out[key] = value
  }
  return out
}

export function parseLabels(items: string[]): Record<string, string> {
  const problems = new Problems()
  const labels = parseKeyValues('--label', items, problems)
  for (const [key, value] of Object.entries(labels)) {
    const problem = labelValue(value)
    if (problem) problems.add(flagError('--label', `${key}=${value}`, problem))
  }
  problems.throwIfAny()
  return labels
}

export function parseAnnotations(items: string[]): Record<string, string> {
  const problems = new Problems()
  const annotations = parseKeyValues('--annotation', items, problems)
  problems.throwIfAny()
  const sizeProblem = annotationsSize(annotations)
  if (sizeProblem) throw flagError('--annotation', undefined, sizeProblem)
  return annotations
}

const PORT_SYNTAX = 'expected name=port[:targetPort][/PROTOCOL], e.g. http=8080 or grpc=9090:19090/GRPC'

/** `name=port[:targetPort][/PROTOCOL]`, repeatable and comma-separated. */
export function parsePorts(items: string[]): PortSpec[] {
  const ports: PortSpec[] = []
  const problems = new Problems()
  for (const item of items.flatMap((i) => i.split(','))) {
    const port = problems.check(() => parsePort(item, ports))
    if (port) ports.push(port)
  }
  problems.throwIfAny()
  return ports
}

function parsePort(item: string, ports: PortSpec[]): PortSpec {
  const m = /^([^=]*)=([^:/]*)(?::([^/]*))?(?:\/(.*))?$/.exec(item.trim())
  if (!m) throw flagError('--port', item, PORT_SYNTAX)
  const [, name = '', portText = '', targetText, protocolText] = m
  const nameProblem = dns1123Label(name, 62)
  if (nameProblem) throw flagError('--port', item, `port name ${nameProblem.replace('must not be empty', 'is required')}`)
  const port = parsePortNumber(portText)
  if (port === undefined) throw flagError('--port', item, `port ${portNumber(Number.NaN)}`)
  let targetPort = port
  if (targetText !== undefined) {
    const t = parsePortNumber(targetText)
    if (t === undefined) throw flagError('--port', item, `target port ${portNumber(Number.NaN)}`)
    targetPort = t
  }
  const protocol = protocolText === undefined ? protocolFromName(name) : parseProtocol(item, protocolText)
  if (ports.some((p) => p.name === name)) throw flagError('--port', item, `port name ${JSON.stringify(name)} is used twice; port names must be unique`)
  if (ports.some((p) => p.port === port)) throw flagError('--port', item, `port ${port} is used twice; port numbers must be unique`)
  return {name, port, targetPort, protocol}
}

function parsePortNumber(text: string): number | undefined {
  if (!/^\d{1,5}$/.test(text)) return undefined
  const n = Number(text)
  return portNumber(n) ? undefined : n
}

function parseProtocol(item: string, text: string): IstioProtocol {
  const upper = text.toUpperCase()
  if ((ISTIO_PROTOCOLS as readonly string[]).includes(upper)) return upper as IstioProtocol
  throw flagError('--port', item, `unknown protocol ${JSON.stringify(text)}; valid protocols: ${ISTIO_PROTOCOLS.join(', ')}`)
}

/** Istio's naming convention: a port named `http` or `http-web` carries HTTP. Anything else is TCP. */
export function protocolFromName(name: string): IstioProtocol {
  const prefix = name.split('-')[0]?.toUpperCase() ?? ''
  return (ISTIO_PROTOCOLS as readonly string[]).includes(prefix) ? (prefix as IstioProtocol) : 'TCP'
}

function optionalText(flag: string, value: string | undefined, max: number): string | undefined {
  if (value === undefined) return undefined
  if (value.length === 0) throw flagError(flag, value, 'must not be empty')
  if (value.length > max) throw flagError(flag, undefined, `must be no more than ${max} characters (got ${value.length})`)
  return value
}

/** `region[/zone[/subzone]]`, as Istio's locality label is written. */
function parseLocality(value: string): string {
  optionalText('--locality', value, 2048)
  const parts = value.split('/')
  if (parts.length > 3 || parts.some((p) => p.length === 0 || /\s/.test(p))) {
    throw flagError('--locality', value, 'expected region[/zone[/subzone]], e.g. us-east-1/us-east-1a')
  }
  return value
}

function parseWeight(value: string): number {
  if (!/^\d+$/.test(value) || Number(value) > 4294967295) {
    throw flagError('--weight', value, 'must be a whole number between 0 and 4294967295')
  }
  return Number(value)
}

function parseProbe(input: ProbeInput): ProbeSpec | undefined {
  const problems = new Problems()
  const handlers = HANDLERS.filter((k) => input[k] !== undefined)
  const timing = {
    periodSeconds: problems.check(() => parseSeconds('--probe-period', input.period, 1)),
    timeoutSeconds: problems.check(() => parseSeconds('--probe-timeout', input.timeout, 1)),
    initialDelaySeconds: problems.check(() => parseSeconds('--probe-initial-delay', input.initialDelay, 0)),
    successThreshold: problems.check(() => parseCount('--probe-success-threshold', input.successThreshold)),
    failureThreshold: problems.check(() => parseCount('--probe-failure-threshold', input.failureThreshold)),
  }
  const timingGiven = Object.entries(timing).filter(([, v]) => v !== undefined)
  if (handlers.length === 0) {
    const given = Object.entries(PROBE_FLAGS).find(([k]) => (k === 'headers' ? (input.headers ?? []).length > 0 : input[k as keyof ProbeInput] !== undefined))
    if (given) problems.add(new UsageError(`--${given[1]}: needs a probe; add one of --probe-http, --probe-https, --probe-tcp or --probe-exec`))
    problems.throwIfAny()
    return undefined
  }
  if (handlers.length > 1) {
    problems.add(new UsageError(`--probe-${handlers[0]} and --probe-${handlers[1]}: a probe has exactly one handler; choose one of --probe-http, --probe-https, --probe-tcp, --probe-exec`))
  }
  const kind = handlers[0]!
  const host = input.host ?? DEFAULT_PROBE_HOST
  if (input.host !== undefined && kind === 'exec') problems.add(new UsageError('--probe-host: an exec probe runs a command and has no host'))
  else if (input.host !== undefined && (input.host.length === 0 || /[\s/]/.test(input.host))) problems.add(flagError('--probe-host', input.host, 'must be an IP address or host name'))
  if ((input.headers ?? []).length > 0 && kind !== 'http' && kind !== 'https') {
    problems.add(new UsageError('--probe-header: headers apply to --probe-http and --probe-https only'))
  }
  const handler = problems.check(() => probeHandler(input, kind, host))
  if (timing.timeoutSeconds !== undefined && timing.periodSeconds !== undefined && timing.timeoutSeconds > timing.periodSeconds) {
    problems.add(flagError('--probe-timeout', input.timeout, `must not be longer than --probe-period (${timing.periodSeconds}s)`))
  }
  problems.throwIfAny()
  return {handler: handler!, ...Object.fromEntries(timingGiven)}
}

function probeHandler(input: ProbeInput, kind: 'http' | 'https' | 'tcp' | 'exec', host: string): ProbeHandler {
  if (kind === 'http' || kind === 'https') {
    const flag = `--probe-${kind}`
    const text = input[kind] as string
    const m = /^(\d{1,5})(\/.*)?$/.exec(text)
    if (!m) throw flagError(flag, text, 'expected PORT[/PATH], e.g. 8080/healthz')
    const port = Number(m[1])
    if (portNumber(port)) throw flagError(flag, text, `port ${portNumber(port)}`)
    const path = m[2] ?? '/'
    if (/\s/.test(path)) throw flagError(flag, text, 'path must not contain spaces')
    return {kind: 'httpGet', port, path, host, scheme: kind === 'https' ? 'HTTPS' : 'HTTP', headers: parseHeaders(input.headers ?? [])}
  }
  if (kind === 'tcp') {
    const text = input.tcp as string
    const port = /^\d{1,5}$/.test(text) ? Number(text) : Number.NaN
    if (portNumber(port)) throw flagError('--probe-tcp', text, `expected PORT: ${portNumber(port)}`)
    return {kind: 'tcpSocket', port, host}
  }
  const command = splitCommand(input.exec as string)
  if (command.length === 0) throw flagError('--probe-exec', input.exec, "expected a command, e.g. '/usr/local/bin/check --quick'")
  return {kind: 'exec', command}
}

const INT32_MAX = 2147483647

/** Whole seconds, as a number (`10`) or a duration (`10s`, `1m`). */
function parseSeconds(flag: string, text: string | undefined, min: number): number | undefined {
  if (text === undefined) return undefined
  const ms = parseDuration(text)
  if (ms === undefined || ms % 1000 !== 0 || ms / 1000 < min || ms / 1000 > INT32_MAX) {
    throw flagError(flag, text, `expected a whole number of seconds ${min > 0 ? `of at least ${min}` : '(0 or more)'}, e.g. 10 or 10s`)
  }
  return ms / 1000
}

function parseCount(flag: string, text: string | undefined): number | undefined {
  if (text === undefined) return undefined
  if (!/^\d+$/.test(text) || Number(text) < 1 || Number(text) > INT32_MAX) throw flagError(flag, text, 'expected a whole number of at least 1')
  return Number(text)
}

function parseHeaders(items: string[]): {name: string; value: string}[] {
  return items.map((item) => {
    const colon = item.indexOf(':')
    const name = colon < 0 ? '' : item.slice(0, colon).trim()
    if (colon < 0 || !/^[A-Za-z0-9-]+$/.test(name)) throw flagError('--probe-header', item, 'expected Name:Value, e.g. Host:web.example.com')
    const bad = httpHeaderValue(item)
    if (bad) throw flagError('--probe-header', item, bad)
    return {name, value: item.slice(colon + 1).trim()}
  })
}

/**
 * Splits a command line the way a POSIX shell would for simple cases: whitespace separates words,
 * single quotes keep text literally, double quotes allow \" and \\ escapes.
 */
export function splitCommand(text: string): string[] {
  const words: string[] = []
  let current = ''
  let inWord = false
  let quote: "'" | '"' | undefined
  for (let i = 0; i < text.length; i++) {
    const c = text[i]!
    if (quote === "'") {
      if (c === "'") quote = undefined
      else current += c
    } else if (quote === '"') {
      if (c === '"') quote = undefined
      else if (c === '\\' && (text[i + 1] === '"' || text[i + 1] === '\\')) current += text[++i]
      else current += c
    } else if (c === "'" || c === '"') {
      quote = c
      inWord = true
    } else if (c === '\\' && i + 1 < text.length) {
      current += text[++i]
      inWord = true
    } else if (/\s/.test(c)) {
      if (inWord) words.push(current)
      current = ''
      inWord = false
    } else {
      current += c
      inWord = true
    }
  }
  if (quote) throw flagError('--probe-exec', text, `unterminated ${quote} quote`)
  if (inWord) words.push(current)
  return words
}

/**
 * The flags-shaped input equivalent to a WorkloadGroup (onboard -f), used to derive its Service: also
 * what doctor's fix for a missing Service applies, so that onboard --apply takes the Service over.
 */
export function inputFromWorkloadGroup(wg: WorkloadGroupLike, f: {'service-entry'?: boolean; host?: string[]; 'create-namespace'?: boolean; 'create-service-account'?: boolean}): OnboardInput {
  const template = wg.spec.template ?? {}
  return {
    name: wg.metadata.name,
    namespace: wg.metadata.namespace,
    ports: Object.entries(template.ports ?? {}).map(([name, port]) => `${name}=${port}`),
    labels: Object.entries(wg.spec.metadata?.labels ?? {}).map(([k, v]) => `${k}=${v}`),
    serviceAccount: template.serviceAccount || 'default',
    serviceEntry: f['service-entry'] ? true : undefined,
    hosts: f.host,
    createNamespace: f['create-namespace'],
    createServiceAccount: f['create-service-account'],
  }
}
