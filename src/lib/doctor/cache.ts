/**
 * `doctor -A`: the VMs of a namespace share what they read (the namespace's WorkloadEntries, Services,
 * ServiceEntries, istiod's pods and Deployment, the gateways, the mesh root…). One run reads each list
 * and each object once, through this client: every other call goes to the real client unchanged.
 * A read that failed stays failed for the run (each VM reports the same error, and the API server is
 * not asked again for every VM).
 */
import type {KubeClient, KubeRequest} from '../kube/client.js'

export function cachedReads(client: KubeClient): KubeClient {
  const memo = new Map<string, Promise<unknown>>()
  const once = <T>(verb: string, path: string, query: KubeRequest['query'] | undefined, read: () => Promise<T>): Promise<T> => {
    const key = `${verb} ${path} ${JSON.stringify(query ?? {})}`
    let p = memo.get(key) as Promise<T> | undefined
    if (!p) {
      p = read()
      memo.set(key, p)
    }
    return p
  }
  const list: KubeClient['list'] = (path, query) => once('list', path, query, () => client.list(path, query))
  const get: KubeClient['get'] = (path, query) => once('get', path, query, () => client.get(path, query))
  const getOptional: KubeClient['getOptional'] = (path, query) => once('getOptional', path, query, () => client.getOptional(path, query))
  const overrides: Record<string | symbol, unknown> = {list, get, getOptional}
  return new Proxy(client, {
    get(target, prop) {
      if (prop in overrides) return overrides[prop]
      const v = Reflect.get(target, prop, target) as unknown
      return typeof v === 'function' ? (v as (...a: unknown[]) => unknown).bind(target) : v
    },
  })
}
