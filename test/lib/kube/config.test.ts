/**
 * meshvm's kubeconfig reader against kubectl's behaviour (k8s.io/client-go/tools/clientcmd:
 * loader.go's merge rules and path resolution, validation.go's ConfirmUsable, rest.InClusterConfig).
 * Where kubectl (1.32, on PATH) can show the same thing, the test asks it on the same files.
 */
import {execFile, execFileSync} from 'node:child_process'
import {promisify} from 'node:util'
import {chmodSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {createServer} from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {kubeconfigContexts, loadKubeConfig, type LoadedKubeConfig} from '../../../src/lib/kube/config.js'
import {KubeClient} from '../../../src/lib/kube/client.js'
import {MeshvmError} from '../../../src/lib/errors.js'
import {startCluster, type TestCluster} from '../../helpers/cluster.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-kubeconfig-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))

function file(path: string, text: string): string {
  const full = join(work, path)
  mkdirSync(join(full, '..'), {recursive: true})
  writeFileSync(full, text, {mode: 0o600})
  return full
}

/** A kubeconfig at `path` with one cluster c (`clusterFields` inside its flow map), context c and user u (`userLines` under `user:`). */
function oneUserConfig(path: string, clusterFields: string, userLines: string[]): string {
  return file(
    path,
    [
      'clusters:',
      `- {name: c, cluster: {${clusterFields}}}`,
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

/** kubectl on the same KUBECONFIG (no ~/.kube/config of this machine involved). */
function kubectl(kubeconfig: string, args: string[]): string {
  return execFileSync('kubectl', args, {env: {PATH: process.env.PATH, HOME: work, KUBECONFIG: kubeconfig}, encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe']}).trim()
}

/** kubectl against the test API server, which runs in this process: never blocking its event loop. */
async function kubectlAsync(kubeconfig: string, args: string[]): Promise<string> {
  const {stdout} = await promisify(execFile)('kubectl', args, {env: {PATH: process.env.PATH, HOME: work, KUBECONFIG: kubeconfig}, encoding: 'utf8'})
  return stdout.trim()
}

function failure(fn: () => unknown): MeshvmError {
  try {
    fn()
  } catch (err) {
    if (err instanceof MeshvmError) return err
    throw err
  }
  throw new Error('no error')
}

const env = (KUBECONFIG: string): NodeJS.ProcessEnv => ({HOME: work, KUBECONFIG})

describe('KUBECONFIG lists, merged as kubectl merges them', () => {
  const first = () =>
    file(
      'merge/first',
      [
        'clusters:',
        '- name: shared',
        '  cluster: {server: "https://first.example:6443"}',
        'users:',
        '- name: shared',
        '  user: {token: first-token}',
        'contexts:',
        '- name: shared',
        '  context: {cluster: shared, user: shared}',
        '',
      ].join('\n'),
    )
  const second = () =>
    file(
      'merge/second',
      [
        'clusters:',
        '- name: shared',
        // Another server and a field the first file's entry lacks: the whole entry is ignored.
        '  cluster: {server: "https://second.example:6443", tls-server-name: other.example}',
        '- name: own',
        '  cluster: {server: "https://own.example:6443"}',
        'users:',
        '- name: shared',
        '  user: {token: second-token}',
        'contexts:',
        '- name: shared',
        '  context: {cluster: own, user: shared, namespace: second}',
        '- name: own',
        '  context: {cluster: own, user: shared, namespace: own-ns}',
        'current-context: own',
        '',
      ].join('\n'),
    )
  const third = () => file('merge/third', 'current-context: shared\n')

  it('the first file that defines a name wins, whole; current-context comes from the first file that sets one', () => {
    const list = [first(), second(), third()].join(':')
    const loaded = loadKubeConfig({}, env(list))
    expect(kubectl(list, ['config', 'current-context'])).toBe('own')
    expect(loaded.contextName).toBe('own')
    expect(loaded.server).toBe('https://own.example:6443')
    expect(loaded.namespace).toBe('own-ns')
    // The context "shared" is the first file's: its cluster and user are the first file's too.
    const shared = loadKubeConfig({context: 'shared'}, env(list))
    expect(shared.server).toBe(kubectl(list, ['config', 'view', '--minify', '--context', 'shared', '-o', 'jsonpath={.clusters[0].cluster.server}']))
    expect(shared.server).toBe('https://first.example:6443')
    expect(shared.cluster.tlsServerName).toBeUndefined()
    expect(shared.user.token).toBe('first-token')
    expect(shared.namespace).toBe('default')
    expect(kubeconfigContexts({}, env(list))).toEqual(['shared', 'own'])
  })

  it('skips missing files and repeated entries; an empty or comments-only file is an empty config', () => {
    const list = [join(work, 'merge/missing'), file('merge/empty', ''), file('merge/comments', '# nothing\n'), second(), second()].join(':')
    expect(kubectl(list, ['config', 'current-context'])).toBe('own')
    const loaded = loadKubeConfig({}, env(list))
    expect(loaded.contextName).toBe('own')
    expect(loaded.source).toBe([join(work, 'merge/empty'), join(work, 'merge/comments'), join(work, 'merge/second')].join(':'))
  })

  it('a list naming no existing file, and a missing --kubeconfig, are errors', () => {
    expect(failure(() => loadKubeConfig({}, env(join(work, 'nope')))).message).toMatch(/^no kubeconfig found/)
    expect(failure(() => loadKubeConfig({}, {HOME: join(work, 'no-home')})).code).toBe('NoKubeconfig')
    expect(failure(() => loadKubeConfig({kubeconfig: join(work, 'nope')}, {HOME: work})).message).toBe(`--kubeconfig ${JSON.stringify(join(work, 'nope'))}: file not found`)
  })

  it('--kubeconfig reads that file alone', () => {
    const list = [first(), second()].join(':')
    const loaded = loadKubeConfig({kubeconfig: second(), context: 'shared'}, env(list))
    expect(loaded.server).toBe('https://own.example:6443')
    expect(loaded.namespace).toBe('second')
  })
})

describe('paths, resolved against the file that names them', () => {
  it('certificate-authority, client certificate and key, tokenFile and an exec command with a "/"', () => {
    const dir = join(work, 'paths/conf.d')
    file('paths/conf.d/ca.crt', 'not read here\n')
    const config = file(
      'paths/conf.d/config',
      [
        'clusters:',
        '- name: c',
        '  cluster: {server: "https://c.example", certificate-authority: ca.crt}',
        'users:',
        '- name: certs',
        '  user: {client-certificate: ../pki/client.crt, client-key: /abs/client.key}',
        '- name: token',
        '  user: {tokenFile: ./token}',
        '- name: exec-relative',
        '  user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: ./bin/plugin}}',
        '- name: exec-path',
        '  user: {exec: {apiVersion: client.authentication.k8s.io/v1beta1, command: gke-gcloud-auth-plugin}}',
        'contexts:',
        ...['certs', 'token', 'exec-relative', 'exec-path'].map((u) => `- {name: ${u}, context: {cluster: c, user: ${u}}}`),
        '',
      ].join('\n'),
    )
    // A KUBECONFIG entry relative to the working directory, as kubectl takes it.
    const relative = loadKubeConfig({context: 'certs'}, env(config))
    expect(relative.cluster.caFile).toBe(join(dir, 'ca.crt'))
    // kubectl resolves the same path: --flatten embeds the file it names.
    expect(kubectl(config, ['config', 'view', '--raw', '--minify', '--flatten', '--context', 'token', '-o', 'jsonpath={.clusters[0].cluster.certificate-authority-data}'])).toBe(
      Buffer.from('not read here\n').toString('base64'),
    )
    expect(relative.user.certFile).toBe(join(work, 'paths/pki/client.crt'))
    expect(relative.user.keyFile).toBe('/abs/client.key')
    expect(loadKubeConfig({context: 'token'}, env(config)).user.tokenFile).toBe(join(dir, 'token'))
    expect(loadKubeConfig({context: 'exec-relative'}, env(config)).user.exec?.command).toBe(join(dir, 'bin/plugin'))
    // A bare command is looked up on PATH.
    expect(loadKubeConfig({context: 'exec-path'}, env(config)).user.exec?.command).toBe('gke-gcloud-auth-plugin')
  })
})

describe('what makes a kubeconfig unusable', () => {
  const base = (userLines: string[], clusterExtra = ''): string => oneUserConfig(`unusable/${Math.random().toString(36).slice(2)}`, `server: "https://c.example"${clusterExtra}`, userLines)

  it('a field of the wrong type names the field, never its value', () => {
    const path = base(['token: 123456789'])
    const err = failure(() => loadKubeConfig({kubeconfig: path}))
    expect(err.message).toBe(`cannot read kubeconfig ${path}: not a valid kubeconfig (users[0].user.token: expected a string)`)
    expect(err.message).not.toContain('123456789')
    expect(() => kubectl(path, ['config', 'view'])).toThrow(/cannot unmarshal number into Go struct field AuthInfo.users.user.token of type string/)
  })

  it('a name twice in one file', () => {
    const path = file('unusable/dup', 'clusters:\n- {name: a, cluster: {server: "https://a"}}\n- {name: a, cluster: {server: "https://b"}}\n')
    expect(failure(() => loadKubeConfig({kubeconfig: path})).message).toBe(`cannot read kubeconfig ${path}: not a valid kubeconfig (clusters: the name "a" appears twice)`)
    expect(() => kubectl(path, ['config', 'view'])).toThrow(/duplicate name "a" in list/)
  })

  it('YAML 1.1 booleans, as kubectl reads them', () => {
    const path = base(['token: t'], ', insecure-skip-tls-verify: yes')
    expect(loadKubeConfig({kubeconfig: path}).cluster.insecureSkipTLSVerify).toBe(true)
    expect(kubectl(path, ['config', 'view', '-o', 'jsonpath={.clusters[0].cluster.insecure-skip-tls-verify}'])).toBe('true')
  })

  it.each([
    ['a token and basic auth', ['token: t', 'username: a', 'password: b'], '', 'user "u" has more than one authentication method (token, basic auth); only one is allowed'],
    [
      'client-certificate and its data',
      ['client-certificate: /x.crt', 'client-certificate-data: AAAA', 'client-key-data: AAAA'],
      '',
      'user "u" has both client-certificate and client-certificate-data; give one',
    ],
    ['exec without apiVersion', ['exec: {command: plugin, interactiveMode: Never}'], '', 'user "u": exec needs an apiVersion (client.authentication.k8s.io/v1 or v1beta1)'],
    ['exec v1 without interactiveMode', ['exec: {command: plugin, apiVersion: client.authentication.k8s.io/v1}'], '', 'user "u": exec needs an interactiveMode (Never, IfAvailable or Always)'],
    [
      'a CA with insecure-skip-tls-verify',
      ['token: t'],
      ', insecure-skip-tls-verify: true, certificate-authority-data: AAAA',
      'cluster "c" has a certificate authority and insecure-skip-tls-verify; kubectl refuses the two together',
    ],
  ])('%s (kubectl refuses it too)', (_name, userLines, clusterExtra, message) => {
    const path = base(userLines, clusterExtra)
    expect(failure(() => loadKubeConfig({kubeconfig: path})).message).toBe(`context "c": ${message}`)
    expect(() => kubectl(path, ['get', '--raw', '/version', '--request-timeout=1s'])).toThrow(
      /more than one authentication method|client-cert-data and client-cert are both specified|apiVersion must be specified|interactiveMode must be specified|root certificates file with the insecure flag/,
    )
  })

  it('exec v1beta1 defaults interactiveMode (IfAvailable), as kubectl does', () => {
    expect(loadKubeConfig({kubeconfig: base(['exec: {command: plugin, apiVersion: client.authentication.k8s.io/v1beta1}'])}).user.exec?.command).toBe('plugin')
  })

  it('userinfo of the server URL is never kept', () => {
    const path = file('unusable/userinfo', 'clusters:\n- {name: c, cluster: {server: "https://admin:hunter2@c.example:6443/"}}\ncontexts:\n- {name: c, context: {cluster: c}}\ncurrent-context: c\n')
    expect(loadKubeConfig({kubeconfig: path}).server).toBe('https://c.example:6443')
  })
})

describe('in-cluster configuration', () => {
  const sa = join(work, 'serviceaccount')
  beforeAll(() => {
    file('serviceaccount/token', 'sa-token\n')
    file('serviceaccount/ca.crt', 'ca\n')
    file('serviceaccount/namespace', 'team-a')
  })
  const pod = {HOME: join(work, 'no-home'), KUBERNETES_SERVICE_HOST: '10.96.0.1', KUBERNETES_SERVICE_PORT: '443'}

  it('is used when there is no kubeconfig, as rest.InClusterConfig builds it', () => {
    const loaded = loadKubeConfig({}, pod, {serviceAccountDir: sa})
    expect(loaded).toMatchObject({source: 'in-cluster', server: 'https://10.96.0.1:443', namespace: 'team-a'})
    expect(loaded.cluster.caFile).toBe(join(sa, 'ca.crt'))
    expect(loaded.user.tokenFile).toBe(join(sa, 'token'))
    expect(loadKubeConfig({}, {...pod, POD_NAMESPACE: 'from-env'}, {serviceAccountDir: sa}).namespace).toBe('from-env')
    expect(loadKubeConfig({}, {...pod, KUBERNETES_SERVICE_HOST: 'fd00::1'}, {serviceAccountDir: sa}).server).toBe('https://[fd00::1]:443')
  })

  it('also when the kubeconfig files hold nothing; never over a kubeconfig with content, nor without the token', () => {
    expect(loadKubeConfig({}, {...pod, KUBECONFIG: file('empty-in-pod', '')}, {serviceAccountDir: sa}).source).toBe('in-cluster')
    const config = file('in-pod', 'clusters:\n- {name: c, cluster: {server: "https://c.example"}}\ncontexts:\n- {name: c, context: {cluster: c}}\ncurrent-context: c\n')
    expect(loadKubeConfig({}, {...pod, KUBECONFIG: config}, {serviceAccountDir: sa}).server).toBe('https://c.example')
    expect(failure(() => loadKubeConfig({}, pod, {serviceAccountDir: join(work, 'nope')})).code).toBe('NoKubeconfig')
    expect(failure(() => loadKubeConfig({}, {HOME: pod.HOME, KUBERNETES_SERVICE_HOST: '10.96.0.1'}, {serviceAccountDir: sa})).code).toBe('NoKubeconfig')
  })
})

describe('credentials against the test API server', () => {
  let cluster: TestCluster
  beforeAll(async () => {
    cluster = await startCluster()
  })
  afterAll(() => cluster?.stop())

  const config = (name: string, userLines: string[]): string =>
    oneUserConfig(`creds/${name}`, `server: "${cluster.url}", certificate-authority-data: ${Buffer.from(cluster.caPem).toString('base64')}`, userLines)

  async function version(loaded: LoadedKubeConfig): Promise<unknown> {
    const client = await KubeClient.create(loaded, {timeoutMs: 5000, maxRetries: 0})
    try {
      return await client.get('/version')
    } finally {
      client.close()
    }
  }

  it('a tokenFile relative to its kubeconfig, read as kubectl reads it', async () => {
    file('creds/tokens/t', `${cluster.token}\n`)
    const path = config('token-file', ['tokenFile: tokens/t'])
    expect(await version(loadKubeConfig({kubeconfig: path}))).toMatchObject({major: expect.any(String)})
    expect(JSON.parse(await kubectlAsync(path, ['get', '--raw', '/version']))).toMatchObject({major: expect.any(String)})
  })

  it('an exec plugin named relative to its kubeconfig, told about the cluster when it asks (provideClusterInfo)', async () => {
    const info = join(work, 'creds/exec-info.json')
    file(
      'creds/plugins/token.sh',
      `#!/bin/sh\nprintf '%s' "$KUBERNETES_EXEC_INFO" > ${info}\nprintf '%s' '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"${cluster.token}"}}'\n`,
    )
    chmodSync(join(work, 'creds/plugins/token.sh'), 0o700)
    const path = config('exec', ['exec:', '  apiVersion: client.authentication.k8s.io/v1', '  command: plugins/token.sh', '  interactiveMode: Never', '  provideClusterInfo: true'])
    expect(await version(loadKubeConfig({kubeconfig: path}))).toMatchObject({major: expect.any(String)})
    const sent = JSON.parse(readFileSync(info, 'utf8')) as {spec: {interactive: boolean; cluster: Record<string, unknown>}}
    expect(sent.spec).toEqual({interactive: false, cluster: {server: cluster.url, 'certificate-authority-data': Buffer.from(cluster.caPem).toString('base64')}})
    // kubectl finds the same plugin from the same kubeconfig.
    expect(JSON.parse(await kubectlAsync(path, ['get', '--raw', '/version']))).toMatchObject({major: expect.any(String)})
  })

  it('a client left open does not hold the process: its idle kept-alive connection lets it exit', async () => {
    // The test API server keeps idle connections for 60 s: a socket that held the event loop would keep the child that long.
    const script = file(
      'creds/open-client.mts',
      [
        `import {KubeClient} from ${JSON.stringify(new URL('../../../src/lib/kube/client.ts', import.meta.url).pathname)}`,
        `import {loadKubeConfig} from ${JSON.stringify(new URL('../../../src/lib/kube/config.ts', import.meta.url).pathname)}`,
        `const client = await KubeClient.create(loadKubeConfig({kubeconfig: ${JSON.stringify(cluster.kubeconfigPath)}}), {timeoutMs: 5000})`,
        "for (let i = 0; i < 3; i++) await client.get('/version')",
        "process.stdout.write('read\\n')",
        '',
      ].join('\n'),
    )
    // A child still running after 30 s (half the server's idle time) is killed and fails the test.
    const {stdout} = await promisify(execFile)(process.execPath, ['--import', 'tsx', script], {cwd: new URL('../../..', import.meta.url).pathname, timeout: 30_000, encoding: 'utf8'})
    expect(stdout).toBe('read\n')
  })

  it('an auth-provider user (gcp) is left to @kubernetes/client-node, loaded for it alone', async () => {
    const path = config('gcp', ['auth-provider:', '  name: gcp', '  config:', `    access-token: ${cluster.token}`, '    expiry: "2999-01-01T00:00:00Z"'])
    expect(await version(loadKubeConfig({kubeconfig: path}))).toMatchObject({major: expect.any(String)})
  })
})

describe('impersonation (as, as-groups, as-uid, as-user-extra)', () => {
  it('sends the headers kubectl sends, one line per value', async () => {
    const seen: string[][] = []
    const server = createServer((req, res) => {
      const lines: string[] = []
      for (let i = 0; i < req.rawHeaders.length; i += 2) if (/^impersonate-/i.test(req.rawHeaders[i]!)) lines.push(`${req.rawHeaders[i]!.toLowerCase()}: ${req.rawHeaders[i + 1]}`)
      seen.push(lines.sort())
      res.writeHead(200, {'Content-Type': 'application/json'})
      res.end('{"major":"1","minor":"32"}')
    })
    await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
    try {
      const path = file(
        'impersonate',
        [
          'clusters:',
          `- {name: c, cluster: {server: "http://127.0.0.1:${(server.address() as AddressInfo).port}", insecure-skip-tls-verify: true}}`,
          'contexts:',
          '- {name: c, context: {cluster: c, user: u}}',
          'current-context: c',
          'users:',
          '- name: u',
          '  user:',
          '    token: t',
          '    as: jane',
          '    as-uid: "1234"',
          '    as-groups: [dev, ops]',
          '    as-user-extra: {scopes: [view, edit]}',
          '',
        ].join('\n'),
      )
      const client = await KubeClient.create(loadKubeConfig({kubeconfig: path}), {timeoutMs: 5000, maxRetries: 0})
      await client.get('/version')
      client.close()
      await kubectlAsync(path, ['get', '--raw', '/version'])
      expect(seen[0]).toEqual([
        'impersonate-extra-scopes: edit',
        'impersonate-extra-scopes: view',
        'impersonate-group: dev',
        'impersonate-group: ops',
        'impersonate-uid: 1234',
        'impersonate-user: jane',
      ])
      expect(seen.at(-1)).toEqual(seen[0])
    } finally {
      await new Promise((r) => server.close(r))
    }
  })
})
