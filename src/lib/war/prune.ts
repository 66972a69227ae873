/**
 * `meshvm war prune`: registrations whose agent has been disconnected for longer than a grace period
 * (default 5m, TSB's own default, docs.tetrate.io): WARs whose
 * AgentConnected condition turned False that long ago, and auto-registered WorkloadEntries whose
 * `istio.io/disconnectedAt` is that old.
 *
 * Listing pages through the API and keeps only the candidates. Deleting re-reads each candidate
 * first and deletes it only if it is still disconnected for that long, with UID and
 * resourceVersion preconditions, so an agent that reconnects meanwhile keeps its registration.
 */
import {ExitCode, MeshvmError} from '../errors.js'
import {KubeApiError} from '../kube/errors.js'
import type {KubeClient} from '../kube/client.js'
import {age} from '../output/age.js'
import type {Column} from '../output/table.js'
import {deleteRegistration, getObject, listRegistrations, registrationResource, toRegistration, type Listed, type ListQuery, type ListState} from './fetch.js'
import {isPrunable, type Registration} from './model.js'

export interface PruneQuery extends ListQuery {
  gracePeriodMs: number
}

/** Every registration disconnected for longer than the grace period, judged at `now`. */
export async function findPrunable(client: KubeClient, q: PruneQuery, state: ListState, now: Date): Promise<Listed[]> {
  const out: Listed[] = []
  for await (const page of listRegistrations(client, q, state)) {
    for (const l of page) if (isPrunable(l.registration, q.gracePeriodMs, now)) out.push(l)
  }
  return out
}

export type PruneResult = 'deleted' | 'reconnected' | 'gone' | 'failed'

export interface PruneOutcome {
  listed: Listed
  result: PruneResult
  error?: MeshvmError
}

/** Deletes the candidates one by one; a failure is recorded and the rest still run. */
export async function prune(client: KubeClient, candidates: Listed[], gracePeriodMs: number, onOutcome: (outcome: PruneOutcome) => void): Promise<PruneOutcome[]> {
  const outcomes: PruneOutcome[] = []
  for (const listed of candidates) {
    const res = registrationResource(listed.source)
    const namespace = listed.object.metadata?.namespace
    let outcome: PruneOutcome
    try {
      const fresh = await getObject(client, res, namespace, listed.object.metadata?.name)
      if (!fresh || fresh.metadata?.uid !== listed.object.metadata?.uid) outcome = {listed, result: 'gone'}
      else if (!isPrunable(toRegistration(listed.source, fresh), gracePeriodMs, new Date())) outcome = {listed, result: 'reconnected'}
      else outcome = {listed, result: (await deleteRegistration(client, listed.source, fresh, {exact: true})) ? 'deleted' : 'gone'}
    } catch (err) {
      // 409 on the resourceVersion precondition: the registration changed after it was re-read
      // (its agent reconnected and the status moved), so it is kept, not reported as a failure.
      if (err instanceof KubeApiError && err.status === 409) outcome = {listed, result: 'reconnected'}
      else outcome = {listed, result: 'failed', error: err instanceof MeshvmError ? err : new MeshvmError((err as Error).message, {exit: ExitCode.FAILURE})}
    }
    outcomes.push(outcome)
    onOutcome(outcome)
  }
  return outcomes
}

/** `[NAMESPACE] NAME SOURCE GROUP DISCONNECTED AGE`; wide adds IDENTITY and ADDRESSES. */
export function pruneColumns(allNamespaces: boolean, now: Date): Column<Registration>[] {
  const cols: Column<Registration>[] = []
  if (allNamespaces) cols.push({header: 'NAMESPACE', value: (r) => r.namespace})
  cols.push(
    {header: 'NAME', value: (r) => r.name},
    {header: 'SOURCE', value: (r) => r.source},
    {header: 'GROUP', value: (r) => r.group || '<none>'},
    {header: 'DISCONNECTED', value: (r) => (r.disconnectedAt ? age(r.disconnectedAt, now) : '<unknown>')},
    {header: 'AGE', value: (r) => age(r.creationTimestamp, now)},
    {header: 'IDENTITY', wide: true, value: (r) => r.identity || '<none>'},
    {header: 'ADDRESSES', wide: true, value: (r) => r.addresses.join(',') || '<none>'},
  )
  return cols
}
