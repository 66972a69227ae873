/**
 * The credential kinds of a kubeconfig, end to end through the built CLI (whose Kubernetes client is
 * a trimmed bundle: this proves the trimming kept them): an exec credential plugin, a token file,
 * and an exec plugin that fails, whose output must not leak into the error.
 */
import {chmodSync, mkdtempSync, readFileSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {runCli, STACK_TRACE} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {kubeconfigForUser, startCluster, type TestCluster} from '../helpers/cluster.js'

let cluster: TestCluster
const work = mkdtempSync(join(tmpdir(), 'meshvm-auth-'))

function kubeconfigWithUser(name: string, userLines: string[]): string {
  const path = join(work, name)
  writeFileSync(path, kubeconfigForUser(cluster, userLines, 'apps'), {mode: 0o600})
  return path
}

function script(name: string, body: string): string {
  const path = join(work, name)
  writeFileSync(path, `#!/bin/sh\n${body}\n`)
  chmodSync(path, 0o700)
  return path
}

beforeAll(async () => {
  cluster = await startCluster()
})
afterAll(() => cluster?.stop())

describe('kubeconfig credentials', () => {
  it('an exec credential plugin (client.authentication.k8s.io/v1) supplies the token', async () => {
    const plugin = script('plugin.sh', `printf '%s' '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"${cluster.token}"}}'`)
    const kubeconfig = kubeconfigWithUser('exec', ['exec:', '  apiVersion: client.authentication.k8s.io/v1', `  command: ${plugin}`, '  interactiveMode: Never'])
    const res = await runCommand(['war', 'list', '-A', '-o', 'name'], {env: {KUBECONFIG: kubeconfig}})
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(res.code, res.stderr).toBe(0)
  })

  it('after a 401, concurrent requests share one new run of the exec plugin', async () => {
    // The first run hands out a token the server rejects (as after it expired); later runs a good one.
    const runs = join(work, 'runs')
    writeFileSync(runs, '')
    const credential = (token: string) => `'{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"${token}"}}'`
    const plugin = script(
      'expiring.sh',
      [`echo run >> ${runs}`, `if [ "$(wc -l < ${runs})" -eq 1 ]; then printf '%s' ${credential('expired-token-0123456789')}; else printf '%s' ${credential(cluster.token)}; fi`].join('\n'),
    )
    const kubeconfig = kubeconfigWithUser('expiring', ['exec:', '  apiVersion: client.authentication.k8s.io/v1', `  command: ${plugin}`, '  interactiveMode: Never'])
    // proxy-status sends its first requests (istiods, WorkloadEntries, WARs) at once: all get a 401.
    const res = await runCommand(['proxy-status', '--debug'], {env: {KUBECONFIG: kubeconfig}})
    expect(res.code, res.stderr).toBe(0)
    expect((res.stderr.match(/→ 401/g) ?? []).length).toBeGreaterThanOrEqual(2)
    expect(readFileSync(runs, 'utf8')).toBe('run\nrun\n')
  })

  it('a token file (tokenFile, which client-node ignores) is read', async () => {
    const tokenFile = join(work, 'token')
    writeFileSync(tokenFile, cluster.token, {mode: 0o600})
    const res = await runCommand(['war', 'list', '-A', '-o', 'name'], {env: {KUBECONFIG: kubeconfigWithUser('token-file', [`tokenFile: ${tokenFile}`])}})
    expect(res.code, res.stderr).toBe(0)
    // Relative to the kubeconfig's directory, as kubectl resolves it.
    const relative = await runCommand(['war', 'list', '-A', '-o', 'name'], {env: {KUBECONFIG: kubeconfigWithUser('token-file-relative', ['tokenFile: ./token'])}})
    expect(relative.code, relative.stderr).toBe(0)
    // token and tokenFile both set: the file wins, as in kubectl (client-go re-reads the file for every
    // request: it holds the rotated token); the inline token is used only while the file cannot be read.
    const both = await runCommand(['war', 'list', '-A', '-o', 'name'], {env: {KUBECONFIG: kubeconfigWithUser('token-both', ['token: not-the-token-0123456789', `tokenFile: ${tokenFile}`])}})
    expect(both.code, both.stderr).toBe(0)
    const staleFile = join(work, 'stale-token')
    writeFileSync(staleFile, 'not-the-token-0123456789', {mode: 0o600})
    const fileWins = await runCommand(['war', 'list', '-A'], {env: {KUBECONFIG: kubeconfigWithUser('token-both-stale', [`token: ${cluster.token}`, `tokenFile: ${staleFile}`])}})
    expect(fileWins.code).toBe(5)
    const unreadable = await runCommand(['war', 'list', '-A', '-o', 'name'], {
      env: {KUBECONFIG: kubeconfigWithUser('token-both-missing', [`token: ${cluster.token}`, `tokenFile: ${join(work, 'nope')}`])},
    })
    expect(unreadable.code, unreadable.stderr).toBe(0)
    const missing = await runCommand(['war', 'list', '-A'], {env: {KUBECONFIG: kubeconfigWithUser('token-missing', [`tokenFile: ${join(work, 'nope')}`])}})
    expect(missing.code).toBe(5)
    expect(missing.stderr).toBe(`Error: cannot read the token file ${join(work, 'nope')} of context "c": ENOENT\n`)
  })

  it('an auth-provider user (gcp, with a current access token): left to @kubernetes/client-node, loaded for it', async () => {
    const user = (token: string) => ['auth-provider:', '  name: gcp', '  config:', `    access-token: ${token}`, '    expiry: "2999-01-01T00:00:00Z"']
    const res = await runCommand(['war', 'list', '-A', '-o', 'name'], {env: {KUBECONFIG: kubeconfigWithUser('gcp', user(cluster.token))}})
    expect(res.code, res.stderr).toBe(0)
    const wrong = await runCommand(['war', 'list', '-A'], {env: {KUBECONFIG: kubeconfigWithUser('gcp-wrong', user('not-the-token-0123456789'))}})
    expect(wrong.code).toBe(5)
    expect(wrong.stderr).not.toMatch(STACK_TRACE)
  })

  it('a failing exec plugin is one clean error; its own stderr reaches the terminal as kubectl lets it, its stdout never', async () => {
    const plugin = script('broken.sh', `echo "login expired, run: cloud login" >&2; echo "secret-ish output ${cluster.token}"; exit 3`)
    const kubeconfig = kubeconfigWithUser('broken', ['exec:', '  apiVersion: client.authentication.k8s.io/v1', `  command: ${plugin}`, '  interactiveMode: Never'])
    // A process: the plugin inherits meshvm's own stderr file descriptor.
    const res = await runCli(['war', 'list', '-A'], {env: {KUBECONFIG: kubeconfig}})
    expect(res.code).toBe(5)
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(res.stderr).toBe(
      'login expired, run: cloud login\n' +
        `Error: cannot get credentials for context "c": the credential plugin (exec: ${plugin}) failed (exit 3)\n` +
        'Hint: run the command of the kubeconfig user by hand to see why (e.g. an expired login), or use another --context\n',
    )
  })
})
