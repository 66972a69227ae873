/**
 * A minimal ustar writer for `--archive`: regular files in one directory, with their modes, gzipped.
 * Enough for `tar xzf bundle.tar.gz` on any VM; no dependency needed.
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

function header(name: string, size: number, mode: number, mtime: number): Buffer {
  if (Buffer.byteLength(name) > 100) throw new Error(`tar entry name too long: ${name}`)
  const h = Buffer.alloc(512)
  h.write(name, 0, 'utf8')
  h.write(octal(mode & 0o7777, 8), 100)
  h.write(octal(0, 8), 108) // uid
  h.write(octal(0, 8), 116) // gid
  h.write(octal(size, 12), 124)
  h.write(octal(mtime, 12), 136)
  h.write('        ', 148) // checksum placeholder: spaces while summing
  h.write('0', 156) // regular file
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
    parts.push(header(`${prefix}/${e.name}`, data.length, e.mode, mtime), data, Buffer.alloc((512 - (data.length % 512)) % 512))
  }
  parts.push(Buffer.alloc(1024))
  return gzipSync(Buffer.concat(parts))
}
