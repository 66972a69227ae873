/**
 * Patch semantics: JSON merge patch (RFC 7386), JSON patch (RFC 6902), strategic merge patch
 * (merge patch, with named lists merged by `name` as Kubernetes does for containers, ports, env),
 * and server-side apply with per-field managers and conflicts.
 */

type Json = Record<string, unknown>
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)

export class PatchError extends Error {
  constructor(message: string, readonly status = 422) {
    super(message)
  }
}

export function mergePatch(target: unknown, patch: unknown): unknown {
  if (!isObject(patch)) return structuredClone(patch)
  const out: Json = isObject(target) ? {...target} : {}
  for (const [k, v] of Object.entries(patch)) {
    if (v === null) delete out[k]
    else out[k] = mergePatch(out[k], v)
  }
  return out
}

/** Strategic merge: like a merge patch, but lists of objects with a `name` (or `port`) merge by that key. */
export function strategicMergePatch(target: unknown, patch: unknown): unknown {
  if (Array.isArray(patch) && Array.isArray(target)) {
    const key = ['name', 'port', 'containerPort'].find((k) => patch.every((p) => isObject(p) && k in p) && target.every((t) => isObject(t) && k in t))
    if (!key) return structuredClone(patch)
    const out = target.map((t) => structuredClone(t) as Json)
    for (const p of patch as Json[]) {
      if (p.$patch === 'delete') {
        const i = out.findIndex((t) => t[key] === p[key])
        if (i >= 0) out.splice(i, 1)
        continue
      }
      const i = out.findIndex((t) => t[key] === p[key])
      if (i >= 0) out[i] = strategicMergePatch(out[i], p) as Json
      else out.push(structuredClone(p))
    }
    return out
  }
  if (!isObject(patch)) return structuredClone(patch)
  const out: Json = isObject(target) ? {...target} : {}
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$')) continue
    if (v === null) delete out[k]
    else out[k] = strategicMergePatch(out[k], v)
  }
  return out
}

function pointer(path: string): string[] {
  if (path === '') return []
  if (!path.startsWith('/')) throw new PatchError(`invalid JSON pointer ${JSON.stringify(path)}`, 400)
  return path.slice(1).split('/').map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
}

function parentOf(doc: unknown, tokens: string[]): {parent: Json | unknown[]; key: string} {
  let cur: unknown = doc
  for (const t of tokens.slice(0, -1)) {
    cur = Array.isArray(cur) ? cur[Number(t)] : isObject(cur) ? cur[t] : undefined
    if (cur === undefined) throw new PatchError(`doc is missing path: ${tokens.join('/')}`)
  }
  if (!isObject(cur) && !Array.isArray(cur)) throw new PatchError(`doc is missing path: ${tokens.join('/')}`)
  return {parent: cur, key: tokens[tokens.length - 1]!}
}

export function jsonPatch(doc: unknown, ops: unknown): unknown {
  if (!Array.isArray(ops)) throw new PatchError('a JSON patch must be a list of operations', 400)
  let out = structuredClone(doc)
  for (const op of ops as {op: string; path: string; value?: unknown; from?: string}[]) {
    const tokens = pointer(op.path)
    const get = (t: string[]) => t.reduce<unknown>((c, k) => (Array.isArray(c) ? c[Number(k)] : isObject(c) ? c[k] : undefined), out)
    switch (op.op) {
      case 'add':
      case 'replace': {
        if (tokens.length === 0) {
          out = structuredClone(op.value)
          break
        }
        const {parent, key} = parentOf(out, tokens)
        if (Array.isArray(parent)) {
          const i = key === '-' ? parent.length : Number(key)
          if (op.op === 'add') parent.splice(i, 0, structuredClone(op.value))
          else parent[i] = structuredClone(op.value)
        } else {
          if (op.op === 'replace' && !(key in parent)) throw new PatchError(`replace operation does not apply: doc is missing key: ${op.path}`)
          parent[key] = structuredClone(op.value)
        }
        break
      }
      case 'remove': {
        const {parent, key} = parentOf(out, tokens)
        if (Array.isArray(parent)) parent.splice(Number(key), 1)
        else {
          if (!(key in parent)) throw new PatchError(`remove operation does not apply: doc is missing path: ${op.path}`)
          delete parent[key]
        }
        break
      }
      case 'test':
        if (JSON.stringify(get(tokens)) !== JSON.stringify(op.value)) throw new PatchError(`testing value ${op.path} failed`)
        break
      case 'move':
      case 'copy': {
        const value = structuredClone(get(pointer(op.from ?? '')))
        if (op.op === 'move') out = jsonPatch(out, [{op: 'remove', path: op.from}])
        out = jsonPatch(out, [{op: 'add', path: op.path, value}])
        break
      }
      default:
        throw new PatchError(`unknown JSON patch operation ${JSON.stringify(op.op)}`, 400)
    }
  }
  return out
}

/** Leaf field paths of an object, the unit of ownership in server-side apply. */
export function leafPaths(value: unknown, prefix = ''): Map<string, string> {
  const out = new Map<string, string>()
  if (isObject(value)) {
    for (const [k, v] of Object.entries(value)) {
      if (!prefix && (k === 'apiVersion' || k === 'kind' || k === 'status')) continue
      if (!prefix && k === 'metadata') {
        for (const mk of ['labels', 'annotations'] as const) {
          for (const [lk, lv] of Object.entries(((v as Json)?.[mk] as Json) ?? {})) out.set(`metadata.${mk}.${lk}`, JSON.stringify(lv))
        }
        continue
      }
      for (const [p, s] of leafPaths(v, prefix ? `${prefix}.${k}` : k)) out.set(p, s)
    }
    if (Object.keys(value).length === 0 && prefix) out.set(prefix, '{}')
  } else {
    out.set(prefix, JSON.stringify(value))
  }
  return out
}

export interface ManagedField {
  manager: string
  operation: 'Apply' | 'Update'
  apiVersion?: string
  time: string
  fieldsType: 'FieldsV1'
  fieldsV1: {paths: string[]}
}

/**
 * Server-side apply: merges the applied configuration into the live object. A field that another
 * manager set to a different value is a conflict unless `force`; with force the field changes owner.
 * Fields this manager applied before and no longer applies are removed.
 */
export function serverSideApply(live: Json | undefined, applied: Json, manager: string, force: boolean, apiVersion: string): {object: Json; conflicts: string[]} {
  const managed = ((live?.metadata as Json | undefined)?.managedFields as ManagedField[] | undefined) ?? []
  const appliedPaths = leafPaths(applied)
  const liveLeaves = leafPaths(live ?? {})
  const conflicts: string[] = []
  for (const [path, value] of appliedPaths) {
    const liveValue = liveLeaves.get(path)
    if (liveValue === undefined || liveValue === value) continue
    const owner = managed.find((m) => m.manager !== manager && m.fieldsV1.paths.includes(path))
    if (owner && !force) conflicts.push(`conflict with "${owner.manager}": .${path}`)
  }
  if (conflicts.length > 0) return {object: live ?? {}, conflicts}
  let merged = strategicMergePatch(live ?? {}, applied) as Json
  const previous = managed.find((m) => m.manager === manager && m.operation === 'Apply')
  for (const path of previous?.fieldsV1.paths ?? []) {
    if (appliedPaths.has(path)) continue
    if (managed.some((m) => m.manager !== manager && m.fieldsV1.paths.includes(path))) continue
    merged = removePath(merged, path)
  }
  const time = new Date().toISOString().replace(/\.\d+Z$/, 'Z')
  const others = managed
    .filter((m) => !(m.manager === manager && m.operation === 'Apply'))
    .map((m) => ({...m, fieldsV1: {paths: m.fieldsV1.paths.filter((p) => !(force && appliedPaths.has(p)))}}))
    .filter((m) => m.fieldsV1.paths.length > 0)
  const metadata = {...(merged.metadata as Json), managedFields: [...others, {manager, operation: 'Apply', apiVersion, time, fieldsType: 'FieldsV1', fieldsV1: {paths: [...appliedPaths.keys()]}}]}
  return {object: {...merged, metadata}, conflicts: []}
}

/** Records an Update by `manager` of every leaf that changed. */
export function recordUpdate(before: Json | undefined, after: Json, manager: string, apiVersion: string): Json {
  const beforeLeaves = leafPaths(before ?? {})
  const changed = [...leafPaths(after)].filter(([p, v]) => beforeLeaves.get(p) !== v).map(([p]) => p)
  const managed = (((after.metadata as Json)?.managedFields ?? (before?.metadata as Json | undefined)?.managedFields) as ManagedField[] | undefined) ?? []
  if (changed.length === 0) return {...after, metadata: {...(after.metadata as Json), managedFields: managed}}
  const time = new Date().toISOString().replace(/\.\d+Z$/, 'Z')
  const others = managed
    .map((m) => (m.manager === manager ? m : {...m, fieldsV1: {paths: m.fieldsV1.paths.filter((p) => !changed.includes(p))}}))
    .filter((m) => m.fieldsV1.paths.length > 0 && !(m.manager === manager && m.operation === 'Update'))
  const mine = managed.find((m) => m.manager === manager && m.operation === 'Update')
  const paths = [...new Set([...(mine?.fieldsV1.paths ?? []), ...changed])]
  return {...after, metadata: {...(after.metadata as Json), managedFields: [...others, {manager, operation: 'Update', apiVersion, time, fieldsType: 'FieldsV1', fieldsV1: {paths}}]}}
}

function removePath(obj: Json, path: string): Json {
  const parts = path.startsWith('metadata.labels.') || path.startsWith('metadata.annotations.') ? [path.split('.')[0]!, path.split('.')[1]!, path.split('.').slice(2).join('.')] : path.split('.')
  const out = structuredClone(obj)
  let cur: Json = out
  for (const p of parts.slice(0, -1)) {
    if (!isObject(cur[p])) return out
    cur = cur[p] as Json
  }
  delete cur[parts[parts.length - 1]!]
  return out
}
