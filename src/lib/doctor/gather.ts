/**
 * `meshvm doctor`: everything read about one VM, from the cluster (and, with --vm-exec, from the VM),
 * into an Evidence for diagnose.ts. Reads only; a read that fails is evidence too (a check that says
 * why), never a crash half-way through the chain.
 */
import {isIP} from 'node:net'
import {MeshvmError} from '../errors.js'
import type {KubeClient} from '../kube/client.js'
import {annotationsOf, labelsOf, ownerOfKind, type KubeObject} from '../kube/object.js'
import {Resources, resourcePath} from '../kube/resources.js'
import {istiodDeploymentEnv, istiodServiceName, resolveRevision, revisionOrUndefined} from '../istiod/revision.js'
import {parseIstiodAddress, type OfflineResult} from '../bundle-verify/offline.js'
import {versionFromImage} from '../proxy-status/fetch.js'
import {staleDifference, type EventLike} from '../war/model.js'
import {entryStaleAgainstGroup, probeOf, str, type Evidence, type SyncEvidence} from './diagnose.js'
import {eastWestGatewayKind, gatewayAddress, type GatewayServiceLike} from '../precheck/gateway.js'
import {gatewayService as ingressServiceRef} from '../bundle/fetch.js'
import {istiodPods, podReady, rec} from '../precheck/checks.js'
import {isPort, parseProbe, pemSerials, probeScript, runVmExec, safeProbePath, type AppTarget} from './probe.js'
import type {ProxyStatusRow} from '../proxy-status/model.js'

export interface Target {
  /** What the user asked about: a registration or WorkloadEntry name, HOSTNAME.NAMESPACE, or an address. */
  query?: string
  /** The bundle checked with --bundle (its offline result; live checks are added by the caller). */
  bundle?: OfflineResult
}

export interface GatherOptions {
  namespace: string
  istioNamespace: string
  revision?: string
  ingressService: string
  vmExec?: string
  timeoutMs: number
  now: Date
  context?: string
  /** The proxy rows of the namespace (proxy-status's snapshot, read once), or why they could not be read. */
  rows: () => Promise<{rows: ProxyStatusRow[]; registrationOf: (row: ProxyStatusRow) => {name: string} | undefined} | {error: string}>
}

type EventObject = KubeObject & EventLike

/** A pod's first container (istiod's discovery container). */
const containerOf = (pod: KubeObject | undefined) => (pod?.spec as {containers?: {image?: string; env?: {name?: string; value?: string}[]}[]} | undefined)?.containers?.[0]

const addressOf = (entry: KubeObject | undefined) => str((entry?.spec as {address?: unknown} | undefined)?.address)

async function listIn(client: KubeClient, res: (typeof Resources)[keyof typeof Resources], namespace: string, query?: Record<string, string>): Promise<KubeObject[]> {
  return client.list<KubeObject>(resourcePath(res, {namespace}), query)
}

/** Hosts-file lines `ADDRESS NAME…`: the address given for `host`. */
function hostsAddress(hosts: string | undefined, host: string | undefined): string | undefined {
  if (!hosts || !host) return undefined
  for (const line of hosts.split('\n')) {
    const words = line.replace(/#.*/, '').trim().split(/\s+/)
    if (words.length > 1 && words.slice(1).includes(host)) return words[0]
  }
  return undefined
}

/** Whether a WorkloadEntry belongs to a WorkloadGroup: auto-registered from it, or owned by it. */
export const inGroup = (entry: KubeObject, group: string): boolean => annotationsOf(entry)['istio.io/autoRegistrationGroup'] === group || ownerOfKind(entry, 'WorkloadGroup')?.name === group

/** The WorkloadEntry the query names: by name, by its WAR's name, by address, or the one entry of the bundle's group. */
function findEntry(entries: KubeObject[], wars: KubeObject[], query: string | undefined, group: string | undefined): {entry?: KubeObject; war?: KubeObject; ambiguous?: string[]} {
  const named = (list: KubeObject[], n: string | undefined) => list.find((x) => x.metadata?.name === n)
  const withWar = (entry: KubeObject | undefined) => ({entry, war: named(wars, ownerOfKind(entry, 'WorkloadAutoRegistration')?.name)})
  if (query !== undefined) {
    if (isIP(query) !== 0) {
      const at = entries.filter((e) => addressOf(e) === query)
      return at.length > 1 ? {entry: at[0], ambiguous: at.map((e) => e.metadata?.name ?? '?')} : {entry: at[0]}
    }
    const war = named(wars, query)
    if (war) return {war, entry: entries.find((e) => ownerOfKind(e, 'WorkloadAutoRegistration')?.name === query)}
    const entry = named(entries, query)
    if (entry) return withWar(entry)
    // A WorkloadGroup's name: its one VM.
    group = query
  }
  if (group !== undefined) {
    const of = entries.filter((e) => inGroup(e, group!))
    if (of.length === 1) return withWar(of[0])
    if (of.length > 1) return {ambiguous: of.map((e) => e.metadata?.name ?? '?')}
  }
  return {}
}

export async function gatherEvidence(client: KubeClient, target: Target, o: GatherOptions): Promise<Evidence & {ambiguous?: string[]}> {
  const bundle = target.bundle
  const namespace = bundle?.env.POD_NAMESPACE ?? o.namespace
  let query = target.query

  const [entries, wars, services, serviceEntries] = await Promise.all([
    listIn(client, Resources.workloadEntries, namespace),
    listIn(client, Resources.workloadAutoRegistrations, namespace).catch(() => [] as KubeObject[]), // no WAR CRD: no WARs
    listIn(client, Resources.services, namespace),
    listIn(client, Resources.serviceEntries, namespace),
  ])

  // HOSTNAME.NAMESPACE (the proxy ID istiod knows a VM by): the registration the proxy is paired with.
  // A proxy istiod reports with no registration (auto-registration off, or a bundle made without
  // --autoregister) is still the VM asked about: doctor then says why it has no entry.
  let found = findEntry(entries, wars, query, bundle?.env.ISTIO_META_WORKLOAD_NAME)
  let proxyRow: ProxyStatusRow | undefined
  if (!found.entry && !found.war && query !== undefined && (isIP(query) !== 0 || query.includes('.'))) {
    const r = await o.rows()
    if (!('error' in r)) {
      // By address: the proxy whose node metadata (istiod's /debug/adsz) reports it in INSTANCE_IPS, which
      // is the only place an unregistered VM's address shows (its proxy ID is HOSTNAME.NAMESPACE).
      const asked = query
      const byAddress = isIP(asked) !== 0
      const proxies = r.rows.filter((x) => x.type !== 'istiod')
      let row = proxies.find((x) => x.name === asked || (byAddress && x.address === asked))
      if (!row && byAddress) {
        const id = await proxyAtAddress(client, o, asked, namespace)
        row = proxies.find((x) => x.name === id)
      }
      const reg = row ? r.registrationOf(row) : undefined
      if (reg) found = findEntry(entries, wars, reg.name, undefined)
      else if (row?.address && !byAddress) found = findEntry(entries, wars, row.address, undefined)
      if (!found.entry && !found.war && row?.connected) proxyRow = row
    }
  }
  const entry = found.entry
  const groupName =
    str(annotationsOf(entry)['istio.io/autoRegistrationGroup']) ??
    ownerOfKind(entry, 'WorkloadGroup')?.name ??
    str((found.war?.spec as {workloadGroup?: unknown} | undefined)?.workloadGroup) ??
    bundle?.env.ISTIO_META_WORKLOAD_NAME ??
    (entry || proxyRow ? undefined : query)
  query ??= groupName ?? '(bundle)'

  const group = groupName ? await client.getOptional<KubeObject>(resourcePath(Resources.workloadGroups, {namespace, name: groupName})) : undefined

  // The revision: the one the bundle names (istiod-REV), else --revision, else the default tag.
  const bundleRevision = bundle?.discoveryAddress ? parseIstiodAddress(bundle.discoveryAddress)?.revision : undefined
  const revision = bundleRevision ?? revisionOrUndefined((await resolveRevision(client, o.revision)).revision)
  const {ofRevision} = await istiodPods(client, o.istioNamespace, revision)
  const pods = ofRevision.map((p) => ({name: p.metadata?.name ?? '?', ready: podReady(p), version: versionFromImage(containerOf(p)?.image)}))
  // The Deployment's environment: what the next istiod pod runs with (the pod's, when there is none).
  const podEnv = (containerOf(ofRevision[0])?.env ?? []).flatMap((v) => (v.name && typeof v.value === 'string' ? [[v.name, v.value] as const] : []))
  const env: Record<string, string> = Object.fromEntries((await istiodDeploymentEnv(client, o.istioNamespace, revision)) ?? podEnv)

  // The way in: the east-west gateway and the networks.
  let [gwName, gwNamespace] = ingressServiceRef(o.ingressService, o.istioNamespace)
  let [gatewayService, istioNs] = await Promise.all([
    client.getOptional<KubeObject>(resourcePath(Resources.services, {namespace: gwNamespace, name: gwName})),
    client.getOptional<KubeObject>(resourcePath(Resources.namespaces, {name: o.istioNamespace})),
  ])
  const istiodHost = bundle?.discoveryAddress?.replace(/:\d+$/, '') ?? (bundle?.env.CA_ADDR ?? '').replace(/:\d+$/, '')
  // With a bundle, the gateway that matters is the one its hosts file points at (it may have been made
  // with another --ingress-service); and a classic gateway, when there is one, is the fix for an ambient one.
  const bundleAddress = bundle ? hostsAddress(bundle.hosts, istiodHost) : undefined
  const gateways = await client.list<KubeObject>(resourcePath(Resources.services, {namespace: o.istioNamespace})).catch(() => [] as KubeObject[])
  const pointedAt = bundleAddress ? gateways.find((g) => gatewayAddress(g) === bundleAddress) : undefined
  if (pointedAt && pointedAt.metadata?.name !== gwName) {
    gatewayService = pointedAt
    gwName = pointedAt.metadata!.name!
    gwNamespace = o.istioNamespace
  }
  const classic = gateways.find((g) => eastWestGatewayKind(g as GatewayServiceLike).kind === 'classic' && gatewayAddress(g) !== undefined)

  // The registration's neighbours: entries at the same address, events about it.
  // A proxy with no entry, asked about by its address: that is where --vm-exec reaches it.
  const address = addressOf(entry) ?? (proxyRow && query !== undefined && isIP(query) !== 0 ? query : undefined)
  const duplicates = entry && address ? entries.filter((e) => e !== entry && addressOf(e) === address) : []
  let events: Evidence['events'] = []
  if (entry?.metadata?.name) {
    const list = await client.list<EventObject>(resourcePath(Resources.events, {namespace}), {fieldSelector: `involvedObject.name=${entry.metadata.name}`}).catch(() => [] as EventObject[])
    // Newest first (RFC 3339 times sort as text).
    const time = (ev: EventObject) => String(ev.lastTimestamp ?? ev.eventTime ?? '')
    events = list
      .filter((ev) => ev.type === 'Warning')
      .sort((a, b) => (time(a) < time(b) ? 1 : time(a) > time(b) ? -1 : 0))
      .map((ev) => ({reason: ev.reason, message: ev.message, count: ev.count, lastTimestamp: ev.lastTimestamp}))
  }
  let staleBecause: string | undefined
  if (found.war && group) staleBecause = staleDifference(found.war, group) || undefined
  else if (entry && group && annotationsOf(entry)['istio.io/autoRegistrationGroup']) staleBecause = entryStaleAgainstGroup(entry, group)

  // Sync state, from istiod's syncz (through proxy-status's run).
  let sync: SyncEvidence | undefined
  if (entry || proxyRow) {
    const r = await o.rows()
    if ('error' in r) sync = {connected: false, types: [], unreadable: r.error}
    else {
      const row = proxyRow ?? r.rows.find((x) => x.type !== 'istiod' && (r.registrationOf(x)?.name === entry?.metadata?.name || r.registrationOf(x)?.name === found.war?.metadata?.name))
      sync = row?.connected
        ? {
            connected: true,
            istiod: row.istiod,
            proxyVersion: row.version,
            istiodVersion: row.istiodRef?.version,
            versionSkew: row.versionSkew,
            types: Object.entries(row.xds)
              .filter(([, t]) => t.subscribed)
              .map(([type, t]) => ({type, state: t.state, ...(t.error ? {error: t.error} : {})})),
          }
        : {connected: false, types: []}
    }
  }

  // The EnvoyFilters that may apply to it (the root namespace's and its own), for a NACK's cause.
  let envoyFilters: KubeObject[] | string | undefined
  if (sync?.types.some((t) => t.state === 'ERROR')) {
    envoyFilters = await Promise.all([...new Set([o.istioNamespace, namespace])].map((n) => listIn(client, Resources.envoyFilters, n)))
      .then((lists) => lists.flat())
      // No EnvoyFilter CRD, or not allowed to list them: the check says so.
      .catch((err: unknown) => `cannot list EnvoyFilters: ${(err as Error).message.split('\n')[0]}`)
  }

  // The mesh root, for the VM's Envoy to be compared with.
  const rootCm = await client.getOptional<{data?: Record<string, string>}>(resourcePath(Resources.configMaps, {namespace, name: 'istio-ca-root-cert'}))
  const rootPem = rootCm?.data?.['root-cert.pem']
  const meshRootSerials = rootPem ? pemSerials(rootPem) : []

  // The VM itself.
  let probe: Evidence['probe']
  if (o.vmExec !== undefined && (address || bundle)) {
    const vmEnv = {MESHVM_VM_NAME: entry?.metadata?.name ?? '', MESHVM_VM_ADDRESS: address ?? '', MESHVM_VM_HOSTNAME: address ?? '', MESHVM_NAMESPACE: namespace}
    const host = istiodHost || `${istiodServiceName(revision)}.${o.istioNamespace}.svc`
    if (!/^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/i.test(host)) probe = {error: `istiod's host ${JSON.stringify(host)} is not a DNS name`}
    else {
      const result = await runVmExec(o.vmExec, vmEnv, probeScript({istiodHost: host, istiodPort: discoveryPort(bundle?.discoveryAddress), app: appTarget(group)}), {timeoutMs: o.timeoutMs})
      const parsed = parseProbe(result.stdout)
      if (result.timedOut) probe = {error: `no answer within ${Math.round(o.timeoutMs / 1000)}s`}
      else if (result.truncated) probe = {error: 'the answer was larger than 1 MiB'}
      else if (!parsed.sections.includes('end'))
        probe = {error: `exit code ${result.code}${result.stderr.trim() ? `: ${result.stderr.trim().split('\n').pop()}` : ''} (the checks did not run to the end)`}
      else probe = {probe: parsed}
    }
  }

  // Evidence is read by diagnose only: a field left undefined is the same as one left out.
  return {
    now: o.now,
    namespace,
    query,
    context: o.context,
    bundle: bundle && {
      checks: [],
      dir: bundle.source && 'dir' in bundle.source ? bundle.source.dir : undefined,
      network: str(bundle.env.ISTIO_META_NETWORK),
      group: bundle.env.ISTIO_META_WORKLOAD_NAME,
      rerun: bundle.rerun,
    },
    gateway: {
      name: gwName,
      namespace: gwNamespace,
      service: gatewayService,
      bundleAddress,
      classic: classic?.metadata?.name ? `${classic.metadata.name}.${o.istioNamespace}` : undefined,
      controlPlaneNetwork: labelsOf(istioNs)['topology.istio.io/network'],
    },
    istiod: {pods, revision, namespace: o.istioNamespace, env},
    group,
    groupName,
    entry,
    war: found.war,
    staleBecause,
    duplicates,
    events,
    services,
    serviceEntries,
    sync,
    probe,
    meshRootSerials,
    envoyFilters,
    vmExec: o.vmExec,
    proxy: proxyRow && {name: proxyRow.name, istiod: proxyRow.istiod},
    ambiguous: found.ambiguous,
  }
}

/**
 * What the VM is asked about its application: the WorkloadGroup's readiness probe (httpGet or tcpSocket
 * on the VM's loopback, as pilot-agent probes it) and the group's ports, the probe's port first.
 * Undefined for an exec or gRPC probe, a probe to another host, HTTPS, or a path that is not plain URL text.
 */
function appTarget(group: KubeObject | undefined): AppTarget | undefined {
  const {http, tcp} = probeOf(group)
  // Neither: no port, and so no target.
  const port = Number((http ?? tcp)?.port)
  if (!isPort(port)) return undefined
  const host = http?.host ?? tcp?.host
  if (host !== undefined && !['127.0.0.1', 'localhost'].includes(String(host))) return undefined
  if (http?.scheme !== undefined && String(http.scheme).toUpperCase() !== 'HTTP') return undefined
  const path = http ? (str(http.path) ?? '/') : undefined
  if (path !== undefined && !safeProbePath(path)) return undefined
  const declared = Object.values(rec(rec(rec(group?.spec).template).ports)).filter(isPort)
  return {kind: http ? 'http' : 'tcp', ...(path ? {path} : {}), ports: [...new Set([port, ...declared])]}
}

/**
 * The proxy ID of the proxy that reports `address` among its INSTANCE_IPS, in `namespace`, as the
 * istiods of the revision see it (/debug/adsz); undefined when none does or no istiod answers.
 */
async function proxyAtAddress(client: KubeClient, o: GatherOptions, address: string, namespace: string): Promise<string | undefined> {
  const [{IstiodPool}, {findIstiods}, {readNodes}, {splitProxyId}] = await Promise.all([
    import('../istiod/reader.js'),
    import('../proxy-status/fetch.js'),
    import('../proxy-status/collect.js'),
    import('../proxy-status/vms.js'),
  ])
  // An istiod that cannot be found or read names no proxy (the query is then not found).
  const unread = (err: unknown) => {
    if (err instanceof MeshvmError) return undefined
    throw err
  }
  const istiods = await findIstiods(client, {istioNamespace: o.istioNamespace, revision: o.revision}).catch(unread)
  if (!istiods) return undefined
  const pool = new IstiodPool(client, o.istioNamespace)
  try {
    // proxy-status's reader of the istiods' adsz.
    const nodes = await readNodes(pool, istiods.selected, o.timeoutMs).catch(unread)
    if (!nodes) return undefined
    for (const node of nodes.values()) {
      if (node.ips.includes(address) && (node.namespace ?? splitProxyId(node.proxyId).namespace) === namespace) return node.proxyId
    }
  } finally {
    pool.close()
  }
  return undefined
}

/** The port of the bundle's discovery address (HOST:PORT); undefined: istiod's default, 15012. */
function discoveryPort(address: string | undefined): number | undefined {
  const m = /:(\d+)$/.exec(address ?? '')
  return m ? Number(m[1]) : undefined
}
