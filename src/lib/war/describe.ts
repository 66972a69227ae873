/**
 * `meshvm war describe`: the kubectl describe-style view of one registration (identity, registration,
 * owner WorkloadGroup and staleness with the diff, WorkloadEntry, conditions, events). Pure text from
 * the model (war/model.ts); laid out by the one describe layout in output/describe.ts.
 */
import {conditionOf, conditionsOf, type Condition} from '../kube/object.js'
import {age} from '../output/age.js'
import {Describer} from '../output/describe.js'
import {isRecord} from '../util/records.js'
import {
  camel,
  dig,
  field,
  identityRows,
  joinParts,
  meta,
  sortedKeys,
  staleDifference,
  stringMap,
  text,
  WAR_KIND,
  warSnapshot,
  TUNNEL_LABEL,
  tunnelOf,
  waypointBoundOf,
  WE_ANNOTATIONS,
  workloadEntryDifference,
  type EventLike,
  type Registration,
  type WarObject,
  type WorkloadEntryObject,
  type WorkloadGroup,
} from './model.js'

export interface DescribeDetails {
  war?: WarObject
  workloadEntry?: WorkloadEntryObject
  group?: WorkloadGroup
  events?: EventLike[]
}

const LAST_APPLIED = 'kubectl.kubernetes.io/last-applied-configuration'

function keyValues(record: Record<string, string>, skip: string[] = []): string[] {
  return sortedKeys(record)
    .filter((k) => !skip.includes(k))
    .map((k) => `${k}=${record[k]}`)
}

function timestampWithAge(ts: string | undefined, now: Date): string | undefined {
  return ts ? `${ts} (${age(ts, now)} ago)` : undefined
}

/** `True`/`False` also for YAML booleans; other statuses as written. */
function statusText(status: unknown): string {
  if (typeof status === 'boolean') return status ? 'True' : 'False'
  return text(status) ?? 'Unknown'
}

function conditionRows(list: Condition[], now: Date): string[][] {
  return list.map((c) => [
    text(c.type) ?? '',
    statusText(c.status),
    text(c.reason) ?? '',
    c.lastTransitionTime ? age(text(c.lastTransitionTime), now) : '<unknown>',
    (text(c.message) ?? '').replace(/\s+/g, ' ').trim(),
  ])
}

/** kubectl's events table: oldest first, `AGE (xN over AGE)` for repeated events. */
function eventRows(events: EventLike[], now: Date): string[][] {
  const timed = events.map((e, index) => {
    const first = text(e.firstTimestamp) ?? text(e.eventTime) ?? text(e.metadata?.creationTimestamp)
    const last = text(e.lastTimestamp) ?? text(e.series?.lastObservedTime) ?? first
    const count = (typeof e.series?.count === 'number' ? e.series.count : undefined) ?? (typeof e.count === 'number' ? e.count : 1)
    return {e, index, first, last, count}
  })
  const at = (ts: string | undefined): number => (ts ? Date.parse(ts) || 0 : 0)
  timed.sort((a, b) => at(a.last) - at(b.last) || a.index - b.index)
  return timed.map(({e, first, last, count}) => {
    const ageText = count > 1 ? `${age(last, now)} (x${count} over ${age(first, now)})` : age(first ?? last, now)
    const component = text(e.source?.component)
    const from = component ? [component, text(e.source?.host)].filter(Boolean).join(', ') : (text(e.reportingController) ?? text(e.reportingComponent) ?? '')
    return [text(e.type) ?? '', text(e.reason) ?? '', ageText, from, (text(e.message) ?? text(e.note) ?? '').replace(/\s+/g, ' ').trim()]
  })
}

/** `True (Reason, 5m ago): message`, or <none>. */
function conditionText(c: Condition | undefined, now: Date): string {
  if (!c) return '<none>'
  const extras = [text(c.reason), c.lastTransitionTime ? `${age(text(c.lastTransitionTime), now)} ago` : undefined].filter(Boolean)
  const message = text(c.message)
  return `${statusText(c.status)}${extras.length > 0 ? ` (${extras.join(', ')})` : ''}${message ? `: ${message}` : ''}`
}

/**
 * `kubectl describe`-style text for one registration: metadata, identity, registration, owner
 * WorkloadGroup and snapshot status (with the diff when stale), WorkloadEntry, conditions, events.
 */
export function describeRegistration(reg: Registration, details: DescribeDetails, now: Date): string {
  const d = new Describer()
  const self: unknown = reg.source === 'war' ? details.war : details.workloadEntry
  const m = meta(self)
  d.field(0, 'Name', reg.name)
  d.field(0, 'Namespace', reg.namespace)
  d.field(0, 'Labels', keyValues(m.labels))
  d.field(0, 'Annotations', keyValues(m.annotations, [LAST_APPLIED]))
  d.field(0, 'Kind', reg.source === 'war' ? WAR_KIND : 'WorkloadEntry')
  d.field(0, 'Created', timestampWithAge(reg.creationTimestamp, now))

  // Identity: a WAR's platform identity; an entry's service account.
  const sa = reg.source === 'war' ? undefined : text(dig(details.workloadEntry, 'spec', 'serviceAccount'))
  const identity: [string, string | string[]][] =
    reg.source === 'war'
      ? identityRows(dig(details.war, 'spec', 'identity'))
      : sa === undefined
        ? []
        : [
            ['Kind', 'serviceaccount'],
            ['Service Account', `${reg.namespace}/${sa}`],
          ]
  if (identity.length === 0) d.field(0, 'Identity', '<none>')
  else {
    d.section(0, 'Identity')
    for (const [k, v] of identity) d.field(1, k, v)
  }

  // Registration
  d.section(0, 'Registration')
  if (reg.source === 'war') {
    const info = dig(details.war, 'spec', 'registration')
    const revision = text(dig(info, 'sidecar', 'istio', 'revision'))
    const addresses = dig(info, 'host', 'addresses')
    const hostAddresses = Array.isArray(addresses) ? addresses.map((a) => joinParts(text(field(a, 'ip')) ?? '<none>', text(field(a, 'type')) ? `(${text(field(a, 'type'))})` : undefined)) : []
    const annotations = dig(info, 'workload', 'annotations')
    const settings = field(info, 'settings')
    d.field(1, 'Agent', reg.agentVersion)
    d.field(1, 'Sidecar', reg.sidecarVersion ? `istio ${reg.sidecarVersion}${revision ? ` (revision ${revision})` : ''}` : undefined)
    d.field(1, 'Host Addresses', hostAddresses)
    d.field(1, 'Workload Labels', keyValues(stringMap(dig(info, 'workload', 'labels'))))
    if (isRecord(annotations) && Object.keys(annotations).length > 0) d.field(1, 'Workload Annotations', keyValues(stringMap(annotations)))
    d.field(1, 'Connected Over', text(field(settings, 'connectedOver')) ?? 'VPC (default)')
    if (isRecord(settings)) {
      for (const k of sortedKeys(settings).filter((k) => camel(k) !== 'connectedOver')) d.field(1, k, text(settings[k]) ?? JSON.stringify(settings[k]))
    }
    d.field(1, 'Agent Connected', reg.agentConnected)
    d.field(1, 'Connected To', reg.connectedTo)
    if (reg.disconnectedAt) d.field(1, 'Disconnected At', timestampWithAge(reg.disconnectedAt, now))
  } else {
    const ann = m.annotations
    d.field(1, 'Agent Connected', reg.agentConnected)
    d.field(1, 'Connected At', timestampWithAge(ann[WE_ANNOTATIONS.connectedAt], now))
    if (ann[WE_ANNOTATIONS.disconnectedAt]) d.field(1, 'Disconnected At', timestampWithAge(ann[WE_ANNOTATIONS.disconnectedAt], now))
    d.field(1, 'Controller', ann[WE_ANNOTATIONS.workloadController])
    d.field(1, 'Workload Labels', keyValues(stringMap(dig(details.workloadEntry, 'spec', 'labels'))))
  }

  // Owner WorkloadGroup and snapshot status
  d.section(0, 'Owner WorkloadGroup')
  d.field(1, 'Name', reg.group || undefined)
  const gm = meta(details.group)
  if (details.group && gm.generation !== undefined) d.field(1, 'Generation', String(gm.generation))
  const statusKey = reg.source === 'war' ? 'Snapshot' : 'Template'
  let diff: string | undefined
  if (!details.group) d.field(1, statusKey, '<unknown> (WorkloadGroup not available)')
  else if (reg.source === 'war' && warSnapshot(details.war) !== undefined) diff = staleDifference(details.war, details.group)
  else if (details.workloadEntry) diff = workloadEntryDifference(details.workloadEntry, details.group)
  else d.field(1, statusKey, '<unknown> (not recorded)')
  if (diff === '') d.field(1, statusKey, 'up to date')
  else if (diff !== undefined) {
    d.field(1, statusKey, 'stale: the group changed after this workload registered; re-onboard it to apply the change')
    d.section(1, 'Diff')
    for (const line of diff.replace(/\n$/, '').split('\n')) d.raw(2, line)
  }

  // WorkloadEntry
  const we = details.workloadEntry
  if (!we) {
    d.field(0, 'WorkloadEntry', '<none>')
  } else {
    const spec = field(we, 'spec')
    const ports = stringMap(field(spec, 'ports'))
    d.section(0, 'WorkloadEntry')
    d.field(1, 'Name', meta(we).name || undefined)
    d.field(1, 'Address', text(field(spec, 'address')))
    if (text(field(spec, 'network'))) d.field(1, 'Network', text(field(spec, 'network')))
    if (text(field(spec, 'locality'))) d.field(1, 'Locality', text(field(spec, 'locality')))
    if (text(field(spec, 'serviceAccount'))) d.field(1, 'Service Account', text(field(spec, 'serviceAccount')))
    if (Object.keys(ports).length > 0) d.field(1, 'Ports', keyValues(ports).join(', '))
    d.field(1, 'Healthy', conditionText(conditionOf(we, 'Healthy'), now))
    // Ambient: reached over HBONE only with the tunnel label (Istio 1.31 auto-registration adds it, 60788); WaypointBound (59993).
    const tunnel = tunnelOf(we)
    d.field(1, 'Tunnel', tunnel ? `${tunnel} (${TUNNEL_LABEL}: ambient workloads reach it over HBONE)` : `<none> (no ${TUNNEL_LABEL} label: ambient workloads reach it over plaintext)`)
    d.field(1, 'Waypoint Bound', conditionText(waypointBoundOf(we), now))
  }

  // Conditions
  const conds = conditionsOf(self)
  if (conds.length === 0) d.field(0, 'Conditions', '<none>')
  else {
    d.section(0, 'Conditions')
    d.table(1, ['Type', 'Status', 'Reason', 'Age', 'Message'], conditionRows(conds, now))
  }

  // Events
  const events = details.events ?? []
  if (events.length === 0) d.field(0, 'Events', '<none>')
  else {
    d.section(0, 'Events')
    d.table(1, ['Type', 'Reason', 'Age', 'From', 'Message'], eventRows(events, now), ['----', '------', '----', '----', '-------'])
  }
  return d.toString()
}
