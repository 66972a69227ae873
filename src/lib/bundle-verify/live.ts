/**
 * `meshvm bundle verify`, against the live cluster: the values are read where `meshvm bundle`
 * reads them (src/lib/bundle/fetch.ts), so a bundle passes exactly when a new one would carry the
 * same values. Each check reports, never throws, for API errors: one failing read leaves the rest.
 */
import {shellQuote} from '../cli/prompt.js'
import {ExitCode, MeshvmError} from '../errors.js'
import type {KubeClient} from '../kube/client.js'
import {groupVersion, Resources, resourcePath} from '../kube/resources.js'
import {fetchClusterId, fetchRootCert, fetchWorkloadGroup, findGateway, gatewayService} from '../bundle/fetch.js'
import {serviceAccountOf, type WorkloadGroupLike} from '../bundle/generate.js'
import {AMBIENT_GATEWAY_FIX, eastWestGatewayKind} from '../precheck/gateway.js'
import {findIstiods} from '../proxy-status/fetch.js'
import {bundleCommand, parseIstiodAddress, type Check, type OfflineResult} from './offline.js'

export interface LiveOptions {
  istioNamespace: string
  /** --ingress-service (NAME or NAME.NS). */
  ingressService: string
}

interface ServiceLike {
  metadata?: {labels?: Record<string, string>}
  spec?: {ports?: {port?: number; targetPort?: number | string; name?: string}[]}
}

async function guarded(id: string, checks: Check[], fix: string, fn: () => Promise<Check | Check[]>): Promise<void> {
  try {
    const c = await fn()
    checks.push(...(Array.isArray(c) ? c : [c]))
  } catch (err) {
    if (!(err instanceof MeshvmError)) throw err
    const forbidden = err.exit === ExitCode.FORBIDDEN
    checks.push({id, status: forbidden ? 'skip' : 'fail', detail: forbidden ? `cannot check: ${err.message}` : err.message, ...(forbidden ? {} : {fix})})
  }
}

export async function liveChecks(client: KubeClient, off: OfflineResult, o: LiveOptions): Promise<Check[]> {
  const checks: Check[] = []
  const env = off.env
  const namespace = env.POD_NAMESPACE
  const groupName = env.ISTIO_META_WORKLOAD_NAME
  const address = env.CA_ADDR ?? off.discoveryAddress ?? `istiod.${o.istioNamespace}.svc:15012`
  const istiod = parseIstiodAddress(address)
  const revision = istiod?.revision
  const istioNamespace = istiod?.namespace ?? o.istioNamespace
  // The bundle's revision is gone: the same bundle for the revision istiod now serves by default.
  const currentRevision = bundleCommand({...env, CA_ADDR: ''}, off.source)

  // The token, as istiod's CA authenticates it (security/pkg/server/ca/authenticate/kubeauth).
  if (off.token) {
    await guarded('token.review', checks, off.refresh, async () => {
      const review = await client.request<{status?: {authenticated?: boolean; error?: string; user?: {username?: string}}}>({
        method: 'POST',
        path: resourcePath(Resources.tokenReviews),
        body: {apiVersion: groupVersion(Resources.tokenReviews), kind: Resources.tokenReviews.kind, spec: {token: off.token, audiences: ['istio-ca']}},
        retry: 'idempotent',
      })
      const s = review?.status
      if (s?.authenticated) return {id: 'token.review', status: 'pass', detail: `the API server accepts it for audience istio-ca as ${s.user?.username ?? '?'}`}
      return {id: 'token.review', status: 'fail', detail: `the API server rejects it: ${s?.error ?? 'not authenticated'}`, fix: off.refresh}
    })
  }

  // root-cert.pem: the mesh root istiod publishes in the VM's namespace.
  if (off.rootCert !== undefined && namespace) {
    await guarded('root-cert', checks, off.rerun, async () => {
      const live = await fetchRootCert(client, namespace)
      return live.trim() === off.rootCert!.trim()
        ? {id: 'root-cert', status: 'pass', detail: `matches ConfigMap ${namespace}/istio-ca-root-cert`}
        : {id: 'root-cert', status: 'fail', detail: `differs from ConfigMap ${namespace}/istio-ca-root-cert: the mesh root was rotated; the VM would not trust istiod`, fix: off.rerun}
    })
  }

  // CA_ADDR / discoveryAddress: a Service of that name, and a running istiod of that revision.
  await guarded('istiod', checks, off.rerun, async () => {
    if (!istiod) return {id: 'istiod', status: 'fail', detail: `${address}: not an istiod Service address (istiod[-REVISION].NAMESPACE.svc:PORT)`, fix: off.rerun}
    const svc = await client.getOptional(resourcePath(Resources.services, {namespace: istiod.namespace, name: istiod.service}))
    if (!svc)
      return {id: 'istiod', status: 'fail', detail: `${address}: Service ${istiod.namespace}/${istiod.service} not found (was revision ${revision ?? 'default'} removed?)`, fix: currentRevision}
    const {selected} = await findIstiods(client, {istioNamespace: istiod.namespace, revision: revision ?? undefined})
    const running = revision === undefined ? selected : selected.filter((p) => p.revision === revision)
    if (running.length === 0) return {id: 'istiod', status: 'fail', detail: `${address}: no running istiod${revision ? ` of revision ${revision}` : ''} in ${istiod.namespace}`, fix: currentRevision}
    return {id: 'istiod', status: 'pass', detail: `${address}: ${running.length} running istiod${revision ? ` (revision ${revision})` : ''}`}
  })

  // hosts: the east-west gateway's current address, which must expose 15012 (xDS/CA) and 15017 (webhook).
  if (off.hosts !== undefined) {
    await guarded('gateway', checks, off.rerun, async () => {
      const entries = off
        .hosts!.split('\n')
        .map((l) => l.trim())
        .filter((l) => l !== '' && !l.startsWith('#'))
      // An address entry, or the comment a gateway known by host name leaves (install.sh resolves it).
      const bundled = entries[0]?.split(/\s+/)[0] ?? /reached through the east-west gateway (\S+);/.exec(off.hosts!)?.[1]
      if (bundled === undefined) return {id: 'gateway', status: 'pass', detail: 'no hosts entries: the VM resolves istiod itself (flat network)'}
      const [name, ns] = gatewayService(o.ingressService, istioNamespace)
      const current = await findGateway(client, istioNamespace, {ingressService: o.ingressService, noHosts: false})
      const now = current.kind === 'ip' ? current.address : current.kind === 'hostname' ? current.hostname : ''
      const out: Check[] = [
        bundled === now
          ? {id: 'gateway', status: 'pass', detail: `hosts points at ${bundled}, the current address of ${ns}/${name}`}
          : {id: 'gateway', status: 'fail', detail: `hosts points at ${bundled}, but ${ns}/${name} is now at ${now}: the VM cannot reach istiod`, fix: off.rerun},
      ]
      const svc = await client.getOptional<ServiceLike>(resourcePath(Resources.services, {namespace: ns, name}))
      const ports = new Set((svc?.spec?.ports ?? []).map((p) => p.port))
      const lacking = [15012, 15017].filter((p) => !ports.has(p))
      // A sidecar VM (the only kind there is) pointed at an ambient east-west gateway: istio/istio#57878.
      const reading = eastWestGatewayKind(svc ?? {})
      if (reading.kind === 'ambient') {
        const ambient = `${ns}/${name} is an ambient east-west gateway (${reading.className ? `class ${reading.className}, ` : ''}HBONE on 15008)`
        out.push(
          lacking.length > 0
            ? {id: 'gateway.ports', status: 'fail', detail: `${ambient} without ${lacking.join(' and ')}: this sidecar VM cannot reach istiod through it`, fix: AMBIENT_GATEWAY_FIX}
            : {
                id: 'gateway.ports',
                status: 'warn',
                detail: `${ambient}: it exposes istiod (15012, 15017), but not 15443, so this sidecar VM's calls to services in other networks fail`,
                fix: AMBIENT_GATEWAY_FIX,
              },
        )
        return out
      }
      out.push(
        lacking.length === 0
          ? {id: 'gateway.ports', status: 'pass', detail: `${ns}/${name} exposes 15012 and 15017${reading.kind === 'both' ? ' (and HBONE on 15008 for ambient)' : ''}`}
          : {
              id: 'gateway.ports',
              status: 'fail',
              detail: `${ns}/${name} does not expose ${lacking.join(' and ')} (istiod's xDS/CA and webhook ports)`,
              fix: 'expose istiod through the east-west gateway (samples/multicluster/expose-istiod.yaml)',
            },
      )
      return out
    })
  }

  // ISTIO_META_CLUSTER_ID: what istiod calls this cluster.
  if (env.ISTIO_META_CLUSTER_ID !== undefined) {
    await guarded('cluster-id', checks, off.rerun, async () => {
      const id = await fetchClusterId(client, istioNamespace, revision, () => undefined)
      return id === env.ISTIO_META_CLUSTER_ID
        ? {id: 'cluster-id', status: 'pass', detail: `ISTIO_META_CLUSTER_ID ${id}`}
        : {id: 'cluster-id', status: 'fail', detail: `ISTIO_META_CLUSTER_ID is ${env.ISTIO_META_CLUSTER_ID}, istiod's cluster is ${id}: istiod's CA refuses the VM`, fix: off.rerun}
    })
  }

  // The WorkloadGroup: still there, same service account, network and labels.
  if (groupName && namespace) {
    await guarded('workloadgroup', checks, off.rerun, async () => {
      let wg: WorkloadGroupLike
      try {
        wg = await fetchWorkloadGroup(client, groupName, namespace)
      } catch (err) {
        if (err instanceof MeshvmError && err.exit === ExitCode.NOT_FOUND)
          return {
            id: 'workloadgroup',
            status: 'fail',
            detail: `WorkloadGroup ${namespace}/${groupName} not found`,
            fix: `recreate it (meshvm onboard ${shellQuote(groupName)} -n ${shellQuote(namespace)} --apply with its ports and labels), then: ${off.rerun}`,
          }
        throw err
      }
      const t = wg.spec?.template ?? {}
      const problems: string[] = []
      const sa = serviceAccountOf(wg)
      if (sa !== env.SERVICE_ACCOUNT) problems.push(`service account ${env.SERVICE_ACCOUNT} → ${sa}`)
      if ((t.network ?? '') !== (env.ISTIO_META_NETWORK ?? '')) problems.push(`network ${env.ISTIO_META_NETWORK || '(none)'} → ${t.network || '(none)'}`)
      let bundled: Record<string, string> = {}
      try {
        bundled = JSON.parse(env.ISTIO_METAJSON_LABELS ?? '{}') as Record<string, string>
      } catch {
        problems.push('ISTIO_METAJSON_LABELS is not JSON')
      }
      const want: Record<string, string> = {...(wg.spec?.metadata?.labels ?? {}), ...(t.labels ?? {})}
      const derived = new Set(['service.istio.io/canonical-name', 'service.istio.io/canonical-revision'])
      for (const [k, v] of Object.entries(want)) if (bundled[k] !== v) problems.push(`label ${k}: ${bundled[k] ?? '(none)'} → ${v}`)
      for (const k of Object.keys(bundled)) if (!(k in want) && !derived.has(k)) problems.push(`label ${k}: ${bundled[k]} → (none)`)
      return problems.length === 0
        ? {id: 'workloadgroup', status: 'pass', detail: `WorkloadGroup ${namespace}/${groupName}: service account, network and labels match`}
        : {id: 'workloadgroup', status: 'fail', detail: `WorkloadGroup ${namespace}/${groupName} changed since the bundle: ${problems.join('; ')}`, fix: off.rerun}
    })
  }
  return checks
}
