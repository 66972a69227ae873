/**
 * `meshvm proxy-status NAME.NAMESPACE`: one proxy in detail, kubectl-describe style: per-type status
 * with nonces and the NACK detail, its istiod, its registration and health. Pure.
 */
import {conditionOf} from '../kube/object.js'
import {age} from '../output/age.js'
import {Describer} from '../output/describe.js'
import {renderTable} from '../output/table.js'
import {XDS_TYPES, type ProxyStatusRow} from './status.js'
import type {VmRecord} from './vms.js'

type Field = [key: string, value: string | undefined]

/** Fields with a value, into kubectl's describe layout (output/describe.ts: values of a block line up by display width). */
function fields(d: Describer, level: number, list: Field[]): void {
  for (const [k, v] of list) if (v !== undefined && v !== '') d.field(level, k, v)
}

/** `text (extra, extra)`, with the extras that are set; `text` alone without any. */
function withExtras(text: string, extras: (string | false | undefined)[]): string {
  const set = extras.filter(Boolean)
  return set.length > 0 ? `${text} (${set.join(', ')})` : text
}

function istiodText(row: ProxyStatusRow): string | undefined {
  const ref = row.istiodRef
  if (!ref) return row.istiod
  return withExtras(`${ref.namespace}/${ref.name}`, [ref.revision && `revision ${ref.revision}`, ref.version && `version ${ref.version}`])
}

/** The annotation istiod sets on an entry whose proxy runs the group's readiness probe (and a user on a hand-written one). */
const HEALTH_CHECKS = 'proxy.istio.io/health-checks-enabled'
/** Istio 1.31 auto-registration labels the entries of HBONE-capable proxies (release note 60788). */
export const TUNNEL_LABEL = 'networking.istio.io/tunnel'

function healthText(vm: VmRecord, now: Date): string | undefined {
  // Only an entry that is known says anything about health; an ambiguous proxy's entry is not known.
  if (vm.workloadEntry === undefined) return undefined
  if (!vm.health) {
    return vm.entry?.metadata?.annotations?.[HEALTH_CHECKS] === 'true'
      ? '<no Healthy condition yet: health checks on, no probe result reported>'
      : `<no Healthy condition: health checks off (no ${HEALTH_CHECKS} annotation)>`
  }
  return withExtras(vm.health, [vm.healthReason, vm.healthSince && `since ${age(vm.healthSince, now)}`]) + (vm.healthMessage ? `: ${vm.healthMessage}` : '')
}

/** 1.31's WaypointBound condition (`istio.io/WaypointBound` as istioctl analyze names it), when the entry carries one. */
function waypointText(vm: VmRecord, now: Date): string | undefined {
  const c = conditionOf(vm.entry, 'istio.io/WaypointBound') ?? conditionOf(vm.entry, 'WaypointBound')
  if (!c) return undefined
  const message = typeof c.message === 'string' ? c.message.replace(/\s+/g, ' ').trim() : ''
  const since = typeof c.lastTransitionTime === 'string' && c.lastTransitionTime && `since ${age(c.lastTransitionTime, now)}`
  return withExtras(String(c.status ?? 'Unknown'), [typeof c.reason === 'string' && c.reason, since]) + (message ? `: ${message}` : '')
}

/** The registrations an ambiguous proxy may be: the first few, and how many more (a group may have hundreds). */
function candidateNames(candidates: VmRecord[]): string {
  const names = candidates.map((c) => c.workloadEntry ?? c.war ?? c.name)
  return names.length <= 5 ? names.join(', ') : `${names.slice(0, 5).join(', ')} and ${names.length - 5} more`
}

function connectionText(vm: VmRecord, now: Date): string {
  if (vm.connected) return withExtras('True', [vm.istiod && `istiod ${vm.istiod}`, vm.connectedAt && `since ${age(vm.connectedAt, now)}`])
  return `False${vm.disconnectedAt ? ` (disconnected ${age(vm.disconnectedAt, now)} ago)` : ''}`
}

export function renderProxyDetail(rows: ProxyStatusRow[], registrationOf: (row: ProxyStatusRow) => VmRecord | undefined, now: Date = new Date()): string {
  const blocks = rows.map((row) => {
    const d = new Describer()
    const vm = registrationOf(row)
    const noAnswer = row.xds.CDS.state === 'NO_ANSWER'
    fields(d, 0, [
      ['Name', row.name],
      ['Namespace', row.namespace],
      ['Type', row.type],
      ['Context', row.context],
      ['Cluster', row.cluster],
      ['Istiod', istiodText(row)],
      ['Proxy Version', row.connected ? row.version || '<unknown>' : undefined],
      ['Version Skew', row.connected ? (row.versionSkew ? `yes: proxy ${row.version}, istiod ${row.istiodRef?.version}` : 'no') : undefined],
    ])
    if (vm) {
      d.section(0, 'Registration')
      const candidates = vm.candidates
      fields(d, 1, [
        ['Source', vm.registration],
        ['WorkloadAutoRegistration', vm.war],
        ['WorkloadEntry', vm.workloadEntry ?? (candidates ? `one of ${candidateNames(candidates)} (istiod did not say which: its /debug/adsz could not be read)` : undefined)],
        ['WorkloadGroup', vm.group || undefined],
        ['Address', vm.address || undefined],
        ['Identity', vm.identity],
        ['Connected', connectionText(vm, now)],
        ['Health', healthText(vm, now)],
        ['Tunnel', vm.entry?.metadata?.labels?.[TUNNEL_LABEL] === undefined ? undefined : `${vm.entry.metadata.labels[TUNNEL_LABEL]} (label ${TUNNEL_LABEL})`],
        ['WaypointBound', waypointText(vm, now)],
        ['Sidecar', vm.sidecarVersion],
        ['Agent', vm.agentVersion],
      ])
    }
    d.section(0, 'xDS')
    if (noAnswer) {
      d.raw(1, `unknown: istiod ${row.istiod} did not answer`)
    } else if (!row.connected) {
      d.raw(1, 'not connected to any istiod that was asked')
    } else {
      const table = renderTable(
        XDS_TYPES.map((t) => ({t, x: row.xds[t], s: row.status[t]})),
        [
          {header: 'TYPE', value: (r) => r.t},
          {header: 'STATUS', value: (r) => r.s},
          {header: 'LAST SENT', value: (r) => r.x.lastSent ?? '-'},
          {header: 'NONCE SENT', value: (r) => r.x.sent ?? '-'},
          {header: 'NONCE ACKED', value: (r) => r.x.acked ?? '-'},
        ],
      )
      for (const line of table.trimEnd().split('\n')) d.raw(1, line)
      const errors = XDS_TYPES.filter((t) => row.xds[t].error)
      d.raw(0, `Last Error:${errors.length === 0 ? ' <none>' : ''}`)
      for (const t of errors) d.raw(1, `${t}: ${row.xds[t].error!.replace(/\s+/g, ' ').trim()}`)
    }
    return d.toString()
  })
  return blocks.join('\n')
}

/** The TYPE words of a TYPE/NAME argument (kind, plural or short name; any group after the first dot). */
const DETAIL_TYPES = new Set(['pod', 'pods', 'po', 'workloadentry', 'workloadentries', 'we', 'workloadautoregistration', 'workloadautoregistrations', 'war'])

/** One reading of the NAME argument: a proxy or registration name and its namespace. */
export interface DetailTarget {
  name: string
  namespace: string
}

/**
 * What `proxy-status NAME` may mean, most likely first. A name may hold dots of its own: an
 * auto-registered WorkloadEntry is named `GROUP-IP[-NETWORK]` (`web-10.0.0.5`), so `web-10.0.0.5 -n vms`
 * is that WorkloadEntry, not proxy `web-10.0.0` in namespace `5`. With -n, the whole NAME in that
 * namespace comes first; `NAME.NS` (split on the last dot, as istioctl splits) comes first otherwise.
 */
export function detailTargets(arg: string, options: {namespace: string; namespaceExplicit: boolean}): DetailTarget[] {
  // TYPE/NAME, as -o name prints it (pod/NAME, workloadentry.networking.istio.io/NAME, …): NAME in the -n namespace.
  const typed = /^([a-z][a-z0-9.-]*)\/(.+)$/.exec(arg)
  if (typed && DETAIL_TYPES.has(typed[1]!.split('.')[0]!)) return [{name: typed[2]!, namespace: options.namespace}]
  const dot = arg.lastIndexOf('.')
  const split = dot > 0 && dot < arg.length - 1 ? {name: arg.slice(0, dot), namespace: arg.slice(dot + 1)} : undefined
  const whole = {name: arg, namespace: options.namespace}
  const list = options.namespaceExplicit || !split ? [whole, ...(split ? [split] : [])] : [split, whole]
  return list.filter((t, i) => list.findIndex((u) => u.name === t.name && u.namespace === t.namespace) === i)
}

/** The rows a target names: the proxy `NAME.NS`, or the VM whose WorkloadEntry or WAR is NAME in NS. */
export function rowsForTarget(rows: ProxyStatusRow[], target: DetailTarget, registrationOf: (row: ProxyStatusRow) => VmRecord | undefined): ProxyStatusRow[] {
  const id = `${target.name}.${target.namespace}`
  return rows.filter((r) => {
    if (r.type === 'istiod') return false
    if (r.name === id) return true
    const vm = registrationOf(r)
    if (vm === undefined || vm.namespace !== target.namespace) return false
    if (vm.workloadEntry === target.name || vm.war === target.name) return true
    // A registration whose proxy could not be told apart from its group's others: every proxy it may be.
    return vm.candidates?.some((c) => c.workloadEntry === target.name || c.war === target.name) === true
  })
}
