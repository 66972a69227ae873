/**
 * Files appear whole or not at all: every write goes to a temporary file in the same directory,
 * is flushed, then renamed over the target. A set of files is written as temporaries first and
 * renamed only when all of them were written, so a failure leaves none of them behind.
 */
import {closeSync, fchmodSync, fsyncSync, mkdirSync, openSync, renameSync, rmSync, writeSync} from 'node:fs'
import {basename, dirname, join} from 'node:path'
import {ExitCode, MeshvmError} from '../errors.js'

export interface FileToWrite {
  /** Path relative to the target directory (no sub-directories). */
  name: string
  data: string | Uint8Array
  /** 0o600 for secrets (tokens, kubeconfigs), 0o644 otherwise. */
  mode: number
}

function tempPathFor(path: string): string {
  // node:crypto is loaded here, on the first write, not at import: every command imports this
  // module, and loading crypto costs a few ms of start-up even for commands that write no file.
  const {randomBytes} = process.getBuiltinModule('node:crypto')
  return join(dirname(path), `.${basename(path)}.${process.pid}.${randomBytes(4).toString('hex')}.tmp`)
}

function writeTemp(path: string, data: string | Uint8Array, mode: number): string {
  const temp = tempPathFor(path)
  // 'wx': never follow or reuse an existing file; the mode applies from creation, so a secret is
  // never readable by others, not even for a moment.
  const fd = openSync(temp, 'wx', mode)
  try {
    // Exact mode regardless of the umask (0o644 stays readable, 0o600 stays private).
    fchmodSync(fd, mode)
    const buf = typeof data === 'string' ? Buffer.from(data, 'utf8') : data
    let offset = 0
    while (offset < buf.length) offset += writeSync(fd, buf, offset, buf.length - offset)
    fsyncSync(fd)
  } catch (err) {
    closeSync(fd)
    rmSync(temp, {force: true})
    throw err
  }
  closeSync(fd)
  return temp
}

function writeFailure(path: string, err: unknown): MeshvmError {
  const code = (err as NodeJS.ErrnoException).code
  const reason =
    code === 'EACCES' || code === 'EPERM'
      ? 'permission denied'
      : code === 'ENOTDIR'
        ? 'a parent is not a directory'
        : code === 'ENOSPC'
          ? 'no space left on device'
          : code === 'EROFS'
            ? 'read-only file system'
            : (err as Error).message
  return new MeshvmError(`cannot write ${path}: ${reason}`, {exit: ExitCode.FAILURE, code: 'WriteFailed', cause: err})
}

export function writeFileAtomic(path: string, data: string | Uint8Array, mode = 0o644): void {
  writeFilesAtomic(dirname(path), [{name: basename(path), data, mode}])
}

/** Writes all files into `dir` (created if needed), or none of them. Returns the written paths. */
export function writeFilesAtomic(dir: string, files: FileToWrite[]): string[] {
  try {
    mkdirSync(dir, {recursive: true, mode: 0o755})
  } catch (err) {
    throw writeFailure(dir, err)
  }
  const temps: {temp: string; target: string}[] = []
  try {
    for (const file of files) {
      const target = join(dir, file.name)
      try {
        temps.push({temp: writeTemp(target, file.data, file.mode), target})
      } catch (err) {
        throw writeFailure(target, err)
      }
    }
  } catch (err) {
    for (const t of temps) rmSync(t.temp, {force: true})
    throw err
  }
  for (const t of temps) renameSync(t.temp, t.target)
  return temps.map((t) => t.target)
}
