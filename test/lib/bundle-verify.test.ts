/** bundle verify's offline part: cluster.env read as sh reads it (never run), the archive reader, the token checks. */
import {execFileSync} from 'node:child_process'
import {describe, expect, it} from 'vitest'
import {bundleCommand, offlineChecks, parseClusterEnv, readTarGz, type BundleFiles} from '../../src/lib/bundle-verify/offline.js'
import {tarGz} from '../../src/lib/fs/tar.js'
import {testPki} from '../cluster/pki.js'
import {istioShellQuote} from '../../src/lib/util/go-compat.js'

describe('parseClusterEnv', () => {
  it('reads what meshvm bundle writes back to the same values (istioShellQuote round trip)', () => {
    const values = {A: 'plain', B: '', C: 'with space', D: `it's`, E: '{"app":"web","v":"1"}', F: '$HOME `x`', G: 'a=b,c'}
    const text =
      Object.entries(values)
        .map(([k, v]) => `${k}=${istioShellQuote(v)}`)
        .join('\n') + '\n'
    expect(parseClusterEnv(text)).toEqual({values, problems: []})
  })

  it('mixes quoting as sh does, and skips comments and blank lines', () => {
    expect(parseClusterEnv(`# c\n\nA='x'"y"z\nexport B="q\\"r\\$s"\nC=a\\ b # trailing\n`)).toEqual({values: {A: 'xyz', B: 'q"r$s', C: 'a b'}, problems: []})
  })

  it('reports, never runs, what the shell would expand or execute', () => {
    // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's ${HOME}, as a hostile cluster.env would hold it
    const {problems} = parseClusterEnv('A=$(id)\nB="${HOME}"\nC=x;rm -rf /\nD=`id`\nE=a b\nrm -rf /\nF=\'open\n')
    expect(problems).toEqual([
      "line 1 (A): unquoted $ would be interpreted by the VM's shell",
      "line 2 (B): $ inside double quotes would be expanded by the VM's shell",
      "line 3 (C): unquoted ; would be interpreted by the VM's shell",
      "line 4 (D): unquoted ` would be interpreted by the VM's shell",
      'line 5 (E): unquoted space: the rest of the line would run as a command',
      "line 6: not NAME=value (the VM's shell would run it as a command)",
      'line 7 (F): unterminated single quote',
    ])
  })
})

describe('readTarGz', () => {
  it('reads back what meshvm bundle --archive writes, with modes', () => {
    const files = readTarGz(
      tarGz(
        'web-bundle',
        [
          {name: 'istio-token', data: 'tok', mode: 0o600},
          {name: 'hosts', data: '', mode: 0o644},
        ],
        0,
      ),
    )
    expect([...files].map(([n, f]) => [n, f.data.toString(), f.mode, f.symlink])).toEqual([
      ['istio-token', 'tok', 0o600, false],
      ['hosts', '', 0o644, false],
    ])
    expect(() => readTarGz(Buffer.from('not gzip'))).toThrow('not a gzip file')
  })
})

describe('offlineChecks: the token', () => {
  const jwt = (claims: object) => `e30.${Buffer.from(JSON.stringify(claims)).toString('base64url')}.sig`
  const now = new Date('2026-01-01T00:00:00Z')
  const files = (token: string, mode = 0o600): BundleFiles =>
    new Map([
      ['cluster.env', {data: Buffer.from('POD_NAMESPACE=apps\nSERVICE_ACCOUNT=web\nISTIO_META_CLUSTER_ID=c1\nISTIO_META_WORKLOAD_NAME=web\n'), mode: 0o644, symlink: false}],
      ['istio-token', {data: Buffer.from(token), mode, symlink: false}],
    ])
  const status = (fs: BundleFiles, warnWithinMs = 600_000) => Object.fromEntries(offlineChecks(fs, {now, warnWithinMs}).checks.map((c) => [c.id, c.status]))
  const good = {aud: ['istio-ca'], sub: 'system:serviceaccount:apps:web'}

  it('expiry: pass, warn within --warn-within (inclusive), fail once expired', () => {
    const at = (s: number) => jwt({...good, exp: now.getTime() / 1000 + s})
    expect(status(files(at(601)))['token.expiry']).toBe('pass')
    expect(status(files(at(600)))['token.expiry']).toBe('warn')
    expect(status(files(at(0)))['token.expiry']).toBe('fail')
  })

  it('audience, subject and mode', () => {
    const s = status(files(jwt({aud: ['api'], sub: 'system:serviceaccount:apps:other', exp: now.getTime() / 1000 + 3600}), 0o640))
    expect([s['token.audience'], s['token.service-account'], s['files.token-mode']]).toEqual(['fail', 'fail', 'fail'])
  })
})

describe('offlineChecks: root-cert.pem follows the rule bundle writes it by (rootCertProblem)', () => {
  const {caPem, keyPem} = testPki()
  const check = (pem: string) =>
    offlineChecks(new Map([['root-cert.pem', {data: Buffer.from(pem), mode: 0o644, symlink: false}]]), {now: new Date(), warnWithinMs: 0}).checks.find((c) => c.id === 'root-cert.format')
  it('certificates only pass; a key or junk beside a certificate fails with the line, never the line itself', () => {
    expect(check(caPem)).toBeUndefined()
    const lines = caPem.replace(/\r\n/g, '\n').trimEnd().split('\n').length
    expect(check(`${caPem}${keyPem}`)).toMatchObject({status: 'fail', detail: `root-cert.pem: line ${lines + 1} is not part of a PEM CERTIFICATE block (only certificates may be there)`})
    expect(check(`${caPem}echo pwned\n`)?.detail).toBe(`root-cert.pem: line ${lines + 1} is not part of a PEM CERTIFICATE block (only certificates may be there)`)
    expect(check('')?.detail).toBe('root-cert.pem: holds no PEM CERTIFICATE block')
    expect(check('-----BEGIN CERTIFICATE-----\nAAAA\n-----END CERTIFICATE-----\n')?.detail).toBe('root-cert.pem: the PEM CERTIFICATE block ending on line 3 is not an X.509 certificate')
  })
})

describe('bundleCommand: the fix lines are commands that run as printed', () => {
  const env = {
    ISTIO_META_CLUSTER_ID: 'c1',
    ISTIO_META_WORKLOAD_NAME: 'web',
    POD_NAMESPACE: 'demo-vms',
    CA_ADDR: 'istiod-1-24.istio-system.svc:15012',
    ISTIO_META_AUTO_REGISTER_GROUP: 'web',
    ISTIO_META_DNS_CAPTURE: 'true',
  }
  it('names the group, namespace, revision, auto-registration and the directory checked', () => {
    expect(bundleCommand(env, {dir: './web-vm'})).toBe('meshvm bundle web -n demo-vms -r 1-24 --autoregister -d ./web-vm')
    expect(bundleCommand(env, {dir: "/tmp/it's here"}, ['--refresh-token'])).toBe(`meshvm bundle web -n demo-vms -r 1-24 --refresh-token -d '/tmp/it'"'"'s here'`)
  })
  it('an archive is written again into its directory with --archive; no DNS capture is kept', () => {
    const {ISTIO_META_DNS_CAPTURE: _, ...noDns} = env
    expect(bundleCommand({...noDns, CA_ADDR: 'istiod.istio-system.svc:15012'}, {archive: 'out/web-bundle.tar.gz'})).toBe(
      'meshvm bundle web -n demo-vms --autoregister --no-capture-dns -d out --archive',
    )
  })
  it('placeholders only for what the bundle does not say', () => {
    expect(bundleCommand({}, {dir: 'b'})).toBe('meshvm bundle NAME -n NS -d b')
    expect(offlineChecks(new Map(), {now: new Date(), warnWithinMs: 0, source: {dir: 'b'}}).checks[0]!.fix).toBe('meshvm bundle NAME -n NS -d b')
  })
})

describe('bundleCommand and offlineChecks: cluster.env names never reach a shell unquoted', () => {
  // biome-ignore lint/suspicious/noTemplateCurlyInString: the shell's ${HOME}, as a hostile cluster.env would hold it
  const hostile = 'web;touch${HOME}/pwned;'
  /** The words `sh` makes of the printed line (printf in place of meshvm: nothing runs but printf). */
  const shellWords = (line: string) =>
    execFileSync('sh', ['-c', line.replace(/^meshvm /, "printf '%s\\n' ")], {encoding: 'utf8'})
      .split('\n')
      .slice(0, -1)

  it('every word is quoted: sh reads back exactly the words bundleCommand was given', () => {
    const env = {ISTIO_META_WORKLOAD_NAME: hostile, POD_NAMESPACE: "a b'$(id)", CA_ADDR: 'istiod-1-24.istio-system.svc:15012'}
    const line = bundleCommand(env, {dir: 'out dir'}, ['--refresh-token'])
    expect(line).toBe(`meshvm bundle 'web;touch\${HOME}/pwned;' -n 'a b'"'"'$(id)' -r 1-24 --refresh-token -d 'out dir'`)
    expect(shellWords(line)).toEqual(['bundle', hostile, '-n', "a b'$(id)", '-r', '1-24', '--refresh-token', '-d', 'out dir'])
  })

  it('a group or namespace that is not a DNS-1123 name fails cluster-env (naming the field and file) and is not used', () => {
    // parseClusterEnv accepts it: single quotes keep the VM's shell from running it.
    const envText = `POD_NAMESPACE='Apps;id'\nSERVICE_ACCOUNT=web\nISTIO_META_CLUSTER_ID=c1\nISTIO_META_WORKLOAD_NAME='${hostile}'\n`
    expect(parseClusterEnv(envText).problems).toEqual([])
    const r = offlineChecks(new Map([['cluster.env', {data: Buffer.from(envText), mode: 0o644, symlink: false}]]), {now: new Date(), warnWithinMs: 0, source: {dir: 'b'}})
    const env = r.checks.find((c) => c.id === 'cluster-env')!
    expect(env.status).toBe('fail')
    expect(env.detail).toMatch(/^cluster\.env: POD_NAMESPACE "Apps;id" must be a DNS-1123 label.*; cluster\.env: ISTIO_META_WORKLOAD_NAME "web;touch\$\{HOME\}\/pwned;" must be a DNS-1123 subdomain/)
    expect(env.detail).not.toContain('\n')
    expect(r.env.ISTIO_META_WORKLOAD_NAME).toBeUndefined()
    expect(r.env.POD_NAMESPACE).toBeUndefined()
    expect(r.rerun).toBe('meshvm bundle NAME -n NS --no-capture-dns -d b')
    expect(env.fix).toBe(r.rerun)
  })
})

describe('liveChecks: the onboard line for a missing group', () => {
  it('quotes the group and namespace it names', async () => {
    const {liveChecks} = await import('../../src/lib/bundle-verify/live.js')
    const {ExitCode, MeshvmError} = await import('../../src/lib/errors.js')
    // Every read is a 404 (getOptional: nothing).
    const client = new Proxy(
      {},
      {
        get: (_, method) =>
          method === 'getOptional'
            ? async () => undefined
            : async () => {
                throw new MeshvmError('not found', {exit: ExitCode.NOT_FOUND, code: 'NotFound'})
              },
      },
    ) as never
    // The group name is checked before the read (fetchWorkloadGroup); the namespace is not.
    const env = {ISTIO_META_WORKLOAD_NAME: 'web', POD_NAMESPACE: 'a b;id', CA_ADDR: 'istiod.istio-system.svc:15012'}
    const checks = await liveChecks(client, {checks: [], env, rerun: 'R', refresh: 'F'}, {istioNamespace: 'istio-system', ingressService: 'istio-eastwestgateway'})
    expect(checks.find((c) => c.id === 'workloadgroup')?.fix).toBe(`recreate it (meshvm onboard web -n 'a b;id' --apply with its ports and labels), then: R`)
  })
})
