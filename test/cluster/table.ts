/**
 * Server-side printing: `meta.k8s.io/v1` Table responses (what `kubectl get` asks for), with the
 * columns of a CRD's additionalPrinterColumns or a built-in kind's printer, and the small JSONPath
 * subset printer columns use (`.a.b`, `.a[0]`, `.a[?(@.type=="X")].status`).
 */
import {ageOf} from './age.js'
import type {ResourceDef, PrinterColumn} from './registry.js'
import type {KubeObj} from './store.js'

export function jsonPath(obj: unknown, path: string): unknown {
  const tokens = path.replace(/^\{|\}$/g, '').match(/\.[^.[]+|\[[^\]]*\]/g) ?? []
  let current: unknown[] = [obj]
  for (const token of tokens) {
    const next: unknown[] = []
    for (const value of current) {
      if (value === null || value === undefined) continue
      if (token.startsWith('.')) {
        const v = (value as Record<string, unknown>)[token.slice(1)]
        if (v !== undefined) next.push(v)
        continue
      }
      const inner = token.slice(1, -1)
      if (!Array.isArray(value)) continue
      const filter = /^\?\(@\.([\w.]+)\s*==\s*["']([^"']*)["']\)$/.exec(inner)
      if (filter) {
        for (const item of value) if (jsonPath(item, '.' + filter[1]) === filter[2]) next.push(item)
      } else if (inner === '*') next.push(...value)
      else {
        const v = value[Number(inner) < 0 ? value.length + Number(inner) : Number(inner)]
        if (v !== undefined) next.push(v)
      }
    }
    current = next
  }
  if (current.length === 0) return undefined
  return current.length === 1 ? current[0] : current
}

function cell(obj: KubeObj, column: PrinterColumn, now: Date): unknown {
  const value = jsonPath(obj, column.jsonPath)
  if (value === undefined) return null
  if (column.type === 'date') return typeof value === 'string' ? ageOf(value, now) : null
  if (Array.isArray(value)) return value.map((v) => (typeof v === 'object' ? JSON.stringify(v) : String(v))).join(',')
  if (typeof value === 'object') return JSON.stringify(value)
  return value
}

const AGE: PrinterColumn = {
  name: 'Age',
  type: 'date',
  jsonPath: '.metadata.creationTimestamp',
  description: 'CreationTimestamp is a timestamp representing the server time when this object was created.',
}

/** Columns after NAME: the CRD's own (which include Age when it wants one), or the built-in printer's plus Age. */
export function printerColumns(def: ResourceDef): PrinterColumn[] {
  if (def.crd) return def.printerColumns.length > 0 ? def.printerColumns : [AGE]
  return [...def.printerColumns, AGE]
}

export function toTable(def: ResourceDef, objects: KubeObj[], meta: {resourceVersion: string; continue?: string; remainingItemCount?: number}, includeObject: string | null): Record<string, unknown> {
  const now = new Date()
  const columns = printerColumns(def)
  return {
    kind: 'Table',
    apiVersion: 'meta.k8s.io/v1',
    metadata: meta,
    columnDefinitions: [
      {name: 'Name', type: 'string', format: 'name', description: 'Name must be unique within a namespace.', priority: 0},
      ...columns.map((c) => ({name: c.name, type: c.type === 'date' ? 'string' : c.type, format: c.format ?? '', description: c.description ?? '', priority: c.priority ?? 0})),
    ],
    rows: objects.map((obj) => ({
      cells: [obj.metadata.name, ...columns.map((c) => cell(obj, c, now))],
      object: includeObject === 'None' ? undefined : includeObject === 'Object' ? obj : {kind: 'PartialObjectMetadata', apiVersion: 'meta.k8s.io/v1', metadata: obj.metadata},
    })),
  }
}
