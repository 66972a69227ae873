/**
 * The output of `istioctl create-remote-secret` (1.24.6), computed without a cluster
 * (istioctl-behaviour.md §5). Pure: no I/O, no Kubernetes client. The command fetches the cluster
 * name, the token Secret and the server, and passes plain values in.
 *
 * istioctl prints its objects through Kubernetes' JSON serializer in YAML mode (sigs.k8s.io/yaml,
 * which is yaml.v2). `src/lib/yaml.ts` quotes and folds differently, so the output goes through
 * the yaml.v2 emitter of src/lib/util/go-compat.ts (shared with the VM bundle's mesh.yaml).
 *
 * Deliberate differences from istioctl (§8): `--auth-plugin-config` is honoured (istioctl 1.24 drops
 * it), a plugin name is required with `--auth-type=plugin`, and plugin flags without it are rejected.
 */
import {MeshvmError, UsageError, UsageErrors, flagError} from '../errors.js'
import {dns1123Label, dns1123Subdomain} from '../validation/kube.js'
import type {Manifest} from '../kube/object.js'
import {goYamlMarshal, type GoYaml} from '../util/go-compat.js'

// ---------------------------------------------------------------------------------------------
// Constants (istioctl/pkg/multicluster, pkg/config/constants, pkg/kube/multicluster)
// ---------------------------------------------------------------------------------------------

export const REMOTE_SECRET_TYPES = ['remote', 'config'] as const
export type RemoteSecretType = (typeof REMOTE_SECRET_TYPES)[number]

export const REMOTE_SECRET_AUTH_TYPES = ['bearer-token', 'plugin'] as const
export type RemoteSecretAuthType = (typeof REMOTE_SECRET_AUTH_TYPES)[number]

export const CONFIG_SECRET_KEY = 'config'
/** istiod watches Secrets with this label set to "true" in its namespace. */
export const MULTICLUSTER_SECRET_LABEL = 'istio/multiCluster'
/** Informational only: istiod takes the cluster ID from the stringData key (§5.5). */
export const CLUSTER_NAME_ANNOTATION = 'networking.istio.io/cluster'

/** `--service-account` defaults by `--type`. */
export const DEFAULT_SERVICE_ACCOUNT: Record<RemoteSecretType, string> = {
  remote: 'istio-reader-service-account',
  config: 'istiod',
}

/** The only auth provider a default istiod accepts in a remote kubeconfig (`sanitizeKubeConfig`). */
const ISTIOD_ALLOWED_AUTH_PROVIDER = 'oidc'

// ---------------------------------------------------------------------------------------------
// Kubeconfig and Secret
// ---------------------------------------------------------------------------------------------

export type RemoteKubeconfigAuth = {type: 'bearer-token'; token: string} | {type: 'plugin'; name: string; config: Record<string, string>}

export interface RemoteKubeconfigOptions {
  /** Cluster name: names the cluster, context and user, and is the current context. */
  clusterName: string
  /** API server URL written into the kubeconfig (`--server` or the selected context's server). */
  server: string
  /** `ca.crt` of the token Secret, base64-encoded as in the Secret's `data`. Empty: no CA entry. */
  caData: string
  /** `--tls-server-name` (istioctl 1.26+). */
  tlsServerName?: string
  auth: RemoteKubeconfigAuth
}

/**
 * The kubeconfig as istioctl's `latest.Codec` writes it: a v1 Config with one cluster, context and
 * user, all named after the cluster, keys sorted. istioctl 1.30+ (client-go 1.35) no longer writes the
 * empty `preferences: {}` that older releases did; test:real compares with the real istioctl.
 */
export function buildRemoteKubeconfig(opts: RemoteKubeconfigOptions): string {
  const name = opts.clusterName
  if (opts.server === '') {
    // clientcmd.Validate: "no server found for cluster"; istioctl wraps it as "invalid kubeconfig".
    throw flagError('--server', undefined, `no API server address for cluster ${JSON.stringify(name)}: the kubeconfig context has none; pass --server https://HOST:PORT`)
  }
  const cluster: GoYaml = {server: opts.server}
  if (opts.tlsServerName) cluster['tls-server-name'] = opts.tlsServerName
  const ca = canonicalBase64(opts.caData)
  if (ca !== '') cluster['certificate-authority-data'] = ca
  let user: GoYaml
  if (opts.auth.type === 'bearer-token') {
    // AuthInfo.Token is omitempty: an empty token leaves `user: {}`, as istioctl would print it.
    user = opts.auth.token === '' ? {} : {token: opts.auth.token}
  } else {
    user = {'auth-provider': {name: opts.auth.name, config: {...opts.auth.config}}}
  }
  const config: GoYaml = {
    apiVersion: 'v1',
    kind: 'Config',
    clusters: [{name, cluster}],
    contexts: [{name, context: {cluster: name, user: name}}],
    'current-context': name,
    users: [{name, user}],
  }
  return goYamlMarshal(config)
}

export interface RemoteSecretOptions {
  /** Cluster name (`--name`, or the kube-system Namespace UID). A DNS-1123 label. */
  name: string
  type: RemoteSecretType
  /** Namespace of the printed Secret; istioctl always sets it, an empty one is omitted. */
  namespace?: string
  /** The kubeconfig text, usually from buildRemoteKubeconfig. */
  kubeconfig: string
}

export interface RemoteSecretManifest {
  /** The Secret as an API object (no `creationTimestamp`), e.g. for server-side apply. */
  object: Manifest & {stringData: Record<string, string>}
  /** Exactly what istioctl prints on stdout: `# This file is autogenerated, do not edit.`, the Secret, `---`. */
  yaml: string
  /** `istio-remote-secret-NAME` or `istio-kubeconfig`. */
  secretName: string
  /** The stringData key istiod takes as the cluster ID: NAME, or `config` for `--type config`. */
  key: string
}

/**
 * Note: istioctl's `--secret-name` does not name this Secret; it picks which ServiceAccount token
 * Secret to read (see isServiceAccountTokenSecret). The printed Secret's name depends only on
 * `--type` and `--name`.
 */
export function buildRemoteSecret(opts: RemoteSecretOptions): RemoteSecretManifest {
  const nameProblem = dns1123Label(opts.name)
  if (nameProblem) throw flagError('--name', opts.name, nameProblem)
  const secretName = opts.type === 'config' ? 'istio-kubeconfig' : `istio-remote-secret-${opts.name}`
  const key = opts.type === 'config' ? CONFIG_SECRET_KEY : opts.name
  const labels = {[MULTICLUSTER_SECRET_LABEL]: 'true'}
  const metadata = {name: secretName, ...(opts.namespace ? {namespace: opts.namespace} : {}), labels, annotations: {[CLUSTER_NAME_ANNOTATION]: opts.name}}
  const object = {apiVersion: 'v1', kind: 'Secret', metadata, stringData: {[key]: opts.kubeconfig}}
  // goYamlMarshal sorts keys as yaml.v2 does. istioctl 1.30+ (client-go 1.35) omits the zero
  // creationTimestamp older releases printed as null.
  const yaml = `# This file is autogenerated, do not edit.\n${goYamlMarshal(object as GoYaml)}---\n`
  return {object, yaml, secretName, key}
}

// ---------------------------------------------------------------------------------------------
// ServiceAccount token Secret (Kubernetes ≥ 1.24 path, §5.3 step 4)
// ---------------------------------------------------------------------------------------------

export const SERVICE_ACCOUNT_TOKEN_TYPE = 'kubernetes.io/service-account-token'
export const SERVICE_ACCOUNT_NAME_ANNOTATION = 'kubernetes.io/service-account.name'

/** The token Secret istioctl creates when none references the ServiceAccount. */
export function tokenSecretName(serviceAccount: string): string {
  return `${serviceAccount}-istio-remote-secret-token`
}

/** A token Secret for the token controller to fill (`remote-secret rotate` names its own). */
export function tokenSecretManifest(serviceAccount: string, namespace: string, name = tokenSecretName(serviceAccount)) {
  return {
    apiVersion: 'v1' as const,
    kind: 'Secret' as const,
    metadata: {name, namespace, annotations: {[SERVICE_ACCOUNT_NAME_ANNOTATION]: serviceAccount}},
    type: SERVICE_ACCOUNT_TOKEN_TYPE,
  }
}

/** istioctl's secretReferencesServiceAccount: the type and the service-account annotation must match. */
export function isServiceAccountTokenSecret(secret: {type?: string; metadata?: {annotations?: Record<string, string>}}, serviceAccount: string): boolean {
  return secret.type === SERVICE_ACCOUNT_TOKEN_TYPE && secret.metadata?.annotations?.[SERVICE_ACCOUNT_NAME_ANNOTATION] === serviceAccount
}

// ---------------------------------------------------------------------------------------------
// Flags
// ---------------------------------------------------------------------------------------------

/** The command's flags, as parsed (strings, unvalidated). */
export interface RemoteSecretFlags {
  name?: string
  type?: string
  authType?: string
  authPluginName?: string
  /** Each `--auth-plugin-config` occurrence: `k=v` or `k1=v1,k2=v2` (pflag stringToString syntax). */
  authPluginConfig?: string[]
  server?: string
  tlsServerName?: string
  /** The ServiceAccount token Secret to use (not the printed Secret's name). */
  secretName?: string
  serviceAccount?: string
  namespace?: string
}

/** The flags, checked, with defaults applied; an undefined `name` stands for the kube-system Namespace UID. */
export type RemoteSecretSettings = Pick<RemoteSecretFlags, 'name' | 'server' | 'tlsServerName' | 'secretName' | 'namespace'> & {
  type: RemoteSecretType
  authType: RemoteSecretAuthType
  /** Set exactly when authType is `plugin`. */
  authPlugin?: {name: string; config: Record<string, string>}
  /** Defaulted by type. */
  serviceAccount: string
}

/**
 * Checks every flag and returns the settings with defaults applied. Throws a UsageError naming the
 * flag and what is valid (a UsageErrors when several flags are wrong). Never echoes plugin config
 * values or other credentials.
 */
export function validateRemoteSecretOptions(flags: RemoteSecretFlags): RemoteSecretSettings {
  const problems: UsageError[] = []
  if (flags.name !== undefined) {
    const p = dns1123Label(flags.name)
    if (p) problems.push(flagError('--name', flags.name, p, ['leave --name out to use the UID of the kube-system Namespace, as istioctl does']))
  }
  const type = (flags.type ?? 'remote') as RemoteSecretType
  if (!REMOTE_SECRET_TYPES.includes(type)) {
    problems.push(flagError('--type', flags.type, `must be one of ${REMOTE_SECRET_TYPES.join(', ')} (remote: a secret for a remote cluster; config: istio-kubeconfig for an external control plane)`))
  }
  const authType = (flags.authType ?? 'bearer-token') as RemoteSecretAuthType
  const authTypeValid = REMOTE_SECRET_AUTH_TYPES.includes(authType)
  if (!authTypeValid) problems.push(flagError('--auth-type', flags.authType, `must be one of ${REMOTE_SECRET_AUTH_TYPES.join(', ')}`))

  let authPlugin: RemoteSecretSettings['authPlugin']
  if (authTypeValid && authType === 'plugin') {
    let config: Record<string, string> = {}
    try {
      config = parseAuthPluginConfig(flags.authPluginConfig ?? [])
    } catch (err) {
      if (!(err instanceof UsageError)) throw err
      problems.push(err)
    }
    if (flags.authPluginName === undefined || flags.authPluginName === '') {
      problems.push(flagError('--auth-plugin-name', undefined, `required with --auth-type=plugin (e.g. --auth-plugin-name ${ISTIOD_ALLOWED_AUTH_PROVIDER})`))
    } else if (/[\s\u0000-\u001f]/.test(flags.authPluginName) || flags.authPluginName.length > 253) {
      problems.push(flagError('--auth-plugin-name', flags.authPluginName, 'must be an auth provider name without spaces or control characters (e.g. oidc)'))
    } else {
      authPlugin = {name: flags.authPluginName, config}
    }
  } else if (authTypeValid) {
    if (flags.authPluginName !== undefined) problems.push(flagError('--auth-plugin-name', flags.authPluginName, 'only applies with --auth-type=plugin'))
    if ((flags.authPluginConfig ?? []).length > 0) problems.push(flagError('--auth-plugin-config', undefined, 'only applies with --auth-type=plugin'))
  }

  if (flags.server !== undefined) {
    const p = serverProblem(flags.server)
    const bare = /^[A-Za-z0-9.[\]:-]+$/.test(flags.server) && !flags.server.includes('://')
    if (p) problems.push(flagError('--server', flags.server, p, bare ? [`did you mean --server https://${flags.server}?`] : []))
  }
  if (flags.tlsServerName !== undefined && !isHostName(flags.tlsServerName)) {
    problems.push(flagError('--tls-server-name', flags.tlsServerName, "must be the host name the API server's certificate is issued for (e.g. kubernetes.default.svc)"))
  }
  const names: [string, string | undefined, (v: string) => string | undefined, string][] = [
    ['--secret-name', flags.secretName, dns1123Subdomain, '; it names an existing ServiceAccount token Secret'],
    ['--service-account', flags.serviceAccount, dns1123Subdomain, ''],
    ['--namespace', flags.namespace, dns1123Label, ''],
  ]
  for (const [flag, value, rule, why] of names) {
    const p = value === undefined ? undefined : rule(value)
    if (p) problems.push(flagError(flag, value, p + why))
  }

  if (problems.length === 1) throw problems[0]
  // Several: one `Error:` line each, without their hints.
  if (problems.length > 1) throw new UsageErrors(problems.map((p) => p.message))
  const {name, server, tlsServerName, secretName, namespace} = flags
  return {name, type, authType, authPlugin, server, tlsServerName, secretName, serviceAccount: flags.serviceAccount ?? DEFAULT_SERVICE_ACCOUNT[type], namespace}
}

/**
 * `--auth-plugin-config` entries with pflag's stringToString rules: an entry with one `=` is one
 * pair (commas kept, surrounding `"` trimmed); with several `=` it is a CSV record of pairs, so a
 * value with a comma is quoted: `"scopes=a,b",k2=v2`. Later keys win. Errors give the entry's
 * position, never its text (values are often credentials).
 */
export function parseAuthPluginConfig(entries: string[]): Record<string, string> {
  const out: Record<string, string> = {}
  entries.forEach((entry, i) => {
    const where = entries.length > 1 ? ` (entry ${i + 1})` : ''
    const eqs = entry.split('=').length - 1
    if (eqs === 0) {
      throw flagError('--auth-plugin-config', undefined, `each entry must be formatted as key=value${where} (e.g. --auth-plugin-config client-id=my-client)`)
    }
    let pairs: string[]
    if (eqs === 1) pairs = [entry.replace(/^"+|"+$/g, '')]
    else {
      const parsed = parseCsvRecord(entry)
      if (typeof parsed === 'string') throw flagError('--auth-plugin-config', undefined, `${parsed}${where}; quote a pair whose value has a comma: '"scopes=a,b",k2=v2'`)
      pairs = parsed
    }
    for (const pair of pairs) {
      const eq = pair.indexOf('=')
      if (eq < 0) throw flagError('--auth-plugin-config', undefined, `each pair must be formatted as key=value${where}`)
      const key = pair.slice(0, eq)
      if (key === '') throw flagError('--auth-plugin-config', undefined, `a key before '=' is empty${where}`)
      if (/[\r\n\u0085\u2028\u2029]/.test(key) || Buffer.byteLength(key) > 128) {
        throw flagError('--auth-plugin-config', undefined, `key ${JSON.stringify(key.slice(0, 40))}${where} must be one line of at most 128 bytes`)
      }
      out[key] = pair.slice(eq + 1)
    }
  })
  return out
}

/** Go's encoding/csv reading one record (default options). Returns an error string on bad quoting. */
function parseCsvRecord(text: string): string[] | string {
  const line = text.split(/\r?\n/)[0] ?? ''
  const fields: string[] = []
  let i = 0
  for (;;) {
    if (line[i] === '"') {
      let field = ''
      i++
      for (;;) {
        if (i >= line.length) return 'extraneous or missing " in a quoted field'
        if (line[i] === '"') {
          if (line[i + 1] === '"') {
            field += '"'
            i += 2
            continue
          }
          i++
          break
        }
        field += line[i]
        i++
      }
      if (i < line.length && line[i] !== ',') return 'extraneous or missing " in a quoted field'
      fields.push(field)
    } else {
      const end = line.indexOf(',', i)
      const field = end < 0 ? line.slice(i) : line.slice(i, end)
      if (field.includes('"')) return 'bare " in an unquoted field'
      fields.push(field)
      i = end < 0 ? line.length : end
    }
    if (i >= line.length) break
    i++ // the comma
    if (i >= line.length) {
      fields.push('')
      break
    }
  }
  return fields
}

/**
 * --server: the rule of a kubeconfig's server, a URL with an https:// (or http://) scheme and a host, as
 * meshvm reads kubeconfigs. A bare word (`notaurl`) would be written into the secret as it is and
 * fail only later, in istiod.
 */
function serverProblem(server: string): string | undefined {
  const valid = "must be the API server's URL, reachable from the other cluster: https://HOST[:PORT]"
  if (server === '' || /\s/.test(server)) return valid
  let url: URL
  try {
    url = new URL(server)
  } catch {
    return valid
  }
  if ((url.protocol !== 'https:' && url.protocol !== 'http:') || url.hostname === '' || !server.includes('://')) return valid
  if (url.username !== '' || url.password !== '') return 'must not contain credentials (user:password@); the secret authenticates with a token or auth plugin'
  return undefined
}

function isHostName(name: string): boolean {
  if (name.length === 0 || name.length > 253) return false
  if (/^[0-9.]+$/.test(name) || /^[0-9A-Fa-f:]+$/.test(name)) return true
  return /^[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?(\.[A-Za-z0-9]([-A-Za-z0-9]*[A-Za-z0-9])?)*$/.test(name)
}

// ---------------------------------------------------------------------------------------------
// Warnings
// ---------------------------------------------------------------------------------------------

export interface RemoteSecretWarningInput {
  /** The server written into the kubeconfig. */
  server: string
  /** Where it came from: `--server`, or the kubeconfig context (istioctl warns only for the latter). */
  serverSource: 'flag' | 'kubeconfig'
  authType: RemoteSecretAuthType
  authPluginName?: string
}

/** Warnings to print on stderr; the command still writes the Secret. No credentials in the text. */
export function remoteSecretWarnings(input: RemoteSecretWarningInput): string[] {
  const out: string[] = []
  if (isLoopbackServer(input.server)) {
    out.push(
      input.serverSource === 'kubeconfig'
        ? `the API server in the kubeconfig is ${input.server}, which istiod in another cluster cannot reach; pass --server with an address reachable from there (with kind or k3d, the API server container's IP, e.g. --server https://172.18.0.2:6443)`
        : `--server ${input.server} is a loopback address, which istiod in another cluster cannot reach; use an address reachable from there`,
    )
  }
  if (input.authType === 'plugin' && input.authPluginName !== undefined && input.authPluginName !== ISTIOD_ALLOWED_AUTH_PROVIDER) {
    const n = input.authPluginName
    out.push(
      `istiod rejects auth provider ${JSON.stringify(n)} by default ("auth provider ${n} is not allowed"): only "${ISTIOD_ALLOWED_AUTH_PROVIDER}" is accepted unless PILOT_INSECURE_MULTICLUSTER_KUBECONFIG_OPTIONS on the istiod that reads this secret lists ${JSON.stringify(n)}; or use --auth-type=bearer-token`,
    )
  }
  return out
}

/** istioctl's substring test (`127.0.0.1`, `localhost`) plus the rest of 127/8 and ::1. */
export function isLoopbackServer(server: string): boolean {
  if (server.includes('127.0.0.1') || server.includes('localhost')) return true
  let host: string
  try {
    host = new URL(server.includes('://') ? server : `https://${server}`).hostname
  } catch {
    return false
  }
  host = host.replace(/^\[|\]$/g, '').toLowerCase()
  return /^127\.\d{1,3}\.\d{1,3}\.\d{1,3}$/.test(host) || host === '::1' || host === '0:0:0:0:0:0:0:1' || host.endsWith('.localhost') || /^::ffff:(127\.|7f)/.test(host)
}

// ---------------------------------------------------------------------------------------------
// Data as istioctl re-encodes it
// ---------------------------------------------------------------------------------------------

/**
 * Base64 as Go re-encodes `[]byte` in JSON: standard alphabet, padded. Accepts what the API returns
 * (already canonical) and tolerates whitespace and the URL-safe alphabet.
 */
function canonicalBase64(data: string): string {
  const compact = data.replace(/\s+/g, '')
  if (!/^[A-Za-z0-9+/_-]*={0,2}$/.test(compact) || compact.replace(/=+$/, '').length % 4 === 1) {
    throw new MeshvmError('ca.crt of the ServiceAccount token Secret is not valid base64', {code: 'InvalidData'})
  }
  return Buffer.from(compact, 'base64').toString('base64')
}
