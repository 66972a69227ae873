/**
 * `meshvm remote-secret status` (docs/remote-secret.md, "status"): for every remote secret, whether its
 * own kubeconfig reaches the remote API server with the reader permissions istiod needs (verify.ts),
 * and what each running istiod says in its `/debug/clusterz` (istio pilot/pkg/xds/debug.go: a list of
 * cluster.DebugInfo {id, secretName, syncStatus}), read as proxy-status reads syncz (istiod/reader.ts).
 */
import {ExitCode, MeshvmError} from '../errors.js'
import type {KubeClient} from '../kube/client.js'
import {IstiodPool} from '../istiod/reader.js'
import {findIstiods, istiodTarget} from '../proxy-status/fetch.js'
import {listRemoteSecrets, remoteSecretEntries, type ParsedRemoteKubeconfig, type RemoteSecretEntry} from './list.js'
import {permissionText, verifyRemoteKubeconfig} from './verify.js'
import {isRecord, sortedRecord} from '../util/records.js'

export interface ClusterDebugInfo {
  id: string
  secretName?: string
  syncStatus: string
}

/** By istiod name: its clusterz, or why it could not be read. */
type Views = Record<string, ClusterDebugInfo[] | MeshvmError>

export interface IstiodClusterView {
  istiod: string
  syncStatus?: string
  error?: string
}

export interface RemoteSecretStatus extends RemoteSecretEntry {
  /** The credentials reached the server (GET /version). */
  reachable: boolean
  kubernetesVersion?: string
  /** Reader permissions the credentials lack (empty: all held). */
  denied: string[]
  /** Why the credentials did not work, when they did not. */
  credentialError?: string
  /** One per running istiod: its syncStatus for this cluster, or why it could not be read. */
  istiods: IstiodClusterView[]
  /** ok: reachable, all permissions, every istiod synced; else what is wrong. */
  verdict: 'ok' | 'failing'
}

/** istiod's /debug/clusterz answer: a list of cluster.DebugInfo (JSON tags, or Go's field names). */
export function parseClusterz(body: string): ClusterDebugInfo[] {
  const bad = (what: string) => new MeshvmError(`istiod answered /debug/clusterz with something that is not ${what}`, {exit: ExitCode.FAILURE, code: 'BadAnswer'})
  let json: unknown
  try {
    json = JSON.parse(body)
  } catch {
    throw bad('JSON')
  }
  if (!Array.isArray(json)) throw bad('a list')
  return json
    .filter(isRecord)
    .map((x) => ({id: String(x.id ?? x.ID ?? ''), secretName: typeof x.secretName === 'string' ? x.secretName : undefined, syncStatus: String(x.syncStatus ?? x.SyncStatus ?? '')}))
}

/**
 * What every running istiod of the namespace reports, by istiod name: HTTP over port-forward to its
 * monitoring port, else xDS `istio.io/debug/clusterz` over port-forward to 15012
 * (src/lib/istiod/reader.ts debugEndpoint), as `istioctl x remote-clusters`.
 */
export async function istiodClusterViews(client: KubeClient, o: {istioNamespace: string; revision?: string; timeoutMs: number}): Promise<Views> {
  const {selected} = await findIstiods(client, {istioNamespace: o.istioNamespace, revision: o.revision})
  const views: Views = {}
  const pool = new IstiodPool(client, o.istioNamespace)
  try {
    await Promise.all(
      selected.map(async (istiod) => {
        try {
          views[istiod.name] = parseClusterz((await pool.reader(istiodTarget(istiod)).debugEndpoint('clusterz', o.timeoutMs)).body)
        } catch (err) {
          if (!(err instanceof MeshvmError)) throw err
          views[istiod.name] = err
        }
      }),
    )
  } finally {
    pool.close()
  }
  return views
}

export function viewsFor(views: Views, cluster: string, secretName: string): IstiodClusterView[] {
  return Object.entries(sortedRecord(views)).map(([istiod, v]) => {
    if (v instanceof MeshvmError) return {istiod, error: v.message}
    const info = v.find((c) => c.id === cluster && (c.secretName === undefined || c.secretName === '' || c.secretName.endsWith(secretName))) ?? v.find((c) => c.id === cluster)
    return {istiod, syncStatus: info?.syncStatus ?? 'not-loaded'}
  })
}

/** Whether a kubeconfig's own credentials reach its server and may read what istiod needs. */
async function checkCredentials(entry: RemoteSecretEntry, kubeconfig: string, parsed: ParsedRemoteKubeconfig, timeoutMs: number) {
  const failed = (credentialError: string) => ({reachable: false, denied: [], credentialError})
  if (parsed.error || !parsed.server) return failed(parsed.error ?? 'no server in the kubeconfig')
  if (parsed.authType !== 'bearer-token') return failed(`auth type ${entry.authType}: meshvm cannot run that credential plugin itself; see istiod's view`)
  try {
    const v = await verifyRemoteKubeconfig(kubeconfig, {timeoutMs})
    if (v.connectError) return failed(v.connectError.message)
    return {reachable: true, ...(v.gitVersion ? {kubernetesVersion: v.gitVersion} : {}), denied: v.denied.map(permissionText)}
  } catch (err) {
    if (!(err instanceof MeshvmError)) throw err
    return failed(err.message)
  }
}

export async function remoteSecretStatus(client: KubeClient, o: {context: string; istioNamespace: string; revision?: string; timeoutMs: number; only?: string}): Promise<RemoteSecretStatus[]> {
  const secrets = await listRemoteSecrets(client, o.istioNamespace)
  const entries = secrets.flatMap((s) => remoteSecretEntries(s, o.context)).filter((e) => o.only === undefined || e.entry.secret === o.only || e.entry.cluster === o.only)
  const views = entries.length > 0 ? await istiodClusterViews(client, o) : {}
  return Promise.all(
    entries.map(async ({entry, kubeconfig, parsed}) => {
      const istiods = viewsFor(views, entry.cluster, entry.secret)
      const credentials = await checkCredentials(entry, kubeconfig, parsed, o.timeoutMs)
      const istiodOk = istiods.length > 0 && istiods.every((i) => i.syncStatus === 'synced')
      const verdict = credentials.reachable && credentials.denied.length === 0 && istiodOk ? 'ok' : 'failing'
      return {...entry, ...credentials, istiods, verdict}
    }),
  )
}
