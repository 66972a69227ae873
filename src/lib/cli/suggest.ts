/** "Did you mean …?" for a mistyped command (`meshvm war lsit` → `war list`), as cobra does for kubectl. */

/** Damerau-free Levenshtein distance (cobra's SuggestionsMinimumDistance is 2). */
export function editDistance(a: string, b: string): number {
  const row = Array.from({length: b.length + 1}, (_, j) => j)
  for (let i = 1; i <= a.length; i++) {
    let prev = row[0]!
    row[0] = i
    for (let j = 1; j <= b.length; j++) {
      const cur = row[j]!
      row[j] = Math.min(row[j]! + 1, row[j - 1]! + 1, prev + (a[i - 1] === b[j - 1] ? 0 : 1))
      prev = cur
    }
  }
  return row[b.length]!
}

/**
 * The commands closest to what was typed (`typed` and `commands` in words: `war lsit`, `war list`):
 * within distance 2, or starting with what was typed, best first.
 */
export function suggestCommands(typed: string, commands: string[]): string[] {
  const scored = commands.map((c) => ({c, d: Math.min(editDistance(typed, c), ...prefixes(typed, c))})).filter((s) => s.d <= 2 || s.c.startsWith(typed))
  return scored.sort((x, y) => x.d - y.d || (x.c < y.c ? -1 : 1)).map((s) => s.c)
}

// `war lsit extra-arg`: the typed words beyond the command's own count are arguments.
function prefixes(typed: string, command: string): number[] {
  const words = typed.split(' ')
  const n = command.split(' ').length
  return words.length > n ? [editDistance(words.slice(0, n).join(' '), command)] : []
}
