/**
 * `meshvm precheck`: what must be true in the cluster before a VM can join, checked read-only.
 * Each check returns pass/warn/fail with a message and, when not passing, a hint.
 */
import type {KubeClient} from '../kube/client.js'
import {shellQuote} from '../cli/prompt.js'
import {canI} from '../kube/access-review.js'
import {mapSelectorSelects} from '../kube/selector.js'
import {Resources, resourcePath, type ResourceType} from '../kube/resources.js'
import {MeshvmError} from '../errors.js'
import {istiodDeploymentEnv, istiodServiceName, resolveRevision, revisionOrUndefined} from '../istiod/revision.js'
import {KubeApiError} from '../kube/errors.js'
import {eastWestGatewayKind, eastWestGatewayVerdict} from './gateway.js'

export type CheckStatus = 'pass' | 'warn' | 'fail'

export interface CheckResult {
  check: string
  status: CheckStatus
  message: string
  hint?: string
}

export interface PrecheckOptions {
  namespace: string
  istioNamespace: string
  revision?: string
  /** The WorkloadGroup to check, when given. */
  group?: string
  /** Used when there is no group (or the group has no service account). */
  serviceAccount: string
  ingressService: string
  ingressIp?: string
}

interface Meta {
  name?: string
  namespace?: string
  labels?: Record<string, string>
  annotations?: Record<string, string>
}
interface Pod {
  metadata?: Meta
  status?: {phase?: string; conditions?: {type?: string; status?: string}[]}
}
interface Service {
  metadata?: Meta
  spec?: {ports?: {port?: number}[]; externalIPs?: string[]; selector?: Record<string, string>}
  status?: {loadBalancer?: {ingress?: {ip?: string; hostname?: string}[]}}
}
interface WorkloadGroup {
  metadata?: Meta
  spec?: {metadata?: {labels?: Record<string, string>}; template?: {serviceAccount?: string}}
}
interface ServiceEntry {
  metadata?: Meta
  spec?: {workloadSelector?: {labels?: Record<string, string>}}
}

const pass = (check: string, message: string): CheckResult => ({check, status: 'pass', message})
const warn = (check: string, message: string, hint: string): CheckResult => ({check, status: 'warn', message, hint})
const fail = (check: string, message: string, hint: string): CheckResult => ({check, status: 'fail', message, hint})

/** A check that could not even read what it needs fails with the reason, instead of aborting the run. */
async function guarded(check: string, run: () => Promise<CheckResult | CheckResult[]>): Promise<CheckResult[]> {
  try {
    const r = await run()
    return Array.isArray(r) ? r : [r]
  } catch (err) {
    if (err instanceof MeshvmError) return [fail(check, err.message, err.hints[0] ?? 'see the message')]
    throw err
  }
}

/**
 * Reads one istiod's sync status the way proxy-status does (port-forward, HTTP debug else xDS): proves
 * that istiod can be reached from here and names the path, or says why not.
 */
async function istiodAnswers(client: KubeClient, istioNamespace: string, pod: Pod): Promise<CheckResult> {
  const {IstiodPool, DEFAULT_MONITORING_PORT} = await import('../istiod/reader.js')
  const port = Number(pod.metadata?.annotations?.['prometheus.io/port'] ?? DEFAULT_MONITORING_PORT) || DEFAULT_MONITORING_PORT
  const name = pod.metadata?.name ?? ''
  const pool = new IstiodPool(client, istioNamespace)
  try {
    const reader = pool.reader({kind: 'pod', name, namespace: istioNamespace, revision: pod.metadata?.labels?.['istio.io/rev'], monitoringPort: port})
    const answer = await reader.syncz({timeoutMs: 10_000})
    const how = answer.path === 'http' ? `HTTP /debug/syncz over port-forward to :${port}` : `xDS over port-forward to :15012 (TLS verified for ${reader.san})`
    return pass('istiod answers', `istiod ${istioNamespace}/${name} answers: ${how}`)
  } catch (err) {
    if (!(err instanceof MeshvmError)) throw err
    return warn('istiod answers', err.message, err.hints[0] ?? 'meshvm proxy-status will not be able to read this istiod')
  } finally {
    pool.close()
  }
}

/** An istiod of the default (un-revisioned) control plane: no istio.io/rev label, or istio.io/rev=default. */
function isDefaultRevision(obj: {metadata?: Meta}): boolean {
  return revisionOrUndefined(obj.metadata?.labels?.['istio.io/rev']) === undefined
}

const isReady = (p: Pod): boolean => p.status?.phase === 'Running' && p.status.conditions?.some((c) => c.type === 'Ready' && c.status === 'True') === true

export async function runPrechecks(client: KubeClient, options: PrecheckOptions): Promise<CheckResult[]> {
  // One request first: an unreachable or unauthorized cluster is one error, not a table of them.
  await client.get('/version')
  // Without --revision, the default tag's revision, as istioctl 1.28 resolves it.
  // Undefined for the default control plane ("default" included).
  const o = {...options, revision: revisionOrUndefined((await resolveRevision(client, options.revision)).revision)}
  const revLabel = o.revision !== undefined ? `,istio.io/rev=${o.revision}` : ''
  let serviceAccount = o.serviceAccount
  let groupLabels: Record<string, string> | undefined
  let readyIstiod: Pod | undefined

  const results: CheckResult[][] = []
  // Does the namespace exist? (Without permission to read namespaces, the checks below still say what they find.)
  let namespaceMissing = false
  try {
    namespaceMissing = (await client.getOptional(resourcePath(Resources.namespaces, {name: o.namespace}))) === undefined
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 403)) throw err
  }
  const createNamespace = `create it: meshvm onboard ${o.group ?? 'NAME'} -n ${o.namespace} --create-namespace --apply (or kubectl create namespace ${o.namespace})`
  if (namespaceMissing) results.push([fail('namespace', `namespace ${o.namespace} does not exist`, createNamespace)])
  results.push(
    await guarded('istiod running', async () => {
      const pods = await client.list<Pod>(resourcePath(Resources.pods, {namespace: o.istioNamespace}), {labelSelector: `app=istiod${revLabel}`})
      // Without a revision, the default control plane only: the istiods of other revisions are not the ones VMs will use.
      const mine = o.revision !== undefined ? pods : pods.filter(isDefaultRevision)
      const ready = mine.filter(isReady)
      if (ready.length > 0) {
        readyIstiod = ready[0]
        const revs = [...new Set(ready.map((p) => p.metadata?.labels?.['istio.io/rev'] ?? 'default'))].sort()
        return pass('istiod running', `${ready.length} ready istiod pod(s) in ${o.istioNamespace} (revision ${revs.join(', ')})`)
      }
      if (o.revision === undefined) {
        const others = [...new Set(pods.filter((p) => !isDefaultRevision(p) && isReady(p)).map((p) => p.metadata!.labels!['istio.io/rev']!))].sort()
        if (others.length > 0) {
          const notReady = mine.length > 0 ? `${mine.length} not ready` : 'none'
          return fail(
            'istiod running',
            `no ready istiod pod of the default revision in ${o.istioNamespace} (labels app=istiod, istio.io/rev absent or "default": ${notReady}); ready revision(s): ${others.join(', ')}`,
            `fix the default istiod (kubectl describe pods -l app=istiod -n ${o.istioNamespace}), or check the revision VMs will use with --revision ${others[0]} (make it the default with: istioctl tag set default --revision ${others[0]})`,
          )
        }
      }
      return fail(
        'istiod running',
        `no ready istiod pod with labels app=istiod${revLabel} in ${o.istioNamespace}`,
        o.revision !== undefined ? 'check --revision and -i' : 'is Istio installed? Pass -i NAMESPACE or --revision REV if it is elsewhere',
      )
    }),
  )
  if (readyIstiod) results.push(await guarded('istiod answers', () => istiodAnswers(client, o.istioNamespace, readyIstiod!)))
  results.push(
    await guarded('auto-registration enabled', async () => {
      // The Deployment Istio's charts name istiod or istiod-REV, read as doctor and war rollout read it.
      const env = await istiodDeploymentEnv(client, o.istioNamespace, o.revision)
      const dep = `${o.istioNamespace}/${istiodServiceName(o.revision)}`
      if (!env) return warn('auto-registration enabled', `no istiod Deployment ${dep} found`, 'a managed control plane cannot be inspected; check its settings with your provider')
      const off = ['PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION', 'PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS'].filter((k) => env.get(k) === 'false')
      if (off.length === 0) return pass('auto-registration enabled', `workload entry auto-registration and health checks are on in ${dep}`)
      return fail('auto-registration enabled', `${off.join(' and ')} set to "false" in ${dep}`, `install Istio with --set values.pilot.env.${off[0]}=true (it is the default)`)
    }),
  )
  results.push(
    await guarded('east-west gateway', async () => {
      const parts = o.ingressService.split('.')
      const [name, ns] = parts.length === 2 ? [parts[0]!, parts[1]!] : [o.ingressService, o.istioNamespace]
      const svc = await client.getOptional<Service>(resourcePath(Resources.services, {namespace: ns, name}))
      if (!svc)
        return fail(
          'east-west gateway',
          `Service ${ns}/${name} not found`,
          'install it with samples/multicluster/gen-eastwest-gateway.sh and expose istiod (expose-istiod.yaml), or pass --ingress-service',
        )
      // Classic (sidecar) or ambient (istio-east-west, HBONE on 15008): a VM is a sidecar and needs the classic ports.
      const verdict = eastWestGatewayVerdict(`Service ${ns}/${name}`, eastWestGatewayKind(svc))
      const ingress = svc.status?.loadBalancer?.ingress?.[0]
      const address = o.ingressIp ?? ingress?.ip ?? svc.spec?.externalIPs?.[0] ?? ingress?.hostname
      if (verdict.status === 'fail') return fail('east-west gateway', verdict.message, verdict.hint!)
      if (!address) return fail('east-west gateway', `Service ${ns}/${name} has no load-balancer address or external IP yet`, 'wait for the load balancer, or pass --ingress-ip')
      return pass('east-west gateway', `${verdict.message.replace(`Service ${ns}/${name}`, `${ns}/${name} at ${address}`)}`)
    }),
  )
  if (o.group) {
    results.push(
      await guarded('workload group', async () => {
        const wg = await client.getOptional<WorkloadGroup>(resourcePath(Resources.workloadGroups, {namespace: o.namespace, name: o.group}))
        if (!wg && namespaceMissing) return fail('workload group', `WorkloadGroup ${o.namespace}/${o.group} not found: namespace ${o.namespace} does not exist`, createNamespace)
        if (!wg) return fail('workload group', `WorkloadGroup ${o.namespace}/${o.group} not found`, `create it: meshvm onboard ${o.group} -n ${o.namespace} --port … --apply`)
        serviceAccount = wg.spec?.template?.serviceAccount || 'default'
        groupLabels = wg.spec?.metadata?.labels ?? {}
        const [services, entries] = await Promise.all([
          client.list<Service>(resourcePath(Resources.services, {namespace: o.namespace})),
          client.list<ServiceEntry>(resourcePath(Resources.serviceEntries, {namespace: o.namespace})),
        ])
        const selecting = [
          ...services.filter((s) => mapSelectorSelects(s.spec?.selector, groupLabels!)).map((s) => `Service ${s.metadata?.name}`),
          ...entries.filter((e) => mapSelectorSelects(e.spec?.workloadSelector?.labels, groupLabels!)).map((e) => `ServiceEntry ${e.metadata?.name}`),
        ]
        if (selecting.length === 0) {
          return warn(
            'workload group',
            `WorkloadGroup ${o.namespace}/${o.group} exists, but no Service or ServiceEntry selects its labels (${
              Object.entries(groupLabels)
                .map(([k, v]) => `${k}=${v}`)
                .join(',') || 'none'
            })`,
            'without one, nothing in the mesh can call the VMs by name; meshvm onboard generates a matching Service',
          )
        }
        return pass('workload group', `WorkloadGroup ${o.namespace}/${o.group} is selected by ${selecting.join(', ')}`)
      }),
    )
  }
  results.push(
    await guarded('root certificate', async () => {
      const cm = await client.getOptional<{data?: Record<string, string>}>(resourcePath(Resources.configMaps, {namespace: o.namespace, name: 'istio-ca-root-cert'}))
      if (cm?.data?.['root-cert.pem']) return pass('root certificate', `ConfigMap ${o.namespace}/istio-ca-root-cert holds the mesh root certificate`)
      if (namespaceMissing)
        return fail(
          'root certificate',
          `ConfigMap ${o.namespace}/istio-ca-root-cert not found: namespace ${o.namespace} does not exist`,
          `${createNamespace}; istiod then writes the root certificate into it`,
        )
      return fail(
        'root certificate',
        `ConfigMap ${o.namespace}/istio-ca-root-cert ${cm ? 'has no root-cert.pem' : 'not found'}`,
        `istiod writes it into the namespaces it watches: is namespace ${o.namespace} within istiod's discoverySelectors?`,
      )
    }),
  )
  results.push(
    await guarded('service account', async () => {
      const sa = await client.getOptional(resourcePath(Resources.serviceAccounts, {namespace: o.namespace, name: serviceAccount}))
      if (sa) return pass('service account', `ServiceAccount ${o.namespace}/${serviceAccount} exists`)
      if (namespaceMissing)
        return fail(
          'service account',
          `ServiceAccount ${o.namespace}/${serviceAccount} not found: namespace ${o.namespace} does not exist`,
          `create both: meshvm onboard ${o.group ?? 'NAME'} -n ${o.namespace} --create-namespace --create-service-account --apply`,
        )
      return fail(
        'service account',
        `ServiceAccount ${o.namespace}/${serviceAccount} not found`,
        `kubectl create serviceaccount ${shellQuote(serviceAccount)} -n ${shellQuote(o.namespace)} (or meshvm onboard … --create-service-account --apply)`,
      )
    }),
  )
  // What meshvm itself will do: apply the manifests, read the config, issue the VM token, read proxies.
  const permissions: [string, string, ResourceType, string | undefined, string?][] = [
    ['token request', 'create', Resources.serviceAccounts, o.namespace, 'token'],
    ['apply workload groups', 'patch', Resources.workloadGroups, o.namespace],
    ['apply services', 'patch', Resources.services, o.namespace],
    ['apply service entries', 'patch', Resources.serviceEntries, o.namespace],
    ['read mesh config', 'get', Resources.configMaps, o.istioNamespace],
    ['read root certificate', 'get', Resources.configMaps, o.namespace],
    ['read istiod status (port-forward)', 'create', Resources.pods, o.istioNamespace, 'portforward'],
    ['istiod token (xDS)', 'create', Resources.serviceAccounts, o.istioNamespace, 'token'],
    // war rollout keeps its lock and progress in a Lease (client-go's leader election: create, get, update).
    ['rollout lease (create)', 'create', Resources.leases, o.namespace],
    ['rollout lease (get)', 'get', Resources.leases, o.namespace],
    ['rollout lease (update)', 'update', Resources.leases, o.namespace],
  ]
  const rbac = await Promise.all(
    permissions.map(([what, verb, res, ns, sub]) =>
      guarded(`RBAC: ${what}`, async () => {
        const resource = `${res.plural}${sub ? '/' + sub : ''}${res.group ? '.' + res.group : ''}`
        const allowed = await canI(client, {verb, group: res.group, resource: res.plural, subresource: sub, namespace: res.namespaced ? ns : undefined})
        return allowed
          ? pass(`RBAC: ${what}`, `can ${verb} ${resource} in ${ns}`)
          : fail(
              `RBAC: ${what}`,
              `cannot ${verb} ${resource} in ${ns}`,
              `ask for a Role in ${ns} allowing "${verb}" on ${res.group ? `"${res.plural}${sub ? '/' + sub : ''}" in API group "${res.group}"` : `"${res.plural}${sub ? '/' + sub : ''}"`}`,
            )
      }),
    ),
  )
  results.push(...rbac)
  return results.flat()
}
