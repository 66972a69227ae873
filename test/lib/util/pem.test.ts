/** pemCertificates: the certificate blocks of a PEM text, as client-go's AppendCertsFromPEM finds them. */
import {describe, expect, it} from 'vitest'
import {pemCertificates} from '../../../src/lib/util/pem.js'
import {testPki} from '../../cluster/pki.js'

describe('pemCertificates', () => {
  const {caPem, certPem, keyPem} = testPki()
  it('returns every certificate block in order, BEGIN to END, with its line ends as written', () => {
    expect(pemCertificates(`${caPem}\n${certPem}`)).toEqual([caPem.trimEnd(), certPem.trimEnd()])
    expect(pemCertificates(caPem)[0]).toContain('\r\n')
  })
  it('leaves out what is not a certificate block: keys, text around the blocks, a block without its END line', () => {
    expect(pemCertificates(`# root\n${keyPem}${caPem}trailing text`)).toEqual([caPem.trimEnd()])
    expect(pemCertificates(keyPem)).toEqual([])
    expect(pemCertificates('-----BEGIN CERTIFICATE-----\nAAAA\n')).toEqual([])
    expect(pemCertificates('')).toEqual([])
  })
  it('ends each block at the first END line, and does not parse it', () => {
    expect(pemCertificates('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n-----END CERTIFICATE-----')).toEqual(['-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----'])
  })
  it('an empty block is a block of its own: it does not swallow the certificate after it', () => {
    const empty = '-----BEGIN CERTIFICATE----------END CERTIFICATE-----'
    expect(pemCertificates(`${empty}\n${caPem}`)).toEqual([empty, caPem.trimEnd()])
  })
})
