/**
 * Every file meshvm writes goes through here: files appear whole or not at all, a set of files
 * (a bundle) is placed all or none, and nothing is ever written through a symlink or over a special
 * file.
 *
 * How a set of files is placed in DIR (reasoned for kill -9 at any instant):
 * 1. Every target is checked first (lstat): absent or a regular file is fine; a symlink, directory,
 *    device, FIFO or socket is refused before anything is written.
 * 2. All files are written into a private staging directory DIR/.meshvm-staging-PID-XXXXXX (mode
 *    0700, files created exclusively with their final mode, fsynced). A failure here (full disk,
 *    EFBIG, …) removes the staging directory: DIR is as it was.
 * 3. The commit point: a journal DIR/.meshvm-journal (naming the staging directory and the files) is
 *    created exclusively (link(2), atomic; a second concurrent writer is told who holds it).
 * 4. Each staged file is renamed over its target (atomic per file), then DIR is fsynced, the journal
 *    removed and the staging directory deleted.
 * A kill before 3 leaves the old files (and a private staging directory, removed by the next write
 * into DIR); a kill after 3 is rolled forward by the next write into DIR (recoverDir), which
 * finishes the renames. A failed rename before the end rolls back from hard-link backups. A single
 * file needs no journal: its one rename is the commit.
 *
 * A bundle directory goes further (writeDirAtomic): right after a kill -9 at any instant, DIR holds
 * the old set or the new one, never a mix, with no recovery needed. POSIX cannot replace a non-empty
 * directory in one step (rename(2) only replaces an empty one; Node has no renameat2
 * RENAME_EXCHANGE), so DIR is a symbolic link that meshvm owns, `DIR -> .NAME.meshvm-PID-XXXXXX`, a
 * sibling version directory; a new version is written whole beside it and the link is replaced by
 * rename(2), the one atomic step (kubelet's AtomicWriter swaps ConfigMap volumes the same way,
 * pkg/volume/util/atomic_writer.go). meshvm never writes through that link: each version is a new
 * directory created exclusively, and a link that is not meshvm's own (its target is not such a
 * sibling directory, owned by this user) is refused like any other symlink.
 */
import {closeSync, constants, copyFileSync, fchmodSync, fsyncSync, linkSync, lstatSync, mkdirSync, mkdtempSync, openSync, readdirSync, readFileSync, readlinkSync, renameSync, rmSync, symlinkSync, unlinkSync, writeSync, type Stats} from 'node:fs'
import {basename, dirname, join, resolve} from 'node:path'
import {ExitCode, MeshvmError} from '../errors.js'

export interface FileToWrite {
  /** Path relative to the target directory (no sub-directories). */
  name: string
  data: string | Uint8Array
  /** 0o600 for secrets (tokens, kubeconfigs), 0o644 otherwise. */
  mode: number
}

const JOURNAL = '.meshvm-journal'
const STAGING = '.meshvm-staging-'

interface Journal {
  pid: number
  staging: string
  files: string[]
}

/**
 * Test-only fault point: with MESHVM_TEST_KILL_AT_STEP=N the process kills itself (SIGKILL) at the
 * Nth step of a write, so tests can stop a write at every instant that matters.
 */
let steps = 0
function step(): void {
  const at = process.env.MESHVM_TEST_KILL_AT_STEP
  if (at !== undefined && ++steps === Number(at)) process.kill(process.pid, 'SIGKILL')
}

/** Targets that are streams, written to (never replaced) when named: `--output-file /dev/stdout`. */
export function isStreamPath(path: string): boolean {
  return /^\/dev\/(?:stdout|stderr|null|fd\/\d+)$|^\/proc\/self\/fd\/\d+$/.test(path)
}

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path)
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
}

function kindOf(st: Stats): string {
  if (st.isSymbolicLink()) return 'a symbolic link'
  if (st.isDirectory()) return 'a directory'
  if (st.isFIFO()) return 'a FIFO'
  if (st.isSocket()) return 'a socket'
  if (st.isCharacterDevice() || st.isBlockDevice()) return 'a device'
  return 'not a regular file'
}

function refuse(path: string, what: string): MeshvmError {
  return new MeshvmError(`cannot write ${path}: it is ${what}; meshvm only replaces regular files`, {
    exit: ExitCode.USAGE,
    code: 'WriteRefused',
    hints: ['choose another path, or remove it first (meshvm never writes through a symlink or over a special file)'],
  })
}

function writeFailure(path: string, err: unknown): MeshvmError {
  if (err instanceof MeshvmError) return err
  const code = (err as NodeJS.ErrnoException).code
  const reason =
    code === 'EACCES' || code === 'EPERM'
      ? 'permission denied'
      : code === 'ENOTDIR'
        ? 'a parent is not a directory'
        : code === 'ENOSPC' || code === 'EDQUOT'
          ? 'no space left on device'
          : code === 'EFBIG'
            ? 'file too large (file size limit reached)'
            : code === 'EROFS'
              ? 'read-only file system'
              : code === 'EISDIR'
                ? 'it is a directory'
                : ((err as Error).message ?? String(err)).split('\n')[0]
  return new MeshvmError(`cannot write ${path}: ${reason}`, {exit: ExitCode.FAILURE, code: 'WriteFailed', cause: err})
}

function fsyncPath(path: string): void {
  let fd: number | undefined
  try {
    fd = openSync(path, constants.O_RDONLY)
    fsyncSync(fd)
  } catch {
    // Some file systems cannot fsync a directory; the renames are still atomic.
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

/** Creates `path` exclusively (never following or reusing anything there) with `mode`, whole and flushed. */
function writeNew(path: string, data: string | Uint8Array, mode: number): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), mode)
  try {
    // Exact mode regardless of the umask (0o644 stays readable, 0o600 stays private).
    fchmodSync(fd, mode)
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
    let offset = 0
    while (offset < buf.length) {
      offset += writeSync(fd, buf, offset, buf.length - offset)
      step()
    }
    fsyncSync(fd)
  } finally {
    closeSync(fd)
  }
}

function pidAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return (err as NodeJS.ErrnoException).code === 'EPERM'
  }
}

function readJournal(dir: string): Journal | undefined {
  let text: string
  try {
    text = readFileSync(join(dir, JOURNAL), 'utf8')
  } catch (err) {
    if ((err as NodeJS.ErrnoException).code === 'ENOENT') return undefined
    throw err
  }
  try {
    const j = JSON.parse(text) as Journal
    if (typeof j.staging === 'string' && j.staging.startsWith(STAGING) && !j.staging.includes('/') && Array.isArray(j.files)) return j
  } catch {
    // A journal that does not parse was never committed (it is written whole, then linked).
  }
  return {pid: 0, staging: '', files: []}
}

/**
 * Finishes or cleans up after a write into `dir` that was killed: a committed set (journal present)
 * is rolled forward; staging directories of dead processes are removed (they may hold a token).
 */
export function recoverDir(dir: string): void {
  const journal = readJournal(dir)
  if (journal) {
    if (journal.pid !== process.pid && pidAlive(journal.pid)) {
      throw new MeshvmError(`cannot write into ${dir}: another meshvm (pid ${journal.pid}) is writing there`, {exit: ExitCode.FAILURE, code: 'WriteBusy', hints: ['wait for it to finish, then try again']})
    }
    for (const name of journal.files) {
      if (typeof name !== 'string' || name.includes('/') || !journal.staging) continue
      const staged = join(dir, journal.staging, name)
      if (lstatOrUndefined(staged)?.isFile()) renameSync(staged, join(dir, name))
    }
    fsyncPath(dir)
    rmSync(join(dir, JOURNAL), {force: true})
  }
  for (const entry of readdirSync(dir)) {
    const m = new RegExp(`^${STAGING.replace(/\./g, '\\.')}(\\d+)-`).exec(entry)
    if (m && (Number(m[1]) === process.pid ? false : !pidAlive(Number(m[1])))) rmSync(join(dir, entry), {recursive: true, force: true})
  }
}

/**
 * Writes one file whole or not at all. A stream target (/dev/stdout, /dev/fd/N, /dev/null) is
 * written to, not replaced; a symlink or other special file is refused.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o644): void {
  if (isStreamPath(path)) {
    const st = lstatOrUndefined(path)
    if (st && !st.isFile() && !st.isDirectory()) {
      let fd: number
      try {
        fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | (constants.O_NOCTTY ?? 0))
      } catch (err) {
        throw writeFailure(path, err)
      }
      try {
        const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
        let offset = 0
        while (offset < buf.length) offset += writeSync(fd, buf, offset, buf.length - offset)
      } catch (err) {
        throw writeFailure(path, err)
      } finally {
        closeSync(fd)
      }
      return
    }
  }
  writeFilesAtomic(dirname(path), [{name: basename(path), data, mode}])
}

function checkNames(dir: string, files: FileToWrite[]): void {
  for (const file of files) {
    if (file.name === '' || file.name === '.' || file.name === '..' || file.name.includes('/') || file.name.startsWith('.meshvm-')) {
      throw new MeshvmError(`cannot write ${join(dir, file.name)}: not a plain file name`, {exit: ExitCode.BUG, code: 'InternalError'})
    }
  }
}

/** Writes all files into `dir` (created if needed), or none of them. Returns the written paths. */
export function writeFilesAtomic(dir: string, files: FileToWrite[]): string[] {
  checkNames(dir, files)
  const dirStat = (() => {
    try {
      return lstatOrUndefined(dir)
    } catch (err) {
      throw writeFailure(dir, err)
    }
  })()
  if (dirStat && !dirStat.isDirectory()) throw refuse(dir, kindOf(dirStat))
  if (!dirStat) {
    try {
      mkdirSync(dir, {recursive: true, mode: 0o755})
    } catch (err) {
      throw writeFailure(dir, err)
    }
  }
  try {
    recoverDir(dir)
  } catch (err) {
    throw writeFailure(dir, err)
  }
  // 1. Every target must be absent or a regular file: checked before anything is written.
  const existing = new Set<string>()
  for (const file of files) {
    const target = join(dir, file.name)
    let st: Stats | undefined
    try {
      st = lstatOrUndefined(target)
    } catch (err) {
      throw writeFailure(target, err)
    }
    if (st && !st.isFile()) throw refuse(target, kindOf(st))
    if (st) existing.add(file.name)
  }
  // 2. Everything staged in a private directory.
  let staging: string
  try {
    staging = mkdtempSync(join(dir, `${STAGING}${process.pid}-`))
  } catch (err) {
    throw writeFailure(dir, err)
  }
  const cleanup = () => rmSync(staging, {recursive: true, force: true})
  step()
  for (const file of files) {
    try {
      writeNew(join(staging, file.name), file.data, file.mode)
      step()
    } catch (err) {
      cleanup()
      throw writeFailure(join(dir, file.name), err)
    }
  }
  fsyncPath(staging)
  const written = files.map((f) => join(dir, f.name))
  if (files.length === 1) {
    // One file: its rename is the commit.
    try {
      renameSync(join(staging, files[0]!.name), written[0]!)
    } catch (err) {
      cleanup()
      throw writeFailure(written[0]!, err)
    }
    step()
    fsyncPath(dir)
    cleanup()
    return written
  }
  // Backups (hard links, no copy) so that a failed rename can be undone.
  const backups = new Map<string, string>()
  try {
    for (const name of existing) {
      const backup = join(staging, `.old-${name}`)
      linkSync(join(dir, name), backup)
      backups.set(name, backup)
    }
    // 3. The commit point: the journal appears atomically, or not at all.
    const journalTemp = join(staging, '.journal')
    writeNew(journalTemp, JSON.stringify({pid: process.pid, staging: basename(staging), files: files.map((f) => f.name)} satisfies Journal), 0o600)
    linkSync(journalTemp, join(dir, JOURNAL))
  } catch (err) {
    cleanup()
    const code = (err as NodeJS.ErrnoException).code
    if (code === 'EEXIST') throw new MeshvmError(`cannot write into ${dir}: another meshvm is writing there`, {exit: ExitCode.FAILURE, code: 'WriteBusy', hints: ['wait for it to finish, then try again']})
    throw writeFailure(dir, err)
  }
  step()
  // 4. The renames.
  const placed: string[] = []
  try {
    for (const file of files) {
      renameSync(join(staging, file.name), join(dir, file.name))
      placed.push(file.name)
      step()
    }
  } catch (err) {
    // Roll back: the old files return, the new ones without an old one go.
    for (const name of placed) {
      const backup = backups.get(name)
      try {
        if (backup) renameSync(backup, join(dir, name))
        else unlinkSync(join(dir, name))
      } catch {
        // Best effort; the error below names the file that failed.
      }
    }
    rmSync(join(dir, JOURNAL), {force: true})
    cleanup()
    throw writeFailure(join(dir, files[placed.length]!.name), err)
  }
  fsyncPath(dir)
  step()
  unlinkSync(join(dir, JOURNAL))
  step()
  cleanup()
  return written
}

/**
 * Beside each version, `VERSION.files`: the names meshvm wrote (JSON array), so the next version can
 * tell them from the user's own files. Kept out of the directory, which is copied to VMs as it is.
 */
const filesListOf = (version: string) => `${version}.files`

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

/** `.NAME.meshvm-PID-XXXXXX` (a version) or `.NAME.meshvm-link-PID-XXXXXX` (a link about to be renamed). */
function siblingPattern(name: string): RegExp {
  return new RegExp(`^\\.${escapeRegExp(name)}\\.meshvm-(link-)?(\\d+)-[A-Za-z0-9]{6}(\\.files)?$`)
}

/**
 * The version directory `dir` points to when it is meshvm's own link (a sibling named by
 * siblingPattern, a real directory owned by this user), else undefined.
 */
export function managedVersionOf(dir: string): string | undefined {
  let target: string
  try {
    target = readlinkSync(dir)
  } catch {
    return undefined
  }
  const m = siblingPattern(basename(dir)).exec(target)
  if (!m || m[1] || m[3]) return undefined
  const st = lstatOrUndefined(join(dirname(dir), target))
  if (!st?.isDirectory() || (process.getuid && st.uid !== process.getuid())) return undefined
  return target
}

export interface WriteDirOptions {
  /**
   * Which files of the current version the new one keeps: 'others' keeps the files meshvm did not
   * write (a user's notes), so a new bundle replaces the old one whole; 'all' keeps every file not
   * being written (a token refresh rewrites two files of a bundle).
   */
  keep: 'others' | 'all'
}

/**
 * Writes a directory's files as one set: when meshvm creates `dir`, it is its link to a version, and
 * right after a kill -9 at any instant it holds the old set or the new one (see the header). A
 * directory that already exists (made by the user, or a bundle from before versions), and Windows (no
 * symlinks without privilege), get writeFilesAtomic: all or none on failure, finished by the next
 * write after a kill.
 */
export function writeDirAtomic(dir: string, files: FileToWrite[], options: WriteDirOptions): string[] {
  checkNames(dir, files)
  const path = resolve(dir)
  const parent = dirname(path)
  const name = basename(path)
  let st: Stats | undefined
  try {
    st = lstatOrUndefined(path)
  } catch (err) {
    throw writeFailure(dir, err)
  }
  let current: string | undefined
  if (st?.isSymbolicLink()) {
    current = managedVersionOf(path)
    if (current === undefined) throw refuse(dir, 'a symbolic link')
  } else if (st?.isDirectory() || process.platform === 'win32') {
    // A directory the user made (or a bundle from before versions) stays theirs: written in place.
    return writeFilesAtomic(dir, files)
  } else if (st) {
    throw refuse(dir, kindOf(st))
  }
  try {
    mkdirSync(parent, {recursive: true, mode: 0o755})
    removeStaleVersions(parent, name, current)
  } catch (err) {
    throw writeFailure(dir, err)
  }
  // 1. The new version, written whole in a private directory beside DIR.
  const prefix = `.${name}.meshvm-`
  let version: string
  try {
    version = mkdtempSync(join(parent, `${prefix}${process.pid}-`))
  } catch (err) {
    throw writeFailure(dir, err)
  }
  // The link takes the version's PID-XXXXXX, so siblingPattern knows it as this write's.
  const link = join(parent, `${prefix}link-${basename(version).slice(prefix.length)}`)
  const cleanup = () => {
    rmSync(link, {force: true})
    rmSync(filesListOf(version), {force: true})
    rmSync(version, {recursive: true, force: true})
  }
  step()
  let failed = dir
  try {
    for (const file of files) {
      failed = join(dir, file.name)
      writeNew(join(version, file.name), file.data, file.mode)
      step()
    }
    failed = dir
    const written = new Set(files.map((f) => f.name))
    const kept = current === undefined ? [] : carryOver(join(parent, current), version, written, options.keep)
    writeNew(filesListOf(version), `${JSON.stringify([...written, ...kept].sort())}\n`, 0o600)
    fsyncPath(version)
    symlinkSync(basename(version), link)
    step()
    // 2. The commit: one rename(2) puts the new link in place.
    renameSync(link, path)
  } catch (err) {
    cleanup()
    throw writeFailure(failed, err)
  }
  step()
  fsyncPath(parent)
  // 3. The old version goes; a kill before this leaves it to the next write (removeStaleVersions).
  if (current !== undefined) {
    rmSync(filesListOf(join(parent, current)), {force: true})
    rmSync(join(parent, current), {recursive: true, force: true})
  }
  step()
  return files.map((f) => join(dir, f.name))
}

/**
 * Links (no copy) the files of the current version that the new one keeps; returns the names kept
 * that meshvm wrote, for the new version's list.
 */
function carryOver(from: string, to: string, written: Set<string>, keep: WriteDirOptions['keep']): string[] {
  let ours: Set<string>
  try {
    ours = new Set(JSON.parse(readFileSync(filesListOf(from), 'utf8')) as string[])
  } catch {
    ours = new Set()
  }
  const keptOurs: string[] = []
  for (const entry of readdirSync(from)) {
    if (written.has(entry) || entry.startsWith('.meshvm-')) continue
    if (keep === 'others' && ours.has(entry)) continue
    if (!lstatSync(join(from, entry)).isFile()) continue
    try {
      linkSync(join(from, entry), join(to, entry))
    } catch {
      copyFileSync(join(from, entry), join(to, entry), constants.COPYFILE_EXCL)
    }
    if (ours.has(entry)) keptOurs.push(entry)
  }
  return keptOurs
}

/** Versions and links left by killed or finished writes (never the current one, never a live writer's). */
function removeStaleVersions(parent: string, name: string, current: string | undefined): void {
  const pattern = siblingPattern(name)
  let entries: string[]
  try {
    entries = readdirSync(parent)
  } catch {
    return
  }
  for (const entry of entries) {
    const m = pattern.exec(entry)
    if (!m || entry === current || (current !== undefined && entry === filesListOf(current))) continue
    if (Number(m[2]) !== process.pid && pidAlive(Number(m[2]))) continue
    rmSync(join(parent, entry), {recursive: true, force: true})
  }
}
