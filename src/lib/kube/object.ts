/**
 * The one Kubernetes object kernel: the shape of an object as meshvm reads it (KubeObject, ObjectMeta,
 * OwnerReference, Condition) and one reader each for the parts every feature looks at: conditions,
 * owner references and labels. Readers take `unknown`: objects come from clusters and hand-written
 * files, so every field is checked before use. Pure; no client here.
 */
import {isRecord, type JsonRecord} from '../util/records.js'

export interface OwnerReference {
  apiVersion?: string
  kind?: string
  name?: string
  uid?: string
  controller?: boolean
  blockOwnerDeletion?: boolean
}

export interface ObjectMeta {
  name?: string
  namespace?: string
  uid?: string
  resourceVersion?: string
  generation?: number
  creationTimestamp?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
  ownerReferences?: OwnerReference[]
}

/** A Kubernetes object as read from a cluster or a file: every field optional, the rest unknown. */
export interface KubeObject {
  apiVersion?: string
  kind?: string
  metadata?: ObjectMeta
  [key: string]: unknown
}

/** A Kubernetes-style condition. `status` may be a YAML boolean when read from a hand-written file. */
export interface Condition {
  type?: string
  status?: string | boolean
  reason?: string
  message?: string
  lastTransitionTime?: string
  lastProbeTime?: string
}

function metadataOf(obj: unknown): JsonRecord | undefined {
  const m = isRecord(obj) ? obj.metadata : undefined
  return isRecord(m) ? m : undefined
}

/** `status.conditions`, the entries that are objects. */
export function conditionsOf(obj: unknown): Condition[] {
  const status = isRecord(obj) ? obj.status : undefined
  const list = isRecord(status) ? status.conditions : undefined
  return Array.isArray(list) ? (list.filter(isRecord) as Condition[]) : []
}

/** The condition of `type` (the first, as kubectl's describe shows it), if any. */
export function conditionOf(obj: unknown, type: string): Condition | undefined {
  return conditionsOf(obj).find((c) => c.type === type)
}

/** `status` of a condition as Kubernetes spells it: True, False or Unknown (booleans from files too). */
export function conditionStatus(c: Condition | undefined): 'True' | 'False' | 'Unknown' {
  const s = typeof c?.status === 'boolean' ? String(c.status) : typeof c?.status === 'string' ? c.status.toLowerCase() : ''
  return s === 'true' ? 'True' : s === 'false' ? 'False' : 'Unknown'
}

/** `metadata.ownerReferences`, the entries that are objects. */
export function ownerReferencesOf(obj: unknown): OwnerReference[] {
  const refs = metadataOf(obj)?.ownerReferences
  // A reference whose kind or name is not a string is malformed (the API server would not have stored
  // it): it names no owner.
  return Array.isArray(refs) ? refs.filter((r): r is OwnerReference => isRecord(r) && typeof r.kind === 'string' && typeof r.name === 'string') : []
}

/** The owner of `kind`: the controller among them, else the first (as the garbage collector picks the controller). */
export function ownerOfKind(obj: unknown, kind: string): OwnerReference | undefined {
  const matching = ownerReferencesOf(obj).filter((r) => r.kind === kind)
  return matching.find((r) => r.controller === true) ?? matching[0]
}

/** Whether an owner reference names `uid`. */
export function isOwnedBy(obj: unknown, uid: string | undefined): boolean {
  return uid !== undefined && ownerReferencesOf(obj).some((r) => r.uid === uid)
}

/** A string map as Kubernetes has it; scalars of a hand-written YAML file (`version: 1`) are read as their text. */
function stringMap(v: unknown): Record<string, string> {
  const out: Record<string, string> = {}
  // for…in, not Object.entries: this runs for the labels of every object of a large list.
  if (isRecord(v)) {
    for (const k in v) {
      if (!Object.hasOwn(v, k)) continue
      const x = v[k]
      if (typeof x === 'string') out[k] = x
      else if (typeof x === 'number' || typeof x === 'boolean' || typeof x === 'bigint') out[k] = String(x)
    }
  }
  return out
}

/** `metadata.labels` ({} when there are none). */
export function labelsOf(obj: unknown): Record<string, string> {
  return stringMap(metadataOf(obj)?.labels)
}

/** `metadata.annotations` ({} when there are none). */
export function annotationsOf(obj: unknown): Record<string, string> {
  return stringMap(metadataOf(obj)?.annotations)
}

/** An object meshvm writes (generated, then printed or applied): apiVersion, kind and name always set. */
export interface Manifest extends KubeObject {
  apiVersion: string
  kind: string
  metadata: ObjectMeta & {name: string}
}
