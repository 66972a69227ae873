/**
 * bin/help-cache.cjs: help pre-rendered at build time is printed only when it is, byte for byte, what
 * oclif prints for the same invocation; everything it cannot serve (another width, a user theme,
 * kubectl-plugin mode, flags, unknown words) goes to oclif.
 */
import {mkdirSync, mkdtempSync, readFileSync, rmSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {OUTER_ENV, REPO_ROOT, runCli} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'

type Stdout = {isTTY?: boolean; getWindowSize?: () => [number, number]}
const {cachedHelp} = createRequire(import.meta.url)(join(REPO_ROOT, 'bin/help-cache.cjs')) as {
  cachedHelp: (argv: string[], env?: NodeJS.ProcessEnv, stdout?: Stdout, script?: string) => string | undefined
}

const cache = JSON.parse(readFileSync(join(REPO_ROOT, 'dist/help.json'), 'utf8')) as {columns: number; bin: string; version: string; texts: Record<string, string>}
const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'oclif.manifest.json'), 'utf8')) as {commands: Record<string, {hidden?: boolean}>}

const work = mkdtempSync(join(tmpdir(), 'meshvm-help-cache-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))
// No user theme, whatever the machine running the tests has.
const env = {XDG_CONFIG_HOME: join(work, 'config'), MESHVM_CONFIG_DIR: undefined, OCLIF_COLUMNS: undefined, DEBUG: undefined, FORCE_COLOR: undefined}
const pipe: Stdout = {isTTY: false}
/** The cache's answer in this test's environment plus `extra` (undefined: unset, as in process.env). */
const served = (argv: string[], extra: NodeJS.ProcessEnv = {}, stdout: Stdout = pipe, script = join(REPO_ROOT, 'bin/run.js')) => {
  // The test's own environment: process.env is a command's while one runs in this process (runCommand).
  const merged: NodeJS.ProcessEnv = {...OUTER_ENV, ...env, ...extra}
  for (const [k, v] of Object.entries(merged)) if (v === undefined) delete merged[k]
  return cachedHelp(argv, merged, stdout, script)
}
/** oclif's own help for `argv`: the bundle's main() in this process (bin/run.js's cache is not in the way). */
const oclif = (argv: string[], extra: Record<string, string | undefined> = {}) => runCommand(argv, {env: {...env, MESHVM_NO_HELP_CACHE: '1', ...extra}})

const forms = (id: string): string[][] => {
  const words = id ? id.split(':') : []
  return [
    [...words, '--help'],
    [...words, '-h'],
    ['help', ...words],
  ]
}

describe('pre-rendered help (bin/help-cache.cjs)', () => {
  it('holds the root, every topic and every visible command', () => {
    const ids = Object.entries(manifest.commands)
      .filter(([, c]) => !c.hidden)
      .map(([id]) => id)
    const topics = ids.flatMap((id) => id.split(':').slice(0, -1))
    expect(Object.keys(cache.texts).sort()).toEqual([...new Set(['', ...topics, ...ids])].sort())
    expect(cache.columns).toBe(80)
  })

  describe.concurrent('is what oclif prints, byte for byte', () => {
    it.each(Object.keys(cache.texts).flatMap((id) => forms(id).map((argv): [string, string[]] => [argv.join(' '), argv])))('%s', async (_name, argv) => {
      const text = served(argv)
      expect(text).toBeDefined()
      const r = await oclif(argv)
      expect(r.code, r.stderr).toBe(0)
      expect(r.stderr).toBe('')
      expect(text).toBe(r.stdout)
    })
  })

  it('is what the CLI prints (through the cache) for a help invocation', async () => {
    const [viaCache, viaOclif] = await Promise.all([runCli(['war', 'list', '--help'], {env}), oclif(['war', 'list', '--help'])])
    expect(viaCache.code).toBe(0)
    expect(viaCache.stdout).toBe(viaOclif.stdout)
    expect(viaCache.stdout).toBe(cache.texts['war:list'])
  })

  it("stores the root help without the build machine's Node: its VERSION line is the Node that prints it", () => {
    expect(cache.texts['']).toContain('\u0000USER_AGENT\u0000')
    expect(JSON.stringify(cache.texts)).not.toMatch(/node-v\d/)
    expect(served(['--help'], {FORCE_COLOR: '0'})).toContain(`\n  meshvm/${cache.version} ${process.platform}-${process.arch} node-${process.version}\n`)
  })

  it('serves an 80-column terminal without colour, and OCLIF_COLUMNS=80', () => {
    const tty80 = {isTTY: true, getWindowSize: (): [number, number] => [80, 24]}
    const rootHelp = served(['--help'], {FORCE_COLOR: '0'})
    expect(rootHelp).toBeDefined()
    expect(served(['--help'], {FORCE_COLOR: '0'}, tty80)).toBe(rootHelp)
    expect(served(['--help'], {FORCE_COLOR: undefined, TERM: 'dumb'}, tty80)).toBe(rootHelp)
    expect(served(['--help'], {FORCE_COLOR: 'false', OCLIF_COLUMNS: '80'}, {isTTY: true, getWindowSize: () => [120, 24]})).toBe(rootHelp)
  })

  it('leaves colour to oclif (bold headers)', async () => {
    expect(served(['war', 'list', '--help'], {FORCE_COLOR: '1'})).toBeUndefined()
    expect(served(['war', 'list', '--help'], {FORCE_COLOR: ''})).toBeUndefined()
    const colour = {FORCE_COLOR: '3', NO_COLOR: undefined}
    const [viaCli, viaOclif] = await Promise.all([runCli(['war', 'list', '--help'], {env: {...env, ...colour}}), oclif(['war', 'list', '--help'], colour)])
    expect(viaCli.stdout).toContain('\x1b[1mUSAGE')
    expect(viaCli.stdout).toBe(viaOclif.stdout)
  })

  it('leaves other widths to oclif, which wraps at that width', async () => {
    expect(served(['onboard', '--help'], {OCLIF_COLUMNS: '120'})).toBeUndefined()
    expect(served(['onboard', '--help'], {}, {isTTY: true, getWindowSize: () => [132, 40]})).toBeUndefined()
    // A terminal narrower than 40 columns is 40 for oclif, never 80.
    expect(served(['onboard', '--help'], {}, {isTTY: true, getWindowSize: () => [30, 40]})).toBeUndefined()
    const wide = await runCli(['onboard', '--help'], {env: {...env, OCLIF_COLUMNS: '120'}})
    expect(wide.code).toBe(0)
    expect(wide.stdout).not.toBe(cache.texts.onboard)
    expect(wide.stdout).toBe((await oclif(['onboard', '--help'], {OCLIF_COLUMNS: '120'})).stdout)
  })

  it('leaves a user theme to oclif (MESHVM_CONFIG_DIR or XDG_CONFIG_HOME/meshvm)', () => {
    const themed = join(work, 'themed')
    mkdirSync(join(themed, 'meshvm'), {recursive: true})
    writeFileSync(join(themed, 'meshvm', 'theme.json'), '{"command": "cyan"}')
    expect(served(['--help'], {XDG_CONFIG_HOME: themed})).toBeUndefined()
    expect(served(['--help'], {MESHVM_CONFIG_DIR: join(themed, 'meshvm')})).toBeUndefined()
    expect(served(['--help'], {XDG_CONFIG_HOME: join(work, 'none')})).toBe(served(['--help'], {FORCE_COLOR: '0'}))
  })

  it('leaves kubectl-plugin mode, DEBUG, flags, colon ids and unknown words to oclif', () => {
    expect(served(['war', 'list', '-h'], {}, pipe, '/usr/local/bin/kubectl-meshvm')).toBeUndefined()
    expect(served(['war', 'list', '-h'], {}, pipe, '/usr/local/bin/kubectl_complete-meshvm')).toBeUndefined()
    expect(served(['--help'], {DEBUG: '*'})).toBeUndefined()
    expect(served(['--help'], {MESHVM_NO_HELP_CACHE: '1'})).toBeUndefined()
    expect(served(['onboard', '--no-color', '--help'])).toBeUndefined()
    expect(served(['war:list', '--help'])).toBeUndefined()
    expect(served(['onboard', 'web', '--help'])).toBeUndefined()
    expect(served(['war', 'lsit', '--help'])).toBeUndefined()
    expect(served(['help', 'constructor'])).toBeUndefined()
    expect(served(['onboard'])).toBeUndefined()
  })
})
