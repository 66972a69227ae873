/**
 * Label selectors (`=`, `==`, `!=`, `in`, `notin`, exists, `!key`) and field selectors, parsed and
 * matched as kube-apiserver does. A malformed selector is a 400 BadRequest.
 * Written apart from meshvm's own selector code (src/lib/kube/selector.ts) on purpose: the
 * test server stands in for kube-apiserver, so a bug in meshvm must not be mirrored by it.
 */

export type LabelRequirement = {op: 'eq' | 'neq'; key: string; value: string} | {op: 'in' | 'notin'; key: string; values: string[]} | {op: 'exists' | 'notexists'; key: string}

export class SelectorError extends Error {}

function splitTopLevel(text: string): string[] {
  const parts: string[] = []
  let depth = 0
  let current = ''
  for (const c of text) {
    if (c === '(') depth++
    if (c === ')') depth--
    if (c === ',' && depth === 0) {
      parts.push(current)
      current = ''
    } else current += c
  }
  if (current.trim() !== '') parts.push(current)
  return parts.map((p) => p.trim()).filter(Boolean)
}

export function parseLabelSelector(text: string | null | undefined): LabelRequirement[] {
  if (!text) return []
  return splitTopLevel(text).map((part) => {
    let m = /^([^\s!=(),]+)\s+(in|notin)\s+\(([^)]*)\)$/.exec(part)
    if (m)
      return {
        op: m[2] as 'in' | 'notin',
        key: m[1]!,
        values: m[3]!
          .split(',')
          .map((v) => v.trim())
          .filter((v) => v !== ''),
      }
    m = /^([^\s!=(),]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/.exec(part)
    if (m) return {op: m[2] === '!=' ? 'neq' : 'eq', key: m[1]!, value: m[3]!}
    m = /^!([^\s!=(),]+)$/.exec(part)
    if (m) return {op: 'notexists', key: m[1]!}
    m = /^([^\s!=(),]+)$/.exec(part)
    if (m) return {op: 'exists', key: m[1]!}
    throw new SelectorError(`unable to parse requirement: ${JSON.stringify(part)}`)
  })
}

export function matchesLabels(labels: Record<string, string> | undefined, reqs: LabelRequirement[]): boolean {
  const l = labels ?? {}
  return reqs.every((r) => matchesLabel(r, l))
}

function matchesLabel(r: LabelRequirement, l: Record<string, string>): boolean {
  const has = Object.hasOwn(l, r.key)
  switch (r.op) {
    case 'eq':
      return has && l[r.key] === r.value
    case 'neq':
      return !has || l[r.key] !== r.value
    case 'in':
      return has && r.values.includes(l[r.key]!)
    case 'notin':
      return !has || !r.values.includes(l[r.key]!)
    case 'exists':
      return has
    case 'notexists':
      return !has
  }
}

export interface FieldRequirement {
  field: string
  op: 'eq' | 'neq'
  value: string
}

/** The fields each kind supports, as kube-apiserver registers them (others are a 400). */
export const FIELD_SELECTORS: Record<string, (obj: Record<string, unknown>) => Record<string, string | undefined>> = {
  default: (o) => meta(o),
  Pod: (o) => ({...meta(o), 'status.phase': str(o, 'status', 'phase'), 'spec.nodeName': str(o, 'spec', 'nodeName')}),
  Secret: (o) => ({...meta(o), type: o.type as string | undefined}),
  Event: (o) => ({
    ...meta(o),
    'involvedObject.name': str(o, 'involvedObject', 'name'),
    'involvedObject.kind': str(o, 'involvedObject', 'kind'),
    'involvedObject.uid': str(o, 'involvedObject', 'uid'),
    'involvedObject.namespace': str(o, 'involvedObject', 'namespace'),
    'involvedObject.apiVersion': str(o, 'involvedObject', 'apiVersion'),
    reason: o.reason as string | undefined,
    type: o.type as string | undefined,
  }),
}

function meta(o: Record<string, unknown>): Record<string, string | undefined> {
  const m = (o.metadata ?? {}) as {name?: string; namespace?: string}
  return {'metadata.name': m.name, 'metadata.namespace': m.namespace}
}

function str(o: Record<string, unknown>, a: string, b: string): string | undefined {
  const v = (o[a] as Record<string, unknown> | undefined)?.[b]
  return typeof v === 'string' ? v : undefined
}

export function parseFieldSelector(text: string | null | undefined, kind: string): FieldRequirement[] {
  if (!text) return []
  const known = Object.keys((FIELD_SELECTORS[kind] ?? FIELD_SELECTORS.default!)({metadata: {}}))
  return splitTopLevel(text).map((part) => {
    const m = /^([^!=]+?)\s*(==|=|!=)\s*(.*)$/.exec(part)
    if (!m) throw new SelectorError(`invalid selector: ${JSON.stringify(part)}`)
    if (!known.includes(m[1]!)) throw new SelectorError(`field label not supported: ${m[1]}`)
    return {field: m[1]!, op: m[2] === '!=' ? 'neq' : 'eq', value: m[3]!}
  })
}

export function matchesFields(obj: Record<string, unknown>, kind: string, reqs: FieldRequirement[]): boolean {
  if (reqs.length === 0) return true
  const fields = (FIELD_SELECTORS[kind] ?? FIELD_SELECTORS.default!)(obj)
  return reqs.every((r) => (r.op === 'eq' ? (fields[r.field] ?? '') === r.value : (fields[r.field] ?? '') !== r.value))
}
