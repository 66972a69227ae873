/**
 * Byte-compatibility with what istioctl writes through Go libraries, in one place for the VM bundle
 * and the remote secret: yaml.v2's key order and its emitter (sigs.k8s.io/yaml: quoting styles,
 * indentless sequences, folding of long lines with spaces at column 80), encoding/json's string
 * escaping, and Istio's shellescape.Quote (with its regex quirk). Pure: no I/O.
 */
import {isRecord} from './records.js'

const isLetter = (c: string) => /\p{L}/u.test(c)
const isDigit = (c: string) => c >= '0' && c <= '9'

/**
 * yaml.v2's keyList.Less for string keys: at the first differing rune, a non-letter sorts before a
 * letter, runs of digits compare as numbers, and a prefix sorts first. (So `ISTIO_META_WORKLOAD_NAME`
 * comes before `ISTIO_METAJSON_LABELS`, unlike plain byte order.)
 */
export function goYamlKeyCompare(a: string, b: string): number {
  const ar = [...a]
  const br = [...b]
  for (let i = 0; i < ar.length && i < br.length; i++) {
    const ac = ar[i]!
    const bc = br[i]!
    if (ac === bc) continue
    const al = isLetter(ac)
    const bl = isLetter(bc)
    if (al && bl) return ac < bc ? -1 : 1
    if (al || bl) return bl ? -1 : 1
    let an = 0
    let bn = 0
    if (ac === '0' || bc === '0') {
      for (let j = i - 1; j >= 0 && isDigit(ar[j]!); j--) {
        if (ar[j] !== '0') {
          an = 1
          bn = 1
          break
        }
      }
    }
    let ai = i
    let bi = i
    for (; ai < ar.length && isDigit(ar[ai]!); ai++) an = an * 10 + Number(ar[ai])
    for (; bi < br.length && isDigit(br[bi]!); bi++) bn = bn * 10 + Number(br[bi])
    if (an !== bn) return an < bn ? -1 : 1
    if (ai !== bi) return ai < bi ? -1 : 1
    return ac < bc ? -1 : 1
  }
  return ar.length - br.length
}

/** Go's encoding/json for a string→string map: keys in byte order, HTML-safe escapes. */
export function goJsonStringMap(map: Record<string, string>): string {
  const keys = Object.keys(map).sort((x, y) => (x < y ? -1 : x > y ? 1 : 0))
  return `{${keys.map((k) => `${goJsonString(k)}:${goJsonString(map[k]!)}`).join(',')}}`
}

export function goJsonString(s: string): string {
  return goHtmlEscape(JSON.stringify(s))
}

/**
 * JSON text as Go's json.Marshal writes it: <, >, &, U+2028 and U+2029 inside strings escaped as
 * \u00XX (its HTML-safe escaping). The one Go-style JSON escape (output/jsonpath.ts uses it too).
 */
export function goHtmlEscape(json: string): string {
  return json.replace(/[<>&\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)
}

/**
 * Istio's shellescape.Quote. Its pattern is the Go raw string `[^\\w@%+=:,./-]`, in which `\\` is a
 * literal backslash, so `w` is a literal letter too: any value with a character outside
 * {\, w, @, %, +, =, :, ,, ., /, -} is single-quoted. Almost every value is, which is harmless.
 */
export function istioShellQuote(value: string): string {
  if (value === '') return "''"
  if (/[^\\w@%+=:,./-]/.test(value)) return `'${value.replace(/'/g, `'"'"'`)}'`
  return value
}

// ---------------------------------------------------------------------------------------------
// yaml.v2 (sigs.k8s.io/yaml) emitter
// ---------------------------------------------------------------------------------------------

export type GoYaml = string | number | boolean | null | GoYaml[] | {[key: string]: GoYaml}

/** `yaml.Marshal` of sigs.k8s.io/yaml (yaml.v2) for JSON-shaped values. Ends with a newline. */
export function goYamlMarshal(value: GoYaml): string {
  return new GoYamlEmitter(true).document(value)
}

/**
 * The same, walking every string code point by code point, as yaml.v2's emitter does: what
 * goYamlMarshal does for strings outside printable ASCII, and the reference its whole-run path for
 * printable ASCII (certificates, tokens, kubeconfigs) is tested against.
 */
export function goYamlMarshalByCodePoint(value: GoYaml): string {
  return new GoYamlEmitter(false).document(value)
}

const BEST_WIDTH = 80
const BEST_INDENT = 2

type Style = 'plain' | 'single' | 'double' | 'literal'

/** Printable ASCII and line feeds: one UTF-16 unit per code point, nothing to escape but `"` and `\`. */
const ASCII_TEXT = /^[\x20-\x7e\n]*$/

class GoYamlEmitter {
  private out = ''
  private column = 0

  /** `runs`: write printable ASCII strings a run at a time rather than code point by code point. */
  constructor(private readonly runs: boolean) {}

  /** The document's text. */
  document(value: GoYaml): string {
    if (isMap(value) && Object.keys(value).length > 0) this.mapping(value, 0, false)
    else if (Array.isArray(value) && value.length > 0) this.sequence(value, 0)
    else this.inline(value, 0, false)
    if (this.column > 0) this.newline()
    // No `...` after a `|+` block scalar: yaml.v2's encoder.finish clears the emitter's open_ended flag
    // before the stream end, and Marshal's documents end implicitly.
    return this.out
  }

  private mapping(map: {[key: string]: GoYaml}, indent: number, firstInline: boolean): void {
    Object.keys(map)
      .sort(goYamlKeyCompare)
      .forEach((key, i) => {
        if (!(firstInline && i === 0)) this.indentTo(indent)
        this.key(key)
        this.put(':')
        this.node(map[key]!, indent, 'mapping')
      })
  }

  /** Block sequences are indentless: `- ` sits at the parent key's column. */
  private sequence(items: GoYaml[], indent: number, firstInline = false): void {
    for (const [i, item] of items.entries()) {
      if (!(firstInline && i === 0)) this.indentTo(indent)
      this.put('-')
      this.node(item, indent, 'sequence')
    }
  }

  /** Cursor is right after `key:` or `-`. `indent` is the column of that key or dash. */
  private node(value: GoYaml, indent: number, ctx: 'mapping' | 'sequence'): void {
    const inSequence = ctx === 'sequence'
    if (isMap(value) && Object.keys(value).length > 0) {
      if (inSequence) this.put(' ')
      this.mapping(value, indent + BEST_INDENT, inSequence)
    } else if (Array.isArray(value) && value.length > 0) {
      // A sequence in a sequence starts on the dash's line, two columns in: `- - a` / `  - b`.
      if (inSequence) this.put(' ')
      this.sequence(value, inSequence ? indent + BEST_INDENT : indent, inSequence)
    } else this.inline(value, indent + BEST_INDENT, true)
  }

  /** Scalars and empty collections; `indent` is where continuation lines start. */
  private inline(value: GoYaml, indent: number, space: boolean): void {
    if (space) this.put(' ')
    if (value === null) this.put('null')
    else if (typeof value === 'boolean') this.put(value ? 'true' : 'false')
    else if (typeof value === 'number') this.put(goNumber(value))
    else if (Array.isArray(value)) this.put('[]')
    else if (typeof value === 'object') this.put('{}')
    else this.scalar(wellFormed(value), indent, false)
  }

  private key(key: string): void {
    const k = wellFormed(key)
    if (Buffer.byteLength(k) > 128 || analyze(k).multiline) throw new Error('goYamlMarshal: keys longer than 128 bytes or with line breaks are not supported')
    this.scalar(k, 0, true)
  }

  private scalar(s: string, indent: number, simpleKey: boolean): void {
    if (this.runs && ASCII_TEXT.test(s)) {
      this.asciiScalar(s, indent, simpleKey)
      return
    }
    const cps = Array.from(s, (c) => c.codePointAt(0)!)
    const style = selectStyle(s, analyze(s), simpleKey)
    if (style === 'plain') this.plain(cps, indent, !simpleKey)
    else if (style === 'single') this.singleQuoted(cps, indent, !simpleKey)
    else if (style === 'double') this.doubleQuoted(cps, indent, !simpleKey)
    else this.literal(cps, indent)
  }

  /**
   * scalar() for printable ASCII and line feeds, writing the runs between the characters the
   * emitter decides on (spaces, line feeds, quotes, backslashes) whole, with the same decisions.
   */
  private asciiScalar(s: string, indent: number, simpleKey: boolean): void {
    const allowBreaks = !simpleKey
    const style = selectStyle(s, analyzeAscii(s), simpleKey)
    if (style === 'literal') {
      this.asciiLiteral(s, indent)
      return
    }
    // A line feed is never plain or single-quoted here (a string with one starts as a literal, and
    // only a plain one becomes single-quoted); in double quotes it is the escape \n.
    if (style === 'single') this.put("'")
    else if (style === 'double') this.put('"')
    let spaces = false
    let from = 0
    const special = style === 'plain' ? / /g : style === 'single' ? /[ ']/g : /[ "\\\n]/g
    for (let m = special.exec(s); m !== null; m = special.exec(s)) {
      const i = m.index
      if (i > from) {
        this.put(s.slice(from, i))
        spaces = false
      }
      from = i + 1
      const c = s[i]!
      if (c === ' ') {
        const next = s[i + 1]
        const fold = allowBreaks && !spaces && this.column > BEST_WIDTH
        // Quoted scalars never fold at their first or last character; only double quotes fold before a space (escaped).
        const inside = style === 'plain' || (i !== 0 && i !== s.length - 1)
        if (fold && inside && (style === 'double' || next !== ' ')) {
          this.indentTo(indent)
          if (style === 'double' && next === ' ') this.put('\\')
        } else this.put(' ')
        spaces = true
      } else {
        this.put(c === "'" ? "''" : c === '\n' ? '\\n' : `\\${c}`)
        spaces = false
      }
    }
    if (from < s.length) this.put(s.slice(from))
    if (style === 'single') this.put("'")
    else if (style === 'double') this.put('"')
  }

  private asciiLiteral(s: string, indent: number): void {
    this.literalHeader(s.charCodeAt(0), s.charCodeAt(s.length - 1), s.length === 1 ? undefined : s.charCodeAt(s.length - 2))
    s.split('\n').forEach((line, i) => {
      if (i > 0) this.newline()
      if (line !== '') {
        this.indentTo(indent)
        this.put(line)
      }
    })
  }

  private plain(cps: number[], indent: number, allowBreaks: boolean): void {
    let spaces = false
    for (let i = 0; i < cps.length; i++) {
      const c = cps[i]!
      if (c === 0x20) {
        if (allowBreaks && !spaces && this.column > BEST_WIDTH && cps[i + 1] !== 0x20) this.indentTo(indent)
        else this.putCp(c)
        spaces = true
      } else {
        this.putCp(c)
        spaces = false
      }
    }
  }

  private singleQuoted(cps: number[], indent: number, allowBreaks: boolean): void {
    this.put("'")
    let spaces = false
    let breaks = false
    for (let i = 0; i < cps.length; i++) {
      const c = cps[i]!
      if (c === 0x20) {
        if (allowBreaks && !spaces && this.column > BEST_WIDTH && i !== 0 && i !== cps.length - 1 && cps[i + 1] !== 0x20) this.indentTo(indent)
        else this.putCp(c)
        spaces = true
      } else if (isBreak(c)) {
        if (!breaks && c === 0x0a) this.newline()
        this.writeBreak(c)
        breaks = true
      } else {
        if (breaks) this.indentTo(indent)
        if (c === 0x27) this.put("'")
        this.putCp(c)
        spaces = false
        breaks = false
      }
    }
    this.put("'")
  }

  private doubleQuoted(cps: number[], indent: number, allowBreaks: boolean): void {
    this.put('"')
    let spaces = false
    for (let i = 0; i < cps.length; i++) {
      const c = cps[i]!
      if (!isPrintable(c) || c === 0xfeff || isBreak(c) || c === 0x22 || c === 0x5c) {
        this.put('\\' + escapeFor(c))
        spaces = false
      } else if (c === 0x20) {
        if (allowBreaks && !spaces && this.column > BEST_WIDTH && i !== 0 && i !== cps.length - 1) {
          this.indentTo(indent)
          if (cps[i + 1] === 0x20) this.put('\\')
        } else this.putCp(c)
        spaces = true
      } else {
        this.putCp(c)
        spaces = false
      }
    }
    this.put('"')
  }

  private literal(cps: number[], indent: number): void {
    this.literalHeader(cps[0]!, cps[cps.length - 1]!, cps.length === 1 ? undefined : cps[cps.length - 2])
    let breaks = true
    for (const c of cps) {
      if (isBreak(c)) {
        this.writeBreak(c)
        breaks = true
      } else {
        if (breaks) this.indentTo(indent)
        this.putCp(c)
        breaks = false
      }
    }
  }

  /** `|`, its indentation and chomping indicators, and the line break (`beforeLast` undefined: one code point). */
  private literalHeader(first: number, last: number, beforeLast: number | undefined): void {
    this.put('|')
    if (first === 0x20 || isBreak(first)) this.put(String(BEST_INDENT))
    if (!isBreak(last)) this.put('-')
    else if (beforeLast === undefined || isBreak(beforeLast)) this.put('+')
    this.newline()
  }

  /** yaml_emitter_write_indent: a line break unless at the start of a line, then pad to `indent`. */
  private indentTo(indent: number): void {
    if (this.column > 0) this.newline()
    this.out += ' '.repeat(indent)
    this.column = indent
  }

  private writeBreak(c: number): void {
    if (c === 0x0a) this.newline()
    else {
      this.out += String.fromCodePoint(c)
      this.column = 0
    }
  }

  private newline(): void {
    this.out += '\n'
    this.column = 0
  }

  private put(s: string): void {
    this.out += s
    this.column += s.length
  }

  private putCp(c: number): void {
    this.out += String.fromCodePoint(c)
    this.column++
  }
}

const isMap = (v: GoYaml): v is {[key: string]: GoYaml} => isRecord(v)

/** Lone surrogates become U+FFFD, as they do when Go's encoding/json sees invalid UTF-8. */
function wellFormed(s: string): string {
  return s.replace(/[\uD800-\uDBFF](?![\uDC00-\uDFFF])|(?<![\uD800-\uDBFF])[\uDC00-\uDFFF]/g, '\uFFFD')
}

const isBreak = (c: number) => c === 0x0a || c === 0x0d || c === 0x85 || c === 0x2028 || c === 0x2029
const isBlank = (c: number | undefined) => c === 0x20 || c === 0x09
const isBlankz = (c: number) => isBlank(c) || isBreak(c) || c === 0

/** yaml.v2's is_printable, on code points. 4-byte characters (emoji) are not printable for it. */
function isPrintable(c: number): boolean {
  return c === 0x0a || (c >= 0x20 && c <= 0x7e) || (c >= 0xa0 && c <= 0xd7ff) || (c >= 0xe000 && c <= 0xfffd && c !== 0xfeff)
}

const NAMED_ESCAPES: Record<number, string> = {
  0x00: '0',
  0x07: 'a',
  0x08: 'b',
  0x09: 't',
  0x0a: 'n',
  0x0b: 'v',
  0x0c: 'f',
  0x0d: 'r',
  0x1b: 'e',
  0x22: '"',
  0x5c: '\\',
  0x85: 'N',
  0xa0: '_',
  0x2028: 'L',
  0x2029: 'P',
}

function escapeFor(c: number): string {
  const n = NAMED_ESCAPES[c]
  if (n !== undefined) return n
  const hex = c.toString(16).toUpperCase()
  if (c <= 0xff) return 'x' + hex.padStart(2, '0')
  if (c <= 0xffff) return 'u' + hex.padStart(4, '0')
  return 'U' + hex.padStart(8, '0')
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
