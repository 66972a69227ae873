/**
 * RSA keys for the simulated cluster's certificates, read from test/fixtures/pki/ instead of generated
 * by every test file that starts a cluster (2048-bit key generation is most of a cluster's start-up
 * CPU). The keys are throwaway test keys with no meaning beyond this suite; the certificates signed
 * with them are still made afresh, with current dates, by pki.ts and mesh-ca.ts.
 */
import {createPrivateKey, createPublicKey} from 'node:crypto'
import {readFileSync} from 'node:fs'

export type FixtureKeyName = 'apiserver-ca' | 'apiserver' | 'sa-signing' | 'mesh-root' | 'mesh-leaf'

const cache = new Map<FixtureKeyName, {privateKeyPem: string; publicKeyPem: string}>()

/** A fixture key pair as PEM: PKCS#1 private key, SPKI public key (what generateKeyPairSync's exports give). */
export function fixtureKey(name: FixtureKeyName): {privateKeyPem: string; publicKeyPem: string} {
  let pair = cache.get(name)
  if (!pair) {
    const privateKey = createPrivateKey(readFileSync(new URL(`../fixtures/pki/${name}.key`, import.meta.url), 'utf8'))
    pair = {
      privateKeyPem: privateKey.export({type: 'pkcs1', format: 'pem'}) as string,
      publicKeyPem: createPublicKey(privateKey).export({type: 'spki', format: 'pem'}) as string,
    }
    cache.set(name, pair)
  }
  return pair
}
