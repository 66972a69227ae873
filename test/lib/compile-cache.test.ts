/**
 * bin/load.cjs: bundles load through a V8 code cache kept per installed copy, and an upgrade
 * replaces that copy's cache instead of piling up a new one per build.
 */
import {mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, utimesSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterEach, beforeEach, describe, expect, it} from 'vitest'
import {REPO_ROOT, runCli} from '../helpers/cli.js'

const {loadBundle} = createRequire(import.meta.url)(join(REPO_ROOT, 'bin/load.cjs')) as {
  loadBundle: (bundle: string, slot?: string) => {exports: {value?: number}; saveCache: (command?: string) => void}
}

let dir: string
const saved = {xdg: process.env.XDG_CACHE_HOME, off: process.env.MESHVM_NO_COMPILE_CACHE}

beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'meshvm-cache-'))
  process.env.XDG_CACHE_HOME = join(dir, 'cache')
  delete process.env.MESHVM_NO_COMPILE_CACHE
})
afterEach(() => {
  rmSync(dir, {recursive: true, force: true})
  for (const [key, value] of [
    ['XDG_CACHE_HOME', saved.xdg],
    ['MESHVM_NO_COMPILE_CACHE', saved.off],
  ] as const) {
    if (value === undefined) delete process.env[key]
    else process.env[key] = value
  }
})

function writeBundle(path: string, value: number, mtime: number): void {
  writeFileSync(path, `'use strict'\nmodule.exports = {value: ${value}}\n`)
  utimesSync(path, mtime, mtime)
}

const caches = () => readdirSync(join(dir, 'cache', 'meshvm')).sort()
const header = (file: string) =>
  readFileSync(join(dir, 'cache', 'meshvm', file))
    .toString('latin1')
    .split('\n')[0]

describe('V8 code cache (bin/load.cjs)', () => {
  it('writes one private cache per bundle after the first run and reuses it', () => {
    const bundle = join(dir, 'app.cjs')
    writeBundle(bundle, 1, 1_700_000_000)
    const first = loadBundle(bundle)
    expect(first.exports.value).toBe(1)
    first.saveCache()
    const [file] = caches()
    expect(caches()).toHaveLength(1)
    expect(file).toMatch(/^app-[0-9a-z]+-[0-9a-z]+-[0-9a-z]+-v\d+\.\d+\.\d+\.v8cache$/)
    expect(statSync(join(dir, 'cache', 'meshvm', file!)).mode & 0o777).toBe(0o600)
    const written = statSync(join(dir, 'cache', 'meshvm', file!)).mtimeMs
    const second = loadBundle(bundle)
    expect(second.exports.value).toBe(1)
    second.saveCache()
    expect(caches()).toEqual([file])
    expect(statSync(join(dir, 'cache', 'meshvm', file!)).mtimeMs).toBe(written)
  })

  it('replaces the cache of an upgraded bundle and keeps those of other installed copies', () => {
    const bundle = join(dir, 'app.cjs')
    const other = join(dir, 'other', 'app.cjs')
    writeBundle(bundle, 1, 1_700_000_000)
    loadBundle(bundle).saveCache()
    // Another copy of the same bundle, installed elsewhere.
    mkdirSync(join(dir, 'other'))
    writeBundle(other, 2, 1_700_000_000)
    loadBundle(other).saveCache()
    expect(caches()).toHaveLength(2)
    const before = caches()

    writeBundle(bundle, 30, 1_800_000_000) // the upgrade: new size and mtime
    const upgraded = loadBundle(bundle)
    expect(upgraded.exports.value).toBe(30)
    upgraded.saveCache()
    const after = caches()
    expect(after).toHaveLength(2)
    const otherCache = before.find((f) => after.includes(f))
    expect(otherCache, 'the other copy keeps its cache').toBeDefined()
    expect(after.filter((f) => !before.includes(f))).toHaveLength(1)
  })

  it('grows to cover each command that runs, once, and rebuilds a damaged cache', () => {
    const bundle = join(dir, 'app.cjs')
    writeBundle(bundle, 1, 1_700_000_000)
    loadBundle(bundle).saveCache('onboard')
    const [file] = caches()
    expect(header(file!)).toBe('meshvm-v8cache 1 ["onboard"]')
    const path = join(dir, 'cache', 'meshvm', file!)
    const written = statSync(path).mtimeMs
    loadBundle(bundle).saveCache('onboard')
    expect(statSync(path).mtimeMs, 'a command already seen does not rewrite it').toBe(written)
    loadBundle(bundle).saveCache('war:list')
    expect(header(file!)).toBe('meshvm-v8cache 1 ["onboard","war:list"]')
    writeFileSync(path, 'garbage')
    const loaded = loadBundle(bundle)
    expect(loaded.exports.value).toBe(1)
    loaded.saveCache('war:list')
    expect(header(file!)).toBe('meshvm-v8cache 1 ["war:list"]')
  })

  it('writes nothing with MESHVM_NO_COMPILE_CACHE=1', () => {
    process.env.MESHVM_NO_COMPILE_CACHE = '1'
    const bundle = join(dir, 'app.cjs')
    writeBundle(bundle, 1, 1_700_000_000)
    const loaded = loadBundle(bundle)
    loaded.saveCache()
    expect(loaded.exports.value).toBe(1)
    expect(() => caches()).toThrow(/ENOENT/)
  })

  it('keeps one cache per slot, each growing on its own; an upgrade replaces every slot of that copy', () => {
    const bundle = join(dir, 'app.cjs')
    writeBundle(bundle, 1, 1_700_000_000)
    loadBundle(bundle, 'onboard').saveCache('onboard')
    loadBundle(bundle, 'war').saveCache('war:list')
    loadBundle(bundle, 'war').saveCache('war:describe')
    const files = caches()
    expect(files).toHaveLength(2)
    expect(files.map((f) => f.replace(/^app-[0-9a-z]+-/, '').split('.')[0]).sort()).toEqual(['onboard', 'war'])
    expect(header(files.find((f) => f.includes('-onboard.'))!)).toBe('meshvm-v8cache 1 ["onboard"]')
    expect(header(files.find((f) => f.includes('-war.'))!)).toBe('meshvm-v8cache 1 ["war:list","war:describe"]')
    // Reused: a second onboard run does not rewrite its slot.
    const onboard = join(dir, 'cache', 'meshvm', files.find((f) => f.includes('-onboard.'))!)
    const written = statSync(onboard).mtimeMs
    loadBundle(bundle, 'onboard').saveCache('onboard')
    expect(statSync(onboard).mtimeMs).toBe(written)

    writeBundle(bundle, 30, 1_800_000_000) // the upgrade
    const upgraded = loadBundle(bundle, 'war')
    expect(upgraded.exports.value).toBe(30)
    upgraded.saveCache('war:list')
    const after = caches()
    expect(after).toHaveLength(1)
    expect(after[0]).toMatch(/-war\./)
    expect(after.some((f) => files.includes(f))).toBe(false)
  })

  it('the CLI picks the slot from the command word; anything else shares the `meshvm` slot', async () => {
    const env = {XDG_CACHE_HOME: join(dir, 'cache'), MESHVM_NO_COMPILE_CACHE: undefined}
    const onboard = await runCli(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-o', 'name'], {env})
    expect(onboard.code).toBe(0)
    const typo = await runCli(['onbaord', 'web'], {env})
    expect(typo.code).not.toBe(0)
    const slots = caches()
      .map((f) => /^meshvm-[0-9a-z]+-([a-z0-9-]+)\./.exec(f)?.[1])
      .sort()
    expect(slots).toEqual(['meshvm', 'onboard'])
  }, 60_000)
})
