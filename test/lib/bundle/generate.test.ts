import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it, vi} from 'vitest'
import {parse} from 'yaml'
import {buildBundle, type BundleInputs, type WorkloadGroupLike} from '../../../src/lib/bundle/generate.js'
import {goYamlKeyCompare, istioShellQuote} from '../../../src/lib/util/go-compat.js'
import {REPO_ROOT} from '../../helpers/cli.js'
import {expectMatchesGoldenFile} from '../../helpers/golden.js'

const TESTDATA = join(REPO_ROOT, 'test/fixtures/istioctl/workload/testdata')
const read = (...p: string[]) => readFileSync(join(TESTDATA, ...p), 'utf8')

function filesOf(inputs: BundleInputs): Record<string, string> {
  return Object.fromEntries(buildBundle(inputs).files.map((f) => [f.name, f.data]))
}

/** The inputs of istioctl's TestWorkloadEntryConfigure cases (workload_test.go). */
function istioctlCase(dir: string, extra: Partial<BundleInputs>): BundleInputs {
  return {
    workloadGroup: parse(read(dir, 'workloadgroup.yaml')) as WorkloadGroupLike,
    meshConfigYaml: '',
    clusterId: 'Kubernetes',
    rootCert: read(dir, 'root-cert.pem.golden'),
    token: '',
    istioNamespace: 'istio-system',
    gateway: {kind: 'none'},
    internalIp: '10.10.10.10',
    autoregister: false,
    captureDns: true,
    ...extra,
  }
}

describe('bundle: istioctl golden files', () => {
  for (const [name, ingress, internal] of [
    ['ipv4', '10.10.10.11', '10.10.10.10'],
    ['ipv6', 'fd00:10:96::2', 'fd00:10:96::1'],
  ] as const) {
    it(`reproduces vmconfig/${name} byte for byte`, () => {
      const dir = `vmconfig/${name}`
      const files = filesOf(istioctlCase(dir, {meshConfigYaml: read(dir, 'meshconfig.yaml'), revision: 'rev-1', gateway: {kind: 'ip', address: ingress}, internalIp: internal}))
      for (const file of ['mesh.yaml', 'cluster.env', 'hosts', 'root-cert.pem', 'istio-token']) {
        expect(files[file], file).toBe(read(dir, `${file}.golden`))
      }
    })
  }
  it('reproduces vmconfig-nil-proxy-metadata (no revision, empty mesh config, no gateway)', () => {
    const dir = 'vmconfig-nil-proxy-metadata'
    const files = filesOf(istioctlCase(dir, {meshConfigYaml: 'defaultConfig: {}\n'}))
    for (const file of ['mesh.yaml', 'cluster.env', 'hosts', 'root-cert.pem', 'istio-token']) {
      expect(files[file], file).toBe(read(dir, `${file}.golden`))
    }
  })
})

describe('bundle: meshvm improvements', () => {
  const wg: WorkloadGroupLike = {
    metadata: {name: 'web', namespace: 'apps'},
    spec: {metadata: {labels: {app: 'web', version: 'v2'}}, template: {ports: {http: 8080, grpc: 9090, metrics: 8080}, serviceAccount: 'web-vm', network: 'vm-net'}},
  }
  const base: BundleInputs = {
    workloadGroup: wg,
    meshConfigYaml: 'trustDomain: cluster.local\ndefaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\n  meshId: mesh1\n',
    clusterId: 'cluster1',
    rootCert: 'CA',
    token: 'tok',
    istioNamespace: 'istio-system',
    gateway: {kind: 'ip', address: '192.0.2.10'},
    autoregister: true,
    captureDns: true,
  }
  it('writes ISTIO_INBOUND_PORTS in a stable order, and pod ports, mesh and trust domain', () => {
    const env = filesOf(base)['cluster.env']!
    expect(env).toContain("ISTIO_INBOUND_PORTS='8080,9090'\n")
    expect(env).toContain(
      `ISTIO_META_POD_PORTS='[{"name":"grpc","containerPort":9090,"protocol":""},{"name":"http","containerPort":8080,"protocol":""},{"name":"metrics","containerPort":8080,"protocol":""}]'`,
    )
    expect(env).toContain("ISTIO_META_MESH_ID='mesh1'")
    expect(env).toContain("TRUST_DOMAIN='cluster.local'")
    expect(env).toContain("ISTIO_META_AUTO_REGISTER_GROUP='web'")
    expect(env).toContain("ISTIO_META_NETWORK='vm-net'")
    expect(env).toContain("CANONICAL_REVISION='v2'")
  })
  it('gives the token mode 0600 and the other files 0644', () => {
    const modes = Object.fromEntries(buildBundle(base).files.map((f) => [f.name, f.mode]))
    expect(modes).toEqual({'mesh.yaml': 0o644, 'cluster.env': 0o644, 'root-cert.pem': 0o644, 'istio-token': 0o600, hosts: 0o644, 'install.sh': 0o755})
  })
  it('defaults the service account of a WorkloadGroup however it was read', () => {
    const files = filesOf({...base, workloadGroup: {metadata: wg.metadata, spec: {}}})
    expect(files['cluster.env']).toContain("SERVICE_ACCOUNT='default'")
    expect(files['cluster.env']).toContain("ISTIO_INBOUND_PORTS='*'")
  })
  it('supports a gateway known only by host name, resolved on the VM by install.sh', () => {
    const files = filesOf({...base, gateway: {kind: 'hostname', hostname: 'a1b2.elb.us-east-1.amazonaws.com'}})
    expect(files.hosts).toBe('# istiod.istio-system.svc is reached through the east-west gateway a1b2.elb.us-east-1.amazonaws.com; install.sh resolves it on the VM\n')
    expect(files['install.sh']).toContain('getent ahosts a1b2.elb.us-east-1.amazonaws.com')
  })
  it('install.sh refuses an expired token and quotes what it interpolates', () => {
    const script = filesOf({...base, tokenExpiry: new Date('2030-01-02T03:04:05Z'), workloadGroup: {...wg, metadata: {name: 'web', namespace: 'apps'}}})['install.sh']!
    expect(script).toContain('if [ "$(date +%s)" -ge 1893553445 ]; then')
    expect(script).toContain("grep -qxF '192.0.2.10 istiod.istio-system.svc' /etc/hosts")
    expect(script.startsWith('#!/bin/sh\n')).toBe(true)
  })
  it('external IP sets ISTIO_SVC_IP and the probe rewrite; internal and external are exclusive', () => {
    expect(filesOf({...base, externalIp: '203.0.113.5'})['cluster.env']).toContain("ISTIO_SVC_IP='203.0.113.5'\n")
    expect(filesOf({...base, externalIp: '203.0.113.5'})['cluster.env']).toContain("REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION='true'")
    expect(() => buildBundle({...base, internalIp: '10.0.0.1', externalIp: '203.0.113.5'})).toThrow(/mutually exclusive/)
    expect(() => buildBundle({...base, internalIp: 'vm-1'})).toThrow('--internal-ip "vm-1": expected an IPv4 or IPv6 address')
  })
  it('honours a custom status port in ISTIO_LOCAL_EXCLUDE_PORTS', () => {
    expect(filesOf({...base, meshConfigYaml: 'defaultConfig:\n  statusPort: 15999\n'})['cluster.env']).toContain("ISTIO_LOCAL_EXCLUDE_PORTS='22,15090,15021,15999'")
    expect(filesOf({...base, meshConfigYaml: 'defaultConfig:\n  statusPort: 15021\n'})['cluster.env']).toContain("ISTIO_LOCAL_EXCLUDE_PORTS='22,15090,15021'")
  })
  it('reads a mesh config with unknown YAML tags without printing Node process warnings', () => {
    const warn = vi.spyOn(process, 'emitWarning')
    expect(filesOf({...base, meshConfigYaml: 'trustDomain: !custom example.org\ndefaultConfig: {}\n'})['mesh.yaml']).toBeDefined()
    expect(warn).not.toHaveBeenCalled()
  })
})

describe('go compatibility', () => {
  it('sorts keys like yaml.v2', () => {
    const keys = ['ISTIO_METAJSON_LABELS', 'ISTIO_META_WORKLOAD_NAME', 'a10', 'a9', 'a', 'b', 'A']
    expect([...keys].sort(goYamlKeyCompare)).toEqual(['A', 'ISTIO_META_WORKLOAD_NAME', 'ISTIO_METAJSON_LABELS', 'a', 'a9', 'a10', 'b'])
  })
  it('quotes like Istio shellescape.Quote', () => {
    expect(istioShellQuote('')).toBe("''")
    expect(istioShellQuote('latest')).toBe("'latest'")
    expect(istioShellQuote('w/.-')).toBe('w/.-')
    expect(istioShellQuote("it's")).toBe(`'it'"'"'s'`)
  })
})

describe('bundle: mesh.yaml goes through the yaml.v2 emitter (as istioctl writes it with sigs.k8s.io/yaml)', () => {
  // istioctl's vmconfig/ipv4 inputs, plus a mesh config with long values that contain spaces (yaml.v2
  // folds them after column 80, continuing two columns deeper), a probe command, a float and a
  // string that would read as a number; see test/lib/remote-secret.test.ts for the emitter's rules.
  const meshConfig = [
    'defaultConfig:',
    '  proxyMetadata:',
    '    ISTIO_META_DNS_CAPTURE: "false"',
    '    EXTRA_ENVOY_ARGS: "--log-level debug --component-log-level misc:error,upstream:warn,connection:info --concurrency 2"',
    '    BOOTSTRAP_NOTE: "this VM group runs the legacy reporting service; ask the payments team before changing its proxy settings"',
    '  tracing:',
    '    sampling: 12.5',
    '  concurrency: 2',
    'trustDomain: cluster.local',
    '',
  ].join('\n')

  it('folds long values at a space after column 80 and writes numbers as Go does', () => {
    const dir = 'vmconfig/ipv4'
    const wg = parse(read(dir, 'workloadgroup.yaml')) as WorkloadGroupLike
    wg.spec.probe = {exec: {command: ['/usr/local/bin/check-health', '--endpoint', 'http://127.0.0.1:8080/ready', '--timeout', '5s', '--verbose']}, periodSeconds: 5}
    const files = filesOf(istioctlCase(dir, {workloadGroup: wg, meshConfigYaml: meshConfig, revision: 'rev-1', gateway: {kind: 'ip', address: '10.10.10.11'}}))
    const mesh = files['mesh.yaml']!
    expectMatchesGoldenFile(mesh, join(REPO_ROOT, 'test/golden/bundle/mesh-folded.yaml'))
    // Folded lines continue two columns deeper than their key, and read back as the same value.
    expect(mesh).toMatch(/^ {4}BOOTSTRAP_NOTE: this VM group runs the legacy reporting service; ask the payments\n {6}team before changing its proxy settings$/m)
    const back = parse(mesh) as {defaultConfig: {proxyMetadata: Record<string, string>; tracing: {sampling: number}; readinessProbe: {exec: {command: string[]}}}}
    expect(back.defaultConfig.proxyMetadata.EXTRA_ENVOY_ARGS).toBe('--log-level debug --component-log-level misc:error,upstream:warn,connection:info --concurrency 2')
    expect(back.defaultConfig.tracing.sampling).toBe(12.5)
    expect(back.defaultConfig.readinessProbe.exec.command).toHaveLength(6)
    expect(mesh).toContain('    ISTIO_META_DNS_CAPTURE: "true"\n')
  })
})
