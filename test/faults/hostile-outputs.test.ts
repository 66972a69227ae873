/**
 * Output paths that cannot be created (under /proc, below a regular file) fail at once with one true
 * line, through every command that writes; credentials written inside a git work tree that does not
 * ignore them are named on stderr (and nothing changes when git is missing).
 */
import {execFileSync} from 'node:child_process'
import {existsSync, mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, afterEach, beforeEach, describe, expect, it} from 'vitest'
import {STACK_TRACE, type CliResult} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {logFault} from './hostile.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-hostile-outputs-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))
writeFileSync(join(work, 'afile'), 'a regular file')

// create-remote-secret prints notes and warnings first (the test server's 127.0.0.1 address, the reader account).
const first = (res: CliResult) => {
  const errors = res.stderr.split('\n').filter((l) => l.startsWith('Error: '))
  expect(errors).toHaveLength(1)
  return errors[0]
}
function expectOneLine(res: CliResult, code: number, line: string): void {
  expect(first(res)).toBe(line)
  expect(res.code).toBe(code)
  expect(res.stderr).not.toMatch(STACK_TRACE)
  expect(res.stderr).not.toMatch(/mkdtemp|ENOENT|scandir/)
}

describe('outputs that cannot be created', () => {
  it('onboard -d under /proc or below a regular file: one line, no endless mkdir', async () => {
    logFault('hangs and limits', 'output directory under /proc', 'onboard')
    // A run with another working directory is a process (runCli), killed if it does not end: a hang
    // would show as a signal exit, not as these lines.
    const proc = await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-d', '/proc/nope'], {cwd: work})
    expectOneLine(proc, 1, 'Error: cannot write /proc/nope: cannot create directory /proc/nope: /proc does not allow new files or directories')
    const below = await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-d', 'afile/x'], {cwd: work})
    expectOneLine(below, 2, 'Error: cannot write afile/x: afile is a file, not a directory')
  })

  it('a code cache directory under /proc costs only speed: the command ends normally', async () => {
    logFault('hangs and limits', 'XDG_CACHE_HOME under /proc', 'version')
    const res = await runCommand(['version'], {env: {XDG_CACHE_HOME: '/proc/nope', MESHVM_NO_COMPILE_CACHE: undefined}})
    expect(res).toEqual({code: 0, stdout: 'client version: 0.1.0\n', stderr: ''})
  })

  describe('against a cluster', () => {
    let cluster: TestCluster
    beforeEach(async () => {
      cluster = await startCluster()
      cluster.mesh.watchNamespace('apps')
    })
    afterEach(() => cluster?.stop())

    it('create-remote-secret --output-file and bundle -d under /proc or below a regular file', async () => {
      logFault('hangs and limits', 'output file under /proc', 'create-remote-secret')
      const secret = (file: string) => runCommand(['create-remote-secret', '--name', 'c1', '--output-file', file], {env: cluster.env, cwd: work, stdoutMayHoldSecrets: true})
      expectOneLine(await secret('afile/x'), 2, 'Error: cannot write afile/x: afile is a file, not a directory')
      // Known before anything is created: no service account, no token.
      expect(cluster.store.get('/serviceaccounts', 'istio-system', 'istio-reader-service-account')).toBeUndefined()
      expectOneLine(await secret('/proc/nope/x'), 1, 'Error: cannot write /proc/nope/x: cannot create directory /proc/nope: /proc does not allow new files or directories')
      expect((await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--apply'], {env: cluster.env})).code).toBe(0)
      const bundle = (dir: string) => runCommand(['bundle', 'web', '-n', 'apps', '-d', dir], {env: cluster.env, cwd: work})
      expectOneLine(await bundle('/proc/nope'), 1, 'Error: cannot write /proc/nope: /proc does not allow new files or directories')
      expectOneLine(await bundle('afile/x'), 2, 'Error: cannot write afile/x: afile is a file, not a directory')
      // Known before the token: only the /proc run (which only writing can tell) asked for one.
      expect(cluster.requests.filter((r) => r.method === 'POST' && r.path.startsWith('/api/v1/namespaces/apps/') && r.path.endsWith('/token'))).toHaveLength(1)
    })

    it('a credential inside a git work tree that does not ignore it is named on stderr; ignored, or without git, nothing is said', async () => {
      logFault('secrets and terminals', 'credential written into a git work tree', 'bundle')
      const repo = join(work, 'repo')
      mkdirSync(repo)
      execFileSync('git', ['init', '-q', repo])
      expect((await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--apply'], {env: cluster.env})).code).toBe(0)
      const bundle = (env: Record<string, string> = {}) => runCommand(['bundle', 'web', '-n', 'apps', '-d', 'web-vm'], {env: {...cluster.env, ...env}, cwd: repo})
      const secret = (env: Record<string, string> = {}) =>
        runCommand(['create-remote-secret', '--name', 'c1', '--output-file', 'c1-secret.yaml'], {env: {...cluster.env, ...env}, cwd: repo, stdoutMayHoldSecrets: true})

      const exposed = await bundle()
      expect(exposed.code).toBe(0)
      const warnings = exposed.stderr.split('\n').filter((l) => l.startsWith('Warning: '))
      expect(warnings).toHaveLength(1)
      // Through the bundle link, the file git would add is the one in the version directory.
      expect(warnings[0]).toMatch(
        /^Warning: web-vm\/istio-token holds a credential inside the git work tree \S+\/repo, which does not ignore \.web-vm\.meshvm-\d+-[A-Za-z0-9]{6}\/istio-token: `git add -A` would commit it \(add it to \.gitignore, or write it outside the work tree\)$/,
      )
      const remote = await secret()
      expect(remote.code).toBe(0)
      expect(remote.stderr).toMatch(/^Warning: c1-secret\.yaml holds a credential inside the git work tree \S+\/repo, which does not ignore c1-secret\.yaml: /m)

      writeFileSync(join(repo, '.gitignore'), '.web-vm.meshvm-*\nc1-secret.yaml\n')
      for (const res of [await bundle(), await secret()]) {
        expect(res.code).toBe(0)
        expect(res.stderr).not.toMatch(/holds a credential/)
      }

      // No git on PATH: no warning, and the write succeeds.
      rmSync(join(repo, '.gitignore'))
      const empty = join(work, 'empty-path')
      mkdirSync(empty)
      for (const res of [await bundle({PATH: empty}), await secret({PATH: empty})]) {
        expect(res.code).toBe(0)
        expect(res.stderr).not.toMatch(/holds a credential/)
      }
      expect(existsSync(join(repo, 'web-vm', 'istio-token'))).toBe(true)
      expect(readFileSync(join(repo, 'c1-secret.yaml'), 'utf8')).toContain('kind: Secret')
    })
  })
})
