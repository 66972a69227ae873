/**
 * The fast kubeconfig YAML reader answers either exactly what the `yaml` library (with kubectl's
 * YAML 1.1 reading) answers, or "not mine" (undefined): on kubeconfigs as kubectl writes them, on
 * the layouts other tools write, on tricky scalars, and on many mutated variants.
 */
import {execFileSync} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import fc from 'fast-check'
import {afterAll, describe, expect, it} from 'vitest'
import {parse} from 'yaml'
import {parseKubeconfigYaml} from '../../../src/lib/kube/kubeconfig-yaml.js'
import {YAML_OPTIONS} from '../../../src/lib/kube/config.js'

/** Every plain map key YAML 1.1 reads as a boolean or null (the `yaml` library's 1.1 schema), and number-like ones. */
const YAML11_KEYS = [
  ...['y', 'Y', 'yes', 'Yes', 'YES', 'n', 'N', 'no', 'No', 'NO', 'on', 'On', 'ON', 'off', 'Off', 'OFF'],
  ...['true', 'True', 'TRUE', 'false', 'False', 'FALSE', 'null', 'Null', 'NULL', '~'],
  ...['_', '_1', 'e5', 'E1'],
]

const work = mkdtempSync(join(tmpdir(), 'meshvm-kubeconfig-yaml-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))

/** The options a VM bundle reads the mesh config with (src/lib/bundle/mesh-yaml.ts): timestamps, unique keys. */
const MESH_OPTIONS = {version: '1.1', logLevel: 'error'} as const

/** The reference: what the full parser gives, or the fact that it refuses the text. */
function reference(text: string, options: typeof YAML_OPTIONS | typeof MESH_OPTIONS): {value?: unknown; error?: true} {
  try {
    return {value: parse(text, options)}
  } catch {
    return {error: true}
  }
}

function agrees(text: string): boolean {
  const fast = parseKubeconfigYaml(text)
  if (fast === undefined) return false
  for (const options of [YAML_OPTIONS, MESH_OPTIONS]) {
    const ref = reference(text, options)
    expect(ref.error, `the fast reader accepted text the full parser refuses:\n${text}`).toBeUndefined()
    expect(fast, text).toEqual(ref.value)
  }
  return true
}

const KUBECTL_STYLE = `apiVersion: v1
clusters:
- cluster:
    certificate-authority-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0tCk1JSUM=
    server: https://127.0.0.1:6443
    tls-server-name: kubernetes.default.svc
  name: kind-kind
- cluster:
    insecure-skip-tls-verify: true
    proxy-url: http://proxy.example:3128
    server: https://[fd00::1]:6443
  name: arn:aws:eks:eu-west-1:123456789012:cluster/prod
contexts:
- context:
    cluster: kind-kind
    namespace: apps
    user: kind-kind
  name: kind-kind
current-context: kind-kind
kind: Config
preferences: {}
users:
- name: kind-kind
  user:
    client-certificate-data: LS0tLS1CRUdJTiBDRVJUSUZJQ0FURS0tLS0t
    client-key-data: LS0tLS1CRUdJTiBSU0EgUFJJVkFURSBLRVktLS0tLQ==
- name: eks
  user:
    exec:
      apiVersion: client.authentication.k8s.io/v1beta1
      args:
      - --region
      - eu-west-1
      - eks
      - get-token
      command: aws
      env:
      - name: AWS_PROFILE
        value: prod
      interactiveMode: IfAvailable
      provideClusterInfo: false
`

describe('parseKubeconfigYaml', () => {
  it('reads kubeconfigs as kubectl writes them (kubectl config view --raw)', () => {
    const path = join(work, 'config')
    writeFileSync(path, KUBECTL_STYLE.replace('preferences: {}\n', ''))
    const written = execFileSync('kubectl', ['config', 'view', '--raw'], {env: {PATH: process.env.PATH, HOME: work, KUBECONFIG: path}, encoding: 'utf8'})
    expect(agrees(written)).toBe(true)
    // Its "preferences: {}" is the one flow collection read here (empty ones only).
    expect(written).toContain('preferences: {}')
    expect(agrees(KUBECTL_STYLE)).toBe(true)
    expect(agrees('preferences: [] # none\n')).toBe(true)
    expect(parseKubeconfigYaml('preferences: {colors: true}\n')).toBeUndefined()
  })

  it("reads the other common layouts: indented sequences, comments, quotes, meshvm's own output", () => {
    for (const text of [
      'apiVersion: v1\nkind: Config\nclusters:\n  - name: c\n    cluster:\n      server: "https://c.example:6443"\n',
      "# written by hand\ncurrent-context: c # the one\ncontexts:\n- name: c\n  context:\n    cluster: c\n    user: 'it''s me'\n",
      'users:\n- name: u\n  user:\n    token: admin-484e7cd5c531e4ebd2848e85efe31b82\n',
      'users:\n- name: u\n  user:\n    token: eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJhIn0.c2ln\n    username:\n',
      'a:\n  -\n    b: c\n',
      'users: null\ncontexts: ~\ncurrent-context: ""\n',
      '',
      '# only a comment\n',
      // The mesh config of ConfigMap istio (a VM bundle reads it through the same reader).
      'defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\n  proxyMetadata:\n    ISTIO_META_DNS_CAPTURE: "true"\ndefaultProviders:\n  metrics:\n  - prometheus\nenablePrometheusMerge: true\nrootNamespace: istio-system\ntrustDomain: cluster.local\n',
    ])
      expect(agrees(text), text).toBe(true)
  })

  it.each([
    ['flow collections', 'clusters: [{name: c}]\n'],
    ['YAML 1.1 booleans other than true/false', 'insecure-skip-tls-verify: yes\n'],
    ['dates', 'expiry: 2024-01-01T00:00:00Z\n'],
    ['escapes', 'token: "a\\tb"\n'],
    ['block scalars', 'token: |\n  abc\n'],
    ['multi-line plain scalars', 'token: abc\n  def\n'],
    ['anchors and aliases', 'a: &x b\nc: *x\n'],
    ['tags', 'a: !!str 1\n'],
    ['document markers', '---\na: b\n'],
    ['duplicate keys', 'a: b\na: c\n'],
    ['tabs', 'a:\tb\n'],
    ['CRLF', 'a: b\r\n'],
    ['": " in a plain scalar', 'a: b: c\n'],
    ['a scalar document', 'hello\n'],
    ['__proto__', '__proto__: x\n'],
  ])('leaves %s to the full parser', (_name, text) => {
    expect(parseKubeconfigYaml(text)).toBeUndefined()
  })

  it('reads plain scalars that start with a digit but are no YAML 1.1 number or date (hex tokens, addresses)', () => {
    for (const text of [
      'users:\n- name: u\n  user:\n    token: 484e7cd5c531e4ebd2848e85efe31b82\n',
      'token: 0a1b2c3d4e5f\n',
      'token: 123abc\n',
      'server: 10.0.0.1:6443\n',
      'name: 1password-cluster\n',
      'token: 2024-01-01x\n',
    ])
      expect(agrees(text), text).toBe(true)
  })

  it.each([
    ['an integer', '0123'],
    ['a signed integer', '-12'],
    ['an integer with underscores', '1_000'],
    ['binary', '0b1010'],
    ['hex', '0x1F'],
    ['a float', '1.5'],
    ['a float without digits before the point', '.5'],
    ['an exponent', '1e5'],
    ['an exponent without digits before it', 'e5'],
    ['a base-60 number', '190:20:30'],
    ['a date', '2024-01-01'],
    ['a timestamp', '2024-01-01 10:00:00'],
    ['infinity', '-.inf'],
  ])('leaves %s to the full parser', (_name, value) => {
    expect(parseKubeconfigYaml(`token: ${value}\n`)).toBeUndefined()
  })

  it('agrees with the full parser on any plain scalar made of number, date and hex characters', () => {
    const chars = [...'0123456789abcdefABCDEFxXoObBeE_.:-+tTZ ', 'inf', 'nan', 'NaN', 'Inf']
    let accepted = 0
    fc.assert(
      fc.property(fc.array(fc.constantFrom(...chars), {minLength: 1, maxLength: 14}), fc.constantFrom('', '0', '1', '2024-', '-', '+', '.'), (parts, prefix) => {
        const text = `token: ${prefix}${parts.join('')}\n`
        if (agrees(text)) accepted++
      }),
      {numRuns: 20000, seed: 31},
    )
    // Most of them are strings the fast reader reads; every one it read agreed.
    expect(accepted).toBeGreaterThan(5000)
  })

  it.each(['NO', 'no', 'N', 'y', 'Y', 'yes', 'ON', 'off', 'True', 'FALSE', 'Null', 'NULL', 'null', 'true'])('leaves the map key %s (not a string in YAML 1.1) to the full parser', (key) => {
    expect(parseKubeconfigYaml(`proxyMetadata:\n  ${key}: "1"\n`)).toBeUndefined()
  })

  it('agrees with the full parser on map keys drawn from the YAML 1.1 booleans, nulls and numbers', () => {
    const keys = [...YAML11_KEYS, 'NAME', 'a', 'ISTIO_META_X', 'yes_no', 'On1', 'nULL', 'Nope', 'truee', 'e', 'x_1']
    let accepted = 0
    fc.assert(
      fc.property(fc.array(fc.tuple(fc.constantFrom(...keys), fc.constantFrom('"1"', 'x', 'true', 'null')), {minLength: 1, maxLength: 4}), fc.boolean(), (entries, nested) => {
        const body = entries.map(([k, v]) => `${nested ? '  ' : ''}${k}: ${v}\n`).join('')
        if (agrees(nested ? `proxyMetadata:\n${body}` : body)) accepted++
      }),
      {numRuns: 3000, seed: 7},
    )
    expect(accepted).toBeGreaterThan(100)
  })

  it('never disagrees with the full parser on mutated kubeconfigs', () => {
    // Deterministic pseudo-random mutations (no flakiness): replace, insert or delete a character.
    let seed = 42
    const random = (n: number) => {
      seed = (seed * 1103515245 + 12345) & 0x7fffffff
      return seed % n
    }
    const alphabet = [' ', ' ', '-', ':', '#', "'", '"', '\n', '  ', 'a', '0', 'y', '~', '{', '[', '&', '*', '!', '|', '.', '\\', 'true', 'no']
    const base = KUBECTL_STYLE
    let accepted = 0
    for (let n = 0; n < 4000; n++) {
      let text = base
      for (let k = 1 + random(3); k > 0; k--) {
        const at = random(text.length)
        const op = random(3)
        const piece = alphabet[random(alphabet.length)]!
        text = op === 0 ? text.slice(0, at) + piece + text.slice(at + 1) : op === 1 ? text.slice(0, at) + piece + text.slice(at) : text.slice(0, at) + text.slice(at + 1)
      }
      if (agrees(text)) accepted++
    }
    // Most mutations still read fast, and all of those agreed.
    expect(accepted).toBeGreaterThan(1000)
  })
})
