/**
 * `meshvm bundle NAME -d DIR --refresh-token`: a new bootstrap token for a VM whose token is about to
 * expire, written over DIR/istio-token (mode 0600, atomically) and nothing else of the bundle —
 * except the expiry guard in install.sh, which names the old token's expiry and would refuse the new
 * token; both files are replaced together or not at all. The token is issued as `meshvm bundle`
 * issues it (src/lib/bundle/fetch.ts requestToken), for the service account the bundle's
 * cluster.env names, and only when that is still the group's.
 */
import {existsSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {ExitCode, MeshvmError} from '../errors.js'
import {writeDirAtomic, type FileToWrite} from '../fs/atomic.js'
import {unignoredCredentialWarning} from '../fs/git.js'
import type {KubeClient} from '../kube/client.js'
import {serviceAccountOf, type WorkloadGroupLike} from '../bundle/generate.js'
import {requestToken} from '../bundle/fetch.js'
import {bundleCommand, parseClusterEnv} from './offline.js'
import {dns1123Label, dns1123Subdomain} from '../validation/kube.js'

export interface RefreshResult {
  files: string[]
  /** The token is inside a git work tree that does not ignore it. */
  warnings: string[]
  expiresAt?: Date
  serviceAccount: string
}

/** install.sh's guard: `if [ "$(date +%s)" -ge EPOCH ]` and the ISO date in its comment and message. */
export function updateInstallGuard(script: string, expiresAt: Date): string {
  const m = /if \[ "\$\(date \+%s\)" -ge (\d+) \]/.exec(script)
  if (!m) return script
  const oldIso = new Date(Number(m[1]) * 1000).toISOString()
  return script
    .split(m[0])
    .join(`if [ "$(date +%s)" -ge ${Math.floor(expiresAt.getTime() / 1000)} ]`)
    .split(oldIso)
    .join(expiresAt.toISOString())
}

export async function refreshToken(client: KubeClient, wg: WorkloadGroupLike, o: {dir: string; tokenSeconds: number}): Promise<RefreshResult> {
  const envPath = join(o.dir, 'cluster.env')
  // The line that writes the whole bundle again: for the group given, with what cluster.env says of the rest.
  const rewrite = (env: Record<string, string>) => bundleCommand({...env, ISTIO_META_WORKLOAD_NAME: wg.metadata.name, POD_NAMESPACE: wg.metadata.namespace ?? ''}, {dir: o.dir})
  if (!existsSync(envPath)) {
    throw new MeshvmError(`--refresh-token: ${envPath} not found: not a bundle directory`, {
      exit: ExitCode.NOT_FOUND,
      code: 'NotFound',
      hints: [`write the whole bundle first: ${rewrite({})}`],
    })
  }
  const env = parseClusterEnv(readFileSync(envPath, 'utf8'))
  const namespace = env.values.POD_NAMESPACE
  const sa = env.values.SERVICE_ACCOUNT
  if (env.problems.length > 0 || !namespace || !sa) {
    throw new MeshvmError(`--refresh-token: ${envPath} does not name the VM's namespace and service account (POD_NAMESPACE, SERVICE_ACCOUNT)`, {
      exit: ExitCode.FAILURE,
      code: 'BadBundle',
      hints: [`write the whole bundle again: ${rewrite(env.values)}`],
    })
  }
  // The two names go into the TokenRequest's path: only names Kubernetes could hold, checked before it.
  for (const [key, value, problem] of [
    ['POD_NAMESPACE', namespace, dns1123Label(namespace)],
    ['SERVICE_ACCOUNT', sa, dns1123Subdomain(sa)],
  ] as const) {
    if (problem) throw new MeshvmError(`--refresh-token: ${envPath}: ${key} ${JSON.stringify(value)} ${problem}`, {exit: ExitCode.FAILURE, code: 'BadBundle'})
  }
  const groupSa = serviceAccountOf(wg)
  if (wg.metadata.namespace !== namespace || wg.metadata.name !== env.values.ISTIO_META_WORKLOAD_NAME || groupSa !== sa) {
    throw new MeshvmError(
      `--refresh-token: the bundle in ${o.dir} is for ${namespace}/${env.values.ISTIO_META_WORKLOAD_NAME ?? '?'} (service account ${sa}), not for WorkloadGroup ${wg.metadata.namespace}/${wg.metadata.name} (service account ${groupSa})`,
      {
        exit: ExitCode.USAGE,
        code: 'Usage',
        hints: [`the group changed, or this is another group's bundle: write it again with ${rewrite(env.values)}`],
      },
    )
  }
  const issued = await requestToken(client, namespace, sa, o.tokenSeconds)
  const files: FileToWrite[] = [{name: 'istio-token', data: issued.token, mode: 0o600}]
  const installPath = join(o.dir, 'install.sh')
  if (issued.expiresAt && existsSync(installPath)) {
    const script = readFileSync(installPath, 'utf8')
    const updated = updateInstallGuard(script, issued.expiresAt)
    if (updated !== script) files.push({name: 'install.sh', data: updated, mode: 0o755})
  }
  const written = writeDirAtomic(o.dir, files, {keep: 'all'})
  const warning = unignoredCredentialWarning(join(o.dir, 'istio-token'))
  return {files: written, warnings: warning ? [warning] : [], expiresAt: issued.expiresAt, serviceAccount: `${namespace}/${sa}`}
}
