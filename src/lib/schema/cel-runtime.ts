/**
 * Runtime of the CEL rules that scripts/cel-to-js.mjs transpiles to JavaScript at build time
 * (istio-rules.generated.ts): small helpers that reproduce @bufbuild/cel's evaluation — results,
 * and errors with the library's messages — for the values validate.ts passes in (its toCel):
 * strings, booleans, null, ints as bigint, doubles as number, lists as arrays, maps as Map.
 *
 * An evaluation error is thrown as a CelEvalError. Where CEL turns errors back into values, the
 * helpers catch them: `&&` and `||` (error && false is false, error || true is true), the
 * `@not_strictly_false` loop condition of the all/exists macros, and the comprehension accumulator,
 * which may hold an error (`fold`, `v`). Any other exception is a bug and is never absorbed.
 * test/lib/schema/cel-js.test.ts checks every generated rule against the library.
 */

/** An evaluation error: validate.ts reports it as `evaluation failed: <message>`, like the library's. */
export class CelEvalError extends Error {
  override name = 'CelEvalError'
}

/** A transpiled rule: its result for `self`, or a thrown CelEvalError. */
export type CelRule = (self: unknown) => boolean

const MAX_INT = 9223372036854775807n
const MIN_INT = -9223372036854775808n

/** The library's type name of a value (`celType(v).name`). */
function typeName(v: unknown): string {
  switch (typeof v) {
    case 'bigint':
      return 'int'
    case 'boolean':
      return 'bool'
    case 'number':
      return 'double'
    case 'string':
      return 'string'
    case 'object':
      if (v === null) return 'null_type'
      if (Array.isArray(v)) return 'list'
      if (v instanceof Map) return 'map'
      if (v instanceof Uint8Array) return 'bytes'
  }
  // The library throws here (an exception, not an error value): nothing absorbs it.
  throw new Error(`Not a CEL value: ${String(v)}`)
}

/** The library's `String(celType(v))`: lists and maps print their parameters. */
function typeString(v: unknown): string {
  const name = typeName(v)
  return name === 'list' ? 'list(dyn)' : name === 'map' ? 'map(dyn, dyn)' : name
}

function noOverload(name: string, target: unknown, args: unknown[], hasTarget = target !== undefined): CelEvalError {
  return new CelEvalError(`found no matching overload for '${name}' applied to '${hasTarget ? `${typeString(target)}.` : ''}(${args.map(typeName).join(', ')})'`)
}

function isEvalError(e: unknown): e is CelEvalError {
  return e instanceof CelEvalError
}

/**
 * The library converts list elements and map values as it reads them, and throws (an exception,
 * which escapes && and || as in the library) on `undefined`, which is no CEL value.
 */
function element(v: unknown): unknown {
  if (v === undefined) throw new Error('unsupported input undefined')
  return v
}

/** A map's value by key as the library's NativeMap.get reads it: numbers are looked up as ints. */
function mapGet(map: Map<unknown, unknown>, key: unknown): unknown {
  if (typeof key === 'number') {
    if (!Number.isInteger(key)) return undefined
    key = BigInt(key)
  }
  return map.get(key)
}

// ---- logic ----------------------------------------------------------------------------------

/**
 * CEL's commutative `&&` (decisive: false) and `||` (decisive: true): the decisive value if any term
 * has it, else the first error (or non-bool term), else the other bool.
 */
function junction(decisive: boolean, terms: (() => unknown)[]): boolean {
  let error: CelEvalError | undefined
  for (const term of terms) {
    let value: unknown
    try {
      value = term()
    } catch (e) {
      if (!isEvalError(e)) throw e
      error ??= e
      continue
    }
    if (value === decisive) return decisive
    if (value !== !decisive) error ??= new CelEvalError(`type mismatch: expected bool, got ${typeString(value)}`)
  }
  if (error) throw error
  return !decisive
}

/** `a && b && …`. */
export const and = (...terms: (() => unknown)[]): boolean => junction(false, terms)

/** `a || b || …`. */
export const or = (...terms: (() => unknown)[]): boolean => junction(true, terms)

export function not(x: unknown): boolean {
  if (typeof x !== 'boolean') throw noOverload('!_', undefined, [x])
  return !x
}

/** The condition of `c ? a : b`. */
export function cond(c: unknown): boolean {
  if (typeof c !== 'boolean') throw new CelEvalError(`found no matching overload for _?_:_ applied to '(${typeName(c)})'`)
  return c
}

/** `@not_strictly_false(x)`, the loop condition of all() and exists(): true unless x is false. */
export function nsf(x: () => unknown): boolean {
  try {
    return x() !== false
  } catch (e) {
    if (!isEvalError(e)) throw e
    return true
  }
}

// ---- fields ---------------------------------------------------------------------------------

/** `x.field`: a map's value; a missing key (or anything but a map) is an error. */
export function get(x: unknown, field: string): unknown {
  const value = x instanceof Map ? mapGet(x, field) : undefined
  if (value === undefined) throw new CelEvalError(`field not found: ${field}`)
  return value
}

/** `has(x.field)`: the library answers false (no error) for anything but a map, and for null values. */
export function has(x: unknown, field: string): boolean {
  return x instanceof Map && mapGet(x, field) != null
}

// ---- comparison and arithmetic ----------------------------------------------------------------

/** CEL equality: numbers across int and double, lists and maps by content, other types never equal. */
export function equals(a: unknown, b: unknown): boolean {
  if (a === b && typeof a !== 'object') return true
  if ((typeof a === 'number' || typeof a === 'bigint') && (typeof b === 'number' || typeof b === 'bigint')) return a == b
  if (Array.isArray(a)) {
    if (!Array.isArray(b) || a.length !== b.length) return false
    for (let i = 0; i < a.length; i++) if (!equals(element(a[i]), element(b[i]))) return false
    return true
  }
  if (a instanceof Map) {
    if (!(b instanceof Map) || a.size !== b.size) return false
    for (const [k, v] of a) {
      const value = element(v)
      const other = mapGet(b, k)
      if (other === undefined || !equals(value, other)) return false
    }
    return true
  }
  if (a === null) return b === null
  return false
}

export function eq(a: unknown, b: unknown): boolean {
  return equals(a, b)
}

export function ne(a: unknown, b: unknown): boolean {
  return !equals(a, b)
}

type Order = '_<_' | '_<=_' | '_>_' | '_>=_'

function compare(op: Order, a: unknown, b: unknown): boolean {
  let l: number | bigint | string | boolean
  let r: number | bigint | string | boolean
  const ta = typeof a
  const tb = typeof b
  if (ta === tb && (ta === 'bigint' || ta === 'number' || ta === 'string' || ta === 'boolean')) {
    l = a as number
    r = b as number
  } else if (ta === 'bigint' && tb === 'number') {
    l = Number(a)
    r = b as number
  } else if (ta === 'number' && tb === 'bigint') {
    l = a as number
    r = Number(b)
  } else {
    throw noOverload(op, undefined, [a, b])
  }
  switch (op) {
    case '_<_':
      return l < r
    case '_<=_':
      return l <= r
    case '_>_':
      return l > r
    case '_>=_':
      return l >= r
  }
}

export const lt = (a: unknown, b: unknown): boolean => compare('_<_', a, b)
export const le = (a: unknown, b: unknown): boolean => compare('_<=_', a, b)
export const gt = (a: unknown, b: unknown): boolean => compare('_>_', a, b)
export const ge = (a: unknown, b: unknown): boolean => compare('_>=_', a, b)

/** `a + b` on two ints (checked for int64 overflow), doubles, strings or lists. */
export function add(a: unknown, b: unknown): unknown {
  if (typeof a === 'bigint' && typeof b === 'bigint') {
    const sum = a + b
    if (sum < MIN_INT || sum > MAX_INT) throw new CelEvalError('int overflow during _+_')
    return sum
  }
  if (typeof a === 'number' && typeof b === 'number') return a + b
  if (typeof a === 'string' && typeof b === 'string') return a + b
  if (Array.isArray(a) && Array.isArray(b)) return [...a, ...b]
  throw noOverload('_+_', undefined, [a, b])
}

/** `x in list` (by CEL equality) and `key in map`. */
export function isIn(x: unknown, container: unknown): boolean {
  if (Array.isArray(container)) {
    for (const item of container) if (equals(element(item), x)) return true
    return false
  }
  if (container instanceof Map && (typeof x === 'string' || typeof x === 'number' || typeof x === 'bigint' || typeof x === 'boolean')) {
    return mapGet(container, x) != null
  }
  throw noOverload('@in', undefined, [x, container])
}

// ---- size and strings -----------------------------------------------------------------------

function sizeOf(x: unknown): bigint | undefined {
  if (typeof x === 'string') return BigInt([...x].length)
  if (Array.isArray(x)) return BigInt(x.length)
  if (x instanceof Map) return BigInt(x.size)
  if (x instanceof Uint8Array) return BigInt(x.length)
  return undefined
}

/** `size(x)`. */
export function size(x: unknown): bigint {
  const n = sizeOf(x)
  if (n === undefined) throw noOverload('size', undefined, [x])
  return n
}

/** `x.size()`. */
export function sizeMethod(x: unknown): bigint {
  const n = sizeOf(x)
  if (n === undefined) throw noOverload('size', x, [])
  return n
}

function stringMethod(name: string, target: unknown, arg: unknown): [string, string] {
  if (typeof target !== 'string' || typeof arg !== 'string') throw noOverload(name, target, [arg])
  return [target, arg]
}

export function startsWith(target: unknown, prefix: unknown): boolean {
  const [s, p] = stringMethod('startsWith', target, prefix)
  return s.startsWith(p)
}

export function endsWith(target: unknown, suffix: unknown): boolean {
  const [s, p] = stringMethod('endsWith', target, suffix)
  return s.endsWith(p)
}

export function contains(target: unknown, part: unknown): boolean {
  const [s, p] = stringMethod('contains', target, part)
  return s.includes(p)
}

const regexes = new Map<string, RegExp>()

/**
 * `s.matches(pattern)` for a constant pattern the transpiler accepted: one whose syntax means the
 * same to RE2 (the library's engine) and to a JavaScript `u` regex. Unanchored, like RE2's match.
 */
export function matches(target: unknown, pattern: string): boolean {
  if (typeof target !== 'string') throw noOverload('matches', target, [pattern])
  let re = regexes.get(pattern)
  if (!re) {
    re = new RegExp(pattern, 'u')
    regexes.set(pattern, re)
  }
  return re.test(target)
}

/** `s.substring(start)` and `s.substring(start, end)` (strings extension), in UTF-16 units as the library counts. */
export function substring(target: unknown, ...args: unknown[]): string {
  if (typeof target !== 'string' || !args.every((a) => typeof a === 'bigint')) throw noOverload('substring', target, args)
  const i = Number(args[0])
  if (i < 0 || i > target.length) throw new CelEvalError(`index ${i} out of bounds [0, ${target.length})`)
  if (args.length === 1) return target.substring(i)
  const j = Number(args[1])
  if (j < 0 || j > target.length) throw new CelEvalError(`index ${j} out of bounds [0, ${target.length})`)
  if (i > j) throw new CelEvalError('invalid argument to function substring: start > end')
  return target.substring(i, j)
}

// ---- comprehensions (the expanded all, exists, exists_one macros) ----------------------------

/** The accumulator's value; it may hold the error a loop step produced. */
export function v(acc: unknown): unknown {
  if (isEvalError(acc)) throw acc
  return acc
}

/** The accumulator's value, for an accumulator the transpiler knows is a bool (or an error). */
export function vb(acc: unknown): boolean {
  if (isEvalError(acc)) throw acc
  return acc as boolean
}

/**
 * A comprehension, as the library's EvalFold runs it: the accumulator's initial value, then the
 * range (a list's elements or a map's keys), then for each item: stop unless the loop condition is
 * true, else the step's value (or error) becomes the accumulator; finally the result.
 */
export function fold<R>(
  init: () => unknown,
  range: () => unknown,
  condition: (item: unknown, acc: unknown) => unknown,
  step: (item: unknown, acc: unknown) => unknown,
  result: (acc: unknown) => R,
): R {
  let acc = init()
  const r = range()
  let items: unknown[]
  if (r instanceof Map) items = [...r.keys()]
  else if (Array.isArray(r)) items = r.map(element)
  else throw new CelEvalError(`type mismatch: iterable vs ${typeString(r)}`)
  for (const item of items) {
    if (condition(item, acc) !== true) break
    try {
      acc = step(item, acc)
    } catch (e) {
      if (!isEvalError(e)) throw e
      acc = e
    }
  }
  return result(acc)
}
