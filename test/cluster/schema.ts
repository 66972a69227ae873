/**
 * The test API server's check of custom resources against their CRD's structural openAPIV3Schema,
 * written apart from meshvm's own validator (src/lib/schema/validate.ts) so that a mistake there
 * cannot hide here. It follows what kube-apiserver 1.35 answers (checked against the real binary
 * that `npm run test:real` builds):
 *
 * - structural checks first (types, required, enums, bounds, lengths, patterns, list sets/maps,
 *   oneOf/anyOf/not, maxProperties), properties in name order; unknown fields pruned or reported;
 * - `x-kubernetes-validations` run through the CEL library (@bufbuild/cel with the strings
 *   extension), and only when the whole object passed the structural checks; otherwise one cause
 *   `<nil>: Invalid value: null: some validation rules were not checked because the object was
 *   invalid; correct the existing errors to complete validation` says so;
 * - a failed rule's cause shows a scalar value (`Invalid value: 70000: …`) and no value for objects,
 *   maps and lists (`Invalid value: Address is required`); entries of a map are `path[key]`.
 */
import {celEnv, isCelError, parse, plan} from '@bufbuild/cel'
import {strings} from '@bufbuild/cel/ext'

export interface Cause {
  reason: 'FieldValueInvalid' | 'FieldValueRequired' | 'FieldValueNotSupported' | 'FieldValueTooLong' | 'FieldValueTooMany' | 'FieldValueTypeInvalid' | 'FieldValueDuplicate' | 'FieldValueForbidden'
  field: string
  message: string
}

export interface OpenApiSchema {
  type?: string
  properties?: Record<string, OpenApiSchema>
  additionalProperties?: OpenApiSchema | boolean
  items?: OpenApiSchema
  required?: string[]
  enum?: unknown[]
  minimum?: number
  maximum?: number
  exclusiveMinimum?: boolean
  exclusiveMaximum?: boolean
  minLength?: number
  maxLength?: number
  minItems?: number
  maxItems?: number
  maxProperties?: number
  pattern?: string
  format?: string
  nullable?: boolean
  oneOf?: OpenApiSchema[]
  anyOf?: OpenApiSchema[]
  allOf?: OpenApiSchema[]
  not?: OpenApiSchema
  'x-kubernetes-preserve-unknown-fields'?: boolean
  'x-kubernetes-int-or-string'?: boolean
  'x-kubernetes-list-type'?: string
  'x-kubernetes-list-map-keys'?: string[]
  'x-kubernetes-validations'?: {rule: string; message?: string; fieldPath?: string}[]
}

export interface CrValidator {
  /** Causes, empty when valid; with unknownFields 'prune' the value is pruned in place first. */
  validate(value: unknown): Cause[]
}

const SKIPPED_RULES: Cause = {
  reason: 'FieldValueInvalid',
  field: '<nil>',
  message: 'Invalid value: null: some validation rules were not checked because the object was invalid; correct the existing errors to complete validation',
}

const isObject = (v: unknown): v is Record<string, unknown> => typeof v === 'object' && v !== null && !Array.isArray(v)

/** The JSON type kube-apiserver names in its messages. */
function jsonType(v: unknown): string {
  if (v === null) return 'null'
  if (Array.isArray(v)) return 'array'
  if (typeof v === 'number') return Number.isInteger(v) ? 'integer' : 'number'
  return typeof v
}

/** A value as field.Invalid prints it: strings quoted, numbers and booleans bare. */
function goValue(v: unknown): string {
  if (typeof v === 'string') return JSON.stringify(v)
  if (typeof v === 'number' || typeof v === 'boolean') return String(v)
  if (v === null) return 'null'
  return JSON.stringify(jsonType(v))
}

function hasType(v: unknown, s: OpenApiSchema): boolean {
  if (s['x-kubernetes-int-or-string']) return typeof v === 'string' || (typeof v === 'number' && Number.isInteger(v))
  if (!s.type) return true
  if (s.type === 'object') return isObject(v)
  if (s.type === 'array') return Array.isArray(v)
  if (s.type === 'integer') return typeof v === 'number' && Number.isInteger(v)
  return typeof v === s.type
}

/** oneOf/anyOf/not branches: only required fields and types (how CRDs use them). */
function branchHolds(v: unknown, s: OpenApiSchema): boolean {
  return (
    (!s.required || (isObject(v) && s.required.every((k) => k in v))) &&
    (!s.type || hasType(v, s)) &&
    (!s.anyOf || s.anyOf.some((b) => branchHolds(v, b))) &&
    (!s.allOf || s.allOf.every((b) => branchHolds(v, b))) &&
    (!s.oneOf || s.oneOf.filter((b) => branchHolds(v, b)).length === 1) &&
    (!s.not || !branchHolds(v, s.not))
  )
}

const join = (path: string, key: string) => (path ? `${path}.${key}` : key)

class Checker {
  readonly causes: Cause[] = []
  constructor(private readonly unknownFields: 'prune' | 'report') {}

  private add(reason: Cause['reason'], field: string, message: string): void {
    this.causes.push({reason, field, message})
  }

  check(v: unknown, s: OpenApiSchema, path: string, root: boolean): void {
    if (v === null || v === undefined) {
      if (!s.nullable) this.add('FieldValueTypeInvalid', path, `Invalid value: "null": ${path} in body must be of type ${s.type ?? 'object'}: "null"`)
      return
    }
    if (!hasType(v, s)) {
      const want = s['x-kubernetes-int-or-string'] ? 'integer,string' : s.type
      this.add('FieldValueTypeInvalid', path, `Invalid value: "${jsonType(v)}": ${path} in body must be of type ${want}: "${jsonType(v)}"`)
      return
    }
    if (s.enum && !s.enum.includes(v)) this.add('FieldValueNotSupported', path, `Unsupported value: ${goValue(v)}: supported values: ${s.enum.map(goValue).join(', ')}`)
    if (typeof v === 'number') {
      if (s.maximum !== undefined && (v > s.maximum || (s.exclusiveMaximum === true && v === s.maximum))) {
        this.add('FieldValueInvalid', path, `Invalid value: ${v}: ${path} in body should be less than ${s.exclusiveMaximum ? '' : 'or equal to '}${s.maximum}`)
      }
      if (s.minimum !== undefined && (v < s.minimum || (s.exclusiveMinimum === true && v === s.minimum))) {
        this.add('FieldValueInvalid', path, `Invalid value: ${v}: ${path} in body should be greater than ${s.exclusiveMinimum ? '' : 'or equal to '}${s.minimum}`)
      }
      const bits = s.format === 'int32' ? 2 ** 31 : s.format === 'uint32' ? 2 ** 32 : undefined
      if (bits !== undefined && (s.format === 'uint32' ? v < 0 || v >= bits : v < -bits || v >= bits))
        this.add('FieldValueInvalid', path, `Invalid value: ${v}: ${path} in body must be of type ${s.format}`)
    }
    if (typeof v === 'string') {
      const chars = Array.from(v).length
      if (s.maxLength !== undefined && chars > s.maxLength) this.add('FieldValueTooLong', path, `Too long: may not be more than ${s.maxLength} bytes`)
      if (s.minLength !== undefined && chars < s.minLength) this.add('FieldValueInvalid', path, `Invalid value: ${goValue(v)}: ${path} in body should be at least ${s.minLength} chars long`)
      if (s.pattern !== undefined && !new RegExp(s.pattern, 'u').test(v)) this.add('FieldValueInvalid', path, `Invalid value: ${goValue(v)}: ${path} in body should match '${s.pattern}'`)
    }
    if (Array.isArray(v)) {
      if (s.maxItems !== undefined && v.length > s.maxItems) this.add('FieldValueTooMany', path, `Too many: ${v.length}: must have at most ${s.maxItems} items`)
      if (s.minItems !== undefined && v.length < s.minItems) this.add('FieldValueInvalid', path, `Invalid value: ${v.length}: ${path} in body should have at least ${s.minItems} items`)
      const listType = s['x-kubernetes-list-type']
      if (listType === 'set' || listType === 'map') {
        const seen = new Set<string>()
        for (let i = 0; i < v.length; i++) {
          const item = v[i]
          const key = listType === 'map' && isObject(item) ? JSON.stringify((s['x-kubernetes-list-map-keys'] ?? []).map((k) => [k, item[k]])) : JSON.stringify(item)
          if (seen.has(key))
            this.add(
              'FieldValueDuplicate',
              `${path}[${i}]`,
              `Duplicate value: ${listType === 'map' && isObject(item) ? JSON.stringify(Object.fromEntries((s['x-kubernetes-list-map-keys'] ?? []).map((k) => [k, item[k]]))) : JSON.stringify(item)}`,
            )
          seen.add(key)
        }
      }
      if (s.items) for (const [i, item] of v.entries()) this.check(item, s.items, `${path}[${i}]`, false)
    }
    if (isObject(v)) {
      for (const k of s.required ?? []) if (v[k] === undefined) this.add('FieldValueRequired', join(path, k), 'Required value')
      const n = Object.keys(v).length
      if (s.maxProperties !== undefined && n > s.maxProperties) this.add('FieldValueTooMany', path, `Too many: ${n}: must have at most ${s.maxProperties} items`)
      for (const k of Object.keys(v).sort()) {
        const sub = s.properties?.[k] ?? (isObject(s.additionalProperties) ? s.additionalProperties : undefined)
        if (sub) this.check(v[k], sub, join(path, k), false)
        else if (root && ['apiVersion', 'kind', 'metadata'].includes(k)) continue
        else if (s['x-kubernetes-preserve-unknown-fields'] !== true && s.additionalProperties !== true) {
          if (this.unknownFields === 'prune') delete v[k]
          else this.add('FieldValueForbidden', join(path, k), `unknown field "${join(path, k)}"`)
        }
      }
    }
    if (s.oneOf) {
      const holding = s.oneOf.filter((b) => branchHolds(v, b)).length
      if (holding !== 1) this.add('FieldValueInvalid', path, `Invalid value: ${goValue(v)}: ${path} in body must validate one and only one schema (oneOf)${holding === 0 ? '. Found none valid' : ''}`)
    }
    if (s.anyOf && !s.anyOf.some((b) => branchHolds(v, b))) this.add('FieldValueInvalid', path, `Invalid value: ${goValue(v)}: ${path} in body must validate at least one schema (anyOf)`)
    if (s.not && branchHolds(v, s.not)) this.add('FieldValueInvalid', path, `Invalid value: ${goValue(v)}: ${path} in body should not validate the given schema`)
  }
}

// ---- CEL ----

const env = celEnv({funcs: strings})
type Program = (self: unknown) => boolean | Error

const programs = new Map<string, Program>()
function program(rule: string): Program {
  let p = programs.get(rule)
  if (p) return p
  try {
    const run = plan(env, parse(rule))
    p = (self) => {
      const r = run({self} as never) as unknown
      return isCelError(r) ? (r as Error) : r === true
    }
  } catch (err) {
    const message = `compilation failed: ${(err as Error).message.split('\n')[0]}`
    p = () => new Error(message)
  }
  programs.set(rule, p)
  return p
}

/** JSON → CEL: objects as maps, integers of integer-typed fields as int (bigint). */
function celValue(v: unknown, s: OpenApiSchema | undefined): unknown {
  if (Array.isArray(v)) return v.map((x) => celValue(x, s?.items))
  if (isObject(v)) return new Map(Object.entries(v).map(([k, x]) => [k, celValue(x, s?.properties?.[k] ?? (isObject(s?.additionalProperties) ? s.additionalProperties : undefined))]))
  if (typeof v === 'number' && Number.isInteger(v) && (s?.type === 'integer' || s?.['x-kubernetes-int-or-string'])) return BigInt(v)
  return v
}

function runRules(v: unknown, s: OpenApiSchema, path: string, causes: Cause[]): void {
  if (v === null || v === undefined) return
  for (const rule of s['x-kubernetes-validations'] ?? []) {
    const verdict = program(rule.rule)(celValue(v, s))
    if (verdict === true) continue
    const why =
      verdict instanceof Error
        ? verdict.message.startsWith('compilation failed')
          ? verdict.message
          : `evaluation failed: ${verdict.message.split('\n')[0]}`
        : (rule.message ?? `failed rule: ${rule.rule}`)
    const scalar = typeof v === 'string' || typeof v === 'number' || typeof v === 'boolean'
    causes.push({reason: 'FieldValueInvalid', field: rule.fieldPath ? path + rule.fieldPath : path, message: scalar ? `Invalid value: ${goValue(v)}: ${why}` : `Invalid value: ${why}`})
  }
  if (Array.isArray(v) && s.items) for (const [i, item] of v.entries()) runRules(item, s.items, `${path}[${i}]`, causes)
  if (isObject(v)) {
    for (const k of Object.keys(v).sort()) {
      if (s.properties?.[k]) runRules(v[k], s.properties[k]!, join(path, k), causes)
      else if (isObject(s.additionalProperties)) runRules(v[k], s.additionalProperties, `${path}[${k}]`, causes)
    }
  }
}

export function crValidator(schema: OpenApiSchema, options: {unknownFields: 'prune' | 'report'}): CrValidator {
  return {
    validate(value) {
      const checker = new Checker(options.unknownFields)
      checker.check(value, schema, '', true)
      if (checker.causes.length > 0) {
        const hasRules = JSON.stringify(schema).includes('"x-kubernetes-validations"')
        return hasRules ? [...checker.causes, SKIPPED_RULES] : checker.causes
      }
      const causes: Cause[] = []
      runRules(value, schema, '', causes)
      return causes
    },
  }
}

/** kube-apiserver's 422 message: `Kind.group "name" is invalid: cause` or `[cause, cause]`. */
export function invalidText(kind: string, group: string, name: string, causes: Cause[]): string {
  const parts = causes.map((c) => `${c.field}: ${c.message}`)
  return `${kind}${group ? `.${group}` : ''} "${name}" is invalid: ${parts.length === 1 ? parts[0] : `[${parts.join(', ')}]`}`
}
