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
 * Messages (istio.io/api security/v1alpha1/ca.proto): IstioCertificateRequest {csr = 1 (string),
 * validity_duration = 2 (int64 seconds), metadata = 3 (Struct)}; IstioCertificateResponse
 * {cert_chain = 1 (repeated string)}.
 */
import {BinaryReader, BinaryWriter, WireType} from '@bufbuild/protobuf/wire'
import forge from 'node-forge'
import {GrpcCode} from '../../src/lib/grpc/framing.js'
import type {MeshCa} from './mesh-ca.js'
import type {Pki} from './pki.js'
import type {Store} from './store.js'
import {reviewedServiceAccount, reviewToken} from './tokenreview.js'
import type {ServerCall, XdsServer} from './xds.js'

export const CREATE_CERTIFICATE = '/istio.v1.auth.IstioCertificateService/CreateCertificate'

const DEFAULT_TTL_S = 24 * 3600
const MAX_TTL_S = 90 * 24 * 3600

export class CaError extends Error {}

export function encodeCertificateRequest(r: {csr: string; validitySeconds?: number}): Uint8Array {
  const w = new BinaryWriter()
  w.tag(1, WireType.LengthDelimited).string(r.csr)
  if (r.validitySeconds) w.tag(2, WireType.Varint).int64(r.validitySeconds)
  return w.finish()
}

export function decodeCertificateRequest(bytes: Uint8Array): {csr: string; validitySeconds: number} {
  const r = new BinaryReader(bytes)
  const out = {csr: '', validitySeconds: 0}
  while (r.pos < r.len) {
    const [no, type] = r.tag()
    if (no === 1 && type === WireType.LengthDelimited) out.csr = r.string()
    else if (no === 2 && type === WireType.Varint) out.validitySeconds = Number(r.int64())
    else r.skip(type)
  }
  return out
}

export function encodeCertificateResponse(chain: string[]): Uint8Array {
  const w = new BinaryWriter()
  for (const pem of chain) w.tag(1, WireType.LengthDelimited).string(pem)
  return w.finish()
}

export function decodeCertificateResponse(bytes: Uint8Array): string[] {
  const r = new BinaryReader(bytes)
  const chain: string[] = []
  while (r.pos < r.len) {
    const [no, type] = r.tag()
    if (no === 1 && type === WireType.LengthDelimited) chain.push(r.string())
    else r.skip(type)
  }
  return chain
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
    o.log(`Failed to authenticate client: could not get cluster ${claimed}'s kube client`)
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
    o.log(`Failed to authenticate client: failed to validate the JWT from cluster "${claimed || o.clusterId}": the service account authentication returns an error: ${status.error ?? 'the token is not authenticated'}`)
    return undefined
  }
  return {identity: `spiffe://${o.trustDomain}/ns/${sa.namespace}/sa/${sa.name}`, namespace: sa.namespace, serviceAccount: sa.name}
}

/** Registers CreateCertificate on an istiod's gRPC server. */
export function serveCa(xds: XdsServer, ca: MeshCa, o: CallerAuthOptions): void {
  xds.handle(CREATE_CERTIFICATE, async (call) => {
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
  }, {auth: 'none'})
}
