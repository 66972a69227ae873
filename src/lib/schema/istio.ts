/**
 * meshvm's own objects checked against the official Istio CRD schemas (served v1 version, with
 * their CEL rules) before they are printed, written or applied — so nothing meshvm produces is
 * rejected later by kube-apiserver.
 */
import {UsageError} from '../errors.js'
import schemas from './istio-networking.schemas.json' with {type: 'json'}
import {compileSchema, invalidMessage, type FieldCause, type Schema, type SchemaValidator} from './validate.js'

interface Entry {
  group: string
  version: string
  plural: string
  schema: Schema
}

const table = schemas as unknown as Record<string, Entry>
/** Each kind's validator, compiled on first use. */
const validators = new Map<string, SchemaValidator>()

/** Causes for an Istio networking object; undefined for kinds this module does not know. */
export function validateIstioObject(obj: {apiVersion?: string; kind?: string}): FieldCause[] | undefined {
  const entry = obj.kind ? table[obj.kind] : undefined
  if (!entry || obj.apiVersion !== `${entry.group}/${entry.version}`) return undefined
  let validator = validators.get(obj.kind!)
  if (!validator) validators.set(obj.kind!, (validator = compileSchema(entry.schema, {unknownFields: 'report'})))
  return validator.validate(obj)
}

/** Throws kube-apiserver's 422 message as a usage error when any object is invalid. */
export function assertValidIstioObjects(objects: {apiVersion?: string; kind?: string; metadata?: {name?: string}}[], source: string): void {
  for (const obj of objects) {
    const causes = validateIstioObject(obj)
    if (causes && causes.length > 0) {
      const entry = table[obj.kind as string]!
      throw new UsageError(`${source}: ${invalidMessage(obj.kind as string, entry.group, obj.metadata?.name ?? '', causes)}`)
    }
  }
}
