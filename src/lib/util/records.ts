/** The order of Array.prototype.sort's default (UTF-16 code units; byte order for ASCII), as a comparator for sorting by a string key. */
export function compareStrings(a: string, b: string): number {
  return a < b ? -1 : a > b ? 1 : 0
}

/** A copy of a string-keyed record with its keys in sorted order, for deterministic output (array-index keys still come first: JavaScript objects keep them so). */
export function sortedRecord<V>(record: Record<string, V>): Record<string, V> {
  return Object.fromEntries(Object.entries(record).sort(([a], [b]) => compareStrings(a, b)))
}

/**
 * A copy without the keys whose value is undefined, so JSON/YAML output has no empty fields. A copy
 * rather than `delete`: deleting properties sends V8 objects to slow dictionary mode, which costs
 * when thousands of rows are rendered.
 */
export function withoutUndefined<T extends object>(o: T): T {
  const out = {} as Record<string, unknown>
  for (const k in o) if (o[k] !== undefined) out[k] = o[k]
  return out as T
}

export type JsonRecord = Record<string, unknown>

/** A plain JSON object (not null, not an array): what every reader of untrusted objects checks first. */
export function isRecord(v: unknown): v is JsonRecord {
  return typeof v === 'object' && v !== null && !Array.isArray(v)
}
