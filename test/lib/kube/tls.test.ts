/**
 * goHostCheck (src/lib/kube/tls.ts) against Go's crypto/x509 Certificate.VerifyHostname and its
 * HostnameError texts (cases after Go's verify_test.go / x509_test.go TestMatchHostnames). The chain
 * itself is OpenSSL's business: test/faults/certificates.test.ts serves real certificates.
 */
import {describe, expect, it} from 'vitest'
import {goHostCheck, subjectAltNames} from '../../../src/lib/kube/tls.js'

const cert = (san: string | undefined, cn = 'ignored.example') => ({subjectaltname: san, subject: {CN: cn}}) as never

describe('goHostCheck (Go VerifyHostname)', () => {
  it.each([
    ['DNS:*.example.com', 'foo.example.com', true],
    ['DNS:*.example.com', 'FOO.Example.com', true],
    ['DNS:*.example.com', 'foo.example.com.', true],
    ['DNS:*.example.com', 'foo_bar.example.com', true],
    ['DNS:*.example.com', 'example.com', false],
    ['DNS:*.example.com', 'a.b.example.com', false],
    ['DNS:*.example', 'api.example', true],
    ['DNS:f*.example.com', 'foo.example.com', false],
    ['DNS:f*.example.com', 'f*.example.com', true],
    ['DNS:*.*.example.com', 'a.b.example.com', false],
    ['DNS:example.com.', 'example.com', false],
    ['DNS:api.example', 'api.example', true],
    ['DNS:api.example, DNS:other.example', 'other.example', true],
    ['IP Address:127.0.0.1', '127.0.0.1', true],
    ['IP Address:::FFFF:127.0.0.1', '127.0.0.1', true],
    ['IP Address:::1', '[::1]', true],
    ['IP Address:::1', '0:0:0:0:0:0:0:1', true],
    ['IP Address:10.0.0.1', '127.0.0.1', false],
    ['DNS:127.0.0.1', '127.0.0.1', false],
  ])('%s for %s: %s', (san, host, ok) => {
    expect(goHostCheck(host, cert(san)) === undefined).toBe(ok)
  })

  it("says why in Go's words", () => {
    expect(goHostCheck('api.example', cert('DNS:a.example, DNS:b.example'))?.message).toBe('x509: certificate is valid for a.example, b.example, not api.example')
    expect(goHostCheck('127.0.0.1', cert('IP Address:10.0.0.1, IP Address:10.0.0.2'))?.message).toBe('x509: certificate is valid for 10.0.0.1, 10.0.0.2, not 127.0.0.1')
    expect(goHostCheck('127.0.0.1', cert('DNS:127.0.0.1'))?.message).toBe("x509: cannot validate certificate for 127.0.0.1 because it doesn't contain any IP SANs")
    expect(goHostCheck('api.example', cert(undefined, 'api.example'))?.message).toBe('x509: certificate relies on legacy Common Name field, use SANs instead')
    expect(goHostCheck('api.example', cert(undefined, 'other.example'))?.message).toBe('x509: certificate is not valid for any names, but wanted to match api.example')
    expect(goHostCheck('api.example', cert('email:a@b.example', 'api.example'))?.message).toBe('x509: certificate is not valid for any names, but wanted to match api.example')
    expect(goHostCheck('api.example', cert('DNS:a.example'))?.code).toBe('ERR_TLS_CERT_ALTNAME_INVALID')
  })

  it('reads the SANs as Node prints them, quoted values included, and never puts a control character in its message', () => {
    expect(subjectAltNames('DNS:"a,b.example", DNS:c.example, IP Address:10.0.0.1, URI:spiffe://x')).toEqual({dns: ['a,b.example', 'c.example'], ips: ['10.0.0.1'], any: true})
    expect(goHostCheck('api.example', cert('DNS:"evil\\u001b]0;pwned\\u0007.example"'))?.message).toBe('x509: certificate is valid for evil\\e]0;pwned\\x07.example, not api.example')
  })
})
