/**
 * Kubeconfig loading as kubectl does it (k8s.io/client-go/tools/clientcmd: loader.go, validation.go,
 * client_config.go); which files, how they merge, relative paths, the in-cluster fall-back and what is
 * refused: docs/conventions.md ("Cluster access"). Done here rather than by @kubernetes/client-node,
 * whose KubeConfig is costly to load on every cluster command (docs/decisions/cluster-commands.md) and
 * hides failures: no kubeconfig at all silently becomes http://localhost:8080, an unknown --context a
 * null cluster, and its parser quotes file contents, which may be tokens, in its errors.
 * Where meshvm differs from kubectl: an http:// server is refused (unless insecure-skip-tls-verify), a
 * context whose cluster is missing is an error instead of a fall-back to localhost:8080, a context
 * without a known user sends no credentials (kubectl would prompt for a user name), and errors never
 * quote the file's content. auth-provider users (oidc, azure, gcp) are the one case left to
 * client-node, loaded only for them (credentials.ts).
 */
import {existsSync, readFileSync, statSync} from 'node:fs'
import {homedir} from 'node:os'
import {delimiter, dirname, isAbsolute, join, resolve} from 'node:path'
import {parse as parseYaml, type DocumentOptions, type ParseOptions, type SchemaOptions, type Tags} from 'yaml'
import {ExitCode, MeshvmError, UsageError} from '../errors.js'
import {dns1123Label} from '../validation/kube.js'
import type {ExecConfig} from './exec.js'
import {parseKubeconfigYaml} from './kubeconfig-yaml.js'

export interface KubeTarget {
  kubeconfig?: string
  context?: string
}

export interface KubeCluster {
  name: string
  server: string
  /** Absolute path (resolved against the kubeconfig that names it). */
  caFile?: string
  /** Base64, as in the kubeconfig. */
  caData?: string
  insecureSkipTLSVerify: boolean
  tlsServerName?: string
  proxyUrl?: string
}

export interface KubeUser {
  name: string
  token?: string
  /** Absolute path; read for every new set of credentials (kubectl re-reads it too). */
  tokenFile?: string
  certFile?: string
  certData?: string
  keyFile?: string
  keyData?: string
  username?: string
  password?: string
  exec?: ExecConfig
  authProvider?: {name: string; config?: Record<string, string>}
  /** `as`, `as-groups`, `as-uid`, `as-user-extra`: impersonation headers. */
  impersonate?: {user?: string; groups?: string[]; uid?: string; extra?: Record<string, string[]>}
}

export interface KubeContext {
  name: string
  cluster: string
  user: string
  namespace?: string
}

/** A kubeconfig (or KUBECONFIG list) merged as kubectl merges it. */
export interface MergedKubeconfig {
  clusters: Map<string, KubeCluster>
  users: Map<string, KubeUser>
  contexts: Map<string, KubeContext>
  currentContext?: string
  /** The files read, for messages. */
  files: string[]
}

export interface LoadedKubeConfig {
  contextName: string
  clusterName: string
  /** The server URL without userinfo and trailing slashes. */
  server: string
  /** The context's namespace, or "default". */
  namespace: string
  /** Where it came from, for messages: a path list, or "in-cluster". */
  source: string
  cluster: KubeCluster
  /** The context's user (no credentials at all when the context names none). */
  user: KubeUser
}

/** Where a pod's service account is mounted (rest.InClusterConfig). */
export const SERVICE_ACCOUNT_DIR = '/var/run/secrets/kubernetes.io/serviceaccount'

export interface LoadOptions {
  /** Tests point this elsewhere. */
  serviceAccountDir?: string
}

function badKubeconfig(file: string, why: string): MeshvmError {
  return new MeshvmError(`cannot read kubeconfig ${file}: ${why}`, {exit: ExitCode.USAGE, code: 'BadKubeconfig'})
}

function unusable(context: string, why: string, hints: string[] = []): MeshvmError {
  return new MeshvmError(`context ${JSON.stringify(context)}: ${why}`, {exit: ExitCode.USAGE, code: 'BadKubeconfig', hints})
}

function parseFailure(file: string, err: unknown): MeshvmError {
  // Keep the position only: the parser's message quotes the offending lines, which may be secrets.
  const pos = (err as {linePos?: {line?: number}[]}).linePos?.[0]?.line
  const where = pos !== undefined ? ` (line ${pos})` : ''
  const code = (err as NodeJS.ErrnoException).code
  return badKubeconfig(file, code === 'EACCES' ? 'permission denied' : code === 'EISDIR' ? 'it is a directory' : `not a valid kubeconfig${where}`)
}

/** The field checks of one file: wrong types make the file invalid, as kubectl's decoder does. */
class FileReader {
  constructor(readonly file: string) {}

  private fail(path: string, expected: string): never {
    // The path of the field, never its value.
    throw badKubeconfig(this.file, `not a valid kubeconfig (${path}: expected ${expected})`)
  }

  object(value: unknown, path: string): Record<string, unknown> | undefined {
    if (value === undefined || value === null) return undefined
    if (typeof value !== 'object' || Array.isArray(value)) this.fail(path, 'a mapping')
    return value as Record<string, unknown>
  }

  list(value: unknown, path: string): unknown[] {
    if (value === undefined || value === null) return []
    if (!Array.isArray(value)) this.fail(path, 'a list')
    return value
  }

  /**
   * Base64 data (certificate-authority-data, client-*-data): kubectl decodes them as Go's
   * encoding/base64 StdEncoding (line breaks skipped, padding required) and refuses the file otherwise.
   */
  base64(obj: Record<string, unknown> | undefined, key: string, path: string): string | undefined {
    const value = this.string(obj, key, path)
    if (value === undefined) return undefined
    const compact = value.replace(/[\r\n]/g, '')
    if (compact.length % 4 !== 0 || !/^[A-Za-z0-9+/]*(?:[A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$/.test(compact)) this.fail(`${path}.${key}`, 'base64 data (illegal base64)')
    return compact
  }

  string(obj: Record<string, unknown> | undefined, key: string, path: string): string | undefined {
    const value = obj?.[key]
    if (value === undefined || value === null) return undefined
    if (typeof value !== 'string') this.fail(`${path}.${key}`, 'a string')
    return value === '' ? undefined : value
  }

  bool(obj: Record<string, unknown> | undefined, key: string, path: string): boolean {
    const value = obj?.[key]
    if (value === undefined || value === null) return false
    if (typeof value !== 'boolean') this.fail(`${path}.${key}`, 'true or false')
    return value
  }

  strings(obj: Record<string, unknown> | undefined, key: string, path: string): string[] | undefined {
    const value = obj?.[key]
    if (value === undefined || value === null) return undefined
    return this.list(value, `${path}.${key}`).map((v, i) => (typeof v === 'string' ? v : this.fail(`${path}.${key}[${i}]`, 'a string')))
  }

  stringMap(obj: Record<string, unknown> | undefined, key: string, path: string): Record<string, string> {
    const map = this.object(obj?.[key], `${path}.${key}`) ?? {}
    return Object.fromEntries(Object.keys(map).map((k) => [k, this.string(map, k, `${path}.${key}`) ?? '']))
  }

  /** A path named in the file, resolved against the file's directory (clientcmd ResolveLocalPaths). */
  path(obj: Record<string, unknown> | undefined, key: string, path: string): string | undefined {
    const value = this.string(obj, key, path)
    return value === undefined ? undefined : resolve(dirname(resolve(this.file)), value)
  }

  /** Named entries (`- name: x\n  cluster: {...}`); a name twice in one file is an error, as in kubectl. */
  named<T>(doc: Record<string, unknown>, key: string, inner: string, read: (name: string, body: Record<string, unknown> | undefined, path: string) => T): Map<string, T> {
    const out = new Map<string, T>()
    for (const [i, entry] of this.list(doc[key], key).entries()) {
      const path = `${key}[${i}]`
      const obj = this.object(entry, path)
      const name = this.string(obj, 'name', path) ?? ''
      if (out.has(name)) throw badKubeconfig(this.file, `not a valid kubeconfig (${key}: the name ${JSON.stringify(name)} appears twice)`)
      out.set(name, read(name, this.object(obj?.[inner], `${path}.${inner}`), `${path}.${inner}`))
    }
    return out
  }

  cluster(name: string, c: Record<string, unknown> | undefined, path: string): KubeCluster {
    return stripUndefined({
      name,
      server: this.string(c, 'server', path) ?? '',
      caFile: this.path(c, 'certificate-authority', path),
      caData: this.base64(c, 'certificate-authority-data', path),
      insecureSkipTLSVerify: this.bool(c, 'insecure-skip-tls-verify', path),
      tlsServerName: this.string(c, 'tls-server-name', path),
      proxyUrl: this.string(c, 'proxy-url', path),
    })
  }

  user(name: string, u: Record<string, unknown> | undefined, path: string): KubeUser {
    const exec = this.object(u?.exec, `${path}.exec`)
    const provider = this.object(u?.['auth-provider'], `${path}.auth-provider`)
    const extra = this.object(u?.['as-user-extra'], `${path}.as-user-extra`)
    const impersonate = stripUndefined({
      user: this.string(u, 'as', path),
      groups: this.strings(u, 'as-groups', path),
      uid: this.string(u, 'as-uid', path),
      extra: extra ? Object.fromEntries(Object.keys(extra).map((k) => [k, this.strings(extra, k, `${path}.as-user-extra`) ?? []])) : undefined,
    })
    return stripUndefined({
      name,
      token: this.string(u, 'token', path),
      tokenFile: this.path(u, 'tokenFile', path),
      certFile: this.path(u, 'client-certificate', path),
      certData: this.base64(u, 'client-certificate-data', path),
      keyFile: this.path(u, 'client-key', path),
      keyData: this.base64(u, 'client-key-data', path),
      username: this.string(u, 'username', path),
      password: this.string(u, 'password', path),
      exec: exec ? this.exec(exec, `${path}.exec`) : undefined,
      authProvider: provider ? {name: this.string(provider, 'name', `${path}.auth-provider`) ?? '', config: this.stringMap(provider, 'config', `${path}.auth-provider`)} : undefined,
      impersonate: Object.keys(impersonate).length > 0 ? impersonate : undefined,
    })
  }

  exec(e: Record<string, unknown>, path: string): ExecConfig {
    let command = this.string(e, 'command', path)
    // Only a command with a path separator is relative to the kubeconfig; a bare name is looked up on PATH.
    if (command?.includes('/') && !isAbsolute(command)) command = resolve(dirname(resolve(this.file)), command)
    return stripUndefined({
      command,
      args: this.strings(e, 'args', path),
      env: this.list(e.env, `${path}.env`).map((v, i) => {
        const o = this.object(v, `${path}.env[${i}]`)
        return {name: this.string(o, 'name', `${path}.env[${i}]`) ?? '', value: this.string(o, 'value', `${path}.env[${i}]`) ?? ''}
      }),
      apiVersion: this.string(e, 'apiVersion', path),
      interactiveMode: this.string(e, 'interactiveMode', path),
      provideClusterInfo: this.bool(e, 'provideClusterInfo', path),
      installHint: this.string(e, 'installHint', path),
    })
  }

  context(name: string, c: Record<string, unknown> | undefined, path: string): KubeContext {
    return stripUndefined({name, cluster: this.string(c, 'cluster', path) ?? '', user: this.string(c, 'user', path) ?? '', namespace: this.string(c, 'namespace', path)})
  }
}

function stripUndefined<T extends object>(o: T): T {
  for (const k of Object.keys(o) as (keyof T)[]) if (o[k] === undefined) delete o[k]
  return o
}

/**
 * YAML 1.1, as kubectl's decoder (sigs.k8s.io/yaml over go-yaml v2) reads it: `yes`, `on` are
 * booleans, `0x1F` a number. go-yaml leaves dates and base-60 numbers (`1:20`) as strings when
 * decoding into JSON: so does meshvm.
 */
export const YAML_OPTIONS = {
  logLevel: 'error',
  version: '1.1',
  // A key written twice in one mapping: the last value wins, as go-yaml v2 (and so kubectl) reads it.
  uniqueKeys: false,
  customTags: (tags: Tags) => tags.filter((t) => typeof t === 'string' || (!/timestamp$/.test(t.tag) && (t as {format?: string}).format !== 'TIME')),
} as const satisfies ParseOptions & DocumentOptions & SchemaOptions

type FileConfig = Omit<MergedKubeconfig, 'files'>

/** One kubeconfig's text (`file` names it in messages and anchors its relative paths). */
export function parseKubeconfig(text: string, file: string): FileConfig {
  // The common layout is read by a small reader of its own; anything else by the full YAML parser.
  let doc: unknown = parseKubeconfigYaml(text)
  if (doc === undefined) {
    try {
      doc = parseYaml(text, YAML_OPTIONS)
    } catch (err) {
      throw parseFailure(file, err)
    }
  }
  const reader = new FileReader(file)
  // kubectl accepts an empty (or comments-only) file, in a KUBECONFIG list or alone, as an empty config.
  const obj = reader.object(doc, 'the document') ?? {}
  return {
    clusters: reader.named(obj, 'clusters', 'cluster', (n, c, p) => reader.cluster(n, c, p)),
    users: reader.named(obj, 'users', 'user', (n, u, p) => reader.user(n, u, p)),
    contexts: reader.named(obj, 'contexts', 'context', (n, c, p) => reader.context(n, c, p)),
    currentContext: reader.string(obj, 'current-context', 'the document'),
  }
}

function kubeconfigFiles(target: KubeTarget, env: NodeJS.ProcessEnv): string[] {
  if (target.kubeconfig !== undefined) {
    if (!existsSync(target.kubeconfig)) throw new UsageError(`--kubeconfig ${JSON.stringify(target.kubeconfig)}: file not found`)
    return [target.kubeconfig]
  }
  // kubectl drops repeated entries of a KUBECONFIG list (deduplicate in loader.go) and empty ones.
  if (env.KUBECONFIG) return [...new Set(env.KUBECONFIG.split(delimiter).filter((f) => f !== ''))]
  return [join(env.HOME || homedir(), '.kube', 'config')]
}

/** Reads and merges the kubeconfig files (kubectl's rule: the first file that defines a name wins). */
export function readKubeconfig(target: KubeTarget = {}, env: NodeJS.ProcessEnv = process.env): MergedKubeconfig {
  const merged: MergedKubeconfig = {clusters: new Map(), users: new Map(), contexts: new Map(), files: []}
  for (const file of kubeconfigFiles(target, env)) {
    let text: string
    try {
      text = readFileSync(file, 'utf8')
    } catch (err) {
      // kubectl skips the missing entries of a KUBECONFIG list (and a missing ~/.kube/config).
      if ((err as NodeJS.ErrnoException).code === 'ENOENT') continue
      throw parseFailure(file, err)
    }
    merged.files.push(file)
    const one = parseKubeconfig(text, file)
    for (const [name, c] of one.clusters) if (!merged.clusters.has(name)) merged.clusters.set(name, c)
    for (const [name, u] of one.users) if (!merged.users.has(name)) merged.users.set(name, u)
    for (const [name, c] of one.contexts) if (!merged.contexts.has(name)) merged.contexts.set(name, c)
    merged.currentContext ??= one.currentContext
  }
  return merged
}

/** The names of the kubeconfig's contexts (for --all-contexts and completion), in file order. */
export function kubeconfigContexts(target: KubeTarget = {}, env: NodeJS.ProcessEnv = process.env): string[] {
  return [...readKubeconfig(target, env).contexts.keys()]
}

/**
 * The in-cluster configuration, as rest.InClusterConfig and kubectl's inClusterClientConfig build it:
 * KUBERNETES_SERVICE_HOST and _PORT, the service account's token (re-read when it is refreshed) and
 * CA; the namespace from POD_NAMESPACE, else the service account's namespace file, else "default".
 */
function inCluster(env: NodeJS.ProcessEnv, dir: string): LoadedKubeConfig | undefined {
  const host = env.KUBERNETES_SERVICE_HOST
  const port = env.KUBERNETES_SERVICE_PORT
  const tokenFile = join(dir, 'token')
  if (!host || !port || !existsSync(tokenFile)) return undefined
  const caFile = join(dir, 'ca.crt')
  let namespace = env.POD_NAMESPACE
  if (!namespace) {
    try {
      namespace = readFileSync(join(dir, 'namespace'), 'utf8').trim()
    } catch {
      // No namespace file: "default".
    }
  }
  const server = `https://${host.includes(':') ? `[${host}]` : host}:${port}`
  const isFile = (p: string) => {
    try {
      return statSync(p).isFile()
    } catch {
      return false
    }
  }
  return {
    contextName: 'in-cluster',
    clusterName: 'in-cluster',
    server,
    namespace: namespace || 'default',
    source: 'in-cluster',
    // Without a readable ca.crt client-go logs and falls back to the system's roots; so does meshvm.
    cluster: stripUndefined({name: 'in-cluster', server, caFile: isFile(caFile) ? caFile : undefined, insecureSkipTLSVerify: false}),
    user: {name: 'in-cluster', tokenFile},
  }
}

export function loadKubeConfig(target: KubeTarget = {}, env: NodeJS.ProcessEnv = process.env, options: LoadOptions = {}): LoadedKubeConfig {
  const config = readKubeconfig(target, env)
  // kubectl: an empty configuration in a pod means the pod's service account (explicit --context aside).
  const empty = config.clusters.size === 0 && config.users.size === 0 && config.contexts.size === 0 && !config.currentContext
  if (empty && target.context === undefined) {
    const pod = inCluster(env, options.serviceAccountDir ?? SERVICE_ACCOUNT_DIR)
    if (pod) return pod
  }
  if (config.files.length === 0) {
    throw new MeshvmError('no kubeconfig found: KUBECONFIG is unset or names no existing file, and ~/.kube/config does not exist', {
      exit: ExitCode.UNREACHABLE,
      code: 'NoKubeconfig',
      hints: ['pass --kubeconfig PATH or set KUBECONFIG to the cluster you want to use'],
    })
  }
  return selectContext(config, target.context, config.files.join(delimiter))
}

/** The usable configuration of one context (`name`, else the current one), validated as kubectl's ConfirmUsable does. */
export function selectContext(config: Omit<MergedKubeconfig, 'files'>, name: string | undefined, source: string): LoadedKubeConfig {
  const contextName = name ?? config.currentContext
  const names = [...config.contexts.keys()]
  if (!contextName) {
    throw new MeshvmError(`no current context in ${source}`, {
      exit: ExitCode.NOT_FOUND,
      code: 'NoContext',
      hints: [names.length > 0 ? `pass --context (available: ${names.join(', ')})` : 'the kubeconfig has no contexts'],
    })
  }
  const context = config.contexts.get(contextName)
  if (!context) {
    throw new MeshvmError(`context ${JSON.stringify(contextName)} not found in ${source}`, {
      exit: ExitCode.NOT_FOUND,
      code: 'ContextNotFound',
      hints: [names.length > 0 ? `available contexts: ${names.join(', ')}` : 'the kubeconfig has no contexts'],
    })
  }
  const cluster = config.clusters.get(context.cluster)
  if (!cluster?.server) {
    throw new MeshvmError(`context ${JSON.stringify(contextName)} refers to cluster ${JSON.stringify(context.cluster)}, which has no server in ${source}`, {
      exit: ExitCode.USAGE,
      code: 'BadKubeconfig',
    })
  }
  let serverUrl: URL | undefined
  try {
    serverUrl = new URL(cluster.server)
  } catch {
    // "127.0.0.1:6443" parses as a URL of scheme "127.0.0.1:": caught below.
  }
  if (!serverUrl || (serverUrl.protocol !== 'https:' && serverUrl.protocol !== 'http:') || !serverUrl.hostname) {
    throw new MeshvmError(`cluster ${JSON.stringify(cluster.name)}: server ${JSON.stringify(withoutUserinfo(cluster.server))} is not an https:// URL`, {
      exit: ExitCode.USAGE,
      code: 'BadKubeconfig',
      hints: [`write the server with its scheme, e.g. server: https://${cluster.server.replace(/^[a-z][a-z0-9+.-]*:\/\//i, '').replace(/^[^@/]*@/, '')}`],
    })
  }
  if (cluster.server.startsWith('http:') && !cluster.insecureSkipTLSVerify) {
    throw new MeshvmError(`cluster ${JSON.stringify(cluster.name)} uses plain HTTP (${withoutUserinfo(cluster.server)}); meshvm only talks to API servers over HTTPS`, {
      exit: ExitCode.USAGE,
      code: 'InsecureServer',
    })
  }
  const user = config.users.get(context.user) ?? {name: context.user}
  validate(contextName, context, cluster, user)
  // Userinfo in the server URL (https://user:pass@host) is never used nor shown.
  return {
    contextName,
    clusterName: cluster.name,
    server: withoutUserinfo(cluster.server).replace(/\/+$/, ''),
    namespace: context.namespace || 'default',
    source,
    cluster,
    user,
  }
}

/** What clientcmd's ConfirmUsable (validation.go) and transport refuse for the context in use. */
function validate(contextName: string, context: KubeContext, cluster: KubeCluster, user: KubeUser): void {
  const u = JSON.stringify(user.name)
  if (context.namespace && dns1123Label(context.namespace)) {
    throw unusable(contextName, `namespace ${JSON.stringify(context.namespace)} does not conform to the Kubernetes DNS label rules`)
  }
  if (cluster.caFile && cluster.caData) throw unusable(contextName, `cluster ${JSON.stringify(cluster.name)} has both certificate-authority and certificate-authority-data; give one`)
  if (cluster.insecureSkipTLSVerify && (cluster.caFile || cluster.caData)) {
    throw unusable(contextName, `cluster ${JSON.stringify(cluster.name)} has a certificate authority and insecure-skip-tls-verify; kubectl refuses the two together`, [
      'remove insecure-skip-tls-verify (the certificate authority is then checked)',
    ])
  }
  const methods = [user.token ? 'token' : '', user.username || user.password ? 'basic auth' : ''].filter(Boolean)
  if (methods.length > 1) throw unusable(contextName, `user ${u} has more than one authentication method (${methods.join(', ')}); only one is allowed`)
  if (user.certFile && user.certData) throw unusable(contextName, `user ${u} has both client-certificate and client-certificate-data; give one`)
  if (user.keyFile && user.keyData) throw unusable(contextName, `user ${u} has both client-key and client-key-data; give one`)
  if ((user.impersonate?.groups || user.impersonate?.uid || user.impersonate?.extra) && !user.impersonate?.user) {
    throw unusable(contextName, `user ${u} asks for impersonated groups, uid or extra without a user to impersonate (as)`)
  }
  const exec = user.exec
  if (exec) {
    if (user.authProvider) throw unusable(contextName, `user ${u} has both exec and auth-provider; give one`)
    if (!exec.command) throw unusable(contextName, `user ${u}: exec needs a command`)
    if (!exec.apiVersion) throw unusable(contextName, `user ${u}: exec needs an apiVersion (client.authentication.k8s.io/v1 or v1beta1)`)
    if ((exec.env ?? []).some((e) => !e.name)) throw unusable(contextName, `user ${u}: every exec env entry needs a name`)
    // v1beta1 defaults interactiveMode to IfAvailable; v1 requires it (clientcmd/api/v1/defaults.go).
    if (!exec.interactiveMode && exec.apiVersion !== 'client.authentication.k8s.io/v1beta1' && exec.apiVersion !== 'client.authentication.k8s.io/v1alpha1') {
      throw unusable(contextName, `user ${u}: exec needs an interactiveMode (Never, IfAvailable or Always)`)
    }
    if (exec.interactiveMode && !['Never', 'IfAvailable', 'Always'].includes(exec.interactiveMode)) {
      throw unusable(contextName, `user ${u}: exec interactiveMode ${JSON.stringify(exec.interactiveMode)}: expected Never, IfAvailable or Always`)
    }
  }
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
