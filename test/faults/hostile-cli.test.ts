/**
 * Attacker-style cases through the built CLI: hostile -f files, flags that smuggle control
 * characters, durations past Node's timer limit, a credential plugin that never exits, kubeconfigs
 * with empty files and broken certificate paths, and a test cluster that redirects writes or puts
 * escape sequences and tokens in its messages. Each ends in one clean line, never exit 10.
 */
import {chmodSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {generateKeyPairSync} from 'node:crypto'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {runCli, STACK_TRACE} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {kubeconfigForUser, startCluster, type TestCluster} from '../helpers/cluster.js'
import {testPki} from '../cluster/pki.js'
import {logFault} from './hostile.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-hostile-cli-'))
let cluster: TestCluster
beforeAll(async () => {
  cluster = await startCluster()
})
afterAll(async () => {
  await cluster?.stop()
  rmSync(work, {recursive: true, force: true})
})

function file(name: string, text: string): string {
  const path = join(work, name)
  writeFileSync(path, text)
  return path
}

function expectOneLine(res: {code: number; stderr: string}, code: number, first: string | RegExp): void {
  expect(res.stderr).not.toMatch(STACK_TRACE)
  expect(res.code, res.stderr).toBe(code)
  const line = res.stderr.split('\n').find((l) => l.startsWith('Error: '))
  if (typeof first === 'string') expect(line).toBe(first)
  else expect(line).toMatch(first)
}

const WG = (metadata: string, specMetadata = '{labels: {app: web}}') =>
  `apiVersion: networking.istio.io/v1\nkind: WorkloadGroup\nmetadata: ${metadata}\nspec:\n  metadata: ${specMetadata}\n  template: {ports: {http: 8080}, serviceAccount: default}\n`

describe('crashes: hostile -f files are usage errors', () => {
  const cases: [string, string, string | RegExp][] = [
    ['!!binary', WG('{name: web, namespace: apps, labels: {a: !!binary aGVsbG8=}}'), /: metadata\.labels\.a is binary data \(a !!binary tag\); only plain strings/],
    ['!!set', WG('{name: web, namespace: apps, annotations: !!set {a, b}}'), /: metadata\.annotations is a set \(a !!set tag\); only plain strings/],
    ['!!timestamp', WG('{name: web, namespace: apps, annotations: {at: !!timestamp 2001-12-14}}'), /: metadata\.annotations\.at is a timestamp/],
    ['a label value that is a number', WG('{name: web, namespace: apps, labels: {tier: 3}}'), /: metadata\.labels "tier": value must be a string \(quote it: "3"\)$/],
    ['a bad label key', WG('{name: web, namespace: apps, labels: {"-bad": x}}'), /: metadata\.labels "-bad": key name must consist of/],
    ['a bad label value', WG('{name: web, namespace: apps}', '{labels: {app: "has space"}}'), /: spec\.metadata\.labels "app": value must be empty or consist of/],
    ['an annotation that is a mapping', WG('{name: web, namespace: apps, annotations: {a: {b: c}}}'), /: metadata\.annotations "a": value must be a string/],
  ]
  for (const [what, text, message] of cases) {
    it(`-f with ${what}`, async () => {
      logFault('crashes', `-f with ${what}`, 'onboard -f')
      const path = file(`${what.replace(/\W+/g, '-')}.yaml`, text)
      const res = await runCommand(['onboard', '-f', path, '-o', 'yaml'])
      expectOneLine(res, 2, message)
      expect(res.stdout).toBe('')
    })
  }

  it('-f with a 100,000-deep document (YAML flow and JSON), -o json and -o yaml', async () => {
    logFault('crashes', '100,000-deep -f document', 'onboard -f')
    const yaml = file('deep.yaml', 'a: ' + '['.repeat(100_000) + ']'.repeat(100_000) + '\n')
    const json = file('deep.json', '{"kind":"WorkloadGroup","metadata":{"name":"web","namespace":"apps"},"spec":' + '{"a":'.repeat(100_000) + '1' + '}'.repeat(100_000) + '}')
    for (const [path, format] of [
      [yaml, 'json'],
      [json, 'yaml'],
    ] as const) {
      const res = await runCommand(['onboard', '-f', path, '-o', format])
      expectOneLine(res, 2, /^Error: \S+deep\.(yaml|json)/)
    }
  })

  it('-f /dev/zero and a file past the documented 4 MiB limit', async () => {
    logFault('hangs and limits', '-f /dev/zero', 'onboard -f')
    expectOneLine(await runCommand(['onboard', '-f', '/dev/zero']), 2, 'Error: -f "/dev/zero": larger than 4 MiB; a WorkloadGroup manifest is a few KiB')
    const big = file('big.yaml', WG('{name: web, namespace: apps}') + '#' + 'x'.repeat(5 * 1024 * 1024) + '\n')
    expectOneLine(await runCommand(['onboard', '-f', big]), 2, `Error: -f ${JSON.stringify(big)}: larger than 4 MiB; a WorkloadGroup manifest is a few KiB`)
  })

  it('--probe-header rejects CR, LF and control characters', async () => {
    logFault('secrets and terminals', '--probe-header with CR/LF', 'onboard')
    for (const [header, shown] of [
      ['Host:a\r\nX-Evil: 1', 'Host:a\\r\\nX-Evil: 1'],
      ['Host:a\u001b[2J', 'Host:a\\u001b[2J'],
      ['X:\u0001', 'X:\\u0001'],
    ]) {
      const res = await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--probe-http', '8080/healthz', '--probe-header', header!])
      expectOneLine(res, 2, `Error: --probe-header "${shown}": header values must not contain CR, LF or other control characters`)
    }
  })
})

describe('hangs and limits: durations and credential plugins', () => {
  it("a --request-timeout beyond Node's timer limit is a usage error, not a timer that fires at once", async () => {
    logFault('hangs and limits', '--request-timeout past 24.8 days', 'war list')
    for (const value of ['9999999h', '600h', '0s', 'soon']) {
      const res = await runCommand(['war', 'list', '-A', '--request-timeout', value], {env: cluster.env})
      expect(res.stderr).not.toContain('TimeoutOverflowWarning')
      expectOneLine(res, 2, `Error: --request-timeout "${value}": expected a duration such as 10s, 1m or 500ms, at most 596h (24.8 days)`)
    }
    const longest = await runCommand(['war', 'list', '-A', '--request-timeout', '596h'], {env: cluster.env})
    expect(longest.stderr).not.toContain('TimeoutOverflowWarning')
    expect(longest.code, longest.stderr).toBe(0)
  })

  it.each([
    [['proxy-status', '--timeout'], false],
    [['proxy-status', '--watch', '--interval'], false],
    [['war', 'rollout', 'web', '-n', 'apps', '--timeout'], false],
    [['war', 'prune', '--grace-period'], true],
    [['war', 'reconcile', '--grace-period'], true],
    [['war', 'reconcile', '--timeout'], false],
    [['bundle', 'web', '-n', 'apps', '--timeout'], false],
    [['bundle', 'verify', '.', '--warn-within'], true],
    [['create-remote-secret', '--token-timeout'], true],
    [['remote-secret', 'status', '--timeout'], false],
    [['remote-secret', 'rotate', 'x', '--from', 'c', '--istiod-timeout'], false],
  ] as const)('every duration flag has the same bound: %s', async (words, zeroAllowed) => {
    // One typed flag for every duration: checked while parsing, before any request.
    const flag = words[words.length - 1]
    for (const value of ['600h', 'soon', '-1s']) {
      const res = await runCommand([...words, value], {env: cluster.env})
      expect(res.stderr).not.toContain('TimeoutOverflowWarning')
      expectOneLine(res, 2, `Error: ${flag} "${value}": expected a duration such as 10s, 1m or 500ms${zeroAllowed ? ' (0 allowed)' : ''}, at most 596h (24.8 days)`)
    }
  })

  it('a credential plugin that never exits is stopped after the bound; its prompt reaches the terminal', async () => {
    logFault('hangs and limits', 'exec plugin that never exits', 'war list')
    const plugin = file('hang.sh', '#!/bin/sh\necho "open https://login.example/device and enter ABCD-EFGH" >&2\nexec sleep 600\n')
    chmodSync(plugin, 0o700)
    const kubeconfig = file('hang.config', kubeconfigForUser(cluster, ['exec:', '  apiVersion: client.authentication.k8s.io/v1', `  command: ${plugin}`, '  interactiveMode: Never']))
    // A process: the plugin inherits meshvm's own stderr file descriptor.
    const res = await runCli(['war', 'list', '-A'], {env: {KUBECONFIG: kubeconfig, MESHVM_EXEC_TIMEOUT: '1s'}})
    expect(res.stderr.split('\n')[0]).toBe('open https://login.example/device and enter ABCD-EFGH')
    expectOneLine(res, 5, `Error: cannot get credentials for context "c": the credential plugin (exec: ${plugin}) did not finish within 1s and was stopped`)
  })
})

describe('kubectl compatibility: kubeconfig files', () => {
  it('an empty and a comment-only file in a KUBECONFIG list are accepted', async () => {
    logFault('kubectl compatibility', 'empty file in KUBECONFIG', 'war list')
    const empty = file('empty.config', '')
    const comments = file('comments.config', '# nothing here yet\n\n')
    const res = await runCommand(['war', 'list', '-A'], {env: {KUBECONFIG: [empty, comments, cluster.kubeconfigPath].join(':')}})
    expect(res.code, res.stderr).toBe(0)
  })

  it("a missing client certificate file, and a key that is not the certificate's, are named with what to fix", async () => {
    logFault('crashes', 'missing/mismatched certificate files', 'war list')
    const pki = testPki()
    const otherKey = generateKeyPairSync('rsa', {modulusLength: 2048}).privateKey.export({type: 'pkcs1', format: 'pem'}) as string
    const cert = file('client.crt', pki.certPem)
    const key = file('client.key', otherKey)
    const config = (userLines: string[]) => file(`cert-${userLines.length}-${Math.random()}.config`, kubeconfigForUser(cluster, userLines))
    const missing = await runCommand(['war', 'list', '-A'], {env: {KUBECONFIG: config([`client-certificate: ${join(work, 'nope.crt')}`, `client-key: ${key}`])}})
    expectOneLine(missing, 2, `Error: context "c": client-certificate ${join(work, 'nope.crt')}: file not found`)
    expect(missing.stderr).toMatch(/^Hint: fix the client-certificate path in the kubeconfig/m)
    const mismatched = await runCommand(['war', 'list', '-A'], {env: {KUBECONFIG: config([`client-certificate: ${cert}`, `client-key: ${key}`])}})
    expectOneLine(mismatched, 2, `Error: context "c": the client key (${key}) does not belong to the client certificate (${cert})`)
  })
})

describe('false success and terminals through the test cluster', () => {
  it('onboard --apply answered with a redirect is never "created"', async () => {
    logFault('false success', '307 on onboard --apply', 'onboard --apply')
    const remove = cluster.faults.add({method: 'PATCH', path: '/apis/networking.istio.io/v1/namespaces/apps/workloadgroups/web', status: 307})
    const res = await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--apply'], {env: {...cluster.env, MESHVM_RETRY_BASE_MS: '5'}})
    remove()
    expect(res.stdout + res.stderr).not.toMatch(/workloadgroup\.networking\.istio\.io\/web (created|configured)/)
    expect(res.code).not.toBe(0)
    expect(res.code).not.toBe(10)
    expect(res.stderr).toMatch(/with 307 \(a redirect\) instead of a result; nothing is known to have changed/)
  })

  it('escape sequences and tokens in a server message are escaped and removed from the error line', async () => {
    logFault('secrets and terminals', 'ESC and bearer token in Status message', 'war list')
    const remove = cluster.faults.add({
      method: 'GET',
      path: '/apis/runtime.onboarding.tetrate.io/v1alpha1/workloadautoregistrations',
      status: 500,
      message: '\u001b]0;pwned\u0007\u001b[2Jdenied for Bearer abcdefghijklmnop',
    })
    const res = await runCommand(['war', 'list', '-A'], {env: {...cluster.env, MESHVM_RETRY_BASE_MS: '5'}})
    remove()
    expect(res.stderr).not.toContain('\u001b')
    expect(res.stderr).not.toContain('abcdefghijklmnop')
    expectOneLine(res, 3, /: 500 \\e\]0;pwned\\x07\\e\[2Jdenied for Bearer \[redacted\]$/)
  })

  it('a rejected apply quoting a server message with escapes: the per-object report and the error are escaped', async () => {
    logFault('secrets and terminals', 'ESC in a 422 message on apply', 'onboard --apply')
    const remove = cluster.faults.add({
      method: 'PATCH',
      path: '/apis/networking.istio.io/v1/namespaces/apps/workloadgroups/web',
      status: 422,
      message: 'spec.x: \u001b[8mhidden\u001b[0m Invalid value',
    })
    const res = await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--apply'], {env: cluster.env})
    remove()
    expect(res.code).toBe(6)
    expect(res.stdout + res.stderr).not.toContain('\u001b')
    expect(res.stderr).toContain('spec.x: \\e[8mhidden\\e[0m Invalid value')
  })
})
