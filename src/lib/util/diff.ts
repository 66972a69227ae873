/**
 * Unified diffs of two texts, as `diff -u` prints them. The line diff is the `diff` package's (Myers);
 * the hunks are formatted here. A missing final newline is not a difference (the texts are YAML
 * documents, compared as lines).
 */
import {diffArrays} from 'diff'

type Op = {kind: ' ' | '-' | '+'; line: string}

/**
 * Myers' cost grows with the number of edits times the length, so beyond MAX_EDITS changed lines the
 * part between the common first and last lines is shown as removed, then added: a correct diff, if not
 * the shortest, in linear time.
 */
const MAX_EDITS = 1000

function lineOps(a: string[], b: string[]): Op[] {
  const changes = diffArrays(a, b, {maxEditLength: MAX_EDITS})
  if (changes) return changes.flatMap((c) => c.value.map((line): Op => ({kind: c.removed ? '-' : c.added ? '+' : ' ', line})))
  let start = 0
  while (start < a.length && start < b.length && a[start] === b[start]) start++
  let end = 0
  while (end < a.length - start && end < b.length - start && a[a.length - 1 - end] === b[b.length - 1 - end]) end++
  const same = (lines: string[]): Op[] => lines.map((line) => ({kind: ' ', line}))
  return [
    ...same(a.slice(0, start)),
    ...a.slice(start, a.length - end).map((line): Op => ({kind: '-', line})),
    ...b.slice(start, b.length - end).map((line): Op => ({kind: '+', line})),
    ...same(a.slice(a.length - end)),
  ]
}

const lines = (text: string): string[] => (text === '' ? [] : text.replace(/\n$/, '').split('\n'))

/** `diff -u` output with `context` lines around each change; '' when the texts are equal. */
export function unifiedDiff(before: string, after: string, labels: {from: string; to: string}, context = 3): string {
  const a = lines(before)
  const b = lines(after)
  if (a.length === b.length && a.every((line, i) => line === b[i])) return ''
  const ops = lineOps(a, b)
  const changed = ops.flatMap((op, i) => (op.kind === ' ' ? [] : [i]))
  // Line numbers (1-based) of each op in the old and new text.
  const at: {a: number; b: number}[] = []
  let lineA = 1
  let lineB = 1
  for (const op of ops) {
    at.push({a: lineA, b: lineB})
    if (op.kind !== '+') lineA++
    if (op.kind !== '-') lineB++
  }
  const out = [`--- ${labels.from}`, `+++ ${labels.to}`]
  for (let k = 0; k < changed.length; ) {
    // One hunk: changes at most 2·context unchanged lines apart, with context lines around them.
    let last = k
    while (last + 1 < changed.length && changed[last + 1]! - changed[last]! - 1 <= 2 * context) last++
    const from = Math.max(0, changed[k]! - context)
    const to = Math.min(ops.length, changed[last]! + context + 1)
    const hunk = ops.slice(from, to)
    const countA = hunk.filter((op) => op.kind !== '+').length
    const countB = hunk.filter((op) => op.kind !== '-').length
    // An empty side is numbered from the line before it (`@@ -0,0 +1,2 @@`), as diff -u does.
    out.push(`@@ -${countA === 0 ? at[from]!.a - 1 : at[from]!.a},${countA} +${countB === 0 ? at[from]!.b - 1 : at[from]!.b},${countB} @@`)
    for (const op of hunk) out.push(`${op.kind}${op.line}`)
    k = last + 1
  }
  return out.join('\n') + '\n'
}
