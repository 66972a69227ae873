/**
 * kubectl's JSONPath template dialect (`-o jsonpath=…`, `-o custom-columns=…`, `--sort-by=…`): text with
 * `{…}` actions, `{range …}`/`{end}`, filters `[?(@.a=="x")]`, unions `[a,b]`, slices, `..` and `*`.
 * It is NOT plain JSONPath (RFC 9535, jsonpath-plus): the template text, range/end and the way results
 * are printed (space separated, maps and lists as compact JSON) are Kubernetes' own, so this is a port of
 * client-go's util/jsonpath (parser.go, jsonpath.go; Apache-2.0). test/lib/output/jsonpath.test.ts runs
 * that package's test cases as golden cases.
 */
import {goHtmlEscape} from '../util/go-compat.js'
import {isRecord as isMap} from '../util/records.js'

type Node =
  | {type: 'list'; nodes: Node[]}
  | {type: 'text'; text: string}
  | {type: 'field'; name: string}
  | {type: 'array'; params: [Param, Param, Param]}
  | {type: 'filter'; left: ListNode; right: ListNode; op: string}
  | {type: 'int' | 'float'; value: number}
  | {type: 'bool'; value: boolean}
  | {type: 'wildcard' | 'recursive'}
  | {type: 'union'; nodes: ListNode[]}
  | {type: 'identifier'; name: string}
type ListNode = {type: 'list'; nodes: Node[]}
interface Param {
  known: boolean
  value: number
  /** `[i]`: the end is i+1, taken after a negative i is counted from the end. */
  derived?: boolean
}

export class JsonPathError extends Error {}

const EOF = ''
const isDigit = (r: string): boolean => r >= '0' && r <= '9'
const isAlphaNumeric = (r: string): boolean => r === '_' || /^[\p{L}\p{Nd}]$/u.test(r)

class Parser {
  root: ListNode = {type: 'list', nodes: []}
  private pos = 0
  private start = 0

  constructor(private readonly input: string) {}

  parse(): ListNode {
    this.parseText(this.root)
    return this.root
  }

  private next(): string {
    if (this.pos >= this.input.length) return EOF
    return this.input[this.pos++]!
  }
  private backup(r: string): void {
    if (r !== EOF) this.pos--
  }
  private peek(): string {
    return this.input[this.pos] ?? EOF
  }
  private consume(): string {
    const v = this.input.slice(this.start, this.pos)
    this.start = this.pos
    return v
  }
  /** Moves past what the sticky `re` matches here, and consumes; undefined when it does not match. */
  private scan(re: RegExp): string | undefined {
    re.lastIndex = this.pos
    const m = re.exec(this.input)
    if (!m) return undefined
    this.pos += m[0].length
    return this.consume()
  }

  private parseText(cur: ListNode): void {
    for (;;) {
      if (this.input.startsWith('{', this.pos)) {
        if (this.pos > this.start) cur.nodes.push({type: 'text', text: this.consume()})
        this.pos += 1
        this.consume()
        const list: ListNode = {type: 'list', nodes: []}
        cur.nodes.push(list)
        this.parseInsideAction(list)
        return
      }
      if (this.next() === EOF) break
    }
    if (this.pos > this.start) cur.nodes.push({type: 'text', text: this.consume()})
  }

  private parseInsideAction(cur: ListNode): void {
    for (;;) {
      const rest = this.input.slice(this.pos)
      if (rest.startsWith('}')) {
        this.pos += 1
        this.consume()
        this.parseText(this.root)
        return
      }
      if (rest.startsWith('[?(')) {
        this.parseFilter(cur)
        continue
      }
      if (rest.startsWith('..')) {
        if (cur.nodes.at(-1)?.type === 'recursive') throw new JsonPathError('invalid multiple recursive descent')
        this.pos += 2
        this.consume()
        cur.nodes.push({type: 'recursive'})
        if (isAlphaNumeric(this.peek())) this.parseField(cur)
        continue
      }
      const r = this.next()
      if (r === EOF || r === '\r' || r === '\n') throw new JsonPathError('unclosed action')
      else if (r === ' ' || r === '@' || r === '$') this.consume()
      else if (r === '[') this.parseArray(cur)
      else if (r === '"' || r === "'") this.parseQuote(cur, r)
      else if (r === '.') this.parseField(cur)
      else if (r === '+' || r === '-' || isDigit(r)) {
        this.backup(r)
        this.parseNumber(cur)
      } else if (isAlphaNumeric(r)) {
        this.backup(r)
        this.parseIdentifier(cur)
      } else throw new JsonPathError(`unrecognized character in action: ${JSON.stringify(r)}`)
    }
  }

  private parseIdentifier(cur: ListNode): void {
    const value = this.scan(/[^ \t\r\n.,[\]$@{}]*/y)!
    cur.nodes.push(value === 'true' || value === 'false' ? {type: 'bool', value: value === 'true'} : {type: 'identifier', name: value})
  }

  private parseNumber(cur: ListNode): void {
    const value = this.scan(/[+-]?[\d.]*/y)!
    if (/^[+-]?\d+$/.test(value)) cur.nodes.push({type: 'int', value: Number(value)})
    else if (/^[+-]?(\d+\.?\d*|\.\d+)$/.test(value)) cur.nodes.push({type: 'float', value: Number(value)})
    else throw new JsonPathError(`cannot parse number ${value}`)
  }

  private parseArray(cur: ListNode): void {
    const array = this.scan(/[^\]\n]*\]/y)
    if (array === undefined) throw new JsonPathError('unterminated array')
    let text = array.slice(1, -1)
    if (text === '*') text = ':'
    const parts = text.split(',')
    if (parts.length > 1) {
      cur.nodes.push({type: 'union', nodes: parts.map((s) => parseAction(`[${s.trim()}]`))})
      return
    }
    const dict = /^'([^']*)'$/.exec(text)
    if (dict) {
      cur.nodes.push(...parseAction(`.${dict[1]}`).nodes)
      return
    }
    const slice = /^(-?\d*)(:-?\d*)?(:-?\d*)?$/.exec(text)
    if (!slice) throw new JsonPathError(`invalid array index ${text}`)
    const params = [1, 2, 3].map((group): Param => {
      const v = (slice[group] ?? '').replace(/^:/, '')
      if (v === '') return {known: false, value: 0}
      if (!/^-?\d+$/.test(v)) throw new JsonPathError(`array index ${v} is not a number`)
      return {known: true, value: Number(v)}
    }) as [Param, Param, Param]
    // `[i]` (no colon): one element.
    if (slice[2] === undefined) params[1] = {known: true, value: params[0].value + 1, derived: true}
    cur.nodes.push({type: 'array', params})
  }

  private parseFilter(cur: ListNode): void {
    this.pos += 3
    this.consume()
    let begin = false
    let end = false
    let pair = ''
    for (;;) {
      const r = this.next()
      if (r === EOF || r === '\n') throw new JsonPathError('unterminated filter')
      if (r === '"' || r === "'") {
        if (!begin) {
          begin = true
          pair = r
          continue
        }
        if (this.input[this.pos - 2] !== '\\' && r === pair) end = true
      } else if (r === ')' && begin === end) break
    }
    if (this.next() !== ']') throw new JsonPathError('unclosed array expect ]')
    const text = this.consume().slice(0, -2)
    const m = /^([^!<>=]+)([!<>=]+)(.+?)$/s.exec(text)
    if (!m) cur.nodes.push({type: 'filter', left: parseAction(text), right: {type: 'list', nodes: []}, op: 'exists'})
    else cur.nodes.push({type: 'filter', left: parseAction(m[1]!), right: parseAction(m[3]!), op: m[2]!})
  }

  /** After the opening quote: up to the first closing quote on the line that no backslash precedes (client-go's rule). */
  private parseQuote(cur: ListNode, quote: string): void {
    const value = this.scan(quote === '"' ? /[^\n]*?(?<!\\)"/y : /[^\n]*?(?<!\\)'/y)
    if (value === undefined) throw new JsonPathError('unterminated quoted string')
    cur.nodes.push({type: 'text', text: unquote(value)})
  }

  /** After the dot: up to a terminator; a backslash escapes the character after it. */
  private parseField(cur: ListNode): void {
    this.consume()
    const value = this.scan(/(?:\\[\s\S]?|[^ \t\r\n.,[\]$@{}])*/y)!
    cur.nodes.push(value === '*' ? {type: 'wildcard'} : {type: 'field', name: value.replace(/\\/g, '')})
  }
}

/** Go's strconv.Unquote, extended to single-quoted strings (client-go's UnquoteExtend). */
function unquote(s: string): string {
  const body = s.slice(1, -1)
  const quote = s[0]
  if (!body.includes('\\')) return body
  try {
    return JSON.parse(`"${(quote === "'" ? body.replace(/\\'/g, "'") : body).replace(/(^|[^\\])"/g, '$1\\"')}"`) as string
  } catch {
    throw new JsonPathError(`unquote string ${s} error invalid syntax`)
  }
}

function parseAction(text: string): ListNode {
  const root = new Parser(`{${text}}`).parse()
  return root.nodes[0] as ListNode
}

export interface Template {
  readonly source: string
  readonly root: ListNode
}

/** Parses a template; a `JsonPathError` says what is wrong. */
export function parseTemplate(source: string): Template {
  return {source, root: new Parser(source).parse()}
}

/**
 * kubectl's relaxed form for --sort-by and custom-columns: `.a.b`, `a.b` and `{.a.b}` all mean `{.a.b}`
 * (kubectl/pkg/cmd/get/customcolumn.go RelaxedJSONPathExpression).
 */
export function parseRelaxed(expression: string): Template {
  // kubectl's jsonRegexp: braces on both sides or on neither (`{.a.b`, `.a.b}` and `{.a}}` are refused).
  const m = /^\{\.?([^{}]+)\}$|^\.?([^{}]+)$/.exec(expression)
  if (!m) throw new JsonPathError(`unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'`)
  return parseTemplate(`{.${m[1] ?? m[2]}}`)
}

type Value = unknown
/** The Go type client-go's errors name for a value. */
function goType(v: Value): string {
  if (Array.isArray(v)) return '[]interface {}'
  if (isMap(v)) return 'map[string]interface {}'
  if (typeof v === 'number') return Number.isInteger(v) ? 'int64' : 'float64'
  return typeof v === 'string' ? 'string' : typeof v === 'boolean' ? 'bool' : 'interface {}'
}

class Evaluator {
  /** Ranges open (client-go keeps a stack of values; only its depth matters). */
  private ranges = 0
  private beginRange = 0
  private inRange = 0
  private endRange = 0

  constructor(private readonly allowMissingKeys: boolean) {}

  private lastEnd: Node | undefined

  // client-go's FindResults: a range runs the rest of the template once per value; the run stops at its
  // {end} (remembered in lastEnd), and the outer run goes on after that {end}.
  findResults(data: Value, root: ListNode): Value[][] {
    const cur = [data]
    const nodes = root.nodes
    const full: Value[][] = []
    for (let i = 0; i < nodes.length; i++) {
      const results = this.walk(cur, nodes[i]!)
      if (this.endRange > 0 && this.endRange <= this.inRange) {
        this.endRange--
        this.lastEnd = nodes[i]
        break
      }
      if (this.beginRange > 0) {
        this.beginRange--
        this.inRange++
        const body: ListNode = {type: 'list', nodes: nodes.slice(i + 1)}
        if (results.length > 0) for (const value of results) full.push(...this.findResults(value, body))
        // An empty range still walks its body once, on nothing, to find its {end}.
        else this.findResults(null, body)
        this.inRange--
        // The range's own {end} is skipped: it closes the range here.
        this.ranges--
        const end = nodes.indexOf(this.lastEnd as Node, i + 1)
        if (end >= 0) i = end
        continue
      }
      full.push(results)
    }
    return full
  }

  private walk(input: Value[], node: Node): Value[] {
    switch (node.type) {
      case 'list':
        return node.nodes.reduce<Value[]>((values, n) => this.walk(values, n), input)
      case 'text':
        return [node.text]
      case 'field':
        return this.field(input, node.name)
      case 'array':
        return this.array(input, node.params)
      case 'filter':
        return this.filter(input, node)
      case 'int':
      case 'float':
      case 'bool':
        return input.map(() => node.value)
      case 'wildcard':
        return input.flatMap(children)
      case 'recursive':
        return this.recursive(input)
      case 'union':
        return node.nodes.flatMap((l) => this.walk(input, l))
      case 'identifier':
        return this.identifier(input, node.name)
    }
  }

  private identifier(input: Value[], name: string): Value[] {
    if (name === 'range') {
      this.ranges++
      this.beginRange++
      return input
    }
    if (name === 'end') {
      if (this.endRange < this.inRange) {
        this.endRange++
        return []
      }
      if (this.ranges === 0) throw new JsonPathError('not in range, nothing to end')
      this.ranges--
      return []
    }
    throw new JsonPathError(`unrecognized identifier ${name}`)
  }

  private field(input: Value[], name: string): Value[] {
    if (input.length === 0) return []
    const results: Value[] = []
    for (const v of input) if (isMap(v) && Object.hasOwn(v, name)) results.push(v[name])
    if (results.length === 0 && !this.allowMissingKeys) throw new JsonPathError(`${name} is not found`)
    return results
  }

  private array(input: Value[], p: [Param, Param, Param]): Value[] {
    const result: Value[] = []
    for (const v of input) {
      if (v === null || v === undefined) continue
      if (!Array.isArray(v)) throw new JsonPathError(`${goType(v)} is not array or slice`)
      const len = v.length
      let start = p[0].known ? p[0].value : 0
      if (start < 0) start += len
      let end = p[1].derived ? start + 1 : p[1].known ? p[1].value : len
      if (end < 0) end += len
      if (end !== start) {
        if (start < 0 || start >= len) throw new JsonPathError(`array index out of bounds: index ${start}, length ${len}`)
        if (end > len) throw new JsonPathError(`array index out of bounds: index ${end - 1}, length ${len}`)
        if (start > end) throw new JsonPathError(`starting index ${start} is greater than ending index ${end}`)
      }
      const step = p[2].known ? p[2].value : 1
      if (step <= 0) throw new JsonPathError('step must be > 0')
      for (let i = start; i < end; i += step) result.push(v[i])
    }
    return result
  }

  private recursive(input: Value[]): Value[] {
    const result: Value[] = []
    for (const v of input) {
      if (v === null || v === undefined) continue
      const kids = children(v)
      if (kids.length > 0) {
        result.push(v)
        result.push(...this.recursive(kids))
      }
    }
    return result
  }

  private filter(input: Value[], node: {left: ListNode; right: ListNode; op: string}): Value[] {
    const results: Value[] = []
    for (const v of input) {
      if (!Array.isArray(v)) throw new JsonPathError(`${resultText(v)} is not array or slice and cannot be filtered`)
      for (const item of v) {
        let lefts: Value[]
        try {
          lefts = this.walk([item], node.left)
        } catch (err) {
          if (node.op === 'exists') continue
          throw err
        }
        if (node.op === 'exists') {
          if (lefts.length > 0) results.push(item)
          continue
        }
        if (lefts.length === 0) continue
        if (lefts.length > 1) throw new JsonPathError('can only compare one element at a time')
        const rights = this.walk([item], node.right)
        if (rights.length === 0) continue
        if (rights.length > 1) throw new JsonPathError('can only compare one element at a time')
        if (compare(node.op, lefts[0], rights[0])) results.push(item)
      }
    }
    return results
  }
}

/** A value's children for `*` and `..`: map values, list elements, a string's bytes (which have none). */
function children(v: Value): Value[] {
  if (Array.isArray(v)) return v
  if (isMap(v)) return Object.values(v)
  if (typeof v === 'string') return [...Buffer.from(v)]
  return []
}

type Scalar = number | string | boolean
const OPERATORS: Record<string, (a: Scalar, b: Scalar) => boolean> = {
  '==': (a, b) => a === b,
  '!=': (a, b) => a !== b,
  '<': (a, b) => a < b,
  '>': (a, b) => a > b,
  '<=': (a, b) => a <= b,
  '>=': (a, b) => a >= b,
}

/** Go template's comparison functions (eq, ne, lt…): same basic kind only. */
function compare(op: string, left: Value, right: Value): boolean {
  const fn = OPERATORS[op]
  if (!fn) throw new JsonPathError(`unrecognized filter operator ${op}`)
  const scalar = (x: Value): x is Scalar => typeof x === 'number' || typeof x === 'string' || typeof x === 'boolean'
  if (!scalar(left) || !scalar(right)) throw new JsonPathError('invalid type for comparison')
  if (typeof left !== typeof right) {
    if (op === '==' || op === '!=') return op === '!='
    throw new JsonPathError('incompatible types for comparison')
  }
  if (typeof left === 'boolean' && op !== '==' && op !== '!=') throw new JsonPathError('invalid type for comparison')
  return fn(left, right)
}

/** How kubectl prints one result: strings as they are, numbers and booleans as Go prints them, maps and lists as compact JSON. */
export function resultText(v: unknown): string {
  if (typeof v === 'string') return v
  if (v === null || v === undefined) return '<nil>'
  if (typeof v === 'object') return goJson(v)
  return String(v)
}

/**
 * Go's encoding/json, as kubectl marshals results: the objects are maps, whose keys Go writes in
 * sorted order, and <, >, &, U+2028 and U+2029 in strings are escaped (json.Marshal's HTML escaping).
 * A JavaScript object puts array-index keys ("9", "10") first in numeric order whatever the insertion
 * order, so a map with such a key is written key by key instead of through JSON.stringify.
 */
function goJson(v: unknown, indent = ''): string {
  let indexKeys = false
  const sorted = (x: unknown): unknown => {
    if (Array.isArray(x)) return x.map(sorted)
    if (!isMap(x)) return x
    const keys = Object.keys(x).sort()
    indexKeys ||= keys.some(isIndexKey)
    return Object.fromEntries(keys.map((k) => [k, sorted(x[k])]))
  }
  const copy = sorted(v) // also finds whether any map has an array-index key
  return goHtmlEscape(indexKeys ? writeSorted(v, indent, '') : JSON.stringify(copy, null, indent))
}

const isIndexKey = (k: string): boolean => /^(?:0|[1-9]\d{0,9})$/.test(k) && Number(k) < 2 ** 32 - 1

/** JSON.stringify's layout (the same indent and separators), keys in sorted order. */
function writeSorted(x: unknown, indent: string, pad: string): string {
  const inner = pad + indent
  const open = indent ? `\n${inner}` : ''
  const close = indent ? `\n${pad}` : ''
  if (Array.isArray(x)) return x.length === 0 ? '[]' : `[${open}${x.map((e) => writeSorted(e, indent, inner)).join(`,${open}`)}${close}]`
  if (!isMap(x)) return JSON.stringify(x) ?? 'null'
  const keys = Object.keys(x).sort()
  const colon = indent ? ': ' : ':'
  return keys.length === 0 ? '{}' : `{${open}${keys.map((k) => JSON.stringify(k) + colon + writeSorted(x[k], indent, inner)).join(`,${open}`)}${close}}`
}

/** Go's fmt.Sprint of a result, as kubectl's custom-columns prints it: maps as map[k:v …] (sorted keys), lists as [a b]. */
export function goSprint(v: unknown): string {
  if (Array.isArray(v)) return `[${v.map(goSprint).join(' ')}]`
  if (isMap(v))
    return `map[${Object.keys(v)
      .sort()
      .map((k) => `${k}:${goSprint(v[k])}`)
      .join(' ')}]`
  if (v === null || v === undefined) return '<nil>'
  return String(v)
}

export interface ExecuteOptions {
  /** kubectl's --allow-missing-template-keys (default true): a missing field prints nothing instead of failing. */
  allowMissingKeys?: boolean
}

/** The result groups of a template, before printing (custom-columns and --sort-by use them). */
export function findResults(template: Template, data: Value, options: ExecuteOptions = {}): Value[][] {
  return new Evaluator(options.allowMissingKeys ?? true).findResults(data, template.root)
}

/** `-o jsonpath=…`: each group's results space separated, as client-go's JSONPath.Execute. */
export function execute(template: Template, data: Value, options: ExecuteOptions = {}): string {
  return findResults(template, data, options)
    .map((group) => group.map(resultText).join(' '))
    .join('')
}

/** `-o jsonpath-as-json=…`: each group's results as one JSON array indented by four spaces, then a newline. */
export function executeAsJson(template: Template, data: Value, options: ExecuteOptions = {}): string {
  return findResults(template, data, options)
    .map((group) => goJson(group, '    ') + '\n')
    .join('')
}
