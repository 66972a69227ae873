/**
 * YAML in and out, with Kubernetes-safe options.
 *
 * - YAML 1.1 quoting on output, so `yes`, `on`, `0755` and dates stay strings for kubectl (sigs.k8s.io/yaml).
 * - No anchors/aliases (a repeated object would otherwise become `&a1` / `*a1`).
 * - No line folding (tokens and certificates must stay on one line).
 */
import {LineCounter, parseAllDocuments, stringify, type ToStringOptions} from 'yaml'
import {UsageError} from './errors.js'

const OUTPUT_OPTIONS: ToStringOptions & {version: '1.1'; aliasDuplicateObjects: false} = {
  version: '1.1',
  aliasDuplicateObjects: false,
  lineWidth: 0,
  minContentWidth: 0,
  // Sequences at the parent's column, as kubectl and istioctl print them.
  indentSeq: false,
}

/** One YAML document, ending with a newline. */
export function toYaml(value: unknown): string {
  return plainYaml(value) ?? stringify(value, OUTPUT_OPTIONS)
}

// A writer for the plain documents meshvm prints most (onboard's manifests): maps, sequences of maps
// and scalars, and strings that need no quoting. It gives what `yaml` gives with OUTPUT_OPTIONS, byte
// for byte, or undefined for anything else, which then goes to `yaml` whole (test/lib/yaml.test.ts
// compares both on fixed and generated documents). Offline onboard: ~3.5 ms CPU less per run.

/** Strings the writer may print unquoted: `yaml` prints these plain unless they match a YAML 1.1 type. */
const PLAIN = /^[A-Za-z0-9/_][A-Za-z0-9._/-]{0,999}$/
/**
 * The YAML 1.1 schema's implicit types (yaml 2.x, dist/schema/yaml-1.1 and common/null.js: bool, null,
 * int, float, sexagesimal, timestamp) that a PLAIN string can match; `yaml` quotes a string that
 * matches one, and so this writer leaves such strings to it.
 */
const YAML_11_TYPES = [
  /^(?:Y|y|[Yy]es|YES|[Tt]rue|TRUE|[Oo]n|ON)$/,
  /^(?:N|n|[Nn]o|NO|[Ff]alse|FALSE|[Oo]ff|OFF)$/,
  /^(?:~|[Nn]ull|NULL)?$/,
  /^[-+]?0b[0-1_]+$/,
  /^[-+]?0[0-7_]+$/,
  /^[-+]?[0-9][0-9_]*$/,
  /^[-+]?0x[0-9a-fA-F_]+$/,
  /^(?:[-+]?\.(?:inf|Inf|INF)|\.nan|\.NaN|\.NAN)$/,
  /^[-+]?(?:[0-9][0-9_]*)?(?:\.[0-9_]*)?[eE][-+]?[0-9]+$/,
  /^[-+]?(?:[0-9][0-9_]*)?\.[0-9_]*$/,
  /^[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}$/,
]

function plainScalar(value: unknown): string | undefined {
  if (typeof value === 'string') return PLAIN.test(value) && !YAML_11_TYPES.some((t) => t.test(value)) ? value : undefined
  if (typeof value === 'number') return Number.isSafeInteger(value) && !Object.is(value, -0) ? String(value) : undefined
  if (typeof value === 'boolean') return String(value)
  if (value === null) return 'null'
  return undefined
}

const isPlainObject = (value: unknown): value is Record<string, unknown> =>
  typeof value === 'object' && value !== null && (Object.getPrototypeOf(value) === Object.prototype || Object.getPrototypeOf(value) === null)

const hasEntries = (map: Record<string, unknown>): boolean => Object.values(map).some((v) => v !== undefined)

/** Lines of a map's entries at `indent`; undefined when something needs `yaml`. */
function mapLines(map: Record<string, unknown>, indent: string, out: string[]): boolean {
  for (const key of Object.keys(map)) {
    const value = map[key]
    if (value === undefined) continue
    const k = plainScalar(key)
    if (k === undefined) return false
    const scalar = plainScalar(value)
    if (scalar !== undefined) out.push(`${indent}${k}: ${scalar}\n`)
    else if (isPlainObject(value)) {
      if (!hasEntries(value)) out.push(`${indent}${k}: {}\n`)
      else {
        out.push(`${indent}${k}:\n`)
        if (!mapLines(value, indent + '  ', out)) return false
      }
    } else if (Array.isArray(value)) {
      if (value.length === 0) out.push(`${indent}${k}: []\n`)
      else {
        out.push(`${indent}${k}:\n`)
        // Sequences at the parent's column (indentSeq: false).
        if (!seqLines(value, indent, out)) return false
      }
    } else return false
  }
  return true
}

function seqLines(seq: unknown[], indent: string, out: string[]): boolean {
  for (const item of seq) {
    const scalar = plainScalar(item)
    if (scalar !== undefined) out.push(`${indent}- ${scalar}\n`)
    else if (isPlainObject(item) && hasEntries(item)) {
      const lines: string[] = []
      if (!mapLines(item, indent + '  ', lines)) return false
      // The first entry goes on the dash's line.
      lines[0] = `${indent}- ${lines[0]!.slice(indent.length + 2)}`
      out.push(...lines)
    } else return false
  }
  return true
}

/** `value` as `yaml` would print it with OUTPUT_OPTIONS, when it is plain enough; else undefined. */
export function plainYaml(value: unknown): string | undefined {
  if (!isPlainObject(value) || !hasEntries(value)) return undefined
  const out: string[] = []
  return mapLines(value, '', out) ? out.join('') : undefined
}

/** Several documents as one `---`-separated stream (no leading separator, as kubectl prints). */
export function toYamlStream(values: unknown[]): string {
  return values.map((v) => toYaml(v)).join('---\n')
}

export interface ParsedDocument {
  /** 1-based index of the document in the stream. */
  index: number
  value: unknown
}

/**
 * Parses a multi-document YAML (or JSON) text. Errors name the source and the line/column.
 * Empty and comment-only documents are dropped.
 */
export function parseYamlStream(text: string, source: string): ParsedDocument[] {
  const lineCounter = new LineCounter()
  const docs = parseAllDocuments(text, {version: '1.1', prettyErrors: false, uniqueKeys: true, lineCounter})
  // An empty stream comes back as an EmptyStream object, not an array of documents.
  if (!Array.isArray(docs)) return []
  const out: ParsedDocument[] = []
  docs.forEach((doc, i) => {
    const err = doc.errors[0]
    if (err) {
      const pos = lineCounter.linePos(err.pos[0])
      const where = `${source}:${pos.line}:${pos.col}`
      throw new UsageError(`${where}: invalid YAML: ${err.message.split('\n')[0]}`)
    }
    let value: unknown
    try {
      // maxAliasCount bounds "billion laughs" documents; unresolved aliases also throw here.
      value = doc.toJS({maxAliasCount: 100})
    } catch (err) {
      throw new UsageError(`${source} (document ${i + 1}): invalid YAML: ${(err as Error).message.split('\n')[0]}`)
    }
    if (value !== null && value !== undefined) out.push({index: i + 1, value})
  })
  return out
}
