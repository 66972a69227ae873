/**
 * A fast reader for the YAML that kubectl, kind, k3d, cloud CLIs and meshvm write kubeconfigs in:
 * block mappings and sequences of plain or quoted one-line strings, true/false and null. The `yaml`
 * library reads them too, but its first parse in a process runs cold code, on every cluster command;
 * this costs a fraction of it (measured on Node 24: docs/decisions/cluster-commands.md).
 *
 * It is a strict subset: anything it does not fully understand (flow collections, anchors, tags,
 * block or multi-line scalars, escapes, documents markers, duplicate keys, every plain scalar
 * that YAML 1.1 would read as anything but a string, true, false or null: numbers, yes/no, dates,
 * and every map key it would read as anything but a string: true/false, yes/no, on/off, null, ~)
 * makes it answer `undefined`, and the caller parses the text with the `yaml` library, which then
 * gives the exact value or error. So whatever it returns is what the library returns for the same
 * text (test/lib/kube/kubeconfig-yaml.test.ts compares them). A VM bundle reads Istio's mesh config
 * through it too (src/lib/bundle/mesh-yaml.ts): the same subset, read with the library's defaults.
 */

type Value = string | boolean | Value[] | {[key: string]: Value} | null

interface Line {
  indent: number
  text: string
}

/** Not ours to read: the caller falls back to the full parser. */
class Unsupported extends Error {}

const KEY = /^[A-Za-z_][A-Za-z0-9_.\-/]*$/
/**
 * Plain scalars YAML 1.1 reads as something else than a string: null, booleans, merge keys, and the
 * number and date forms of the 1.1 schema (binary, octal, decimal and hex integers, floats with an
 * optional exponent, which need no digit before it, ".inf"/".nan", base-60 numbers, dates). Each
 * pattern is that form or wider, never narrower; anything else starting with a digit (a hex token,
 * "10.0.0.1:6443") is a string, as the library reads it.
 */
const NOT_A_STRING = new RegExp(
  '^(?:~|null|Null|NULL|y|Y|yes|Yes|YES|n|N|no|No|NO|on|On|ON|off|Off|OFF|<<' +
    '|[-+]?0b[0-1_]+|[-+]?0x[0-9a-fA-F_]+' +
    '|[-+]?[0-9_]*(?:\\.[0-9_]*)?(?:[eE][-+]?[0-9]+)?' +
    '|[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\\.[0-9_]*)?' +
    '|[-+]?\\.(?:inf|Inf|INF|nan|NaN|NAN)' +
    '|[0-9]{4}-[0-9]{1,2}-[0-9]{1,2}(?:[tT ].*)?)$',
)
const BOOLEANS: Record<string, boolean> = {true: true, True: true, TRUE: true, false: false, False: false, FALSE: false}

function scalar(raw: string): Value {
  const text = raw.trim()
  if (text === '') throw new Unsupported()
  // kubectl writes "preferences: {}": the empty flow collections, and nothing else of flow style.
  const empty = /^(\{\}|\[\])(?:\s+#.*)?$/.exec(text)
  if (empty) return empty[1] === '{}' ? {} : []
  const first = text[0]!
  if (first === '"' || first === "'") {
    const close = text.lastIndexOf(first)
    if (close === 0) throw new Unsupported()
    const rest = text.slice(close + 1).trim()
    if (rest !== '' && !rest.startsWith('#')) throw new Unsupported()
    const body = text.slice(1, close)
    if (first === '"') {
      // No escapes, no quote inside: the text as it is.
      if (body.includes('\\') || body.includes('"')) throw new Unsupported()
      return body
    }
    // Single quotes: '' is a quote; a lone ' inside would end the scalar.
    if (body.replace(/''/g, '').includes("'")) throw new Unsupported()
    return body.replace(/''/g, "'")
  }
  // A comment starts at " #"; indicators and ": " inside a plain scalar are left to the full parser.
  const hash = text.indexOf(' #')
  const plain = (hash >= 0 ? text.slice(0, hash) : text).trimEnd()
  // "-" may start a plain scalar when a non-space follows ("--region"); other indicators are the full parser's.
  if (/^(?:[?:,[\]{}#&*!|>'"%@`]|-(?:\s|$))/.test(plain) || plain.includes(': ') || plain.endsWith(':') || plain.includes('\t')) throw new Unsupported()
  if (plain in BOOLEANS) return BOOLEANS[plain]!
  // kubectl writes "users: null" for an empty list.
  if (plain === 'null' || plain === 'Null' || plain === 'NULL' || plain === '~') return null
  if (NOT_A_STRING.test(plain)) throw new Unsupported()
  return plain
}

function keyOf(text: string): {key: string; rest: string} | undefined {
  const colon = text.indexOf(':')
  if (colon <= 0) return undefined
  const after = text[colon + 1]
  if (after !== undefined && after !== ' ') return undefined
  const key = text.slice(0, colon)
  // A key is a plain scalar too: YAML 1.1 reads "NO: x" as {false: x}, "Null: x" as {"": x}.
  if (!KEY.test(key) || key === '__proto__' || Object.hasOwn(BOOLEANS, key) || NOT_A_STRING.test(key)) throw new Unsupported()
  return {key, rest: text.slice(colon + 1)}
}

class BlockReader {
  private i = 0
  constructor(private readonly lines: Line[]) {}

  done(): boolean {
    return this.i >= this.lines.length
  }

  /** The block at `indent` that starts at the current line. */
  block(indent: number): Value {
    const line = this.lines[this.i]!
    if (line.indent !== indent) throw new Unsupported()
    return line.text === '-' || line.text.startsWith('- ') ? this.sequence(indent) : this.mapping(indent, undefined)
  }

  /** A mapping at `indent`; `first` is its first entry's text when it starts after "- ". */
  mapping(indent: number, first: string | undefined): {[key: string]: Value} {
    const out: {[key: string]: Value} = {}
    let text = first
    for (;;) {
      if (text === undefined) {
        const line = this.lines[this.i]
        if (!line || line.indent < indent) return out
        if (line.indent > indent) throw new Unsupported()
        text = line.text
        this.i++
      }
      const kv = keyOf(text)
      if (!kv || Object.hasOwn(out, kv.key)) throw new Unsupported()
      // The value: a scalar on the same line, or a block on the next lines.
      const content = kv.rest.trim()
      out[kv.key] = content !== '' && !content.startsWith('#') ? scalar(content) : this.nested(indent, true)
      text = undefined
    }
  }

  sequence(indent: number): Value[] {
    const out: Value[] = []
    for (;;) {
      const line = this.lines[this.i]
      if (!line || line.indent < indent) return out
      if (line.indent > indent || !(line.text === '-' || line.text.startsWith('- '))) {
        if (line.indent === indent) return out
        throw new Unsupported()
      }
      this.i++
      const rest = line.text.slice(1)
      const content = rest.trimStart()
      if (content === '' || content.startsWith('#')) {
        out.push(this.nested(indent, false))
      } else if (content.startsWith('- ') || content === '-') {
        throw new Unsupported()
      } else if (keyOf(content)) {
        // "- key: value": a mapping whose column is that of its first key.
        out.push(this.mapping(indent + 1 + (rest.length - content.length), content))
      } else {
        out.push(scalar(content))
      }
    }
  }

  private nested(indent: number, inMapping: boolean): Value {
    const next = this.lines[this.i]
    if (!next) return null
    if (next.indent > indent) return this.block(next.indent)
    // kubectl writes a mapping's sequences at the mapping's own column ("clusters:\n- name: x").
    if (inMapping && next.indent === indent && (next.text === '-' || next.text.startsWith('- '))) return this.sequence(indent)
    return null
  }
}

/** The kubeconfig document, or undefined when the text is not in the subset read here. */
export function parseKubeconfigYaml(text: string): Value | undefined {
  if (text.includes('\t') || text.includes('\r') || text.charCodeAt(0) === 0xfeff) return undefined
  const lines: Line[] = []
  for (const raw of text.split('\n')) {
    const body = raw.trimStart()
    if (body === '' || body.startsWith('#')) continue
    // Document markers and directives: the full parser's business.
    if (raw.startsWith('---') || raw.startsWith('...') || raw.startsWith('%')) return undefined
    lines.push({indent: raw.length - body.length, text: body.trimEnd()})
  }
  if (lines.length === 0) return null
  try {
    const reader = new BlockReader(lines)
    if (lines[0]!.indent !== 0) return undefined
    const doc = reader.block(0)
    return reader.done() ? doc : undefined
  } catch (err) {
    if (err instanceof Unsupported) return undefined
    throw err
  }
}
