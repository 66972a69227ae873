/**
 * A throwaway certificate authority and server certificate for the test API server, so clients
 * verify TLS for real (certificate-authority-data in the kubeconfig). The keys are fixtures
 * (fixture-keys.ts); node-forge builds and signs the X.509 certificates, with current dates.
 */
import forge from 'node-forge'
import {fixtureKey} from './fixture-keys.js'

export interface Pki {
  caPem: string
  certPem: string
  keyPem: string
  /** Signs service-account JWTs (RS256). */
  signingKeyPem: string
  signingPublicKeyPem: string
}

function certificate(options: {
  subject: string
  issuer: forge.pki.Certificate | undefined
  publicKeyPem: string
  signerKeyPem: string
  ca: boolean
  altNames?: {type: number; value?: string; ip?: string}[]
  serial: string
}): forge.pki.Certificate {
  const cert = forge.pki.createCertificate()
  cert.publicKey = forge.pki.publicKeyFromPem(options.publicKeyPem)
  cert.serialNumber = options.serial
  cert.validity.notBefore = new Date(Date.now() - 60_000)
  cert.validity.notAfter = new Date(Date.now() + 24 * 3600_000)
  const subject = [{name: 'commonName', value: options.subject}]
  cert.setSubject(subject)
  cert.setIssuer(options.issuer ? options.issuer.subject.attributes : subject)
  const extensions: object[] = [
    {name: 'basicConstraints', cA: options.ca},
    {name: 'keyUsage', keyCertSign: options.ca, digitalSignature: true, keyEncipherment: !options.ca},
  ]
  if (options.altNames) extensions.push({name: 'subjectAltName', altNames: options.altNames}, {name: 'extKeyUsage', serverAuth: true})
  cert.setExtensions(extensions)
  cert.sign(forge.pki.privateKeyFromPem(options.signerKeyPem), forge.md.sha256.create())
  return cert
}

let cached: Pki | undefined

/** One PKI per process: signing is the slow part, and tests only need it to be real. */
export function testPki(): Pki {
  if (cached) return cached
  const caKeys = fixtureKey('apiserver-ca')
  const serverKeys = fixtureKey('apiserver')
  const signing = fixtureKey('sa-signing')
  const ca = certificate({subject: 'meshvm-test-ca', issuer: undefined, publicKeyPem: caKeys.publicKeyPem, signerKeyPem: caKeys.privateKeyPem, ca: true, serial: '01'})
  const server = certificate({
    subject: 'meshvm-test-apiserver',
    issuer: ca,
    publicKeyPem: serverKeys.publicKeyPem,
    signerKeyPem: caKeys.privateKeyPem,
    ca: false,
    serial: '02',
    altNames: [
      {type: 2, value: 'localhost'},
      {type: 7, ip: '127.0.0.1'},
      {type: 2, value: 'kubernetes.default.svc'},
    ],
  })
  cached = {
    caPem: forge.pki.certificateToPem(ca),
    certPem: forge.pki.certificateToPem(server),
    keyPem: serverKeys.privateKeyPem,
    signingKeyPem: signing.privateKeyPem,
    signingPublicKeyPem: signing.publicKeyPem,
  }
  return cached
}
