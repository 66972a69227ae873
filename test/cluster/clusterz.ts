/**
 * istiod's multi-cluster secret controller, as far as `/debug/clusterz` shows it (istio
 * pkg/kube/multicluster/secretcontroller.go, pilot/pkg/xds/debug.go): the config cluster itself,
 * then one entry per key of every Secret labelled istio/multiCluster=true in istiod's namespace.
 * Like istiod, each key is loaded once per version of its Secret: a client is built from the
 * kubeconfig and must list from the remote API server (informer sync) — "synced" when it can,
 * "timeout" when it cannot (bad token, unreachable server). A later change elsewhere (the token
 * revoked) does not change a loaded cluster's status, as in istiod, until the Secret changes.
 *
 *   installClusterz(cluster.mesh, cluster.store)   // adds /debug/clusterz to every simulated istiod
 */
import {request} from 'node:https'
import {parse as parseYaml} from 'yaml'
import type {Mesh} from './mesh.js'
import {resourceKey, type Store} from './store.js'

interface DebugInfo {
  id: string
  secretName: string
  syncStatus: 'synced' | 'syncing' | 'timeout' | 'closed'
}

type Json = Record<string, unknown>

function kubeconfigTarget(text: string): {server: string; ca?: string; token?: string; servername?: string} | undefined {
  try {
    const doc = parseYaml(text) as Json
    const ctxName = doc['current-context']
    const ctx = (doc.contexts as Json[]).find((c) => c.name === ctxName)?.context as Json
    const cluster = (doc.clusters as Json[]).find((c) => c.name === ctx.cluster)?.cluster as Json
    const user = ((doc.users as Json[]).find((u) => u.name === ctx.user)?.user ?? {}) as Json
    const ca = cluster['certificate-authority-data'] ? Buffer.from(String(cluster['certificate-authority-data']), 'base64').toString('utf8') : undefined
    return {server: String(cluster.server), ca, token: typeof user.token === 'string' ? user.token : undefined, servername: cluster['tls-server-name'] as string | undefined}
  } catch {
    return undefined
  }
}

/** One list against the remote server with the kubeconfig's credentials: does the informer sync? */
function syncs(kubeconfig: string): Promise<boolean> {
  const t = kubeconfigTarget(kubeconfig)
  if (!t) return Promise.resolve(false)
  return new Promise((resolve) => {
    let url: URL
    try {
      url = new URL('/api/v1/namespaces?limit=1', t.server)
    } catch {
      resolve(false)
      return
    }
    const req = request(
      {
        hostname: url.hostname,
        port: url.port,
        path: url.pathname + url.search,
        method: 'GET',
        ca: t.ca,
        servername: t.servername,
        headers: t.token ? {Authorization: `Bearer ${t.token}`} : {},
        timeout: 5000,
      },
      (res) => {
        res.resume()
        res.on('end', () => resolve(res.statusCode === 200))
      },
    )
    req.on('error', () => resolve(false))
    req.on('timeout', () => req.destroy())
    req.end()
  })
}

export function installClusterz(mesh: Mesh, store: Store): void {
  // istiod name → "ns/secret#key" → {version, status}
  const loaded = new Map<string, Map<string, {version: string; status: DebugInfo['syncStatus']}>>()
  mesh.debugHandlers.set('/debug/clusterz', async (istiod) => {
    const mine = loaded.get(istiod.name) ?? new Map()
    loaded.set(istiod.name, mine)
    const out: DebugInfo[] = [{id: istiod.clusterId, secretName: '', syncStatus: 'synced'}]
    const secrets = store.list(resourceKey('', 'secrets'), istiod.namespace).filter((s) => s.metadata.labels?.['istio/multiCluster'] === 'true')
    const seen = new Set<string>()
    for (const s of secrets.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : 1))) {
      for (const [key, b64] of Object.entries((s.data as Record<string, string> | undefined) ?? {})) {
        const id = `${istiod.namespace}/${s.metadata.name}#${key}`
        seen.add(id)
        const version = `${s.metadata.uid}/${s.metadata.resourceVersion}`
        let entry = mine.get(id)
        if (!entry || entry.version !== version) {
          entry = {version, status: (await syncs(Buffer.from(b64, 'base64').toString('utf8'))) ? 'synced' : 'timeout'}
          mine.set(id, entry)
        }
        out.push({id: key, secretName: `${istiod.namespace}/${s.metadata.name}`, syncStatus: entry.status})
      }
    }
    for (const id of [...mine.keys()]) if (!seen.has(id)) mine.delete(id)
    return out
  })
}
