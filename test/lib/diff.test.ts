import {describe, expect, it} from 'vitest'
import {unifiedDiff} from '../../src/lib/util/diff.js'

describe('unifiedDiff', () => {
  it('is empty for equal texts', () => {
    expect(unifiedDiff('a\nb\n', 'a\nb\n', {from: 'x', to: 'y'})).toBe('')
  })
  it('prints one hunk with context, like diff -u', () => {
    const before = 'a\nb\nc\nd\ne\nf\ng\nh\n'
    const after = 'a\nb\nc\nD\ne\nf\ng\nh\n'
    expect(unifiedDiff(before, after, {from: 'live', to: 'merged'})).toBe('--- live\n+++ merged\n@@ -1,7 +1,7 @@\n a\n b\n c\n-d\n+D\n e\n f\n g\n')
  })
  it('handles a new object (empty before)', () => {
    expect(unifiedDiff('', 'a\nb\n', {from: 'live', to: 'merged'})).toBe('--- live\n+++ merged\n@@ -0,0 +1,2 @@\n+a\n+b\n')
  })
  it('splits distant changes into separate hunks', () => {
    const lines = Array.from({length: 20}, (_, i) => `l${i}`)
    const changed = [...lines]
    changed[1] = 'X'
    changed[18] = 'Y'
    const d = unifiedDiff(lines.join('\n') + '\n', changed.join('\n') + '\n', {from: 'a', to: 'b'})
    expect(d.match(/^@@/gm)).toHaveLength(2)
    expect(d).toContain('@@ -1,5 +1,5 @@\n l0\n-l1\n+X\n l2\n l3\n l4\n')
    expect(d).toContain('@@ -16,5 +16,5 @@\n l15\n l16\n l17\n-l18\n+Y\n l19\n')
  })
})
