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
import {annotationsOf, conditionOf, conditionStatus, labelsOf, type KubeObject} from '../kube/object.js'
import {isRecord} from '../util/records.js'
import {eastWestGatewayKind, eastWestGatewayVerdict, gatewayAddress} from './gateway.js'
import {gatewayService} from '../bundle/fetch.js'

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

type Verdict = Omit<CheckResult, 'check'>
const pass = (message: string): Verdict => ({status: 'pass', message})
const warn = (message: string, hint: string): Verdict => ({status: 'warn', message, hint})
const fail = (message: string, hint: string): Verdict => ({status: 'fail', message, hint})

/** A check that could not even read what it needs fails with the reason, instead of aborting the run. */
async function guarded(check: string, run: () => Promise<Verdict>): Promise<CheckResult> {
  try {
    return {check, ...(await run())}
  } catch (err) {
    if (err instanceof MeshvmError) return {check, ...fail(err.message, err.hints[0] ?? 'see the message')}
    throw err
  }
}

/**
 * Reads one istiod's sync status the way proxy-status does (port-forward, HTTP debug else xDS): proves
 * that istiod can be reached from here and names the path, or says why not.
 */
async function istiodAnswers(client: KubeClient, istioNamespace: string, pod: KubeObject): Promise<Verdict> {
  const {IstiodPool, DEFAULT_MONITORING_PORT} = await import('../istiod/reader.js')
  const port = Number(annotationsOf(pod)['prometheus.io/port'] ?? DEFAULT_MONITORING_PORT) || DEFAULT_MONITORING_PORT
  const name = pod.metadata?.name ?? ''
  const pool = new IstiodPool(client, istioNamespace)
  try {
    const reader = pool.reader({kind: 'pod', name, namespace: istioNamespace, revision: labelsOf(pod)['istio.io/rev'], monitoringPort: port})
    const answer = await reader.syncz({timeoutMs: 10_000})
    const how = answer.path === 'http' ? `HTTP /debug/syncz over port-forward to :${port}` : `xDS over port-forward to :15012 (TLS verified for ${reader.san})`
    return pass(`istiod ${istioNamespace}/${name} answers: ${how}`)
  } catch (err) {
    if (!(err instanceof MeshvmError)) throw err
    return warn(err.message, err.hints[0] ?? 'meshvm proxy-status will not be able to read this istiod')
  } finally {
    pool.close()
  }
}

/** An istiod of the default (un-revisioned) control plane: no istio.io/rev label, or istio.io/rev=default. */
const isDefaultRevision = (pod: KubeObject): boolean => revisionOrUndefined(labelsOf(pod)['istio.io/rev']) === undefined

/** A pod that runs and is Ready. */
export const podReady = (p: KubeObject): boolean => (p.status as {phase?: string} | undefined)?.phase === 'Running' && conditionStatus(conditionOf(p, 'Ready')) === 'True'

/**
 * istiod's pods in the Istio namespace (labels app=istiod, and istio.io/rev=REV for a revision): `all`
 * listed, and `ofRevision`, those VMs of `revision` use (undefined: the default control plane only, so
 * other revisions never stand in for it).
 */
export async function istiodPods(client: KubeClient, istioNamespace: string, revision: string | undefined): Promise<{all: KubeObject[]; ofRevision: KubeObject[]}> {
  const all = await client.list<KubeObject>(resourcePath(Resources.pods, {namespace: istioNamespace}), {labelSelector: `app=istiod${revision !== undefined ? `,istio.io/rev=${revision}` : ''}`})
  return {all, ofRevision: revision !== undefined ? all : all.filter(isDefaultRevision)}
}

/** A record, or {} for anything else. */
export const rec = (v: unknown): Record<string, unknown> => (isRecord(v) ? v : {})

/** Labels as `k=v,k2=v2`, for messages. */
export const labelText = (labels: Record<string, string>): string =>
  Object.entries(labels)
    .map(([k, v]) => `${k}=${v}`)
    .join(',')

/** The Services and ServiceEntries whose selector matches a workload's labels (doctor's step 5 too). */
export function servicesSelecting(services: KubeObject[], serviceEntries: KubeObject[], labels: Record<string, string>): {kind: 'Service' | 'ServiceEntry'; obj: KubeObject}[] {
  return [
    ...services.filter((s) => mapSelectorSelects(rec(rec(s.spec).selector), labels)).map((obj) => ({kind: 'Service' as const, obj})),
    ...serviceEntries.filter((s) => mapSelectorSelects(rec(rec(rec(s.spec).workloadSelector).labels), labels)).map((obj) => ({kind: 'ServiceEntry' as const, obj})),
  ]
}

export async function runPrechecks(client: KubeClient, options: PrecheckOptions): Promise<CheckResult[]> {
  // One request first: an unreachable or unauthorized cluster is one error, not a table of them.
  await client.get('/version')
  // Without --revision, the default tag's revision, as istioctl 1.28 resolves it.
  // Undefined for the default control plane ("default" included).
  const o = {...options, revision: revisionOrUndefined((await resolveRevision(client, options.revision)).revision)}
  const revLabel = o.revision !== undefined ? `,istio.io/rev=${o.revision}` : ''
  let serviceAccount = o.serviceAccount
  let readyIstiod: KubeObject | undefined

  const results: CheckResult[] = []
  const check = async (name: string, run: () => Promise<Verdict>) => results.push(await guarded(name, run))
  // Does the namespace exist? (Without permission to read namespaces, the checks below still say what they find.)
  let namespaceMissing = false
  try {
    namespaceMissing = (await client.getOptional(resourcePath(Resources.namespaces, {name: o.namespace}))) === undefined
  } catch (err) {
    if (!(err instanceof KubeApiError && err.status === 403)) throw err
  }
  const createNamespace = `create it: meshvm onboard ${o.group ?? 'NAME'} -n ${o.namespace} --create-namespace --apply (or kubectl create namespace ${o.namespace})`
  if (namespaceMissing) results.push({check: 'namespace', ...fail(`namespace ${o.namespace} does not exist`, createNamespace)})
  const inMissingNamespace = (what: string, hint = createNamespace) => fail(`${what} not found: namespace ${o.namespace} does not exist`, hint)
  await check('istiod running', async () => {
    const {all, ofRevision} = await istiodPods(client, o.istioNamespace, o.revision)
    const ready = ofRevision.filter(podReady)
    if (ready.length > 0) {
      readyIstiod = ready[0]
      const revs = [...new Set(ready.map((p) => labelsOf(p)['istio.io/rev'] ?? 'default'))].sort()
      return pass(`${ready.length} ready istiod pod(s) in ${o.istioNamespace} (revision ${revs.join(', ')})`)
    }
    if (o.revision === undefined) {
      const others = [...new Set(all.filter((p) => !isDefaultRevision(p) && podReady(p)).map((p) => labelsOf(p)['istio.io/rev']!))].sort()
      if (others.length > 0) {
        const notReady = ofRevision.length > 0 ? `${ofRevision.length} not ready` : 'none'
        return fail(
          `no ready istiod pod of the default revision in ${o.istioNamespace} (labels app=istiod, istio.io/rev absent or "default": ${notReady}); ready revision(s): ${others.join(', ')}`,
          `fix the default istiod (kubectl describe pods -l app=istiod -n ${o.istioNamespace}), or check the revision VMs will use with --revision ${others[0]} (make it the default with: istioctl tag set default --revision ${others[0]})`,
        )
      }
    }
    return fail(
      `no ready istiod pod with labels app=istiod${revLabel} in ${o.istioNamespace}`,
      o.revision !== undefined ? 'check --revision and -i' : 'is Istio installed? Pass -i NAMESPACE or --revision REV if it is elsewhere',
    )
  })
  if (readyIstiod) await check('istiod answers', () => istiodAnswers(client, o.istioNamespace, readyIstiod!))
  await check('auto-registration enabled', async () => {
    // The Deployment Istio's charts name istiod or istiod-REV, read as doctor and war rollout read it.
    const env = await istiodDeploymentEnv(client, o.istioNamespace, o.revision)
    const dep = `${o.istioNamespace}/${istiodServiceName(o.revision)}`
    if (!env) return warn(`no istiod Deployment ${dep} found`, 'a managed control plane cannot be inspected; check its settings with your provider')
    const off = ['PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION', 'PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS'].filter((k) => env.get(k) === 'false')
    if (off.length === 0) return pass(`workload entry auto-registration and health checks are on in ${dep}`)
    return fail(`${off.join(' and ')} set to "false" in ${dep}`, `install Istio with --set values.pilot.env.${off[0]}=true (it is the default)`)
  })
  await check('east-west gateway', async () => {
    const [name, ns] = gatewayService(o.ingressService, o.istioNamespace)
    const svc = await client.getOptional<KubeObject>(resourcePath(Resources.services, {namespace: ns, name}))
    if (!svc) return fail(`Service ${ns}/${name} not found`, 'install it with samples/multicluster/gen-eastwest-gateway.sh and expose istiod (expose-istiod.yaml), or pass --ingress-service')
    // Classic (sidecar) or ambient (istio-east-west, HBONE on 15008): a VM is a sidecar and needs the classic ports.
    const verdict = eastWestGatewayVerdict(`Service ${ns}/${name}`, eastWestGatewayKind(svc))
    const address = o.ingressIp ?? gatewayAddress(svc)
    if (verdict.status === 'fail') return fail(verdict.message, verdict.hint!)
    if (!address) return fail(`Service ${ns}/${name} has no load-balancer address or external IP yet`, 'wait for the load balancer, or pass --ingress-ip')
    return pass(verdict.message.replace(`Service ${ns}/${name}`, `${ns}/${name} at ${address}`))
  })
  if (o.group) {
    await check('workload group', async () => {
      const wg = await client.getOptional<KubeObject>(resourcePath(Resources.workloadGroups, {namespace: o.namespace, name: o.group}))
      if (!wg && namespaceMissing) return inMissingNamespace(`WorkloadGroup ${o.namespace}/${o.group}`)
      if (!wg) return fail(`WorkloadGroup ${o.namespace}/${o.group} not found`, `create it: meshvm onboard ${o.group} -n ${o.namespace} --port … --apply`)
      const spec = rec(wg.spec)
      serviceAccount = (rec(spec.template).serviceAccount as string | undefined) || 'default'
      const groupLabels = labelsOf(spec)
      const [services, entries] = await Promise.all([
        client.list<KubeObject>(resourcePath(Resources.services, {namespace: o.namespace})),
        client.list<KubeObject>(resourcePath(Resources.serviceEntries, {namespace: o.namespace})),
      ])
      const by = servicesSelecting(services, entries, groupLabels).map((s) => `${s.kind} ${s.obj.metadata?.name}`)
      if (by.length > 0) return pass(`WorkloadGroup ${o.namespace}/${o.group} is selected by ${by.join(', ')}`)
      return warn(
        `WorkloadGroup ${o.namespace}/${o.group} exists, but no Service or ServiceEntry selects its labels (${labelText(groupLabels) || 'none'})`,
        'without one, nothing in the mesh can call the VMs by name; meshvm onboard generates a matching Service',
      )
    })
  }
  await check('root certificate', async () => {
    const cm = await client.getOptional<{data?: Record<string, string>}>(resourcePath(Resources.configMaps, {namespace: o.namespace, name: 'istio-ca-root-cert'}))
    if (cm?.data?.['root-cert.pem']) return pass(`ConfigMap ${o.namespace}/istio-ca-root-cert holds the mesh root certificate`)
    if (namespaceMissing) return inMissingNamespace(`ConfigMap ${o.namespace}/istio-ca-root-cert`, `${createNamespace}; istiod then writes the root certificate into it`)
    return fail(
      `ConfigMap ${o.namespace}/istio-ca-root-cert ${cm ? 'has no root-cert.pem' : 'not found'}`,
      `istiod writes it into the namespaces it watches: is namespace ${o.namespace} within istiod's discoverySelectors?`,
    )
  })
  await check('service account', async () => {
    const sa = await client.getOptional(resourcePath(Resources.serviceAccounts, {namespace: o.namespace, name: serviceAccount}))
    if (sa) return pass(`ServiceAccount ${o.namespace}/${serviceAccount} exists`)
    const createBoth = `create both: meshvm onboard ${o.group ?? 'NAME'} -n ${o.namespace} --create-namespace --create-service-account --apply`
    if (namespaceMissing) return inMissingNamespace(`ServiceAccount ${o.namespace}/${serviceAccount}`, createBoth)
    return fail(
      `ServiceAccount ${o.namespace}/${serviceAccount} not found`,
      `kubectl create serviceaccount ${shellQuote(serviceAccount)} -n ${shellQuote(o.namespace)} (or meshvm onboard … --create-service-account --apply)`,
    )
  })
  // What meshvm itself will do: apply the manifests, read the config, issue the VM token, read proxies.
  const permissions: [string, string, ResourceType, string, string?][] = [
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
        const resource = `${res.plural}${sub ? '/' + sub : ''}`
        const action = `${verb} ${resource}${res.group ? '.' + res.group : ''} in ${ns}`
        if (await canI(client, {verb, group: res.group, resource: res.plural, subresource: sub, namespace: res.namespaced ? ns : undefined})) return pass(`can ${action}`)
        return fail(`cannot ${action}`, `ask for a Role in ${ns} allowing "${verb}" on "${resource}"${res.group ? ` in API group "${res.group}"` : ''}`)
      }),
    ),
  )
  return [...results, ...rbac]
}
