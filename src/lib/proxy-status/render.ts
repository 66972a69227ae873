/**
 * Drawing the rows: istioctl's table (and meshvm's wide and watch variants), and the stable JSON
 * schema of `-o json|yaml`. Pure.
 */
import type {ChalkInstance} from 'chalk'
import {makeChalk, statusColor} from '../output/color.js'
import {groupVersion, Resources, type ResourceType} from '../kube/resources.js'
import {resourceName} from '../output/render.js'
import {renderTable, type Column} from '../output/table.js'
import {compareStrings} from '../util/records.js'
import {CLIENT_CONFIG_TYPE, TYPE_DEBUG_SYNCZ} from '../grpc/xds-types.js'
import {XDS_TYPE_URLS, XDS_TYPES, type ProxyStatusRow, type SyncState, type XdsType} from './model.js'
import type {VmCheck} from './vm-checks.js'
import type {VmRecord} from './vms.js'

/**
 * - `subscribed` (default): istioctl 1.27+'s default, `NAME CLUSTER ISTIOD VERSION SUBSCRIBED TYPES`.
 * - `verbose`: istioctl 1.27+'s `-v 1`, per-type columns in alphabetical order (`CDS ECDS EDS LDS RDS`).
 * - `types`: istioctl 1.22–1.26, `NAME CLUSTER CDS LDS EDS RDS ECDS ISTIOD VERSION` (`--layout types`).
 */
export type ProxyStatusLayout = 'types' | 'subscribed' | 'verbose'

export const PROXY_STATUS_LAYOUTS: readonly ProxyStatusLayout[] = ['subscribed', 'verbose', 'types']

export interface ProxyStatusTableOptions {
  /** Adds TYPE ADDRESS HEALTH REGISTRATION, and marks version skew in VERSION. */
  wide?: boolean
  /** A CONTEXT column after VERSION (several kubeconfig contexts in one table: clusters may share a cluster ID). */
  context?: boolean
  /**
   * Cells to highlight (`--watch`: what changed since the last frame), by row and column header. With
   * colour they are shown in inverse video; without, prefixed with `*`.
   */
  changed?: (row: ProxyStatusRow, header: string) => boolean
  color: boolean
  layout?: ProxyStatusLayout
  noHeaders?: boolean
  /** A chalk to use instead of one made from `color` (e.g. the command's `chalkFor(format)`). */
  chalk?: ChalkInstance
  /** --vm-exec: what each VM's Envoy says of its certificate and root (wide: CERT EXPIRES, ROOT MATCH). */
  vmChecks?: Map<ProxyStatusRow, VmCheck>
}

/** istioctl's tabwriter: padding 5, no padding after the last column. */
export const ISTIOCTL_GAP = 5
const EMPTY = '-'

const ALPHABETICAL_TYPES: XdsType[] = [...XDS_TYPES].sort(compareStrings)

function subscribedCell(row: ProxyStatusRow): string {
  if (!row.connected) return row.xds.CDS.state === 'NO_ANSWER' ? 'NO ANSWER' : 'NOT CONNECTED'
  return row.subscribed.length === 0 ? '0' : `${row.subscribed.length} (${row.subscribed.join(',')})`
}

export function renderProxyStatusTable(rows: ProxyStatusRow[], options: ProxyStatusTableOptions): string {
  return renderTable(rows, proxyStatusColumns(options), {wide: options.wide, noHeaders: options.noHeaders, gap: ISTIOCTL_GAP})
}

/** The table's columns (wide ones marked `wide`), for renderProxyStatusTable and the one printer. */
export function proxyStatusColumns(options: Omit<ProxyStatusTableOptions, 'noHeaders'>): Column<ProxyStatusRow>[] {
  const chalk = options.chalk ?? makeChalk({env: {FORCE_COLOR: options.color ? '1' : '0'}, stream: {isTTY: options.color}})
  const paint = (text: string) => statusColor(chalk, text)
  const layout = options.layout ?? 'subscribed'
  const text = (v: string | undefined) => (v === undefined || v === '' ? EMPTY : v)
  const typeColumns = (types: readonly XdsType[]): Column<ProxyStatusRow>[] => types.map((t) => ({header: t, value: (r) => r.status[t], color: paint}))

  const name: Column<ProxyStatusRow> = {header: 'NAME', value: (r) => r.name}
  const cluster: Column<ProxyStatusRow> = {header: 'CLUSTER', value: (r) => (r.connected ? (r.cluster ?? '') : EMPTY)}
  // A row whose istiod did not answer (NO ANSWER) still names that istiod.
  const istiod: Column<ProxyStatusRow> = {header: 'ISTIOD', value: (r) => (r.connected ? (r.istiod ?? '') : (r.istiod ?? EMPTY))}
  const skew = (r: ProxyStatusRow) => options.wide === true && r.versionSkew && r.istiodRef?.version !== undefined
  const version: Column<ProxyStatusRow> = {
    header: 'VERSION',
    value: (r) => (r.connected ? (r.version ?? '') + (skew(r) ? ` (skew: istiod ${r.istiodRef!.version})` : '') : EMPTY),
    color: (s, r) => (skew(r) ? chalk.yellow(s) : s),
  }
  const wide: Column<ProxyStatusRow>[] = [
    ...(options.context ? [{header: 'CONTEXT', value: (r: ProxyStatusRow) => text(r.context)}] : []),
    {header: 'TYPE', wide: true, value: (r) => r.type},
    {header: 'ADDRESS', wide: true, value: (r) => text(r.address)},
    {header: 'HEALTH', wide: true, value: (r) => text(r.health), color: paint},
    {header: 'REGISTRATION', wide: true, value: (r) => text(r.registration)},
  ]
  const checks = options.vmChecks
  if (checks) {
    wide.push(
      {header: 'CERT EXPIRES', wide: true, value: (r) => text(checks.get(r)?.certExpires), color: (s) => (s.startsWith('EXPIRED') || s === 'ERROR' || s === 'NO ANSWER' ? chalk.red(s) : s)},
      {header: 'ROOT MATCH', wide: true, value: (r) => text(checks.get(r)?.rootMatch), color: (s) => (s === 'NO' ? chalk.red(s) : s)},
    )
  }

  let columns: Column<ProxyStatusRow>[]
  if (layout === 'subscribed') {
    columns = [name, cluster, istiod, version, {header: 'SUBSCRIBED TYPES', value: subscribedCell, color: (s, r) => (r.connected ? s : paint(s))}, ...wide]
  } else {
    columns = [name, cluster, ...typeColumns(layout === 'verbose' ? ALPHABETICAL_TYPES : XDS_TYPES), istiod, version, ...wide]
  }
  const changed = options.changed
  if (changed) columns = columns.map((c) => highlighted(c, changed, chalk))
  return columns
}

/** Inverse video on a colour terminal, a `*` prefix otherwise (widths are measured without ANSI codes). */
function highlighted(c: Column<ProxyStatusRow>, changed: (row: ProxyStatusRow, header: string) => boolean, chalk: ChalkInstance): Column<ProxyStatusRow> {
  const paint = c.color
  if (chalk.level > 0) {
    return {
      ...c,
      color: (s, r) => {
        const painted = paint ? paint(s, r) : s
        return changed(r, c.header) ? chalk.inverse(painted) : painted
      },
    }
  }
  return {...c, value: (r) => (changed(r, c.header) ? '*' : '') + c.value(r)}
}

/**
 * One item of `-o json|yaml`'s `ProxyStatusList` (`meshvm.io/v1alpha1`, documented in docs/proxy-status.md):
 * every key always present (null when unknown), times and no ages (they depend on the clock).
 */
export interface ProxyStatusJsonItem {
  name: string
  namespace: string | null
  type: 'pod' | 'vm'
  connected: boolean
  cluster: string | null
  context: string | null
  version: string | null
  istiod: {name: string; namespace: string; version: string | null; revision: string | null} | null
  versionSkew: boolean
  xds: Record<
    XdsType,
    {status: Exclude<SyncState, 'UNKNOWN'>; subscribed: boolean; neverAcknowledged: boolean; lastSent: string | null; error: string | null; nonceSent: string | null; nonceAcked: string | null}
  >
  vm: {address: string; health: string | null; registration: string | null} | null
}

export interface ProxyStatusError {
  context: string | null
  /** The istiod pod, when the failure was one istiod's. */
  istiod: string | null
  message: string
}

export interface ProxyStatusList {
  apiVersion: 'meshvm.io/v1alpha1'
  kind: 'ProxyStatusList'
  items: ProxyStatusJsonItem[]
  errors: ProxyStatusError[]
}

const orNull = (v: string | undefined) => (v === undefined || v === '' ? null : v)

/** One row as a ProxyStatusJsonItem. */
export function proxyStatusJsonItem(r: ProxyStatusRow): ProxyStatusJsonItem {
  // A loop rather than perType's callback: this runs for every row of -o json|yaml.
  const xds = {} as ProxyStatusJsonItem['xds']
  for (const t of XDS_TYPES) {
    const x = r.xds[t]
    xds[t] = {
      status: x.state === 'UNKNOWN' ? 'IGNORED' : x.state,
      subscribed: x.subscribed,
      neverAcknowledged: x.neverAcknowledged,
      lastSent: x.lastSent ?? null,
      error: x.error ?? null,
      nonceSent: x.sent ?? null,
      nonceAcked: x.acked ?? null,
    }
  }
  const ref = r.istiodRef
  return {
    name: r.name,
    namespace: orNull(r.namespace),
    type: r.type === 'vm' ? 'vm' : 'pod',
    connected: r.connected,
    cluster: orNull(r.cluster),
    context: orNull(r.context),
    version: orNull(r.version),
    istiod: ref ? {name: ref.name, namespace: ref.namespace, version: orNull(ref.version), revision: orNull(ref.revision)} : null,
    versionSkew: r.versionSkew,
    xds,
    vm: r.type === 'vm' ? {address: r.address ?? '', health: orNull(r.health), registration: orNull(r.registration)} : null,
  }
}

/** The list document around items already in the schema (the printer converts rows one by one). */
export function proxyStatusList(items: ProxyStatusJsonItem[], errors: ProxyStatusError[]): ProxyStatusList {
  return {apiVersion: 'meshvm.io/v1alpha1', kind: 'ProxyStatusList', items, errors}
}

const nameOf = (res: ResourceType, name: string) => resourceName({apiVersion: groupVersion(res), kind: res.kind, metadata: {name}})

/**
 * `-o name`: the object a row stands for, as kubectl names it (`pod/NAME`, `workloadentry.networking.istio.io/NAME`,
 * `workloadautoregistration.runtime.onboarding.tetrate.io/NAME`); `proxy-status TYPE/NAME -n NS` takes it back.
 * A VM proxy no registration could be paired with keeps its proxy ID.
 */
export function proxyStatusName(row: ProxyStatusRow, vm: VmRecord | undefined): string {
  if (row.type === 'vm') {
    if (vm?.workloadEntry) return nameOf(Resources.workloadEntries, vm.workloadEntry)
    if (vm?.war) return nameOf(Resources.workloadAutoRegistrations, vm.war)
    return row.name
  }
  const suffix = row.namespace === undefined ? '' : `.${row.namespace}`
  return nameOf(Resources.pods, suffix !== '' && row.name.endsWith(suffix) ? row.name.slice(0, -suffix.length) : row.name)
}

/** The order of istioctl's own test data (status_test.go), which its goldens print. */
const ISTIOCTL_TYPE_ORDER: XdsType[] = ['CDS', 'LDS', 'RDS', 'EDS', 'ECDS']
const CONFIG_STATUS_NAME: Partial<Record<SyncState, string>> = {SYNCED: 'SYNCED', STALE: 'STALE', NOT_SENT: 'NOT_SENT', ERROR: 'ERROR'}

/**
 * What `istioctl proxy-status -o json|yaml` (1.30+) prints: one syncz DiscoveryResponse per istiod,
 * in protojson's shape (istioctl/pkg/writer/pilot/status.go `printMachineReadable`), with -n keeping
 * the proxies of that namespace. Built from the rows, whichever path each istiod was read through:
 * `resources` are ClientConfigs (node id and CLUSTER_ID, ISTIO_VERSION, NAMESPACE metadata;
 * genericXdsConfigs with configStatus, lastUpdated and errorState), `controlPlane.identifier` names
 * the istiod and its version. A type the proxy does not watch is left out; `versionInfo` (istiod's
 * push version) is not known over HTTP and is left out too. Registered VMs that are not connected are
 * not in it (no istiod reports them), as in istioctl. One document per istiod and context, in
 * istiod-name order.
 */
export function istioctlSyncz(rows: ProxyStatusRow[]): Record<string, unknown>[] {
  const byIstiod = new Map<string, {ref: NonNullable<ProxyStatusRow['istiodRef']>; resources: unknown[]}>()
  for (const r of rows) {
    if (!r.connected || r.type === 'istiod' || r.istiodRef === undefined) continue
    const key = `${r.context ?? ''}\u0000${r.istiodRef.namespace}/${r.istiodRef.name}`
    let doc = byIstiod.get(key)
    if (!doc) byIstiod.set(key, (doc = {ref: r.istiodRef, resources: []}))
    const generic: Record<string, unknown>[] = []
    for (const t of ISTIOCTL_TYPE_ORDER) {
      const x = r.xds[t]
      if (x.state === 'IGNORED') continue
      const g: Record<string, unknown> = {typeUrl: XDS_TYPE_URLS[t]}
      const status = CONFIG_STATUS_NAME[x.state]
      if (status) g.configStatus = status
      if (x.lastSent) g.lastUpdated = x.lastSent
      if (x.state === 'ERROR' && x.error) g.errorState = {details: x.error}
      generic.push(g)
    }
    const metadata: Record<string, string> = {}
    if (r.cluster) metadata.CLUSTER_ID = r.cluster
    if (r.version) metadata.ISTIO_VERSION = r.version
    if (r.namespace) metadata.NAMESPACE = r.namespace
    doc.resources.push({'@type': CLIENT_CONFIG_TYPE, node: {id: r.name, metadata}, genericXdsConfigs: generic})
  }
  return [...byIstiod.entries()]
    .sort(([a], [b]) => compareStrings(a, b))
    .map(([, {ref, resources}]) => ({
      resources,
      typeUrl: TYPE_DEBUG_SYNCZ,
      controlPlane: {identifier: JSON.stringify({Component: 'istiod', ID: ref.name, Info: {version: ref.version ?? '', revision: '', golang_version: '', status: '', tag: ''}})},
    }))
}
