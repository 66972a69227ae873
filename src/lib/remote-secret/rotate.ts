/**
 * `meshvm remote-secret rotate NAME --from CONTEXT` (docs/remote-secret.md, "rotate"): the steps are
 * ordered so that every failure leaves the old Secret in force, and each undoes its own work (the new
 * token Secret deleted, the old data put back). The old token Secret is deleted last, only after every
 * istiod reports the cluster synced with the new one: deleting it revokes the old token (kubernetes
 * pkg/serviceaccount/legacy.go rejects a token whose Secret is gone). Nothing here logs a token or a
 * kubeconfig.
 */
import {ExitCode, MeshvmError, type ExitCodeValue} from '../errors.js'
import type {KubeSession} from '../kube/session.js'
import {KubeApiError} from '../kube/errors.js'
import {Resources, resourcePath} from '../kube/resources.js'
import {backoff, caDataOf, inContext, tokenOf, waitForTokenData, type ProgressLog, type SecretObject} from './fetch.js'
import {buildRemoteKubeconfig, buildRemoteSecret, CONFIG_SECRET_KEY, DEFAULT_SERVICE_ACCOUNT, isServiceAccountTokenSecret, tokenSecretManifest, tokenSecretName} from './generate.js'
import {findRemoteSecret, listRemoteSecrets, remoteSecretEntries} from './list.js'
import {applyRemoteSecret} from './run.js'
import {istiodClusterViews, viewsFor, type IstiodClusterView} from './status.js'
import {permissionText, verifyRemoteKubeconfig} from './verify.js'

export interface RotateOptions {
  /** The Secret (or cluster) name in the target. */
  name: string
  /** Where the remote Secret lives (in its Istio namespace) and istiod runs. */
  target: KubeSession
  /** The cluster the credentials are for (--from). */
  source: KubeSession
  /** The reader ServiceAccount, for an old token that does not name one (default istio-system/istio-reader-service-account). */
  serviceAccount?: {namespace?: string; name: string}
  tokenTimeoutMs: number
  /** How long istiod may take to report the cluster synced with the new Secret. */
  istiodTimeoutMs: number
  requestTimeoutMs: number
  keepOldToken: boolean
  log: ProgressLog
}

export interface RotateResult {
  secret: string
  namespace: string
  cluster: string
  serviceAccount: string
  newTokenSecret: string
  /** The old token Secret deleted in the --from cluster (undefined: none found, or kept). */
  removedTokenSecret?: string
  oldTokenSecretNote?: string
  istiods: IstiodClusterView[]
}

const OLD_IN_FORCE = 'the old Secret is still in force: nothing istiod uses was changed'
const secretPath = (namespace: string, name?: string) => resourcePath(Resources.secrets, {namespace, name})

/** A failure that left the old Secret in force. A MeshvmError `cause` lends its exit code, code and hints. */
function rotateError(message: string, cause?: unknown, o: {exit?: ExitCodeValue; code?: string} = {}): MeshvmError {
  const from = cause instanceof MeshvmError ? cause : undefined
  return new MeshvmError(message, {exit: o.exit ?? from?.exit ?? ExitCode.FAILURE, code: o.code ?? from?.code ?? 'RotateFailed', hints: [...(from?.hints ?? []), OLD_IN_FORCE], cause})
}

export async function rotateRemoteSecret(o: RotateOptions, now = new Date()): Promise<RotateResult> {
  const {log} = o
  const {client: target, contextName: targetContext, istioNamespace, revision} = o.target
  const {client: source, contextName: sourceContext} = o.source
  // 1. The remote Secret and what it holds.
  const secret = findRemoteSecret(await listRemoteSecrets(target, istioNamespace), o.name)
  if (!secret) {
    throw new MeshvmError(`no remote secret ${JSON.stringify(o.name)} in namespace ${istioNamespace} of context ${targetContext} (label istio/multiCluster=true)`, {
      exit: ExitCode.NOT_FOUND,
      code: 'NotFound',
      hints: [`list them: meshvm remote-secret list --context ${targetContext}`, 'create one: meshvm remote-secret create --context SOURCE --name CLUSTER --apply-to ' + targetContext],
    })
  }
  const where = `${istioNamespace}/${secret.metadata.name}`
  const entries = remoteSecretEntries(secret, targetContext)
  if (entries.length !== 1) {
    throw new MeshvmError(`Secret ${where} holds ${entries.length} clusters; rotate works on a Secret with one cluster key`, {exit: ExitCode.USAGE, code: 'Usage'})
  }
  const {key, entry, kubeconfig: oldKubeconfig, parsed, token: oldToken} = entries[0]!
  const {cluster} = entry
  if (parsed.error || !parsed.server) throw new MeshvmError(`Secret ${where}: its kubeconfig is unusable (${parsed.error ?? 'no server'})`, {exit: ExitCode.FAILURE, code: 'BadSecret'})
  if (parsed.authType !== 'bearer-token') {
    throw new MeshvmError(`Secret ${where} authenticates with ${parsed.authType}, not a ServiceAccount token: there is no token to rotate`, {exit: ExitCode.USAGE, code: 'Usage'})
  }
  const saNamespace = o.serviceAccount?.namespace ?? oldToken.serviceAccount?.namespace ?? 'istio-system'
  const saName = o.serviceAccount?.name ?? oldToken.serviceAccount?.name ?? DEFAULT_SERVICE_ACCOUNT.remote
  const who = `${saNamespace}/${saName}`
  // Same Secret, same key: updated in place, whatever it is called.
  const secretFor = (kubeconfig: string) => {
    const {object} = buildRemoteSecret({name: cluster, type: key === CONFIG_SECRET_KEY ? 'config' : 'remote', namespace: istioNamespace, kubeconfig})
    return {...object, metadata: {...object.metadata, name: secret.metadata.name}}
  }

  // The old token Secret, looked up before anything changes (deleted only in step 6): the one that
  // holds the old token, by the legacy token's claim, else by content.
  let oldTokenSecret: SecretObject | undefined
  try {
    const secrets = await source.list<SecretObject>(secretPath(saNamespace))
    const holds = (s: SecretObject) => isServiceAccountTokenSecret(s, saName) && tokenOf(s) === parsed.token
    oldTokenSecret = secrets.find((s) => s.metadata.name === oldToken.secretName && holds(s)) ?? secrets.find(holds)
  } catch (err) {
    throw inContext(err, `--from ${sourceContext}: cannot list the token Secrets of ServiceAccount ${who}`)
  }

  // 2. A new token Secret.
  // A name that sorts after the old ones: NAME-istio-remote-secret-token-<base36 time>.
  const newName = `${tokenSecretName(saName)}-${Math.floor(now.getTime() / 1000).toString(36)}`
  let created: SecretObject
  try {
    created = (await source.request<SecretObject>({method: 'POST', path: secretPath(saNamespace), body: tokenSecretManifest(saName, saNamespace, newName), retry: 'create'}))!
  } catch (err) {
    throw rotateError(`--from ${sourceContext}: cannot create token Secret ${saNamespace}/${newName} for ServiceAccount ${saName}: ${(err as Error).message}`, err)
  }
  log.note(`Created token Secret ${saNamespace}/${newName} in context ${sourceContext}`)
  const dropNew = async (): Promise<void> => {
    try {
      await source.request({method: 'DELETE', path: secretPath(saNamespace, newName), retry: 'idempotent'})
      log.note(`Deleted the new token Secret ${saNamespace}/${newName} again`)
    } catch {
      log.warning(
        `could not delete the unused token Secret ${saNamespace}/${newName} in context ${sourceContext}; delete it: kubectl delete secret ${newName} -n ${saNamespace} --context ${sourceContext}`,
      )
    }
  }

  let newSecret: ReturnType<typeof secretFor>
  try {
    const filled = await waitForTokenData(source, created, {timeoutMs: o.tokenTimeoutMs, needToken: true, log})
    const newKubeconfig = buildRemoteKubeconfig({
      clusterName: cluster,
      server: parsed.server,
      caData: caDataOf(filled) || parsed.caData || '',
      tlsServerName: parsed.tlsServerName,
      auth: {type: 'bearer-token', token: tokenOf(filled)},
    })
    // 3. The new credentials, checked from here before istiod gets them.
    const v = await verifyRemoteKubeconfig(newKubeconfig, {timeoutMs: o.requestTimeoutMs})
    const failed = {exit: ExitCode.CHECK_FAILED, code: 'VerifyFailed'}
    if (v.connectError) throw rotateError(`the new token does not work against ${parsed.server}: ${v.connectError.message}`, undefined, failed)
    if (v.denied.length > 0) throw rotateError(`ServiceAccount ${who} lacks ${v.denied.length} permission(s) istiod needs: ${v.denied.map(permissionText).join(', ')}`, undefined, failed)
    log.note(`Verified the new token against ${parsed.server}: ${v.allowed.length} reader permissions allowed`)
    newSecret = secretFor(newKubeconfig)
  } catch (err) {
    await dropNew()
    if (!(err instanceof MeshvmError) || err.hints.includes(OLD_IN_FORCE)) throw err
    throw rotateError(err.message, err)
  }

  // 4. In place, by server-side apply.
  try {
    await applyRemoteSecret(target, newSecret, istioNamespace)
  } catch (err) {
    await dropNew()
    throw rotateError(`cannot update Secret ${where} in context ${targetContext}: ${(err as Error).message}`, err)
  }
  log.note(`Updated Secret ${where} in context ${targetContext} (server-side apply)`)

  // 5. istiod's side.
  const restoreOld = async (why: string): Promise<never> => {
    const restored = await applyRemoteSecret(target, secretFor(oldKubeconfig), istioNamespace).then(
      () => true,
      () => false,
    )
    await dropNew()
    if (!restored) {
      throw new MeshvmError(`${why}; and putting the old kubeconfig back into Secret ${where} failed`, {
        exit: ExitCode.PARTIAL,
        code: 'RotatePartial',
        hints: [
          `the old token Secret was not deleted, so the old credentials still work: re-apply them with meshvm remote-secret create --context ${sourceContext} --name ${cluster} --apply-to ${targetContext}`,
        ],
      })
    }
    throw rotateError(`${why}; the old kubeconfig was put back into Secret ${where}`, undefined, {exit: ExitCode.CHECK_FAILED, code: 'IstiodNotSynced'})
  }
  const deadline = Date.now() + o.istiodTimeoutMs
  const wait = backoff(deadline, 200, 2000)
  let views: IstiodClusterView[] = []
  for (;;) {
    try {
      views = viewsFor(await istiodClusterViews(target, {istioNamespace, revision, timeoutMs: o.requestTimeoutMs}), cluster, secret.metadata.name)
    } catch (err) {
      if (!(err instanceof MeshvmError)) throw err
      views = [{istiod: '(list)', error: err.message}]
    }
    if (views.length > 0 && views.every((v) => v.syncStatus === 'synced')) break
    if (Date.now() >= deadline) {
      const seen = views.length === 0 ? 'no running istiod' : views.map((v) => `${v.istiod}: ${v.error ?? v.syncStatus}`).join(', ')
      return restoreOld(`istiod did not report cluster ${cluster} synced within ${Math.round(o.istiodTimeoutMs / 1000)}s after the update (${seen})`)
    }
    await wait()
  }
  log.note(`istiod reports cluster ${cluster} synced: ${views.map((v) => v.istiod).join(', ')}`)
  // 6. The old token, revoked.
  let removedTokenSecret: string | undefined
  let oldTokenSecretNote: string | undefined
  if (!oldTokenSecret) oldTokenSecretNote = `no token Secret of ${who} in context ${sourceContext} holds the old token; nothing to remove`
  else if (o.keepOldToken) oldTokenSecretNote = `kept the old token Secret ${saNamespace}/${oldTokenSecret.metadata.name} (--keep-old-token)`
  else {
    try {
      await source.request({
        method: 'DELETE',
        path: secretPath(saNamespace, oldTokenSecret.metadata.name),
        // Only the Secret we read: not one re-created under the same name meanwhile.
        body: {apiVersion: 'v1', kind: 'DeleteOptions', preconditions: {resourceVersion: oldTokenSecret.metadata.resourceVersion}},
        retry: 'idempotent',
      })
      removedTokenSecret = oldTokenSecret.metadata.name
      log.note(`Deleted the old token Secret ${saNamespace}/${removedTokenSecret} in context ${sourceContext}`)
    } catch (err) {
      if (err instanceof KubeApiError && err.status === 404) oldTokenSecretNote = `the old token Secret ${saNamespace}/${oldTokenSecret.metadata.name} was already gone`
      else {
        oldTokenSecretNote = `could not delete the old token Secret ${saNamespace}/${oldTokenSecret.metadata.name}: ${(err as Error).message}; delete it by hand to revoke the old token`
        log.warning(oldTokenSecretNote)
      }
    }
  }
  return {secret: secret.metadata.name, namespace: istioNamespace, cluster, serviceAccount: who, newTokenSecret: newName, removedTokenSecret, oldTokenSecretNote, istiods: views}
}
