/** bundle verify's offline part: cluster.env read as sh reads it (never run), the archive reader, the token checks. */
import {describe, expect, it} from 'vitest'
import {offlineChecks, parseClusterEnv, readTarGz, type BundleFiles} from '../../src/lib/bundle-verify/offline.js'
import {tarGz} from '../../src/lib/fs/tar.js'
import {istioShellQuote} from '../../src/lib/util/go-compat.js'

describe('parseClusterEnv', () => {
  it('reads what meshvm bundle writes back to the same values (istioShellQuote round trip)', () => {
    const values = {A: 'plain', B: '', C: 'with space', D: `it's`, E: '{"app":"web","v":"1"}', F: '$HOME `x`', G: 'a=b,c'}
    const text = Object.entries(values).map(([k, v]) => `${k}=${istioShellQuote(v)}`).join('\n') + '\n'
    expect(parseClusterEnv(text)).toEqual({values, problems: []})
  })

  it('mixes quoting as sh does, and skips comments and blank lines', () => {
    expect(parseClusterEnv(`# c\n\nA='x'"y"z\nexport B="q\\"r\\$s"\nC=a\\ b # trailing\n`)).toEqual({values: {A: 'xyz', B: 'q"r$s', C: 'a b'}, problems: []})
  })

  it('reports, never runs, what the shell would expand or execute', () => {
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
    const files = readTarGz(tarGz('web-bundle', [{name: 'istio-token', data: 'tok', mode: 0o600}, {name: 'hosts', data: '', mode: 0o644}], 0))
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
