// Just enough Mach-O (thin, 64-bit, little-endian: what Node ships for macOS x64 and arm64) to remove a
// code signature, as `codesign --remove-signature` does before postject in Node's SEA guide. Field
// layouts: <mach-o/loader.h> (mach_header_64, segment_command_64, linkedit_data_command).
const MH_MAGIC_64 = 0xfeedfacf
const LC_SEGMENT_64 = 0x19
const LC_CODE_SIGNATURE = 0x1d
const HEADER_SIZE = 32
const CPU_TYPE_ARM64 = 0x0100000c

/** The load commands of a thin 64-bit Mach-O: {cmd, offset, size, segname?}. */
export function machOLoadCommands(buf) {
  if (buf.length < HEADER_SIZE || buf.readUInt32LE(0) !== MH_MAGIC_64) throw new Error('not a thin 64-bit little-endian Mach-O file')
  const ncmds = buf.readUInt32LE(16)
  const commands = []
  let offset = HEADER_SIZE
  for (let i = 0; i < ncmds; i++) {
    const cmd = buf.readUInt32LE(offset)
    const size = buf.readUInt32LE(offset + 4)
    const segname = cmd === LC_SEGMENT_64 ? buf.toString('latin1', offset + 8, offset + 24).replace(/\0+$/, '') : undefined
    commands.push({cmd, offset, size, segname})
    offset += size
  }
  return commands
}

/** A copy of the file without its LC_CODE_SIGNATURE and the signature data (the file itself if it has none). */
export function removeMachOSignature(input) {
  const commands = machOLoadCommands(input)
  const signature = commands.find((c) => c.cmd === LC_CODE_SIGNATURE)
  if (!signature) return input
  const linkedit = commands.find((c) => c.segname === '__LINKEDIT')
  if (!linkedit) throw new Error('Mach-O file has a code signature but no __LINKEDIT segment')
  const dataoff = input.readUInt32LE(signature.offset + 8)
  const datasize = input.readUInt32LE(signature.offset + 12)
  const fileoff = Number(input.readBigUInt64LE(linkedit.offset + 40))
  const filesize = Number(input.readBigUInt64LE(linkedit.offset + 48))
  // The signature is the last thing in __LINKEDIT, which is the last thing in the file.
  if (dataoff + datasize > input.length || fileoff + filesize !== input.length || dataoff < fileoff) throw new Error('Mach-O code signature is not at the end of __LINKEDIT')

  const buf = Buffer.from(input.subarray(0, dataoff))
  // Drop the load command: the ones after it move up, the freed bytes become zero.
  const end = HEADER_SIZE + buf.readUInt32LE(20)
  buf.copy(buf, signature.offset, signature.offset + signature.size, end)
  buf.fill(0, end - signature.size, end)
  buf.writeUInt32LE(buf.readUInt32LE(16) - 1, 16)
  buf.writeUInt32LE(buf.readUInt32LE(20) - signature.size, 20)
  // __LINKEDIT ends where the signature began.
  const segment = linkedit.offset > signature.offset ? linkedit.offset - signature.size : linkedit.offset
  const page = buf.readUInt32LE(4) === CPU_TYPE_ARM64 ? 0x4000 : 0x1000
  const newSize = dataoff - fileoff
  buf.writeBigUInt64LE(BigInt(newSize), segment + 48)
  buf.writeBigUInt64LE(BigInt(Math.ceil(newSize / page) * page), segment + 32)
  return buf
}

export const MACHO = {LC_CODE_SIGNATURE, LC_SEGMENT_64}
