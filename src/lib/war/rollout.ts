/**
 * `meshvm war rollout GROUP`: re-onboard the workloads of a WorkloadGroup after the group changed,
 * the way a Deployment rolls out, because TSB applies a group change only to workloads that onboard
 * after it (a WAR keeps a snapshot of the group taken at onboarding: TSB's onboarding docs,
 * docs.tetrate.io, WorkloadAutoRegistration lifecycle).
 *
 * 1. The plan is computed from the cluster on every run: the group's WARs whose snapshot differs
 *    from the current group spec (or, for WARs that record no snapshot, whose WorkloadEntry differs
 *    from what the group would produce), in name order. Stale WARs whose agent is not connected are
 *    skipped: their agent cannot re-onboard now, and deleting them could not be verified.
 * 2. Up to `maxUnavailable` registrations are deleted at a time (UID precondition); each is then
 *    awaited until a new WAR of the same name (TSB names it `<group>-<identity>`, so it is stable)
 *    exists with a new UID, AgentConnected=True, a snapshot equal to the current group spec and,
 *    when the group has a probe, a WorkloadEntry whose Healthy condition is True. A slot frees as
 *    soon as its workload is back, and the next one starts.
 * 3. The first failure stops the rollout: nothing new is started, workloads already in flight are
 *    still awaited, and the report says what happened to each registration.
 *
 * Resuming. A registration that was deleted and whose agent has not re-registered it is invisible
 * in the cluster, so the plan alone cannot resume a rollout that stopped (Ctrl-C, crash, time-out)
 * while one was in flight. The rollout therefore remembers what it deleted: before each delete it
 * adds the name to the annotation `rollout.meshvm.io/awaiting` on the WorkloadGroup (a sorted JSON
 * list of names, written with a JSON merge patch; the annotation is removed when the list empties),
 * and it takes the name out again only when the verdict is `re-onboarded`. Every run (`--dry-run`
 * too, which only reads) starts from that list:
 * - an awaited name that is absent, or present from the current spec but not yet ready (agent not
 *   connected, or not healthy when the group has a probe), is awaited first, without a delete, and
 *   takes one of the `maxUnavailable` slots;
 * - one that is present and ready is dropped from the list and counted up to date;
 * - one that is present and still stale goes through the plan like any stale registration.
 * The list is written before a delete, so a missing permission to patch workloadgroups fails
 * before anything is deleted. A name whose VM is gone for good stays awaited (every re-run times
 * out on it) until someone removes it from the annotation.
 *
 * Failures and exit codes: a workload that does not come back connected within `timeoutMs` → 9
 * (TIMEOUT); one that comes back but stays unhealthy or comes back from an old snapshot → 8
 * (CHECK_FAILED); an API error → that error's code; Ctrl-C → 130.
 */
import {ExitCode, MeshvmError, type ExitCodeValue} from '../errors.js'
import {humanDuration} from '../output/age.js'
import {PATCH, type KubeClient} from '../kube/client.js'
import {resourcePath} from '../kube/resources.js'
import {
  CRD_MISSING,
  deleteRegistration,
  groupNameOf,
  isListedWorkloadEntry,
  ownedWorkloadEntry,
  ownerOfKind,
  WAR,
  warApiServed,
  WE,
  WG,
  withPermission,
  type KubeObject,
} from './fetch.js'
import {registrationFromWar, registrationFromWorkloadEntry, staleDifference, warSnapshot, workloadEntryDifference, type ConnectedStatus, type WorkloadGroup} from './model.js'

export interface RolloutOptions {
  namespace: string
  group: string
  maxUnavailable: number
  timeoutMs: number
  pollIntervalMs: number
  dryRun: boolean
  chunkSize: number
  signal?: AbortSignal
  /** Progress lines (stderr). */
  progress: (line: string) => void
  warn: (line: string) => void
}

export type ItemResult = 'planned' | 're-onboarded' | 'timed out' | 'unhealthy' | 'stale' | 'failed' | 'interrupted' | 'not started' | 'skipped'

export interface RolloutItem {
  name: string
  agentConnected: ConnectedStatus
  result: ItemResult
  /** Deleted by an earlier run and not back (ready) yet: awaited without a delete. */
  deletedEarlier?: true
  /** Position in the plan, 1-based; undefined for skipped registrations. */
  step?: number
  detail?: string
  /** Seconds from deletion to the verdict. */
  seconds?: number
}

export interface RolloutReport {
  namespace: string
  group: string
  generation?: number
  /** Registrations of the group. */
  registrations: number
  upToDate: number
  stale: number
  /** Registrations deleted by an earlier run that are not back yet (awaited first, not deleted again). */
  awaited: number
  maxUnavailable: number
  status: 'planned' | 'nothing to do' | 'complete' | 'failed' | 'interrupted'
  items: RolloutItem[]
  failure?: {exit: ExitCodeValue; message: string; hints: string[]}
}

interface Candidate {
  name: string
  uid?: string
  resourceVersion?: string
  agentConnected: ConnectedStatus
}

/** `0.4s`, `12.3s` below a minute, then kubectl's human durations. */
export function elapsedText(ms: number): string {
  return ms < 60_000 ? `${(Math.round(ms / 100) / 10).toFixed(1)}s` : humanDuration(ms)
}

/** On the WorkloadGroup: the registrations a rollout deleted that are not back yet (a sorted JSON list of names). */
export const AWAITING_ANNOTATION = 'rollout.meshvm.io/awaiting'

/**
 * The group's awaiting list, as the cluster holds it and as this run changes it. `save` writes it
 * back (JSON merge patch; null removes the annotation) when it differs from what was last written.
 */
class Awaiting {
  readonly names = new Set<string>()
  private written: string

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly group: string,
    raw: string | undefined,
    warn: (line: string) => void,
  ) {
    this.written = raw ?? ''
    if (raw === undefined || raw === '') return
    let parsed: unknown
    try {
      parsed = JSON.parse(raw)
    } catch {
      parsed = undefined
    }
    if (Array.isArray(parsed) && parsed.every((x) => typeof x === 'string' && x !== '')) {
      for (const name of parsed as string[]) this.names.add(name)
    } else {
      warn(`ignoring annotation ${AWAITING_ANNOTATION} on workloadgroup ${namespace}/${group}: expected a JSON list of registration names, got ${JSON.stringify(raw.length > 80 ? `${raw.slice(0, 80)}…` : raw)}`)
    }
  }

  sorted(): string[] {
    return [...this.names].sort()
  }

  async save(): Promise<void> {
    const value = this.names.size > 0 ? JSON.stringify(this.sorted()) : null
    if ((value ?? '') === this.written) return
    await withPermission('patch', WG, this.namespace, () =>
      this.client.request({
        method: 'PATCH',
        path: resourcePath(WG, {namespace: this.namespace, name: this.group}),
        contentType: PATCH.merge,
        body: {metadata: {annotations: {[AWAITING_ANNOTATION]: value}}},
      }),
    )
    this.written = value ?? ''
  }
}

/** API and network failures are MeshvmErrors already; anything else is a bug and is rethrown. */
function asMeshvmError(err: unknown): MeshvmError {
  if (err instanceof MeshvmError) return err
  throw err
}

function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done(): void {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, {once: true})
  })
}

async function getGroup(client: KubeClient, namespace: string, name: string): Promise<WorkloadGroup & KubeObject> {
  const group = await withPermission('get', WG, namespace, () => client.getOptional<WorkloadGroup & KubeObject>(resourcePath(WG, {namespace, name})))
  if (!group) {
    throw new MeshvmError(`workloadgroup "${name}" not found in namespace "${namespace}"`, {
      exit: ExitCode.NOT_FOUND,
      code: 'NotFound',
      hints: [`list the groups with: kubectl get workloadgroups -n ${namespace}`],
    })
  }
  return group
}

const ownedByGroup = (obj: unknown, group: string): boolean => ownerOfKind(obj, 'WorkloadGroup')?.name === group

/** The group's registrations and which of them are stale, from the cluster as it is now. */
async function plan(client: KubeClient, group: WorkloadGroup, o: RolloutOptions, awaited: Set<string>): Promise<{total: number; stale: Candidate[]; present: Set<string>}> {
  const namespace = o.namespace
  let total = 0
  const stale: Candidate[] = []
  /** The awaited names that exist now. */
  const present = new Set<string>()
  // WARs that record no snapshot are judged by their WorkloadEntry, found in a second pass.
  const bySnapshotless = new Map<string, Candidate>()
  await withPermission('list', WAR, namespace, async () => {
    for await (const page of client.listPages<KubeObject>(resourcePath(WAR, {namespace}), {}, o.chunkSize)) {
      for (const war of page.items) {
        if (!ownedByGroup(war, o.group)) continue
        total++
        if (awaited.has(war.metadata?.name ?? '')) present.add(war.metadata!.name!)
        const reg = registrationFromWar(war, group)
        const c: Candidate = {name: reg.name, uid: war.metadata?.uid, resourceVersion: war.metadata?.resourceVersion, agentConnected: reg.agentConnected}
        if (warSnapshot(war) !== undefined) {
          if (staleDifference(war, group) !== '') stale.push(c)
        } else if (c.uid) bySnapshotless.set(c.uid, c)
      }
    }
  })
  if (bySnapshotless.size > 0) {
    await withPermission('list', WE, namespace, async () => {
      for await (const page of client.listPages<KubeObject>(resourcePath(WE, {namespace}), {}, o.chunkSize)) {
        for (const we of page.items) {
          const owner = ownerOfKind(we, WAR.kind)
          const c = owner?.uid ? bySnapshotless.get(owner.uid) : undefined
          if (!c) continue
          bySnapshotless.delete(owner!.uid!)
          if (workloadEntryDifference(we, group) !== '') stale.push(c)
        }
      }
    })
    if (bySnapshotless.size > 0) {
      o.warn(`${bySnapshotless.size} registration(s) record no group snapshot and own no WorkloadEntry, so whether they are stale cannot be told; they are left alone: ${[...bySnapshotless.values()].map((c) => c.name).sort().join(', ')}`)
    }
  }
  stale.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return {total, stale, present}
}

/** Stale auto-registered WorkloadEntries of the group, for the hint when there is no WAR CRD. */
async function staleWorkloadEntries(client: KubeClient, group: WorkloadGroup, o: RolloutOptions): Promise<string[]> {
  const names: string[] = []
  await withPermission('list', WE, o.namespace, async () => {
    for await (const page of client.listPages<KubeObject>(resourcePath(WE, {namespace: o.namespace}), {}, o.chunkSize)) {
      for (const we of page.items) {
        if (!isListedWorkloadEntry(we, 'all') || groupNameOf('workloadentry', we) !== o.group) continue
        if (registrationFromWorkloadEntry(we, group).stale) names.push(we.metadata?.name ?? '')
      }
    }
  })
  return names.sort()
}

type Phase = 'gone' | 'deleting' | 'disconnected' | 'stale' | 'unhealthy' | 'ready'

interface Check {
  phase: Phase
  detail: string
}

function healthy(we: KubeObject | undefined): {ok: boolean; detail: string} {
  if (!we) return {ok: false, detail: 'its WorkloadEntry does not exist yet'}
  const conditions = ((we.status as {conditions?: {type?: string; status?: unknown; reason?: string; message?: string}[]} | undefined)?.conditions ?? [])
  const c = conditions.find((x) => x?.type === 'Healthy')
  if (!c) return {ok: false, detail: 'no health check result yet'}
  if (String(c.status).toLowerCase() === 'true') return {ok: true, detail: 'healthy'}
  const why = [c.reason, c.message].filter(Boolean).join(': ')
  return {ok: false, detail: `not healthy${why ? ` (${why})` : ''}`}
}

/** Where one re-onboarding stands now. */
async function check(client: KubeClient, namespace: string, name: string, oldUid: string | undefined, group: WorkloadGroup): Promise<Check> {
  const war = await withPermission('get', WAR, namespace, () => client.getOptional<KubeObject>(resourcePath(WAR, {namespace, name})))
  if (!war) return {phase: 'gone', detail: 'the agent has not re-registered the workload'}
  if (oldUid !== undefined && war.metadata?.uid === oldUid) return {phase: 'deleting', detail: 'the old registration is still being deleted'}
  const reg = registrationFromWar(war, group)
  if (reg.agentConnected !== 'True') return {phase: 'disconnected', detail: 're-registered, but its agent is not connected'}
  const snapshot = warSnapshot(war) !== undefined
  if (snapshot && staleDifference(war, group) !== '') return {phase: 'stale', detail: 're-registered from an older WorkloadGroup spec than the current one'}
  const probe = Boolean((group.spec as {probe?: unknown} | undefined)?.probe)
  let we: KubeObject | undefined
  if (probe || !snapshot) we = await ownedWorkloadEntry(client, war)
  if (!snapshot && we && workloadEntryDifference(we, group) !== '') return {phase: 'stale', detail: 'its WorkloadEntry does not match the current WorkloadGroup'}
  const to = reg.connectedTo ? `connected to ${reg.connectedTo}` : 'connected'
  if (probe) {
    const h = healthy(we)
    if (!h.ok) return {phase: 'unhealthy', detail: `${to}, but ${h.detail}`}
    return {phase: 'ready', detail: `${to}, healthy`}
  }
  return {phase: 'ready', detail: to}
}

function verdict(phase: Phase): {result: ItemResult; exit: ExitCodeValue} {
  if (phase === 'unhealthy') return {result: 'unhealthy', exit: ExitCode.CHECK_FAILED}
  if (phase === 'stale') return {result: 'stale', exit: ExitCode.CHECK_FAILED}
  return {result: 'timed out', exit: ExitCode.TIMEOUT}
}

export function rolloutCommandLine(o: Pick<RolloutOptions, 'group' | 'namespace'>): string {
  return `meshvm war rollout ${o.group} -n ${o.namespace}`
}

export async function rollout(client: KubeClient, o: RolloutOptions): Promise<RolloutReport> {
  let group = await getGroup(client, o.namespace, o.group)
  if (!(await warApiServed(client))) {
    const stale = await staleWorkloadEntries(client, group, o)
    throw new MeshvmError(`${CRD_MISSING}: rollout re-onboards WorkloadAutoRegistrations, and Istio re-creates an auto-registered WorkloadEntry only when its sidecar reconnects`, {
      exit: ExitCode.NOT_FOUND,
      code: 'CRDNotInstalled',
      hints: [
        stale.length > 0
          ? `${stale.length} auto-registered WorkloadEntr${stale.length === 1 ? 'y is' : 'ies are'} stale (${stale.slice(0, 5).join(', ')}${stale.length > 5 ? ', …' : ''}): restart the Istio sidecar on those VMs, one at a time`
          : 'no auto-registered WorkloadEntry of this group is stale',
      ],
    })
  }
  const awaiting = new Awaiting(client, o.namespace, o.group, group.metadata?.annotations?.[AWAITING_ANNOTATION], o.warn)
  const {total, stale, present} = await plan(client, group, o, awaiting.names)
  const staleNames = new Set(stale.map((c) => c.name))
  // Registrations an earlier run deleted: awaited first unless they are back and ready, or present and stale (then the plan has them).
  const waits: {c: Candidate; last: Check}[] = []
  const back: {name: string; detail: string}[] = []
  for (const name of awaiting.sorted()) {
    if (staleNames.has(name)) continue
    const last = await check(client, o.namespace, name, undefined, group)
    if (last.phase === 'ready') back.push({name, detail: last.detail})
    else waits.push({c: {name, agentConnected: last.phase === 'gone' ? 'Unknown' : last.phase === 'disconnected' ? 'False' : 'True'}, last})
  }
  // From here on the list holds exactly the registrations this run still waits for.
  for (const name of awaiting.sorted()) if (!waits.some((w) => w.c.name === name)) awaiting.names.delete(name)
  const waitingPresent = waits.filter((w) => present.has(w.c.name)).length
  const report: RolloutReport = {
    namespace: o.namespace,
    group: o.group,
    ...(group.metadata?.generation !== undefined ? {generation: group.metadata.generation} : {}),
    registrations: total,
    upToDate: total - stale.length - waitingPresent,
    stale: stale.length,
    awaited: waits.length,
    maxUnavailable: o.maxUnavailable,
    status: 'nothing to do',
    items: [],
  }
  const todo = stale.filter((c) => c.agentConnected === 'True')
  const skipped = stale.filter((c) => c.agentConnected !== 'True')
  waits.forEach((w, i) => report.items.push({name: w.c.name, agentConnected: w.c.agentConnected, result: o.dryRun ? 'planned' : 'not started', deletedEarlier: true, step: i + 1}))
  todo.forEach((c, i) => report.items.push({name: c.name, agentConnected: c.agentConnected, result: o.dryRun ? 'planned' : 'not started', step: waits.length + i + 1}))
  for (const c of skipped) {
    report.items.push({name: c.name, agentConnected: c.agentConnected, result: 'skipped', detail: 'agent not connected: it cannot re-onboard now; re-run the rollout once it reconnects'})
  }
  const where = `workloadgroup ${o.namespace}/${o.group}${report.generation !== undefined ? ` (generation ${report.generation})` : ''}`
  if (o.dryRun) {
    report.status = todo.length + waits.length > 0 ? 'planned' : 'nothing to do'
    return report
  }
  // Forget what is back (or visible again) before anything else; a missing patch permission fails here, before any delete.
  try {
    await awaiting.save()
  } catch (err) {
    const e = asMeshvmError(err)
    report.status = 'failed'
    report.failure = {exit: e.exit, message: `rollout of ${where} stopped before deleting anything: could not update annotation ${AWAITING_ANNOTATION} on the group: ${e.message}`, hints: [...e.hints]}
    return report
  }
  for (const b of back) o.progress(`${b.name}, deleted by an earlier rollout, is back: ${b.detail}`)
  if (stale.length === 0 && waits.length === 0) {
    o.progress(`${where}: all ${total} registration(s) are up to date, nothing to roll out`)
    return report
  }
  const n = waits.length + todo.length
  if (n > 0) {
    const earlier = waits.length > 0 ? `${waits.length} deleted by an earlier rollout ${waits.length === 1 ? 'is' : 'are'} not back yet; ` : ''
    o.progress(`Rolling out ${where}: ${stale.length} of ${total} registration(s) are stale; ${earlier}re-onboarding ${todo.length}, up to ${o.maxUnavailable} at a time, waiting up to ${humanDuration(o.timeoutMs)} for each`)
  }
  for (const c of skipped) o.warn(`skipping ${c.name}: its agent is not connected, so it cannot re-onboard now (re-run the rollout once it reconnects)`)
  if (n === 0) return report

  const byName = new Map(report.items.map((i) => [i.name, i]))
  const queue = [...todo]
  const inflight: {c: Candidate; item: RolloutItem; started: number; last: Check}[] = []
  for (const w of waits) {
    const item = byName.get(w.c.name)!
    o.progress(`[${item.step}/${n}] waiting for ${w.c.name} to re-onboard (deleted by an earlier rollout): ${w.last.detail}`)
    inflight.push({c: w.c, item, started: Date.now(), last: w.last})
  }
  const fail = (exit: ExitCodeValue, message: string): void => {
    report.failure ??= {exit, message, hints: []}
  }

  while ((queue.length > 0 && report.failure === undefined) || inflight.length > 0) {
    if (o.signal?.aborted) break
    // After Ctrl-C no new deletion starts (a delete in progress still finishes and is reported).
    while (report.failure === undefined && !o.signal?.aborted && inflight.length < o.maxUnavailable && queue.length > 0) {
      const c = queue.shift()!
      const item = byName.get(c.name)!
      // Remembered before the delete, so that a run stopped at any point knows to wait for it.
      awaiting.names.add(c.name)
      try {
        await awaiting.save()
      } catch (err) {
        const e = asMeshvmError(err)
        awaiting.names.delete(c.name)
        item.result = 'failed'
        item.detail = `not deleted: could not record it in annotation ${AWAITING_ANNOTATION}: ${e.message}`
        report.failure ??= {exit: e.exit, message: `rollout of ${where} stopped before deleting ${c.name}: could not record it in annotation ${AWAITING_ANNOTATION} on the group: ${e.message}`, hints: [...e.hints]}
        break
      }
      try {
        const existed = await deleteRegistration(client, 'war', {metadata: {name: c.name, namespace: o.namespace, uid: c.uid}})
        o.progress(`[${item.step}/${n}] ${existed ? 'deleted' : 'already gone:'} ${c.name}; waiting for its agent to re-onboard it`)
        inflight.push({c, item, started: Date.now(), last: {phase: 'gone', detail: 'the agent has not re-registered the workload'}})
      } catch (err) {
        const e = asMeshvmError(err)
        item.result = 'failed'
        item.detail = `delete failed: ${e.message}`
        report.failure ??= {exit: e.exit, message: `rollout of ${where} stopped: could not delete ${c.name}: ${e.message}`, hints: [...e.hints]}
        // Not deleted, so not awaited. Should this write fail, the name stays listed: harmless, as
        // the next run finds the registration present and drops it.
        awaiting.names.delete(c.name)
        await awaiting.save().catch(() => undefined)
      }
    }
    if (inflight.length === 0) break
    await sleep(o.pollIntervalMs, o.signal)
    if (o.signal?.aborted) break
    try {
      group = await getGroup(client, o.namespace, o.group)
    } catch (err) {
      // The group itself went away or cannot be read: nothing in flight can be verified.
      const e = asMeshvmError(err)
      for (const f of inflight.splice(0)) {
        f.item.result = 'failed'
        f.item.detail = `deleted; could not be verified: ${e.message}`
      }
      report.failure ??= {exit: e.exit, message: `rollout of ${where} stopped: ${e.message}`, hints: [...e.hints]}
      break
    }
    for (const f of [...inflight]) {
      try {
        f.last = await check(client, o.namespace, f.c.name, f.c.uid, group)
      } catch (err) {
        const e = asMeshvmError(err)
        f.item.result = 'failed'
        f.item.detail = `deleted; could not be verified: ${e.message}`
        report.failure ??= {exit: e.exit, message: `rollout of ${where} stopped: could not check on ${f.c.name}: ${e.message}`, hints: [...e.hints]}
        inflight.splice(inflight.indexOf(f), 1)
        continue
      }
      const elapsed = Date.now() - f.started
      if (f.last.phase === 'ready') {
        f.item.result = 're-onboarded'
        f.item.detail = f.last.detail
        f.item.seconds = Math.round(elapsed / 100) / 10
        o.progress(`[${f.item.step}/${n}] ${f.c.name} re-onboarded in ${elapsedText(elapsed)}: ${f.last.detail}`)
        awaiting.names.delete(f.c.name)
        try {
          await awaiting.save()
        } catch (err) {
          // It is back; only the bookkeeping failed (the next run finds it ready and drops it).
          const e = asMeshvmError(err)
          report.failure ??= {exit: e.exit, message: `rollout of ${where} stopped: could not update annotation ${AWAITING_ANNOTATION} on the group after ${f.c.name} re-onboarded: ${e.message}`, hints: [...e.hints]}
        }
      } else if (elapsed >= o.timeoutMs) {
        const v = verdict(f.last.phase)
        f.item.result = v.result
        f.item.seconds = Math.round(elapsed / 100) / 10
        f.item.detail = v.result === 'timed out' ? `not back connected within ${humanDuration(o.timeoutMs)}: ${f.last.detail}` : `after ${humanDuration(o.timeoutMs)}: ${f.last.detail}`
        o.progress(`[${f.item.step}/${n}] ${f.c.name} ${v.result === 'timed out' ? 'did not come back' : 'failed'}: ${f.item.detail}`)
        fail(v.exit, `rollout of ${where} stopped: ${f.c.name} ${v.result === 'timed out' ? 'did not come back connected' : v.result === 'unhealthy' ? 'came back but is not healthy' : 'came back from an old group snapshot'} within ${humanDuration(o.timeoutMs)}`)
      } else continue
      inflight.splice(inflight.indexOf(f), 1)
    }
  }

  if (o.signal?.aborted) {
    for (const f of inflight) {
      f.item.result = 'interrupted'
      f.item.detail = `deleted; interrupted while waiting (${f.last.detail})`
    }
    report.status = 'interrupted'
    report.failure = {exit: ExitCode.INTERRUPTED, message: `rollout of ${where} interrupted`, hints: []}
  } else {
    report.status = report.failure ? 'failed' : 'complete'
  }
  if (report.failure) {
    const notStarted = report.items.filter((i) => i.result === 'not started').length
    report.failure.hints.push(
      `re-run "${rolloutCommandLine(o)}" to continue: registrations already re-onboarded are up to date and are not touched again${notStarted > 0 ? ` (${notStarted} not started)` : ''}`,
    )
    const pending = awaiting.sorted()
    if (pending.length > 0) {
      report.failure.hints.push(
        `the re-run first waits for the ${pending.length} deleted registration(s) not back yet, listed in annotation ${AWAITING_ANNOTATION} on the group; if a VM is gone for good, remove its name there (kubectl edit workloadgroup ${o.group} -n ${o.namespace})`,
      )
    }
    if (report.failure.exit === ExitCode.TIMEOUT) report.failure.hints.push('check the onboarding agent on that VM (journalctl -u onboarding-agent), or raise --timeout')
  }
  return report
}
