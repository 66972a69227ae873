/**
 * The mesh's certificate authority, as istiod's self-signed CA runs it: a root certificate
 * (subject O=<trust domain>, published in ConfigMap istio-ca-root-cert), workload certificates
 * signed from a CSR with the caller's SPIFFE identity as the only SAN (istiod ignores the CSR's own
 * SANs: security/pkg/server/ca/server.go CreateCertificate, `SubjectIDs: caller.Identities`), and
 * istiod's serving certificate for its `istiod[-REV].NS.svc` host names.
 *
 * Keys come from Node's crypto; node-forge builds and signs the X.509 certificates (as pki.ts).
 */
import {generateKeyPairSync} from 'node:crypto'
import forge from 'node-forge'

export interface SignedCertificate {
  /** Leaf first, then the root, one PEM per element with a trailing newline, as istiod answers. */
  certChain: string[]
  notAfter: Date
}

export class CaError extends Error {
  constructor(message: string) {
    super(message)
    this.name = 'CaError'
  }
}

/** istiod's default (DEFAULT_WORKLOAD_CERT_TTL 24h) and maximum (MAX_WORKLOAD_CERT_TTL 90 days). */
const DEFAULT_TTL_S = 24 * 3600
const MAX_TTL_S = 90 * 24 * 3600

function keyPair(): {privateKeyPem: string; publicKeyPem: string} {
  const {privateKey, publicKey} = generateKeyPairSync('rsa', {modulusLength: 2048})
  return {privateKeyPem: privateKey.export({type: 'pkcs1', format: 'pem'}) as string, publicKeyPem: publicKey.export({type: 'spki', format: 'pem'}) as string}
}

let serial = 0x1000
const nextSerial = () => (serial++).toString(16).padStart(4, '0')

export class MeshCa {
  readonly rootPem: string
  private readonly root: forge.pki.Certificate
  private readonly rootKey: forge.pki.rsa.PrivateKey

  constructor(readonly trustDomain = 'cluster.local') {
    const keys = keyPair()
    const cert = forge.pki.createCertificate()
    cert.publicKey = forge.pki.publicKeyFromPem(keys.publicKeyPem)
    cert.serialNumber = nextSerial()
    cert.validity.notBefore = new Date(Date.now() - 60_000)
    cert.validity.notAfter = new Date(Date.now() + 10 * 365 * 24 * 3600_000)
    // istiod's self-signed root: Organization = trust domain, CA, cert and CRL signing.
    const subject = [{name: 'organizationName', value: trustDomain}]
    cert.setSubject(subject)
    cert.setIssuer(subject)
    cert.setExtensions([{name: 'basicConstraints', cA: true, critical: true}, {name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true}])
    this.rootKey = forge.pki.privateKeyFromPem(keys.privateKeyPem) as forge.pki.rsa.PrivateKey
    cert.sign(this.rootKey, forge.md.sha256.create())
    this.root = cert
    this.rootPem = forge.pki.certificateToPem(cert).replace(/\r\n/g, '\n')
  }

  private issue(publicKey: forge.pki.PublicKey, ttlSeconds: number, altNames: object[]): {pem: string; notAfter: Date} {
    const cert = forge.pki.createCertificate()
    cert.publicKey = publicKey
    cert.serialNumber = nextSerial()
    cert.validity.notBefore = new Date(Date.now() - 60_000)
    cert.validity.notAfter = new Date(Date.now() + ttlSeconds * 1000)
    // Istio workload certificates have an empty subject; the identity is the URI SAN.
    cert.setSubject([])
    cert.setIssuer(this.root.subject.attributes)
    cert.setExtensions([
      {name: 'basicConstraints', cA: false, critical: true},
      {name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true},
      {name: 'extKeyUsage', serverAuth: true, clientAuth: true},
      {name: 'subjectAltName', altNames, critical: true},
    ])
    cert.sign(this.rootKey, forge.md.sha256.create())
    return {pem: forge.pki.certificateToPem(cert).replace(/\r\n/g, '\n'), notAfter: cert.validity.notAfter}
  }

  /** The SPIFFE identity istiod gives a service account. */
  spiffeId(namespace: string, serviceAccount: string): string {
    return `spiffe://${this.trustDomain}/ns/${namespace}/sa/${serviceAccount}`
  }

  /**
   * Signs a PKCS#10 CSR for an authenticated caller: the certificate carries the caller's identity,
   * the CSR's public key, and the requested validity (default 24h, at most 90 days).
   */
  signCsr(csrPem: string, identity: string, validitySeconds = 0): SignedCertificate {
    let csr: forge.pki.CertificateSigningRequest
    try {
      csr = forge.pki.certificationRequestFromPem(csrPem)
    } catch {
      // istiod: caerror.CSRError → codes.InvalidArgument "CSR signing error (...)"
      throw new CaError('CSR signing error (failed to parse CSR)')
    }
    if (!csr.verify()) throw new CaError('CSR signing error (failed to verify the CSR signature)')
    const ttl = validitySeconds <= 0 ? DEFAULT_TTL_S : Math.min(validitySeconds, MAX_TTL_S)
    const leaf = this.issue(csr.publicKey!, ttl, [{type: 6, value: identity}])
    return {certChain: [leaf.pem, this.rootPem], notAfter: leaf.notAfter}
  }

  /** istiod's serving certificate (DNS SANs istiod.NS.svc, istiod-REV.NS.svc, …) and its key. */
  serverCertificate(dnsNames: string[]): {certPem: string; keyPem: string} {
    const keys = keyPair()
    const cert = this.issue(forge.pki.publicKeyFromPem(keys.publicKeyPem), 365 * 24 * 3600, dnsNames.map((value) => ({type: 2, value})))
    return {certPem: cert.pem + this.rootPem, keyPem: keys.privateKeyPem}
  }
}

/** The identity in a workload certificate (its URI SAN), for tests and the simulated VM. */
export function certificateIdentity(certPem: string): string | undefined {
  const cert = forge.pki.certificateFromPem(certPem)
  const san = cert.getExtension('subjectAltName') as {altNames?: {type: number; value: string}[]} | null
  return san?.altNames?.find((a) => a.type === 6)?.value
}
