/**
 * The dynamic part of shell completion: context names from the kubeconfig, and namespace, WorkloadGroup
 * and registration names from the cluster, through the one Kubernetes layer. A slow or unreachable
 * cluster must never hang the shell: everything is bounded by `timeoutMs` (requests and retries
 * included), and any failure completes nothing.
 */
import type {Dynamic} from './completion.js'

export interface CompletionTarget {
  kubeconfig?: string
  context?: string
  namespace?: string
}

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
      return await Promise.race([names(kind, session), deadline])
    } finally {
      clearTimeout(timer)
      session.client.close()
    }
  } catch {
    return []
  }
}

async function names(kind: Exclude<Dynamic, 'contexts'>, session: Awaited<ReturnType<typeof import('./kube/session.js').openSession>>): Promise<string[]> {
  const {resourcePath, Resources} = await import('./kube/resources.js')
  type Named = {metadata?: {name?: string}}
  const of = (items: Named[]): string[] => items.map((o) => o.metadata?.name ?? '').filter((n) => n !== '')
  if (kind === 'namespaces') return of(await session.client.list<Named>(resourcePath(Resources.namespaces)))
  if (kind === 'workloadgroups') return of(await session.client.list<Named>(resourcePath(Resources.workloadGroups, {namespace: session.namespace})))
  const {listRegistrations} = await import('./war/fetch.js')
  const out: string[] = []
  for await (const page of listRegistrations(session.client, {namespace: session.namespace, source: 'all', chunkSize: 500}, {resourceVersions: {}})) {
    out.push(...page.map((l) => l.registration.name))
  }
  return out
}
