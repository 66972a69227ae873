/**
 * Patch semantics: JSON merge patch (RFC 7386), JSON patch (RFC 6902) and strategic merge patch
 * (merge patch, with lists merged by the built-in kinds' patch merge keys).
 * Server-side apply and field ownership are in managed.ts.
 */

type Json = Record<string, unknown>
const isObject = (v: unknown): v is Json => typeof v === 'object' && v !== null && !Array.isArray(v)

export class PatchError extends Error {
  constructor(
    message: string,
    readonly status = 422,
  ) {
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

/**
 * The patch strategies of the built-in kinds this server serves (k8s.io/api `patchStrategy:"merge"`
 * with `patchMergeKey`): lists not named here are atomic and a patch replaces them whole, as
 * kube-apiserver does (e.g. RBAC subjects and rules). `null` merge key: a list of scalars merged as a set.
 */
const MERGE_KEYS: [RegExp, string | null][] = [
  [/^metadata\.finalizers$/, null],
  [/^metadata\.ownerReferences$/, 'uid'],
  [/^spec\.ports$/, 'port'],
  [/(^|\.)(containers|initContainers|ephemeralContainers)$/, 'name'],
  [/(^|\.)containers\.ports$/, 'containerPort'],
  [/(^|\.)(env|volumes|imagePullSecrets)$/, 'name'],
  [/(^|\.)volumeMounts$/, 'mountPath'],
  [/^secrets$/, 'name'],
]

function mergeKeyAt(path: string[]): string | null | undefined {
  const p = path.join('.')
  return MERGE_KEYS.find(([re]) => re.test(p))?.[1]
}

/**
 * Strategic merge patch: a merge patch in which the lists with a patch strategy merge by their
 * key (with `$patch: delete` items), lists of scalars with a strategy merge as sets, and other
 * lists are replaced. `$setElementOrder/...` and other directives are accepted and ignored.
 */
export function strategicMergePatch(target: unknown, patch: unknown, path: string[] = []): unknown {
  if (Array.isArray(patch) && Array.isArray(target)) {
    const key = mergeKeyAt(path)
    if (key === undefined) return structuredClone(patch)
    if (key === null) return [...target, ...patch.filter((v) => !target.some((t) => JSON.stringify(t) === JSON.stringify(v)))]
    const out = target.map((t) => structuredClone(t) as Json)
    for (const p of patch as Json[]) {
      if (!isObject(p)) continue
      const i = out.findIndex((t) => t[key] === p[key])
      if (p.$patch === 'delete') {
        if (i >= 0) out.splice(i, 1)
        continue
      }
      if (i >= 0) out[i] = strategicMergePatch(out[i], p, path) as Json
      else out.push(strategicMergePatch({}, p, path) as Json)
    }
    return out
  }
  if (!isObject(patch)) return structuredClone(patch)
  const out: Json = isObject(target) ? {...target} : {}
  for (const [k, v] of Object.entries(patch)) {
    if (k.startsWith('$')) continue
    if (v === null) delete out[k]
    else out[k] = strategicMergePatch(out[k], v, [...path, k])
  }
  return out
}

function pointer(path: string): string[] {
  if (path === '') return []
  if (!path.startsWith('/')) throw new PatchError(`invalid JSON pointer ${JSON.stringify(path)}`, 400)
  return path
    .slice(1)
    .split('/')
    .map((s) => s.replace(/~1/g, '/').replace(/~0/g, '~'))
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
