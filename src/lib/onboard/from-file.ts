/**
 * `-f FILE`: an existing WorkloadGroup manifest instead of flags. The file is the source of truth
 * for the group; the Service or ServiceEntry is derived from it.
 */
import {readFileSync} from 'node:fs'
import {UsageError} from '../errors.js'
import {parseYamlStream} from '../yaml.js'
import type {WorkloadGroupLike} from '../bundle/generate.js'

export function readWorkloadGroupFile(path: string, namespaceFlag: string | undefined): WorkloadGroupLike {
  let text: string
  try {
    text = path === '-' ? readFileSync(0, 'utf8') : readFileSync(path, 'utf8')
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    throw new UsageError(`-f ${JSON.stringify(path)}: ${code === 'ENOENT' ? 'file not found' : code === 'EISDIR' ? 'is a directory' : 'cannot be read'}`)
  }
  const docs = parseYamlStream(text, path)
  const groups = docs.filter((d) => (d.value as {kind?: string})?.kind === 'WorkloadGroup')
  if (groups.length !== 1) {
    throw new UsageError(`-f ${JSON.stringify(path)}: expected exactly one WorkloadGroup, found ${groups.length}${docs.length > groups.length ? ` (and ${docs.length - groups.length} other document(s))` : ''}`)
  }
  const wg = groups[0]!.value as {apiVersion?: unknown; metadata?: {name?: unknown; namespace?: unknown; annotations?: unknown}; spec?: unknown}
  const where = `${path}${docs.length > 1 ? ` (document ${groups[0]!.index})` : ''}`
  if (wg.apiVersion !== undefined && !/^networking\.istio\.io\/v(1|1beta1|1alpha3)$/.test(String(wg.apiVersion))) {
    throw new UsageError(`${where}: apiVersion ${JSON.stringify(wg.apiVersion)} is not a WorkloadGroup version (expected networking.istio.io/v1)`)
  }
  if (typeof wg.metadata?.name !== 'string' || wg.metadata.name === '') throw new UsageError(`${where}: metadata.name is required`)
  const namespace = typeof wg.metadata.namespace === 'string' && wg.metadata.namespace !== '' ? wg.metadata.namespace : namespaceFlag
  if (!namespace) throw new UsageError(`${where}: metadata.namespace is not set; pass -n NAMESPACE`)
  if (namespaceFlag && namespace !== namespaceFlag) {
    throw new UsageError(`${where}: metadata.namespace ${JSON.stringify(namespace)} differs from -n ${JSON.stringify(namespaceFlag)}`)
  }
  if (wg.spec !== undefined && (typeof wg.spec !== 'object' || wg.spec === null || Array.isArray(wg.spec))) throw new UsageError(`${where}: spec must be a mapping`)
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
  if (typeof annotations === 'object' && annotations !== null && !Array.isArray(annotations)) {
    const kept = Object.fromEntries(
      Object.entries(annotations).filter(([k]) => !/(^|\.)meshvm\.io\//.test(k) && k !== 'kubectl.kubernetes.io/last-applied-configuration'),
    )
    if (Object.keys(kept).length > 0) out.annotations = kept
    else delete out.annotations
  }
  return out
}
