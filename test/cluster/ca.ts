/**
 * istiod's CA service, `istio.v1.auth.IstioCertificateService/CreateCertificate`
 * (security/pkg/server/ca/server.go), on a simulated istiod's gRPC server (xds.ts), signing with
 * the mesh root CA (mesh-ca.ts):
 *
 * - the caller is authenticated as istiod's Kubernetes JWT authenticator does
 *   (security/pkg/server/ca/authenticate/kubeauth): the `ClusterID` metadata must name this
 *   cluster (or be empty), then a TokenReview with audience `istio-ca` (tokenreview.ts) must
 *   authenticate the bearer token as a service account; any failure answers UNAUTHENTICATED
 *   "request authenticate failure" (the detail only goes to istiod's log);
 * - the certificate carries the caller's identity `spiffe://TRUST_DOMAIN/ns/NS/sa/SA` as its only
 *   SAN, whatever the CSR asks for, the CSR's public key, and the requested validity (default 24h,
 *   at most 90 days); the answer is the leaf then the root, one PEM per element.
 *
 * Messages: istio.io/api security/v1alpha1/ca.proto (test/fixtures/protos), through protobufjs:
 * IstioCertificateRequest {csr = 1, validity_duration = 3 (int64 seconds), metadata = 4 (Struct)};
 * IstioCertificateResponse {cert_chain = 1 (repeated string)}.
 */
import {status as GrpcCode} from '@grpc/grpc-js'
import forge from 'node-forge'
import {CREATE_CERTIFICATE_PATH, decodeMessage, encodeMessage, type IstioCertificateRequest, type IstioCertificateResponse} from '../fixtures/protos/load.js'
import type {MeshCa} from './mesh-ca.js'
import type {Pki} from './pki.js'
import type {Store} from './store.js'
import {reviewedServiceAccount, reviewToken} from './tokenreview.js'
import type {ServerCall, XdsServer} from './xds.js'

export const CREATE_CERTIFICATE = CREATE_CERTIFICATE_PATH

const DEFAULT_TTL_S = 24 * 3600
const MAX_TTL_S = 90 * 24 * 3600

export class CaError extends Error {}

const REQUEST = 'istio.v1.auth.IstioCertificateRequest'
const RESPONSE = 'istio.v1.auth.IstioCertificateResponse'

export function encodeCertificateRequest(r: {csr: string; validitySeconds?: number}): Buffer {
  return encodeMessage(REQUEST, {csr: r.csr, ...(r.validitySeconds ? {validityDuration: r.validitySeconds} : {})} satisfies IstioCertificateRequest)
}

export function decodeCertificateRequest(bytes: Uint8Array): {csr: string; validitySeconds: number} {
  const r = decodeMessage<IstioCertificateRequest>(REQUEST, bytes)
  return {csr: r.csr ?? '', validitySeconds: Number(r.validityDuration ?? 0)}
}

export function encodeCertificateResponse(chain: string[]): Buffer {
  return encodeMessage(RESPONSE, {certChain: chain} satisfies IstioCertificateResponse)
}

export function decodeCertificateResponse(bytes: Uint8Array): string[] {
  return decodeMessage<IstioCertificateResponse>(RESPONSE, bytes).certChain ?? []
}

/** Signs a PKCS#10 CSR for an authenticated identity; throws CaError like istiod's "CSR signing error". */
export function signCsr(ca: MeshCa, csrPem: string, identity: string, validitySeconds = 0): string[] {
  let csr: forge.pki.CertificateSigningRequest
  try {
    csr = forge.pki.certificationRequestFromPem(csrPem)
  } catch {
    throw new CaError('CSR signing error (failed to parse CSR)')
  }
  if (!csr.verify()) throw new CaError('CSR signing error (failed to verify the CSR signature)')
  const ttl = validitySeconds <= 0 ? DEFAULT_TTL_S : Math.min(validitySeconds, MAX_TTL_S)
  const leaf = ca.issue({uris: [identity], publicKeyPem: forge.pki.publicKeyToPem(csr.publicKey!), ttlMs: ttl * 1000})
  return [leaf.certPem, ca.rootPem].map((pem) => pem.replace(/\r\n/g, '\n').replace(/\n*$/, '\n'))
}

/** The identity in a workload certificate (its URI SAN). */
export function certificateIdentity(certPem: string): string | undefined {
  const cert = forge.pki.certificateFromPem(certPem)
  const san = cert.getExtension('subjectAltName') as {altNames?: {type: number; value: string}[]} | null
  return san?.altNames?.find((a) => a.type === 6)?.value
}

export interface CallerAuthOptions {
  pki: Pki
  store: Store
  clusterId: string
  trustDomain: string
  /** istiod's log: the reason of every refusal (a client only sees the opaque message). */
  log: (line: string) => void
}

/**
 * istiod's KubeJWTAuthenticator: the caller's SPIFFE identity, namespace and service account, or
 * undefined (with the reason logged).
 */
export function authenticateCaller(call: ServerCall, o: CallerAuthOptions): {identity: string; namespace: string; serviceAccount: string} | undefined {
  const claimed = String(call.metadata.clusterid ?? '')
  if (claimed !== '' && claimed !== o.clusterId) {
    // istiod 1.31's text (security/pkg/server/ca/authenticate/kubeauth), seen from the real one.
    o.log(
      `Failed to authenticate client: Authenticator KubeJWTAuthenticator: client claims to be in cluster "${claimed}", but we only know about local cluster "${o.clusterId}" and remote clusters []`,
    )
    return undefined
  }
  const m = /^Bearer\s+(\S+)$/i.exec(String(call.metadata.authorization ?? ''))
  if (!m) {
    o.log('Failed to authenticate client: target JWT extraction error: no bearer token exists in HTTP authorization header')
    return undefined
  }
  const status = reviewToken(o.pki, o.store, m[1]!, ['istio-ca'])
  const sa = reviewedServiceAccount(status)
  if (!sa) {
    o.log(
      `Failed to authenticate client: failed to validate the JWT from cluster "${claimed || o.clusterId}": the service account authentication returns an error: ${status.error ?? 'the token is not authenticated'}`,
    )
    return undefined
  }
  return {identity: `spiffe://${o.trustDomain}/ns/${sa.namespace}/sa/${sa.name}`, namespace: sa.namespace, serviceAccount: sa.name}
}

/** Registers CreateCertificate on an istiod's gRPC server. */
export function serveCa(xds: XdsServer, ca: MeshCa, o: CallerAuthOptions): void {
  xds.handle(
    CREATE_CERTIFICATE,
    async (call) => {
      const raw = await call.next()
      const caller = authenticateCaller(call, o)
      if (!caller) {
        call.end(GrpcCode.UNAUTHENTICATED, 'request authenticate failure')
        return
      }
      let chain: string[]
      try {
        const request = decodeCertificateRequest(raw ?? new Uint8Array())
        chain = signCsr(ca, request.csr, caller.identity, request.validitySeconds)
      } catch (err) {
        call.end(GrpcCode.INVALID_ARGUMENT, err instanceof CaError ? err.message : 'CSR signing error (invalid request)')
        return
      }
      call.send(encodeCertificateResponse(chain))
      call.end()
    },
    {auth: 'none'},
  )
}
