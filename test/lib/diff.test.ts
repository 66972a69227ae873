import {applyPatch} from 'diff'
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

/** `l0`…`l{n-1}`, one per line. */
const numbered = (n: number, edit: (lines: string[]) => void = () => {}): string => {
  const lines = Array.from({length: n}, (_, i) => `l${i}`)
  edit(lines)
  return lines.map((l) => `${l}\n`).join('')
}

describe('unifiedDiff: hunks', () => {
  it('merges changes 6 unchanged lines apart (2·context) into one hunk, and splits them at 7', () => {
    const six = unifiedDiff(
      numbered(20),
      numbered(20, (l) => {
        l[5] = 'A'
        l[12] = 'B'
      }),
      {from: 'a', to: 'b'},
    )
    expect(six).toBe(['--- a', '+++ b', '@@ -3,14 +3,14 @@', ' l2', ' l3', ' l4', '-l5', '+A', ' l6', ' l7', ' l8', ' l9', ' l10', ' l11', '-l12', '+B', ' l13', ' l14', ' l15', ''].join('\n'))
    const seven = unifiedDiff(
      numbered(20),
      numbered(20, (l) => {
        l[5] = 'A'
        l[13] = 'B'
      }),
      {from: 'a', to: 'b'},
    )
    expect(seven).toBe(
      ['--- a', '+++ b', '@@ -3,7 +3,7 @@', ' l2', ' l3', ' l4', '-l5', '+A', ' l6', ' l7', ' l8', '@@ -11,7 +11,7 @@', ' l10', ' l11', ' l12', '-l13', '+B', ' l14', ' l15', ' l16', ''].join('\n'),
    )
  })

  it('context at the edges: a change on the first and last lines', () => {
    expect(
      unifiedDiff(
        numbered(10),
        numbered(10, (l) => {
          l[0] = 'A'
          l[9] = 'B'
        }),
        {from: 'a', to: 'b'},
      ),
    ).toBe(['--- a', '+++ b', '@@ -1,4 +1,4 @@', '-l0', '+A', ' l1', ' l2', ' l3', '@@ -7,4 +7,4 @@', ' l6', ' l7', ' l8', '-l9', '+B', ''].join('\n'))
  })

  it('pure insertions and deletions are numbered as diff -u numbers them', () => {
    expect(
      unifiedDiff(
        numbered(6),
        numbered(6, (l) => l.splice(3, 0, 'new')),
        {from: 'a', to: 'b'},
      ),
    ).toBe(['--- a', '+++ b', '@@ -1,6 +1,7 @@', ' l0', ' l1', ' l2', '+new', ' l3', ' l4', ' l5', ''].join('\n'))
    expect(
      unifiedDiff(
        numbered(6),
        numbered(6, (l) => l.splice(3, 0, 'new')),
        {from: 'a', to: 'b'},
        0,
      ),
    ).toBe(['--- a', '+++ b', '@@ -3,0 +4,1 @@', '+new', ''].join('\n'))
    expect(
      unifiedDiff(
        numbered(6),
        numbered(6, (l) => l.splice(2, 2)),
        {from: 'a', to: 'b'},
        0,
      ),
    ).toBe(['--- a', '+++ b', '@@ -3,2 +2,0 @@', '-l2', '-l3', ''].join('\n'))
    expect(unifiedDiff('a\nb\n', '', {from: 'live', to: 'merged'})).toBe('--- live\n+++ merged\n@@ -1,2 +0,0 @@\n-a\n-b\n')
  })

  it('removals before additions within a change; a missing final newline is no difference', () => {
    expect(unifiedDiff('a\nb\nc\n', 'a\nX\nY\nc\n', {from: 'a', to: 'b'})).toBe('--- a\n+++ b\n@@ -1,3 +1,4 @@\n a\n-b\n+X\n+Y\n c\n')
    expect(unifiedDiff('a\nb', 'a\nb\n', {from: 'a', to: 'b'})).toBe('')
  })

  it('6,000 changed lines: every line is in the diff, and applying it gives the new text', () => {
    const before = numbered(6_000)
    const after = numbered(6_000, (l) => {
      for (let i = 0; i < l.length; i++) l[i] = `changed ${i}`
    })
    const d = unifiedDiff(before, after, {from: 'a', to: 'b'})
    const body = d.split('\n').slice(3, -1)
    expect(d.split('\n')[2]).toBe('@@ -1,6000 +1,6000 @@')
    expect(
      body
        .filter((l) => l.startsWith('-'))
        .map((l) => `${l.slice(1)}\n`)
        .join(''),
    ).toBe(before)
    expect(
      body
        .filter((l) => l.startsWith('+'))
        .map((l) => `${l.slice(1)}\n`)
        .join(''),
    ).toBe(after)
    // Interleaved changes: every other line of 6,000 replaced, hunks merged into one.
    const alternate = numbered(6_000, (l) => {
      for (let i = 0; i < l.length; i += 2) l[i] = `x${i}`
    })
    const lines = unifiedDiff(before, alternate, {from: 'a', to: 'b'}).split('\n')
    expect(lines.filter((l) => l.startsWith('@@'))).toEqual(['@@ -1,6000 +1,6000 @@'])
    const kept = lines
      .slice(3, -1)
      .filter((l) => !l.startsWith('-'))
      .map((l) => `${l.slice(1)}\n`)
      .join('')
    expect(kept).toBe(alternate)
  })
  it('scattered changes in 6,000 lines (within the Myers bound and beyond it): the patch applies to the new text', () => {
    const before = numbered(6_000)
    for (const every of [20, 3]) {
      const after = numbered(6_000, (l) => {
        for (let i = 0; i < l.length; i += every) l[i] = `x${i}`
        l.splice(100, 0, 'inserted')
        l.splice(5000, 3)
      })
      expect(applyPatch(before, unifiedDiff(before, after, {from: 'a', to: 'b'}))).toBe(after)
    }
  })
})
