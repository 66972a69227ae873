/**
 * The dynamic part of shell completion: context names from the kubeconfig, and namespace, WorkloadGroup
 * and registration names from the cluster, through the one Kubernetes layer. A slow or unreachable
 * cluster must never hang the shell: everything is bounded by `timeoutMs` (requests and retries
 * included), and any failure completes nothing.
 */
import type {Invocation} from './cli/invocation.js'
import type {Dynamic} from './completion.js'
import type {KubeSession} from './kube/session.js'

/** The cluster flags typed, and where the remote secrets are (`-i`). */
export type CompletionTarget = Invocation['kube'] & {istioNamespace?: string}

export async function dynamicValues(kind: Dynamic, target: CompletionTarget, timeoutMs = 2000): Promise<string[]> {
  try {
    if (kind === 'contexts') {
      const {kubeconfigContexts} = await import('./kube/config.js')
      return kubeconfigContexts({kubeconfig: target.kubeconfig})
    }
    const {openSession} = await import('./kube/session.js')
    const session = await openSession({kubeconfig: target.kubeconfig, context: target.context, namespace: target.namespace, 'request-timeout': `${timeoutMs}ms`})
    let timer: NodeJS.Timeout | undefined
    const deadline = new Promise<string[]>((resolve) => {
      timer = setTimeout(() => resolve([]), timeoutMs)
    })
    try {
      return await Promise.race([names(kind, session, target), deadline])
    } finally {
      clearTimeout(timer)
      session.client.close()
    }
  } catch {
    return []
  }
}

async function names(kind: Exclude<Dynamic, 'contexts'>, session: KubeSession, target: CompletionTarget): Promise<string[]> {
  const {resourcePath, Resources} = await import('./kube/resources.js')
  type Named = {metadata?: {name?: string; annotations?: Record<string, string>}; spec?: {containers?: {name?: string}[]}}
  const of = (items: Named[]): string[] => items.map((o) => o.metadata?.name ?? '').filter((n) => n !== '')
  if (kind === 'namespaces') return of(await session.client.list<Named>(resourcePath(Resources.namespaces)))
  if (kind === 'workloadgroups') return of(await session.client.list<Named>(resourcePath(Resources.workloadGroups, {namespace: session.namespace})))
  if (kind === 'remote-secrets') {
    // Only the names are kept; the Secrets' contents are dropped with the list.
    const {MULTICLUSTER_SECRET_LABEL} = await import('./remote-secret/generate.js')
    const namespace = target.istioNamespace ?? 'istio-system'
    return of(await session.client.list<Named>(resourcePath(Resources.secrets, {namespace}), {labelSelector: `${MULTICLUSTER_SECRET_LABEL}=true`}))
  }
  const out: string[] = []
  if (kind === 'proxies') {
    // proxy-status NAME: POD.NAMESPACE for the pods with a sidecar, then the VMs' registration names.
    const pods = await session.client.list<Named>(resourcePath(Resources.pods, {namespace: session.namespace}))
    const sidecar = (p: Named) => Boolean(p.metadata?.annotations?.['sidecar.istio.io/status']) || (p.spec?.containers ?? []).some((c) => c.name === 'istio-proxy')
    out.push(...of(pods.filter(sidecar)).map((n) => `${n}.${session.namespace}`))
  }
  const {listRegistrations} = await import('./war/fetch.js')
  for await (const page of listRegistrations(session.client, {namespace: session.namespace, source: 'all', chunkSize: 500}, {resourceVersions: {}})) {
    out.push(...page.map((l) => l.registration.name))
  }
  return out
}
