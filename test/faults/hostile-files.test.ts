/**
 * Hostile file systems against src/lib/fs: symlinks and special files where meshvm writes, a full
 * disk (RLIMIT_FSIZE: writes fail with EFBIG part-way), a target that cannot be placed, kill -9 at
 * every step of a bundle write, and long names in --archive tarballs.
 */
import {execFileSync, spawn, spawnSync} from 'node:child_process'
import fs from 'node:fs'
import {copyFileSync, cpSync, existsSync, lstatSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {syncBuiltinESMExports} from 'node:module'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {managedVersionOf, recoverDir, writeDirAtomic, writeFileAtomic, writeFilesAtomic} from '../../src/lib/fs/atomic.js'
import {tarGz} from '../../src/lib/fs/tar.js'
import {MeshvmError} from '../../src/lib/errors.js'
import {STACK_TRACE} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {logFault} from './hostile.js'

/** The harness that kills a child right after its Nth file-system change (no hook in product code). */
const KILL_AT_STEP = join(process.cwd(), 'test/faults/kill-at-step.cjs')

const work = mkdtempSync(join(tmpdir(), 'meshvm-hostile-files-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))
let n = 0
const fresh = () => {
  const d = join(work, `d${++n}`)
  mkdirSync(d)
  return d
}

function thrown(f: () => unknown): MeshvmError {
  try {
    f()
  } catch (err) {
    expect(err).toBeInstanceOf(MeshvmError)
    return err as MeshvmError
  }
  throw new Error('expected a MeshvmError')
}

const OLD = [
  {name: 'a.yaml', data: 'old a\n', mode: 0o644},
  {name: 'istio-token', data: 'old-token', mode: 0o600},
  {name: 'c.yaml', data: 'old c\n', mode: 0o644},
]
const NEW = [
  {name: 'a.yaml', data: 'new a\n', mode: 0o644},
  {name: 'istio-token', data: 'new-token', mode: 0o600},
  {name: 'c.yaml', data: 'new c\n', mode: 0o644},
  {name: 'd.yaml', data: 'new d\n', mode: 0o644},
]
const contents = (dir: string) =>
  Object.fromEntries(
    readdirSync(dir)
      .filter((f) => !f.startsWith('.meshvm-'))
      .sort()
      .map((f) => [f, readFileSync(join(dir, f), 'utf8')]),
  )
const asMap = (files: typeof NEW) => Object.fromEntries(files.map((f) => [f.name, f.data]).sort())

describe('files: never through a symlink or over a special file', () => {
  it('refuses a symlink planted where a file goes, and leaves its target alone', () => {
    logFault('files', 'symlink at target', 'fs')
    const d = fresh()
    writeFileSync(join(work, 'victim'), 'precious')
    symlinkSync(join(work, 'victim'), join(d, 'istio-token'))
    const err = thrown(() => writeFilesAtomic(d, NEW))
    expect(err.message).toBe(`cannot write ${join(d, 'istio-token')}: it is a symbolic link; meshvm only replaces regular files`)
    expect(err.exit).toBe(2)
    expect(readFileSync(join(work, 'victim'), 'utf8')).toBe('precious')
    expect(readdirSync(d)).toEqual(['istio-token'])
  })

  it('refuses a FIFO, a directory and a symlinked output directory', () => {
    logFault('files', 'FIFO/directory at target', 'fs')
    const d = fresh()
    execFileSync('mkfifo', [join(d, 'out.yaml')])
    expect(thrown(() => writeFileAtomic(join(d, 'out.yaml'), 'x')).message).toMatch(/: it is a FIFO; meshvm only replaces regular files$/)
    mkdirSync(join(d, 'a.yaml'))
    expect(thrown(() => writeFilesAtomic(d, NEW)).message).toMatch(/a\.yaml: it is a directory; /)
    symlinkSync(d, join(work, `link${n}`))
    expect(thrown(() => writeFilesAtomic(join(work, `link${n}`), NEW)).message).toMatch(/: it is a symbolic link; /)
    expect(lstatSync(join(d, 'out.yaml')).isFIFO()).toBe(true)
  })

  it('writes to /dev/stdout-style targets without replacing them', () => {
    logFault('files', '/dev/stdout target', 'fs')
    const out = join(work, 'captured')
    // A child whose stdout is a file: writing to /dev/fd/1 and /proc/self/fd/1 appends to that file.
    // These names are used rather than /dev/stdout and /dev/null on purpose: should the code under
    // test ever replace its target again, a rename into /proc fails instead of clobbering the
    // machine's /dev/stdout or /dev/null (which is what the old temp-file-and-rename did).
    const code = `require('tsx/cjs'); const {writeFileAtomic} = require(${JSON.stringify(join(process.cwd(), 'src/lib/fs/atomic.ts'))}); writeFileAtomic('/dev/fd/1', 'token: x\\n', 0o600); writeFileAtomic('/proc/self/fd/1', 'more\\n')`
    const res = spawnSync('bash', ['-c', `node -e "$0" > ${out}`, code], {encoding: 'utf8'})
    expect(res.stderr).toBe('')
    expect(readFileSync(out, 'utf8')).toBe('token: x\nmore\n')
    expect(lstatSync(out).isFile()).toBe(true)
  })
})

describe('files: a bundle is all or none', () => {
  it('a file that cannot be placed leaves the old bundle and no temporary file', () => {
    logFault('files', 'one file cannot be placed', 'fs')
    const d = fresh()
    writeFilesAtomic(d, OLD)
    mkdirSync(join(d, 'd.yaml'))
    expect(() => writeFilesAtomic(d, NEW)).toThrow(MeshvmError)
    expect(readdirSync(d).sort()).toEqual(['a.yaml', 'c.yaml', 'd.yaml', 'istio-token'])
    expect(readFileSync(join(d, 'istio-token'), 'utf8')).toBe('old-token')
  })

  it('a full disk part-way (file size limit: EFBIG) leaves the old bundle, no temp file holding the token', () => {
    logFault('files', 'full disk (EFBIG)', 'fs')
    const d = fresh()
    writeFilesAtomic(d, OLD)
    const big = JSON.stringify([
      {name: 'istio-token', data: 'new-token', mode: 0o600},
      {name: 'a.yaml', data: 'x'.repeat(64 * 1024), mode: 0o644},
    ])
    const code = `require('tsx/cjs'); const {writeFilesAtomic} = require(${JSON.stringify(join(process.cwd(), 'src/lib/fs/atomic.ts'))}); try { writeFilesAtomic(process.argv[1], JSON.parse(process.argv[2])) } catch (e) { console.error(e.message); process.exit(1) }`
    const res = spawnSync('bash', ['-c', 'ulimit -f 16; node -e "$0" "$1" "$2"', code, d, big], {encoding: 'utf8'})
    expect(res.status).toBe(1)
    expect(res.stderr.trim()).toBe(`cannot write ${join(d, 'a.yaml')}: file too large (file size limit reached)`)
    expect(contents(d)).toEqual(asMap(OLD))
  })

  it('kill -9 at every step leaves the old bundle or the new one, never a mix (after the next write recovers)', () => {
    logFault('files', 'kill -9 during a bundle write', 'fs')
    const code = `require('tsx/cjs'); const {writeFilesAtomic} = require(${JSON.stringify(join(process.cwd(), 'src/lib/fs/atomic.ts'))}); armKillAtStep(); writeFilesAtomic(process.argv[1], JSON.parse(process.argv[2]))`
    const outcomes = new Set<string>()
    for (let killAt = 1; ; killAt++) {
      const d = fresh()
      writeFilesAtomic(d, OLD)
      const res = spawnSync(process.execPath, ['--require', KILL_AT_STEP, '-e', code, d, JSON.stringify(NEW)], {encoding: 'utf8', env: {...process.env, MESHVM_TEST_KILL_AT_STEP: String(killAt)}})
      // Whatever is on disk right after the kill: every file is whole (old or new), never partial.
      for (const [name, text] of Object.entries(contents(d))) {
        if (name.startsWith('.meshvm-')) continue
        expect([asMap(OLD)[name], asMap(NEW)[name]]).toContain(text)
      }
      recoverDir(d)
      const after = contents(d)
      const state = JSON.stringify(after) === JSON.stringify(asMap(OLD)) ? 'old' : JSON.stringify(after) === JSON.stringify(asMap(NEW)) ? 'new' : `mix: ${JSON.stringify(after)}`
      expect(state === 'old' || state === 'new', `kill at step ${killAt}: ${state}`).toBe(true)
      expect(statSync(join(d, 'istio-token')).mode & 0o777).toBe(0o600)
      outcomes.add(state)
      if (res.signal !== 'SIGKILL') {
        expect(res.status).toBe(0)
        break
      }
    }
    expect([...outcomes].sort()).toEqual(['new', 'old'])
  })
})

describe('files: a bundle directory is swapped whole (kill -9 needs no recovery)', () => {
  const freshPath = () => join(work, `bundle${++n}`)
  const ATOMIC = `require('tsx/cjs'); const {writeDirAtomic} = require(${JSON.stringify(join(process.cwd(), 'src/lib/fs/atomic.ts'))}); globalThis.armKillAtStep?.(); try { writeDirAtomic(process.argv[1], JSON.parse(process.argv[2]), {keep: process.argv[3]}) } catch (e) { console.error(e.message); process.exit(1) }`
  const siblings = (dir: string) =>
    readdirSync(join(dir, '..'))
      .filter((e) => e.startsWith(`.${dir.split('/').pop()}.meshvm-`))
      .sort()

  it('kill -9 at every step: right after the kill, the directory is the old bundle or the new one', () => {
    logFault('files', 'kill -9 during a bundle write (no recovery)', 'fs')
    const outcomes = new Set<string>()
    for (let killAt = 1; ; killAt++) {
      const d = freshPath()
      writeDirAtomic(d, OLD, {keep: 'others'})
      const res = spawnSync(process.execPath, ['--require', KILL_AT_STEP, '-e', ATOMIC, d, JSON.stringify(NEW), 'others'], {
        encoding: 'utf8',
        env: {...process.env, MESHVM_TEST_KILL_AT_STEP: String(killAt)},
      })
      // No recoverDir: what a reader sees right after the kill.
      const now = contents(d)
      const state = JSON.stringify(now) === JSON.stringify(asMap(OLD)) ? 'old' : JSON.stringify(now) === JSON.stringify(asMap(NEW)) ? 'new' : `mix: ${JSON.stringify(now)}`
      expect(state === 'old' || state === 'new', `kill at step ${killAt}: ${state}`).toBe(true)
      expect(statSync(join(d, 'istio-token')).mode & 0o777).toBe(0o600)
      outcomes.add(state)
      // The next write removes what the killed one left beside the directory.
      writeDirAtomic(d, NEW, {keep: 'others'})
      expect(siblings(d)).toEqual([readlinkSync(d), `${readlinkSync(d)}.files`])
      if (res.signal !== 'SIGKILL') {
        expect(res.status).toBe(0)
        break
      }
    }
    expect([...outcomes].sort()).toEqual(['new', 'old'])
  })

  it("writers racing into one bundle leave one version, the user's files, and no other token", async () => {
    logFault('files', 'concurrent bundle writes into one directory', 'fs')
    const d = freshPath()
    writeDirAtomic(d, OLD, {keep: 'others'})
    writeFileSync(join(d, 'notes.txt'), 'mine')
    const go = join(work, `go${n}`)
    // Each writer waits for the others to be ready, then writes its own bundle again and again.
    const RACER = `require('tsx/cjs'); const {existsSync} = require('node:fs'); const {writeDirAtomic} = require(${JSON.stringify(join(process.cwd(), 'src/lib/fs/atomic.ts'))});
      const [dir, go, me] = process.argv.slice(1); console.log('ready');
      while (!existsSync(go)) Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 2);
      for (let i = 0; i < 25; i++) writeDirAtomic(dir, [{name: 'a.yaml', data: me + ' ' + i, mode: 0o644}, {name: 'istio-token', data: 'token-' + me + '-' + i, mode: 0o600}], {keep: 'others'})`
    const racers = ['w1', 'w2', 'w3', 'w4'].map((me) => {
      const child = spawn(process.execPath, ['-e', RACER, d, go, me], {stdio: ['ignore', 'pipe', 'pipe']})
      let stderr = ''
      child.stderr.setEncoding('utf8').on('data', (t: string) => (stderr += t))
      const ready = new Promise<void>((r) => child.stdout.once('data', () => r()))
      const done = new Promise<{code: number | null; stderr: string}>((r) => child.on('close', (code) => r({code, stderr})))
      return {ready, done}
    })
    await Promise.all(racers.map((r) => r.ready))
    writeFileSync(go, '')
    const results = await Promise.all(racers.map((r) => r.done))
    expect(results).toEqual(racers.map(() => ({code: 0, stderr: ''})))
    // One version (the link's), its list, and nothing else: no leftover version holding a token.
    expect(siblings(d)).toEqual([readlinkSync(d), `${readlinkSync(d)}.files`])
    const now = contents(d)
    expect(Object.keys(now).sort()).toEqual(['a.yaml', 'istio-token', 'notes.txt'])
    expect(now['notes.txt']).toBe('mine')
    expect(now['istio-token']).toBe(`token-${now['a.yaml']!.replace(' ', '-')}`)
    expect(statSync(join(d, 'istio-token')).mode & 0o777).toBe(0o600)
  })

  /**
   * Runs `write` with `race` run once just before meshvm's first lstat of `path`: another writer's
   * steps at the instant the racing test above hits only now and then.
   */
  function racedAt(path: string, race: () => void, write: () => void): void {
    const writable = fs as {lstatSync: (...args: unknown[]) => unknown}
    const lstat = writable.lstatSync
    let raced = false
    writable.lstatSync = (p, ...rest) => {
      if (!raced && p === path) {
        raced = true
        race()
      }
      return lstat(p, ...rest)
    }
    syncBuiltinESMExports()
    try {
      write()
    } finally {
      writable.lstatSync = lstat
      syncBuiltinESMExports()
    }
  }

  it('a writer that reads the link just before another commits and removes that version reads the link again', () => {
    const d = freshPath()
    writeDirAtomic(d, OLD, {keep: 'others'})
    writeFileSync(join(d, 'notes.txt'), 'mine')
    // Between readlink(d) and lstat of the version it names: another write commits, the old version goes.
    racedAt(
      join(work, readlinkSync(d)),
      () => writeDirAtomic(d, OLD, {keep: 'others'}),
      () => writeDirAtomic(d, NEW, {keep: 'others'}),
    )
    expect(contents(d)).toEqual({...asMap(NEW), 'notes.txt': 'mine'})
    expect(siblings(d)).toEqual([readlinkSync(d), `${readlinkSync(d)}.files`])
  })

  it("a writer copying the user's files while another removes that version file by file starts again from the new one", () => {
    const d = freshPath()
    writeDirAtomic(d, OLD, {keep: 'others'})
    writeFileSync(join(d, 'notes.txt'), 'mine')
    const old = readlinkSync(d)
    const next = `.${d.split('/').pop()}.meshvm-1-racer0`
    // The other writer has committed its version (a copy) and removed one file of the old one so far.
    racedAt(
      join(work, old, 'notes.txt'),
      () => {
        cpSync(join(work, old), join(work, next), {recursive: true})
        copyFileSync(join(work, `${old}.files`), join(work, `${next}.files`))
        symlinkSync(next, join(work, 'racer-link'))
        renameSync(join(work, 'racer-link'), d)
        rmSync(join(work, old, 'notes.txt'))
      },
      () => writeDirAtomic(d, NEW, {keep: 'others'}),
    )
    expect(contents(d)).toEqual({...asMap(NEW), 'notes.txt': 'mine'})
    expect(siblings(d)).toEqual([readlinkSync(d), `${readlinkSync(d)}.files`])
  })

  it('the directory is a link to a private version beside it; the old version goes', () => {
    const d = freshPath()
    writeDirAtomic(d, OLD, {keep: 'others'})
    const first = readlinkSync(d)
    expect(first).toMatch(new RegExp(`^\\.bundle${n}\\.meshvm-\\d+-[A-Za-z0-9]{6}$`))
    expect(managedVersionOf(d)).toBe(first)
    expect(statSync(join(work, first)).mode & 0o777).toBe(0o700)
    writeDirAtomic(d, NEW, {keep: 'others'})
    expect(siblings(d)).toEqual([readlinkSync(d), `${readlinkSync(d)}.files`])
    expect(existsSync(join(work, first))).toBe(false)
    expect(contents(d)).toEqual(asMap(NEW))
  })

  it("a new bundle drops the files of the old one it no longer has, and keeps the user's own", () => {
    const d = freshPath()
    writeDirAtomic(d, NEW, {keep: 'others'})
    writeFileSync(join(d, 'notes.txt'), 'mine')
    writeDirAtomic(d, OLD, {keep: 'others'})
    expect(contents(d)).toEqual({...asMap(OLD), 'notes.txt': 'mine'})
  })

  it('a partial rewrite (token refresh) keeps every other file', () => {
    const d = freshPath()
    writeDirAtomic(d, OLD, {keep: 'others'})
    writeDirAtomic(d, [{name: 'istio-token', data: 'fresh', mode: 0o600}], {keep: 'all'})
    expect(contents(d)).toEqual({...asMap(OLD), 'istio-token': 'fresh'})
    // Kept files stay meshvm's: the next full bundle still replaces them.
    writeDirAtomic(d, [{name: 'a.yaml', data: 'only', mode: 0o644}], {keep: 'others'})
    expect(contents(d)).toEqual({'a.yaml': 'only'})
  })

  it('refuses a link that is not its own, and leaves its target alone', () => {
    logFault('files', 'planted link as bundle directory', 'fs')
    const victim = join(work, `victim${++n}`)
    mkdirSync(victim)
    writeFileSync(join(victim, 'istio-token'), 'precious')
    const d = freshPath()
    symlinkSync(victim, d)
    expect(thrown(() => writeDirAtomic(d, NEW, {keep: 'others'})).message).toBe(`cannot write ${d}: it is a symbolic link; meshvm only replaces regular files`)
    // Named like a version, but a link rather than a directory.
    const name = d.split('/').pop()!
    symlinkSync(victim, join(work, `.${name}.meshvm-1-abcdef`))
    rmSync(d)
    symlinkSync(`.${name}.meshvm-1-abcdef`, d)
    expect(thrown(() => writeDirAtomic(d, NEW, {keep: 'others'})).message).toMatch(/: it is a symbolic link; /)
    expect(readdirSync(victim)).toEqual(['istio-token'])
    expect(readFileSync(join(victim, 'istio-token'), 'utf8')).toBe('precious')
  })

  it('a full disk part-way leaves the old bundle and no version holding the token', () => {
    const d = freshPath()
    writeDirAtomic(d, OLD, {keep: 'others'})
    const before = siblings(d)
    const big = JSON.stringify([
      {name: 'istio-token', data: 'new-token', mode: 0o600},
      {name: 'a.yaml', data: 'x'.repeat(64 * 1024), mode: 0o644},
    ])
    const res = spawnSync('bash', ['-c', 'ulimit -f 16; node -e "$0" "$1" "$2" others', ATOMIC, d, big], {encoding: 'utf8'})
    expect(res.status).toBe(1)
    expect(res.stderr.trim()).toBe(`cannot write ${join(d, 'a.yaml')}: file too large (file size limit reached)`)
    expect(contents(d)).toEqual(asMap(OLD))
    expect(siblings(d)).toEqual(before)
  })

  it('a directory that already exists is written in place, its other files kept', () => {
    const full = freshPath()
    mkdirSync(full)
    writeFileSync(join(full, 'theirs'), 'x')
    writeDirAtomic(full, OLD, {keep: 'others'})
    expect(lstatSync(full).isDirectory()).toBe(true)
    expect(contents(full)).toEqual({...asMap(OLD), theirs: 'x'})
    expect(siblings(full)).toEqual([])
  })
})

describe('crashes: long names in --archive', () => {
  for (const length of [95, 148, 240]) {
    it(`a valid ${length}-character group name makes an archive the system tar extracts`, () => {
      logFault('crashes', `${length}-character group name in --archive`, 'fs')
      const group = ('g' + 'a'.repeat(length)).slice(0, length - 1) + 'z'
      const d = fresh()
      const archive = join(d, 'b.tar.gz')
      writeFileSync(
        archive,
        tarGz(
          `${group}-bundle`,
          [
            {name: 'istio-token', data: 'secret', mode: 0o600},
            {name: 'cluster.env', data: 'X=1\n', mode: 0o644},
          ],
          1_700_000_000,
        ),
      )
      execFileSync('tar', ['-xzf', archive, '-C', d])
      expect(readFileSync(join(d, `${group}-bundle`, 'istio-token'), 'utf8')).toBe('secret')
      expect(statSync(join(d, `${group}-bundle`, 'istio-token')).mode & 0o777).toBe(0o600)
      expect(readFileSync(join(d, `${group}-bundle`, 'cluster.env'), 'utf8')).toBe('X=1\n')
    })
  }
})

describe('files through the CLI', () => {
  it('onboard -d into a directory holding a planted symlink is a clean usage error', async () => {
    logFault('files', 'symlink in --output-dir', 'onboard')
    const d = fresh()
    symlinkSync('/etc/passwd', join(d, 'kustomization.yaml'))
    const res = await runCommand(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-d', d])
    expect(res.code).toBe(2)
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(res.stderr.split('\n')[0]).toBe(`Error: cannot write ${join(d, 'kustomization.yaml')}: it is a symbolic link; meshvm only replaces regular files`)
    expect(existsSync(join(d, 'workloadgroup.yaml'))).toBe(false)
  })
})
