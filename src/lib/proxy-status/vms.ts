/**
 * From a cluster's registrations to proxy-status's VM view, and from syncz proxies to VMs. Pure.
 *
 * istiod's syncz names a VM's proxy `<hostname>.<namespace>` and says nothing else about it, while an
 * auto-registered WorkloadEntry is named `<group>-<address>` and records the istiod holding the
 * connection (`istio.io/workloadController`). A registration is paired with a proxy:
 *   1. by name: the proxy `<WorkloadEntry or WAR name>.<namespace>` (WARs, hand-written entries);
 *   2. by address: the proxy whose node metadata (istiod's /debug/adsz, adsz.ts) reports the entry's
 *      address as its first INSTANCE_IP, in the entry's namespace and group (or names the entry in
 *      WORKLOAD_ENTRY), when exactly one proxy does;
 *   3. otherwise (adsz could not be read) by connection: the one proxy of that istiod in that namespace
 *      that is not a pod, when exactly one registration and one such proxy are left (pods listed).
 * Proxies left ambiguous by (3) are still shown as VMs, with the group when all candidates share it,
 * and the registrations they may be (`candidates`), never one of them as if it were known.
 */
import {conditionOf, ownerOfKind} from '../kube/object.js'
import {registrationFromWar, workloadEntryConnection, type WarObject, type WorkloadEntryObject} from '../war/model.js'
import type {ProxyNode} from './adsz.js'
import {compareStrings} from '../util/records.js'
import type {ProxySync, VmInfo} from './status.js'
import {withoutUndefined, isRecord} from '../util/records.js'

export interface VmRecord extends VmInfo {
  source: 'war' | 'workloadentry'
  /** Auto-registered by istiod (`istio.io/autoRegistrationGroup`). */
  autoRegistered: boolean
  group: string
  workloadEntry?: string
  war?: string
  /** The WorkloadEntry's labels (or the WAR's workload labels), for -l. */
  labels: Record<string, string>
  /** The istiod pod the registration says holds the connection. */
  istiod?: string
  connectedAt?: string
  disconnectedAt?: string
  healthReason?: string
  healthMessage?: string
  healthSince?: string
  identity?: string
  sidecarVersion?: string
  agentVersion?: string
  /** The WorkloadEntry itself (shared, not copied), for the detail view: labels, conditions, annotations. */
  entry?: WorkloadEntryObject
  /** An anonymous VM proxy of ambiguous pairing: the registrations it may be (one of them, which is unknown). */
  candidates?: VmRecord[]
}

const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : typeof v === 'boolean' ? (v ? 'True' : 'False') : undefined)

/** The string values of `v`, added to `into` (a new record by default). */
function stringMap(v: unknown, into: Record<string, string> = {}): Record<string, string> {
  if (isRecord(v)) for (const k in v) if (Object.hasOwn(v, k) && typeof v[k] === 'string') into[k] = v[k]
  return into
}

/** A WorkloadEntry's labels for -l: `spec.labels` (the workload's), overridden by `metadata.labels`. */
function mergedLabels(we: WorkloadEntryObject): Record<string, string> {
  return stringMap(we.metadata?.labels, stringMap(we.spec?.labels))
}

function healthOf(we: WorkloadEntryObject | undefined): Pick<VmRecord, 'health' | 'healthReason' | 'healthMessage' | 'healthSince'> {
  const c = conditionOf(we, 'Healthy')
  if (!c) return {}
  const s = str(c.status)?.toLowerCase()
  const out: Pick<VmRecord, 'health' | 'healthReason' | 'healthMessage' | 'healthSince'> = {health: s === 'true' ? 'Healthy' : s === 'false' ? 'Unhealthy' : 'Unknown'}
  if (str(c.reason)) out.healthReason = str(c.reason)
  if (str(c.message)) out.healthMessage = str(c.message)!.replace(/\s+/g, ' ').trim()
  if (str(c.lastTransitionTime)) out.healthSince = str(c.lastTransitionTime)
  return out
}

function ownerWar(we: WorkloadEntryObject): string | undefined {
  return ownerOfKind(we, 'WorkloadAutoRegistration')?.name
}

/** The labels of every record when they are not asked for: one shared, frozen, empty record. */
const NO_LABELS: Record<string, string> = Object.freeze({}) as Record<string, string>

/**
 * One VmRecord per WAR and per WorkloadEntry not owned by a WAR, sorted by namespace and name.
 * `labels: false`: the records' labels are left empty (a caller that matches no -l selector need not
 * build a short-lived record of labels per registration).
 * `entries: false`: the records do not hold their WorkloadEntries (`entry`, read only by the detail
 * view), which are then freed with the list.
 */
export function vmRecords(workloadEntries: WorkloadEntryObject[], wars: WarObject[], options: {labels?: boolean; entries?: boolean} = {}): VmRecord[] {
  const withLabels = options.labels !== false
  const withEntries = options.entries !== false
  const out: VmRecord[] = []
  const entryOf = new Map<string, WorkloadEntryObject>()
  // The WAR owning each WorkloadEntry, looked up once (and not at all in a mesh without WARs).
  const owners = wars.length === 0 ? undefined : workloadEntries.map(ownerWar)
  workloadEntries.forEach((we, i) => {
    const war = owners?.[i]
    if (war) entryOf.set(`${we.metadata?.namespace ?? ''}/${war}`, we)
  })
  const warKeys = new Set(wars.map((w) => `${w.metadata?.namespace ?? ''}/${w.metadata?.name ?? ''}`))
  for (const war of wars) {
    const namespace = war.metadata?.namespace ?? ''
    const name = war.metadata?.name ?? ''
    const we = entryOf.get(`${namespace}/${name}`)
    const reg = registrationFromWar(war)
    const weReg = we ? workloadEntryConnection(we) : undefined
    const connected = reg.agentConnected === 'True' || (reg.agentConnected === 'Unknown' && weReg?.agentConnected === 'True')
    const labels = !withLabels ? NO_LABELS : we ? mergedLabels(we) : stringMap(war.spec?.registration?.workload?.labels)
    out.push(
      withoutUndefined({
        name,
        namespace,
        source: 'war',
        autoRegistered: false,
        group: reg.group,
        address: we?.spec?.address ?? reg.addresses[0] ?? '',
        registration: `war/${name}`,
        connected,
        workloadEntry: we?.metadata?.name,
        war: name,
        labels,
        // The WAR's connectedTo is the onboarding plane; the istiod is on the WorkloadEntry.
        istiod: connected ? weReg?.connectedTo : undefined,
        connectedAt: we?.metadata?.annotations?.['istio.io/connectedAt'],
        disconnectedAt: reg.disconnectedAt,
        identity: reg.identity || undefined,
        sidecarVersion: reg.sidecarVersion,
        agentVersion: reg.agentVersion,
        entry: withEntries ? we : undefined,
        ...healthOf(we),
      } as VmRecord),
    )
  }
  for (let i = 0; i < workloadEntries.length; i++) {
    const we = workloadEntries[i]!
    const namespace = we.metadata?.namespace ?? ''
    const war = owners?.[i]
    if (war && warKeys.has(`${namespace}/${war}`)) continue
    const name = we.metadata?.name ?? ''
    const reg = workloadEntryConnection(we)
    const annotations = we.metadata?.annotations
    const group = annotations?.['istio.io/autoRegistrationGroup']
    // Built field by field rather than copied through withoutUndefined: this runs once per entry.
    const record: VmRecord = {
      name,
      namespace,
      source: 'workloadentry',
      autoRegistered: group !== undefined,
      group: reg.group,
      address: we.spec?.address ?? '',
      registration: group !== undefined ? `auto/${group}` : `workloadentry/${name}`,
      connected: reg.agentConnected === 'True',
      workloadEntry: name,
      labels: withLabels ? mergedLabels(we) : NO_LABELS,
    }
    if (withEntries) record.entry = we
    if (reg.connectedTo !== undefined) record.istiod = reg.connectedTo
    const connectedAt = annotations?.['istio.io/connectedAt']
    if (connectedAt !== undefined) record.connectedAt = connectedAt
    if (reg.disconnectedAt !== undefined) record.disconnectedAt = reg.disconnectedAt
    if (reg.identity) record.identity = reg.identity
    out.push(Object.assign(record, healthOf(we)))
  }
  return out.sort((a, b) => compareStrings(a.namespace, b.namespace) || compareStrings(a.name, b.name))
}

/** `name.ns` split on the last dot, as istioctl does. */
export function splitProxyId(id: string): {name: string; namespace: string} {
  const i = id.lastIndexOf('.')
  return i > 0 ? {name: id.slice(0, i), namespace: id.slice(i + 1)} : {name: id, namespace: ''}
}

export interface PairingInput {
  syncs: ProxySync[]
  vms: VmRecord[]
  /** Pods by `namespace/name`, and the namespaces that were listed; undefined when pods were not listed. */
  pods?: {labels: Map<string, Record<string, string>>; listed: Set<string>}
  /** What the proxies report of themselves (istiod's /debug/adsz), by proxy ID; undefined when not read. */
  nodes?: Map<string, ProxyNode>
}

export interface Pairing {
  /** VmInfos for proxyStatusRows: paired records (proxyId set), unpaired records, and anonymous VM proxies. */
  vms: VmRecord[]
  /** Records represented by an ambiguous VM proxy (connected, but which proxy is theirs is unknown). */
  represented: VmRecord[]
  /** Proxy IDs that are known pods. */
  podProxies: Set<string>
}

/**
 * The connected registrations no proxy is named after: their namespaces (pods there must be known)
 * and the istiods they name (whose /debug/adsz can pair them by address).
 */
export function unpairedByName(syncs: ProxySync[], vms: VmRecord[]): {namespaces: Set<string>; istiods: Set<string>} {
  const ids = new Set<string>()
  for (const s of syncs) ids.add(s.proxyId)
  const namespaces = new Set<string>()
  const istiods = new Set<string>()
  for (const vm of vms) {
    if (!(vm.connected && vm.istiod)) continue
    if (namespaces.has(vm.namespace) && istiods.has(vm.istiod)) continue
    if (!nameCandidates(vm).some((id) => ids.has(id))) {
      namespaces.add(vm.namespace)
      istiods.add(vm.istiod)
    }
  }
  return {namespaces, istiods}
}

/**
 * The proxy IDs a registration's VM may have, most likely first, without repeats. Kept per record
 * (unpairedByName and pairVms both ask, once per registration of the mesh): the IDs are
 * built, and hashed for the Set lookups, once.
 */
const candidatesOf = new WeakMap<VmRecord, string[]>()
function nameCandidates(vm: VmRecord): string[] {
  let out = candidatesOf.get(vm)
  if (out !== undefined) return out
  // The usual record: a WorkloadEntry (no WAR) named as its VM, one candidate.
  if (vm.war === undefined && (vm.workloadEntry === undefined || vm.workloadEntry === vm.name)) {
    out = [`${vm.name}.${vm.namespace}`]
    candidatesOf.set(vm, out)
    return out
  }
  out = []
  const names: string[] = []
  for (const n of [vm.war, vm.workloadEntry, vm.name]) {
    // Same namespace for all three: equal names give equal IDs, so repeats are dropped before joining.
    if (n === undefined || names.includes(n)) continue
    names.push(n)
    out.push(`${n}.${vm.namespace}`)
  }
  candidatesOf.set(vm, out)
  return out
}

/**
 * A record paired with its proxy: connected, under that ID. Updated rather than copied: records are
 * built per snapshot and read only after pairing, and a spread copy of records of varying shapes is slow.
 */
function paired(vm: VmRecord, proxyId: string): VmRecord {
  vm.proxyId = proxyId
  vm.connected = true
  return vm
}

/** Pairs registrations with proxies (see above). Paired records are updated in place (proxyId, connected). */
export function pairVms(input: PairingInput): Pairing {
  const ids = new Set<string>()
  for (const s of input.syncs) ids.add(s.proxyId)
  const pods = input.pods
  const podProxies = new Set<string>()
  if (pods) {
    for (const id of ids) {
      const {name, namespace} = splitProxyId(id)
      if (pods.labels.has(`${namespace}/${name}`)) podProxies.add(id)
    }
  }
  const taken = new Set<string>()
  const out: VmRecord[] = []
  const waiting: VmRecord[] = []
  // 1. by name
  for (const vm of input.vms) {
    const id = nameCandidates(vm).find((c) => ids.has(c) && !podProxies.has(c) && !taken.has(c))
    if (id) {
      taken.add(id)
      out.push(paired(vm, id))
    } else waiting.push(vm)
  }
  // 2. by address: what the proxy reports of itself (adsz), exactly one proxy
  const nodes = input.nodes
  let unpaired = waiting
  if (nodes !== undefined && nodes.size > 0) {
    unpaired = []
    const index = nodeIndex(nodes)
    for (const vm of waiting) {
      const id = addressMatch(vm, index, podProxies, taken, ids)
      if (id) {
        taken.add(id)
        out.push(paired(vm, id))
      } else unpaired.push(vm)
    }
  }
  // 3. by connection (istiod + namespace), only where pods are known
  const represented: VmRecord[] = []
  const buckets = new Map<string, VmRecord[]>()
  const rest: VmRecord[] = []
  for (const vm of unpaired) {
    if (vm.connected && vm.istiod && input.pods?.listed.has(vm.namespace)) {
      const key = `${vm.istiod}/${vm.namespace}`
      buckets.set(key, [...(buckets.get(key) ?? []), vm])
    } else rest.push(vm)
  }
  for (const [key, records] of buckets) {
    const [istiod, namespace] = [key.slice(0, key.lastIndexOf('/')), key.slice(key.lastIndexOf('/') + 1)]
    const candidates = input.syncs
      .filter((s) => s.istiod.name === istiod && splitProxyId(s.proxyId).namespace === namespace && !podProxies.has(s.proxyId) && !taken.has(s.proxyId))
      .map((s) => s.proxyId)
    const unique = [...new Set(candidates)]
    if (unique.length === 0) {
      rest.push(...records)
    } else if (unique.length === 1 && records.length === 1) {
      taken.add(unique[0]!)
      out.push(paired(records[0]!, unique[0]!))
    } else {
      const groups = [...new Set(records.map((r) => r.group))]
      const group = groups.length === 1 && groups[0] ? groups[0] : undefined
      // The labels every candidate registration has (for -l).
      const labels = Object.fromEntries(Object.entries(records[0]!.labels).filter(([k, v]) => records.every((r) => r.labels[k] === v)))
      for (const id of unique) {
        taken.add(id)
        const {name} = splitProxyId(id)
        out.push({
          name,
          namespace,
          source: 'workloadentry',
          autoRegistered: true,
          group: group ?? '',
          address: '',
          connected: true,
          proxyId: id,
          labels,
          istiod,
          ...(group ? {registration: `auto/${group}`} : {}),
          candidates: records,
        })
      }
      represented.push(...records)
    }
  }
  return {vms: [...out, ...rest], represented, podProxies}
}

/** The proxies of an adsz answer by `namespace/first IP` and `namespace/WORKLOAD_ENTRY`, built once per pairing. */
function nodeIndex(nodes: Map<string, ProxyNode>): Map<string, ProxyNode[]> {
  const index = new Map<string, ProxyNode[]>()
  const add = (key: string, node: ProxyNode) => {
    const list = index.get(key)
    if (list) list.push(node)
    else index.set(key, [node])
  }
  for (const node of nodes.values()) {
    const ns = node.namespace ?? splitProxyId(node.proxyId).namespace
    if (node.ips[0] !== undefined) add(`ip/${ns}/${node.ips[0]}`, node)
    if (node.workloadEntry !== undefined) add(`we/${ns}/${node.workloadEntry}`, node)
  }
  return index
}

/**
 * The one proxy whose node metadata names this registration: its WorkloadEntry in WORKLOAD_ENTRY, or
 * its address as the first INSTANCE_IP (what istiod writes into an auto-registered entry), in its
 * namespace and, for an auto-registered entry, its group. Undefined when none or several do.
 */
function addressMatch(vm: VmRecord, index: Map<string, ProxyNode[]>, pods: Set<string>, taken: Set<string>, reported: Set<string>): string | undefined {
  const usable = (n: ProxyNode) => reported.has(n.proxyId) && !pods.has(n.proxyId) && !taken.has(n.proxyId)
  const byEntry = vm.workloadEntry === undefined ? [] : (index.get(`we/${vm.namespace}/${vm.workloadEntry}`) ?? []).filter(usable)
  const byAddress =
    vm.address === ''
      ? []
      : (index.get(`ip/${vm.namespace}/${vm.address}`) ?? []).filter((n) => usable(n) && (n.autoRegisterGroup === undefined || !vm.autoRegistered || n.autoRegisterGroup === vm.group))
  const ids = new Set([...byEntry, ...byAddress].map((n) => n.proxyId))
  return ids.size === 1 ? [...ids][0] : undefined
}
