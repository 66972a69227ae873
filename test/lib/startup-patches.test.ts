/**
 * What scripts/build.mjs does to the bundle for start-up keeps behaviour: oclif's debug logging still
 * works when DEBUG asks for it (its `debug` library is loaded only then), colour is still detected on
 * a terminal (supports-color reads isTTY instead of loading node:tty), errors are coloured when asked
 * for, and the bundles are pure ASCII (bin/load.cjs reads them as one-byte strings).
 */
import {execFileSync} from 'node:child_process'
import {existsSync, readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'
import {REPO_ROOT, runCli} from '../helpers/cli.js'

const ONBOARD = ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-o', 'name']

describe('start-up patches (scripts/build.mjs)', () => {
  it('oclif logs to stderr with DEBUG set, and not without', async () => {
    const [debug, quiet] = await Promise.all([runCli(ONBOARD, {env: {DEBUG: 'oclif:*'}}), runCli(ONBOARD, {env: {DEBUG: undefined}})])
    expect(debug.code).toBe(0)
    expect(debug.stderr).toMatch(/oclif:main process\.argv/)
    expect(debug.stdout).toBe(quiet.stdout)
    expect(quiet).toEqual({code: 0, stdout: 'workloadgroup.networking.istio.io/web\nservice/web\n', stderr: ''})
  })

  // On a terminal, oclif's help has bold headers; through a pipe it has none.
  it.skipIf(!existsSync('/usr/bin/script'))('colour is still detected on a terminal (script(1) gives the CLI one)', () => {
    const env: NodeJS.ProcessEnv = {...process.env, TERM: 'xterm', MESHVM_NO_HELP_CACHE: '1'}
    // supports-color gives no colour under CI=true (and other CI markers) even on a terminal: CI sets it.
    for (const name of ['NO_COLOR', 'FORCE_COLOR', 'DEBUG', 'CI', 'CONTINUOUS_INTEGRATION', 'BUILD_NUMBER', 'RUN_ID', 'GITHUB_ACTIONS', 'GITLAB_CI', 'TF_BUILD', 'TEAMCITY_VERSION']) delete env[name]
    const command = `${JSON.stringify(process.execPath)} ${JSON.stringify(join(REPO_ROOT, 'bin/run.js'))} war --help`
    const terminal = execFileSync('/usr/bin/script', ['-qec', command, '/dev/null'], {env, encoding: 'utf8'})
    expect(terminal).toContain('\x1b[1mUSAGE\x1b[22m')
    const piped = execFileSync(process.execPath, [join(REPO_ROOT, 'bin/run.js'), 'war', '--help'], {env, encoding: 'utf8'})
    expect(piped).toContain('USAGE')
    expect(piped).not.toContain('\x1b')
  })

  it('errors are red with FORCE_COLOR and plain with NO_COLOR', async () => {
    const argv = ['onboard', 'web', '-n', 'apps', '-p', 'http=99999']
    const [coloured, plain] = await Promise.all([runCli(argv, {env: {FORCE_COLOR: '1', NO_COLOR: undefined}}), runCli(argv, {env: {FORCE_COLOR: undefined}})])
    expect(coloured.stderr.startsWith('\x1b[31mError:\x1b[39m --port')).toBe(true)
    expect(plain.stderr.startsWith('Error: --port')).toBe(true)
    expect(coloured.code).toBe(plain.code)
  })

  it('the bundles are pure ASCII', () => {
    const files = ['dist/meshvm.cjs', ...readdirSync(join(REPO_ROOT, 'dist/vendor')).map((f) => `dist/vendor/${f}`)]
    for (const file of files)
      expect(
        readFileSync(join(REPO_ROOT, file)).every((b) => b < 0x80),
        file,
      ).toBe(true)
  })
})
