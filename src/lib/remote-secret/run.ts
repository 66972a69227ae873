/**
 * `create-remote-secret` against the cluster whose credentials are exported, in istioctl's order
 * (§5.3): cluster name → ServiceAccount → token Secret → kubeconfig → Secret. The server (and its
 * warnings) is settled first, so warnings appear before any wait. The command
 * decides where the result goes (stdout, --output-file, --apply-to).
 */
import type {WriteOutcome} from '../apply/apply.js'
import type {KubeClient} from '../kube/client.js'
import {buildRemoteKubeconfig, buildRemoteSecret, remoteSecretWarnings, type RemoteKubeconfigAuth, type RemoteSecretManifest, type RemoteSecretSettings} from './generate.js'
import {applyManifest, caDataOf, kubeSystemUid, serviceAccountTokenSecret, tokenOf, type ProgressLog} from './fetch.js'

export interface RemoteSecretRun {
  settings: RemoteSecretSettings
  /** Namespace of the ServiceAccount, its token Secret and the printed Secret. */
  namespace: string
  /** --create-service-account */
  createServiceAccount: boolean
  /** --token-timeout, in ms. */
  tokenTimeoutMs: number
  /** The API server of the selected kubeconfig context (used unless --server is given). */
  contextServer: string
  log: ProgressLog
}

/** The Secret, with the cluster name (--name or the kube-system UID), the server and the kubeconfig (a credential) it holds. */
export async function createRemoteSecret(client: KubeClient, run: RemoteSecretRun) {
  const {settings, namespace, log} = run
  const server = settings.server ?? run.contextServer
  const serverSource = settings.server === undefined ? 'kubeconfig' : 'flag'
  for (const w of remoteSecretWarnings({server, serverSource, authType: settings.authType, authPluginName: settings.authPlugin?.name})) log.warning(w)
  const clusterName = settings.name ?? (await kubeSystemUid(client))
  const secret = await serviceAccountTokenSecret(client, run)
  // validateRemoteSecretOptions sets authPlugin exactly when --auth-type is plugin.
  const auth: RemoteKubeconfigAuth = settings.authPlugin ? {type: 'plugin', ...settings.authPlugin} : {type: 'bearer-token', token: tokenOf(secret)}
  const kubeconfig = buildRemoteKubeconfig({clusterName, server, caData: caDataOf(secret), tlsServerName: settings.tlsServerName, auth})
  const manifest = buildRemoteSecret({name: clusterName, type: settings.type, namespace, kubeconfig})
  return {manifest, clusterName, server, kubeconfig}
}

/**
 * `--apply-to`: the Secret, server-side applied (forced: meshvm owns it) into `namespace`. It is sent
 * with `data` rather than the printed `stringData`: the stored object is the same, and field
 * ownership and no-op detection then work on a plain map.
 */
export async function applyRemoteSecret(client: KubeClient, secret: RemoteSecretManifest['object'], namespace: string): Promise<WriteOutcome> {
  const {stringData, ...rest} = secret
  const data = Object.fromEntries(Object.entries(stringData).map(([k, v]) => [k, Buffer.from(v, 'utf8').toString('base64')]))
  return applyManifest(client, {...rest, metadata: {...rest.metadata, namespace}, data}, true)
}
