/**
 * Service-account JWTs (RS256), bound (TokenRequest) and legacy (token Secrets), signed with the
 * test PKI's signing key; the server authenticates requests that carry them.
 */
import {createSign, createVerify} from 'node:crypto'
import type {Pki} from './pki.js'

export interface TokenClaims {
  iss: string
  sub: string
  aud?: string[]
  exp?: number
  iat?: number
  nbf?: number
  'kubernetes.io'?: {namespace: string; serviceaccount: {name: string; uid: string}}
  'kubernetes.io/serviceaccount/namespace'?: string
  'kubernetes.io/serviceaccount/service-account.name'?: string
  'kubernetes.io/serviceaccount/service-account.uid'?: string
  'kubernetes.io/serviceaccount/secret.name'?: string
}

const b64url = (data: string | Buffer) => Buffer.from(data).toString('base64url')

export function signToken(pki: Pki, claims: TokenClaims): string {
  const header = b64url(JSON.stringify({alg: 'RS256', kid: 'meshvm-test'}))
  const payload = b64url(JSON.stringify(claims))
  const signer = createSign('RSA-SHA256')
  signer.update(`${header}.${payload}`)
  return `${header}.${payload}.${signer.sign(pki.signingKeyPem).toString('base64url')}`
}

/** The claims of a token this server signed and that has not expired, else undefined. */
export function verifyToken(pki: Pki, token: string, now = Date.now()): TokenClaims | undefined {
  const parts = token.split('.')
  if (parts.length !== 3) return undefined
  const verifier = createVerify('RSA-SHA256')
  verifier.update(`${parts[0]}.${parts[1]}`)
  try {
    if (!verifier.verify(pki.signingPublicKeyPem, Buffer.from(parts[2]!, 'base64url'))) return undefined
    const claims = JSON.parse(Buffer.from(parts[1]!, 'base64url').toString('utf8')) as TokenClaims
    if (claims.exp !== undefined && claims.exp * 1000 < now) return undefined
    return claims
  } catch {
    return undefined
  }
}

export function boundToken(pki: Pki, sa: {namespace: string; name: string; uid: string}, audiences: string[], expirationSeconds: number): {token: string; expires: Date} {
  const iat = Math.floor(Date.now() / 1000)
  const exp = iat + expirationSeconds
  const token = signToken(pki, {
    iss: 'https://kubernetes.default.svc.cluster.local',
    sub: `system:serviceaccount:${sa.namespace}:${sa.name}`,
    aud: audiences,
    iat,
    nbf: iat,
    exp,
    'kubernetes.io': {namespace: sa.namespace, serviceaccount: {name: sa.name, uid: sa.uid}},
  })
  return {token, expires: new Date(exp * 1000)}
}

/** A secret-based token; with `secretName` it carries kube's secret.name claim (pkg/serviceaccount/legacy.go). */
export function legacyToken(pki: Pki, sa: {namespace: string; name: string; uid: string}, secretName?: string): string {
  return signToken(pki, {
    iss: 'kubernetes/serviceaccount',
    sub: `system:serviceaccount:${sa.namespace}:${sa.name}`,
    'kubernetes.io/serviceaccount/namespace': sa.namespace,
    'kubernetes.io/serviceaccount/service-account.name': sa.name,
    'kubernetes.io/serviceaccount/service-account.uid': sa.uid,
    ...(secretName ? {'kubernetes.io/serviceaccount/secret.name': secretName} : {}),
  })
}
