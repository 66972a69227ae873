/**
 * `--watch`: what changed between two frames, cell by cell. A type's cell changes when its state does
 * (SYNCED → STALE, a NACK, …); ages and nonces are not changes: istiod pushes all the time. Pure.
 */
import {XDS_TYPES, type ProxyStatusRow} from './status.js'

export type Frame = Map<string, Record<string, string>>

export function rowKey(r: ProxyStatusRow): string {
  return `${r.context ?? ''}\u0000${r.name}\u0000${r.istiod ?? ''}`
}

/** Per-column values to compare, keyed by the table's column headers. */
function cells(r: ProxyStatusRow): Record<string, string> {
  const out: Record<string, string> = {
    NAME: r.name,
    CLUSTER: r.cluster ?? '',
    ISTIOD: r.istiod ?? '',
    VERSION: r.version ?? '',
    CONTEXT: r.context ?? '',
    TYPE: r.type,
    ADDRESS: r.address ?? '',
    HEALTH: r.health ?? '',
    REGISTRATION: r.registration ?? '',
    'SUBSCRIBED TYPES': r.subscribed.join(',') + (r.connected ? '' : r.xds.CDS.state),
  }
  for (const t of XDS_TYPES) {
    const x = r.xds[t]
    out[t] = `${x.state}|${x.neverAcknowledged}|${x.error ?? ''}`
  }
  return out
}

export function frameOf(rows: ProxyStatusRow[]): Frame {
  return new Map(rows.map((r) => [rowKey(r), cells(r)]))
}

/** The highlight predicate for renderProxyStatusTable: new rows light up whole, changed cells alone. */
export function changedCells(previous: Frame | undefined, current: Frame): ((row: ProxyStatusRow, header: string) => boolean) | undefined {
  if (!previous) return undefined
  return (row, header) => {
    const before = previous.get(rowKey(row))
    if (!before) return header === 'NAME'
    return before[header] !== current.get(rowKey(row))?.[header]
  }
}

/** Rows of the previous frame that are gone, by name. */
export function removedRows(previous: Frame | undefined, current: Frame): string[] {
  if (!previous) return []
  return [...previous.entries()].filter(([k]) => !current.has(k)).map(([, c]) => c.NAME!)
}
