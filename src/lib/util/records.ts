/** A copy of a string-keyed record with its keys in byte order, for deterministic output. */
export function sortedRecord<V>(record: Record<string, V>): Record<string, V> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => (a < b ? -1 : a > b ? 1 : 0)))
}
