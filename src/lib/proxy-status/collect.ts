/**
 * One cluster's proxy status: istiods → syncz (concurrently) + registrations → pods when needed →
 * rows. Failures of single istiods become warnings, `NO ANSWER` rows and errors; when every istiod
 * fails, or none runs, the whole context fails (thrown).
 */
import {ExitCode, MeshvmError} from '../errors.js'
import type {KubeClient} from '../kube/client.js'
import {IstiodReadError, XDS_PORT, type IstiodPool} from '../istiod/reader.js'
import {istiodTarget, listIstiods, listPods, listRegistrations, noIstiodError, readSyncz, splitIstiods, type IstiodFailure, type IstiodPod} from './fetch.js'
import {parseAdsz, type ProxyNode} from './adsz.js'
import {selectorMatches, type Selector} from '../kube/selector.js'
import {perType, proxyStatusRows, typesIn, withVm, type ProxyStatusRow, type ProxySync} from './status.js'
import {pairVms, splitProxyId, unpairedByName, vmRecords, type VmRecord} from './vms.js'
import {compareStrings} from '../util/records.js'

export interface CollectOptions {
  istioNamespace: string
  /** --revision; without it, the default tag's revision is resolved (through the pool, once). */
  revision?: string
  /** The readers of this cluster's istiods (one port-forward each, kept across --watch frames). */
  pool: IstiodPool
  /** --xds-address: read this one istiod over xDS instead of finding istiod pods. */
  xdsAddress?: string
  /** Only proxies and registrations of this namespace (-n). */
  namespace?: string
  timeoutMs: number
  selector?: Selector
  /** Keep each VM's WorkloadEntry on its record (VmRecord.entry), for the detail view of NAME. */
  entries?: boolean
}

export interface ContextStatus {
  context: string
  rows: ProxyStatusRow[]
  /** Rows' registrations, by row name (proxy ID, or `<registration>.<namespace>` when not connected). */
  registrations: Map<string, VmRecord>
  /** Istiods that did not answer. */
  failures: IstiodFailure[]
  /** Degraded reads (registrations or pods that could not be listed). */
  warnings: string[]
  /** Registrations left out because they are connected to an istiod of another revision (named in NAME's not-found error). */
  elsewhere: VmRecord[]
}

function noAnswerRow(name: string, namespace: string | undefined, type: ProxyStatusRow['type'], istiod: IstiodPod, vm?: VmRecord): ProxyStatusRow {
  const {port: _port, address: _address, ...ref} = istiod
  const row: ProxyStatusRow = {name, type, connected: false, xds: typesIn('NO_ANSWER'), status: perType(() => 'NO ANSWER'), subscribed: [], istiod: istiod.name, istiodRef: ref, versionSkew: false}
  if (namespace) row.namespace = namespace
  return vm ? withVm(row, vm) : row
}

/** When every istiod failed: the context fails with the first failure, or a summary when they differ. */
function allFailed(failures: IstiodFailure[]): MeshvmError {
  const first = failures[0]!.error
  if (failures.length === 1 || failures.every((f) => f.kind === failures[0]!.kind && f.error.exit === first.exit)) {
    const others = failures.length > 1 ? ` (and ${failures.length - 1} more istiod${failures.length > 2 ? 's' : ''} alike)` : ''
    return new MeshvmError(first.message + others, {exit: first.exit, code: first.code, hints: first.hints})
  }
  return new MeshvmError(`none of the ${failures.length} istiods answered: ${failures.map((f) => f.error.message).join('; ')}`, {
    exit: ExitCode.UNREACHABLE,
    code: 'IstiodUnreachable',
    hints: first.hints,
  })
}

export async function collectContext(client: KubeClient, context: string, options: CollectOptions): Promise<ContextStatus> {
  // The clock of every age in this context's rows.
  const now = new Date()
  const started = Date.now()
  // The registrations are listed while the istiods are found and read: the largest list overlaps
  // the other requests. Its failure is reported only if the istiods are found.
  const resolving = options.pool.revision(options.revision)
  // The istiod pods are listed while the revision is resolved (they are split by revision here),
  // and asked for before the large registration lists: they lead to the port-forwards.
  const xdsAddress = options.xdsAddress
  const discovering = xdsAddress === undefined ? listIstiods(client, options.istioNamespace) : undefined
  discovering?.catch(() => undefined)
  // Only the records and warnings are kept (not the listed objects: no promise holding the lists
  // stays referenced here), so the objects a record does not hold are freed once the records are made.
  const recording = listRegistrations(client, {namespace: options.namespace, slim: true}).then((registrations) => ({
    warnings: registrations.warnings,
    // Labels only for -l: nothing else reads them.
    records: vmRecords(registrations.workloadEntries, registrations.wars, {labels: options.selector !== undefined, entries: options.entries === true}),
  }))
  recording.catch(() => undefined)
  // Without --revision, istioctl 1.28's default: the revision of the default tag, if there is one.
  const {revision} = await resolving
  const {selected, others} =
    xdsAddress !== undefined
      ? {selected: [{name: xdsAddress, namespace: options.istioNamespace, port: XDS_PORT, address: xdsAddress, ...(revision ? {revision} : {})}], others: []}
      : splitIstiods(await discovering!, revision)
  if (selected.length === 0) throw await noIstiodError(client, {istioNamespace: options.istioNamespace, revision, others})

  // VMs connected to another revision's istiod belong to that revision's view. The records are built
  // as soon as the registrations arrive, while the istiods' answers are still on their way.
  const otherIstiods = new Set(others.map((o) => o.name))
  const [answers, {warnings: listWarnings, records: allRecords}] = await Promise.all([
    Promise.all(selected.map((istiod) => readSyncz(options.pool, istiod, {timeoutMs: options.timeoutMs, namespace: options.namespace}))),
    recording,
  ])
  const syncs: ProxySync[] = []
  const failures: IstiodFailure[] = []
  for (const a of answers) {
    if (a.ok) syncs.push(...a.syncs)
    else failures.push(a.failure)
  }
  if (failures.length === selected.length) throw allFailed(failures)
  const warnings = [...listWarnings]
  const records: VmRecord[] = []
  const elsewhere: VmRecord[] = []
  for (const v of allRecords) (v.connected && v.istiod !== undefined && otherIstiods.has(v.istiod) ? elsewhere : records).push(v)

  // An istiod may ignore ?namespace= (older versions): filter here too.
  const inScope = options.namespace === undefined ? syncs : syncs.filter((s) => (s.namespace ?? splitProxyId(s.proxyId).namespace) === options.namespace)

  // Pods: for -l, every namespace with proxies; otherwise only where registrations are not paired by name.
  // There, the istiods holding those registrations' connections are asked what their proxies report of
  // themselves (/debug/adsz: the address), at the same time.
  const unpaired = unpairedByName(inScope, records)
  const podNamespaces = options.selector ? [...new Set(inScope.map((s) => splitProxyId(s.proxyId).namespace).filter((n) => n !== ''))] : [...unpaired.namespaces].sort()
  const failed = new Map(failures.map((f) => [f.istiod.name, f.istiod]))
  const answered = selected.filter((i) => unpaired.istiods.has(i.name) && !failed.has(i.name))
  const [pods, nodes] = await Promise.all([
    podNamespaces.length > 0 ? listPods(client, podNamespaces) : undefined,
    // Within what is left of --timeout: an istiod never costs more than the time-out.
    answered.length > 0 ? readNodes(options.pool, answered, Math.max(1, options.timeoutMs - (Date.now() - started))) : undefined,
  ])
  if (pods) warnings.push(...pods.warnings.map((w) => `${w}; ${options.selector ? 'proxies there are left out by -l' : 'VMs there may show as pods'}`))

  const pairing = pairVms({syncs: inScope, vms: records, pods, nodes})
  const vms: VmRecord[] = [...pairing.vms]
  // Proxies that are neither pods nor registered VMs, in namespaces whose pods are known: VMs without registration.
  if (pods) {
    const vmIds = new Set(vms.map((v) => v.proxyId).filter(Boolean))
    for (const s of inScope) {
      const {name, namespace} = splitProxyId(s.proxyId)
      if (!pods.listed.has(namespace) || pairing.podProxies.has(s.proxyId) || vmIds.has(s.proxyId)) continue
      vmIds.add(s.proxyId)
      vms.push({name, namespace, source: 'workloadentry', autoRegistered: false, group: '', address: '', connected: true, proxyId: s.proxyId, labels: {}})
    }
  }

  // Registered VMs whose istiod did not answer: their state is unknown, not "not connected".
  const noAnswer = vms.filter((v) => v.proxyId === undefined && v.connected && v.istiod !== undefined && failed.has(v.istiod))
  const rows = proxyStatusRows(inScope, {vms: vms.filter((v) => !noAnswer.includes(v)), now})
  for (const vm of noAnswer) rows.push(noAnswerRow(`${vm.name}.${vm.namespace}`, vm.namespace, 'vm', failed.get(vm.istiod!)!, vm))
  // One placeholder per silent istiod: its pods' rows are missing.
  for (const f of failures) rows.push(noAnswerRow('*', undefined, 'istiod', f.istiod))

  const registrationsByRow = new Map<string, VmRecord>()
  for (const v of vms) registrationsByRow.set(v.proxyId ?? `${v.name}.${v.namespace}`, v)

  const selector = options.selector
  const out = !selector
    ? rows
    : rows.filter((r) => {
        if (r.type === 'istiod') return true
        if (r.type === 'vm') return selectorMatches(selector, registrationsByRow.get(r.name)?.labels ?? {})
        const {name, namespace} = splitProxyId(r.name)
        const labels = pods?.labels.get(`${namespace}/${name}`)
        return labels !== undefined && selectorMatches(selector, labels)
      })
  for (const r of out) r.context = context
  return {context, rows: out, registrations: registrationsByRow, failures, warnings, elsewhere}
}

/**
 * What the proxies of some istiods report of themselves (/debug/adsz), merged by proxy ID. An istiod
 * whose adsz cannot be read adds nothing: its registrations are then paired by connection, or shown as
 * ambiguous, never guessed.
 */
export async function readNodes(pool: IstiodPool, istiods: IstiodPod[], timeoutMs: number): Promise<Map<string, ProxyNode>> {
  const answers = await Promise.all(
    istiods.map(async (istiod) => {
      try {
        return parseAdsz((await pool.reader(istiodTarget(istiod)).debugEndpoint('adsz', timeoutMs)).body)
      } catch (err) {
        if (err instanceof IstiodReadError) return new Map<string, ProxyNode>()
        throw err
      }
    }),
  )
  const out = new Map<string, ProxyNode>()
  for (const nodes of answers) for (const [id, node] of nodes) out.set(id, node)
  return out
}

/** Byte order, as istioctl sorts: name, then istiod, then context. */
export function sortRows(rows: ProxyStatusRow[]): ProxyStatusRow[] {
  return rows.sort((a, b) => compareStrings(a.name, b.name) || compareStrings(a.istiod ?? '', b.istiod ?? '') || compareStrings(a.context ?? '', b.context ?? ''))
}
