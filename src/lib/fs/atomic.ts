/**
 * Every file and directory meshvm creates goes through here: files appear whole or not at all, a set
 * of files (a bundle) is placed all or none, directories are created one level at a time (Node's
 * recursive mkdir never returns under /proc), and nothing is ever written through a symlink or over a
 * special file. Every failure is one line naming the path and the reason.
 *
 * Three shapes, each reasoned for kill -9 at any instant:
 * - One file (writeFileAtomic): a temporary sibling created exclusively with the final mode and
 *   flushed, then rename(2) over the target, the one atomic step. A killed write leaves only its
 *   private temporary file, removed by the next write of that file.
 * - A bundle directory that meshvm creates (writeDirAtomic): DIR is a symbolic link meshvm owns,
 *   `DIR -> .NAME.meshvm-PID-XXXXXX`, a sibling version directory. POSIX cannot replace a non-empty
 *   directory in one step (rename(2) only replaces an empty one; Node has no renameat2
 *   RENAME_EXCHANGE), so a new version is written whole beside it and the link is replaced by
 *   rename(2) (kubelet's AtomicWriter swaps ConfigMap volumes the same way,
 *   pkg/volume/util/atomic_writer.go). Right after a kill, DIR holds the old set or the new one, with
 *   no recovery needed. Each version's link `.NAME.meshvm-link-PID-XXXXXX` is created before the
 *   version itself and consumed by the commit rename, so a version without its link has been
 *   committed once: if DIR no longer names it, it can never be current again and any writer removes
 *   it. Writers that race therefore leave exactly one version (the last committed), and no token
 *   outlives the write that made it.
 * - A set of files in a directory that already exists (the user's own, or one from before versions;
 *   writeFilesAtomic): it cannot become a link without a moment in which DIR is missing, so the files
 *   are staged in a private DIR/.meshvm-staging-PID-XXXXXX, and a journal DIR/.meshvm-journal
 *   created exclusively (link(2)) is the commit point, before the per-file renames. A kill before the
 *   journal leaves the old files; after it, the next write into DIR rolls forward (recoverDir). The
 *   journal is also the lock: a second writer is told who holds it.
 */
import {
  closeSync,
  constants,
  copyFileSync,
  chmodSync,
  fchmodSync,
  fsyncSync,
  linkSync,
  lstatSync,
  mkdirSync,
  openSync,
  readdirSync,
  readFileSync,
  readlinkSync,
  renameSync,
  rmSync,
  statSync,
  symlinkSync,
  unlinkSync,
  writeSync,
  type Stats,
} from 'node:fs'
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

/** Targets that are streams, written to (never replaced) when named: `--output-file /dev/stdout`. */
export function isStreamPath(path: string): boolean {
  return /^\/dev\/(?:stdout|stderr|null|fd\/\d+)$|^\/proc\/self\/fd\/\d+$/.test(path)
}

const errno = (err: unknown) => (err as NodeJS.ErrnoException).code

function lstatOrUndefined(path: string): Stats | undefined {
  try {
    return lstatSync(path)
  } catch (err) {
    if (errno(err) === 'ENOENT') return undefined
    throw err
  }
}

/** lstat of a path meshvm is about to write; a parent that is not a directory is named (`afile/x`: afile is a file). */
function lstatTarget(path: string, shown = path): Stats | undefined {
  try {
    return lstatOrUndefined(path)
  } catch (err) {
    if (errno(err) === 'ENOTDIR') ensureDir(dirname(path), shown)
    throw writeFailure(shown, err)
  }
}

function kindOf(st: Stats): string {
  if (st.isSymbolicLink()) return 'a symbolic link'
  if (st.isDirectory()) return 'a directory'
  if (st.isFile()) return 'a file'
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

const REASONS: Record<string, string> = {
  EACCES: 'permission denied',
  EPERM: 'permission denied',
  ENOTDIR: 'a parent is not a directory',
  ENOSPC: 'no space left on device',
  EDQUOT: 'no space left on device',
  EFBIG: 'file too large (file size limit reached)',
  EROFS: 'read-only file system',
  EISDIR: 'it is a directory',
  ENAMETOOLONG: 'file name too long',
  ELOOP: 'too many levels of symbolic links',
  ENOENT: 'no such file or directory',
}

/**
 * The reason of a failed system call in words, never Node's raw `ENOENT: …, mkdtemp '…'` text. With
 * `where` (the directory that exists and was written in), ENOENT means the file system itself
 * refuses, as /proc does.
 */
function reasonOf(err: unknown, where?: string): string {
  const code = errno(err)
  if (where && code === 'ENOENT') return `${where} does not allow new files or directories`
  if (where && (code === 'EACCES' || code === 'EPERM')) return `permission denied in ${where}`
  if (code && REASONS[code]) return REASONS[code]
  // Node's messages end with the system call and its paths; keep the words only.
  return String((err as Error)?.message ?? err).split(/[,\n]/)[0]!
}

function writeFailure(path: string, err: unknown, where?: string): MeshvmError {
  if (err instanceof MeshvmError) return err
  return new MeshvmError(`cannot write ${path}: ${reasonOf(err, where)}`, {exit: ExitCode.FAILURE, code: 'WriteFailed', cause: err})
}

/**
 * The directories of `dir` (itself included) that do not exist yet, top first. The first existing
 * one must be a directory (followed if a symbolic link); anything else is named: `afile/x` says that
 * afile is a file. `forPath` is the file the caller writes, for the message.
 */
function missingDirs(dir: string, forPath: string): string[] {
  const missing: string[] = []
  for (let at = dir; ; at = dirname(at)) {
    let st: Stats | undefined
    try {
      st = statSync(at)
    } catch (err) {
      // ENOTDIR: something above is not a directory; the walk up finds and names it.
      if (errno(err) !== 'ENOENT' && errno(err) !== 'ENOTDIR') throw writeFailure(forPath, err)
    }
    if (st?.isDirectory()) return missing.reverse()
    if (st)
      throw new MeshvmError(`cannot write ${forPath}: ${at} is ${kindOf(st)}, not a directory`, {exit: ExitCode.USAGE, code: 'WriteRefused', hints: ['choose a path whose parents are directories']})
    missing.push(at)
    if (dirname(at) === at) return missing.reverse()
  }
}

/**
 * `mkdir -p dir`, one level at a time and bounded by the path's depth: Node's recursive mkdirSync
 * loops forever where mkdir(2) says ENOENT under an existing parent (/proc).
 */
export function ensureDir(dir: string, forPath = dir): void {
  for (const d of missingDirs(dir, forPath)) {
    try {
      mkdirSync(d, {mode: 0o755})
    } catch (err) {
      if (errno(err) === 'EEXIST' && lstatOrUndefined(d)?.isDirectory()) continue
      throw new MeshvmError(`cannot write ${forPath}: cannot create directory ${d}: ${reasonOf(err, dirname(d))}`, {exit: ExitCode.FAILURE, code: 'WriteFailed', cause: err})
    }
  }
}

/**
 * Before the work that produces a file (a remote secret's token): the checks that change nothing on
 * disk, so a path that cannot work fails first. What only creating can tell (/proc) is found by the
 * write itself.
 */
export function checkWritablePath(path: string): void {
  if (isStreamPath(path)) return
  checkNames(dirname(path), [{name: basename(path)}])
  missingDirs(dirname(path), path)
  checkTarget(path)
}

/** Before a bundle's token: what writeDirAtomic would refuse at once (a link not its own, a file in the way). */
export function checkWritableDir(dir: string): void {
  const st = lstatTarget(dir)
  if (st && (st.isSymbolicLink() ? managedVersionOf(resolve(dir)) === undefined : !st.isDirectory())) throw refuse(dir, kindOf(st))
  if (!st) missingDirs(dirname(dir), dir)
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

/**
 * Creates `path` exclusively (never following or reusing anything there) with `mode`, whole and
 * flushed; a file it created but could not finish (a full disk) is removed.
 */
function writeNew(path: string, data: string | Uint8Array, mode: number): void {
  const fd = openSync(path, constants.O_WRONLY | constants.O_CREAT | constants.O_EXCL | (constants.O_NOFOLLOW ?? 0), mode)
  try {
    // Exact mode regardless of the umask (0o644 stays readable, 0o600 stays private).
    fchmodSync(fd, mode)
    writeAll(fd, data)
    fsyncSync(fd)
  } catch (err) {
    rmSync(path, {force: true})
    throw err
  } finally {
    closeSync(fd)
  }
}

function writeAll(fd: number, data: string | Uint8Array): void {
  const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
  for (let offset = 0; offset < buf.length; ) offset += writeSync(fd, buf, offset, buf.length - offset)
}

function pidAlive(pid: number): boolean {
  if (!Number.isSafeInteger(pid) || pid <= 0) return false
  try {
    process.kill(pid, 0)
    return true
  } catch (err) {
    return errno(err) === 'EPERM'
  }
}

/** A writer's leftovers may be removed when it is this process (not writing now: writes are synchronous) or dead. */
const leftBehind = (pid: number) => pid === process.pid || !pidAlive(pid)

const escapeRegExp = (text: string) => text.replace(/[.*+?^${}()|[\]\\]/g, '\\$&')

const ALNUM = 'ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789'

/**
 * Runs `create` with a fresh PID-XXXXXX until it creates its name exclusively (a few tries on
 * EEXIST: a name someone else holds is never reused or removed); returns the name's id.
 */
function createUnique(create: (id: string) => void): string {
  for (let tries = 0; ; tries++) {
    const id = `${process.pid}-${Array.from({length: 6}, () => ALNUM[Math.floor(Math.random() * ALNUM.length)]).join('')}`
    try {
      create(id)
      return id
    } catch (err) {
      if (errno(err) !== 'EEXIST' || tries >= 5) throw err
    }
  }
}

function checkNames(dir: string, files: {name: string}[]): void {
  for (const file of files) {
    if (file.name === '' || file.name === '.' || file.name === '..' || file.name.includes('/') || file.name.startsWith('.meshvm-')) {
      throw new MeshvmError(`cannot write ${join(dir, file.name)}: not a plain file name`, {exit: ExitCode.BUG, code: 'InternalError'})
    }
  }
}

/** Absent or a regular file: the only targets meshvm replaces. */
function checkTarget(path: string): boolean {
  const st = lstatTarget(path)
  if (st && !st.isFile()) throw refuse(path, kindOf(st))
  return st !== undefined
}

// ---------------------------------------------------------------------------------------------
// One file
// ---------------------------------------------------------------------------------------------

/** `.NAME.meshvm-tmp-PID-XXXXXX`: a temporary file of a write of NAME. */
const tempPattern = (name: string) => new RegExp(`^\\.${escapeRegExp(name)}\\.meshvm-tmp-(\\d+)-[A-Za-z0-9]{6}$`)

/**
 * Writes one file whole or not at all. A stream target (/dev/stdout, /dev/fd/N, /dev/null) is
 * written to, not replaced; a symlink or other special file is refused.
 */
export function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o644): void {
  if (isStreamPath(path)) {
    const st = lstatOrUndefined(path)
    if (st && !st.isFile() && !st.isDirectory()) {
      writeStream(path, data)
      return
    }
  }
  const dir = dirname(path)
  checkNames(dir, [{name: basename(path)}])
  ensureDir(dir, path)
  writeOne(dir, basename(path), data, mode, path)
}

function writeStream(path: string, data: string | Uint8Array): void {
  let fd: number | undefined
  try {
    fd = openSync(path, constants.O_WRONLY | constants.O_APPEND | (constants.O_NOCTTY ?? 0))
    writeAll(fd, data)
  } catch (err) {
    throw writeFailure(path, err)
  } finally {
    if (fd !== undefined) closeSync(fd)
  }
}

function writeOne(dir: string, name: string, data: string | Uint8Array, mode: number, shown = join(dir, name)): void {
  const target = join(dir, name)
  checkTarget(target)
  removeMatching(dir, tempPattern(name))
  const temp = (id: string) => join(dir, `.${name}.meshvm-tmp-${id}`)
  let written: string | undefined
  try {
    written = temp(createUnique((id) => writeNew(temp(id), data, mode)))
    renameSync(written, target)
  } catch (err) {
    if (written) rmSync(written, {force: true})
    throw writeFailure(shown, err, dir)
  }
  fsyncPath(dir)
}

/** The names in `dir`, none when it cannot be read. */
function entriesOf(dir: string): string[] {
  try {
    return readdirSync(dir)
  } catch {
    return []
  }
}

/** Removes the entries of `dir` that `pattern` matches whose writer (the PID in its first group) is gone. */
function removeMatching(dir: string, pattern: RegExp): void {
  for (const entry of entriesOf(dir)) {
    const m = pattern.exec(entry)
    if (m && leftBehind(Number(m[1]))) rmSync(join(dir, entry), {recursive: true, force: true})
  }
}

// ---------------------------------------------------------------------------------------------
// A set of files in an existing directory (staging + journal)
// ---------------------------------------------------------------------------------------------

function readJournal(dir: string): Journal | undefined {
  let text: string
  try {
    text = readFileSync(join(dir, JOURNAL), 'utf8')
  } catch (err) {
    if (errno(err) === 'ENOENT') return undefined
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

const busy = (dir: string, pid?: number) =>
  new MeshvmError(`cannot write into ${dir}: another meshvm${pid ? ` (pid ${pid})` : ''} is writing there`, {
    exit: ExitCode.FAILURE,
    code: 'WriteBusy',
    hints: ['wait for it to finish, then try again'],
  })

/**
 * Finishes or cleans up after a write into `dir` that was killed: a committed set (journal present)
 * is rolled forward; staging directories of dead processes are removed (they may hold a token).
 */
export function recoverDir(dir: string): void {
  const journal = readJournal(dir)
  if (journal) {
    if (!leftBehind(journal.pid)) throw busy(dir, journal.pid)
    for (const name of journal.files) {
      if (typeof name !== 'string' || name.includes('/') || !journal.staging) continue
      const staged = join(dir, journal.staging, name)
      if (lstatOrUndefined(staged)?.isFile()) renameSync(staged, join(dir, name))
    }
    fsyncPath(dir)
    rmSync(join(dir, JOURNAL), {force: true})
  }
  removeMatching(dir, new RegExp(`^${escapeRegExp(STAGING)}(\\d+)-`))
}

/** Writes all files into `dir` (created if needed), or none of them. Returns the written paths. */
export function writeFilesAtomic(dir: string, files: FileToWrite[]): string[] {
  checkNames(dir, files)
  const dirStat = lstatTarget(dir)
  if (dirStat && !dirStat.isDirectory()) throw refuse(dir, kindOf(dirStat))
  if (!dirStat) ensureDir(dir)
  try {
    recoverDir(dir)
  } catch (err) {
    throw writeFailure(dir, err)
  }
  // 1. Every target must be absent or a regular file: checked before anything is written.
  const existing = files.filter((file) => checkTarget(join(dir, file.name))).map((file) => file.name)
  const written = files.map((f) => join(dir, f.name))
  // One file: its rename is the commit.
  if (files.length === 1) {
    writeOne(dir, files[0]!.name, files[0]!.data, files[0]!.mode)
    return written
  }
  // 2. Everything staged in a private directory.
  let staging = ''
  try {
    createUnique((id) => mkdirSync((staging = join(dir, `${STAGING}${id}`)), {mode: 0o700}))
  } catch (err) {
    throw writeFailure(dir, err, dir)
  }
  const cleanup = () => rmSync(staging, {recursive: true, force: true})
  for (const file of files) {
    try {
      writeNew(join(staging, file.name), file.data, file.mode)
    } catch (err) {
      cleanup()
      throw writeFailure(join(dir, file.name), err)
    }
  }
  fsyncPath(staging)
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
    if (errno(err) === 'EEXIST') throw busy(dir)
    throw writeFailure(dir, err)
  }
  // 4. The renames.
  const placed: string[] = []
  try {
    for (const file of files) {
      renameSync(join(staging, file.name), join(dir, file.name))
      placed.push(file.name)
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
  unlinkSync(join(dir, JOURNAL))
  cleanup()
  return written
}

// ---------------------------------------------------------------------------------------------
// A bundle directory meshvm owns (versions swapped by one rename)
// ---------------------------------------------------------------------------------------------

/**
 * Beside each version, `VERSION.files`: the names meshvm wrote (JSON array), so the next version can
 * tell them from the user's own files. Kept out of the directory, which is copied to VMs as it is.
 */
const filesListOf = (version: string) => `${version}.files`

/** `.NAME.meshvm-PID-XXXXXX` (a version), `.NAME.meshvm-link-PID-XXXXXX` (its link until the commit), `….files`. */
function siblingPattern(name: string): RegExp {
  return new RegExp(`^\\.${escapeRegExp(name)}\\.meshvm-(link-)?((\\d+)-[A-Za-z0-9]{6})(\\.files)?$`)
}

/**
 * The version directory `dir` points to when it is meshvm's own link (a sibling named by
 * siblingPattern, a real directory owned by this user), else undefined.
 */
export function managedVersionOf(dir: string): string | undefined {
  for (let target = readlinkOrUndefined(dir); target !== undefined; ) {
    const m = siblingPattern(basename(dir)).exec(target)
    if (!m || m[1] || m[4]) return undefined
    const st = lstatOrUndefined(join(dirname(dir), target))
    if (st?.isDirectory() && (!process.getuid || st.uid === process.getuid())) return target
    // Between the two reads a concurrent write may have committed a newer version and removed this
    // one: a link that changed meanwhile is read again (each change is another writer's commit).
    const again = readlinkOrUndefined(dir)
    if (st || again === target) return undefined
    target = again
  }
  return undefined
}

export interface WriteDirOptions {
  /**
   * Which files of the current version the new one keeps: 'others' keeps the files meshvm did not
   * write (a user's notes), so a new bundle replaces the old one whole; 'all' keeps every file not
   * being written (a token refresh rewrites two files of a bundle).
   */
  keep: 'others' | 'all'
}

/** The current version went away while being copied from: a concurrent writer replaced it. */
class Superseded extends Error {}

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
  const st = lstatTarget(dir)
  if (st?.isSymbolicLink()) {
    if (managedVersionOf(path) === undefined) throw refuse(dir, 'a symbolic link')
  } else if (st?.isDirectory() || process.platform === 'win32') {
    // A directory the user made (or a bundle from before versions) stays theirs: written in place.
    return writeFilesAtomic(dir, files)
  } else if (st) {
    throw refuse(dir, kindOf(st))
  }
  ensureDir(dirname(dir), dir)
  removeOldVersions(path)
  // A concurrent writer may remove the version this one copies from (it committed a newer one): start again from that.
  for (let attempt = 1; ; attempt++) {
    try {
      writeVersion(dir, path, files, options)
      break
    } catch (err) {
      if (!(err instanceof Superseded) || attempt >= 40) throw err instanceof Superseded ? busy(dir) : err
      // Writers that keep superseding each other back off for a random, growing moment.
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, Math.random() * Math.min(50, attempt * 3))
    }
  }
  // The version this write replaced, and any a concurrent write committed before it, go now.
  removeOldVersions(path)
  return files.map((f) => join(dir, f.name))
}

function writeVersion(dir: string, path: string, files: FileToWrite[], options: WriteDirOptions): void {
  const parent = dirname(path)
  const prefix = `.${basename(path)}.meshvm-`
  // Read again on every attempt: a concurrent writer may have committed since.
  const st = lstatOrUndefined(path)
  const current = st?.isSymbolicLink() ? managedVersionOf(path) : undefined
  if (st && current === undefined) throw refuse(dir, kindOf(st))
  // 1. The link first, then the version it names: a version without its link has been committed.
  let id: string
  try {
    id = createUnique((id) => symlinkSync(`${prefix}${id}`, join(parent, `${prefix}link-${id}`)))
  } catch (err) {
    throw writeFailure(dir, err, parent)
  }
  const version = join(parent, `${prefix}${id}`)
  const link = join(parent, `${prefix}link-${id}`)
  const cleanup = () => {
    rmSync(version, {recursive: true, force: true})
    rmSync(filesListOf(version), {force: true})
    rmSync(link, {force: true})
  }
  let failed = dir
  try {
    mkdirSync(version, {mode: 0o700})
    chmodSync(version, 0o700)
    // 2. The new version, written whole in its private directory beside DIR.
    for (const file of files) {
      failed = join(dir, file.name)
      writeNew(join(version, file.name), file.data, file.mode)
    }
    failed = dir
    const written = new Set(files.map((f) => f.name))
    const kept = current === undefined ? [] : carryOver(join(parent, current), version, written, options.keep)
    // A writer that committed meanwhile removes the version copied from, file by file: a listing read
    // during that removal misses the user's files (or fails, below). Still current now means it was whole.
    if (current !== undefined && managedVersionOf(path) !== current) throw new Superseded()
    writeNew(filesListOf(version), `${JSON.stringify([...written, ...kept].sort())}\n`, 0o600)
    fsyncPath(version)
    // 3. The commit: one rename(2) puts the new link in place.
    renameSync(link, path)
  } catch (err) {
    cleanup()
    // A file of the version copied from gone (not the version itself) is that removal too, when the
    // version is no longer current: start again from the new one.
    if (err instanceof Superseded || (errno(err) === 'ENOENT' && current !== undefined && managedVersionOf(path) !== current)) throw new Superseded()
    throw writeFailure(failed, err, parent)
  }
  fsyncPath(parent)
}

/**
 * Links (no copy) the files of the current version that the new one keeps; returns the names kept
 * that meshvm wrote, for the new version's list.
 */
function carryOver(from: string, to: string, written: Set<string>, keep: WriteDirOptions['keep']): string[] {
  // The version is removed before its list: a list read while the version exists is its own.
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
    } catch (err) {
      if (errno(err) === 'ENOENT') throw err
      copyFileSync(join(from, entry), join(to, entry), constants.COPYFILE_EXCL)
    }
    if (ours.has(entry)) keptOurs.push(entry)
  }
  return keptOurs
}

/**
 * Removes what writes into `path` left beside it: versions committed once that `path` no longer
 * names (they can never be current again), and the versions and links of killed writes. Never the
 * current version, never a live writer's version in progress.
 */
function removeOldVersions(path: string): void {
  const parent = dirname(path)
  const name = basename(path)
  const pattern = siblingPattern(name)
  const remove = (entry: string) => rmSync(join(parent, entry), {recursive: true, force: true})
  for (const entry of entriesOf(parent)) {
    const m = pattern.exec(entry)
    if (!m) continue
    const [, isLink, id, pid, isList] = m
    const version = join(parent, `.${name}.meshvm-${id}`)
    if (isLink || isList) {
      // A link or list whose version is gone: a write killed before its version existed, or during a removal.
      if (!lstatOrUndefined(version) && (isList || leftBehind(Number(pid)))) remove(entry)
      continue
    }
    // The link's absence is checked before reading `path`: once consumed by the commit, it never returns.
    const link = lstatOrUndefined(join(parent, `.${name}.meshvm-link-${id}`))
    if (link ? leftBehind(Number(pid)) : readlinkOrUndefined(path) !== entry) {
      // The version before its list, which carryOver reads while the version exists.
      remove(entry)
      rmSync(filesListOf(version), {force: true})
      if (link) rmSync(join(parent, `.${name}.meshvm-link-${id}`), {force: true})
    }
  }
}

function readlinkOrUndefined(path: string): string | undefined {
  try {
    return readlinkSync(path)
  } catch {
    return undefined
  }
}
