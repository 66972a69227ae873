/**
 * A minimal ustar writer for `--archive`: regular files in one directory, with their modes, gzipped.
 * Enough for `tar xzf bundle.tar.gz` on any VM; no dependency needed. Names longer than ustar's
 * 100-byte name field use its 155-byte prefix field (split at a "/"), and beyond that a POSIX.1-2001
 * PAX extended header (`path=`), which GNU tar, bsdtar and busybox tar all read: any valid group
 * name (up to 253 characters) fits.
 */
import {gzipSync} from 'node:zlib'

export interface TarEntry {
  name: string
  data: string | Uint8Array
  mode: number
}

function octal(value: number, length: number): string {
  return value.toString(8).padStart(length - 1, '0') + '\0'
}

/** The ustar (name, prefix) split of a path, or undefined when it does not fit. */
function ustarSplit(path: string): {name: string; prefix: string} | undefined {
  if (Buffer.byteLength(path) <= 100) return {name: path, prefix: ''}
  for (let i = path.indexOf('/'); i > 0; i = path.indexOf('/', i + 1)) {
    const prefix = path.slice(0, i)
    const name = path.slice(i + 1)
    if (Buffer.byteLength(prefix) <= 155 && Buffer.byteLength(name) <= 100 && name !== '') return {name, prefix}
  }
  return undefined
}

/** A PAX extended header record: "<length> <key>=<value>\n", the length counting itself. */
function paxRecord(key: string, value: string): string {
  const body = ` ${key}=${value}\n`
  let length = Buffer.byteLength(body) + 1
  while (String(length).length + Buffer.byteLength(body) !== length) length = String(length).length + Buffer.byteLength(body)
  return `${length}${body}`
}

function entryHeaders(path: string, size: number, mode: number, mtime: number): Buffer[] {
  const split = ustarSplit(path)
  if (split) return [header(split.name, size, mode, mtime, '0', split.prefix)]
  const pax = Buffer.from(paxRecord('path', path), 'utf8')
  const short = Buffer.from(path, 'utf8')
    .subarray(0, 99)
    .toString('utf8')
    .replace(/\uFFFD$/, '')
  return [header(`PaxHeader/${short}`.slice(0, 99), pax.length, 0o644, mtime, 'x', ''), pax, Buffer.alloc((512 - (pax.length % 512)) % 512), header(short, size, mode, mtime, '0', '')]
}

function header(name: string, size: number, mode: number, mtime: number, type = '0', prefix = ''): Buffer {
  const h = Buffer.alloc(512)
  h.write(name, 0, 100, 'utf8')
  h.write(prefix, 345, 155, 'utf8')
  h.write(octal(mode & 0o7777, 8), 100)
  h.write(octal(0, 8), 108) // uid
  h.write(octal(0, 8), 116) // gid
  h.write(octal(size, 12), 124)
  h.write(octal(mtime, 12), 136)
  h.write('        ', 148) // checksum placeholder: spaces while summing
  h.write(type, 156) // '0' regular file, 'x' PAX extended header
  h.write('ustar\0', 257)
  h.write('00', 263)
  let sum = 0
  for (const byte of h) sum += byte
  h.write(octal(sum, 7) + ' ', 148)
  return h
}

/** A gzipped tar of `entries` under `prefix/`. `mtime` is fixed by the caller for reproducible archives. */
export function tarGz(prefix: string, entries: TarEntry[], mtime: number): Buffer {
  const parts: Buffer[] = []
  for (const e of entries) {
    const data = typeof e.data === 'string' ? Buffer.from(e.data, 'utf8') : Buffer.from(e.data)
    parts.push(...entryHeaders(`${prefix}/${e.name}`, data.length, e.mode, mtime), data, Buffer.alloc((512 - (data.length % 512)) % 512))
  }
  parts.push(Buffer.alloc(1024))
  return gzipSync(Buffer.concat(parts))
}
