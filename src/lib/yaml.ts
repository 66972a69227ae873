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
  return stringify(value, OUTPUT_OPTIONS)
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
