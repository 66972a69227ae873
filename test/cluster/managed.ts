/**
 * Field ownership as kube-apiserver tracks it (sigs.k8s.io/structured-merge-diff): managedFields
 * entries whose `fieldsV1` is the FieldsV1 tree (`{"f:spec": {"f:ports": {"k:{\"port\":80,\"protocol\":\"TCP\"}": {".": {}, "f:port": {}}}}}`),
 * server-side apply with conflicts (409 causes `conflict with "helm" using v1`), force, removal of
 * fields a manager stops applying, lists merged by their keys (x-kubernetes-list-type map/set from
 * a CRD schema; for built-in kinds the strategic-merge keys of k8s.io/api, e.g. Service ports by
 * port and protocol), and Update operations recorded per manager. The format is what kubectl reads
 * when it migrates client-side-applied fields to server-side apply (csaupgrade).
 */

type Json = Record<string, unknown>
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)

export type ListType = {type: 'map'; keys: string[]} | {type: 'set'} | {type: 'atomic'}
/** How the list at a field path (field names only, list items skipped) merges. */
export type ListTypes = (path: string[]) => ListType

export interface ManagedFieldsEntry {
  manager: string
  operation: 'Apply' | 'Update'
  apiVersion?: string
  time: string
  fieldsType: 'FieldsV1'
  fieldsV1: Json
  subresource?: string
}

/** Strategic-merge keys of the built-in kinds meshvm and its tests use (k8s.io/api patchMergeKey / listMapKeys). */
const BUILTIN_LISTS: [RegExp, ListType][] = [
  [/^metadata\.finalizers$/, {type: 'set'}],
  [/^metadata\.ownerReferences$/, {type: 'map', keys: ['uid']}],
  [/^spec\.ports$/, {type: 'map', keys: ['port', 'protocol']}],
  [/(^|\.)(containers|initContainers|ephemeralContainers)$/, {type: 'map', keys: ['name']}],
  [/(^|\.)containers\.ports$/, {type: 'map', keys: ['containerPort', 'protocol']}],
  [/(^|\.)(env|volumeMounts|volumes|imagePullSecrets)$/, {type: 'map', keys: ['name']}],
  [/^secrets$/, {type: 'map', keys: ['name']}],
]

export function builtinListTypes(path: string[]): ListType {
  const p = path.join('.')
  return BUILTIN_LISTS.find(([re]) => re.test(p))?.[1] ?? {type: 'atomic'}
}

/** List types from a CRD's openAPIV3Schema (x-kubernetes-list-type / x-kubernetes-list-map-keys). */
export function schemaListTypes(schema: Json | undefined): ListTypes {
  return (path) => {
    if (path[0] === 'metadata') return builtinListTypes(path)
    let node: Json | undefined = schema
    for (const name of path) {
      if (!node) break
      if (node.type === 'array') node = node.items as Json | undefined
      node = ((node?.properties as Json | undefined)?.[name] as Json | undefined) ?? (isObject(node?.additionalProperties) ? (node!.additionalProperties as Json) : undefined)
    }
    if (node?.['x-kubernetes-list-type'] === 'map') return {type: 'map', keys: (node['x-kubernetes-list-map-keys'] as string[] | undefined) ?? []}
    if (node?.['x-kubernetes-list-type'] === 'set') return {type: 'set'}
    return {type: 'atomic'}
  }
}

// ---- paths: arrays of FieldsV1 path elements (f:name, k:{...}, v:value) ----

const SEP = '\u0000'
type FieldSet = Set<string>

function keyElement(item: Json, keys: string[]): string {
  const sorted = [...keys].sort()
  return `k:${JSON.stringify(Object.fromEntries(sorted.map((k) => [k, item[k]])))}`
}

/** Ignored as kube-apiserver ignores them: server-set and identity fields are nobody's. */
const META_IGNORED = new Set([
  'name',
  'namespace',
  'uid',
  'resourceVersion',
  'generation',
  'creationTimestamp',
  'deletionTimestamp',
  'deletionGracePeriodSeconds',
  'managedFields',
  'selfLink',
  'generateName',
])

/** The fields an object sets, as FieldsV1 paths (leaves, and list-map items themselves). */
export function fieldSet(obj: Json, lists: ListTypes, withDefaults?: (path: string[], item: Json) => Json): FieldSet {
  const out: FieldSet = new Set()
  const walk = (value: unknown, path: string[], names: string[]) => {
    if (isObject(value)) {
      const entries = Object.entries(value).filter(
        ([k]) => !(names.length === 0 && (k === 'apiVersion' || k === 'kind' || k === 'status')) && !(names.length === 1 && names[0] === 'metadata' && META_IGNORED.has(k)),
      )
      if (Object.keys(value).length === 0 && path.length > 0) out.add(path.join(SEP))
      for (const [k, v] of entries) walk(v, [...path, `f:${k}`], [...names, k])
      return
    }
    if (Array.isArray(value)) {
      const lt = lists(names)
      if (lt.type === 'map' && value.every(isObject)) {
        for (const raw of value as Json[]) {
          const item = withDefaults ? withDefaults(names, raw) : raw
          const el = [...path, keyElement(item, lt.keys)]
          out.add([...el, '.'].join(SEP))
          for (const [k, v] of Object.entries(raw)) walk(v, [...el, `f:${k}`], [...names, k])
        }
        return
      }
      if (lt.type === 'set') {
        for (const v of value) out.add([...path, `v:${JSON.stringify(v)}`].join(SEP))
        return
      }
    }
    out.add(path.join(SEP))
  }
  walk(obj, [], [])
  out.delete('')
  return out
}

/** The FieldsV1 tree of a set of paths. */
export function toFieldsV1(set: FieldSet): Json {
  const root: Json = {}
  for (const p of [...set].sort()) {
    let node = root
    for (const el of p.split(SEP)) node = (node[el] ??= {}) as Json
  }
  return root
}

/** The paths of a FieldsV1 tree. */
export function fromFieldsV1(tree: unknown): FieldSet {
  const out: FieldSet = new Set()
  const walk = (node: unknown, path: string[]) => {
    if (!isObject(node)) return
    const keys = Object.keys(node)
    if (keys.length === 0 && path.length > 0) out.add(path.join(SEP))
    for (const k of keys) walk(node[k], [...path, k])
  }
  walk(tree, [])
  return out
}

/** `.spec.ports[port=80,protocol="TCP"].targetPort`: how kube-apiserver names a path in conflicts. */
export function describePath(p: string): string {
  let out = ''
  for (const el of p.split(SEP)) {
    if (el === '.') continue
    if (el.startsWith('f:')) out += `.${el.slice(2)}`
    else if (el.startsWith('k:'))
      out += `[${Object.entries(JSON.parse(el.slice(2)) as Json)
        .map(([k, v]) => `${k}=${JSON.stringify(v)}`)
        .join(',')}]`
    else if (el.startsWith('v:')) out += `[=${el.slice(2)}]`
  }
  return out
}

/** The value at a path (undefined when absent). */
function valueAt(obj: unknown, p: string): unknown {
  let cur: unknown = obj
  for (const el of p.split(SEP)) {
    if (el === '.') return cur
    if (el.startsWith('f:')) cur = isObject(cur) ? cur[el.slice(2)] : undefined
    else if (el.startsWith('k:')) {
      const keys = JSON.parse(el.slice(2)) as Json
      cur = Array.isArray(cur) ? cur.find((i) => isObject(i) && Object.entries(keys).every(([k, v]) => JSON.stringify(i[k]) === JSON.stringify(v))) : undefined
    } else if (el.startsWith('v:')) {
      const v = el.slice(2)
      cur = Array.isArray(cur) && cur.some((i) => JSON.stringify(i) === v) ? true : undefined
    }
    if (cur === undefined) return undefined
  }
  return cur
}

/** Removes what a path designates (a field, a list-map item, a set member). */
function removeAt(obj: Json, p: string): void {
  const els = p.split(SEP)
  if (els[els.length - 1] === '.') els.pop()
  let parent: unknown = obj
  for (const el of els.slice(0, -1)) {
    parent = valueAt(parent, el)
    if (parent === undefined) return
  }
  const last = els[els.length - 1]!
  if (last.startsWith('f:') && isObject(parent)) delete parent[last.slice(2)]
  else if (Array.isArray(parent)) {
    const i = parent.findIndex((item) => (last.startsWith('v:') ? JSON.stringify(item) === last.slice(2) : valueAt([item], last) !== undefined))
    if (i >= 0) parent.splice(i, 1)
  }
}

/** Merges an applied configuration into the live object: maps recursively, list-maps by key, sets as unions, the rest replaced. */
function merge(live: unknown, applied: unknown, names: string[], lists: ListTypes, withDefaults?: (path: string[], item: Json) => Json): unknown {
  if (isObject(applied)) {
    const out: Json = isObject(live) ? {...live} : {}
    for (const [k, v] of Object.entries(applied)) out[k] = merge(out[k], v, [...names, k], lists, withDefaults)
    return out
  }
  if (Array.isArray(applied) && Array.isArray(live)) {
    const lt = lists(names)
    if (lt.type === 'map' && applied.every(isObject) && live.every(isObject)) {
      const out = (live as Json[]).map((i) => structuredClone(i))
      const norm = (i: Json) => (withDefaults ? withDefaults(names, i) : i)
      for (const item of applied as Json[]) {
        const key = keyElement(norm(item), lt.keys)
        const i = out.findIndex((o) => keyElement(norm(o), lt.keys) === key)
        if (i >= 0) out[i] = merge(out[i], item, names, lists, withDefaults) as Json
        else out.push(structuredClone(item))
      }
      return out
    }
    if (lt.type === 'set') return [...live, ...applied.filter((v) => !live.some((l) => JSON.stringify(l) === JSON.stringify(v)))]
  }
  return structuredClone(applied)
}

const nowTime = () => new Date().toISOString().replace(/\.\d+Z$/, 'Z')

/** Old test-server entries (`fieldsV1: {paths}`) are read as nothing rather than misread. */
function entriesOf(obj: Json | undefined): ManagedFieldsEntry[] {
  return (((obj?.metadata as Json | undefined)?.managedFields as ManagedFieldsEntry[] | undefined) ?? []).filter((m) => isObject(m) && isObject(m.fieldsV1))
}

export interface Conflict {
  manager: string
  operation: 'Apply' | 'Update'
  apiVersion?: string
  time?: string
  path: string
}

/** List-map items with their key defaults filled in (so keys compare as the stored object's do). */
function withKeyDefaults(value: unknown, names: string[], lists: ListTypes, withDefaults: (path: string[], item: Json) => Json): unknown {
  if (isObject(value)) return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, withKeyDefaults(v, [...names, k], lists, withDefaults)]))
  if (Array.isArray(value) && lists(names).type === 'map') return value.map((i) => (isObject(i) ? withDefaults(names, withKeyDefaults(i, names, lists, withDefaults) as Json) : i))
  return value
}

/**
 * Server-side apply. A field another manager owns with a different value is a conflict unless
 * `force` (then it changes owner); fields this manager applied before and no longer applies are
 * removed unless another manager owns them too.
 */
export function applyFields(
  live: Json | undefined,
  applied: Json,
  manager: string,
  force: boolean,
  apiVersion: string,
  lists: ListTypes,
  withDefaults?: (path: string[], item: Json) => Json,
): {object: Json; conflicts: Conflict[]} {
  const managed = entriesOf(live)
  // Key defaults only locate items; the defaulted fields themselves are not the applier's.
  const located = withDefaults ? (withKeyDefaults(applied, [], lists, withDefaults) as Json) : applied
  const mine = fieldSet(applied, lists, withDefaults)
  const conflicts: Conflict[] = []
  if (live && !force) {
    for (const m of managed) {
      if (m.manager === manager && m.operation === 'Apply') continue
      if (m.manager === manager && m.operation === 'Update') continue
      for (const p of fromFieldsV1(m.fieldsV1)) {
        if (!mine.has(p) || p.endsWith(`${SEP}.`)) continue
        if (JSON.stringify(valueAt(live, p)) !== JSON.stringify(valueAt(located, p))) conflicts.push({manager: m.manager, operation: m.operation, apiVersion: m.apiVersion, time: m.time, path: p})
      }
    }
  }
  if (conflicts.length > 0) return {object: live ?? {}, conflicts}
  const merged = merge(live ?? {}, applied, [], lists, withDefaults) as Json
  const previous = managed.find((m) => m.manager === manager && m.operation === 'Apply')
  const others = managed.filter((m) => !(m.manager === manager && m.operation === 'Apply'))
  const othersPaths = new Set(others.flatMap((m) => [...fromFieldsV1(m.fieldsV1)]))
  const dropped = [...fromFieldsV1(previous?.fieldsV1)].filter((p) => !mine.has(p) && !othersPaths.has(p))
  // Deepest first, so removing an item does not hide the removal of one of its fields.
  for (const p of dropped.sort((a, b) => b.split(SEP).length - a.split(SEP).length)) removeAt(merged, p)
  const rest = others
    .map((m) => ({...m, fieldsV1: toFieldsV1(new Set([...fromFieldsV1(m.fieldsV1)].filter((p) => !(force && mine.has(p)) && !(m.manager === manager && mine.has(p)))))}))
    .filter((m) => Object.keys(m.fieldsV1).length > 0)
  const entry: ManagedFieldsEntry = {manager, operation: 'Apply', apiVersion, time: nowTime(), fieldsType: 'FieldsV1', fieldsV1: toFieldsV1(mine)}
  return {object: {...merged, metadata: {...(merged.metadata as Json), managedFields: [...rest, entry]}}, conflicts: []}
}

/** Records an Update by `manager`: it owns every field it changed, which other managers lose. */
export function recordUpdate(before: Json | undefined, after: Json, manager: string, apiVersion: string, lists: ListTypes, subresource?: string): Json {
  // managedFields sent by the client replace the stored ones (kubectl's csaupgrade patches them).
  const sent = (after.metadata as Json | undefined)?.managedFields
  const managed = sent !== undefined ? entriesOf(after) : entriesOf(before)
  const beforeSet = fieldSet(before ?? {}, lists)
  const afterSet = fieldSet(after, lists)
  const changed = [...afterSet].filter((p) => !beforeSet.has(p) || JSON.stringify(valueAt(before, p)) !== JSON.stringify(valueAt(after, p)))
  if (changed.length === 0) return {...after, metadata: {...(after.metadata as Json), managedFields: managed}}
  const changedSet = new Set(changed)
  const rest = managed
    .filter((m) => !(m.manager === manager && m.operation === 'Update'))
    .map((m) => ({...m, fieldsV1: toFieldsV1(new Set([...fromFieldsV1(m.fieldsV1)].filter((p) => !changedSet.has(p) && afterSet.has(p))))}))
    .filter((m) => Object.keys(m.fieldsV1).length > 0)
  const previous = managed.find((m) => m.manager === manager && m.operation === 'Update')
  const paths = new Set([...fromFieldsV1(previous?.fieldsV1)].filter((p) => afterSet.has(p)).concat(changed))
  const entry: ManagedFieldsEntry = {manager, operation: 'Update', apiVersion, time: nowTime(), fieldsType: 'FieldsV1', fieldsV1: toFieldsV1(paths), ...(subresource ? {subresource} : {})}
  return {...after, metadata: {...(after.metadata as Json), managedFields: [...rest, entry]}}
}
