import {describe, expect, it} from 'vitest'
import {terminalSafe, terminalSafeLines} from '../../../src/lib/output/terminal.js'

describe('terminalSafe', () => {
  it('leaves ordinary text (and non-ASCII letters) untouched', () => {
    expect(terminalSafe('web-vm-1.apps ✓ 名前')).toBe('web-vm-1.apps ✓ 名前')
  })
  it('escapes ESC sequences, C0, DEL and C1 controls', () => {
    expect(terminalSafe('a\u001b[2Jb')).toBe('a\\e[2Jb')
    expect(terminalSafe('x\u0007\u0000\u007f\u009b')).toBe('x\\x07\\x00\\x7f\\x9b')
    expect(terminalSafe('line1\nline2\r\t')).toBe('line1\\nline2\\r\\t')
  })
  it('escapes bidi overrides and line separators', () => {
    expect(terminalSafe('a\u202eb\u2028c')).toBe('a\\u202eb\\u2028c')
  })
  it('is stable when called twice on its own output', () => {
    const once = terminalSafe('\u001b]0;title\u0007')
    expect(terminalSafe(once)).toBe(once)
  })
  it('terminalSafeLines keeps newlines and tabs but not other controls', () => {
    expect(terminalSafeLines('a\n\tb\u001b[31m\r')).toBe('a\n\tb\\e[31m\\r')
  })
})
