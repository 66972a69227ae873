/**
 * Fault injection across every cluster-facing command, through the test API server:
 * - transient faults (429 with Retry-After, 500, 502, 503, 504, connection reset, truncated body,
 *   slow answers, an expired continue token) must not change the command's result;
 * - permanent faults (unreachable server, wrong CA, bad or missing kubeconfig, unknown context,
 *   401, 403, missing CRD, malformed JSON, time-outs) must end in one clean error line (plus hints),
 *   a documented exit code and no stack trace.
 * Each injected fault is logged to MESHVM_FAULT_LOG for `npm run test:faults`.
 */
import {appendFileSync, mkdtempSync, writeFileSync} from 'node:fs'
import {generateKeyPairSync} from 'node:crypto'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import forge from 'node-forge'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {STACK_TRACE} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {kubeconfigYaml, WAR_CRD, ISTIO_CRDS} from '../cluster/index.js'
import type {FaultRule} from '../cluster/index.js'

let cluster: TestCluster
const work = mkdtempSync(join(tmpdir(), 'meshvm-faults-'))
const ENV = {MESHVM_RETRY_BASE_MS: '5'}

function logFault(command: string, fault: string): void {
  const log = process.env.MESHVM_FAULT_LOG
  if (log) appendFileSync(log, JSON.stringify({command, fault}) + '\n')
}
/** The command named as in `commands` below ("war list", "onboard --apply"), for the fault log. */
const commandName = (args: readonly string[]): string => (args[0] === 'war' ? `war ${args[1]}` : `${args[0]}${args.includes('--apply') ? ' --apply' : ''}`)

/** Ages and times (and the column widths they set) change between runs; everything else must not. */
const normalise = (text: string) =>
  text
    .replace(/\b\d+(?:d\d*h?|h\d*m?|m\d*s?|s)\b/g, 'AGE')
    .replace(/\d{4}-\d\d-\d\dT[\d:.]+Z/g, 'TIME')
    // An age that changes width re-aligns the table: compare cells, not padding.
    .replace(/ {2,}/g, '  ')

interface CommandCase {
  name: string
  args: () => string[]
  /** A path the command certainly requests (prefix or RegExp), and the method. */
  path: string | RegExp
  method?: string
  stdoutMayHoldSecrets?: boolean
  /** Compare stdout with the fault-free run (false when the output is not deterministic, e.g. tokens). */
  compare?: boolean
}

const commands: CommandCase[] = [
  {name: 'war list', args: () => ['war', 'list', '-A', '-o', 'wide'], path: '/apis/runtime.onboarding.tetrate.io/v1alpha1/workloadautoregistrations'},
  {name: 'war describe', args: () => ['war', 'describe', 'web-vm-1', '-n', 'apps'], path: '/apis/networking.istio.io/v1/namespaces/apps/workloadgroups'},
  {name: 'proxy-status', args: () => ['proxy-status', '-o', 'wide'], path: /\/pods\/istiod-[^/]+\/portforward$/},
  {name: 'precheck', args: () => ['precheck', 'web', '-n', 'apps', '-o', 'json'], path: '/apis/authorization.k8s.io/v1/selfsubjectaccessreviews', method: 'POST'},
  {name: 'bundle', args: () => ['bundle', 'web', '-n', 'apps', '-d', join(mkdtempSync(join(work, 'b-')), 'out')], path: '/api/v1/namespaces/istio-system/configmaps', compare: false},
  {name: 'onboard --apply', args: () => ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--apply'], path: '/apis/networking.istio.io/v1/namespaces/apps/workloadgroups/web', method: 'PATCH'},
  {
    name: 'create-remote-secret',
    args: () => ['create-remote-secret', '--yes', '--server', 'https://remote.example:6443'],
    path: '/api/v1/namespaces/kube-system',
    stdoutMayHoldSecrets: true,
    compare: false,
  },
]

const transient: {name: string; rule: Omit<FaultRule, 'path' | 'method'>; args?: string[]}[] = [
  {name: '429 Too Many Requests (Retry-After: 1)', rule: {status: 429, retryAfterSeconds: 1, times: 1}},
  {name: '500 Internal Server Error', rule: {status: 500, times: 2}},
  {name: '502 Bad Gateway', rule: {status: 502, times: 1}},
  {name: '503 Service Unavailable', rule: {status: 503, times: 2}},
  {name: '504 Gateway Timeout', rule: {status: 504, times: 1}},
  {name: 'connection reset', rule: {reset: true, times: 1}},
  {name: 'truncated body', rule: {truncate: true, times: 1}},
  {name: 'slow answer (300 ms)', rule: {latencyMs: 300, times: 1}},
  {name: 'request time-out (an answer slower than --request-timeout)', rule: {latencyMs: 2500, times: 1}, args: ['--request-timeout', '1s']},
]

async function meshvm(args: string[], options: {env?: Record<string, string>; stdoutMayHoldSecrets?: boolean; timeoutMs?: number} = {}) {
  return runCommand(args, {env: {...cluster.env, ...ENV, ...options.env}, stdoutMayHoldSecrets: options.stdoutMayHoldSecrets, timeoutMs: options.timeoutMs})
}

function expectCleanError(res: {code: number; stderr: string}, code: number, pattern: RegExp): void {
  expect(res.code).toBe(code)
  expect(res.stderr).not.toMatch(STACK_TRACE)
  // Warnings, and apply's per-object report lines, may precede the error.
  const lines = res.stderr
    .trim()
    .split('\n')
    .filter((l) => !l.startsWith('Warning: ') && (l.startsWith('Error: ') || !/ (failed: .*|not applied)$/.test(l)))
  expect(lines[0]).toMatch(/^Error: /)
  expect(lines[0]).toMatch(pattern)
  for (const l of lines.slice(1)) expect(l).toMatch(/^(Hint: | {2})/)
}

beforeAll(async () => {
  cluster = await startCluster()
  cluster.mesh.watchNamespace('apps')
  const setup = await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--apply'], {env: cluster.env})
  expect(setup.code).toBe(0)
  for (let i = 1; i <= 3; i++) cluster.mesh.addVm({name: `web-vm-${i}`, namespace: 'apps', group: 'web', address: `10.0.0.${i}`, connectedTo: 'istiod-7d4b9c6f8-x2k9p', healthy: true, source: 'war'})
  cluster.mesh.addPod({name: 'api-7d9f-x1', namespace: 'apps', istiod: 'istiod-7d4b9c6f8-x2k9p'})
})
afterAll(() => cluster?.stop())

describe('transient faults: the result is the same as without them', () => {
  for (const c of commands) {
    it(`${c.name}`, async () => {
      const clean = await meshvm(c.args(), {stdoutMayHoldSecrets: c.stdoutMayHoldSecrets})
      expect(clean.stderr).not.toMatch(/^Error/m)
      expect(clean.code).toBe(0)
      for (const f of transient) {
        const remove = cluster.faults.add({...f.rule, path: c.path, method: c.method ?? (f.rule.status === 429 ? undefined : 'GET')})
        const before = cluster.requests.length
        const res = await meshvm([...c.args(), ...(f.args ?? [])], {stdoutMayHoldSecrets: c.stdoutMayHoldSecrets})
        remove()
        const hit = cluster.requests.slice(before).some((r) => (typeof c.path === 'string' ? r.path.startsWith(c.path) : c.path.test(r.path)))
        expect(hit, `${c.name} requested ${String(c.path)}`).toBe(true)
        expect(res.stderr, `${c.name} under ${f.name}`).not.toMatch(/^Error/m)
        expect(res.code, `${c.name} under ${f.name}: ${res.stderr}`).toBe(0)
        if (c.compare !== false) expect(normalise(res.stdout), `${c.name} under ${f.name}`).toBe(normalise(clean.stdout))
        logFault(c.name, f.name)
      }
    }, 60_000)
  }

  it('war list: an expired continue token (410) mid-list restarts the list; no row is lost or doubled', async () => {
    const clean = await meshvm(['war', 'list', '-A', '--chunk-size', '1'])
    cluster.faults.add({path: '/apis/runtime.onboarding.tetrate.io', query: 'continue', expireContinue: true, times: 1})
    const res = await meshvm(['war', 'list', '-A', '--chunk-size', '1'])
    expect(res.code).toBe(0)
    expect(normalise(res.stdout)).toBe(normalise(clean.stdout))
    logFault('war list', '410 Gone (expired continue token)')
  })
})

describe('--debug: every request and retry on stderr, never a credential', () => {
  it('logs method, path, status, time and size; retries too; no token, in --debug or DEBUG=*', async () => {
    const remove = cluster.faults.add({path: /\/namespaces\/istio-system\/configmaps\/istio$/, method: 'GET', status: 503, times: 1})
    const bundle = await meshvm(['bundle', 'web', '-n', 'apps', '-d', join(mkdtempSync(join(work, 'debug-')), 'out'), '--debug'])
    remove()
    expect(bundle.code, bundle.stderr).toBe(0)
    expect(bundle.stderr).toMatch(/^debug: GET \/api\/v1\/namespaces\/istio-system\/configmaps\/istio → 503 \(\d+ ms, \d+ bytes\)$/m)
    expect(bundle.stderr).toMatch(/^debug: retry 1 of GET \/api\/v1\/namespaces\/istio-system\/configmaps\/istio in \d+ms \(HTTP 503\)$/m)
    expect(bundle.stderr).toMatch(/^debug: POST \/api\/v1\/namespaces\/apps\/serviceaccounts\/default\/token → 201 /m)
    expect(bundle.stderr).not.toContain(cluster.token)
    expect(bundle.stderr).not.toMatch(/Bearer|Authorization/i)
    // Everything else debug-minded (oclif's own DEBUG=* logging) stays free of secrets too: the
    // suite's secret scan checks these runs' output for every token the test server issued.
    const secret = await meshvm(['create-remote-secret', '--yes', '--server', 'https://remote.example:6443'], {env: {DEBUG: '*'}, stdoutMayHoldSecrets: true})
    expect(secret.code, secret.stderr).toBe(0)
    expect(secret.stderr).toMatch(/^debug: GET \/api\/v1\/namespaces\/kube-system → 200 /m)
    expect(secret.stderr).not.toContain(cluster.token)
  })
})

describe('permanent faults: one clean line, a documented exit code, no stack trace', () => {
  it('unreachable server: exit 3 within the request timeout', async () => {
    const path = join(work, 'unreachable')
    writeFileSync(path, kubeconfigYaml({server: 'https://127.0.0.1:1', caPem: cluster.caPem, token: 'x'.repeat(20), name: 'gone'}), {mode: 0o600})
    for (const args of [['war', 'list', '-A'], ['proxy-status'], ['precheck', 'web', '-n', 'apps']]) {
      const started = Date.now()
      const res = await meshvm([...args, '--request-timeout', '2s'], {env: {KUBECONFIG: path}})
      expectCleanError(res, 3, /127\.0\.0\.1:1|refused|reach/)
      expect(Date.now() - started).toBeLessThan(15_000)
      logFault(commandName(args), 'unreachable server')
    }
  })

  it('wrong CA: exit 3 naming the certificate problem; TLS is never skipped', async () => {
    const {privateKey, publicKey} = generateKeyPairSync('rsa', {modulusLength: 2048})
    const cert = forge.pki.createCertificate()
    cert.publicKey = forge.pki.publicKeyFromPem(publicKey.export({type: 'spki', format: 'pem'}) as string)
    cert.serialNumber = '09'
    cert.validity.notBefore = new Date(Date.now() - 60_000)
    cert.validity.notAfter = new Date(Date.now() + 3600_000)
    cert.setSubject([{name: 'commonName', value: 'other-ca'}])
    cert.setIssuer([{name: 'commonName', value: 'other-ca'}])
    cert.setExtensions([{name: 'basicConstraints', cA: true}])
    cert.sign(forge.pki.privateKeyFromPem(privateKey.export({type: 'pkcs1', format: 'pem'}) as string), forge.md.sha256.create())
    const path = join(work, 'wrong-ca')
    writeFileSync(path, kubeconfigYaml({server: cluster.url, caPem: forge.pki.certificateToPem(cert), token: cluster.token, name: 'wrong-ca'}), {mode: 0o600})
    for (const args of [
      ['war', 'list', '-A'],
      ['create-remote-secret', '--yes'],
    ]) {
      const res = await meshvm(args, {env: {KUBECONFIG: path}})
      expectCleanError(res, 3, /certificate|TLS/i)
      logFault(commandName(args), 'wrong CA')
    }
  })

  it('missing, unparsable and localhost-only kubeconfigs, and unknown contexts', async () => {
    // No kubeconfig means no cluster to reach (exit 3), never a silent fall-back to localhost:8080.
    const missing = await meshvm(['war', 'list'], {env: {KUBECONFIG: join(work, 'nope')}})
    expectCleanError(missing, 3, /no kubeconfig found/)
    logFault('war list', 'missing kubeconfig')
    const garbage = join(work, 'garbage')
    writeFileSync(garbage, 'clusters: [\n  - {name: x\n', {mode: 0o600})
    const bad = await meshvm(['proxy-status'], {env: {KUBECONFIG: garbage}})
    expectCleanError(bad, 2, /kubeconfig/)
    expect(bad.stderr).not.toContain(cluster.token)
    logFault('proxy-status', 'unparsable kubeconfig')
    // A kubeconfig that only knows client-node's fall-back (plain HTTP on localhost:8080) is refused.
    const localhost = join(work, 'localhost')
    writeFileSync(
      localhost,
      'apiVersion: v1\nkind: Config\nclusters:\n- name: local\n  cluster: {server: "http://localhost:8080"}\ncontexts:\n- name: local\n  context: {cluster: local, user: me}\ncurrent-context: local\nusers:\n- name: me\n  user: {}\n',
      {mode: 0o600},
    )
    const plain = await meshvm(['war', 'list'], {env: {KUBECONFIG: localhost}})
    expectCleanError(plain, 2, /uses plain HTTP \(http:\/\/localhost:8080\); meshvm only talks to API servers over HTTPS/)
    logFault('war list', 'localhost:8080 kubeconfig')
    const empty = join(work, 'empty')
    writeFileSync(empty, 'apiVersion: v1\nkind: Config\n', {mode: 0o600})
    const none = await meshvm(['proxy-status'], {env: {KUBECONFIG: empty}})
    expectCleanError(none, 4, /^Error: no current context in /)
    expect(none.stderr).toContain('Hint: the kubeconfig has no contexts')
    logFault('proxy-status', 'kubeconfig without contexts')
    const noContext = await meshvm(['precheck', '--context', 'elsewhere'])
    expectCleanError(noContext, 4, /context "elsewhere"/)
    logFault('precheck', 'unknown context')
  })

  it('401: an expired or revoked token names the credential problem', async () => {
    const path = join(work, 'revoked')
    writeFileSync(path, kubeconfigYaml({server: cluster.url, caPem: cluster.caPem, token: 'revoked-token-0123456789', name: 'revoked'}), {mode: 0o600})
    for (const args of [['war', 'list', '-A'], ['proxy-status'], ['bundle', 'web', '-n', 'apps', '-d', join(work, 'never')]]) {
      const res = await meshvm(args, {env: {KUBECONFIG: path}})
      expectCleanError(res, 5, /[Uu]nauthori[sz]ed|credentials|401/)
      expect(res.stderr).not.toContain('revoked-token-0123456789')
      logFault(commandName(args), '401 Unauthorized')
    }
  })

  it('403: forbidden names the verb, resource and namespace', async () => {
    const token = cluster.addUser('nobody')
    const env = {KUBECONFIG: cluster.kubeconfigFor(token)}
    const cases: [string[], RegExp][] = [
      [['war', 'list', '-n', 'apps'], /list.*workloadautoregistrations|workloadentries/],
      [['proxy-status'], /list.*pods|pods/],
      [['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--apply'], /failed: workloadgroup/],
      [['create-remote-secret', '--yes'], /get|namespaces|kube-system/],
    ]
    for (const [args, pattern] of cases) {
      const res = await meshvm(args, {env})
      expectCleanError(res, 5, pattern)
      logFault(commandName(args), '403 Forbidden')
    }
  })

  it('missing CRD: war list falls back to WorkloadEntries with a note; rollout rolls out WorkloadEntries and says so', async () => {
    const noWar = await startCluster({crdFiles: [ISTIO_CRDS]})
    try {
      // The group exists, so the only thing missing for a rollout is the CRD.
      expect((await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--create-namespace', '--apply'], {env: noWar.env})).code).toBe(0)
      const list = await runCommand(['war', 'list', '-A'], {env: {...noWar.env, ...ENV}})
      expect(list.code).toBe(0)
      expect(list.stderr).toMatch(/WorkloadAutoRegistration|CRD/)
      // Without the CRD, the group's registrations are its auto-registered WorkloadEntries (none here).
      const rollout = await runCommand(['war', 'rollout', 'web', '-n', 'apps'], {env: {...noWar.env, ...ENV}})
      expect(rollout.code, rollout.stderr).toBe(0)
      expect(rollout.stderr).not.toMatch(STACK_TRACE)
      expect(rollout.stderr).toContain(
        'Note: the WorkloadAutoRegistration CRD (workloadautoregistrations.runtime.onboarding.tetrate.io) is not installed in this cluster: only auto-registered WorkloadEntries are rolled out.',
      )
      expect(rollout.stderr).toContain('workloadgroup apps/web (generation 1): all 0 registration(s) are up to date, nothing to roll out')
      expect(rollout.stderr).not.toMatch(/workloadgroup .* not found/)
      logFault('war list', 'missing CRD')
      logFault('war rollout', 'missing CRD')
    } finally {
      await noWar.stop()
    }
    expect(WAR_CRD).toMatch(/workloadautoregistration\.yaml$/)
  })

  it('malformed JSON that persists: a clean error, not a crash', async () => {
    for (const [args, path] of [
      [['war', 'list', '-A'], '/apis/runtime.onboarding.tetrate.io'],
      [['precheck', 'web', '-n', 'apps'], '/version'],
    ] as const) {
      const remove = cluster.faults.add({path, malformed: true})
      const res = await meshvm([...args])
      remove()
      expectCleanError(res, 1, /^Error: the API server at https:\/\/127\.0\.0\.1:\d+ sent a malformed response to GET \//)
      logFault(commandName(args), 'malformed JSON')
    }
  })

  it('a server slower than --request-timeout: exit 3 with a hint, in bounded time', async () => {
    const remove = cluster.faults.add({path: '/apis/runtime.onboarding.tetrate.io', latencyMs: 5_000})
    const started = Date.now()
    const res = await meshvm(['war', 'list', '-A', '--request-timeout', '300ms'])
    remove()
    expectCleanError(res, 3, /time|timeout|timed out/i)
    expect(res.stderr).toContain('--request-timeout')
    expect(Date.now() - started).toBeLessThan(20_000)
    logFault('war list', 'request timeout')
  }, 30_000)
})
