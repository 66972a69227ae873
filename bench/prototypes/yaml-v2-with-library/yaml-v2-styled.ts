/**
 * Prototype variant B (issue #29): the `yaml` library told, scalar by scalar, the style yaml.v2
 * would pick (plain, single, double, literal), and writing numbers as Go does. The style choice is
 * go-compat's own analysis, copied below unchanged from src/lib/util/go-compat.ts (its
 * yaml_emitter_analyze_scalar, select_scalar_style and YAML 1.1 resolver): no library option makes
 * that choice. compare.ts (VARIANT=styled) measures what still differs.
 */
import {Document, Scalar, type ScalarTag, visit} from 'yaml'
import {goYamlKeyCompare} from '../../../src/lib/util/go-compat.js'

type Pair = {key: unknown}
const keyOf = (p: Pair) => String((p.key as {value?: unknown})?.value ?? p.key)
const TYPE = {plain: Scalar.PLAIN, single: Scalar.QUOTE_SINGLE, double: Scalar.QUOTE_DOUBLE, literal: Scalar.BLOCK_LITERAL} as const

export function yamlV2Styled(value: unknown): string {
  const doc = new Document(value, {
    version: '1.1',
    aliasDuplicateObjects: false,
    sortMapEntries: (a: Pair, b: Pair) => goYamlKeyCompare(keyOf(a), keyOf(b)),
    customTags: (tags) => tags.map((t) => (typeof t === 'object' && t.tag === 'tag:yaml.org,2002:float' ? ({...t, stringify: ({value: v}: Scalar) => goNumber(Number(v))} as ScalarTag) : t)),
  })
  visit(doc, {
    Scalar(key, node) {
      if (typeof node.value === 'string') node.type = TYPE[selectStyle(node.value, (/^[\x20-\x7e\n]*$/.test(node.value) ? analyzeAscii : analyze)(node.value), key === 'key')]
    },
  })
  return doc.toString({indentSeq: false, blockQuote: 'literal', lineWidth: 0, minContentWidth: 0})
}

type Style = keyof typeof TYPE
// ---- copied from src/lib/util/go-compat.ts (isBreak … goNumber, without its escape table) ----
const isBreak = (c: number) => c === 0x0a || c === 0x0d || c === 0x85 || c === 0x2028 || c === 0x2029
const isBlank = (c: number | undefined) => c === 0x20 || c === 0x09
const isBlankz = (c: number) => isBlank(c) || isBreak(c) || c === 0

/** yaml.v2's is_printable, on code points. 4-byte characters (emoji) are not printable for it. */
function isPrintable(c: number): boolean {
  return c === 0x0a || (c >= 0x20 && c <= 0x7e) || (c >= 0xa0 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd && c !== 0xfeff)
}

interface Analysis {
  multiline: boolean
  blockPlain: boolean
  singleQuoted: boolean
  block: boolean
}

/** yaml_emitter_analyze_scalar, block context only. */
function analyze(s: string): Analysis {
  if (s.length === 0) return {multiline: false, blockPlain: true, singleQuoted: true, block: false}
  const cps = Array.from(s, (c) => c.codePointAt(0)!)
  let blockIndicators = false
  let lineBreaks = false
  let special = false
  let leadingSpace = false
  let leadingBreak = false
  let trailingSpace = false
  let trailingBreak = false
  let breakSpace = false
  let spaceBreak = false
  let precededByWhitespace = true
  let previousSpace = false
  let previousBreak = false
  if (s.startsWith('---') || s.startsWith('...')) blockIndicators = true
  for (let i = 0; i < cps.length; i++) {
    const c = cps[i]!
    const ch = String.fromCodePoint(c)
    const followedByWhitespace = i + 1 >= cps.length || isBlank(cps[i + 1])
    if (i === 0) {
      if ('#,[]{}&*!|>\'"%@`'.includes(ch)) blockIndicators = true
      else if ((ch === '?' || ch === ':' || ch === '-') && followedByWhitespace) blockIndicators = true
    } else if (ch === ':' && followedByWhitespace) blockIndicators = true
    else if (ch === '#' && precededByWhitespace) blockIndicators = true
    if (!isPrintable(c)) special = true
    if (c === 0x20) {
      if (i === 0) leadingSpace = true
      if (i === cps.length - 1) trailingSpace = true
      if (previousBreak) breakSpace = true
      previousSpace = true
      previousBreak = false
    } else if (isBreak(c)) {
      lineBreaks = true
      if (i === 0) leadingBreak = true
      if (i === cps.length - 1) trailingBreak = true
      if (previousSpace) spaceBreak = true
      previousSpace = false
      previousBreak = true
    } else {
      previousSpace = false
      previousBreak = false
    }
    precededByWhitespace = isBlankz(c)
  }
  return {
    multiline: lineBreaks,
    blockPlain: !(leadingSpace || leadingBreak || trailingSpace || trailingBreak || breakSpace || spaceBreak || special || lineBreaks || blockIndicators),
    singleQuoted: !(breakSpace || spaceBreak || special),
    block: !(trailingSpace || spaceBreak || special),
  }
}

/**
 * analyze() for printable ASCII and line feeds, from whole-string tests: nothing is special (all
 * printable), the only break is the line feed and the only blank the space.
 */
function analyzeAscii(s: string): Analysis {
  if (s.length === 0) return {multiline: false, blockPlain: true, singleQuoted: true, block: false}
  const first = s[0]!
  const last = s[s.length - 1]!
  const blockIndicators =
    s.startsWith('---') || s.startsWith('...') || '#,[]{}&*!|>\'"%@`'.includes(first) || ('?:-'.includes(first) && (s.length === 1 || s[1] === ' ')) || /:(?: |$)/.test(s.slice(1)) || /[ \n]#/.test(s)
  const lineBreaks = s.includes('\n')
  const trailingSpace = last === ' '
  const breakSpace = s.includes('\n ')
  const spaceBreak = s.includes(' \n')
  return {
    multiline: lineBreaks,
    blockPlain: !(first === ' ' || first === '\n' || trailingSpace || last === '\n' || breakSpace || spaceBreak || lineBreaks || blockIndicators),
    singleQuoted: !(breakSpace || spaceBreak),
    block: !(trailingSpace || spaceBreak),
  }
}

/** yaml.v2 encoder.stringv + yaml_emitter_select_scalar_style (block context). */
function selectStyle(s: string, a: Analysis, simpleKey: boolean): Style {
  let style: Style = s.includes('\n') ? 'literal' : resolvesAsString(s) && !BASE60_FLOAT.test(s) ? 'plain' : 'double'
  if (simpleKey && a.multiline) style = 'double'
  if (style === 'plain' && (!a.blockPlain || (s === '' && simpleKey))) style = 'single'
  if (style === 'single' && !a.singleQuoted) style = 'double'
  if (style === 'literal' && (!a.block || simpleKey)) style = 'double'
  return style
}

const RESOLVE_MAP = new Set([
  ...['y', 'Y', 'yes', 'Yes', 'YES', 'true', 'True', 'TRUE', 'on', 'On', 'ON'],
  ...['n', 'N', 'no', 'No', 'NO', 'false', 'False', 'FALSE', 'off', 'Off', 'OFF'],
  ...['', '~', 'null', 'Null', 'NULL'],
  ...['.nan', '.NaN', '.NAN', '.inf', '.Inf', '.INF', '+.inf', '+.Inf', '+.INF', '-.inf', '-.Inf', '-.INF'],
  '<<',
])
const YAML_STYLE_FLOAT = /^[-+]?(\.[0-9]+|[0-9]+(\.[0-9]*)?)([eE][-+]?[0-9]+)?$/
const BASE60_FLOAT = /^[-+]?[0-9][0-9_]*(?::[0-5]?[0-9])+(?:\.[0-9_]*)?$/

/** yaml.v2 resolve("", s) === !!str: whether s would read back as a string when written plain. */
function resolvesAsString(s: string): boolean {
  if (RESOLVE_MAP.has(s)) return s === '<<' // the merge key is its own tag, but '<' has no hint
  const c = s[0]!
  if (c === '.') return !(/^\.[0-9]+([eE][-+]?[0-9]+)?$/.test(s) && Number.isFinite(Number(s)))
  if (!/[-+0-9]/.test(c)) return true
  if (isGoTimestamp(s)) return false
  const plain = s.replace(/_/g, '')
  if (goParsesAsInt(plain)) return false
  // ParseFloat fails on overflow (1e999), which leaves the value a string.
  if (YAML_STYLE_FLOAT.test(plain) && Number.isFinite(Number(plain))) return false
  return true
}

/** strconv.ParseInt(s, 0, 64) or ParseUint(s, 0, 64) succeeds. */
function goParsesAsInt(s: string): boolean {
  const m = /^([+-]?)(0[xX][0-9a-fA-F]+|0[bB][01]+|0[oO][0-7]+|0[0-7]*|[1-9][0-9]*)$/.exec(s)
  if (!m) return false
  const sign = m[1]
  let body = m[2]!
  if (/^0[oO]/.test(body)) body = '0o' + body.slice(2)
  else if (/^0[0-7]+$/.test(body)) body = '0o' + body.slice(1)
  else if (/^0[xXbB]/.test(body)) body = body.slice(0, 2).toLowerCase() + body.slice(2)
  const n = BigInt(body)
  if (sign === '-') return n <= 2n ** 63n
  if (sign === '+') return n <= 2n ** 63n - 1n
  return n <= 2n ** 64n - 1n
}

/** yaml.v2 parseTimestamp: YYYY-M-D, optionally with a time (T, t or space) and, with T/t, a zone. */
function isGoTimestamp(s: string): boolean {
  const m = /^(\d{4})-(\d{1,2})-(\d{1,2})(?:([Tt ])(\d{1,2}):(\d{1,2}):(\d{1,2})(?:[.,]\d+)?(Z|[+-]\d{2}:\d{2})?)?$/.exec(s)
  if (!m) return false
  const [, y, mo, d, sep, h, mi, se, zone] = m
  const year = Number(y)
  const month = Number(mo)
  const day = Number(d)
  if (month < 1 || month > 12) return false
  const leap = year % 4 === 0 && (year % 100 !== 0 || year % 400 === 0)
  const daysIn = [31, leap ? 29 : 28, 31, 30, 31, 30, 31, 31, 30, 31, 30, 31][month - 1]!
  if (day < 1 || day > daysIn) return false
  if (sep === undefined) return true
  if (Number(h) > 23 || Number(mi) > 59 || Number(se) > 59) return false
  if (sep === ' ') return zone === undefined
  if (zone === undefined) return false
  // Go's offset range test uses > rather than >=: +24:00 and +00:60 parse.
  if (zone !== 'Z' && (Number(zone.slice(1, 3)) > 24 || Number(zone.slice(4, 6)) > 60)) return false
  return true
}

/**
 * A number as yaml.v2 writes it: integers in decimal; other values as Go's
 * strconv.FormatFloat(f, 'g', -1, 64) (shortest digits, exponent form below 1e-4 and from 1e6,
 * at least two exponent digits), and .inf / -.inf / .nan.
 */
function goNumber(value: number): string {
  if (Number.isNaN(value)) return '.nan'
  if (value === Infinity) return '.inf'
  if (value === -Infinity) return '-.inf'
  if (Number.isSafeInteger(value)) return String(value)
  const [mantissa, e] = value.toExponential().split('e') as [string, string]
  const exp = Number(e)
  if (exp < -4 || exp >= 6) return `${mantissa}e${exp < 0 ? '-' : '+'}${String(Math.abs(exp)).padStart(2, '0')}`
  return String(value)
}
