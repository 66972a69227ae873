/**
 * Validation of objects against a CRD's structural `openAPIV3Schema`, the way kube-apiserver does
 * it: types, required fields, enums, bounds, lengths, patterns, list-map keys, oneOf/anyOf/not,
 * int-or-string, unknown-field pruning, and `x-kubernetes-validations` CEL rules (the Istio CRDs'
 * rules as plain predicates, istio-rules.ts; others through a compiler the caller passes, such as the
 * test API server's, which uses the CEL library). Used by meshvm before it prints or applies an
 * object, and by the test API server on every write. Field paths and messages follow
 * kube-apiserver's 422 causes.
 */
import {ISTIO_RULES, RuleEvalError} from './istio-rules.js'
import {isRecord} from '../util/records.js'

export {RuleEvalError}

/**
 * A CEL rule compiled by the caller (ValidateOptions.compileRule): called with the value as CEL sees
 * it (objects as Maps, integers as bigint); true, false, or a thrown RuleEvalError.
 */
export type CelRule = (self: unknown) => boolean

export type CauseReason =
  | 'FieldValueInvalid'
  | 'FieldValueRequired'
  | 'FieldValueNotSupported'
  | 'FieldValueTooLong'
  | 'FieldValueTooMany'
  | 'FieldValueTypeInvalid'
  | 'FieldValueDuplicate'
  | 'FieldValueForbidden'

export interface FieldCause {
  reason: CauseReason
  /** e.g. `spec.ports[0].number`, `spec.template.ports.http`. */
  field: string
  /** kube-apiserver's text, e.g. `Required value` or `Invalid value: 70000: ...`. */
  message: string
}

export interface Schema {
  type?: string
  properties?: Record<string, Schema>
  additionalProperties?: Schema | boolean
  items?: Schema
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
  oneOf?: Schema[]
  anyOf?: Schema[]
  allOf?: Schema[]
  not?: Schema
  'x-kubernetes-preserve-unknown-fields'?: boolean
  'x-kubernetes-int-or-string'?: boolean
  'x-kubernetes-list-type'?: 'atomic' | 'set' | 'map'
  'x-kubernetes-list-map-keys'?: string[]
  'x-kubernetes-validations'?: {rule: string; message?: string; fieldPath?: string; reason?: string}[]
}

export interface ValidateOptions {
  /** 'report': an unknown field is an error (meshvm checks its own output); 'prune': it is dropped, as kube-apiserver does. */
  unknownFields?: 'prune' | 'report'
  /**
   * Compiles a CEL rule that is not one of istio-rules.ts; throws when it does not compile. Without it
   * such a rule fails validation, never passes silently.
   */
  compileRule?: (rule: string) => CelRule
  /** false: every rule goes through compileRule, Istio's too (tests check meshvm's output with the CEL library itself). */
  preferTranspiled?: boolean
}

export interface SchemaValidator {
  /** Causes, empty when valid. With unknownFields 'prune', `value` is pruned in place first. */
  validate(value: unknown): FieldCause[]
}

/** How kube-apiserver prints a value inside a cause: strings quoted, numbers bare, objects by type. */
function shown(value: unknown): string {
  if (typeof value === 'string') return JSON.stringify(value)
  if (typeof value === 'number' || typeof value === 'boolean' || typeof value === 'bigint') return String(value)
  if (value === null) return 'null'
  return Array.isArray(value) ? '"array"' : '"object"'
}

function typeName(value: unknown): string {
  if (value === null) return 'null'
  if (Array.isArray(value)) return 'array'
  if (typeof value === 'number') return Number.isInteger(value) ? 'integer' : 'number'
  return typeof value
}

function child(path: string, key: string): string {
  return path ? `${path}.${key}` : key
}

// ---- CEL ------------------------------------------------------------------------------------

/** A rule's program (over the JSON value and its schema), or why it has none (reported as `compilation failed: …`, like kube-apiserver). */
type Program = (value: unknown, schema: Schema) => boolean

function compileRule(rule: string, options: ValidateOptions): Program | Error {
  const predicate = options.preferTranspiled === false ? undefined : ISTIO_RULES.get(rule)
  if (predicate) return (value) => predicate(value)
  if (!options.compileRule) return new Error('meshvm has no compiled form of this rule')
  try {
    const compiled = options.compileRule(rule)
    return (value, schema) => compiled(toCel(value, schema))
  } catch (err) {
    return err instanceof Error ? err : new Error(String(err))
  }
}

/** JSON → CEL values: objects become maps, integers of integer-typed fields become ints. */
function toCel(value: unknown, schema: Schema | undefined): unknown {
  if (Array.isArray(value)) return value.map((v) => toCel(v, schema?.items))
  if (isRecord(value)) {
    return new Map(Object.entries(value).map(([k, v]) => [k, toCel(v, schema?.properties?.[k] ?? (isRecord(schema?.additionalProperties) ? schema.additionalProperties : undefined))]))
  }
  if (typeof value === 'number' && Number.isInteger(value) && (schema?.type === 'integer' || schema?.['x-kubernetes-int-or-string'])) return BigInt(value)
  return value
}

function celCauses(value: unknown, schema: Schema, path: string, options: Context): FieldCause[] {
  const programs = options.programs
  const causes: FieldCause[] = []
  for (const rule of schema['x-kubernetes-validations'] ?? []) {
    let program = programs.get(rule.rule)
    if (!program) programs.set(rule.rule, (program = compileRule(rule.rule, options)))
    let ok: boolean
    let detail = ''
    if (program instanceof Error) {
      ok = false
      detail = `compilation failed: ${program.message.split('\n')[0]}`
    } else {
      try {
        ok = program(value, schema) === true
      } catch (err) {
        // Only evaluation errors are a rule's verdict; anything else is a bug and must surface.
        if (!(err instanceof RuleEvalError)) throw err
        ok = false
        detail = `evaluation failed: ${err.message.split('\n')[0]}`
      }
    }
    if (!ok) {
      const field = rule.fieldPath ? path + rule.fieldPath : path
      const text = detail || rule.message || `failed rule: ${rule.rule}`
      // kube-apiserver shows the value's type, not the value, for CEL failures.
      causes.push({reason: 'FieldValueInvalid', field, message: `Invalid value: "${typeName(value)}": ${text}`})
    }
  }
  return causes
}

// ---- structural validation -------------------------------------------------------------------

function matchesShallow(value: unknown, schema: Schema): boolean {
  // Used for oneOf/anyOf/not branches: kube's CRDs use them for required-field exclusivity.
  if (schema.required && !(isRecord(value) && schema.required.every((k) => k in value))) return false
  if (schema.anyOf && !schema.anyOf.some((s) => matchesShallow(value, s))) return false
  if (schema.allOf && !schema.allOf.every((s) => matchesShallow(value, s))) return false
  if (schema.oneOf && schema.oneOf.filter((s) => matchesShallow(value, s)).length !== 1) return false
  if (schema.not && matchesShallow(value, schema.not)) return false
  if (schema.type && !typeMatches(value, schema)) return false
  return true
}

function typeMatches(value: unknown, schema: Schema): boolean {
  if (schema['x-kubernetes-int-or-string']) return typeof value === 'string' || (typeof value === 'number' && Number.isInteger(value))
  switch (schema.type) {
    case 'object':
      return isRecord(value)
    case 'array':
      return Array.isArray(value)
    case 'string':
      return typeof value === 'string'
    case 'integer':
      return typeof value === 'number' && Number.isInteger(value)
    case 'number':
      return typeof value === 'number'
    case 'boolean':
      return typeof value === 'boolean'
    default:
      return true
  }
}

const INT_RANGES: Record<string, [number, number]> = {int32: [-2147483648, 2147483647], uint32: [0, 4294967295], int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER]}

function walk(value: unknown, schema: Schema, path: string, options: Context, causes: FieldCause[], root: boolean): void {
  const cause = (reason: CauseReason, message: string, field = path) => causes.push({reason, field, message})
  /** kube-apiserver's `Invalid value: VALUE: PATH in body …`. */
  const invalid = (shownValue: string | number, rule: string) => cause('FieldValueInvalid', `Invalid value: ${shownValue}: ${path} in body ${rule}`)
  if (value === null || value === undefined) {
    if (!schema.nullable) cause('FieldValueTypeInvalid', `Invalid value: "null": ${path} in body must be of type ${schema.type ?? 'object'}: "null"`)
    return
  }
  if ((schema.type || schema['x-kubernetes-int-or-string']) && !typeMatches(value, schema)) {
    const expected = schema['x-kubernetes-int-or-string'] ? 'integer,string' : schema.type
    cause('FieldValueTypeInvalid', `Invalid value: "${typeName(value)}": ${path} in body must be of type ${expected}: "${typeName(value)}"`)
    return
  }
  if (schema.enum && !schema.enum.some((e) => e === value)) {
    cause('FieldValueNotSupported', `Unsupported value: ${shown(value)}: supported values: ${schema.enum.map((e) => shown(e)).join(', ')}`)
  }
  if (typeof value === 'number') {
    if (schema.maximum !== undefined && (schema.exclusiveMaximum ? value >= schema.maximum : value > schema.maximum)) {
      invalid(value, `should be less than ${schema.exclusiveMaximum ? '' : 'or equal to '}${schema.maximum}`)
    }
    if (schema.minimum !== undefined && (schema.exclusiveMinimum ? value <= schema.minimum : value < schema.minimum)) {
      invalid(value, `should be greater than ${schema.exclusiveMinimum ? '' : 'or equal to '}${schema.minimum}`)
    }
    const range = schema.format ? INT_RANGES[schema.format] : undefined
    if (range && (value < range[0] || value > range[1])) invalid(value, `must be of type ${schema.format}`)
  }
  if (typeof value === 'string') {
    if (schema.maxLength !== undefined && [...value].length > schema.maxLength) cause('FieldValueTooLong', `Too long: may not be more than ${schema.maxLength} bytes`)
    if (schema.minLength !== undefined && [...value].length < schema.minLength) invalid(shown(value), `should be at least ${schema.minLength} chars long`)
    if (schema.pattern !== undefined && !new RegExp(schema.pattern, 'u').test(value)) invalid(shown(value), `should match '${schema.pattern}'`)
  }
  if (Array.isArray(value)) {
    if (schema.maxItems !== undefined && value.length > schema.maxItems) cause('FieldValueTooMany', `Too many: ${value.length}: must have at most ${schema.maxItems} items`)
    if (schema.minItems !== undefined && value.length < schema.minItems) invalid(value.length, `should have at least ${schema.minItems} items`)
    const listType = schema['x-kubernetes-list-type']
    if (listType === 'set' || listType === 'map') {
      const keys = schema['x-kubernetes-list-map-keys'] ?? []
      const seen = new Set<string>()
      value.forEach((item, i) => {
        const key = listType === 'map' && isRecord(item) ? JSON.stringify(Object.fromEntries(keys.map((k) => [k, item[k]]))) : JSON.stringify(item)
        if (seen.has(key)) cause('FieldValueDuplicate', `Duplicate value: ${key}`, `${path}[${i}]`)
        seen.add(key)
      })
    }
    if (schema.items) for (const [i, item] of value.entries()) walk(item, schema.items, `${path}[${i}]`, options, causes, false)
  }
  if (isRecord(value)) {
    for (const key of schema.required ?? []) {
      if (!(key in value) || value[key] === undefined) cause('FieldValueRequired', 'Required value', child(path, key))
    }
    if (schema.maxProperties !== undefined && Object.keys(value).length > schema.maxProperties) {
      cause('FieldValueTooMany', `Too many: ${Object.keys(value).length}: must have at most ${schema.maxProperties} items`)
    }
    const preserve = schema['x-kubernetes-preserve-unknown-fields'] === true
    for (const key of Object.keys(value)) {
      const prop = schema.properties?.[key]
      if (prop) walk(value[key], prop, child(path, key), options, causes, false)
      else if (isRecord(schema.additionalProperties)) walk(value[key], schema.additionalProperties, child(path, key), options, causes, false)
      else if (root && (key === 'apiVersion' || key === 'kind' || key === 'metadata')) continue
      else if (!preserve && schema.additionalProperties !== true) {
        if (options.unknownFields === 'prune') delete value[key]
        else cause('FieldValueForbidden', `unknown field "${child(path, key)}"`, child(path, key))
      }
    }
  }
  const matching = schema.oneOf?.filter((s) => matchesShallow(value, s)).length
  if (matching !== undefined && matching !== 1) invalid(shown(value), `must validate one and only one schema (oneOf)${matching === 0 ? '. Found none valid' : ''}`)
  if (schema.anyOf && !schema.anyOf.some((s) => matchesShallow(value, s))) invalid(shown(value), 'must validate at least one schema (anyOf)')
  if (schema.not && matchesShallow(value, schema.not)) invalid(shown(value), 'should not validate the given schema')
  // CEL rules run only on values that passed the structural checks, as in kube-apiserver.
  if (schema['x-kubernetes-validations'] && !causes.some((c) => c.field === path || c.field.startsWith(path + '.') || c.field.startsWith(path + '['))) {
    causes.push(...celCauses(value, schema, path, options))
  }
}

/** The options, and the validator's compiled rules (each compiled on first use). */
interface Context extends ValidateOptions {
  programs: Map<string, Program | Error>
}

export function compileSchema(schema: Schema, options: ValidateOptions = {}): SchemaValidator {
  const context: Context = {...options, programs: new Map()}
  return {
    validate(value: unknown): FieldCause[] {
      const causes: FieldCause[] = []
      walk(value, schema, '', context, causes, true)
      return causes
    },
  }
}

/** kube-apiserver's 422 message: `Kind.group "name" is invalid: [cause, cause]` (no brackets for one cause). */
export function invalidMessage(kind: string, group: string, name: string, causes: FieldCause[]): string {
  const parts = causes.map((c) => `${c.field}: ${c.message}`)
  const list = parts.length === 1 ? parts[0] : `[${parts.join(', ')}]`
  return `${kind}${group ? '.' + group : ''} "${name}" is invalid: ${list}`
}
