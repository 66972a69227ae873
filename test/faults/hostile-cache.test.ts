/**
 * bin/load.cjs's V8 code cache against a planted cache directory: a symlink or FIFO where the cache
 * file goes, a cache directory that is a symlink or writable by others. The cache must never be
 * read or written through any of them (and a FIFO must not hang start-up).
 */
import {chmodSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, symlinkSync, unlinkSync, writeFileSync} from 'node:fs'
import {execFileSync} from 'node:child_process'
import {createRequire} from 'node:module'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterEach, beforeEach, describe, expect, it} from 'vitest'
import {REPO_ROOT} from '../helpers/cli.js'
import {logFault} from './hostile.js'

const {loadBundle} = createRequire(import.meta.url)(join(REPO_ROOT, 'bin/load.cjs')) as {
  loadBundle: (bundle: string) => {exports: {value?: number}; saveCache: (command?: string) => void}
}

let dir: string
const saved = {xdg: process.env.XDG_CACHE_HOME, off: process.env.MESHVM_NO_COMPILE_CACHE}
beforeEach(() => {
  dir = mkdtempSync(join(tmpdir(), 'meshvm-hostile-cache-'))
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

/** A bundle run once, so its cache file exists; returns the bundle and the cache file's path. */
function primed(): {bundle: string; cache: string} {
  const bundle = join(dir, 'b.cjs')
  writeFileSync(bundle, `'use strict'\nmodule.exports = {value: 7}\n`)
  loadBundle(bundle).saveCache('x')
  const [name] = readdirSync(join(dir, 'cache', 'meshvm'))
  return {bundle, cache: join(dir, 'cache', 'meshvm', name!)}
}

describe('files: the code cache never follows what is planted in its directory', () => {
  it('a symlink at the cache file is neither read nor written through', () => {
    logFault('files', 'symlink planted in the code cache dir', 'bin/load.cjs')
    const {bundle, cache} = primed()
    const victim = join(dir, 'victim')
    writeFileSync(victim, 'precious')
    unlinkSync(cache)
    symlinkSync(victim, cache)
    const loaded = loadBundle(bundle)
    expect(loaded.exports.value).toBe(7)
    loaded.saveCache('y')
    expect(readFileSync(victim, 'utf8')).toBe('precious')
    expect(lstatSync(cache).isFile()).toBe(true)
  })

  it('a FIFO at the cache file does not hang start-up', () => {
    logFault('files', 'FIFO planted as the code cache', 'bin/load.cjs')
    const {bundle, cache} = primed()
    unlinkSync(cache)
    execFileSync('mkfifo', [cache])
    expect(loadBundle(bundle).exports.value).toBe(7)
  })

  it('a cache directory that is a symlink, or writable by others, is not used', () => {
    logFault('files', 'symlinked or shared code cache dir', 'bin/load.cjs')
    const elsewhere = join(dir, 'elsewhere')
    mkdirSync(elsewhere)
    mkdirSync(join(dir, 'cache'))
    symlinkSync(elsewhere, join(dir, 'cache', 'meshvm'))
    const bundle = join(dir, 'b.cjs')
    writeFileSync(bundle, `'use strict'\nmodule.exports = {value: 8}\n`)
    loadBundle(bundle).saveCache('x')
    expect(readdirSync(elsewhere)).toEqual([])

    unlinkSync(join(dir, 'cache', 'meshvm'))
    mkdirSync(join(dir, 'cache', 'meshvm'))
    chmodSync(join(dir, 'cache', 'meshvm'), 0o777)
    loadBundle(bundle).saveCache('x')
    expect(readdirSync(join(dir, 'cache', 'meshvm'))).toEqual([])
  })
})
