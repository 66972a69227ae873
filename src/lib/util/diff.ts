/**
 * Unified diffs of two texts (line based, Myers-style LCS via dynamic programming on the changed
 * middle). Manifests are small, so O(n·m) on the part that differs is fine.
 */

type Op = {kind: ' ' | '-' | '+'; line: string}

function diffLines(a: string[], b: string[]): Op[] {
  let start = 0
  while (start < a.length && start < b.length && a[start] === b[start]) start++
  let endA = a.length
  let endB = b.length
  while (endA > start && endB > start && a[endA - 1] === b[endB - 1]) {
    endA--
    endB--
  }
  const ma = a.slice(start, endA)
  const mb = b.slice(start, endB)
  const lcs: number[][] = Array.from({length: ma.length + 1}, () => new Array<number>(mb.length + 1).fill(0))
  for (let i = ma.length - 1; i >= 0; i--) {
    for (let j = mb.length - 1; j >= 0; j--) {
      lcs[i]![j] = ma[i] === mb[j] ? lcs[i + 1]![j + 1]! + 1 : Math.max(lcs[i + 1]![j]!, lcs[i]![j + 1]!)
    }
  }
  const ops: Op[] = a.slice(0, start).map((line) => ({kind: ' ', line}))
  let i = 0
  let j = 0
  while (i < ma.length || j < mb.length) {
    if (i < ma.length && j < mb.length && ma[i] === mb[j]) {
      ops.push({kind: ' ', line: ma[i]!})
      i++
      j++
    } else if (i < ma.length && (j >= mb.length || lcs[i + 1]![j]! >= lcs[i]![j + 1]!)) {
      // Removals before additions, as diff -u prints them.
      ops.push({kind: '-', line: ma[i]!})
      i++
    } else {
      ops.push({kind: '+', line: mb[j]!})
      j++
    }
  }
  for (const line of a.slice(endA)) ops.push({kind: ' ', line})
  return ops
}

/** `diff -u` output with `context` lines around each change; '' when the texts are equal. */
export function unifiedDiff(before: string, after: string, labels: {from: string; to: string}, context = 3): string {
  if (before === after) return ''
  const a = before === '' ? [] : before.replace(/\n$/, '').split('\n')
  const b = after === '' ? [] : after.replace(/\n$/, '').split('\n')
  const ops = diffLines(a, b)
  const out = [`--- ${labels.from}`, `+++ ${labels.to}`]
  let idx = 0
  let lineA = 1
  let lineB = 1
  const positions = ops.map((op) => {
    const pos = {a: lineA, b: lineB}
    if (op.kind !== '+') lineA++
    if (op.kind !== '-') lineB++
    return pos
  })
  while (idx < ops.length) {
    while (idx < ops.length && ops[idx]!.kind === ' ') idx++
    if (idx >= ops.length) break
    let hunkStart = Math.max(0, idx - context)
    let hunkEnd = idx
    // Extend the hunk while changes are closer than 2·context lines apart.
    for (let k = idx; k < ops.length; k++) {
      if (ops[k]!.kind !== ' ') hunkEnd = k
      else if (k - hunkEnd > 2 * context) break
    }
    const end = Math.min(ops.length, hunkEnd + context + 1)
    const slice = ops.slice(hunkStart, end)
    const countA = slice.filter((o) => o.kind !== '+').length
    const countB = slice.filter((o) => o.kind !== '-').length
    const startA = countA === 0 ? positions[hunkStart]!.a - 1 : positions[hunkStart]!.a
    const startB = countB === 0 ? positions[hunkStart]!.b - 1 : positions[hunkStart]!.b
    out.push(`@@ -${startA},${countA} +${startB},${countB} @@`)
    for (const op of slice) out.push(`${op.kind}${op.line}`)
    idx = end
    hunkStart = end
  }
  return out.join('\n') + '\n'
}
