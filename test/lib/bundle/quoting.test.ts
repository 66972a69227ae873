/**
 * The second wall against shell injection: even with values that validation would refuse (a newline,
 * `$( )`, backticks, quotes, semicolons, backslashes), the generated install.sh parses (`bash -n`),
 * and run by a real shell with a PATH of recording fakes it runs exactly its own commands, with each
 * value arriving as one intact argument; cluster.env sourced by a shell gives every value back
 * byte for byte; mesh.yaml parses back to the same strings. (test/faults/hostile-names.test.ts
 * proves the first wall: such values are refused before a token is issued.)
 */
import {execFileSync, spawnSync} from 'node:child_process'
import {chmodSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {parse} from 'yaml'
import {clusterEnvText, installScript, type BundleInputs} from '../../../src/lib/bundle/generate.js'
import {goYamlMarshal} from '../../../src/lib/util/go-compat.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-quoting-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))

const HOSTILE = [
  'web\ntouch pwned-newline',
  'web$(touch pwned-subst)',
  'web`touch pwned-backtick`',
  `web'"; touch pwned-quotes; echo "'`,
  'web; touch pwned-semicolon',
  'w\u0435b',
  'w\\',
  '\\',
  // biome-ignore lint/suspicious/noTemplateCurlyInString: a literal ${PATH} is the hostile value under test
  '$HOME ${PATH} *',
  // sed's delimiter, then its `e` command (GNU sed runs the rest of the line as a command).
  'x/;e touch pwned-sed;/',
]

/** A directory of fake commands that record their name and arguments (NUL-separated arguments, calls separated by RS: arguments may hold line breaks). */
function fakeBin(dir: string, log: string): string {
  const bin = join(dir, 'bin')
  mkdirSync(bin)
  // One record at a time: the commands of a pipeline (getent | awk) run at once, and a record is several
  // writes. The lock's mkdir/rmdir by absolute path: the script runs with only these fakes on PATH.
  const tool = (name: string) => execFileSync('sh', ['-c', `command -v ${name}`], {encoding: 'utf8'}).trim()
  const record = `#!/bin/sh\nuntil ${tool('mkdir')} '${log}.lock' 2>/dev/null; do :; done\n{ printf '%s\\0' "\${0##*/}" "$@"; printf '\\036'; } >> '${log}'\n${tool('rmdir')} '${log}.lock'\n`
  for (const cmd of ['install', 'grep', 'chown', 'systemctl', 'getent', 'sed', 'touch', 'rm', 'id', 'cat']) {
    writeFileSync(join(bin, cmd), record)
    chmodSync(join(bin, cmd), 0o755)
  }
  // date: long before the token's expiry; awk: the address getent would have found.
  writeFileSync(join(bin, 'date'), `${record}echo 1000\n`)
  writeFileSync(join(bin, 'awk'), `${record}echo 192.0.2.7\n`)
  chmodSync(join(bin, 'date'), 0o755)
  chmodSync(join(bin, 'awk'), 0o755)
  symlinkSync(execFileSync('sh', ['-c', 'command -v dirname'], {encoding: 'utf8'}).trim(), join(bin, 'dirname'))
  return bin
}

const calls = (log: string) =>
  readFileSync(log, 'utf8')
    .split('\x1e')
    .filter((l) => l !== '')
    .map((l) => l.split('\0').slice(0, -1))

let n = 0
function inputs(value: string, gateway: BundleInputs['gateway']): BundleInputs {
  return {
    workloadGroup: {metadata: {name: value, namespace: value}, spec: {}},
    meshConfigYaml: '',
    clusterId: value,
    rootCert: '',
    token: 't',
    tokenExpiry: new Date(2_000_000_000_000),
    istioNamespace: value,
    gateway,
    autoregister: false,
    captureDns: false,
  }
}

describe('install.sh with hostile values: parsed by bash, run by sh, nothing but its own commands', () => {
  for (const value of HOSTILE) {
    for (const gateway of ['ip', 'hostname'] as const) {
      it(`${JSON.stringify(value)} (gateway by ${gateway})`, () => {
        const dir = join(work, `s${++n}`)
        mkdirSync(dir)
        const log = join(dir, 'calls.log')
        writeFileSync(log, '')
        const hosts = join(dir, 'hosts-file')
        writeFileSync(hosts, '')
        const istiodHost = `istiod.${value}.svc`
        const script = installScript(inputs(value, gateway === 'ip' ? {kind: 'ip', address: '198.51.100.1'} : {kind: 'hostname', hostname: value}), istiodHost)
        // The one change for the test: the script edits the machine's /etc/hosts, here a file of the test.
        writeFileSync(join(dir, 'install.sh'), script.replaceAll('/etc/hosts', hosts))
        expect(spawnSync('bash', ['-n', join(dir, 'install.sh')], {encoding: 'utf8'}).status).toBe(0)
        const res = spawnSync('/bin/sh', [join(dir, 'install.sh')], {cwd: dir, encoding: 'utf8', env: {PATH: fakeBin(dir, log)}})
        expect(res.stderr).toBe('')
        expect(res.status).toBe(0)
        expect(readdirSync(dir).filter((f) => f.startsWith('pwned'))).toEqual([])
        // The two sides of the getent | awk pipeline run at once: their order in the log is not fixed.
        const got = calls(log).sort((a, b) => (a[0] === 'awk' && b[0] === 'getent' ? 1 : a[0] === 'getent' && b[0] === 'awk' ? -1 : 0))
        const names = got.map((c) => c[0])
        if (gateway === 'ip') {
          expect(names).toEqual(['date', 'install', 'install', 'install', 'install', 'install', 'grep', 'chown', 'systemctl', 'systemctl'])
          // The /etc/hosts line is one argument, exactly the entry.
          expect(got[6]).toEqual(['grep', '-qxF', `198.51.100.1 ${istiodHost}`, hosts])
        } else {
          expect(names).toEqual(['date', 'install', 'install', 'install', 'install', 'install', 'getent', 'awk', 'sed', 'chown', 'systemctl', 'systemctl'])
          expect(got[6]).toEqual(['getent', 'ahosts', value])
          expect(got[8]![0]).toBe('sed')
          expect(got[8]!.slice(1, 2)).toEqual(['-i'])
          expect(readFileSync(hosts, 'utf8')).toBe(`192.0.2.7 ${istiodHost}\n`)
          // The real sed, with the expression the script gave it, on a hosts file: it deletes the
          // line of this istiod host and nothing else, and runs nothing.
          const realHosts = join(dir, 'real-hosts')
          // (A host with a line break cannot be one line of a hosts file: there, only "runs nothing" is checked.)
          const line = istiodHost.includes('\n') ? 'istiod.web' : istiodHost
          writeFileSync(realHosts, `10.0.0.1 other.host\n192.0.2.1 ${line}\n10.0.0.2 x${line}y\n`)
          execFileSync('sed', ['-i', got[8]![2]!, realHosts], {cwd: dir})
          expect(readFileSync(realHosts, 'utf8')).toBe(istiodHost.includes('\n') ? `10.0.0.1 other.host\n192.0.2.1 ${line}\n10.0.0.2 x${line}y\n` : `10.0.0.1 other.host\n10.0.0.2 x${line}y\n`)
          expect(readdirSync(dir).filter((f) => f.startsWith('pwned'))).toEqual([])
        }
        // Every call is one of the script's own: no fake was run with a value as its name.
        expect(names.every((name) => ['date', 'install', 'grep', 'chown', 'systemctl', 'getent', 'awk', 'sed'].includes(name!))).toBe(true)
      })
    }
  }
})

describe('cluster.env with hostile values: a shell that sources it gets every value back', () => {
  it('each value byte for byte, no command run', () => {
    const dir = join(work, 'env')
    mkdirSync(dir)
    const log = join(dir, 'calls.log')
    writeFileSync(log, '')
    const env = Object.fromEntries(HOSTILE.map((v, i) => [`V${i}`, v]))
    writeFileSync(join(dir, 'cluster.env'), clusterEnvText(env))
    const keys = Object.keys(env)
    const res = spawnSync('/bin/sh', ['-c', `. ./cluster.env; printf '%s\\0' ${keys.map((k) => `"$${k}"`).join(' ')}`], {cwd: dir, encoding: 'utf8', env: {PATH: fakeBin(dir, log)}})
    expect(res.stderr).toBe('')
    expect(res.stdout.split('\0').slice(0, -1)).toEqual(HOSTILE)
    expect(readFileSync(log, 'utf8')).toBe('')
    expect(readdirSync(dir).filter((f) => f.startsWith('pwned'))).toEqual([])
  })

  it("quotes a value ending in a backslash, which Istio's pattern leaves bare (a line continuation)", () => {
    expect(clusterEnvText({A: 'w\\', B: 'x'})).toBe("A='w\\'\nB='x'\n")
  })
})

describe('mesh.yaml with hostile values', () => {
  it('parses back to the same strings', () => {
    const value = Object.fromEntries(HOSTILE.map((v, i) => [`k${i}`, v]))
    expect(parse(goYamlMarshal({defaultConfig: {proxyMetadata: value}}))).toEqual({defaultConfig: {proxyMetadata: value}})
  })
})
