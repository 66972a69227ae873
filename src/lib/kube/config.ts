/**
 * Kubeconfig loading with the failure modes client-node hides made explicit:
 * - no kubeconfig at all (client-node silently falls back to http://localhost:8080),
 * - an unknown --context (client-node accepts it and returns a null cluster),
 * - unparsable files (client-node's parser quotes file contents in its errors: they may hold tokens).
 */
import {existsSync, readFileSync} from 'node:fs'
import {homedir} from 'node:os'
import {delimiter, dirname, join, resolve} from 'node:path'
import {parse as parseYaml} from 'yaml'
import {KubeConfig} from '@kubernetes/client-node'
import {ExitCode, MeshvmError, UsageError} from '../errors.js'

export interface KubeTarget {
  kubeconfig?: string
  context?: string
}

export interface LoadedKubeConfig {
  kc: KubeConfig
  contextName: string
  clusterName: string
  server: string
  /** The context's namespace, or "default". */
  namespace: string
  /** Where it came from, for messages: a path list, or "in-cluster". */
  source: string
  /**
   * The user's `tokenFile` (absolute), when the user has no other credential: kubectl reads it for
   * every request; client-node ignores the field.
   */
  tokenFile?: string
}

/** users[].user.tokenFile of one kubeconfig text, resolved against the file's directory as kubectl does. */
function tokenFilesIn(text: string, file: string): Map<string, string> {
  const out = new Map<string, string>()
  if (!text.includes('tokenFile')) return out
  const users = (parseYaml(text, {logLevel: 'error'}) as {users?: {name?: unknown; user?: {tokenFile?: unknown}}[]} | null)?.users
  for (const u of Array.isArray(users) ? users : []) {
    const path = u?.user?.tokenFile
    if (typeof u?.name === 'string' && typeof path === 'string' && path !== '') out.set(u.name, resolve(dirname(file), path))
  }
  return out
}

function kubeconfigFiles(target: KubeTarget, env: NodeJS.ProcessEnv): string[] {
  if (target.kubeconfig !== undefined) {
    if (!existsSync(target.kubeconfig)) throw new UsageError(`--kubeconfig ${JSON.stringify(target.kubeconfig)}: file not found`)
    return [target.kubeconfig]
  }
  if (env.KUBECONFIG) {
    // kubectl skips missing entries of a KUBECONFIG list.
    return env.KUBECONFIG.split(delimiter).filter((f) => f !== '' && existsSync(f))
  }
  const home = env.HOME ?? homedir()
  const file = join(home, '.kube', 'config')
  return existsSync(file) ? [file] : []
}

function parseFailure(file: string, err: unknown): MeshvmError {
  // Keep the position only: the parser's message quotes the offending lines, which may be secrets.
  const mark = (err as {mark?: {line?: number; column?: number}}).mark
  const where = mark?.line !== undefined ? ` (line ${mark.line + 1})` : ''
  const code = (err as NodeJS.ErrnoException).code
  const reason = code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : `not a valid kubeconfig${where}`
  return new MeshvmError(`cannot read kubeconfig ${file}: ${reason}`, {exit: ExitCode.USAGE, code: 'BadKubeconfig'})
}

export function loadKubeConfig(target: KubeTarget = {}, env: NodeJS.ProcessEnv = process.env): LoadedKubeConfig {
  const kc = new KubeConfig()
  const files = kubeconfigFiles(target, env)
  const tokenFiles = new Map<string, string>()
  let source: string
  if (files.length === 0) {
    if (env.KUBERNETES_SERVICE_HOST && existsSync('/var/run/secrets/kubernetes.io/serviceaccount/token')) {
      kc.loadFromCluster()
      source = 'in-cluster'
    } else {
      throw new MeshvmError('no kubeconfig found: KUBECONFIG is unset or names no existing file, and ~/.kube/config does not exist', {
        exit: ExitCode.UNREACHABLE,
        code: 'NoKubeconfig',
        hints: ['pass --kubeconfig PATH or set KUBECONFIG to the cluster you want to use'],
      })
    }
  } else {
    for (const [i, file] of files.entries()) {
      const one = i === 0 ? kc : new KubeConfig()
      try {
        const text = readFileSync(file, 'utf8')
        // kubectl accepts an empty (or comments-only) file in a KUBECONFIG list as an empty config.
        if (parseYaml(text, {logLevel: 'error'}) == null) continue
        one.loadFromString(text)
        // The first file that defines a user wins, as for everything else.
        for (const [user, path] of tokenFilesIn(text, file)) if (!tokenFiles.has(user) && (i === 0 || !kc.getUser(user))) tokenFiles.set(user, path)
      } catch (err) {
        throw parseFailure(file, err)
      }
      if (i > 0) mergeInto(kc, one)
    }
    source = files.join(delimiter)
  }

  const contextName = target.context ?? kc.getCurrentContext()
  const contexts = kc.getContexts().map((c) => c.name)
  if (!contextName) {
    throw new MeshvmError(`no current context in ${source}`, {
      exit: ExitCode.NOT_FOUND,
      code: 'NoContext',
      hints: [contexts.length > 0 ? `pass --context (available: ${contexts.join(', ')})` : 'the kubeconfig has no contexts'],
    })
  }
  const context = kc.getContextObject(contextName)
  if (!context) {
    throw new MeshvmError(`context ${JSON.stringify(contextName)} not found in ${source}`, {
      exit: ExitCode.NOT_FOUND,
      code: 'ContextNotFound',
      hints: [contexts.length > 0 ? `available contexts: ${contexts.join(', ')}` : 'the kubeconfig has no contexts'],
    })
  }
  kc.setCurrentContext(contextName)
  const cluster = kc.getCluster(context.cluster)
  if (!cluster || !cluster.server) {
    throw new MeshvmError(`context ${JSON.stringify(contextName)} refers to cluster ${JSON.stringify(context.cluster)}, which has no server in ${source}`, {
      exit: ExitCode.USAGE,
      code: 'BadKubeconfig',
    })
  }
  if (cluster.server.startsWith('http:') && !cluster.skipTLSVerify) {
    throw new MeshvmError(`cluster ${JSON.stringify(cluster.name)} uses plain HTTP (${cluster.server}); meshvm only talks to API servers over HTTPS`, {
      exit: ExitCode.USAGE,
      code: 'InsecureServer',
    })
  }
  const user = kc.getUser(context.user)
  const tokenFile = user && !user.token && !user.exec && !user.authProvider ? tokenFiles.get(user.name) : undefined
  // Userinfo in the server URL (https://user:pass@host) is never used nor shown.
  return {kc, contextName, clusterName: cluster.name, server: withoutUserinfo(cluster.server).replace(/\/+$/, ''), namespace: context.namespace || 'default', source, ...(tokenFile ? {tokenFile} : {})}
}

function withoutUserinfo(server: string): string {
  try {
    const url = new URL(server)
    if (!url.username && !url.password) return server
    url.username = ''
    url.password = ''
    return url.toString()
  } catch {
    return server.replace(/\/\/[^/@]*@/, '//')
  }
}

// kubectl's merge rule for KUBECONFIG lists: the first file that defines a name wins.
function mergeInto(into: KubeConfig, from: KubeConfig): void {
  const has = <T extends {name: string}>(list: T[], name: string) => list.some((x) => x.name === name)
  for (const c of from.getClusters()) if (!has(into.getClusters(), c.name)) into.addCluster(c)
  for (const u of from.getUsers()) if (!has(into.getUsers(), u.name)) into.addUser(u)
  for (const c of from.getContexts()) if (!has(into.getContexts(), c.name)) into.addContext(c)
  if (!into.getCurrentContext() && from.getCurrentContext()) into.setCurrentContext(from.getCurrentContext())
}
