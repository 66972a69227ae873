/**
 * Kubeconfig details of issue #26, read as kubectl reads them (client-go): a key written twice, a
 * server without a scheme, malformed certificate data, token and tokenFile together, and exec
 * plugins (interactiveMode Always without a terminal, an answer of another apiVersion,
 * expirationTimestamp). Where kubectl is on PATH it reads the same file and must agree.
 */
import {execFile, spawnSync} from 'node:child_process'
import {mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {KubeClient} from '../../../src/lib/kube/client.js'
import {loadKubeConfig} from '../../../src/lib/kube/config.js'
import {MeshvmError} from '../../../src/lib/errors.js'
import {startCluster, type TestCluster} from '../../helpers/cluster.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-kubeconfig-kubectl-'))
const KUBECTL = spawnSync('kubectl', ['version', '--client'], {stdio: 'ignore'}).status === 0
let cluster: TestCluster
beforeAll(async () => {
  cluster = await startCluster()
})
afterAll(async () => {
  await cluster?.stop()
  rmSync(work, {recursive: true, force: true})
})

function file(name: string, text: string, mode = 0o600): string {
  const path = join(work, name)
  mkdirSync(join(path, '..'), {recursive: true})
  writeFileSync(path, text, {mode})
  return path
}

/** kubectl's exit status and stderr on `get --raw /version` (stdin not a terminal). */
function kubectl(kubeconfig: string): Promise<{ok: boolean; stderr: string}> {
  return new Promise((resolve) => {
    execFile('kubectl', ['--kubeconfig', kubeconfig, 'get', '--raw', '/version', '--request-timeout=10s'], {env: {PATH: process.env.PATH, HOME: work}}, (err, _out, stderr) =>
      resolve({ok: !err, stderr}),
    )
  })
}

function kubeconfig(name: string, userLines: string[], clusterLines: string[] = []): string {
  return file(
    name,
    [
      'apiVersion: v1',
      'kind: Config',
      'clusters:',
      '- name: c',
      '  cluster:',
      `    server: ${cluster.url}`,
      `    certificate-authority-data: ${Buffer.from(cluster.caPem).toString('base64')}`,
      ...clusterLines.map((l) => `    ${l}`),
      'contexts:',
      '- {name: c, context: {cluster: c, user: u}}',
      'current-context: c',
      'users:',
      '- name: u',
      '  user:',
      ...userLines.map((l) => `    ${l}`),
      '',
    ].join('\n'),
  )
}

async function version(path: string): Promise<{ok: true} | {ok: false; err: MeshvmError}> {
  let client: KubeClient | undefined
  try {
    client = await KubeClient.create(loadKubeConfig({kubeconfig: path}, {}), {timeoutMs: 10_000, maxRetries: 0})
    await client.get('/version')
    return {ok: true}
  } catch (err) {
    if (!(err instanceof MeshvmError)) throw err
    return {ok: false, err}
  } finally {
    client?.close()
  }
}

describe('kubeconfig fields as kubectl reads them', () => {
  it('a key written twice in one mapping: the last value wins', async () => {
    const path = kubeconfig('dup-key', ['token: not-the-token-0123456789', `token: ${cluster.token}`])
    expect(loadKubeConfig({kubeconfig: path}, {}).user.token).toBe(cluster.token)
    expect(await version(path)).toEqual({ok: true})
    if (KUBECTL) expect((await kubectl(path)).ok).toBe(true)
  })

  it('insecure-skip-tls-verify: no chain and no name check, as kubectl; without it the same server is refused', async () => {
    const insecure = kubeconfig('insecure', [`token: ${cluster.token}`], ['insecure-skip-tls-verify: true', 'tls-server-name: not-the-server.example'])
    writeFileSync(insecure, readFileSync(insecure, 'utf8').replace(/ *certificate-authority-data: .*\n/, ''))
    expect(await version(insecure)).toEqual({ok: true})
    const named = kubeconfig('wrong-name', [`token: ${cluster.token}`], ['tls-server-name: not-the-server.example'])
    const refused = await version(named)
    expect(refused.ok).toBe(false)
    if (!refused.ok) expect(refused.err.message).toMatch(/tls: failed to verify certificate: x509: certificate is valid for .*, not not-the-server\.example$/)
    if (KUBECTL) {
      expect((await kubectl(insecure)).ok).toBe(true)
      expect((await kubectl(named)).stderr).toMatch(/not not-the-server\.example/)
    }
  })

  it('a server without a scheme is a one-line error (exit 2), not a crash', () => {
    const path = file('no-scheme', 'clusters:\n- {name: c, cluster: {server: "127.0.0.1:6443"}}\ncontexts:\n- {name: c, context: {cluster: c}}\ncurrent-context: c\n')
    let err: unknown
    try {
      loadKubeConfig({kubeconfig: path}, {})
    } catch (e) {
      err = e
    }
    expect(err).toBeInstanceOf(MeshvmError)
    expect((err as MeshvmError).exit).toBe(2)
    expect((err as MeshvmError).message).toBe('cluster "c": server "127.0.0.1:6443" is not an https:// URL')
    expect((err as MeshvmError).hints).toEqual(['write the server with its scheme, e.g. server: https://127.0.0.1:6443'])
  })

  it('certificate-authority-data that is not base64, or holds no certificate, is a one-line error (exit 2); kubectl refuses both', async () => {
    const notBase64 = kubeconfig('ca-not-base64', [`token: ${cluster.token}`])
    writeFileSync(notBase64, readFileSync(notBase64, 'utf8').replace(/certificate-authority-data: .*/, 'certificate-authority-data: "not base64!"'))
    let err: unknown
    try {
      loadKubeConfig({kubeconfig: notBase64}, {})
    } catch (e) {
      err = e
    }
    expect((err as MeshvmError).exit).toBe(2)
    expect((err as MeshvmError).message).toBe(`cannot read kubeconfig ${notBase64}: not a valid kubeconfig (clusters[0].cluster.certificate-authority-data: expected base64 data (illegal base64))`)
    const notPem = kubeconfig('ca-not-pem', [`token: ${cluster.token}`])
    writeFileSync(notPem, readFileSync(notPem, 'utf8').replace(/certificate-authority-data: .*/, `certificate-authority-data: ${Buffer.from('not a certificate').toString('base64')}`))
    const answer = await version(notPem)
    expect(answer.ok).toBe(false)
    if (!answer.ok) {
      expect(answer.err.exit).toBe(2)
      expect(answer.err.message).toBe('context "c": certificate-authority-data holds no PEM certificate (unable to load root certificates)')
    }
    if (KUBECTL) {
      expect((await kubectl(notBase64)).ok).toBe(false)
      expect((await kubectl(notPem)).stderr).toMatch(/unable to load root certificates/)
    }
  })
})

describe('exec plugins as client-go runs them', () => {
  const plugin = (name: string, body: string): string => file(`plugins/${name}`, `#!/bin/sh\n${body}\n`, 0o700)
  const execUser = (command: string, mode = 'Never', apiVersion = 'client.authentication.k8s.io/v1'): string[] => [
    'exec:',
    `  apiVersion: ${apiVersion}`,
    `  command: ${command}`,
    `  interactiveMode: ${mode}`,
  ]
  const credential = (token: string, extra = '', apiVersion = 'client.authentication.k8s.io/v1') => `{"apiVersion":"${apiVersion}","kind":"ExecCredential","status":{"token":"${token}"${extra}}}`

  it('interactiveMode Always without a terminal is refused before the plugin runs, as kubectl refuses it', async () => {
    const ran = join(work, 'always-ran')
    const command = plugin('always.sh', `touch ${ran}; printf '%s' '${credential(cluster.token)}'`)
    const path = kubeconfig('exec-always', execUser(command, 'Always'))
    const answer = await version(path)
    expect(answer.ok).toBe(false)
    if (!answer.ok) {
      expect(answer.err.exit).toBe(5)
      expect(answer.err.message).toBe(`cannot get credentials for context "c": the credential plugin (exec: ${command}) cannot support interactive mode: standard input is not a terminal`)
    }
    expect(() => readFileSync(ran)).toThrow()
    if (KUBECTL) expect((await kubectl(path)).stderr).toMatch(/standard input is not a terminal/)
  })

  it('an answer of another apiVersion than the one asked for is refused', async () => {
    const command = plugin('other-version.sh', `printf '%s' '${credential(cluster.token, '', 'client.authentication.k8s.io/v1beta1')}'`)
    const path = kubeconfig('exec-version', execUser(command))
    const answer = await version(path)
    expect(answer.ok).toBe(false)
    if (!answer.ok)
      expect(answer.err.message).toBe(
        `cannot get credentials for context "c": the credential plugin (exec: ${command}) is configured to use API version client.authentication.k8s.io/v1, plugin returned version "client.authentication.k8s.io/v1beta1"`,
      )
    if (KUBECTL) expect((await kubectl(path)).stderr).toMatch(/plugin returned version client.authentication.k8s.io\/v1beta1/)
  })

  it('expirationTimestamp is honoured: an expired credential is fetched again before the next request, a valid one is kept', async () => {
    const count = join(work, 'runs')
    const make = (name: string, expiry: string) => plugin(name, `echo run >> ${count}; printf '%s' '${credential(cluster.token, `,"expirationTimestamp":"${expiry}"`)}'`)
    const requests = async (path: string): Promise<number> => {
      writeFileSync(count, '')
      const client = await KubeClient.create(loadKubeConfig({kubeconfig: path}, {}), {timeoutMs: 10_000, maxRetries: 0})
      try {
        await client.get('/version')
        await client.get('/version')
      } finally {
        client.close()
      }
      return readFileSync(count, 'utf8').split('\n').filter(Boolean).length
    }
    // Expired at once: once for the client, then once before each request (not after a 401).
    expect(await requests(kubeconfig('exec-expired', execUser(make('expired.sh', '2000-01-01T00:00:00Z'))))).toBe(3)
    expect(await requests(kubeconfig('exec-valid', execUser(make('valid.sh', '2999-01-01T00:00:00Z'))))).toBe(1)
    const bad = kubeconfig('exec-bad-expiry', execUser(make('bad.sh', 'tomorrow')))
    const answer = await version(bad)
    expect(answer.ok).toBe(false)
    if (!answer.ok) expect(answer.err.message).toMatch(/status.expirationTimestamp is not an RFC 3339 time$/)
  })
})
