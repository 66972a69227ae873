/**
 * src/lib/cli/direct-run.ts runs most commands without oclif's Config.load, from the snapshot in
 * dist/commands.json. It must change nothing a user sees: for a matrix of command lines (successes,
 * usage errors, unknown flags and commands, did-you-mean, help flags, topics, aliases, `--`), the
 * built CLI prints the same bytes and exits with the same code with the direct path on and off
 * (MESHVM_NO_DIRECT_RUN=1). The id resolution is also checked against oclif's own.
 */
import {mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {Config} from '@oclif/core'
import {getHelpFlagAdditions, normalizeArgv} from '@oclif/core/help'
import {describe, expect, it} from 'vitest'
import {directCommandId, directRun, lightConfig, needsOclif, NOT_DIRECT, userPluginsFile, type DirectSnapshot} from '../../src/lib/cli/direct-run.js'
import {REPO_ROOT, runCli} from '../helpers/cli.js'

const snapshot = (): DirectSnapshot => JSON.parse(readFileSync(join(REPO_ROOT, 'dist/commands.json'), 'utf8')) as DirectSnapshot

const MATRIX: string[][] = [
  ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--probe-http', '8080/healthz'],
  ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-o', 'json'],
  ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-o', 'name', '--service-entry', '--host', 'web.example.com'],
  ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-a', 'note=hello world: yes', '-l', 'version=v1'],
  ['onboard', 'web', '-n', 'apps'],
  ['onboard', 'web', '-n', 'apps', '-p', 'http=99999'],
  ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--nope'],
  ['onboard', 'web', 'extra', '-n', 'apps', '-p', 'http=8080'],
  ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-o', 'xml'],
  ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--help'],
  ['onboard', '-h'],
  ['onboard', '--', '--help'],
  ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--dry-run'],
  ['onboard', 'web', '-n'],
  ['version'],
  ['version', '--short'],
  ['version', '-o', 'yaml'],
  ['version', 'extra'],
  ['version', '--bogus'],
  ['onbaord', 'web'],
  ['war'],
  ['war', 'lsit'],
  ['war', 'list', '--request-timeout', 'nope'],
  ['ps', '--bogus'],
  ['proxy-status', '--bogus'],
  ['bundle', 'verify'],
  ['create-remote-secret', '--bogus'],
  ['precheck', 'extra'],
  ['completion', 'zsh'],
  ['help', 'onboard'],
  [],
  ['--version'],
]

describe('direct run (no oclif Config.load)', () => {
  it('the built CLI prints the same bytes and exit code with and without it', async () => {
    const env = {NO_COLOR: '1', KUBECONFIG: join(REPO_ROOT, 'test/fixtures/does-not-exist'), MESHVM_NO_HELP_CACHE: '1'}
    for (const argv of MATRIX) {
      const [direct, oclif] = await Promise.all([runCli(argv, {env}), runCli(argv, {env: {...env, MESHVM_NO_DIRECT_RUN: '1'}})])
      expect(direct, argv.join(' ')).toEqual(oclif)
    }
  }, 120_000)

  it('resolves the command id as oclif does, or leaves the run to oclif', async () => {
    const config = await Config.load(REPO_ROOT)
    const snap = snapshot()
    expect(snap.commandIDs).toEqual(config.commandIDs)
    expect(snap.helpFlags).toEqual(getHelpFlagAdditions(config))
    expect([...snap.helpFlags].sort()).toEqual(['--help', '-h'])
    const words = ['onboard', 'war', 'list', 'bundle', 'verify', 'version', 'precheck', 'ps', 'help', 'web', '-n', 'a=b', '--x', 'extra', 'remote-secret', 'create']
    let direct = 0
    for (const a of words) {
      for (const b of [undefined, ...words]) {
        for (const c of [undefined, 'x', '-y']) {
          const argv = [a, b, c].filter((w): w is string => w !== undefined)
          const id = directCommandId(argv, snap)
          if (id === undefined) continue
          direct++
          // Where the direct path answers, oclif's resolution (its own normalizeArgv on a real Config) agrees.
          expect(normalizeArgv(config, [...argv])[0], argv.join(' ')).toBe(id)
          expect(normalizeArgv(lightConfig(snap) as never, [...argv])[0], argv.join(' ')).toBe(id)
        }
      }
    }
    expect(direct).toBeGreaterThan(50)
    expect(directCommandId(['bundle', 'verify'], snap)).toBeUndefined()
    expect(directCommandId(['war', 'list'], snap)).toBeUndefined()
    expect(directCommandId(['version', 'extra'], snap)).toBeUndefined()
    expect(NOT_DIRECT.has('help')).toBe(true)
  })

  it('leaves help flags, DEBUG and kubectl-plugin mode to oclif', () => {
    expect(needsOclif(['onboard', '-h'], {}, '/x/bin/run.js')).toBe(true)
    expect(needsOclif(['onboard', 'x', '--help', 'y'], {}, '/x/bin/run.js')).toBe(true)
    expect(needsOclif(['onboard', '--', '--help'], {}, '/x/bin/run.js')).toBe(false)
    expect(needsOclif(['onboard'], {DEBUG: '*'}, '/x/bin/run.js')).toBe(true)
    expect(needsOclif(['onboard'], {MESHVM_DEBUG: '1'}, '/x/bin/run.js')).toBe(true)
    expect(needsOclif(['onboard'], {}, '/usr/local/bin/kubectl-meshvm')).toBe(true)
    expect(needsOclif(['onboard'], {}, '/usr/local/bin/kubectl_complete-meshvm')).toBe(true)
    expect(needsOclif(['onboard'], {}, '/usr/local/bin/meshvm')).toBe(false)
    expect(needsOclif(['onboard', '-?'], {}, '/usr/local/bin/meshvm', ['--help', '-?'])).toBe(true)
  })

  it('runs the command class with argv after the id, or returns false', async () => {
    const runs: unknown[] = []
    class Fake {
      static id?: string
      constructor(
        readonly argv: string[],
        readonly config: {bin: string},
      ) {}
      async _run(): Promise<void> {
        runs.push([Fake.id, this.argv, this.config.bin])
      }
    }
    expect(await directRun(['version', '--short'], REPO_ROOT, {version: Fake}, {}, '/x/bin/run.js')).toBe(true)
    expect(runs).toEqual([['version', ['--short'], 'meshvm']])
    expect(await directRun(['version', '-h'], REPO_ROOT, {version: Fake}, {}, '/x/bin/run.js')).toBe(false)
    expect(await directRun(['version'], REPO_ROOT, {version: Fake}, {MESHVM_NO_DIRECT_RUN: '1'}, '/x/bin/run.js')).toBe(false)
    expect(await directRun(['help'], REPO_ROOT, {help: Fake}, {}, '/x/bin/run.js')).toBe(false)
    expect(runs).toHaveLength(1)
  })

  it("user plugins (a package.json in oclif's data dir) send the run through oclif", async () => {
    expect(userPluginsFile({HOME: '/h'}, 'linux')).toBe('/h/.local/share/meshvm/package.json')
    expect(userPluginsFile({HOME: '/h', XDG_DATA_HOME: '/x'}, 'linux')).toBe('/x/meshvm/package.json')
    expect(userPluginsFile({HOME: '/h', XDG_DATA_HOME: '/x', MESHVM_DATA_DIR: '/d'}, 'linux')).toBe('/d/package.json')
    const dir = mkdtempSync(join(tmpdir(), 'direct-run-'))
    try {
      class Fake {
        static id?: string
        async _run(): Promise<void> {}
      }
      const env = {MESHVM_DATA_DIR: dir}
      expect(await directRun(['version'], REPO_ROOT, {version: Fake}, env, '/x/bin/run.js')).toBe(true)
      writeFileSync(join(dir, 'package.json'), JSON.stringify({oclif: {plugins: []}}))
      expect(await directRun(['version'], REPO_ROOT, {version: Fake}, env, '/x/bin/run.js')).toBe(false)
      // The real Config reads the same file.
      const config = await Config.load(REPO_ROOT)
      expect(userPluginsFile(process.env)).toBe(join(config.dataDir, 'package.json'))
    } finally {
      rmSync(dir, {recursive: true, force: true})
    }
  })

  it('the light config says what the real one says', async () => {
    const config = await Config.load(REPO_ROOT)
    const light = lightConfig(snapshot())
    expect(light.bin).toBe(config.bin)
    expect(light.version).toBe(config.version)
    expect(light.userAgent).toBe(config.userAgent)
    expect(light.scopedEnvVarKeys('REDIRECTED')).toEqual(config.scopedEnvVarKeys('REDIRECTED'))
    expect(light.scopedEnvVarKey('REDIRECTED')).toBe(config.scopedEnvVarKey('REDIRECTED'))
  })
})
