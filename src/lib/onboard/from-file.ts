/**
 * `-f FILE`: an existing WorkloadGroup manifest instead of flags. The file is the source of truth
 * for the group; the Service or ServiceEntry is derived from it.
 *
 * Hostile input ends in a usage error: at most MAX_INPUT_BYTES are read (so /dev/zero or a huge
 * file stops there), YAML tags that are not JSON data (!!binary, !!set, …) and documents nested
 * deeper than 1000 levels are refused, and metadata is validated as the API server would.
 */
import {closeSync, openSync, readSync} from 'node:fs'
import {UsageError} from '../errors.js'
import {parseYamlStream} from '../yaml.js'
import {annotationsSize, labelValue, plainDataProblem, qualifiedName} from '../validation/kube.js'
import type {WorkloadGroupLike} from '../bundle/generate.js'
import {isRecord} from '../util/records.js'

/** The largest -f file meshvm reads (documented): 4 MiB, far more than any WorkloadGroup. */
export const MAX_INPUT_BYTES = 4 * 1024 * 1024

/** Reads at most `limit` bytes of a file (or stdin for "-"); more is an error, not a hang. */
function readBounded(path: string, limit = MAX_INPUT_BYTES): string {
  const fd = path === '-' ? 0 : openSync(path, 'r')
  try {
    const chunks: Buffer[] = []
    let total = 0
    for (;;) {
      const buf = Buffer.allocUnsafe(64 * 1024)
      let n: number
      try {
        n = readSync(fd, buf, 0, buf.length, null)
      } catch (err) {
        // A non-blocking stdin with nothing yet: wait a little and read again.
        if ((err as NodeJS.ErrnoException).code === 'EAGAIN') {
          Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 10)
          continue
        }
        throw err
      }
      if (n === 0) break
      total += n
      if (total > limit) throw new UsageError(`-f ${JSON.stringify(path)}: larger than ${limit / 1024 / 1024} MiB; a WorkloadGroup manifest is a few KiB`)
      chunks.push(buf.subarray(0, n))
    }
    return Buffer.concat(chunks).toString('utf8')
  } finally {
    if (fd !== 0) closeSync(fd)
  }
}

function checkMetadata(where: string, field: string, metadata: unknown): void {
  if (metadata === undefined || metadata === null) return
  if (!isRecord(metadata)) throw new UsageError(`${where}: ${field} must be a mapping`)
  for (const name of ['labels', 'annotations'] as const) {
    const map = metadata[name]
    if (map === undefined || map === null) continue
    if (!isRecord(map)) throw new UsageError(`${where}: ${field}.${name} must be a mapping of strings`)
    for (const [key, value] of Object.entries(map)) {
      const keyProblem = qualifiedName(key)
      if (keyProblem) throw new UsageError(`${where}: ${field}.${name} ${JSON.stringify(key)}: ${keyProblem}`)
      if (typeof value !== 'string') throw new UsageError(`${where}: ${field}.${name} ${JSON.stringify(key)}: value must be a string (quote it: "${String(value)}")`)
      const valueProblem = name === 'labels' ? labelValue(value) : undefined
      if (valueProblem) throw new UsageError(`${where}: ${field}.${name} ${JSON.stringify(key)}: ${valueProblem}`)
    }
    if (name === 'annotations') {
      const size = annotationsSize(map as Record<string, string>)
      if (size) throw new UsageError(`${where}: ${field}.annotations: ${size}`)
    }
  }
}

export function readWorkloadGroupFile(path: string, namespaceFlag: string | undefined): WorkloadGroupLike {
  let text: string
  try {
    text = readBounded(path)
  } catch (err) {
    if (err instanceof UsageError) throw err
    const code = (err as NodeJS.ErrnoException).code
    throw new UsageError(`-f ${JSON.stringify(path)}: ${code === 'ENOENT' ? 'file not found' : code === 'EISDIR' ? 'is a directory' : code === 'EACCES' ? 'permission denied' : 'cannot be read'}`)
  }
  let docs: ReturnType<typeof parseYamlStream>
  try {
    docs = parseYamlStream(text, path)
  } catch (err) {
    // The YAML parser recurses: a document nested tens of thousands deep overflows its stack.
    if (err instanceof RangeError) throw new UsageError(`-f ${JSON.stringify(path)}: the document is nested too deeply`)
    throw err
  }
  const groups = docs.filter((d) => (d.value as {kind?: string})?.kind === 'WorkloadGroup')
  if (groups.length !== 1) {
    throw new UsageError(
      `-f ${JSON.stringify(path)}: expected exactly one WorkloadGroup, found ${groups.length}${docs.length > groups.length ? ` (and ${docs.length - groups.length} other document(s))` : ''}`,
    )
  }
  const wg = groups[0]!.value as {apiVersion?: unknown; metadata?: {name?: unknown; namespace?: unknown; annotations?: unknown}; spec?: unknown}
  const where = `${path}${docs.length > 1 ? ` (document ${groups[0]!.index})` : ''}`
  const notData = plainDataProblem(wg)
  if (notData) throw new UsageError(`${where}: ${notData.path || 'the document'} ${notData.problem}`)
  checkMetadata(where, 'metadata', wg.metadata)
  checkMetadata(where, 'spec.metadata', (wg.spec as {metadata?: unknown} | undefined)?.metadata)
  if (wg.apiVersion !== undefined && !/^networking\.istio\.io\/v(1|1beta1|1alpha3)$/.test(String(wg.apiVersion))) {
    throw new UsageError(`${where}: apiVersion ${JSON.stringify(wg.apiVersion)} is not a WorkloadGroup version (expected networking.istio.io/v1)`)
  }
  if (typeof wg.metadata?.name !== 'string' || wg.metadata.name === '') throw new UsageError(`${where}: metadata.name is required`)
  const namespace = typeof wg.metadata.namespace === 'string' && wg.metadata.namespace !== '' ? wg.metadata.namespace : namespaceFlag
  if (!namespace) throw new UsageError(`${where}: metadata.namespace is not set; pass -n NAMESPACE`)
  if (namespaceFlag && namespace !== namespaceFlag) {
    throw new UsageError(`${where}: metadata.namespace ${JSON.stringify(namespace)} differs from -n ${JSON.stringify(namespaceFlag)}`)
  }
  if (wg.spec !== undefined && !isRecord(wg.spec)) throw new UsageError(`${where}: spec must be a mapping`)
  const {status: _status, ...rest} = wg as {status?: unknown}
  return {
    ...(rest as object),
    apiVersion: 'networking.istio.io/v1',
    kind: 'WorkloadGroup',
    metadata: {...withoutServerFields(wg.metadata as Record<string, unknown>), name: wg.metadata.name, namespace},
    spec: (wg.spec ?? {}) as WorkloadGroupLike['spec'],
  } as WorkloadGroupLike
}

/**
 * What the API server and meshvm itself set on a live object (`kubectl get wg NAME -o yaml`), which must
 * not be applied back: uid, resourceVersion and the like would make the apply a conflict or a no-op
 * check, status is not the user's, and meshvm's own annotations (e.g. rollout.meshvm.io/awaiting)
 * belong to the run that wrote them. kubectl's last-applied-configuration goes too.
 */
const SERVER_FIELDS = ['uid', 'resourceVersion', 'generation', 'managedFields', 'creationTimestamp', 'deletionTimestamp', 'deletionGracePeriodSeconds', 'selfLink']

function withoutServerFields(metadata: Record<string, unknown>): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  for (const [k, v] of Object.entries(metadata)) if (!SERVER_FIELDS.includes(k)) out[k] = v
  const annotations = metadata.annotations
  if (isRecord(annotations)) {
    const kept = Object.fromEntries(Object.entries(annotations).filter(([k]) => !/(^|\.)meshvm\.io\//.test(k) && k !== 'kubectl.kubernetes.io/last-applied-configuration'))
    if (Object.keys(kept).length > 0) out.annotations = kept
    else delete out.annotations
  }
  return out
}
