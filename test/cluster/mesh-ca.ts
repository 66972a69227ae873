/**
 * The simulated mesh's root CA (what istiod's self-signed CA, or a plugged-in one, publishes in
 * ConfigMap istio-ca-root-cert) and certificates issued by it: istiod's serving certificate for
 * `istiod[-REV].NS.svc`, and (for other helpers) workload certificates with SPIFFE URI SANs.
 * X.509 from node-forge, as pki.ts does for the API server. The mesh's own root and the leaves it
 * issues without a given key use fixture keys (fixture-keys.ts); another CA gets a fresh key.
 */
import {generateKeyPairSync} from 'node:crypto'
import forge from 'node-forge'
import {fixtureKey} from './fixture-keys.js'

export interface IssuedCert {
  certPem: string
  keyPem: string
}

export interface MeshCa {
  name: string
  rootPem: string
  rootKeyPem: string
  /** A leaf certificate: DNS and URI SANs, server and client auth; a fresh key unless one is given. */
  issue(options: {dnsNames?: string[]; uris?: string[]; commonName?: string; publicKeyPem?: string; ttlMs?: number}): IssuedCert
}

let serial = 0x1000

type KeyPair = {privateKeyPem: string; publicKeyPem: string}

function newKeys(): KeyPair {
  const {privateKey, publicKey} = generateKeyPairSync('rsa', {modulusLength: 2048})
  return {privateKeyPem: privateKey.export({type: 'pkcs1', format: 'pem'}) as string, publicKeyPem: publicKey.export({type: 'spki', format: 'pem'}) as string}
}

/**
 * A new CA (tests make a second one to play an istiod whose certificate the mesh does not trust).
 * `keys`: the root's key pair (default: a fresh one); `leafKeys`: the key of leaves issued without a
 * public key (default: a fresh one per leaf).
 */
export function createMeshCa(organisation = 'cluster.local', options: {keys?: KeyPair; leafKeys?: KeyPair} = {}): MeshCa {
  const keys = options.keys ?? newKeys()
  const root = forge.pki.createCertificate()
  root.publicKey = forge.pki.publicKeyFromPem(keys.publicKeyPem)
  root.serialNumber = (serial++).toString(16)
  root.validity.notBefore = new Date(Date.now() - 60_000)
  root.validity.notAfter = new Date(Date.now() + 10 * 365 * 24 * 3600_000)
  // Istio's self-signed root: O=cluster.local, no CN (security/pkg/pki/util/generate_cert.go).
  const subject = [{name: 'organizationName', value: organisation}]
  root.setSubject(subject)
  root.setIssuer(subject)
  root.setExtensions([
    {name: 'basicConstraints', cA: true, critical: true},
    {name: 'keyUsage', keyCertSign: true, cRLSign: true, digitalSignature: true, critical: true},
    {name: 'subjectKeyIdentifier'},
  ])
  const rootKey = forge.pki.privateKeyFromPem(keys.privateKeyPem)
  root.sign(rootKey, forge.md.sha256.create())
  return {
    name: organisation,
    rootPem: forge.pki.certificateToPem(root),
    rootKeyPem: keys.privateKeyPem,
    issue(o) {
      const leafKeys = o.publicKeyPem ? {publicKeyPem: o.publicKeyPem, privateKeyPem: ''} : (options.leafKeys ?? newKeys())
      const cert = forge.pki.createCertificate()
      cert.publicKey = forge.pki.publicKeyFromPem(leafKeys.publicKeyPem)
      cert.serialNumber = (serial++).toString(16)
      cert.validity.notBefore = new Date(Date.now() - 60_000)
      cert.validity.notAfter = new Date(Date.now() + (o.ttlMs ?? 24 * 3600_000))
      cert.setSubject(o.commonName ? [{name: 'commonName', value: o.commonName}] : [])
      cert.setIssuer(root.subject.attributes)
      const altNames = [...(o.dnsNames ?? []).map((value) => ({type: 2, value})), ...(o.uris ?? []).map((value) => ({type: 6, value}))]
      cert.setExtensions([
        {name: 'basicConstraints', cA: false},
        {name: 'keyUsage', digitalSignature: true, keyEncipherment: true, critical: true},
        {name: 'extKeyUsage', serverAuth: true, clientAuth: true},
        ...(altNames.length > 0 ? [{name: 'subjectAltName', altNames, critical: !o.commonName}] : []),
      ])
      cert.sign(rootKey, forge.md.sha256.create())
      return {certPem: forge.pki.certificateToPem(cert), keyPem: leafKeys.privateKeyPem}
    },
  }
}

let cached: MeshCa | undefined

/** One mesh root per process, with fixture keys: key generation is the slow part. */
export function meshCa(): MeshCa {
  cached ??= createMeshCa('cluster.local', {keys: fixtureKey('mesh-root'), leafKeys: fixtureKey('mesh-leaf')})
  return cached
}
