/**
 * `meshvm war rollout GROUP`: re-onboard the workloads of a WorkloadGroup after the group changed, the
 * way a Deployment rolls out, because TSB applies a group change only to workloads that onboard after
 * it (a WAR keeps a snapshot of the group taken at onboarding). The plan is worked out from the cluster
 * on every run; what a run deleted and is not back yet is remembered in the group's rollout Lease
 * (coordination.k8s.io/v1), which is also the lock that keeps two runs from together exceeding
 * maxUnavailable; the user's WorkloadGroup is only read. The steps, resuming, the Lease and the exit
 * codes are described in docs/war.md ("meshvm war rollout GROUP").
 */
import {spawn} from 'node:child_process'
import {createHash} from 'node:crypto'
import {hostname, userInfo} from 'node:os'
import {ExitCode, MeshvmError, type ExitCodeValue} from '../errors.js'
import {humanDuration} from '../output/age.js'
import {terminalSafe} from '../output/terminal.js'
import type {KubeClient} from '../kube/client.js'
import {KubeApiError} from '../kube/errors.js'
import {conditionOf, conditionStatus, ownerOfKind, type KubeObject} from '../kube/object.js'
import {resourcePath, Resources} from '../kube/resources.js'
import {sleep} from '../util/sleep.js'
import {CRD_MISSING, deleteRegistration, getObject, groupNameOf, isListedWorkloadEntry, listObjects, ownedWorkloadEntry, registrationResource, warApiServed, withPermission} from './fetch.js'
import {HBONE_METADATA, missingTunnelLabels, readHboneEvidence, TUNNEL_LABEL_SINCE} from './hbone.js'
import {
  registrationFromWar,
  registrationFromWorkloadEntry,
  staleDifference,
  TUNNEL_LABEL,
  warSnapshot,
  workloadEntryDifference,
  type ConnectedStatus,
  type Registration,
  type WorkloadEntryObject,
  type WorkloadGroup,
} from './model.js'

export interface RolloutOptions {
  namespace: string
  group: string
  maxUnavailable: number
  timeoutMs: number
  pollIntervalMs: number
  /** --dry-run client or server: plan only, change nothing. */
  dryRun: boolean
  /** --dry-run=server: every delete of the plan is also sent with dryRun=All (the API server checks permission, UID precondition and admission, persisting nothing). */
  serverDryRun?: boolean
  chunkSize: number
  signal?: AbortSignal
  /**
   * For auto-registered WorkloadEntries: a command run through `sh -c` for each stale entry, after
   * the entry is deleted, that restarts the VM's sidecar (env: MESHVM_VM_NAME, MESHVM_VM_ADDRESS,
   * MESHVM_VM_HOSTNAME, MESHVM_NAMESPACE). Without it, stale entries are listed and the run fails.
   */
  restartCommand?: string
  /**
   * Which registrations to re-onboard: `stale` (default) those made from an older group spec;
   * `missing-tunnel-label` the auto-registered WorkloadEntries of HBONE-capable proxies that lack
   * the HBONE tunnel label (Istio 1.31 adds it when it re-registers them; war/hbone.ts), which must
   * come back carrying it.
   */
  select?: 'stale' | 'missing-tunnel-label'
  /** Where the istiods and their mesh configs are (for `missing-tunnel-label`). */
  istioNamespace?: string
  /** Progress lines (stderr). */
  progress: (line: string) => void
  warn: (line: string) => void
}

export type ItemResult = 'planned' | 're-onboarded' | 'timed out' | 'unhealthy' | 'stale' | 'no tunnel label' | 'failed' | 'interrupted' | 'not started' | 'skipped' | 'needs restart'

/**
 * Where to look on a VM that did not come back: a WorkloadAutoRegistration is re-registered by the
 * TSB onboarding agent (systemd unit onboarding-agent); an auto-registered WorkloadEntry by Istio's
 * sidecar itself, the `istio` service of Istio's VM packages (istio.io docs, ops/diagnostic-tools/
 * virtual-machines: `journalctl -u istio`, /var/log/istio/istio.log).
 */
export function timeoutHint(items: readonly Pick<RolloutItem, 'name' | 'kind' | 'result'>[]): string {
  const late = items.filter((i) => i.result === 'timed out')
  const kinds = new Set((late.length > 0 ? late : items).map((i) => i.kind))
  const on = late.length > 0 ? `on VM${late.length > 1 ? 's' : ''} ${late.map((i) => i.name).join(', ')}` : 'on the VM that did not come back'
  const where: string[] = []
  if (kinds.has('war')) where.push('the onboarding agent (journalctl -u onboarding-agent)')
  if (kinds.has('workloadentry')) where.push("Istio's sidecar service (journalctl -u istio; /var/log/istio/istio.log)")
  return `check ${where.join(' or ') || 'the VM'} ${on}, or raise --timeout`
}

export interface RolloutItem {
  name: string
  /** A WorkloadAutoRegistration, or an auto-registered WorkloadEntry (re-onboarded by restarting its sidecar). */
  kind: 'war' | 'workloadentry'
  /** WorkloadEntry: the VM's address. */
  address?: string
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
  /** What was selected for re-onboarding: stale registrations, or entries missing the HBONE tunnel label. */
  selection: 'stale' | 'missing-tunnel-label'
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
  /** Not to be deleted: re-registering would not help (why, for the report). */
  skip?: string
  name: string
  kind: 'war' | 'workloadentry'
  address?: string
  uid?: string
  agentConnected: ConnectedStatus
}

/** `0.4s`, `12.3s` below a minute, then kubectl's human durations. */
export function elapsedText(ms: number): string {
  return ms < 60_000 ? `${(Math.round(ms / 100) / 10).toFixed(1)}s` : humanDuration(ms)
}

/**
 * The rollout's lock and progress live in a `coordination.k8s.io/v1` Lease in the group's namespace
 * (as client-go's leader election keeps its lock), so the user's WorkloadGroup is never written:
 * GitOps tools see no drift, and the permission needed is create/get/update on leases.
 */
export const LEASE_PREFIX = 'meshvm-rollout-'
/** How long the lease lasts without renewal; it is renewed when a third of it has passed. */
const LEASE_MS = 60_000
/** On the Lease: the registrations a rollout deleted that are not back yet (a sorted JSON list of names). */
export const AWAITING_ANNOTATION = 'rollout.meshvm.io/awaiting'
/** On the Lease: the WorkloadGroup it coordinates (the name may be shortened, see leaseName). */
export const GROUP_ANNOTATION = 'rollout.meshvm.io/workloadgroup'
/** Awaited WorkloadEntries are listed as `workloadentry/NAME` (WAR names stay bare, as before). */
const WE_PREFIX = 'workloadentry/'

/** The Lease of a group's rollouts: `meshvm-rollout-GROUP`, or a digest of GROUP when that would be too long for a name. */
export function leaseName(group: string): string {
  const name = LEASE_PREFIX + group
  return name.length <= 253 ? name : `${LEASE_PREFIX}${createHash('sha256').update(group).digest('hex').slice(0, 40)}`
}

export interface LeaseObject extends KubeObject {
  spec?: {holderIdentity?: string; leaseDurationSeconds?: number; acquireTime?: string; renewTime?: string; leaseTransitions?: number}
}

export interface RolloutLease {
  holder: string
  acquireTime: string
  renewTime: string
  leaseDurationSeconds: number
}

/** The holder and times of a lease someone else holds that has not expired at `now` (client-go: renewTime + leaseDurationSeconds). */
function liveLeaseOfOther(lease: unknown, holder: string, now: number): RolloutLease | undefined {
  const spec = (lease as LeaseObject | undefined)?.spec
  if (!spec || typeof spec.holderIdentity !== 'string' || spec.holderIdentity === '' || typeof spec.renewTime !== 'string' || typeof spec.leaseDurationSeconds !== 'number') return undefined
  const renewed = Date.parse(spec.renewTime)
  if (spec.holderIdentity === holder || Number.isNaN(renewed) || renewed + spec.leaseDurationSeconds * 1000 <= now) return undefined
  return {holder: spec.holderIdentity, acquireTime: spec.acquireTime ?? spec.renewTime, renewTime: spec.renewTime, leaseDurationSeconds: spec.leaseDurationSeconds}
}

export function leaseConflict(namespace: string, group: string, l: RolloutLease): MeshvmError {
  const expires = new Date(Date.parse(l.renewTime) + l.leaseDurationSeconds * 1000).toISOString()
  return new MeshvmError(`another rollout of workloadgroup ${namespace}/${group} is in progress: ${JSON.stringify(l.holder)} holds its lease (since ${l.acquireTime}, renewed ${l.renewTime})`, {
    exit: ExitCode.REJECTED,
    code: 'RolloutInProgress',
    hints: [
      'wait for it to finish: two rollouts of one group would together take down more than --max-unavailable workloads',
      `if that run was killed, its lease expires at ${expires}; a new run takes over after that (or release it: kubectl patch lease ${leaseName(group)} -n ${namespace} --type merge -p '{"spec":{"holderIdentity":null}}')`,
    ],
  })
}

/** Kubernetes' MicroTime: RFC 3339 with microseconds. */
const microTime = (d: Date): string => d.toISOString().replace(/\.(\d{3})Z$/, '.$1000Z')

/** The Lease of a group's rollouts, if there is one. */
export async function getRolloutLease(client: KubeClient, namespace: string, group: string): Promise<LeaseObject | undefined> {
  return getObject<LeaseObject>(client, Resources.leases, namespace, leaseName(group))
}

/**
 * The group's rollout record: the awaiting list, as the Lease holds it and as this run changes it,
 * and this run's hold on the Lease. Taking the lease is client-go's tryAcquireOrRenew: create the
 * Lease when there is none, else update it with its resourceVersion (optimistic concurrency) when
 * nobody else holds it or their hold expired. A conflict re-reads the Lease; if another run holds a
 * live lease by then, this run stops (leaseConflict); otherwise the write is retried on the new
 * version. Every later write (list changes, renewals, the release) is an update of the held Lease.
 * Writes are serialised.
 */
class RolloutRecord {
  readonly names = new Set<string>()
  /** The list as the Lease holds it ('' when it has none). */
  private written: string
  private acquired?: string
  private lastWrite = 0
  private chain: Promise<void> = Promise.resolve()

  constructor(
    private readonly client: KubeClient,
    private readonly namespace: string,
    private readonly group: string,
    private lease: LeaseObject | undefined,
    private readonly holder: string,
    private readonly warn: (line: string) => void,
  ) {
    this.written = lease?.metadata?.annotations?.[AWAITING_ANNOTATION] ?? ''
    if (this.written !== '') this.adopt(this.written, `annotation ${AWAITING_ANNOTATION} on lease ${namespace}/${leaseName(group)}`)
  }

  /** Adds the names of a recorded list (a JSON list of names); a malformed one is ignored with a warning. */
  adopt(raw: string, where: string): void {
    let parsed: unknown
    try {
      parsed = JSON.parse(raw)
    } catch {}
    if (Array.isArray(parsed) && parsed.every((x) => typeof x === 'string' && x !== '')) {
      for (const name of parsed as string[]) this.names.add(name)
    } else {
      this.warn(`ignoring ${where}: expected a JSON list of registration names, got ${JSON.stringify(raw.length > 80 ? `${raw.slice(0, 80)}…` : raw)}`)
    }
  }

  sorted(): string[] {
    return [...this.names].sort()
  }

  get held(): boolean {
    return this.acquired !== undefined
  }

  /** Whether the list differs from what the Lease holds. */
  get changed(): boolean {
    return (this.value() ?? '') !== this.written
  }

  private value(): string | null {
    return this.names.size > 0 ? JSON.stringify(this.sorted()) : null
  }

  /** Takes the lease (writing the list); refused with leaseConflict while another run holds it. */
  acquire(): Promise<void> {
    return this.write(false)
  }

  /** Writes the list (when it changed), taking or renewing the lease. */
  save(): Promise<void> {
    if (this.held && !this.changed) return this.chain
    return this.write(false)
  }

  /** Renews the lease when a third of it has passed. */
  renew(): Promise<void> {
    if (!this.held || Date.now() - this.lastWrite < LEASE_MS / 3) return this.chain
    return this.write(false)
  }

  /** Gives the lease back (best effort) and writes the final list, as client-go's ReleaseOnCancel clears the holder. */
  release(): Promise<void> {
    if (!this.held) return this.chain
    return this.write(true).catch(() => undefined)
  }

  private desired(now: Date, releasing: boolean): LeaseObject {
    const at = microTime(now)
    const current = this.lease
    const annotations: Record<string, string> = {...(current?.metadata?.annotations ?? {}), [GROUP_ANNOTATION]: this.group}
    const value = this.value()
    if (value === null) delete annotations[AWAITING_ANNOTATION]
    else annotations[AWAITING_ANNOTATION] = value
    const previous = current?.spec?.holderIdentity
    const transitions = current?.spec?.leaseTransitions ?? 0
    const spec: NonNullable<LeaseObject['spec']> = releasing
      ? // client-go's release: no holder, a one-second duration, times of the release.
        {...current?.spec, holderIdentity: undefined, leaseDurationSeconds: 1, acquireTime: at, renewTime: at, leaseTransitions: transitions}
      : {
          holderIdentity: this.holder,
          leaseDurationSeconds: LEASE_MS / 1000,
          acquireTime: this.acquired ?? at,
          renewTime: at,
          leaseTransitions: previous && previous !== this.holder ? transitions + 1 : transitions,
        }
    if (spec.holderIdentity === undefined) delete spec.holderIdentity
    return {
      apiVersion: 'coordination.k8s.io/v1',
      kind: 'Lease',
      metadata: {
        ...(current?.metadata ?? {}),
        name: leaseName(this.group),
        namespace: this.namespace,
        labels: {...(current?.metadata?.labels ?? {}), 'app.kubernetes.io/managed-by': 'meshvm'},
        annotations,
      },
      spec,
    }
  }

  private write(releasing: boolean): Promise<void> {
    const run = async (): Promise<void> => {
      for (let attempt = 0; ; attempt++) {
        const now = new Date()
        if (!this.held && !releasing) {
          const other = liveLeaseOfOther(this.lease, this.holder, now.getTime())
          if (other) throw leaseConflict(this.namespace, this.group, other)
        }
        const body = this.desired(now, releasing)
        const name = leaseName(this.group)
        const creating = this.lease?.metadata?.resourceVersion === undefined
        try {
          const res = await withPermission(creating ? 'create' : 'update', Resources.leases, this.namespace, () =>
            this.client.request<LeaseObject>(
              creating
                ? {method: 'POST', path: resourcePath(Resources.leases, {namespace: this.namespace}), body}
                : {method: 'PUT', path: resourcePath(Resources.leases, {namespace: this.namespace, name}), body},
            ),
          )
          this.lease = res ?? body
          this.written = body.metadata?.annotations?.[AWAITING_ANNOTATION] ?? ''
          this.lastWrite = Date.now()
          this.acquired = releasing ? undefined : (this.acquired ?? body.spec?.acquireTime)
          return
        } catch (err) {
          if (!(err instanceof KubeApiError && err.status === 409) || attempt >= 5) throw err
          // Someone else wrote the Lease (or created it first): read it again and decide anew.
          this.lease = await getRolloutLease(this.client, this.namespace, this.group)
          const other = liveLeaseOfOther(this.lease, this.holder, Date.now())
          if (other) {
            this.acquired = undefined
            throw leaseConflict(this.namespace, this.group, other)
          }
        }
      }
    }
    const next = this.chain.then(run, run)
    this.chain = next.catch(() => undefined)
    return next
  }
}

/** API and network failures are MeshvmErrors already; anything else is a bug and is rethrown. */
function asMeshvmError(err: unknown): MeshvmError {
  if (err instanceof MeshvmError) return err
  throw err
}

/** Records what became of a registration. */
function settle(item: RolloutItem, result: ItemResult, detail: string): void {
  item.result = result
  item.detail = detail
}

/** The report's failure for an error: `what` went wrong, then the error's message and hints. */
const failureOf = (e: MeshvmError, what: string): NonNullable<RolloutReport['failure']> => ({exit: e.exit, message: `${what}: ${e.message}`, hints: [...e.hints]})

async function getGroup(client: KubeClient, namespace: string, name: string): Promise<WorkloadGroup & KubeObject> {
  const group = await getObject<WorkloadGroup & KubeObject>(client, Resources.workloadGroups, namespace, name)
  if (!group) {
    throw new MeshvmError(`workloadgroup "${name}" not found in namespace "${namespace}"`, {
      exit: ExitCode.NOT_FOUND,
      code: 'NotFound',
      hints: [`list the groups with: kubectl get workloadgroups -n ${namespace}`],
    })
  }
  return group
}

/** An auto-registered WorkloadEntry as a candidate, from its row. */
const entryCandidate = (we: KubeObject, reg: Registration): Candidate => ({name: reg.name, kind: 'workloadentry', address: reg.addresses[0], uid: we.metadata?.uid, agentConnected: reg.agentConnected})

/**
 * --missing-tunnel-label: the group's auto-registered WorkloadEntries, and those of HBONE-capable
 * proxies that lack the tunnel label. An entry whose istiod is older than 1.31 would come back
 * without the label: it is skipped, with the label command instead.
 */
async function planTunnel(client: KubeClient, o: RolloutOptions, awaited: Set<string>): Promise<{total: number; stale: Candidate[]; present: Set<string>}> {
  const namespace = o.namespace
  const evidence = await readHboneEvidence(client, o.istioNamespace ?? 'istio-system')
  const mine: WorkloadEntryObject[] = []
  for await (const we of listObjects(client, Resources.workloadEntries, namespace, o.chunkSize)) {
    if (ownerOfKind(we, Resources.workloadAutoRegistrations.kind) || !isListedWorkloadEntry(we, 'workloadentry') || groupNameOf('workloadentry', we) !== o.group) continue
    mine.push(we)
  }
  const present = new Set(mine.map((we) => WE_PREFIX + (we.metadata?.name ?? '')).filter((k) => awaited.has(k)))
  const stale: Candidate[] = missingTunnelLabels(mine, evidence).map((m) => {
    const c = entryCandidate(m.we, registrationFromWorkloadEntry(m.we))
    if (m.labelsOnRegistration === false) {
      c.skip = `istiod ${m.istiod} (${evidence.istiods.get(m.istiod!)?.version}) is older than ${TUNNEL_LABEL_SINCE} and would re-register it without the label; label it instead: kubectl label workloadentry ${m.name} -n ${namespace} ${TUNNEL_LABEL}=http`
    }
    return c
  })
  stale.sort((a, b) => (a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return {total: mine.length, stale, present}
}

/** The group's registrations and which of them are stale, from the cluster as it is now. */
async function plan(client: KubeClient, group: WorkloadGroup, o: RolloutOptions, awaited: Set<string>, warServed: boolean): Promise<{total: number; stale: Candidate[]; present: Set<string>}> {
  if (o.select === 'missing-tunnel-label') return planTunnel(client, o, awaited)
  const namespace = o.namespace
  let total = 0
  const stale: Candidate[] = []
  /** The awaited names that exist now. */
  const present = new Set<string>()
  // WARs that record no snapshot are judged by their WorkloadEntry, found in the WorkloadEntry pass.
  const bySnapshotless = new Map<string, Candidate>()
  if (warServed) {
    for await (const war of listObjects(client, Resources.workloadAutoRegistrations, namespace, o.chunkSize)) {
      if (ownerOfKind(war, 'WorkloadGroup')?.name !== o.group) continue
      total++
      if (awaited.has(war.metadata?.name ?? '')) present.add(war.metadata!.name!)
      const reg = registrationFromWar(war, group)
      const c: Candidate = {name: reg.name, kind: 'war', uid: war.metadata?.uid, agentConnected: reg.agentConnected}
      if (warSnapshot(war) !== undefined) {
        if (staleDifference(war, group) !== '') stale.push(c)
      } else if (c.uid) bySnapshotless.set(c.uid, c)
    }
  }
  // Auto-registered WorkloadEntries no WAR owns are registrations of their own (Istio's auto-registration).
  for await (const we of listObjects(client, Resources.workloadEntries, namespace, o.chunkSize)) {
    const owner = ownerOfKind(we, Resources.workloadAutoRegistrations.kind)
    if (owner) {
      const c = owner.uid ? bySnapshotless.get(owner.uid) : undefined
      if (!c) continue
      bySnapshotless.delete(owner.uid!)
      if (workloadEntryDifference(we, group) !== '') stale.push(c)
      continue
    }
    if (!isListedWorkloadEntry(we, 'workloadentry') || groupNameOf('workloadentry', we) !== o.group) continue
    total++
    const key = WE_PREFIX + (we.metadata?.name ?? '')
    if (awaited.has(key)) present.add(key)
    const reg = registrationFromWorkloadEntry(we, group)
    if (reg.stale) stale.push(entryCandidate(we, reg))
  }
  if (bySnapshotless.size > 0) {
    const names = [...bySnapshotless.values()].map((c) => c.name).sort()
    o.warn(`${names.length} registration(s) record no group snapshot and own no WorkloadEntry, so whether they are stale cannot be told; they are left alone: ${names.join(', ')}`)
  }
  stale.sort((a, b) => (a.kind !== b.kind ? (a.kind === 'war' ? -1 : 1) : a.name < b.name ? -1 : a.name > b.name ? 1 : 0))
  return {total, stale, present}
}

/** The record's key for a candidate (WorkloadEntries prefixed). */
const recordKey = (c: {name: string; kind: 'war' | 'workloadentry'}): string => (c.kind === 'workloadentry' ? WE_PREFIX + c.name : c.name)
const fromRecordKey = (key: string): {name: string; kind: 'war' | 'workloadentry'} =>
  key.startsWith(WE_PREFIX) ? {name: key.slice(WE_PREFIX.length), kind: 'workloadentry'} : {name: key, kind: 'war'}

type Phase = 'gone' | 'deleting' | 'disconnected' | 'stale' | 'no-tunnel' | 'unhealthy' | 'ready'

interface Check {
  phase: Phase
  detail: string
}

/** Back and `to` (connected…): ready, unless the group has a probe and the WorkloadEntry is not healthy. */
function readyUnlessUnhealthy(to: string, group: WorkloadGroup, we: KubeObject | undefined): Check {
  if (!group.spec?.probe) return {phase: 'ready', detail: to}
  const c = conditionOf(we, 'Healthy')
  if (conditionStatus(c) === 'True') return {phase: 'ready', detail: `${to}, healthy`}
  return {phase: 'unhealthy', detail: `${to}, but ${notHealthy(we, c)}`}
}

function notHealthy(we: KubeObject | undefined, c: ReturnType<typeof conditionOf>): string {
  if (!we) return 'its WorkloadEntry does not exist yet'
  if (!c) return 'no health check result yet'
  const why = [c.reason, c.message].filter(Boolean).join(': ')
  return `not healthy${why ? ` (${why})` : ''}`
}

/** Why a deleted registration is not back yet, by kind: a WAR is re-made by its agent, an auto-registered WorkloadEntry by istiod when the VM's sidecar reconnects. */
const NOT_BACK: Record<Registration['source'], string> = {war: 'the agent has not re-registered the workload', workloadentry: "istiod has not re-registered it: the VM's sidecar has not reconnected"}

/** Where one re-onboarding stands now. */
async function check(client: KubeClient, namespace: string, c: {name: string; kind: Registration['source']}, oldUid: string | undefined, group: WorkloadGroup, needTunnel = false): Promise<Check> {
  const isWar = c.kind === 'war'
  const obj = await getObject(client, registrationResource(c.kind), namespace, c.name)
  if (!obj) return {phase: 'gone', detail: NOT_BACK[c.kind]}
  if (oldUid !== undefined && obj.metadata?.uid === oldUid) return {phase: 'deleting', detail: `the old ${isWar ? 'registration' : 'WorkloadEntry'} is still being deleted`}
  const reg = isWar ? registrationFromWar(obj, group) : registrationFromWorkloadEntry(obj, group)
  if (reg.agentConnected !== 'True') return {phase: 'disconnected', detail: `re-registered, but its ${isWar ? 'agent' : 'sidecar'} is not connected`}
  if (!isWar) {
    if (reg.stale) return {phase: 'stale', detail: 'its WorkloadEntry does not match the current WorkloadGroup'}
    if (needTunnel && !reg.tunnel) {
      return {phase: 'no-tunnel', detail: `re-registered without the ${TUNNEL_LABEL} label: is its istiod ${TUNNEL_LABEL_SINCE} or later, and does the proxy advertise ${HBONE_METADATA}=true?`}
    }
    return readyUnlessUnhealthy(reg.connectedTo ? `connected to ${reg.connectedTo}${needTunnel ? `, ${TUNNEL_LABEL}=${reg.tunnel}` : ''}` : 'connected', group, obj)
  }
  const snapshot = warSnapshot(obj) !== undefined
  if (snapshot && staleDifference(obj, group) !== '') return {phase: 'stale', detail: 're-registered from an older WorkloadGroup spec than the current one'}
  const we = group.spec?.probe || !snapshot ? await ownedWorkloadEntry(client, obj) : undefined
  if (!snapshot && we && workloadEntryDifference(we, group) !== '') return {phase: 'stale', detail: 'its WorkloadEntry does not match the current WorkloadGroup'}
  return readyUnlessUnhealthy(reg.connectedTo ? `connected to ${reg.connectedTo}` : 'connected', group, we)
}

/** The environment a --restart-command runs with. */
export function restartEnvironment(c: {name: string; address?: string}, namespace: string): Record<string, string> {
  // The cluster does not record a VM's host name (the proxy ID is not on the entry): the address stands in.
  return {MESHVM_VM_NAME: c.name, MESHVM_VM_ADDRESS: c.address ?? '', MESHVM_VM_HOSTNAME: c.address ?? '', MESHVM_NAMESPACE: namespace}
}

/** Runs the restart command through sh; resolves with its exit code and its last output line. */
function runRestart(command: string, env: Record<string, string>, signal?: AbortSignal): Promise<{code: number; last: string}> {
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', command], {env: {...process.env, ...env}, stdio: ['ignore', 'pipe', 'pipe'], ...(signal ? {signal} : {})})
    let out = ''
    const keep = (d: Buffer) => {
      out = (out + d.toString('utf8')).slice(-2000)
    }
    child.stdout.on('data', keep)
    child.stderr.on('data', keep)
    child.on('error', (err) => resolve({code: 127, last: terminalSafe(err.message)}))
    child.on('close', (code, sig) => resolve({code: code ?? (sig ? 128 : 1), last: terminalSafe(out.trim().split('\n').pop() ?? '')}))
  })
}

/** The verdict on a workload not ready in time: a check that failed, else (not back, or not connected) a time-out. */
const FAILED_CHECKS: Partial<Record<Phase, ItemResult>> = {unhealthy: 'unhealthy', stale: 'stale', 'no-tunnel': 'no tunnel label'}

/** `lease NS/NAME`, as messages name the rollout's Lease. */
const leaseRef = (o: Pick<RolloutOptions, 'group' | 'namespace'>): string => `lease ${o.namespace}/${leaseName(o.group)}`

export function rolloutCommandLine(o: Pick<RolloutOptions, 'group' | 'namespace'>): string {
  return `meshvm war rollout ${o.group} -n ${o.namespace}`
}

/** Who a lease names by default: the user, the host and this process. */
function defaultHolder(): string {
  try {
    return `${userInfo().username}@${hostname()} pid ${process.pid}`
  } catch {
    return `${hostname()} pid ${process.pid}`
  }
}

const entries = (n: number) => `WorkloadEntr${n === 1 ? 'y' : 'ies'}`

export async function rollout(client: KubeClient, o: RolloutOptions): Promise<RolloutReport> {
  const group = await getGroup(client, o.namespace, o.group)
  const warServed = await warApiServed(client)
  if (!warServed) o.progress(`Note: ${CRD_MISSING}: only auto-registered WorkloadEntries are rolled out.`)
  const holder = defaultHolder()
  // Two runs on one group would together exceed --max-unavailable and overwrite each other's record.
  let lease: LeaseObject | undefined
  try {
    lease = await getRolloutLease(client, o.namespace, o.group)
  } catch (err) {
    // A dry run only reads: without permission to read leases it still shows the plan, saying what it cannot see.
    if (!(o.dryRun && err instanceof MeshvmError && err.exit === ExitCode.FORBIDDEN)) throw err
    o.warn(`${err.message}: registrations an earlier rollout deleted and that are not back yet are not shown`)
  }
  const other = liveLeaseOfOther(lease, holder, Date.now())
  if (other && !o.dryRun) throw leaseConflict(o.namespace, o.group, other)
  if (other) o.warn(leaseConflict(o.namespace, o.group, other).message)
  const awaiting = new RolloutRecord(client, o.namespace, o.group, lease, holder, o.warn)
  // meshvm before the Lease kept the list on the group: carried over into the Lease, so no deleted registration is forgotten.
  const legacy = group.metadata?.annotations?.[AWAITING_ANNOTATION]
  if (legacy) {
    const before = awaiting.names.size
    awaiting.adopt(legacy, `annotation ${AWAITING_ANNOTATION} on workloadgroup ${o.namespace}/${o.group}`)
    if (awaiting.names.size > before) {
      o.warn(
        `workloadgroup ${o.namespace}/${o.group} carries annotation ${AWAITING_ANNOTATION} from an older meshvm: its registrations are awaited and kept in ${leaseRef(o)} from now on; remove it from the group: kubectl annotate workloadgroup ${o.group} -n ${o.namespace} ${AWAITING_ANNOTATION}- rollout.meshvm.io/lease-`,
      )
    }
  }
  try {
    return await rolloutHeld(client, o, group, warServed, awaiting)
  } finally {
    await awaiting.release()
  }
}

async function rolloutHeld(client: KubeClient, o: RolloutOptions, initialGroup: WorkloadGroup & KubeObject, warServed: boolean, awaiting: RolloutRecord): Promise<RolloutReport> {
  let group = initialGroup
  const tunnelMode = o.select === 'missing-tunnel-label'
  /** What the selected registrations are, in messages. */
  const are = (n: number): string => (tunnelMode ? `${n === 1 ? 'lacks' : 'lack'} the HBONE tunnel label` : `${n === 1 ? 'is' : 'are'} stale`)
  const {total, stale: selected, present} = await plan(client, group, o, awaiting.names, warServed)
  const cannot = selected.filter((c) => c.skip !== undefined)
  const stale = selected.filter((c) => c.skip === undefined)
  const staleKeys = new Set(stale.map(recordKey))
  // Registrations an earlier run deleted: awaited first unless they are back and ready, or present and stale (then the plan has them).
  const waits: {c: Candidate; last: Check}[] = []
  const back: {name: string; detail: string}[] = []
  for (const key of awaiting.sorted()) {
    if (staleKeys.has(key)) continue
    const ref = fromRecordKey(key)
    const last = await check(client, o.namespace, ref, undefined, group, tunnelMode)
    if (last.phase === 'ready') back.push({name: ref.name, detail: last.detail})
    else waits.push({c: {...ref, agentConnected: last.phase === 'gone' ? 'Unknown' : last.phase === 'disconnected' ? 'False' : 'True'}, last})
  }
  // From here on the list holds exactly the registrations this run still waits for.
  for (const key of awaiting.sorted()) if (!waits.some((w) => recordKey(w.c) === key)) awaiting.names.delete(key)
  const waitingPresent = waits.filter((w) => present.has(recordKey(w.c))).length
  const report: RolloutReport = {
    namespace: o.namespace,
    group: o.group,
    ...(group.metadata?.generation !== undefined ? {generation: group.metadata.generation} : {}),
    registrations: total,
    selection: o.select ?? 'stale',
    upToDate: total - selected.length - waitingPresent,
    stale: stale.length,
    awaited: waits.length,
    maxUnavailable: o.maxUnavailable,
    status: 'nothing to do',
    items: [],
  }
  const connected = stale.filter((c) => c.agentConnected === 'True')
  // An auto-registered WorkloadEntry is re-made only when its sidecar reconnects: without a way to restart it, it is listed.
  const needsRestart = o.restartCommand === undefined ? connected.filter((c) => c.kind === 'workloadentry') : []
  const todo = connected.filter((c) => !needsRestart.includes(c))
  const skipped = stale.filter((c) => c.agentConnected !== 'True')
  const item = (c: Candidate): Pick<RolloutItem, 'name' | 'kind' | 'address' | 'agentConnected'> => ({
    name: c.name,
    kind: c.kind,
    ...(c.address ? {address: c.address} : {}),
    agentConnected: c.agentConnected,
  })
  for (const [i, w] of waits.entries()) report.items.push({...item(w.c), result: o.dryRun ? 'planned' : 'not started', deletedEarlier: true, step: i + 1})
  for (const [i, c] of todo.entries()) report.items.push({...item(c), result: o.dryRun ? 'planned' : 'not started', step: waits.length + i + 1})
  for (const c of needsRestart) report.items.push({...item(c), result: 'needs restart', detail: "delete the entry and restart the VM's sidecar (or pass --restart-command)"})
  for (const c of skipped) report.items.push({...item(c), result: 'skipped', detail: 'agent not connected: it cannot re-onboard now; re-run the rollout once it reconnects'})
  for (const c of cannot) report.items.push({...item(c), result: 'skipped', detail: c.skip!})
  const where = `workloadgroup ${o.namespace}/${o.group}${report.generation !== undefined ? ` (generation ${report.generation})` : ''}`
  let restartOnly: RolloutReport['failure']
  const restartFailure = (): void => {
    if (needsRestart.length === 0 || report.failure) return
    report.status = 'failed'
    report.failure = restartOnly = {
      exit: ExitCode.CHECK_FAILED,
      message: `${needsRestart.length} auto-registered ${entries(needsRestart.length)} of ${where} ${are(needsRestart.length)} and ${needsRestart.length === 1 ? 'was' : 'were'} not rolled out: istiod re-makes an entry from the group only when the VM's sidecar reconnects after the entry is deleted, and meshvm cannot restart a sidecar by itself`,
      hints: [
        ...needsRestart.slice(0, 10).map((c) => `${c.name} (${c.address ?? 'no address'}): kubectl delete workloadentry ${c.name} -n ${o.namespace}, then on that VM: sudo systemctl restart istio`),
        ...(needsRestart.length > 10 ? [`… and ${needsRestart.length - 10} more (see the table)`] : []),
        `or let meshvm do both, --max-unavailable at a time: ${rolloutCommandLine(o)} --restart-command 'ssh "$MESHVM_VM_ADDRESS" sudo systemctl restart istio'`,
      ],
    }
  }
  if (o.dryRun) {
    report.status = todo.length + waits.length > 0 ? 'planned' : 'nothing to do'
    if (o.serverDryRun) {
      for (const c of todo) {
        try {
          await deleteRegistration(client, c.kind, {metadata: {name: c.name, namespace: o.namespace, uid: c.uid}}, {dryRun: true})
        } catch (err) {
          const e = asMeshvmError(err)
          report.failure = failureOf(e, `server dry run of ${where}: the API server refused to delete ${c.kind === 'war' ? 'WorkloadAutoRegistration' : 'WorkloadEntry'} ${c.name}`)
          return report
        }
      }
    }
    restartFailure()
    if (report.failure) report.status = 'planned'
    return report
  }
  // The lease is taken before anything else (forgetting what is back), so a missing permission on
  // leases, or another run, stops this one before any delete.
  if (todo.length + waits.length > 0 || awaiting.changed) {
    try {
      await awaiting.acquire()
    } catch (err) {
      const e = asMeshvmError(err)
      if (e.code === 'RolloutInProgress') throw e
      report.status = 'failed'
      report.failure = failureOf(e, `rollout of ${where} stopped before deleting anything: could not take its lease (${leaseRef(o)})`)
      return report
    }
  }
  for (const b of back) o.progress(`${b.name}, deleted by an earlier rollout, is back: ${b.detail}`)
  if (selected.length === 0 && waits.length === 0) {
    o.progress(`${where}: all ${total} registration(s) are up to date, nothing to roll out`)
    return report
  }
  const n = waits.length + todo.length
  if (n > 0) {
    const earlier = waits.length > 0 ? `${waits.length} deleted by an earlier rollout ${waits.length === 1 ? 'is' : 'are'} not back yet; ` : ''
    o.progress(
      `Rolling out ${where}: ${selected.length} of ${total} registration(s) ${are(2)}; ${earlier}re-onboarding ${todo.length}, up to ${o.maxUnavailable} at a time, waiting up to ${humanDuration(o.timeoutMs)} for each`,
    )
  }
  for (const c of skipped) o.warn(`skipping ${c.name}: its agent is not connected, so it cannot re-onboard now (re-run the rollout once it reconnects)`)
  for (const c of cannot) o.warn(`skipping ${c.name}: ${c.skip}`)
  if (n === 0) {
    restartFailure()
    return report
  }

  const byName = new Map(report.items.map((i) => [recordKey(i), i]))
  const queue = [...todo]
  const inflight: {c: Candidate; item: RolloutItem; started: number; last: Check; restart?: {done?: {code: number; last: string}}}[] = []
  for (const w of waits) {
    const item = byName.get(recordKey(w.c))!
    o.progress(`[${item.step}/${n}] waiting for ${w.c.name} to re-onboard (deleted by an earlier rollout): ${w.last.detail}`)
    inflight.push({c: w.c, item, started: Date.now(), last: w.last})
  }

  while ((queue.length > 0 && report.failure === undefined) || inflight.length > 0) {
    if (o.signal?.aborted) break
    // After Ctrl-C no new deletion starts (a delete in progress still finishes and is reported).
    while (report.failure === undefined && !o.signal?.aborted && inflight.length < o.maxUnavailable && queue.length > 0) {
      const c = queue.shift()!
      const item = byName.get(recordKey(c))!
      // Remembered before the delete, so that a run stopped at any point knows to wait for it.
      awaiting.names.add(recordKey(c))
      try {
        await awaiting.save()
      } catch (err) {
        const e = asMeshvmError(err)
        awaiting.names.delete(recordKey(c))
        settle(item, 'failed', `not deleted: could not record it in its lease: ${e.message}`)
        report.failure ??= failureOf(e, `rollout of ${where} stopped before deleting ${c.name}: could not record it in its lease (${leaseRef(o)})`)
        break
      }
      try {
        const existed = await deleteRegistration(client, c.kind, {metadata: {name: c.name, namespace: o.namespace, uid: c.uid}})
        if (c.kind === 'war') {
          o.progress(`[${item.step}/${n}] ${existed ? 'deleted' : 'already gone:'} ${c.name}; waiting for its agent to re-onboard it`)
          inflight.push({c, item, started: Date.now(), last: {phase: 'gone', detail: NOT_BACK.war}})
        } else {
          // Deleted first: a sidecar that reconnects to an existing entry keeps it as it is (istiod's registerWorkload).
          o.progress(`[${item.step}/${n}] ${existed ? 'deleted WorkloadEntry' : 'WorkloadEntry already gone:'} ${c.name}; restarting the sidecar of ${c.address ?? 'the VM'} (--restart-command)`)
          const restart: {done?: {code: number; last: string}} = {}
          void runRestart(o.restartCommand!, restartEnvironment(c, o.namespace), o.signal).then((r) => (restart.done = r))
          inflight.push({c, item, started: Date.now(), restart, last: {phase: 'gone', detail: NOT_BACK.workloadentry}})
        }
      } catch (err) {
        const e = asMeshvmError(err)
        settle(item, 'failed', `delete failed: ${e.message}`)
        report.failure ??= failureOf(e, `rollout of ${where} stopped: could not delete ${c.name}`)
        // Not deleted, so not awaited. Should this write fail, the name stays listed: harmless, as
        // the next run finds the registration present and drops it.
        awaiting.names.delete(recordKey(c))
        await awaiting.save().catch(() => undefined)
      }
    }
    if (inflight.length === 0) break
    await sleep(o.pollIntervalMs, o.signal)
    if (o.signal?.aborted) break
    try {
      await awaiting.renew()
    } catch (err) {
      const e = asMeshvmError(err)
      report.failure ??= failureOf(e, `rollout of ${where} stopped: could not renew its lease (${leaseRef(o)})`)
      for (const f of inflight.splice(0)) settle(f.item, 'failed', `deleted; not verified: ${e.message}`)
      break
    }
    try {
      group = await getGroup(client, o.namespace, o.group)
    } catch (err) {
      // The group itself went away or cannot be read: nothing in flight can be verified.
      const e = asMeshvmError(err)
      for (const f of inflight.splice(0)) settle(f.item, 'failed', `deleted; could not be verified: ${e.message}`)
      report.failure ??= failureOf(e, `rollout of ${where} stopped`)
      break
    }
    for (const f of [...inflight]) {
      const r = f.restart?.done
      if (r && r.code !== 0) {
        settle(f.item, 'failed', `deleted; the restart command exited with code ${r.code}${r.last ? `: ${r.last}` : ''}`)
        o.progress(`[${f.item.step}/${n}] ${f.c.name}: ${f.item.detail}`)
        report.failure ??= {
          exit: ExitCode.FAILURE,
          message: `rollout of ${where} stopped: the restart command for ${f.c.name} (${f.c.address ?? 'no address'}) exited with code ${r.code}`,
          hints: ['check the command by hand, e.g. with MESHVM_VM_ADDRESS set to that address'],
        }
        inflight.splice(inflight.indexOf(f), 1)
        continue
      }
      try {
        f.last = await check(client, o.namespace, f.c, f.c.uid, group, tunnelMode)
      } catch (err) {
        const e = asMeshvmError(err)
        settle(f.item, 'failed', `deleted; could not be verified: ${e.message}`)
        report.failure ??= failureOf(e, `rollout of ${where} stopped: could not check on ${f.c.name}`)
        inflight.splice(inflight.indexOf(f), 1)
        continue
      }
      const elapsed = Date.now() - f.started
      if (f.last.phase === 'ready') {
        settle(f.item, 're-onboarded', f.last.detail)
        f.item.seconds = Math.round(elapsed / 100) / 10
        o.progress(`[${f.item.step}/${n}] ${f.c.name} re-onboarded in ${elapsedText(elapsed)}: ${f.last.detail}`)
        awaiting.names.delete(recordKey(f.c))
        try {
          await awaiting.save()
        } catch (err) {
          // It is back; only the bookkeeping failed (the next run finds it ready and drops it).
          const e = asMeshvmError(err)
          report.failure ??= failureOf(e, `rollout of ${where} stopped: could not update its lease (${leaseRef(o)}) after ${f.c.name} re-onboarded`)
        }
      } else if (elapsed >= o.timeoutMs) {
        const result = FAILED_CHECKS[f.last.phase] ?? 'timed out'
        const timedOut = result === 'timed out'
        f.item.seconds = Math.round(elapsed / 100) / 10 // before the detail: the report's key order
        settle(f.item, result, `${timedOut ? 'not back connected within' : 'after'} ${humanDuration(o.timeoutMs)}: ${f.last.detail}`)
        o.progress(`[${f.item.step}/${n}] ${f.c.name} ${timedOut ? 'did not come back' : 'failed'}: ${f.item.detail}`)
        const how = timedOut ? 'did not come back connected' : result === 'unhealthy' ? 'came back but is not healthy' : 'came back from an old group snapshot'
        report.failure ??= {exit: timedOut ? ExitCode.TIMEOUT : ExitCode.CHECK_FAILED, message: `rollout of ${where} stopped: ${f.c.name} ${how} within ${humanDuration(o.timeoutMs)}`, hints: []}
      } else continue
      inflight.splice(inflight.indexOf(f), 1)
    }
  }

  if (o.signal?.aborted) {
    for (const f of inflight) settle(f.item, 'interrupted', `deleted; interrupted while waiting (${f.last.detail})`)
    report.status = 'interrupted'
    report.failure = {exit: ExitCode.INTERRUPTED, message: `rollout of ${where} interrupted`, hints: []}
  } else {
    restartFailure()
    report.status = report.failure ? 'failed' : 'complete'
  }
  // A run whose only failure is the entries it could not restart has nothing to resume.
  if (report.failure && report.failure !== restartOnly) {
    const notStarted = report.items.filter((i) => i.result === 'not started').length
    report.failure.hints.push(
      `re-run "${rolloutCommandLine(o)}" to continue: registrations already re-onboarded are up to date and are not touched again${notStarted > 0 ? ` (${notStarted} not started)` : ''}`,
    )
    const pending = awaiting.sorted()
    if (pending.length > 0) {
      report.failure.hints.push(
        `the re-run first waits for the ${pending.length} deleted registration(s) not back yet, listed in annotation ${AWAITING_ANNOTATION} of its lease; if a VM is gone for good, remove its name there (kubectl edit lease ${leaseName(o.group)} -n ${o.namespace})`,
      )
    }
    if (report.failure.exit === ExitCode.TIMEOUT) report.failure.hints.push(timeoutHint(report.items))
  }
  return report
}
