/**
 * `authentication.k8s.io/v1` TokenReview, as kube-apiserver answers it for service-account tokens
 * (k8s.io/apiserver token authenticators + pkg/serviceaccount): signature, expiry, the requested
 * audiences (default: the API server's own), and that the service account still exists with the
 * uid the token was issued for. istiod calls it with audience `istio-ca` to authenticate a VM's
 * bootstrap token (pkg/kube/tokenreview, security/pkg/server/ca/authenticate/kubeauth).
 */
import {createVerify} from 'node:crypto'
import type {Pki} from './pki.js'
import {resourceKey, type Store} from './store.js'
import type {TokenClaims} from './tokens.js'

export const API_AUDIENCE = 'https://kubernetes.default.svc.cluster.local'

export interface TokenReviewStatus {
  authenticated: boolean
  user?: {username: string; uid: string; groups: string[]; extra?: Record<string, string[]>}
  audiences?: string[]
  error?: string
}

/** What a token authenticates as: the service account, or why not (kube-apiserver's error text). */
export interface ReviewedServiceAccount {
  namespace: string
  name: string
  uid: string
  audiences: string[]
}

// kube-apiserver joins the failures of its token authenticators: `[invalid bearer token, REASON]`.
const invalid = (reason: string): TokenReviewStatus => ({authenticated: false, error: `[invalid bearer token, ${reason}]`})

function parse(pki: Pki, token: string): TokenClaims | undefined {
  const parts = token.split('.')
  if (parts.length !== 3) return undefined
  try {
    const verifier = createVerify('RSA-SHA256')
    verifier.update(`${parts[0]}.${parts[1]}`)
    if (!verifier.verify(pki.signingPublicKeyPem, Buffer.from(parts[2]!, 'base64url'))) return undefined
    return JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as TokenClaims
  } catch {
    return undefined
  }
}

export function reviewToken(pki: Pki, store: Store, token: string, requested: string[] = [], now = Date.now()): TokenReviewStatus {
  const audiences = requested.length > 0 ? requested : [API_AUDIENCE]
  const claims = parse(pki, token)
  if (!claims) return invalid('square/go-jose: error in cryptographic primitive')
  // Bound tokens carry `kubernetes.io`; legacy Secret tokens are valid for the API server's audience only.
  const bound = claims['kubernetes.io']
  const namespace = bound?.namespace ?? claims['kubernetes.io/serviceaccount/namespace']
  const name = bound?.serviceaccount.name ?? claims['kubernetes.io/serviceaccount/service-account.name']
  const uid = bound?.serviceaccount.uid ?? claims['kubernetes.io/serviceaccount/service-account.uid']
  if (!namespace || !name || !uid) return invalid('token lookup failed')
  if (claims.exp !== undefined && claims.exp * 1000 < now) return invalid('service account token has expired')
  if (claims.nbf !== undefined && claims.nbf * 1000 > now + 60_000) return invalid('service account token is not valid yet')
  const tokenAudiences = bound ? (claims.aud ?? []) : [API_AUDIENCE]
  const granted = audiences.filter((a) => tokenAudiences.includes(a))
  if (granted.length === 0) return invalid(`token audiences ${goQuoted(tokenAudiences)} is invalid for the target audiences ${goQuoted(audiences)}`)
  const sa = store.get(resourceKey('', 'serviceaccounts'), namespace, name)
  if (!sa) return invalid(`service account ${namespace}/${name} has been deleted`)
  if (sa.metadata.uid !== uid) return invalid(`service account UID (${sa.metadata.uid}) does not match claim (${uid})`)
  // pkg/serviceaccount/legacy.go: a secret-based token lives only as long as its Secret holds it.
  const secretName = claims['kubernetes.io/serviceaccount/secret.name']
  if (!bound && secretName !== undefined) {
    const secret = store.get(resourceKey('', 'secrets'), namespace, secretName)
    const held = (secret?.data as Record<string, string> | undefined)?.token
    if (!secret || secret.metadata.deletionTimestamp) return invalid('Token has been invalidated')
    if (held === undefined || Buffer.from(held, 'base64').toString('utf8') !== token) return invalid("Token does not match server's copy")
  }
  return {
    authenticated: true,
    user: {
      username: `system:serviceaccount:${namespace}:${name}`,
      uid,
      groups: ['system:serviceaccounts', `system:serviceaccounts:${namespace}`, 'system:authenticated'],
      extra: {'authentication.kubernetes.io/credential-id': [`JTI=${claims.iat ?? 0}`]},
    },
    audiences: granted,
  }
}

/** The service account a successful review names. */
export function reviewedServiceAccount(status: TokenReviewStatus): ReviewedServiceAccount | undefined {
  const m = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(status.user?.username ?? '')
  if (!status.authenticated || !m) return undefined
  return {namespace: m[1]!, name: m[2]!, uid: status.user!.uid, audiences: status.audiences ?? []}
}

/** Go's %q of a []string: `["a" "b"]`. */
function goQuoted(list: string[]): string {
  return `[${list.map((s) => JSON.stringify(s)).join(' ')}]`
}

/** The response body of POST /apis/authentication.k8s.io/v1/tokenreviews. */
export function tokenReviewResponse(pki: Pki, store: Store, body: unknown): {status: number; body: unknown} {
  const spec = ((body as {spec?: {token?: unknown; audiences?: unknown}} | undefined)?.spec ?? {}) as {token?: unknown; audiences?: unknown}
  const token = typeof spec.token === 'string' ? spec.token : ''
  const audiences = Array.isArray(spec.audiences) ? spec.audiences.filter((a): a is string => typeof a === 'string') : []
  if (token === '') {
    return {
      status: 422,
      body: {
        kind: 'Status',
        apiVersion: 'v1',
        metadata: {},
        status: 'Failure',
        reason: 'Invalid',
        code: 422,
        message: 'TokenReview.authentication.k8s.io "" is invalid: spec.token: Required value: token must not be empty',
        details: {group: 'authentication.k8s.io', kind: 'TokenReview', causes: [{reason: 'FieldValueRequired', field: 'spec.token', message: 'Required value: token must not be empty'}]},
      },
    }
  }
  const status = reviewToken(pki, store, token, audiences)
  return {
    status: 201,
    body: {
      kind: 'TokenReview',
      apiVersion: 'authentication.k8s.io/v1',
      metadata: {creationTimestamp: null},
      spec: {token, ...(audiences.length > 0 ? {audiences} : {})},
      status: {...status, user: status.user ?? {}},
    },
  }
}
