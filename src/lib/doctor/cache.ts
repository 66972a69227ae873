/**
 * `doctor -A`: the VMs of a namespace share what they read (the namespace's WorkloadEntries, Services,
 * ServiceEntries, istiod's pods and Deployment, the gateways, the mesh root…). One run reads each list
 * and each object once, through this client: every other call goes to the real client unchanged.
 * A read that failed stays failed for the run (each VM reports the same error, and the API server is
 * not asked again for every VM).
 */
import type {KubeClient, KubeRequest} from '../kube/client.js'

const READS = new Set<string | symbol>(['list', 'get', 'getOptional'])

export function cachedReads(client: KubeClient): KubeClient {
  const memo = new Map<string, Promise<unknown>>()
  return new Proxy(client, {
    get(target, prop) {
      const v = Reflect.get(target, prop, target) as unknown
      if (typeof v !== 'function') return v
      const method = (v as (...a: unknown[]) => Promise<unknown>).bind(target)
      if (!READS.has(prop)) return method
      return (path: string, query?: KubeRequest['query']) => {
        const key = `${String(prop)} ${path} ${JSON.stringify(query ?? {})}`
        if (!memo.has(key)) memo.set(key, method(path, query))
        return memo.get(key)
      }
    },
  })
}
