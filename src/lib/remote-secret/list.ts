/**
 * `meshvm remote-secret list`: the remote secrets istiod reads (Secrets labelled
 * istio/multiCluster=true in its namespace, istio pkg/kube/multicluster/secretcontroller.go), one
 * row per cluster key, described from the kubeconfig each one holds. The token is decoded only to
 * read its claims (issuer, expiry, service account); it is never shown.
 */
import {parse as parseYaml} from 'yaml'
import type {KubeClient} from '../kube/client.js'
import {Resources, resourcePath} from '../kube/resources.js'
import {CLUSTER_NAME_ANNOTATION, CONFIG_SECRET_KEY, MULTICLUSTER_SECRET_LABEL} from './generate.js'
import {isRecord, sortedRecord} from '../util/records.js'
import type {SecretObject} from './fetch.js'

/** How the kubeconfig authenticates. */
export type AuthType = 'bearer-token' | 'plugin' | 'exec' | 'client-certificate' | 'none'

/**
 * bound: a token with an expiry (TokenRequest); legacy: a secret-based service-account token
 * (issuer kubernetes/serviceaccount, no expiry, valid while its Secret exists); opaque: not a JWT
 * meshvm can read (e.g. a static token); none: no token.
 */
export type TokenKind = 'bound' | 'legacy' | 'opaque' | 'none'

export interface TokenInfo {
  kind: TokenKind
  expiresAt?: string
  serviceAccount?: {namespace: string; name: string}
  /** Legacy tokens name the Secret that holds them (claim kubernetes.io/serviceaccount/secret.name). */
  secretName?: string
}

export interface ParsedRemoteKubeconfig {
  server?: string
  caData?: string
  tlsServerName?: string
  authType: AuthType
  authPluginName?: string
  /** The bearer token (kept in memory only; never rendered). */
  token?: string
  error?: string
}

export interface RemoteSecretEntry {
  context: string
  namespace: string
  secret: string
  /** The data key istiod takes as the cluster ID. */
  cluster: string
  server: string
  authType: string
  tokenKind: TokenKind
  serviceAccount?: string
  created?: string
  expiresAt?: string
  resourceVersion?: string
  problem?: string
}

type Json = Record<string, unknown>

const str = (v: unknown): string | undefined => (typeof v === 'string' ? v : undefined)

/** The claims of a JWT, without checking its signature (only to describe it). */
export function jwtClaims(token: string): Json | undefined {
  const parts = token.split('.')
  if (parts.length !== 3) return undefined
  try {
    const claims: unknown = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8'))
    return isRecord(claims) ? claims : undefined
  } catch {
    return undefined
  }
}

/** kubernetes pkg/serviceaccount/claims.go (bound) and legacy.go (secret-based) claims. */
function describeToken(token: string | undefined): TokenInfo {
  if (!token) return {kind: 'none'}
  const claims = jwtClaims(token)
  if (!claims) return {kind: 'opaque'}
  const issuer = str(claims.iss)
  const kube = isRecord(claims['kubernetes.io']) ? claims['kubernetes.io'] : {}
  const sa = isRecord(kube.serviceaccount) ? kube.serviceaccount : {}
  const pair = (namespace: unknown, name: unknown) => (typeof namespace === 'string' && typeof name === 'string' ? {namespace, name} : undefined)
  const serviceAccount = pair(kube.namespace, sa.name) ?? pair(claims['kubernetes.io/serviceaccount/namespace'], claims['kubernetes.io/serviceaccount/service-account.name'])
  const secretName = str(claims['kubernetes.io/serviceaccount/secret.name'])
  if (typeof claims.exp === 'number') return {kind: 'bound', expiresAt: new Date(claims.exp * 1000).toISOString(), serviceAccount}
  if (issuer === 'kubernetes/serviceaccount') return {kind: 'legacy', serviceAccount, secretName}
  return {kind: 'opaque', serviceAccount}
}

/** The current context's cluster and user of a kubeconfig istiod would load. */
function parseRemoteKubeconfig(text: string): ParsedRemoteKubeconfig {
  let doc: unknown
  try {
    doc = parseYaml(text, {logLevel: 'error'})
  } catch {
    return {authType: 'none', error: 'not valid YAML'}
  }
  if (!isRecord(doc)) return {authType: 'none', error: 'not a kubeconfig'}
  const named = (list: unknown, name: unknown, key: string): Json | undefined => {
    if (!Array.isArray(list)) return undefined
    const item = list.find((x) => isRecord(x) && x.name === name) as Json | undefined
    return isRecord(item?.[key]) ? (item[key] as Json) : undefined
  }
  const contextName = doc['current-context']
  const context = named(doc.contexts, contextName, 'context')
  if (!context) return {authType: 'none', error: `no context ${JSON.stringify(String(contextName ?? ''))}`}
  const cluster = named(doc.clusters, context.cluster, 'cluster')
  const user = named(doc.users, context.user, 'user') ?? {}
  const out: ParsedRemoteKubeconfig = {server: str(cluster?.server), caData: str(cluster?.['certificate-authority-data']), tlsServerName: str(cluster?.['tls-server-name']), authType: 'none'}
  if (typeof user.token === 'string' && user.token !== '') {
    out.authType = 'bearer-token'
    out.token = user.token
  } else if (isRecord(user['auth-provider'])) {
    out.authType = 'plugin'
    out.authPluginName = str(user['auth-provider'].name)
  } else if (isRecord(user.exec)) out.authType = 'exec'
  else if (user['client-certificate-data'] || user['client-certificate']) out.authType = 'client-certificate'
  if (!cluster) out.error = `no cluster ${JSON.stringify(String(context.cluster ?? ''))}`
  return out
}

/** One entry per data key (istiod reads every key of a remote secret as one cluster). */
export function remoteSecretEntries(secret: SecretObject, context: string): {key: string; entry: RemoteSecretEntry; kubeconfig: string; parsed: ParsedRemoteKubeconfig; token: TokenInfo}[] {
  const namespace = secret.metadata.namespace ?? ''
  return Object.entries(sortedRecord(secret.data ?? {})).map(([key, b64]) => {
    const kubeconfig = Buffer.from(b64, 'base64').toString('utf8')
    const parsed = parseRemoteKubeconfig(kubeconfig)
    const token = describeToken(parsed.token)
    const entry: RemoteSecretEntry = {
      context,
      namespace,
      secret: secret.metadata.name,
      // --type config: the key is "config" and the cluster is named by the annotation.
      cluster: key === CONFIG_SECRET_KEY ? (secret.metadata.annotations?.[CLUSTER_NAME_ANNOTATION] ?? key) : key,
      server: parsed.server ?? '',
      authType: parsed.authType === 'plugin' && parsed.authPluginName ? `plugin/${parsed.authPluginName}` : parsed.authType,
      tokenKind: token.kind,
      ...(token.serviceAccount ? {serviceAccount: `${token.serviceAccount.namespace}/${token.serviceAccount.name}`} : {}),
      ...(secret.metadata.creationTimestamp ? {created: secret.metadata.creationTimestamp} : {}),
      ...(token.expiresAt ? {expiresAt: token.expiresAt} : {}),
      ...(secret.metadata.resourceVersion ? {resourceVersion: secret.metadata.resourceVersion} : {}),
      ...(parsed.error ? {problem: `key ${key}: ${parsed.error}`} : {}),
    }
    return {key, entry, kubeconfig, parsed, token}
  })
}

export async function listRemoteSecrets(client: KubeClient, istioNamespace: string): Promise<SecretObject[]> {
  const secrets = await client.list<SecretObject>(resourcePath(Resources.secrets, {namespace: istioNamespace}), {labelSelector: `${MULTICLUSTER_SECRET_LABEL}=true`})
  return secrets.sort((a, b) => (a.metadata.name < b.metadata.name ? -1 : a.metadata.name > b.metadata.name ? 1 : 0))
}

/** The Secret of a cluster: by Secret name, or by the cluster name it holds (istio-remote-secret-NAME). */
export function findRemoteSecret(secrets: SecretObject[], name: string): SecretObject | undefined {
  return secrets.find((s) => s.metadata.name === name) ?? secrets.find((s) => Object.keys(s.data ?? {}).includes(name))
}
