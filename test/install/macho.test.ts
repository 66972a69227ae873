/**
 * scripts/macho.mjs: removing a Mach-O code signature before the SEA blob is injected into Node's macOS
 * binaries (what `codesign --remove-signature` does in Node's SEA guide), on a small file laid out as
 * <mach-o/loader.h> says: header, LC_SEGMENT_64 __TEXT, LC_SEGMENT_64 __LINKEDIT, LC_CODE_SIGNATURE,
 * then __LINKEDIT's data ending with the signature.
 */
import {join} from 'node:path'
import {pathToFileURL} from 'node:url'
import {beforeAll, describe, expect, it} from 'vitest'
import {REPO_ROOT} from '../helpers/cli.js'

interface MachO {
  removeMachOSignature(input: Buffer): Buffer
  machOLoadCommands(buf: Buffer): {cmd: number; offset: number; size: number; segname?: string}[]
}
let macho: MachO
beforeAll(async () => {
  macho = (await import(pathToFileURL(join(REPO_ROOT, 'scripts/macho.mjs')).href)) as MachO
})

const LC_SEGMENT_64 = 0x19
const LC_CODE_SIGNATURE = 0x1d
const LINKEDIT_OFF = 0x4000
const SIG_OFF = 0x4100
const SIG_SIZE = 0x200

function segment(name: string, vmaddr: number, vmsize: number, fileoff: number, filesize: number): Buffer {
  const b = Buffer.alloc(72)
  b.writeUInt32LE(LC_SEGMENT_64, 0)
  b.writeUInt32LE(72, 4)
  b.write(name, 8, 'latin1')
  b.writeBigUInt64LE(BigInt(vmaddr), 24)
  b.writeBigUInt64LE(BigInt(vmsize), 32)
  b.writeBigUInt64LE(BigInt(fileoff), 40)
  b.writeBigUInt64LE(BigInt(filesize), 48)
  return b
}

function signedFile(cputype: number): Buffer {
  const signature = Buffer.alloc(16)
  signature.writeUInt32LE(LC_CODE_SIGNATURE, 0)
  signature.writeUInt32LE(16, 4)
  signature.writeUInt32LE(SIG_OFF, 8)
  signature.writeUInt32LE(SIG_SIZE, 12)
  const commands = Buffer.concat([segment('__TEXT', 0, LINKEDIT_OFF, 0, LINKEDIT_OFF), segment('__LINKEDIT', LINKEDIT_OFF, 0x4000, LINKEDIT_OFF, SIG_OFF + SIG_SIZE - LINKEDIT_OFF), signature])
  const header = Buffer.alloc(32)
  header.writeUInt32LE(0xfeedfacf, 0)
  header.writeUInt32LE(cputype, 4)
  header.writeUInt32LE(2, 12) // MH_EXECUTE
  header.writeUInt32LE(3, 16)
  header.writeUInt32LE(commands.length, 20)
  const file = Buffer.alloc(SIG_OFF + SIG_SIZE, 0xab)
  header.copy(file, 0)
  commands.copy(file, 32)
  file.fill(0, 32 + commands.length, LINKEDIT_OFF)
  return file
}

describe('removeMachOSignature', () => {
  it('drops LC_CODE_SIGNATURE and the signature, and shrinks __LINKEDIT to what is left', () => {
    const signed = signedFile(0x0100000c) // arm64: 16 KiB pages
    const unsigned = macho.removeMachOSignature(signed)
    expect(unsigned.length).toBe(SIG_OFF)
    expect(unsigned.readUInt32LE(16)).toBe(2)
    expect(unsigned.readUInt32LE(20)).toBe(144)
    const commands = macho.machOLoadCommands(unsigned)
    expect(commands.map((c) => c.segname)).toEqual(['__TEXT', '__LINKEDIT'])
    const linkedit = commands[1]!.offset
    expect(Number(unsigned.readBigUInt64LE(linkedit + 48))).toBe(SIG_OFF - LINKEDIT_OFF)
    expect(Number(unsigned.readBigUInt64LE(linkedit + 32))).toBe(0x4000)
    expect(unsigned.subarray(32 + 144, 32 + 160).equals(Buffer.alloc(16))).toBe(true)
    expect(unsigned.subarray(LINKEDIT_OFF).equals(signed.subarray(LINKEDIT_OFF, SIG_OFF))).toBe(true)
    expect(macho.removeMachOSignature(unsigned)).toBe(unsigned)
  })

  it('refuses what is not a thin 64-bit Mach-O file', () => {
    expect(() => macho.removeMachOSignature(Buffer.from('\x7fELF\x02\x01\x01\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0\0', 'latin1'))).toThrow('not a thin 64-bit little-endian Mach-O file')
  })

  it('refuses a signature that is not at the end of the file', () => {
    const signed = signedFile(0x01000007)
    expect(() => macho.removeMachOSignature(Buffer.concat([signed, Buffer.alloc(16)]))).toThrow('not at the end of __LINKEDIT')
  })
})
