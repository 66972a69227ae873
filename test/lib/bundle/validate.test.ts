/** The checks of every value a bundle writes into install.sh, cluster.env, hosts and mesh.yaml. */
import {describe, expect, it} from 'vitest'
import {bundleValueProblems, checkBundleValues, normalizedRootCert, rootCertProblem} from '../../../src/lib/bundle/validate.js'
import {testPki} from '../../cluster/pki.js'
import {MeshvmError, UsageError} from '../../../src/lib/errors.js'
import type {WorkloadGroupLike} from '../../../src/lib/bundle/generate.js'

const group = (spec: Record<string, unknown> = {}, metadata: Record<string, unknown> = {}): WorkloadGroupLike => ({metadata: {name: 'web', namespace: 'apps', ...metadata}, spec}) as WorkloadGroupLike

describe('bundleValueProblems', () => {
  it('accepts what Kubernetes and Istio accept', () => {
    expect(
      bundleValueProblems({
        workloadGroup: group({metadata: {labels: {app: 'web', 'app.kubernetes.io/version': 'v1.2_3'}}, template: {serviceAccount: 'web-vm', network: 'vm-net', ports: {http: 8080, 'grpc-web': 9090}}}),
        istioNamespace: 'istio-system',
        revision: '1-24-6',
        clusterId: 'Kubernetes',
        gateway: {kind: 'hostname', hostname: 'abc123.elb.us-east-2.amazonaws.com'},
        internalIp: 'fd00:10:96::1',
        meshConfigYaml: 'trustDomain: cluster.local\ndefaultConfig:\n  meshId: mesh1\n  proxyMetadata: {ISTIO_META_DNS_CAPTURE: "true", PORT: 15001}\n',
      }),
    ).toEqual([])
    // An empty service account is the default one; an empty or "default" revision is none.
    expect(bundleValueProblems({workloadGroup: group({template: {serviceAccount: ''}}), revision: 'default'})).toEqual([])
  })

  it('names each field and what would be valid', () => {
    expect(
      bundleValueProblems({
        workloadGroup: group(
          {metadata: {labels: {'a b': 'x', app: 'a;b'}}, template: {ports: {'': 8080, http: 70000, grpc: '9090'}}},
          {annotations: {'proxy.istio.io/config': 'proxyMetadata:\n  "1X": "a\\nb"\n'}},
        ),
        revision: 'Canary',
        clusterId: '',
        gateway: {kind: 'ip', address: '10.0.0.1; x'},
      }),
    ).toEqual([
      `WorkloadGroup spec.metadata.labels "a b": key name must consist of letters, digits, '-', '_' or '.', and start and end with a letter or digit`,
      `WorkloadGroup spec.metadata.labels "app": value "a;b" must be empty or consist of letters, digits, '-', '_' or '.', and start and end with a letter or digit`,
      'WorkloadGroup spec.template.ports name "": must not be empty',
      'WorkloadGroup spec.template.ports "http": 70000 must be a whole number between 1 and 65535',
      'WorkloadGroup spec.template.ports "grpc": "9090" must be a number',
      `WorkloadGroup metadata.annotations proxy.istio.io/config: proxyMetadata key "1X": must be an environment variable name: letters, digits and '_', not starting with a digit`,
      'WorkloadGroup metadata.annotations proxy.istio.io/config: proxyMetadata "1X": value "a\\nb" must not contain control characters or line breaks',
      `revision "Canary": must be a DNS-1123 label: lower case letters, digits and '-', starting and ending with a letter or digit (e.g. 'my-name')`,
      'cluster ID "": must not be empty',
      'east-west gateway address "10.0.0.1; x": must be an IPv4 or IPv6 address',
    ])
  })
})

describe('checkBundleValues', () => {
  const bad = {workloadGroup: group({template: {serviceAccount: 'a$(b)'}})}
  it("is a usage error (exit 2) for the user's input, exit 1 for what the cluster returned", () => {
    expect(() => checkBundleValues(bad, 'input')).toThrow(UsageError)
    try {
      checkBundleValues(bad, 'cluster')
    } catch (err) {
      expect(err).toBeInstanceOf(MeshvmError)
      expect(err).not.toBeInstanceOf(UsageError)
      expect((err as MeshvmError).exit).toBe(1)
      expect((err as MeshvmError).message).toMatch(/^WorkloadGroup spec\.template\.serviceAccount "a\$\(b\)": .* \(read from the cluster\); no token was issued and nothing was written$/)
      return
    }
    throw new Error('expected an error')
  })
})

describe('rootCertProblem: root-cert.pem holds PEM CERTIFICATE blocks and nothing else', () => {
  const {caPem, certPem, keyPem} = testPki()
  const lf = (pem: string) => pem.replace(/\r\n/g, '\n')
  it('accepts certificates with LF or CRLF line ends, blank lines between them, with or without a final newline', () => {
    for (const pem of [caPem, lf(caPem), `${lf(caPem)}\n${lf(certPem)}`, lf(caPem).trimEnd(), `${caPem}${certPem}`.trimEnd()]) expect(rootCertProblem(pem), pem).toBeUndefined()
    expect(normalizedRootCert(lf(caPem).trimEnd())).toBe(lf(caPem))
    expect(normalizedRootCert(lf(caPem))).toBe(lf(caPem))
  })
  it('refuses anything else by line number, never quoting the line', () => {
    const lines = lf(caPem).trimEnd().split('\n').length
    expect(rootCertProblem(`${lf(caPem)}MESHVM_EOF\n`)).toBe(`line ${lines + 1} is not part of a PEM CERTIFICATE block (only certificates may be there)`)
    expect(rootCertProblem(`# a comment\n${lf(caPem)}`)).toBe('line 1 is not part of a PEM CERTIFICATE block (only certificates may be there)')
    expect(rootCertProblem(lf(caPem).replace('\n-----END', '\n`id`\n-----END'))).toBe(`line ${lines} is not base64 inside a PEM CERTIFICATE block`)
    expect(rootCertProblem(keyPem)).toBe('line 1 is not part of a PEM CERTIFICATE block (only certificates may be there)')
    expect(rootCertProblem('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')).toBe('the PEM CERTIFICATE block ending on line 3 is not an X.509 certificate')
    expect(rootCertProblem(lf(caPem).split('\n').slice(0, 3).join('\n'))).toBe('the PEM CERTIFICATE block on line 1 has no END line')
    expect(rootCertProblem('')).toBe('holds no PEM CERTIFICATE block')
    expect(rootCertProblem('fake-CA-cert')).toBe('line 1 is not part of a PEM CERTIFICATE block (only certificates may be there)')
  })
  it('is reported through checkBundleValues naming the ConfigMap', () => {
    expect(bundleValueProblems({rootCert: {pem: 'x\ny', namespace: 'apps'}})).toEqual([
      'ConfigMap apps/istio-ca-root-cert root-cert.pem: line 1 is not part of a PEM CERTIFICATE block (only certificates may be there)',
    ])
  })
})
