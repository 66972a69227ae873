/**
 * The table's rows: every proxy an istiod reports, merged with the VMs the cluster registers
 * (connected or not), sorted as istioctl sorts. Pure.
 */
import {perType, typesIn, XDS_TYPES, xdsStatus, type ProxyStatusRow, type ProxySync, type TypeSync, type VmInfo, type XdsType} from './model.js'
import {compareStrings} from '../util/records.js'

// ---------------------------------------------------------------------------------------------------
// Rows
// ---------------------------------------------------------------------------------------------------

/** `1.24.2` → `1.24`; `1.1*`, `v1.20-dev` also work. Undefined when not a version. */
export function majorMinor(version: string | undefined): string | undefined {
  const m = /^v?(\d+)\.(\d+)/.exec(version ?? '')
  return m ? `${Number(m[1])}.${Number(m[2])}` : undefined
}

export function isVersionSkewed(proxyVersion: string | undefined, istiodVersion: string | undefined): boolean {
  const a = majorMinor(proxyVersion)
  const b = majorMinor(istiodVersion)
  return a !== undefined && b !== undefined && a !== b
}

/** isVersionSkewed for many rows: a mesh has a handful of distinct versions, so each pair is computed once. */
function skewChecker(): (proxyVersion: string | undefined, istiodVersion: string | undefined) => boolean {
  const known = new Map<string, boolean>()
  // The last pair asked for: consecutive rows nearly always repeat it (no key string built for them).
  let lastProxy: string | undefined
  let lastIstiod: string | undefined
  let last = false
  return (proxyVersion, istiodVersion) => {
    if (proxyVersion === lastProxy && istiodVersion === lastIstiod && lastProxy !== undefined) return last
    const key = `${proxyVersion ?? ''}\n${istiodVersion ?? ''}`
    let skewed = known.get(key)
    if (skewed === undefined) {
      skewed = isVersionSkewed(proxyVersion, istiodVersion)
      known.set(key, skewed)
    }
    lastProxy = proxyVersion
    lastIstiod = istiodVersion
    last = skewed
    return skewed
  }
}

/**
 * xdsStatus for many cells at one `now`: a mesh's pushes share a handful of send times, so each
 * (state, send time) pair is parsed and worded once instead of once per cell.
 */
function statusText(now: Date): (t: TypeSync) => string {
  // By state, then send time (no key string built per cell).
  const known = {SYNCED: new Map<string, string>(), STALE: new Map<string, string>(), ERROR: new Map<string, string>()}
  return (t) => {
    const state = t.state
    if (t.lastSent === undefined || (state !== 'SYNCED' && state !== 'STALE' && state !== 'ERROR') || (state === 'STALE' && t.neverAcknowledged)) return xdsStatus(t, now)
    const byTime = known[state]
    let text = byTime.get(t.lastSent)
    if (text === undefined) {
      text = xdsStatus(t, now)
      byTime.set(t.lastSent, text)
    }
    return text
  }
}

/**
 * The subscribed types of a row by bit mask (bit i: XDS_TYPES[i]): 32 lists shared by every row (frozen,
 * nothing mutates them) instead of one new array per proxy, which the garbage collector then reclaims.
 */
const subscribedLists: XdsType[][] = Array.from({length: 1 << XDS_TYPES.length}, (_, mask) => Object.freeze(XDS_TYPES.filter((_t, i) => (mask & (1 << i)) !== 0)) as XdsType[])

/** The states and cells of every registered VM no istiod reports (frozen: rows share them). */
const NOT_CONNECTED_XDS = Object.freeze(typesIn('NOT_CONNECTED'))
for (const sync of Object.values(NOT_CONNECTED_XDS)) Object.freeze(sync)
const NOT_CONNECTED_STATUS = Object.freeze(perType(() => 'NOT CONNECTED'))

export interface RowOptions {
  vms?: VmInfo[]
  /** The clock for ages; pass a fixed one in tests. */
  now?: Date
}

/** A VM's row with its address, health and registration (those that are set). */
export function withVm(row: ProxyStatusRow, vm: VmInfo): ProxyStatusRow {
  if (vm.address !== undefined) row.address = vm.address
  if (vm.health !== undefined) row.health = vm.health
  if (vm.registration !== undefined) row.registration = vm.registration
  return row
}

function vmKey(vm: VmInfo): string {
  return vm.proxyId ?? `${vm.name}.${vm.namespace}`
}

/**
 * One row per proxy per istiod (a proxy reported by two istiods shows twice, as in istioctl), plus one
 * `NOT CONNECTED` row for every VM no istiod reports. Sorted by name, then istiod.
 */
export function proxyStatusRows(syncs: ProxySync[], options: RowOptions = {}): ProxyStatusRow[] {
  const now = options.now ?? new Date()
  const vms = new Map<string, VmInfo>()
  for (const vm of options.vms ?? []) {
    const key = vmKey(vm)
    if (!vms.has(key)) vms.set(key, vm)
  }
  const seen = new Set<string>()
  const rows: ProxyStatusRow[] = []
  const skewed = skewChecker()
  const cell = statusText(now)
  for (const s of syncs) {
    const vm = vms.get(s.proxyId)
    if (vm) seen.add(s.proxyId)
    const x = s.types
    // One literal (one object shape for every row) rather than five assignments.
    const status: Record<XdsType, string> = {CDS: cell(x.CDS), LDS: cell(x.LDS), EDS: cell(x.EDS), RDS: cell(x.RDS), ECDS: cell(x.ECDS)}
    let mask = 0
    for (let i = 0; i < XDS_TYPES.length; i++) if (x[XDS_TYPES[i]!].subscribed) mask |= 1 << i
    const subscribed = subscribedLists[mask]!
    // Built field by field rather than copied: this runs once per proxy.
    const row: ProxyStatusRow = {
      name: s.proxyId,
      type: vm ? 'vm' : 'pod',
      connected: true,
      xds: s.types,
      status,
      subscribed,
      cluster: s.clusterId,
      istiod: s.istiod.name,
      istiodRef: s.istiod,
      version: s.proxyVersion,
      versionSkew: skewed(s.proxyVersion, s.istiod.version),
    }
    const namespace = s.namespace ?? vm?.namespace
    if (namespace !== undefined) row.namespace = namespace
    rows.push(vm ? withVm(row, vm) : row)
  }
  for (const [key, vm] of vms) {
    if (seen.has(key)) continue
    // Built field by field, sharing the frozen NOT CONNECTED states: a mesh may register tens of
    // thousands of VMs that are not connected, one row each.
    const row: ProxyStatusRow = {
      name: key,
      namespace: vm.namespace,
      type: 'vm',
      connected: false,
      xds: NOT_CONNECTED_XDS,
      status: NOT_CONNECTED_STATUS,
      subscribed: subscribedLists[0]!,
      versionSkew: false,
    }
    rows.push(withVm(row, vm))
  }
  return rows.sort((a, b) => compareStrings(a.name, b.name) || compareStrings(a.istiod ?? '', b.istiod ?? ''))
}
