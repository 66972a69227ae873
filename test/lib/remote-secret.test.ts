/**
 * `istioctl create-remote-secret` output, byte for byte (istioctl-behaviour.md §5.4). The golden files
 * under test/golden/remote-secret/ were written by hand from the reference: §5.4's text for
 * bearer-token.yaml, and istioctl's remote_secret_test.go cases (config type, tls-server-name, plugin),
 * then brought to the shape istioctl 1.30+ prints (client-go 1.35 writes no `creationTimestamp: null`
 * and no `preferences: {}`; test:real compares byte for byte with the real istioctl 1.30 and 1.31).
 * Only the token value differs from the reference (`token` → fake-token-abc123).
 */
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'
import {ExitCode, MeshvmError, UsageError, UsageErrors, toReport} from '../../src/lib/errors.js'
import {
  buildRemoteKubeconfig,
  buildRemoteSecret,
  isLoopbackServer,
  isServiceAccountTokenSecret,
  parseAuthPluginConfig,
  remoteSecretWarnings,
  tokenSecretManifest,
  validateRemoteSecretOptions,
  type RemoteSecretFlags,
} from '../../src/lib/remote-secret/generate.js'
import {parseClusterz, viewsFor} from '../../src/lib/remote-secret/status.js'
import {applyManifest} from '../../src/lib/remote-secret/fetch.js'
import type {KubeClient} from '../../src/lib/kube/client.js'
import {goYamlMarshal} from '../../src/lib/util/go-compat.js'
import {expectMatchesGoldenFile} from '../helpers/golden.js'

const GOLDEN = join(import.meta.dirname, '..', 'golden', 'remote-secret')
const TOKEN = 'fake-token-abc123'
const CA = Buffer.from('caData').toString('base64') // Y2FEYXRh, as in istioctl's tests
const UID = '54643f96-eca0-11e9-bb97-42010a80000a'

function bearer(clusterName: string, server = 'server', tlsServerName?: string): string {
  return buildRemoteKubeconfig({clusterName, server, caData: CA, tlsServerName, auth: {type: 'bearer-token', token: TOKEN}})
}

function usageError(fn: () => unknown): UsageError {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(UsageError)
    expect(toReport(err).exit).toBe(ExitCode.USAGE)
    return err as UsageError
  }
  throw new Error('expected a UsageError')
}

describe('buildRemoteSecret / buildRemoteKubeconfig: istioctl output', () => {
  it('bearer token, cluster named after the kube-system UID (§5.4)', () => {
    const {yaml} = buildRemoteSecret({name: UID, type: 'remote', namespace: 'istio-system-test', kubeconfig: bearer(UID)})
    expectMatchesGoldenFile(yaml, join(GOLDEN, 'bearer-token.yaml'))
  })

  it('--type config: Secret istio-kubeconfig, key config, annotation still names the cluster', () => {
    const {yaml, secretName, key} = buildRemoteSecret({name: 'primary', type: 'config', namespace: 'istio-system-test', kubeconfig: bearer('primary')})
    expect([secretName, key]).toEqual(['istio-kubeconfig', 'config'])
    expectMatchesGoldenFile(yaml, join(GOLDEN, 'config-type.yaml'))
  })

  it('--server and --tls-server-name: tls-server-name sorts after server', () => {
    const {yaml} = buildRemoteSecret({name: 'primary', type: 'remote', namespace: 'istio-system-test', kubeconfig: bearer('primary', 'gateway', 'server')})
    expectMatchesGoldenFile(yaml, join(GOLDEN, 'tls-server-name.yaml'))
  })

  it('auth plugin user, as in TestCreateRemoteSecretFromPlugin', () => {
    const kc = buildRemoteKubeconfig({
      clusterName: 'fake-clusterName-0',
      server: 'https://1.2.3.4',
      caData: CA,
      auth: {type: 'plugin', name: 'foobar', config: {k1: 'v1'}},
    })
    expectMatchesGoldenFile(kc, join(GOLDEN, 'plugin-kubeconfig.yaml'))
  })

  it('honours --auth-plugin-config (istioctl 1.24 drops it) in a full oidc Secret', () => {
    const settings = validateRemoteSecretOptions({
      name: 'cluster-west',
      authType: 'plugin',
      authPluginName: 'oidc',
      authPluginConfig: ['idp-issuer-url=https://issuer.example.com', 'client-id=mesh-reader', 'scopes=openid,groups'],
    })
    const kc = buildRemoteKubeconfig({
      clusterName: settings.name!,
      server: 'https://api.west.example.com:6443',
      caData: CA,
      auth: {type: 'plugin', ...settings.authPlugin!},
    })
    const {yaml} = buildRemoteSecret({name: settings.name!, type: settings.type, namespace: 'istio-system', kubeconfig: kc})
    expectMatchesGoldenFile(yaml, join(GOLDEN, 'plugin-oidc.yaml'))
  })

  it('an empty plugin config prints `config: {}` (the field is not omitempty)', () => {
    const kc = buildRemoteKubeconfig({clusterName: 'c0', server: 'https://1.2.3.4', caData: CA, auth: {type: 'plugin', name: 'oidc', config: {}}})
    expect(kc).toContain('    auth-provider:\n      config: {}\n      name: oidc\n')
  })

  it('returns the Secret as an API object too, and omits an empty namespace', () => {
    const kc = bearer('c0')
    const m = buildRemoteSecret({name: 'c0', type: 'remote', kubeconfig: kc})
    expect(m.object).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {name: 'istio-remote-secret-c0', labels: {'istio/multiCluster': 'true'}, annotations: {'networking.istio.io/cluster': 'c0'}},
      stringData: {c0: kc},
    })
    expect(m.yaml).not.toContain('namespace:')
    expect(m.yaml.startsWith('# This file is autogenerated, do not edit.\napiVersion: v1\n')).toBe(true)
    expect(m.yaml.endsWith(`        token: ${TOKEN}\n---\n`)).toBe(true)
  })

  it('quotes a cluster name that yaml.v2 would read as a number, in keys and values alike', () => {
    const {yaml} = buildRemoteSecret({name: '1234', type: 'remote', namespace: 'istio-system', kubeconfig: bearer('1234')})
    expect(yaml).toContain('    networking.istio.io/cluster: "1234"\n')
    expect(yaml).toContain('  name: istio-remote-secret-1234\n')
    expect(yaml).toContain('stringData:\n  "1234": |\n    apiVersion: v1\n')
    expect(yaml).toContain('      name: "1234"\n')
    expect(yaml).toContain('    current-context: "1234"\n')
  })

  it('leaves out certificate-authority-data when ca.crt is empty, and re-encodes base64 as Go does', () => {
    const noCa = buildRemoteKubeconfig({clusterName: 'c0', server: 'https://1.2.3.4', caData: '', auth: {type: 'bearer-token', token: TOKEN}})
    expect(noCa).toContain('- cluster:\n    server: https://1.2.3.4\n  name: c0\n')
    const wrapped = buildRemoteKubeconfig({clusterName: 'c0', server: 'https://1.2.3.4', caData: 'Y2FE\nYXRh\n', auth: {type: 'bearer-token', token: TOKEN}})
    expect(wrapped).toContain('certificate-authority-data: Y2FEYXRh\n')
    expect(() => buildRemoteKubeconfig({clusterName: 'c0', server: 's', caData: 'not base64!', auth: {type: 'bearer-token', token: TOKEN}})).toThrow(
      'ca.crt of the ServiceAccount token Secret is not valid base64',
    )
  })

  it('refuses an empty server (clientcmd.Validate) and names --server', () => {
    const err = usageError(() => buildRemoteKubeconfig({clusterName: 'c0', server: '', caData: CA, auth: {type: 'bearer-token', token: TOKEN}}))
    expect(err.message).toBe('--server: no API server address for cluster "c0": the kubeconfig context has none; pass --server https://HOST:PORT')
  })

  it('refuses a cluster name that is not a DNS-1123 label', () => {
    const err = usageError(() => buildRemoteSecret({name: 'Bad_Name', type: 'remote', kubeconfig: bearer('x')}))
    expect(err.message).toMatch(/^--name "Bad_Name": must be a DNS-1123 label/)
  })
})

describe('goYamlMarshal: yaml.v2 formatting', () => {
  it('matches istioctl testdata mesh.yaml.golden (natural key order, quoting, long single-quoted JSON)', () => {
    const labels = '{"service.istio.io/canonical-name":"foo","service.istio.io/canonical-revision":"latest"}'
    const value = {
      defaultConfig: {
        readinessProbe: {httpGet: {port: 8080}},
        proxyMetadata: {
          TRUST_DOMAIN: '',
          ISTIO_METAJSON_LABELS: labels,
          ISTIO_META_WORKLOAD_NAME: 'foo',
          ISTIO_META_DNS_CAPTURE: 'true',
          CANONICAL_SERVICE: 'foo',
        },
      },
    }
    expect(goYamlMarshal(value)).toBe(
      [
        'defaultConfig:',
        '  proxyMetadata:',
        '    CANONICAL_SERVICE: foo',
        '    ISTIO_META_DNS_CAPTURE: "true"',
        '    ISTIO_META_WORKLOAD_NAME: foo',
        `    ISTIO_METAJSON_LABELS: '${labels}'`,
        '    TRUST_DOMAIN: ""',
        '  readinessProbe:',
        '    httpGet:',
        '      port: 8080',
        '',
      ].join('\n'),
    )
  })

  it.each([
    ['plain', 'https://1.2.3.4:6443', 'https://1.2.3.4:6443'],
    ['YAML 1.1 booleans', 'on', '"on"'],
    ['a lone y', 'y', '"y"'],
    ['null', 'null', '"null"'],
    ['the empty string', '', '""'],
    ['an integer', '8080', '"8080"'],
    ['hex', '0x1F', '"0x1F"'],
    ['underscored digits', '1_000', '"1_000"'],
    ['a float', '1e3', '"1e3"'],
    ['a dotted float', '.5', '".5"'],
    ['a base-60 float', '1:20', '"1:20"'],
    ['a date', '2024-01-15', '"2024-01-15"'],
    ['an RFC 3339 time', '2024-01-15T10:00:00Z', '"2024-01-15T10:00:00Z"'],
    ['a non-date', '2024-13-15', '2024-13-15'],
    ['a leading indicator', '*star', "'*star'"],
    ['": " inside', 'a: b', "'a: b'"],
    ['" #" inside', 'a #b', "'a #b'"],
    ['"#" without a space', 'a#b', 'a#b'],
    ['a dash and space', '- a', "'- a'"],
    ['a quote inside', "it's", "it's"],
    ['a leading quote', "'q", "'''q'"],
    ['a tab', 'a\tb', '"a\\tb"'],
    ['an emoji (not printable for yaml.v2)', 'a😀', '"a\\U0001F600"'],
    ['a trailing space', 'x ', "'x '"],
    ['a document marker', '--- x', "'--- x'"],
  ])('%s', (_, input, want) => {
    expect(goYamlMarshal({k: input})).toBe(`k: ${want}\n`)
  })

  it('writes multi-line strings as block literals with yaml.v2 chomping', () => {
    expect(goYamlMarshal({k: 'a\nb\n'})).toBe('k: |\n  a\n  b\n')
    expect(goYamlMarshal({k: 'a\nb'})).toBe('k: |-\n  a\n  b\n')
    expect(goYamlMarshal({k: '\nindented\n'})).toBe('k: |2\n\n  indented\n')
    // A line ending in a space cannot be a block scalar.
    expect(goYamlMarshal({k: 'a \nb'})).toBe('k: "a \\nb"\n')
  })

  it('folds long plain strings at a space after column 80, continuing two columns in', () => {
    const words = Array.from({length: 30}, () => 'word').join(' ')
    const out = goYamlMarshal({description: words})
    const [first, second] = out.split('\n')
    // The check runs at each space: after 14 words the line is 82 columns (> 80), so it breaks there.
    expect(first).toBe('description: ' + Array.from({length: 14}, () => 'word').join(' '))
    expect(first).toHaveLength(82)
    expect(second).toBe('  ' + Array.from({length: 16}, () => 'word').join(' '))
    expect(goYamlMarshal({k: `'${words}`}).split('\n')[1]).toMatch(/^ {2}word/) // single-quoted folds alike
  })

  it('writes a sequence in a sequence on the dash line, two columns in (as libyaml/yaml.v2 indent it)', () => {
    expect(goYamlMarshal({k: [[1, 2], ['a'], []]})).toBe('k:\n- - 1\n  - 2\n- - a\n- []\n')
  })

  it("writes non-integers as Go's strconv.FormatFloat(f, 'g', -1, 64)", () => {
    expect(goYamlMarshal({a: 0.5, b: 1.5e-7, c: 1234567.5, d: 12.5, e: Infinity, f: -Infinity, g: Number.NaN})).toBe('a: 0.5\nb: 1.5e-07\nc: 1.2345675e+06\nd: 12.5\ne: .inf\nf: -.inf\ng: .nan\n')
  })

  it('never folds long strings without spaces (tokens, certificates)', () => {
    const long = 'x'.repeat(300)
    expect(goYamlMarshal({token: long})).toBe(`token: ${long}\n`)
  })

  it('quotes keys like values and sorts non-letters first', () => {
    expect(goYamlMarshal({b: '1', a: '2', n: 'x', '10': 'x', '9': 'x'})).toBe('"9": x\n"10": x\na: "2"\nb: "1"\n"n": x\n')
  })
})

describe('validateRemoteSecretOptions', () => {
  it('applies istioctl defaults', () => {
    expect(validateRemoteSecretOptions({})).toEqual({type: 'remote', authType: 'bearer-token', serviceAccount: 'istio-reader-service-account'})
    expect(validateRemoteSecretOptions({type: 'config', name: 'primary'})).toEqual({name: 'primary', type: 'config', authType: 'bearer-token', serviceAccount: 'istiod'})
    expect(validateRemoteSecretOptions({serviceAccount: 'reader', secretName: 'reader-token', server: 'https://10.0.0.1:6443', tlsServerName: 'kubernetes.default.svc'})).toMatchObject({
      serviceAccount: 'reader',
      secretName: 'reader-token',
      server: 'https://10.0.0.1:6443',
      tlsServerName: 'kubernetes.default.svc',
    })
  })

  it.each<[string, RemoteSecretFlags, string]>([
    [
      'bad --name (TestRemoteSecretOptions)',
      {name: '?-invalid-name'},
      `--name "?-invalid-name": must be a DNS-1123 label: lower case letters, digits and '-', starting and ending with a letter or digit (e.g. 'my-name')`,
    ],
    ['upper-case --name', {name: 'Cluster1'}, `--name "Cluster1": must be a DNS-1123 label: lower case letters, digits and '-', starting and ending with a letter or digit (e.g. 'my-name')`],
    ['unknown --type', {type: 'primary'}, '--type "primary": must be one of remote, config (remote: a secret for a remote cluster; config: istio-kubeconfig for an external control plane)'],
    ['unknown --auth-type', {authType: 'token'}, '--auth-type "token": must be one of bearer-token, plugin'],
    ['plugin without a name', {authType: 'plugin'}, '--auth-plugin-name: required with --auth-type=plugin (e.g. --auth-plugin-name oidc)'],
    ['plugin name without plugin', {authPluginName: 'oidc'}, '--auth-plugin-name "oidc": only applies with --auth-type=plugin'],
    ['plugin config without plugin', {authPluginConfig: ['k=v']}, '--auth-plugin-config: only applies with --auth-type=plugin'],
    ['a --server that is not an address', {server: 'https//nope here'}, `--server "https//nope here": must be the API server's URL, reachable from the other cluster: https://HOST[:PORT]`],
    ['a --server that is a bare word (issue 27)', {server: 'notaurl'}, `--server "notaurl": must be the API server's URL, reachable from the other cluster: https://HOST[:PORT]`],
    ['a --server that is a bare host:port', {server: '10.0.0.1:6443'}, `--server "10.0.0.1:6443": must be the API server's URL, reachable from the other cluster: https://HOST[:PORT]`],
    ['a --server without a host', {server: 'https://'}, `--server "https://": must be the API server's URL, reachable from the other cluster: https://HOST[:PORT]`],
    ['a --server with another scheme', {server: 'ftp://api:6443'}, `--server "ftp://api:6443": must be the API server's URL, reachable from the other cluster: https://HOST[:PORT]`],
    ['a bad --tls-server-name', {tlsServerName: 'not a host'}, `--tls-server-name "not a host": must be the host name the API server's certificate is issued for (e.g. kubernetes.default.svc)`],
    [
      'a bad --secret-name',
      {secretName: 'Token_1'},
      `--secret-name "Token_1": must be a DNS-1123 subdomain: lower case letters, digits, '-' and '.', starting and ending with a letter or digit (e.g. 'example.com'); it names an existing ServiceAccount token Secret`,
    ],
  ])('%s', (_, flags, message) => {
    const err = usageError(() => validateRemoteSecretOptions(flags))
    expect(err.message).toBe(message)
    expect(err.message).not.toContain('\n')
  })

  it('reports several bad flags at once, the first as the message', () => {
    const err = usageError(() => validateRemoteSecretOptions({name: 'A', type: 'x', authType: 'y'}))
    expect(err).toBeInstanceOf(UsageErrors)
    expect((err as UsageErrors).problems).toHaveLength(3)
    expect(err.message).toMatch(/^--name "A": /)
    // Each problem is printed as its own Error: line (toReport's problems).
    expect((err as UsageErrors).problems[1]).toMatch(/^--type "x": /)
    expect((err as UsageErrors).problems[2]).toMatch(/^--auth-type "y": /)
    expect(toReport(err).problems).toEqual((err as UsageErrors).problems.slice(1))
  })

  it('hints that --name may be left out', () => {
    expect(usageError(() => validateRemoteSecretOptions({name: 'A'})).hints).toEqual(['leave --name out to use the UID of the kube-system Namespace, as istioctl does'])
  })
})

describe('parseAuthPluginConfig (pflag stringToString)', () => {
  it.each<[string[], Record<string, string>]>([
    [['k1=v1'], {k1: 'v1'}],
    [['k1=v1,k2=v2'], {k1: 'v1', k2: 'v2'}],
    [['k1=v1', 'k2=v2'], {k1: 'v1', k2: 'v2'}],
    [['scopes=openid,groups'], {scopes: 'openid,groups'}], // one '=': commas stay in the value
    [['"scopes=a,b",k2=v2'], {scopes: 'a,b', k2: 'v2'}], // several: CSV, quoted pair keeps its comma
    [['"k=v"'], {k: 'v'}], // surrounding quotes trimmed
    [['url=https://x/?a=b'], {url: 'https://x/?a=b'}],
    [['k='], {k: ''}],
    [['k=1', 'k=2'], {k: '2'}], // later wins
  ])('%j', (entries, want) => {
    expect(parseAuthPluginConfig(entries)).toEqual(want)
  })

  it.each<[string[], string]>([
    [['client-secret'], '--auth-plugin-config: each entry must be formatted as key=value (e.g. --auth-plugin-config client-id=my-client)'],
    [['k=v', 'fake-token-abc123'], '--auth-plugin-config: each entry must be formatted as key=value (entry 2) (e.g. --auth-plugin-config client-id=my-client)'],
    [['=fake-token-abc123'], "--auth-plugin-config: a key before '=' is empty"],
    [['a=1,fake-token-abc123,b=2'], '--auth-plugin-config: each pair must be formatted as key=value'],
    [['a=1,b="x=y"'], `--auth-plugin-config: bare " in an unquoted field; quote a pair whose value has a comma: '"scopes=a,b",k2=v2'`],
  ])('rejects %j without echoing values', (entries, message) => {
    const err = usageError(() => parseAuthPluginConfig(entries))
    expect(err.message).toBe(message)
    expect(err.message).not.toContain(TOKEN)
  })

  it('is reached through validateRemoteSecretOptions', () => {
    const err = usageError(() => validateRemoteSecretOptions({authType: 'plugin', authPluginName: 'oidc', authPluginConfig: ['id-token']}))
    expect(err.message).toMatch(/^--auth-plugin-config: each entry must be formatted as key=value/)
  })
})

describe('warnings', () => {
  it.each(['https://127.0.0.1:6443', 'https://localhost:6443', 'https://127.0.1.1:6443', 'https://[::1]:6443', 'https://api.localhost', '127.0.0.1:6443'])('%s is a loopback server', (server) => {
    expect(isLoopbackServer(server)).toBe(true)
  })

  it.each(['https://172.18.0.2:6443', 'https://api.example.com', '10.0.0.1:6443', 'https://[fd00::1]:6443'])('%s is not', (server) => {
    expect(isLoopbackServer(server)).toBe(false)
  })

  it('hints at --server when the kubeconfig points at loopback (istioctl warns too)', () => {
    expect(remoteSecretWarnings({server: 'https://127.0.0.1:43210', serverSource: 'kubeconfig', authType: 'bearer-token'})).toEqual([
      "the API server in the kubeconfig is https://127.0.0.1:43210, which istiod in another cluster cannot reach; pass --server with an address reachable from there (with kind or k3d, the API server container's IP, e.g. --server https://172.18.0.2:6443)",
    ])
    expect(remoteSecretWarnings({server: 'https://localhost:6443', serverSource: 'flag', authType: 'bearer-token'})).toEqual([
      '--server https://localhost:6443 is a loopback address, which istiod in another cluster cannot reach; use an address reachable from there',
    ])
  })

  it('explains that istiod rejects auth providers other than oidc by default', () => {
    expect(remoteSecretWarnings({server: 'https://10.0.0.1', serverSource: 'kubeconfig', authType: 'plugin', authPluginName: 'gcp'})).toEqual([
      'istiod rejects auth provider "gcp" by default ("auth provider gcp is not allowed"): only "oidc" is accepted unless PILOT_INSECURE_MULTICLUSTER_KUBECONFIG_OPTIONS on the istiod that reads this secret lists "gcp"; or use --auth-type=bearer-token',
    ])
    expect(remoteSecretWarnings({server: 'https://10.0.0.1', serverSource: 'kubeconfig', authType: 'plugin', authPluginName: 'oidc'})).toEqual([])
    expect(remoteSecretWarnings({server: 'https://10.0.0.1', serverSource: 'flag', authType: 'bearer-token'})).toEqual([])
  })
})

describe('ServiceAccount token Secret helpers', () => {
  it('builds the token Secret istioctl creates on Kubernetes ≥ 1.24', () => {
    expect(tokenSecretManifest('istio-reader-service-account', 'istio-system')).toEqual({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {
        name: 'istio-reader-service-account-istio-remote-secret-token',
        namespace: 'istio-system',
        annotations: {'kubernetes.io/service-account.name': 'istio-reader-service-account'},
      },
      type: 'kubernetes.io/service-account-token',
    })
  })

  it('matches only token Secrets annotated with the ServiceAccount', () => {
    const s = (type: string, sa?: string) => ({type, metadata: {annotations: (sa ? {'kubernetes.io/service-account.name': sa} : {}) as Record<string, string>}})
    expect(isServiceAccountTokenSecret(s('kubernetes.io/service-account-token', 'reader'), 'reader')).toBe(true)
    expect(isServiceAccountTokenSecret(s('kubernetes.io/service-account-token', 'other'), 'reader')).toBe(false)
    expect(isServiceAccountTokenSecret(s('Opaque', 'reader'), 'reader')).toBe(false)
    expect(isServiceAccountTokenSecret(s('kubernetes.io/service-account-token'), 'reader')).toBe(false)
  })
})

describe("istiod's /debug/clusterz", () => {
  it('reads cluster.DebugInfo by JSON tag or Go field name, and only the entries that are objects', () => {
    const body = JSON.stringify([{id: 'west', secretName: 'istio-system/istio-remote-secret-west', syncStatus: 'synced'}, {ID: 'east', SyncStatus: 'timeout'}, 'junk', null, [1]])
    expect(parseClusterz(body)).toEqual([
      {id: 'west', secretName: 'istio-system/istio-remote-secret-west', syncStatus: 'synced'},
      {id: 'east', secretName: undefined, syncStatus: 'timeout'},
    ])
  })

  it('refuses an answer that is not JSON, or not a list', () => {
    expect(() => parseClusterz('<html>')).toThrow('istiod answered /debug/clusterz with something that is not JSON')
    expect(() => parseClusterz('{}')).toThrow('istiod answered /debug/clusterz with something that is not a list')
  })

  it('gives each istiod, by name, its view of one cluster: the entry of that Secret, else not-loaded or the error', () => {
    const views = {
      'istiod-b': [
        {id: 'west', secretName: 'istio-system/other-secret', syncStatus: 'syncing'},
        {id: 'west', secretName: 'istio-system/istio-remote-secret-west', syncStatus: 'synced'},
      ],
      'istiod-a': [{id: 'east', syncStatus: 'synced'}],
      'istiod-c': new MeshvmError('port-forward refused'),
    }
    expect(viewsFor(views, 'west', 'istio-remote-secret-west')).toEqual([
      {istiod: 'istiod-a', syncStatus: 'not-loaded'},
      {istiod: 'istiod-b', syncStatus: 'synced'},
      {istiod: 'istiod-c', error: 'port-forward refused'},
    ])
  })
})

describe('applyManifest', () => {
  it('refuses a kind it has no resource for with a meshvm error, before any request', async () => {
    const client = new Proxy({}, {get: () => expect.unreachable('no request may be sent')}) as unknown as KubeClient
    const obj = {apiVersion: 'example.com/v1', kind: 'Widget', metadata: {name: 'w'}}
    const err = await applyManifest(client, obj as unknown as Parameters<typeof applyManifest>[1]).catch((e: unknown) => e)
    expect(err).toBeInstanceOf(MeshvmError)
    expect(err).toMatchObject({message: 'meshvm cannot apply Widget', exit: ExitCode.BUG, code: 'UnsupportedKind'})
  })
})
