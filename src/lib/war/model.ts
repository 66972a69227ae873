/**
 * Workload registrations, one model for both kinds the cluster may hold:
 *
 * - Tetrate's `WorkloadAutoRegistration` (WAR, `runtime.onboarding.tetrate.io/v1alpha1`), created by
 *   the Workload Onboarding Plane when an agent onboards a VM or ECS task;
 * - Istio's auto-registered `WorkloadEntry`, created by istiod when a sidecar joins a WorkloadGroup
 *   (annotations `istio.io/autoRegistrationGroup`, `istio.io/connectedAt`, `istio.io/disconnectedAt`,
 *   `istio.io/workloadController`; health in the `Healthy` condition).
 *
 * Both become a `Registration` row for `meshvm war list`, a `kubectl describe`-style text, a staleness
 * verdict against the current WorkloadGroup and a prune verdict. Pure: no I/O, no Kubernetes client.
 *
 * Objects come from the API server or from YAML files, so every read is defensive, and the WAR keys
 * are read in both spellings TSB uses (`instance_id` in its YAML examples, `instanceId` in JSON).
 *
 * Where the WAR keeps its WorkloadGroup snapshot is not documented by TSB. meshvm reads it from
 * `status.workloadGroupSnapshot` (a WorkloadGroup `spec`) when present; when it is absent and the
 * WAR's WorkloadEntry is known, the WorkloadEntry (which istiod/TSB built from the group's template)
 * is compared with the group instead.
 */
import {isDeepStrictEqual} from 'node:util'
import {annotationsOf, conditionOf, conditionsOf, conditionStatus, labelsOf, ownerOfKind, type Condition, type KubeObject} from '../kube/object.js'
import {isRecord, type JsonRecord} from '../util/records.js'
import {age} from '../output/age.js'
import type {Column} from '../output/table.js'
import {unifiedDiff} from '../util/diff.js'
import {toYaml} from '../yaml.js'

// ---- object types ---------------------------------------------------------------------------

/**
 * A WAR's `spec.registration`, TSB's Registration message: agent and sidecar versions, host addresses
 * (`ip`, `type`), workload labels (and `annotations`, not in the documented schema: shown only when
 * present) and settings (`connectedOver`). Read defensively below; typed as far as other modules read it.
 */
export interface WarRegistrationInfo {
  workload?: {labels?: Record<string, string>; annotations?: Record<string, string>}
  [other: string]: unknown
}

export interface WorkloadEntrySpec {
  address?: string
  ports?: Record<string, number>
  labels?: Record<string, string>
  network?: string
  locality?: string
  weight?: number
  serviceAccount?: string
}

export interface WorkloadGroupSpec {
  metadata?: {labels?: Record<string, string>; annotations?: Record<string, string>}
  template?: WorkloadEntrySpec
  probe?: Record<string, unknown>
}

export interface WorkloadGroup extends KubeObject {
  spec?: WorkloadGroupSpec
}

export interface WarObject extends KubeObject {
  /** `identity` is TSB's WorkloadIdentity, a oneof of platform identities (aws ec2/ecs, gcp gce, azure compute, jwt): see identityRows. */
  spec?: {identity?: JsonRecord; registration?: WarRegistrationInfo}
  status?: {
    observedGeneration?: number
    conditions?: Condition[]
    activeAgentConnection?: {connectedTo?: string}
    /** meshvm's reading of the group snapshot TSB takes at onboarding (see the module comment). */
    workloadGroupSnapshot?: WorkloadGroupSpec
  }
}

export interface WorkloadEntryObject extends KubeObject {
  spec?: WorkloadEntrySpec
  status?: {conditions?: Condition[]}
}

/** A core/v1 or events.k8s.io/v1 Event, as far as `describe` needs it. */
export interface EventLike {
  type?: string
  reason?: string
  note?: string
  message?: string
  count?: number
  source?: {component?: string; host?: string}
  reportingController?: string
  reportingComponent?: string
  firstTimestamp?: string
  lastTimestamp?: string
  eventTime?: string
  series?: {count?: number; lastObservedTime?: string}
  metadata?: {creationTimestamp?: string}
}

// ---- constants ------------------------------------------------------------------------------

export const WAR_KIND = 'WorkloadAutoRegistration'

/**
 * The HBONE tunnel label: a WorkloadEntry that carries it (value `http`) is reached by ambient
 * workloads over HBONE (mTLS on 15008). Istio 1.31's auto-registration puts it on the entries of
 * HBONE-capable proxies when it creates them (release note 60788); entries made before the upgrade
 * are reached over plaintext until they re-register or are labelled.
 */
export const TUNNEL_LABEL = 'networking.istio.io/tunnel'
/**
 * The condition Istio 1.31 sets on WorkloadEntries (release note 59993); istioctl analyze reports it False
 * since 1.26. Istio writes the type with its prefix (pilot/pkg/model/service.go: "istio.io/WaypointBound").
 */
export const WAYPOINT_BOUND_CONDITIONS = ['istio.io/WaypointBound', 'WaypointBound'] as const

export const WE_ANNOTATIONS = {
  autoRegistrationGroup: 'istio.io/autoRegistrationGroup',
  connectedAt: 'istio.io/connectedAt',
  disconnectedAt: 'istio.io/disconnectedAt',
  workloadController: 'istio.io/workloadController',
} as const

/** TSB removes a registration whose agent stayed disconnected this long (Managing Onboarded Workloads). */
export const DEFAULT_WAR_GRACE_PERIOD_MS = 5 * 60_000

// ---- the common row -------------------------------------------------------------------------

export type ConnectedStatus = 'True' | 'False' | 'Unknown'

export interface Registration {
  source: 'war' | 'workloadentry'
  namespace: string
  name: string
  /** The WorkloadGroup the workload joined; '' when it cannot be told. */
  group: string
  agentConnected: ConnectedStatus
  /** WAR: the Workload Onboarding Plane instance; WorkloadEntry: the istiod instance. */
  connectedTo?: string
  /** `aws/ec2 i-0123 us-east-2b`, `jwt ISSUER/SUBJECT`, `serviceaccount NS/SA`; '' when unknown. */
  identity: string
  addresses: string[]
  agentVersion?: string
  sidecarVersion?: string
  /** The registration was made from an older version of its WorkloadGroup (re-onboard to apply). */
  stale: boolean
  /** '' when the object has none. */
  creationTimestamp: string
  disconnectedAt?: string
  /**
   * The entry's networking.istio.io/tunnel label: its value, '' when the entry has none, undefined
   * when the entry is not known (a WAR listed without its WorkloadEntry).
   */
  tunnel?: string
  /** The entry's WaypointBound condition: True, False or Unknown; '' when it has none; undefined when the entry is not known. */
  waypointBound?: string
}

/**
 * What `war list` needs of a registration without -o wide: its row and its place in the order. Built
 * by the same readers as the Registration (which contains it), at a fraction of the cost: no identity,
 * addresses, versions or owner lookups for each of 10,000 rows.
 */
export type RegistrationSummary = Pick<Registration, 'source' | 'namespace' | 'name' | 'agentConnected' | 'creationTimestamp'>

// ---- defensive readers ----------------------------------------------------------------------

export const camel = (name: string): string => name.replace(/_([a-z0-9])/g, (_m, c: string) => c.toUpperCase())
const snake = (name: string): string => name.replace(/[A-Z]/g, (c) => `_${c.toLowerCase()}`)

/**
 * Both spellings of a field name, computed once per name: `field` runs for every field of every
 * registration (tens of thousands of times in a large list), and the names are the code's own literals.
 */
const keyStyles = new Map<string, readonly [camel: string, snake: string]>()
function stylesOf(name: string): readonly [string, string] {
  let styles = keyStyles.get(name)
  if (styles === undefined) {
    const c = camel(name)
    styles = [c, snake(c)]
    keyStyles.set(name, styles)
  }
  return styles
}

/** `obj[name]` under either key style: `field(x, 'instanceId')` also finds `instance_id`. */
export function field(obj: unknown, name: string): unknown {
  if (!isRecord(obj)) return undefined
  const [c, s] = stylesOf(name)
  const v = obj[c]
  if (v !== undefined && v !== null) return v
  return obj[s] ?? undefined
}

/** Nested `field` lookups. */
export function dig(obj: unknown, ...names: string[]): unknown {
  let cur = obj
  for (const n of names) cur = field(cur, n)
  return cur
}

/** A scalar as text; '' and non-scalars are undefined. YAML 1.1 timestamps (Date) become RFC 3339. */
export function text(v: unknown): string | undefined {
  if (typeof v === 'string') return v === '' ? undefined : v
  if (typeof v === 'number' || typeof v === 'boolean' || typeof v === 'bigint') return String(v)
  if (v instanceof Date) return Number.isNaN(v.getTime()) ? undefined : v.toISOString().replace(/\.000Z$/, 'Z')
  return undefined
}

export function stringMap(v: unknown): Record<string, string> {
  if (!isRecord(v)) return {}
  const out: Record<string, string> = {}
  // for…in, not Object.entries: this runs for the labels and annotations of every registration listed.
  for (const k in v) if (Object.hasOwn(v, k)) out[k] = text(v[k]) ?? ''
  return out
}

/** Name, namespace and creation time ('' when absent): what a row needs of `meta`, without copying labels and annotations. */
function basicMeta(obj: unknown): {name: string; namespace: string; creationTimestamp: string} {
  const m = isRecord(obj) ? obj.metadata : undefined
  return {
    name: text(field(m, 'name')) ?? '',
    namespace: text(field(m, 'namespace')) ?? '',
    creationTimestamp: text(field(m, 'creationTimestamp')) ?? '',
  }
}

export function meta(obj: unknown): {name: string; namespace: string; creationTimestamp: string; labels: Record<string, string>; annotations: Record<string, string>; generation?: number} {
  const m = isRecord(obj) ? obj.metadata : undefined
  const generation = isRecord(m) && typeof m.generation === 'number' ? m.generation : undefined
  // Named fields, not a spread of basicMeta's object: meta runs for every entry of large lists, and
  // the spread made it several times slower.
  const {name, namespace, creationTimestamp} = basicMeta(obj)
  return {
    name,
    namespace,
    creationTimestamp,
    labels: labelsOf(obj),
    annotations: annotationsOf(obj),
    ...(generation === undefined ? {} : {generation}),
  }
}

/** The keys in UTF-16 code unit order (the default sort's), for deterministic output. */
export function sortedKeys(record: Record<string, unknown>): string[] {
  return Object.keys(record).sort()
}

// ---- identity -------------------------------------------------------------------------------

/** The identity's platform, e.g. `aws/ec2`, `aws/ecs`, `gcp/gce`, `azure/compute`, `jwt`; '' when there is none. */
export function identityKind(identity: unknown): string {
  if (!isRecord(identity)) return ''
  const aws = field(identity, 'aws')
  if (isRecord(aws)) return isRecord(field(aws, 'ec2')) ? 'aws/ec2' : isRecord(field(aws, 'ecs')) ? 'aws/ecs' : 'aws'
  if (isRecord(field(identity, 'gcp'))) return isRecord(dig(identity, 'gcp', 'gce')) ? 'gcp/gce' : 'gcp'
  if (isRecord(field(identity, 'azure'))) return isRecord(dig(identity, 'azure', 'compute')) ? 'azure/compute' : 'azure'
  if (isRecord(field(identity, 'jwt'))) return 'jwt'
  return sortedKeys(identity)[0] ?? ''
}

export const joinParts = (...parts: (string | undefined)[]): string => parts.filter((p): p is string => p !== undefined && p !== '').join(' ')

/** One-line identity: `aws/ec2 i-0123 us-east-2b`, `aws/ecs CLUSTER/TASK ZONE`, `jwt ISSUER/SUBJECT`. */
export function identityString(identity: unknown): string {
  const kind = identityKind(identity)
  const aws = field(identity, 'aws')
  switch (kind) {
    case 'aws/ec2':
      return joinParts(kind, text(dig(aws, 'ec2', 'instanceId')), text(field(aws, 'zone')))
    case 'aws/ecs': {
      const cluster = text(dig(aws, 'ecs', 'cluster'))
      const task = text(dig(aws, 'ecs', 'taskId'))
      return joinParts(kind, cluster && task ? `${cluster}/${task}` : (task ?? cluster), text(field(aws, 'zone')))
    }
    case 'aws':
      return joinParts(kind, text(field(aws, 'account')), text(field(aws, 'zone')))
    case 'gcp/gce':
    case 'gcp':
      return joinParts(kind, text(dig(identity, 'gcp', 'gce', 'instanceId')), text(dig(identity, 'gcp', 'zone')))
    case 'azure/compute':
    case 'azure':
      return joinParts(kind, text(dig(identity, 'azure', 'compute', 'instanceId')), text(dig(identity, 'azure', 'resourceGroup')))
    case 'jwt': {
      const issuer = text(dig(identity, 'jwt', 'issuer'))?.replace(/\/+$/, '')
      const subject = text(dig(identity, 'jwt', 'subject'))
      return joinParts(kind, issuer !== undefined || subject !== undefined ? `${issuer ?? ''}/${subject ?? ''}` : undefined)
    }
    default:
      return kind
  }
}

/** The describe rows of each part of an identity, in order: label → path within that part (dotted). */
const IDENTITY_FIELDS: [part: string, fields: Record<string, string>][] = [
  ['aws', {Partition: 'partition', Account: 'account', Region: 'region', Zone: 'zone'}],
  ['aws.ec2', {'Instance ID': 'instanceId', 'IAM Role': 'iamRole.name'}],
  ['aws.ecs', {Cluster: 'cluster', 'Task ID': 'taskId', 'IAM Role': 'iamRole.name'}],
  ['gcp', {'Project Number': 'projectNumber', 'Project ID': 'projectId', Region: 'region', Zone: 'zone', 'Instance ID': 'gce.instanceId'}],
  ['azure', {Subscription: 'subscription', 'Resource Group': 'resourceGroup', 'Instance ID': 'compute.instanceId'}],
  ['jwt', {Issuer: 'issuer', Subject: 'subject'}],
]

/** The identity's fields as describe rows, in a fixed order. */
export function identityRows(identity: unknown): [string, string[]][] {
  const rows: [string, string[]][] = []
  const kind = identityKind(identity)
  if (kind !== '') rows.push(['Kind', [kind]])
  for (const [part, fields] of IDENTITY_FIELDS) {
    const p = dig(identity, ...part.split('.'))
    if (!isRecord(p)) continue
    for (const [label, path] of Object.entries(fields)) {
      const v = text(dig(p, ...path.split('.')))
      if (v !== undefined) rows.push([label, [v]])
    }
  }
  const attrs = dig(identity, 'jwt', 'attributes')
  if (isRecord(attrs) && Object.keys(attrs).length > 0) rows.push(['Attributes', sortedKeys(attrs).map((k) => `${k}=${text(attrs[k]) ?? JSON.stringify(attrs[k])}`)])
  return rows
}

// ---- staleness ------------------------------------------------------------------------------

/** Key order, null/undefined and empty maps/lists do not make two specs differ. */
function canonical(v: unknown): unknown {
  if (v === null || v === undefined) return undefined
  if (v instanceof Date) return text(v)
  if (Array.isArray(v)) {
    const items = v.map(canonical).filter((x) => x !== undefined)
    return items.length > 0 ? items : undefined
  }
  if (isRecord(v)) {
    const entries = sortedKeys(v)
      .map((k) => [k, canonical(v[k])] as const)
      .filter(([, x]) => x !== undefined)
    return entries.length > 0 ? Object.fromEntries(entries) : undefined
  }
  return v
}

const render = (v: unknown): string => toYaml(canonical(v) ?? {})

/**
 * Whether `render` gives `a` and `b` the same text, without rendering: it is a function of the
 * canonical value, so equal canonical values render alike. (Unequal ones are rendered and compared:
 * `war list -o wide` checks every registration, nearly all up to date, and the YAML of both sides costs
 * ~170 µs a registration.)
 */
const renderSame = (a: unknown, b: unknown): boolean => isDeepStrictEqual(canonical(a) ?? {}, canonical(b) ?? {})

/** The WorkloadGroup spec the WAR was made from, when the WAR records it. */
export function warSnapshot(war: WarObject | unknown): WorkloadGroupSpec | undefined {
  const snap = dig(war, 'status', 'workloadGroupSnapshot')
  return isRecord(snap) ? (snap as WorkloadGroupSpec) : undefined
}

/**
 * Unified diff (snapshot → current group spec), YAML-rendered with sorted keys; '' when they are
 * equal or when the WAR records no snapshot.
 */
export function staleDifference(war: WarObject | unknown, group: WorkloadGroup | unknown): string {
  const snap = warSnapshot(war)
  if (snap === undefined || !isRecord(group)) return ''
  const current = field(group, 'spec')
  if (renderSame(snap, current)) return ''
  const w = meta(war)
  const g = meta(group)
  return unifiedDiff(render(snap), render(current), {
    from: `workloadautoregistration ${w.namespace}/${w.name} (snapshot)`,
    to: `workloadgroup ${g.namespace}/${g.name} (current)`,
  })
}

/** What a WorkloadEntry takes from its group's template (Istio's workloadEntryFromGroup), read from a template or an entry's spec. */
function templateFields(spec: unknown, network: boolean, locality: boolean): JsonRecord {
  const out: JsonRecord = {serviceAccount: text(field(spec, 'serviceAccount')), ports: field(spec, 'ports'), weight: field(spec, 'weight')}
  if (network) out.network = text(field(spec, 'network'))
  if (locality) out.locality = text(field(spec, 'locality'))
  return out
}

/**
 * Unified diff of the group-derived part of a WorkloadEntry against what the current group would
 * produce (template service account, ports, weight, network/locality when set, group labels and
 * annotations); '' when the entry is up to date. Labels the workload added itself are ignored.
 */
export function workloadEntryDifference(we: WorkloadEntryObject | unknown, group: WorkloadGroup | unknown): string {
  if (!isRecord(we) || !isRecord(group)) return ''
  const groupSpec = field(group, 'spec')
  const tmpl = field(groupSpec, 'template')
  // The proxy may set its own network/locality; they are only expected when the template sets them.
  const network = text(field(tmpl, 'network')) !== undefined
  const locality = text(field(tmpl, 'locality')) !== undefined
  const labels = {...stringMap(field(tmpl, 'labels')), ...stringMap(dig(groupSpec, 'metadata', 'labels'))}
  const annotations = stringMap(dig(groupSpec, 'metadata', 'annotations'))
  const spec = field(we, 'spec')
  const m = meta(we)
  const subset = (record: Record<string, string>, keys: string[]): Record<string, string | undefined> => Object.fromEntries(keys.map((k) => [k, record[k]]))
  const expected = {...templateFields(tmpl, network, locality), labels, annotations}
  const actual = {...templateFields(spec, network, locality), labels: subset(stringMap(field(spec, 'labels')), Object.keys(labels)), annotations: subset(m.annotations, Object.keys(annotations))}
  if (renderSame(actual, expected)) return ''
  const g = meta(group)
  return unifiedDiff(render(actual), render(expected), {from: `workloadentry ${m.namespace}/${m.name}`, to: `workloadgroup ${g.namespace}/${g.name} (current)`})
}

// ---- rows -----------------------------------------------------------------------------------

/** The HBONE tunnel label of a WorkloadEntry ('' when it has none), from its labels or its spec's. */
export function tunnelOf(we: unknown, labels: Record<string, string> = labelsOf(we)): string {
  // Read directly, not through stringMap: this runs for every row of `war list -o wide`.
  const specLabels = dig(we, 'spec', 'labels')
  return labels[TUNNEL_LABEL] ?? (isRecord(specLabels) ? text(specLabels[TUNNEL_LABEL]) : undefined) ?? ''
}

/** The WaypointBound condition of a WorkloadEntry, if it has one. */
export function waypointBoundOf(we: unknown): Condition | undefined {
  return conditionsOf(we).find((c) => c.type === WAYPOINT_BOUND_CONDITIONS[0] || c.type === WAYPOINT_BOUND_CONDITIONS[1])
}

/** Tunnel and WaypointBound of an entry, as a row shows them. */
function ambientFields(we: unknown, labels?: Record<string, string>): Pick<Registration, 'tunnel' | 'waypointBound'> {
  const wb = waypointBoundOf(we)
  return {tunnel: tunnelOf(we, labels), waypointBound: wb ? conditionStatus(wb) : ''}
}

/** True for WorkloadEntries istiod auto-registered (they name their group in an annotation). */
export function isAutoRegisteredWorkloadEntry(obj: unknown): boolean {
  return annotationsOf(obj)[WE_ANNOTATIONS.autoRegistrationGroup] !== undefined
}

/**
 * A WAR as a row. `group` is its current WorkloadGroup (for `stale`); `workloadEntry` is the entry it
 * owns, compared with the group when the WAR records no snapshot.
 */
export function registrationFromWar(obj: WarObject | unknown, group?: WorkloadGroup, workloadEntry?: WorkloadEntryObject): Registration {
  const {m, connected, agentConnected} = warBasics(obj)
  const reg = dig(obj, 'spec', 'registration')
  const addresses = dig(reg, 'host', 'addresses')
  let stale = false
  if (group !== undefined) {
    stale = warSnapshot(obj) !== undefined ? staleDifference(obj, group) !== '' : workloadEntry !== undefined && workloadEntryDifference(workloadEntry, group) !== ''
  }
  const out: Registration = {
    source: 'war',
    namespace: m.namespace,
    name: m.name,
    group: ownerOfKind(obj, 'WorkloadGroup')?.name || (group ? meta(group).name : ''),
    agentConnected,
    identity: identityString(dig(obj, 'spec', 'identity')),
    addresses: Array.isArray(addresses) ? addresses.map((a) => text(field(a, 'ip'))).filter((ip): ip is string => ip !== undefined) : [],
    stale,
    creationTimestamp: m.creationTimestamp,
  }
  const connectedTo = text(dig(obj, 'status', 'activeAgentConnection', 'connectedTo'))
  if (connectedTo !== undefined && agentConnected !== 'False') out.connectedTo = connectedTo
  const agentVersion = text(dig(reg, 'agent', 'version'))
  if (agentVersion !== undefined) out.agentVersion = agentVersion
  const sidecarVersion = text(dig(reg, 'sidecar', 'istio', 'version'))
  if (sidecarVersion !== undefined) out.sidecarVersion = sidecarVersion
  const since = text(connected?.lastTransitionTime)
  if (agentConnected === 'False' && since !== undefined) out.disconnectedAt = since
  if (workloadEntry !== undefined) Object.assign(out, ambientFields(workloadEntry))
  return out
}

/** A WAR's name, namespace and creation time, and its AgentConnected condition. */
function warBasics(obj: unknown): {m: ReturnType<typeof basicMeta>; connected: Condition | undefined; agentConnected: ConnectedStatus} {
  const connected = conditionOf(obj, 'AgentConnected')
  return {m: basicMeta(obj), connected, agentConnected: conditionStatus(connected)}
}

/** Whether istiod sees the entry's proxy connected, from its connectedAt/disconnectedAt annotations. */
function workloadEntryConnected(annotations: Record<string, string>): ConnectedStatus {
  const connectedAt = annotations[WE_ANNOTATIONS.connectedAt]
  const disconnectedAt = annotations[WE_ANNOTATIONS.disconnectedAt]
  if (disconnectedAt) {
    // istiod drops disconnectedAt on reconnect; if both are left, the later one wins.
    const reconnected = connectedAt !== undefined && Date.parse(connectedAt) > Date.parse(disconnectedAt)
    return reconnected ? 'True' : 'False'
  }
  return connectedAt ? 'True' : 'Unknown'
}

/** The summary of a WAR (what registrationFromWar gives for these fields). */
export function summaryFromWar(obj: WarObject | unknown): RegistrationSummary {
  const {m, agentConnected} = warBasics(obj)
  return {source: 'war', namespace: m.namespace, name: m.name, agentConnected, creationTimestamp: m.creationTimestamp}
}

/** The summary of an auto-registered WorkloadEntry (what registrationFromWorkloadEntry gives for these fields). */
export function summaryFromWorkloadEntry(obj: WorkloadEntryObject | unknown): RegistrationSummary {
  const m = meta(obj)
  return {source: 'workloadentry', namespace: m.namespace, name: m.name, agentConnected: workloadEntryConnected(m.annotations), creationTimestamp: m.creationTimestamp}
}

/** What registrationFromWorkloadEntry says of an entry's group, identity and connection, without the comparison with its group and the ambient fields (proxy-status reads only these). */
export type WorkloadEntryConnection = Pick<Registration, 'group' | 'agentConnected' | 'identity' | 'connectedTo' | 'disconnectedAt'>

export function workloadEntryConnection(obj: WorkloadEntryObject | unknown, group?: WorkloadGroup): WorkloadEntryConnection {
  const m = meta(obj)
  const agentConnected = workloadEntryConnected(m.annotations)
  const sa = text(field(field(obj, 'spec'), 'serviceAccount'))
  const out: WorkloadEntryConnection = {
    group: m.annotations[WE_ANNOTATIONS.autoRegistrationGroup] || ownerOfKind(obj, 'WorkloadGroup')?.name || (group ? meta(group).name : ''),
    agentConnected,
    identity: sa ? `serviceaccount ${m.namespace}/${sa}` : '',
  }
  const controller = m.annotations[WE_ANNOTATIONS.workloadController]
  if (controller && agentConnected !== 'False') out.connectedTo = controller
  const disconnectedAt = m.annotations[WE_ANNOTATIONS.disconnectedAt]
  if (agentConnected === 'False' && disconnectedAt) out.disconnectedAt = disconnectedAt
  return out
}

/** An auto-registered WorkloadEntry as a row; `group` is its current WorkloadGroup (for `stale`). */
export function registrationFromWorkloadEntry(obj: WorkloadEntryObject | unknown, group?: WorkloadGroup): Registration {
  const m = meta(obj)
  const {connectedTo, disconnectedAt, ...who} = workloadEntryConnection(obj, group)
  const address = text(field(field(obj, 'spec'), 'address'))
  const out: Registration = {
    source: 'workloadentry',
    namespace: m.namespace,
    name: m.name,
    ...who,
    addresses: address ? [address] : [],
    stale: group !== undefined && workloadEntryDifference(obj, group) !== '',
    creationTimestamp: m.creationTimestamp,
  }
  if (connectedTo !== undefined) out.connectedTo = connectedTo
  if (disconnectedAt !== undefined) out.disconnectedAt = disconnectedAt
  return Object.assign(out, ambientFields(obj, m.labels))
}

/** Disconnected for longer than the grace period (strictly), judged at `now`. */
export function isPrunable(reg: Registration, gracePeriodMs: number, now: Date): boolean {
  if (reg.agentConnected !== 'False' || !reg.disconnectedAt) return false
  const t = Date.parse(reg.disconnectedAt)
  return !Number.isNaN(t) && now.getTime() - t > gracePeriodMs
}

// ---- table ----------------------------------------------------------------------------------

const orNone = (v: string | undefined): string => (v === undefined || v === '' ? '<none>' : v)

/**
 * Columns for `renderTable`: `[NAMESPACE] NAME AGENT CONNECTED AGE`, as `kubectl get war` prints
 * them; `wide` adds GROUP IDENTITY ADDRESSES AGENT SIDECAR CONNECTED-TO STALE TUNNEL WAYPOINT SOURCE
 * (TUNNEL: the entry's networking.istio.io/tunnel label; WAYPOINT: its WaypointBound condition; `-`
 * when the entry is not read, as for WARs in a list). `color`
 * (e.g. `(s) => statusColor(chalk, s)`) colours the AGENT CONNECTED cell.
 */
export function warColumns(wide: false, allNamespaces: boolean, now?: Date, color?: (text: string) => string): Column<RegistrationSummary>[]
export function warColumns(wide: boolean, allNamespaces: boolean, now?: Date, color?: (text: string) => string): Column<Registration>[]
export function warColumns(wide: boolean, allNamespaces: boolean, now: Date = new Date(), color?: (text: string) => string): Column<Registration>[] {
  // Registrations made together share a timestamp: each distinct one is parsed once per `now`.
  let last: {timestamp: string; at: number; age: string} | undefined
  const sameAge = (timestamp: string): string => {
    const at = now.getTime()
    if (last === undefined || last.timestamp !== timestamp || last.at !== at) last = {timestamp, at, age: age(timestamp, now)}
    return last.age
  }
  // The columns without -o wide read only the summary.
  const cols: Column<RegistrationSummary>[] = []
  if (allNamespaces) cols.push({header: 'NAMESPACE', value: (r) => r.namespace})
  cols.push({header: 'NAME', value: (r) => r.name}, {header: 'AGENT CONNECTED', value: (r) => r.agentConnected, ...(color ? {color} : {})}, {header: 'AGE', value: (r) => sameAge(r.creationTimestamp)})
  if (!wide) return cols
  return [
    ...cols,
    ...([
      {header: 'GROUP', value: (r) => orNone(r.group)},
      {header: 'IDENTITY', value: (r) => orNone(r.identity)},
      {header: 'ADDRESSES', value: (r) => orNone(r.addresses.join(','))},
      {header: 'AGENT', value: (r) => orNone(r.agentVersion)},
      {header: 'SIDECAR', value: (r) => orNone(r.sidecarVersion)},
      {header: 'CONNECTED-TO', value: (r) => orNone(r.connectedTo)},
      {header: 'STALE', value: (r) => String(r.stale)},
      {header: 'TUNNEL', value: (r) => (r.tunnel === undefined ? '-' : orNone(r.tunnel))},
      {header: 'WAYPOINT', value: (r) => (r.waypointBound === undefined ? '-' : orNone(r.waypointBound))},
      {header: 'SOURCE', value: (r) => r.source},
    ] satisfies Column<Registration>[]),
  ]
}
