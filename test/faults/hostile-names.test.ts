/**
 * Hostile names against `meshvm bundle`: values with a newline, `$( )`, backticks, quotes, a
 * semicolon or a look-alike letter, from a file (-f) and from the API server, never reach install.sh
 * or cluster.env (which run as root on the VM): the run stops with one line naming the field, before
 * any TokenRequest, and writes nothing. (test/lib/bundle/quoting.test.ts proves the second wall: the
 * generator's quoting, run by a shell.)
 */
import {existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, afterEach, beforeEach, describe, expect, it} from 'vitest'
import {STACK_TRACE} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {logFault} from './hostile.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-hostile-names-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))
let n = 0
const freshDir = () => join(work, `run${++n}`)

const HOSTILE: Record<string, string> = {
  newline: 'web\ntouch pwned',
  'command substitution': 'web$(touch pwned)',
  backticks: 'web`touch pwned`',
  quotes: `web'"touch pwned"'`,
  semicolon: 'web;touch pwned',
  // A Cyrillic "е" (U+0435) in place of the Latin "e".
  'unicode look-alike': 'w\u0435b',
}

const WG = 'networking.istio.io/workloadgroups'
let cluster: TestCluster
beforeEach(async () => {
  cluster = await startCluster()
  cluster.mesh.watchNamespace('apps')
  cluster.store.create('/namespaces', 'Namespace', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: 'apps'}})
})
afterEach(() => cluster?.stop())

const tokenRequests = () => cluster.requests.filter((r) => r.method === 'POST' && r.path.endsWith('/token'))

function expectRefused(res: {code: number; stderr: string}, code: number, firstLine: string, out: string): void {
  expect(res.stderr.split('\n')[0]).toBe(firstLine)
  expect(res.code).toBe(code)
  expect(res.stderr).not.toMatch(STACK_TRACE)
  expect(tokenRequests()).toEqual([])
  expect(existsSync(out)).toBe(false)
  expect(readdirSync(work).filter((f) => f.includes('pwned'))).toEqual([])
}

describe('hostile names from a file (bundle -f): a usage error before any request', () => {
  for (const [kind, value] of Object.entries(HOSTILE)) {
    // (Label keys and values of a file are checked as it is read, by the same rules.)
    it(`${kind}: in the name, service account and network`, async () => {
      logFault('shell injection', `hostile WorkloadGroup values from a file (${kind})`, 'bundle')
      const file = join(work, `wg-${++n}.yaml`)
      // JSON is YAML: the value reaches meshvm exactly as written.
      writeFileSync(
        file,
        JSON.stringify({
          apiVersion: 'networking.istio.io/v1',
          kind: 'WorkloadGroup',
          metadata: {name: value, namespace: 'apps'},
          spec: {template: {serviceAccount: value, network: value}},
        }),
      )
      const out = freshDir()
      const res = await runCommand(['bundle', '-f', file, '-d', out, '--archive'], {env: cluster.env, cwd: work})
      expectRefused(
        res,
        2,
        `Error: WorkloadGroup metadata.name ${JSON.stringify(value)}: must be a DNS-1123 subdomain: lower case letters, digits, '-' and '.', starting and ending with a letter or digit (e.g. 'example.com')`,
        out,
      )
      // Every problem of the input at once, one Error: line each (the usage-error style of every command).
      const lines = res.stderr.split('\n')
      expect(lines[1]).toMatch(/^Error: WorkloadGroup spec\.template\.serviceAccount /)
      expect(lines[2]).toMatch(/^Error: WorkloadGroup spec\.template\.network /)
      // Nothing at all was asked of the cluster: the file is checked before the kubeconfig is read.
      expect(cluster.requests).toEqual([])
    })
  }

  it('--archive with a name holding ../ is a one-line usage error, before any token', async () => {
    logFault('files', '--archive name with ../', 'bundle')
    const file = join(work, 'wg-dotdot.yaml')
    writeFileSync(file, JSON.stringify({apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name: '../../escape', namespace: 'apps'}, spec: {}}))
    const out = freshDir()
    const res = await runCommand(['bundle', '-f', file, '-d', out, '--archive'], {env: cluster.env, cwd: work})
    expectRefused(
      res,
      2,
      `Error: WorkloadGroup metadata.name "../../escape": must be a DNS-1123 subdomain: lower case letters, digits, '-' and '.', starting and ending with a letter or digit (e.g. 'example.com')`,
      out,
    )
    expect(res.stderr.split('\n')).toHaveLength(2)
    // The same name as the NAME argument is refused before the WorkloadGroup is read.
    const byName = await runCommand(['bundle', '../../escape', '-n', 'apps', '-d', out, '--archive'], {env: cluster.env, cwd: work})
    expectRefused(
      byName,
      2,
      `Error: WorkloadGroup name "../../escape": must be a DNS-1123 subdomain: lower case letters, digits, '-' and '.', starting and ending with a letter or digit (e.g. 'example.com')`,
      out,
    )
    expect(cluster.requests.filter((r) => r.path.includes('workloadgroups'))).toEqual([])
  })
})

describe('hostile values from the API server: exit 1, no TokenRequest, nothing written', () => {
  const seedGroup = (template: Record<string, unknown>, labels: Record<string, string> = {app: 'web'}) => {
    cluster.store.create('/serviceaccounts', 'ServiceAccount', {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: 'web-vm', namespace: 'apps'}})
    // Straight into the store, as a compromised or buggy API server would serve it (no validation).
    cluster.store.create(WG, 'WorkloadGroup', {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name: 'web', namespace: 'apps'}, spec: {metadata: {labels}, template}})
  }
  const bundle = (out: string) => runCommand(['bundle', 'web', '-n', 'apps', '-d', out], {env: cluster.env, cwd: work})
  const tail = ' (read from the cluster); no token was issued and nothing was written'

  for (const [kind, value] of Object.entries(HOSTILE)) {
    it(`${kind} in the WorkloadGroup's service account, network and labels`, async () => {
      logFault('shell injection', `hostile WorkloadGroup values from the server (${kind})`, 'bundle')
      seedGroup({serviceAccount: value, network: value}, {app: value})
      const out = freshDir()
      const res = await bundle(out)
      expectRefused(
        res,
        1,
        `Error: WorkloadGroup spec.template.serviceAccount ${JSON.stringify(value)}: must be a DNS-1123 subdomain: lower case letters, digits, '-' and '.', starting and ending with a letter or digit (e.g. 'example.com')${tail}`,
        out,
      )
      expect(res.stderr).toContain('2 more problem(s): WorkloadGroup spec.template.network')
    })
  }

  it('a cluster ID, a proxyMetadata key, a trust domain and a gateway host name from the cluster', async () => {
    logFault('shell injection', 'hostile mesh values from the server (cluster ID, mesh config, gateway)', 'bundle')
    seedGroup({serviceAccount: 'web-vm'})
    const injector = cluster.store.get('/configmaps', 'istio-system', 'istio-sidecar-injector')!
    cluster.store.update('/configmaps', {...injector, data: {...(injector.data as Record<string, string>), values: JSON.stringify({global: {multiCluster: {clusterName: 'c1\n$(touch pwned)'}}})}})
    let out = freshDir()
    expectRefused(
      await bundle(out),
      1,
      `Error: cluster ID "c1\\n$(touch pwned)": must be a label value: empty or consist of letters, digits, '-', '_' or '.', and start and end with a letter or digit${tail}`,
      out,
    )

    cluster.store.update('/configmaps', {...cluster.store.get('/configmaps', 'istio-system', 'istio-sidecar-injector')!, data: injector.data})
    const mesh = cluster.store.get('/configmaps', 'istio-system', 'istio')!
    cluster.store.update('/configmaps', {...mesh, data: {mesh: 'trustDomain: "cluster.local\\ntouch pwned"\ndefaultConfig:\n  proxyMetadata:\n    "X;touch pwned": "1"\n'}})
    out = freshDir()
    const res = await bundle(out)
    expectRefused(res, 1, `Error: mesh config trustDomain "cluster.local\\ntouch pwned": must not contain control characters or line breaks${tail}`, out)
    expect(res.stderr).toContain(`mesh config defaultConfig proxyMetadata key "X;touch pwned": must be an environment variable name`)

    cluster.store.update('/configmaps', {...cluster.store.get('/configmaps', 'istio-system', 'istio')!, data: mesh.data})
    const svc = cluster.store.get('/services', 'istio-system', 'istio-eastwestgateway')!
    cluster.store.update('/services', {...svc, status: {loadBalancer: {ingress: [{hostname: "gw.example.com' /etc/hosts; touch pwned; echo '"}]}}})
    out = freshDir()
    expectRefused(
      await bundle(out),
      1,
      `Error: east-west gateway host name "gw.example.com' /etc/hosts; touch pwned; echo '": must be a DNS host name (a DNS-1123 subdomain: lower case letters, digits, '-' and '.', starting and ending with a letter or digit (e.g. 'example.com'))${tail}`,
      out,
    )

    // The same cluster with honest values: the bundle is written (the checks refuse only what is wrong).
    cluster.store.update('/services', {...cluster.store.get('/services', 'istio-system', 'istio-eastwestgateway')!, status: svc.status})
    out = freshDir()
    const ok = await bundle(out)
    expect(ok.stderr).not.toMatch(/Error/)
    expect(ok.code).toBe(0)
    expect(tokenRequests()).toHaveLength(1)
  })
})

describe('a hostile root certificate from the API server: exit 1, no TokenRequest, nothing written', () => {
  const seed = () => {
    cluster.store.create('/serviceaccounts', 'ServiceAccount', {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: 'web-vm', namespace: 'apps'}})
    cluster.store.create(WG, 'WorkloadGroup', {
      apiVersion: 'networking.istio.io/v1',
      kind: 'WorkloadGroup',
      metadata: {name: 'web', namespace: 'apps'},
      spec: {metadata: {labels: {app: 'web'}}, template: {serviceAccount: 'web-vm'}},
    })
  }
  const setRootCert = (pem: string) => {
    const cm = cluster.store.get('/configmaps', 'apps', 'istio-ca-root-cert')!
    cluster.store.update('/configmaps', {...cm, data: {'root-cert.pem': pem}})
  }
  const bundle = (out: string) => runCommand(['bundle', 'web', '-n', 'apps', '-d', out], {env: cluster.env, cwd: work})
  const tail = ' (read from the cluster); no token was issued and nothing was written'
  const root = () => cluster.ca.rootPem
  const last = () => root().trimEnd().split('\n').length

  const cases: Array<[string, () => string, () => string]> = [
    ['an extra line after the certificate', () => `${root()}touch pwned\n`, () => `line ${last() + 1} is not part of a PEM CERTIFICATE block (only certificates may be there)`],
    ['a here-document end marker', () => `${root()}MESHVM_EOF\n`, () => `line ${last() + 1} is not part of a PEM CERTIFICATE block (only certificates may be there)`],
    ['shell text inside the block', () => root().replace('\n-----END', '\n$(touch pwned)\n-----END'), () => `line ${last()} is not base64 inside a PEM CERTIFICATE block`],
    ['shell text alone', () => '$(touch pwned)', () => 'line 1 is not part of a PEM CERTIFICATE block (only certificates may be there)'],
    ['a block that is no certificate', () => '-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n', () => 'the PEM CERTIFICATE block ending on line 3 is not an X.509 certificate'],
    ['a private key', () => '-----BEGIN PRIVATE KEY-----\nAAAA\n-----END PRIVATE KEY-----\n', () => 'line 1 is not part of a PEM CERTIFICATE block (only certificates may be there)'],
    ['a carriage return inside a line', () => root().replace(/\r?\n/, '\r'), () => 'line 1 is not part of a PEM CERTIFICATE block (only certificates may be there)'],
  ]
  for (const [kind, pem, problem] of cases) {
    it(kind, async () => {
      logFault('shell injection', `hostile root certificate from the server (${kind})`, 'bundle')
      seed()
      setRootCert(pem())
      const out = freshDir()
      expectRefused(await bundle(out), 1, `Error: ConfigMap apps/istio-ca-root-cert root-cert.pem: ${problem()}${tail}`, out)
    })
  }

  it('two certificates without a final newline: written as they are, with one', async () => {
    seed()
    const two = `${root()}\n${root().trimEnd()}`
    setRootCert(two)
    const out = freshDir()
    const res = await bundle(out)
    expect(res.stderr).not.toMatch(/Error/)
    expect(res.code).toBe(0)
    expect(readFileSync(join(out, 'root-cert.pem'), 'utf8')).toBe(`${two}\n`)
  })
})
