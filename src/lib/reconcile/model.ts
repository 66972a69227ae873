/**
 * `meshvm war reconcile`: joins, across every context given, the WorkloadEntries, the
 * WorkloadAutoRegistrations, the WorkloadGroups and the proxies every istiod reports connected
 * (its /debug/syncz), and says what does not add up, each finding with its reason and its fix.
 * Pure: the command collects (src/lib/reconcile/collect.ts), this module judges.
 *
 * Registrations are paired with proxies as proxy-status pairs them (src/lib/proxy-status/vms.ts:
 * by name, else by istiod + namespace). Only auto-registered WorkloadEntries (istio.io/
 * autoRegistrationGroup) and WAR-owned ones are judged for connection: a hand-written
 * WorkloadEntry says nothing about a sidecar.
 *
 * The JSON report (`-o json`) is versioned: apiVersion meshvm.io/v1alpha1, kind ReconcileReport;
 * fields are only ever added. See docs/war.md#meshvm-war-reconcile for the schema.
 */
import {ownerOfKind} from '../kube/object.js'
import {compareStrings} from '../util/records.js'
import {shellQuote} from '../cli/prompt.js'
import {missingTunnelLabels, type HboneEvidence} from '../war/hbone.js'
import {pairVms, splitProxyId, vmRecords, type VmRecord} from '../proxy-status/vms.js'
import type {ProxySync} from '../proxy-status/status.js'
import {
  isAutoRegisteredWorkloadEntry,
  registrationFromWar,
  registrationFromWorkloadEntry,
  TUNNEL_LABEL,
  WE_ANNOTATIONS,
  type WarObject,
  type WorkloadEntryObject,
  type WorkloadGroup,
} from '../war/model.js'

export const FINDING_TYPES = ['DanglingEntry', 'UnregisteredProxy', 'DuplicateAddress', 'OrphanedEntry', 'OrphanedRegistration', 'StaleRegistration', 'MissingTunnelLabel'] as const
export type FindingType = (typeof FINDING_TYPES)[number]

export interface ObjectRef {
  context: string
  kind: 'WorkloadEntry' | 'WorkloadAutoRegistration' | 'Proxy'
  namespace: string
  name: string
}

/** A delete that --fix may make: only of the object read, guarded by its uid and resourceVersion. */
export interface SafeFix {
  action: 'delete'
  context: string
  kind: 'WorkloadEntry'
  namespace: string
  name: string
  uid: string
  resourceVersion: string
}

export interface Finding extends ObjectRef {
  type: FindingType
  severity: 'error' | 'warning'
  reason: string
  fix: string
  related: ObjectRef[]
  safeFix?: SafeFix
}

export interface ContextSnapshot {
  context: string
  workloadEntries: WorkloadEntryObject[]
  wars: WarObject[]
  groups: WorkloadGroup[]
  /** Every istiod that answered, with its proxies; istiods that did not are in `unreadIstiods`. */
  istiods: string[]
  unreadIstiods: {name: string; error: string}[]
  syncs: ProxySync[]
  /** Pods of the namespaces proxies are in, to tell pods from VMs. */
  pods?: {labels: Map<string, Record<string, string>>; listed: Set<string>}
  /** What tells HBONE-capable proxies (war/hbone.ts): mesh configs and istiod revisions and versions. */
  hbone?: HboneEvidence
}

export interface ReconcileOptions {
  now: Date
  gracePeriodMs: number
}

export interface ContextSummary {
  name: string
  istiods: string[]
  unreadIstiods: {name: string; error: string}[]
  workloadEntries: number
  workloadAutoRegistrations: number
  workloadGroups: number
  proxies: number
}

export interface ReconcileReport {
  apiVersion: 'meshvm.io/v1alpha1'
  kind: 'ReconcileReport'
  generatedAt: string
  gracePeriodSeconds: number
  contexts: ContextSummary[]
  findings: Finding[]
}

const nsName = (o: {metadata?: {namespace?: string; name?: string}}) => `${o.metadata?.namespace ?? ''}/${o.metadata?.name ?? ''}`
const ctxFlag = (context: string) => ` --context ${q(context)}`
const q = shellQuote

/** Since when the entry has been in its current state: disconnected since, else connected since, else made. */
function lastSeen(we: WorkloadEntryObject): number | undefined {
  const a = we.metadata?.annotations ?? {}
  for (const t of [a[WE_ANNOTATIONS.disconnectedAt], a[WE_ANNOTATIONS.connectedAt], we.metadata?.creationTimestamp]) {
    const ms = t ? Date.parse(t) : Number.NaN
    if (!Number.isNaN(ms)) return ms
  }
  return undefined
}

function humanMs(ms: number): string {
  const s = Math.round(ms / 1000)
  if (s < 120) return `${s}s`
  const m = Math.round(s / 60)
  return m < 180 ? `${m}m` : `${Math.round(m / 60)}h`
}

export function reconcile(snapshots: ContextSnapshot[], o: ReconcileOptions): ReconcileReport {
  const findings: Finding[] = []
  /** A finding; `related` is empty unless given. */
  const add = (f: Omit<Finding, 'related'> & {related?: ObjectRef[]}): void => {
    findings.push({...f, related: f.related ?? []})
  }
  const orphaned = (ref: ObjectRef, groupName: string, fix: string): void =>
    add({...ref, type: 'OrphanedEntry', severity: 'error', reason: `owned by WorkloadGroup ${ref.namespace}/${groupName}, which does not exist`, fix})
  const now = o.now.getTime()
  // Proxy IDs connected anywhere: a VM registered in one cluster may hold its connection to another's istiod.
  const connectedAnywhere = new Set(snapshots.flatMap((s) => s.syncs.map((p) => p.proxyId)))

  for (const snap of snapshots) {
    const {context} = snap
    const groups = new Map(snap.groups.map((g) => [nsName(g), g]))
    const records = vmRecords(snap.workloadEntries, snap.wars)
    const pairing = pairVms({syncs: snap.syncs, vms: records, pods: snap.pods})
    const pairedByRegistration = new Map<string, VmRecord>()
    for (const v of pairing.vms) if (v.proxyId) pairedByRegistration.set(`${v.source}/${v.namespace}/${v.war ?? v.workloadEntry ?? v.name}`, v)
    const represented = new Set(pairing.represented.map((v) => `${v.source}/${v.namespace}/${v.war ?? v.workloadEntry ?? v.name}`))
    const unread = new Set(snap.unreadIstiods.map((i) => i.name))
    const wesByWar = new Map<string, WorkloadEntryObject>()
    for (const we of snap.workloadEntries) {
      const war = ownerOfKind(we, 'WorkloadAutoRegistration')?.name
      if (war) wesByWar.set(`${we.metadata?.namespace ?? ''}/${war}`, we)
    }
    const warKeys = new Set(snap.wars.map(nsName))
    const refOf = (o: WorkloadEntryObject | WarObject, kind: ObjectRef['kind']): ObjectRef => ({context, kind, namespace: o.metadata?.namespace ?? '', name: o.metadata?.name ?? ''})

    // --- WorkloadEntries: dangling, orphaned, stale ---
    for (const we of snap.workloadEntries) {
      const ref = refOf(we, 'WorkloadEntry')
      const {namespace, name} = ref
      const auto = isAutoRegisteredWorkloadEntry(we)
      const war = ownerOfKind(we, 'WorkloadAutoRegistration')?.name
      const groupName = we.metadata?.annotations?.[WE_ANNOTATIONS.autoRegistrationGroup] ?? ownerOfKind(we, 'WorkloadGroup')?.name
      const group = groupName ? groups.get(`${namespace}/${groupName}`) : undefined

      if (groupName && !group) {
        orphaned(
          ref,
          groupName,
          `recreate the group (meshvm onboard ${q(groupName)} -n ${q(namespace)} … --apply), or delete the entry: kubectl delete workloadentry ${q(name)} -n ${q(namespace)}${ctxFlag(context)}`,
        )
      }
      if (war && !warKeys.has(`${namespace}/${war}`)) continue // judged with its WAR below, or garbage-collected
      if (!auto || war) continue
      const key = `workloadentry/${namespace}/${name}`
      const paired = pairedByRegistration.get(key)
      const reg = registrationFromWorkloadEntry(we, group)
      if (paired || represented.has(key) || connectedAnywhere.has(`${name}.${namespace}`)) {
        if (group && reg.stale) {
          add({
            ...ref,
            type: 'StaleRegistration',
            severity: 'warning',
            reason: `made from an older version of WorkloadGroup ${namespace}/${groupName} (labels, ports, service account or network differ)`,
            fix: `re-onboard the VMs of the group: meshvm war rollout ${q(groupName!)} -n ${q(namespace)}${ctxFlag(context)}`,
          })
        }
        continue
      }
      // No proxy: is that known (its istiod answered), and for longer than the grace period?
      const holder = we.metadata?.annotations?.[WE_ANNOTATIONS.workloadController]
      if (snap.istiods.length === 0 || (holder && unread.has(holder))) continue
      const seen = lastSeen(we)
      if (seen === undefined || now - seen <= o.gracePeriodMs) continue
      const since = humanMs(now - seen)
      const resourceVersion = we.metadata?.resourceVersion
      const uid = we.metadata?.uid
      add({
        ...ref,
        type: 'DanglingEntry',
        severity: 'error',
        reason:
          reg.agentConnected === 'False'
            ? `no proxy connected: disconnected ${since} ago (istiod's grace period has passed, yet the entry is still here)`
            : `marked connected to ${holder ?? 'an istiod'}, but no istiod reports its proxy (last change ${since} ago)`,
        fix: `delete it (the VM re-registers when its sidecar reconnects): meshvm war reconcile --fix, or kubectl delete workloadentry ${q(name)} -n ${q(namespace)}${ctxFlag(context)}`,
        related: [],
        ...(uid && resourceVersion ? {safeFix: {action: 'delete' as const, context, kind: 'WorkloadEntry' as const, namespace, name, uid, resourceVersion}} : {}),
      })
    }

    // --- WorkloadAutoRegistrations: entry gone, disconnected, stale ---
    for (const war of snap.wars) {
      const ref = refOf(war, 'WorkloadAutoRegistration')
      const {namespace, name} = ref
      const we = wesByWar.get(`${namespace}/${name}`)
      const groupName = ownerOfKind(war, 'WorkloadGroup')?.name
      const group = groupName ? groups.get(`${namespace}/${groupName}`) : undefined
      const reg = registrationFromWar(war, group, we)
      if (!we) {
        add({
          ...ref,
          type: 'OrphanedRegistration',
          severity: 'error',
          reason: 'its WorkloadEntry is gone: the mesh has no endpoint for this VM',
          fix: `re-onboard the VM (its agent re-creates the entry on reconnect), or remove the registration: meshvm war delete ${q(name)} -n ${q(namespace)}${ctxFlag(context)}`,
        })
      }
      if (groupName && !group) orphaned(ref, groupName, `recreate the group, or remove the registration: meshvm war delete ${q(name)} -n ${q(namespace)}${ctxFlag(context)}`)
      const key = `war/${namespace}/${name}`
      const connected = pairedByRegistration.has(key) || represented.has(key) || connectedAnywhere.has(`${name}.${namespace}`)
      if (!connected && reg.agentConnected === 'False' && reg.disconnectedAt && now - Date.parse(reg.disconnectedAt) > o.gracePeriodMs && snap.istiods.length > 0) {
        add({
          ...ref,
          type: 'DanglingEntry',
          severity: 'warning',
          reason: `agent disconnected ${humanMs(now - Date.parse(reg.disconnectedAt))} ago and no istiod reports its proxy`,
          fix: `meshvm war prune -n ${q(namespace)} --grace-period ${Math.ceil(o.gracePeriodMs / 1000)}s --yes${ctxFlag(context)} (the onboarding plane owns WARs: --fix leaves them alone)`,
          related: we ? [{context, kind: 'WorkloadEntry', namespace, name: we.metadata?.name ?? ''}] : [],
        })
      }
      if (reg.stale) {
        add({
          ...ref,
          type: 'StaleRegistration',
          severity: 'warning',
          reason: `its snapshot of WorkloadGroup ${namespace}/${groupName ?? reg.group} is older than the group`,
          fix: `meshvm war rollout ${q(groupName ?? reg.group)} -n ${q(namespace)}${ctxFlag(context)}`,
        })
      }
    }

    // --- HBONE-capable proxies whose entries predate the tunnel label (Istio 1.31, release note 60788) ---
    if (snap.hbone) {
      for (const m of missingTunnelLabels(snap.workloadEntries, snap.hbone)) {
        const label = `kubectl label workloadentry ${q(m.name)} -n ${q(m.namespace)} ${TUNNEL_LABEL}=http${ctxFlag(context)}`
        const holder = m.istiod ? `istiod ${m.istiod} (${snap.hbone.istiods.get(m.istiod)?.version ?? 'version unknown'})` : 'its istiod'
        add({
          context,
          kind: 'WorkloadEntry',
          namespace: m.namespace,
          name: m.name,
          type: 'MissingTunnelLabel',
          severity: 'warning',
          reason: `no ${TUNNEL_LABEL} label, though its proxy is HBONE-capable (${m.because}): it was registered before istiod labelled new entries (Istio 1.31, release note 60788), so ambient workloads reach it over plaintext`,
          fix:
            m.labelsOnRegistration === false
              ? `${holder} is older than 1.31 and would re-register it without the label: label it: ${label}`
              : `re-register the group's entries, --max-unavailable at a time, with health gates: meshvm war rollout ${q(m.group)} -n ${q(m.namespace)} --missing-tunnel-label --restart-command '…'${ctxFlag(context)}; or label it: ${label}`,
        })
      }
    }

    // --- proxies that no registration accounts for ---
    if (snap.pods) {
      // Paired by name to a registration; the rest are paired by istiod + namespace, where syncz
      // (hostnames) and auto-registered entries (named by address) cannot be matched one to one:
      // there, only a surplus of proxies over registrations can be told.
      const byName = new Set(pairing.vms.filter((v) => v.proxyId && (v.workloadEntry || v.war)).map((v) => v.proxyId!))
      const registeredNames = new Set(snapshots.flatMap((s) => [...s.workloadEntries, ...s.wars].map((x) => `${x.metadata?.name ?? ''}.${x.metadata?.namespace ?? ''}`)))
      const buckets = new Map<string, {istiod: string; namespace: string; proxies: Set<string>}>()
      for (const p of snap.syncs) {
        const {namespace} = splitProxyId(p.proxyId)
        if (!snap.pods.listed.has(namespace) || pairing.podProxies.has(p.proxyId) || byName.has(p.proxyId) || registeredNames.has(p.proxyId)) continue
        if (p.proxyType && p.proxyType !== 'sidecar') continue
        const key = `${p.istiod.name}/${namespace}`
        const b = buckets.get(key) ?? {istiod: p.istiod.name, namespace, proxies: new Set<string>()}
        b.proxies.add(p.proxyId)
        buckets.set(key, b)
      }
      const registrationsIn = (istiod: string, namespace: string) => pairing.represented.filter((v) => v.istiod === istiod && v.namespace === namespace).length
      for (const b of buckets.values()) {
        const ids = [...b.proxies].sort()
        const registered = registrationsIn(b.istiod, b.namespace)
        if (ids.length <= registered) continue
        if (registered === 0) {
          for (const id of ids) {
            add({
              context,
              kind: 'Proxy',
              namespace: b.namespace,
              name: splitProxyId(id).name,
              type: 'UnregisteredProxy',
              severity: 'error',
              reason: `a VM sidecar connected to istiod ${b.istiod} that no WorkloadEntry or WorkloadAutoRegistration stands for: the mesh sends it configuration but no traffic`,
              fix: `auto-register it (meshvm bundle GROUP -n ${q(b.namespace)} --autoregister, then restart its sidecar), or add a WorkloadEntry for its address`,
            })
          }
        } else {
          add({
            context,
            kind: 'Proxy',
            namespace: b.namespace,
            name: ids.map((id) => splitProxyId(id).name).join(','),
            type: 'UnregisteredProxy',
            severity: 'warning',
            reason: `${ids.length} VM sidecars connected to istiod ${b.istiod} in namespace ${b.namespace} but only ${registered} auto-registered entries: ${ids.length - registered} of them have no registration (which ones cannot be told from syncz)`,
            fix: `compare each VM's address with the entries: meshvm proxy-status --vms -n ${q(b.namespace)}${ctxFlag(context)} -o wide`,
          })
        }
      }
    }
  }

  // --- the same address and network twice (across every context) ---
  const byAddress = new Map<string, {context: string; we: WorkloadEntryObject}[]>()
  for (const snap of snapshots) {
    for (const we of snap.workloadEntries) {
      const address = we.spec?.address
      if (!address) continue
      const key = `${address}\u0000${we.spec?.network ?? ''}`
      byAddress.set(key, [...(byAddress.get(key) ?? []), {context: snap.context, we}])
    }
  }
  for (const [key, entries] of byAddress) {
    if (entries.length < 2) continue
    const [address, network] = key.split('\u0000') as [string, string]
    const refs: ObjectRef[] = entries.map((e) => ({context: e.context, kind: 'WorkloadEntry', namespace: e.we.metadata?.namespace ?? '', name: e.we.metadata?.name ?? ''}))
    refs.sort((a, b) => compareStrings(a.context, b.context) || compareStrings(a.namespace, b.namespace) || compareStrings(a.name, b.name))
    const [first, ...rest] = refs
    add({
      ...first!,
      type: 'DuplicateAddress',
      severity: 'error',
      reason: `${entries.length} WorkloadEntries have address ${address}${network ? ` on network ${network}` : ' (no network)'}: traffic for one is load-balanced to the other`,
      fix: 'keep the one whose VM is connected (see the DanglingEntry findings) and delete the others: kubectl delete workloadentry NAME -n NS --context CONTEXT',
      related: rest,
    })
  }

  const order = (f: Finding) => FINDING_TYPES.indexOf(f.type)
  findings.sort((a, b) => order(a) - order(b) || compareStrings(a.context, b.context) || compareStrings(a.namespace, b.namespace) || compareStrings(a.name, b.name) || compareStrings(a.kind, b.kind))
  return {
    apiVersion: 'meshvm.io/v1alpha1',
    kind: 'ReconcileReport',
    generatedAt: o.now.toISOString(),
    gracePeriodSeconds: Math.round(o.gracePeriodMs / 1000),
    contexts: snapshots.map((s) => ({
      name: s.context,
      istiods: [...s.istiods].sort(),
      unreadIstiods: s.unreadIstiods,
      workloadEntries: s.workloadEntries.length,
      workloadAutoRegistrations: s.wars.length,
      workloadGroups: s.groups.length,
      proxies: new Set(s.syncs.map((p) => p.proxyId)).size,
    })),
    findings,
  }
}
