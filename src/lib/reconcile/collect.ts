/**
 * What `meshvm war reconcile` reads from one context, through the readers proxy-status and the war
 * commands already use: the running istiods and their /debug/syncz (proxy-status/fetch.ts: over
 * port-forward, else xDS, through src/lib/istiod/reader.ts), the
 * WorkloadEntries and WARs, the WorkloadGroups (war/fetch.ts), and the pods of the namespaces
 * proxies are in. And the --fix deletes, each guarded by uid and resourceVersion preconditions.
 */
import {ExitCode, MeshvmError} from '../errors.js'
import type {KubeClient} from '../kube/client.js'
import {IstiodPool} from '../istiod/reader.js'
import {findIstiods, listPods, listRegistrations, noIstiodError, readSyncz} from '../proxy-status/fetch.js'
import type {ProxySync} from '../proxy-status/status.js'
import {splitProxyId} from '../proxy-status/vms.js'
import {deleteRegistration, fetchGroups} from '../war/fetch.js'
import {readHboneEvidence, type HboneEvidence} from '../war/hbone.js'
import type {WorkloadGroup} from '../war/model.js'
import type {KubeObject} from '../kube/object.js'
import {resourcePath, Resources} from '../kube/resources.js'
import type {ContextSnapshot, SafeFix} from './model.js'

export async function collectSnapshot(
  client: KubeClient,
  context: string,
  o: {namespace?: string; istioNamespace: string; revision?: string; timeoutMs: number},
): Promise<{snapshot: ContextSnapshot; warnings: string[]}> {
  const warnings: string[] = []
  const listing = listRegistrations(client, {namespace: o.namespace})
  listing.catch(() => undefined)
  const groupsP = fetchGroups(client, o.namespace)
  groupsP.catch(() => undefined)
  const {selected, others} = await findIstiods(client, {istioNamespace: o.istioNamespace, revision: o.revision})
  if (selected.length === 0) throw await noIstiodError(client, {istioNamespace: o.istioNamespace, revision: o.revision, others})
  const pool = new IstiodPool(client, o.istioNamespace)
  let answers: Awaited<ReturnType<typeof readSyncz>>[]
  try {
    answers = await Promise.all(selected.map((istiod) => readSyncz(pool, istiod, {timeoutMs: o.timeoutMs, namespace: o.namespace})))
  } finally {
    pool.close()
  }
  const syncs: ProxySync[] = []
  const istiods: string[] = []
  const unreadIstiods: {name: string; error: string}[] = []
  answers.forEach((a, i) => {
    if (a.ok) {
      syncs.push(...a.syncs)
      istiods.push(selected[i]!.name)
    } else {
      unreadIstiods.push({name: a.failure.istiod.name, error: a.failure.error.message})
      warnings.push(`${a.failure.error.message}: the VMs it holds are not judged`)
    }
  })
  const inScope = o.namespace === undefined ? syncs : syncs.filter((s) => (s.namespace ?? splitProxyId(s.proxyId).namespace) === o.namespace)
  const registrations = await listing
  warnings.push(...registrations.warnings)
  let groups: WorkloadGroup[] = []
  try {
    groups = [...(await groupsP).values()]
  } catch (err) {
    if (!(err instanceof MeshvmError)) throw err
    throw new MeshvmError(`context ${context}: ${err.message}`, {exit: err.exit, code: err.code, hints: err.hints})
  }
  let hbone: HboneEvidence | undefined
  try {
    hbone = await readHboneEvidence(client, o.istioNamespace)
  } catch (err) {
    if (!(err instanceof MeshvmError)) throw err
    warnings.push(`${err.message}: entries missing the HBONE tunnel label are not looked for`)
  }
  const namespaces = [...new Set(inScope.map((s) => splitProxyId(s.proxyId).namespace).filter((n) => n !== ''))]
  const pods = namespaces.length > 0 ? await listPods(client, namespaces) : {labels: new Map(), listed: new Set<string>(), warnings: []}
  warnings.push(...pods.warnings.map((w) => `${w}: proxies there are not judged`))
  return {
    snapshot: {
      context,
      workloadEntries: registrations.workloadEntries,
      wars: registrations.wars,
      groups,
      istiods,
      unreadIstiods,
      syncs: inScope,
      pods: {labels: pods.labels, listed: pods.listed},
      ...(hbone ? {hbone} : {}),
    },
    warnings,
  }
}

export type FixResult = 'deleted' | 'would-delete' | 'changed' | 'gone' | 'failed'

export interface FixOutcome extends SafeFix {
  result: FixResult
  error?: string
}

/**
 * Applies one safe fix: re-reads the entry, and deletes it only when its uid and resourceVersion are
 * still the ones judged (an entry istiod touched meanwhile — its VM reconnected — is left alone);
 * the DELETE carries the same preconditions, so a change between the read and the delete wins too.
 * `client`: only looks it up and reports what would happen; `server`: the API server checks the delete (dryRun=All).
 */
export async function applyFix(client: KubeClient, fix: SafeFix, dryRun: 'none' | 'client' | 'server'): Promise<FixOutcome> {
  try {
    const live = await client.getOptional<KubeObject>(resourcePath(Resources.workloadEntries, {namespace: fix.namespace, name: fix.name}))
    if (!live || live.metadata?.uid !== fix.uid) return {...fix, result: 'gone'}
    if (live.metadata?.resourceVersion !== fix.resourceVersion) return {...fix, result: 'changed'}
    if (dryRun === 'client') return {...fix, result: 'would-delete'}
    const deleted = await deleteRegistration(client, 'workloadentry', live, {exact: true, dryRun: dryRun === 'server'})
    return {...fix, result: !deleted ? 'gone' : dryRun === 'server' ? 'would-delete' : 'deleted'}
  } catch (err) {
    if (!(err instanceof MeshvmError)) throw err
    // 409: a precondition failed — the entry changed after the read.
    if (err.exit === ExitCode.REJECTED && /precondition|conflict/i.test(err.message)) return {...fix, result: 'changed'}
    return {...fix, result: 'failed', error: err.message}
  }
}
