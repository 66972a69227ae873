/**
 * meshvm's one server-side apply (onboard --apply/--dry-run=server/--diff and create-remote-secret):
 * field manager "meshvm", conflicts with other managers refused unless forced, and an outcome
 * (created, configured, unchanged) decided by comparing the live object with the result, never by
 * resourceVersion alone (a server dry run returns the stored resourceVersion even when the object
 * would change). applyObjects applies generated objects in order with an exact account of what
 * changed: every object ends as created, configured, unchanged or failed (with the API server's
 * causes), and an interrupted run says which objects it did not reach.
 */
import {ExitCode, MeshvmError} from '../errors.js'
import type {KubeClient} from '../kube/client.js'
import {KubeApiError} from '../kube/errors.js'
import {findResourceByKind, resourcePath} from '../kube/resources.js'
import type {Manifest} from '../kube/object.js'
import {resourceName} from '../output/render.js'
import {unifiedDiff} from '../util/diff.js'
import {toYaml} from '../yaml.js'

export const FIELD_MANAGER = 'meshvm'

export type ApplyOutcome = 'created' | 'configured' | 'unchanged' | 'failed' | 'not applied'

export interface ApplyResult {
  object: Manifest
  /** `kind.group/name`, as kubectl prints it. */
  ref: string
  outcome: ApplyOutcome
  error?: MeshvmError
  /** With `diff: true`: unified diff of the live object against the result of the apply. */
  diff?: string
}

export interface ApplyOptions {
  dryRun?: boolean
  diff?: boolean
  /** Take fields other managers own (--force-conflicts); without it such a field is a conflict error. */
  force?: boolean
  signal?: AbortSignal
  onResult?: (result: ApplyResult) => void
  /** Hints for an object whose namespace does not exist (e.g. onboard's --create-namespace). */
  missingNamespaceHints?: (namespace: string) => string[]
}

type Live = {metadata?: Record<string, unknown>; [k: string]: unknown}

function pathFor(obj: Manifest): string {
  const res = findResourceByKind(obj.apiVersion, obj.kind)
  if (!res) throw new MeshvmError(`meshvm cannot apply ${obj.kind} (${obj.apiVersion})`, {exit: ExitCode.USAGE, code: 'UnsupportedKind'})
  return resourcePath(res, {namespace: obj.metadata.namespace, name: obj.metadata.name})
}

/** An object without the server's bookkeeping fields (what a person compares). */
function withoutBookkeeping(obj: Live): Live {
  const {metadata = {}, status: _status, ...rest} = obj
  const {managedFields: _m, resourceVersion: _r, generation: _g, uid: _u, creationTimestamp: _c, selfLink: _s, ...meta} = metadata as Record<string, unknown>
  if (meta.annotations) {
    const {'kubectl.kubernetes.io/last-applied-configuration': _l, ...kept} = meta.annotations as Record<string, string>
    if (Object.keys(kept).length > 0) meta.annotations = kept
    else delete meta.annotations
  }
  return {...rest, metadata: meta}
}

/** What a person compares in a diff: no server bookkeeping fields. */
export function comparable(obj: Live | undefined): string {
  return obj ? toYaml(withoutBookkeeping(obj)) : ''
}

export type WriteOutcome = 'created' | 'configured' | 'unchanged'

/** What an apply did to `live` (undefined: it did not exist), judged from the objects themselves. */
export function outcomeOf(live: Live | undefined, applied: Live | undefined): WriteOutcome {
  if (!live) return 'created'
  // The same comparison as the diff's, as JSON: YAML output of two objects is equal exactly when
  // their JSON is (same keys in the same order, same values), and JSON costs a fraction of it.
  const same = applied !== undefined && JSON.stringify(withoutBookkeeping(live)) === JSON.stringify(withoutBookkeeping(applied))
  return same ? 'unchanged' : 'configured'
}

/**
 * One server-side apply. A 409 with FieldManagerConflict causes becomes an error naming each
 * field and the manager that owns it (Helm, Argo CD, kubectl...), as kubectl reports it; `force`
 * takes the fields over (kubectl's --force-conflicts).
 */
export async function serverSideApply<T = Live>(client: KubeClient, path: string, object: unknown, options: {force?: boolean; dryRun?: boolean} = {}): Promise<T> {
  try {
    return await client.apply<T>(path, object, {fieldManager: FIELD_MANAGER, force: options.force ?? false, dryRun: options.dryRun})
  } catch (err) {
    throw conflictError(err) ?? err
  }
}

function conflictError(err: unknown): KubeApiError | undefined {
  if (!(err instanceof KubeApiError) || err.status !== 409) return undefined
  const causes = (err.kubeStatus?.details?.causes ?? []).filter((c) => c.reason === 'FieldManagerConflict')
  if (causes.length === 0) return undefined
  // Cause message: `conflict with "helm" using v1` (or `... with "kubectl" with subresource "status"`).
  const owned = causes.map((c) => {
    const manager = /conflict with "([^"]*)"/.exec(c.message ?? '')?.[1] ?? 'another manager'
    return `${c.field ?? '<unknown field>'} is managed by "${manager}"`
  })
  const message = `server-side apply conflict${owned.length > 1 ? 's' : ''}: ${owned.join('; ')}`
  return new KubeApiError(message, {
    status: 409,
    reason: 'Conflict',
    kubeStatus: err.kubeStatus,
    exit: ExitCode.REJECTED,
    hints: ['another tool manages these fields with other values; leave them to it, or run again with --force-conflicts to take them over (as kubectl apply --server-side --force-conflicts does)'],
  })
}

/** Reads the live object, applies, and says what changed. */
export async function applyOne(
  client: KubeClient,
  path: string,
  object: unknown,
  options: {force?: boolean; dryRun?: boolean} = {},
): Promise<{outcome: WriteOutcome; live: Live | undefined; applied: Live}> {
  const live = await client.getOptional<Live>(path)
  const applied = await serverSideApply<Live>(client, path, object, options)
  return {outcome: outcomeOf(live, applied), live, applied}
}

/** A live object read before applying: the object (undefined if absent), or why it could not be read. */
type LiveRead = {ok: true; path: string; live: Live | undefined} | {ok: false; error: unknown}

export async function applyObjects(client: KubeClient, objects: Manifest[], options: ApplyOptions = {}): Promise<ApplyResult[]> {
  // The live objects are read first, one after the other on the client's one kept-alive connection:
  // reading them at once would open a connection (a TLS handshake, a certificate check) per object,
  // which costs more than the round trips it saves on a near API server. Only then are the objects
  // applied, one by one, in dependency order. A read never rejects here: its error is kept and
  // reported when its object's turn comes, so results are the same as reading each object just
  // before applying it. Interrupted before a read: no more requests at all.
  const reads: LiveRead[] = []
  for (const object of objects) {
    if (options.signal?.aborted) break
    try {
      const path = pathFor(object)
      reads.push({ok: true, path, live: await client.getOptional<Live>(path)})
    } catch (error) {
      // The objects after a failed one are not applied: reading them (retries and all) is no use.
      reads.push({ok: false, error})
      break
    }
  }
  const results: ApplyResult[] = []
  const report = (result: ApplyResult) => {
    results.push(result)
    options.onResult?.(result)
  }
  let failed = false
  for (const [i, object] of objects.entries()) {
    const ref = resourceName(object)
    // Objects come in dependency order (Namespace, ServiceAccount, WorkloadGroup, Service), so nothing
    // after a failure is attempted; interrupted, the same: the rest are reported as not applied.
    if (failed || options.signal?.aborted) {
      report({object, ref, outcome: 'not applied'})
      continue
    }
    try {
      const read = reads[i]!
      if (!read.ok) throw read.error
      const {path, live} = read
      const applied = await serverSideApply<Live>(client, path, object, {force: options.force, dryRun: options.dryRun})
      const diff = options.diff ? {diff: unifiedDiff(comparable(live), comparable(applied), {from: `live/${ref}`, to: `applied/${ref}`})} : {}
      report({object, ref, outcome: outcomeOf(live, applied), ...diff})
    } catch (thrown) {
      if (!(thrown instanceof MeshvmError)) throw thrown
      const missing = options.missingNamespaceHints && missingNamespace(thrown)
      const err = missing ? new MeshvmError(thrown.message, {exit: thrown.exit, code: thrown.code, hints: [...options.missingNamespaceHints!(missing), ...thrown.hints], cause: thrown}) : thrown
      report({object, ref, outcome: 'failed', error: err})
      failed = true
    }
  }
  return results
}

/** The namespace a 404 says does not exist (kube-apiserver: `namespaces "apps" not found`, details kind namespaces). */
function missingNamespace(err: MeshvmError): string | undefined {
  if (!(err instanceof KubeApiError) || err.status !== 404) return undefined
  const details = err.kubeStatus?.details
  if (details?.kind === 'namespaces' && details.name) return details.name
  return /^namespaces "([^"]+)" not found/.exec(err.message)?.[1]
}

/** One line per object, as kubectl prints: `workloadgroup.networking.istio.io/web created (server dry run)`. */
export function describeResult(result: ApplyResult, dryRun: boolean): string {
  const suffix = dryRun && result.outcome !== 'failed' && result.outcome !== 'not applied' ? ' (server dry run)' : ''
  if (result.outcome === 'failed') return `${result.ref} failed: ${result.error?.message ?? 'unknown error'}`
  return `${result.ref} ${result.outcome}${suffix}`
}

/** The error to exit with after an apply: none, partial (some applied) or the first failure's. */
export function applyFailure(results: ApplyResult[], interrupted: boolean): MeshvmError | undefined {
  const failed = results.filter((r) => r.outcome === 'failed')
  const notApplied = results.filter((r) => r.outcome === 'not applied')
  const done = results.filter((r) => r.outcome !== 'failed' && r.outcome !== 'not applied')
  if (failed.length === 0 && notApplied.length === 0) return undefined
  const summary =
    `${done.length} of ${results.length} objects applied` +
    (failed.length ? `; failed: ${failed.map((r) => r.ref).join(', ')}` : '') +
    (notApplied.length ? `; not applied: ${notApplied.map((r) => r.ref).join(', ')}` : '')
  if (interrupted) return new MeshvmError(`interrupted: ${summary}`, {exit: ExitCode.INTERRUPTED, code: 'Interrupted'})
  const first = failed[0]?.error
  if (done.length > 0)
    return new MeshvmError(summary, {exit: ExitCode.PARTIAL, code: 'PartialApply', hints: [...(first?.hints ?? []), 'fix the cause and run the same command again: applying is idempotent']})
  return new MeshvmError(summary, {exit: first?.exit ?? ExitCode.FAILURE, code: first?.code ?? 'ApplyFailed', hints: first?.hints ?? []})
}
