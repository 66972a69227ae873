// Transpiles CEL rules (x-kubernetes-validations) to JavaScript at build time, so meshvm validates
// its own output without the CEL library (whose module initialisation alone costs ~30–50 ms).
//
// The input is the rule's AST from @bufbuild/cel's parse(), where the all/exists/exists_one macros
// are already expanded into comprehensions. The output is an arrow function `(self) => …` over the
// helpers of src/lib/schema/cel-runtime.ts (imported as `$`), which reproduce the library's
// evaluation: results, error semantics (error && false is false, …) and error messages.
//
// Supported subset: bool, int, double, string and null literals; list literals; `self` and
// comprehension variables; field selection and has(); && || ! and ?:; == != < <= > >=; + ; `in`;
// size(); startsWith, endsWith, contains, substring (strings extension) and matches with a constant
// pattern whose syntax means the same to RE2 and to JavaScript; comprehensions (all, exists,
// exists_one, …). The rule's result must be a bool. Anything else is reported as unsupported and
// left to the CEL library at run time — never approximated.
import {celEnv, parse, plan} from '@bufbuild/cel'

class Unsupported extends Error {}

/**
 * @param {string} rule CEL source text
 * @returns {{code: string} | {unsupported: string}} an arrow function's source, or why not
 */
export function celToJs(rule) {
  let parsed
  try {
    parsed = parse(rule)
  } catch (err) {
    return {unsupported: `does not parse: ${String(err?.message ?? err).split('\n')[0]}`}
  }
  try {
    const {js, type} = new Transpiler().expr(parsed.expr, new Map([['self', {js: 'self', type: 'dyn'}]]), 0)
    if (type !== 'bool') throw new Unsupported('the result is not known to be a bool')
    return {code: `(self) => ${js}`}
  } catch (err) {
    if (err instanceof Unsupported) return {unsupported: err.message}
    throw err
  }
}

const BINARY = {'_==_': 'eq', '_!=_': 'ne', '_<_': 'lt', '_<=_': 'le', '_>_': 'gt', '_>=_': 'ge', '@in': 'isIn'}
const STRING_PREDICATES = new Set(['startsWith', 'endsWith', 'contains'])

/** A compiled expression: JS source, and 'bool' when it yields a bool (or throws), else 'dyn'. */
class Transpiler {
  /**
   * @param expr a cel.expr.Expr message
   * @param {Map<string, {js: string, type: string}>} scope CEL variable → JS expression
   * @param {number} depth comprehension nesting, for fresh JS names
   */
  expr(expr, scope, depth) {
    const {case: kind, value} = expr?.exprKind ?? {}
    switch (kind) {
      case 'constExpr':
        return this.constant(value)
      case 'identExpr': {
        const v = scope.get(value.name)
        if (!v) throw new Unsupported(`unknown identifier ${value.name}`)
        return v
      }
      case 'selectExpr': {
        const operand = this.expr(value.operand, scope, depth)
        return value.testOnly
          ? {js: `$.has(${operand.js}, ${JSON.stringify(value.field)})`, type: 'bool'}
          : {js: `$.get(${operand.js}, ${JSON.stringify(value.field)})`, type: 'dyn'}
      }
      case 'listExpr': {
        if (value.optionalIndices.length > 0) throw new Unsupported('optional list elements')
        return {js: `[${value.elements.map((e) => this.expr(e, scope, depth).js).join(', ')}]`, type: 'dyn'}
      }
      case 'callExpr':
        return this.call(value, scope, depth)
      case 'comprehensionExpr':
        return this.comprehension(value, scope, depth)
      default:
        throw new Unsupported(`${kind ?? 'empty'} expressions`)
    }
  }

  constant(c) {
    const {case: kind, value} = c.constantKind
    switch (kind) {
      case 'boolValue':
        return {js: String(value), type: 'bool'}
      case 'int64Value':
        return {js: value < 0n ? `(${value}n)` : `${value}n`, type: 'dyn'}
      case 'doubleValue':
        if (!Number.isFinite(value)) throw new Unsupported('non-finite double literals')
        return {js: Object.is(value, -0) ? '(-0)' : value < 0 ? `(${value})` : String(value), type: 'dyn'}
      case 'stringValue':
        return {js: JSON.stringify(value), type: 'dyn'}
      case 'nullValue':
        return {js: 'null', type: 'dyn'}
      default:
        throw new Unsupported(`${kind} literals`)
    }
  }

  call(call, scope, depth) {
    const fn = call.function
    const target = call.target ? this.expr(call.target, scope, depth) : undefined
    const args = call.args.map((a) => this.expr(a, scope, depth))
    const arity = (n, withTarget) => {
      if (args.length !== n || Boolean(target) !== withTarget) throw new Unsupported(`${fn} with ${args.length} argument(s)${target ? ' and a target' : ''}`)
    }
    const list = (xs) => xs.map((x) => x.js).join(', ')
    switch (fn) {
      case '_&&_':
      case '_||_':
        if (target || args.length < 2) throw new Unsupported(fn)
        return {js: `$.${fn === '_&&_' ? 'and' : 'or'}(${args.map((a) => `() => ${a.js}`).join(', ')})`, type: 'bool'}
      case '!_':
        arity(1, false)
        return {js: `$.not(${args[0].js})`, type: 'bool'}
      case '_?_:_':
        arity(3, false)
        return {js: `($.cond(${args[0].js}) ? ${args[1].js} : ${args[2].js})`, type: args[1].type === 'bool' && args[2].type === 'bool' ? 'bool' : 'dyn'}
      case '_+_':
        arity(2, false)
        return {js: `$.add(${list(args)})`, type: 'dyn'}
      case '@not_strictly_false':
      case '__not_strictly_false__':
        arity(1, false)
        return {js: `$.nsf(() => ${args[0].js})`, type: 'bool'}
      case 'size':
        if (target) {
          arity(0, true)
          return {js: `$.sizeMethod(${target.js})`, type: 'dyn'}
        }
        arity(1, false)
        return {js: `$.size(${args[0].js})`, type: 'dyn'}
      case 'matches': {
        arity(1, true)
        const pattern = call.args[0].exprKind
        if (pattern.case !== 'constExpr' || pattern.value.constantKind.case !== 'stringValue') throw new Unsupported('matches() with a pattern that is not a string literal')
        return {js: `$.matches(${target.js}, ${JSON.stringify(jsRegex(pattern.value.constantKind.value))})`, type: 'bool'}
      }
      case 'substring':
        if (!target || args.length < 1 || args.length > 2) throw new Unsupported(`substring with ${args.length} argument(s)`)
        return {js: `$.substring(${target.js}, ${list(args)})`, type: 'dyn'}
      default:
        if (BINARY[fn]) {
          arity(2, false)
          return {js: `$.${BINARY[fn]}(${list(args)})`, type: 'bool'}
        }
        if (STRING_PREDICATES.has(fn)) {
          arity(1, true)
          return {js: `$.${fn}(${target.js}, ${args[0].js})`, type: 'bool'}
        }
        throw new Unsupported(`function ${fn}${target ? ' (method)' : ''}`)
    }
  }

  comprehension(c, scope, depth) {
    if (c.iterVar2) throw new Unsupported('two-variable comprehensions')
    const item = `v${depth}`
    const acc = `a${depth}`
    const init = this.expr(c.accuInit, scope, depth + 1)
    const range = this.expr(c.iterRange, scope, depth + 1)
    // The accumulator is a bool when it starts as one and every step yields one (all, exists).
    const compile = (accType) => {
      const accVar = {js: `$.${accType === 'bool' ? 'vb' : 'v'}(${acc})`, type: accType}
      const inLoop = new Map(scope).set(c.accuVar, accVar).set(c.iterVar, {js: item, type: 'dyn'})
      const inResult = new Map(scope).set(c.accuVar, accVar)
      return {
        condition: this.expr(c.loopCondition, inLoop, depth + 1),
        step: this.expr(c.loopStep, inLoop, depth + 1),
        result: this.expr(c.result, inResult, depth + 1),
      }
    }
    let body = init.type === 'bool' ? compile('bool') : undefined
    if (!body || body.step.type !== 'bool') body = compile('dyn')
    const js = `$.fold(() => ${init.js}, () => ${range.js}, (${item}, ${acc}) => ${body.condition.js}, (${item}, ${acc}) => ${body.step.js}, (${acc}) => ${body.result.js})`
    return {js, type: body.result.type}
  }
}

// ---- regular expressions ----------------------------------------------------------------------

const SYNTAX = new Set('^$\\.*+?()[]{}|/')
const LITERAL = /^[A-Za-z0-9 !"#%&',\-\/:;<=>@_`~]$/
const CLASS_LITERAL = /^[A-Za-z0-9 !"#$%&'()*+,.\/:;<=>?@_`{|}~]$/

/**
 * The JavaScript (`u` flag) equivalent of an RE2 pattern, for a conservative subset whose meaning is
 * the same in both: ASCII literals, escaped punctuation, \d \w \D \W, classes of ASCII literals and
 * ranges, `.` (as [^\n], RE2's meaning), groups, alternation, anchors and quantifiers — and no
 * nested unbounded repetition, which a backtracking engine could take exponential time on.
 * Throws Unsupported otherwise.
 */
export function jsRegex(pattern) {
  let i = 0
  let out = ''
  const fail = (why) => {
    throw new Unsupported(`regular expression ${JSON.stringify(pattern)}: ${why}`)
  }
  // Per open group: does it contain | or an unbounded quantifier?
  const groups = [{risky: false}]
  let last // what a quantifier would apply to: 'atom' | {risky} (a closed group) | undefined
  const quantifier = () => {
    // Returns [source, unbounded] for the quantifier at i, or undefined.
    const c = pattern[i]
    if (c === '*' || c === '+' || c === '?') {
      i++
      return [c, c !== '?']
    }
    if (c === '{') {
      const m = /^\{(\d{1,4})(,(\d{1,4})?)?\}/.exec(pattern.slice(i))
      if (!m) fail('a { that is not a repetition')
      const min = Number(m[1])
      const max = m[3] === undefined ? undefined : Number(m[3])
      if (min > 1000 || (max !== undefined && (max > 1000 || max < min))) fail('a repetition count out of range')
      i += m[0].length
      return [m[0], m[2] !== undefined && max === undefined]
    }
    return undefined
  }
  while (i < pattern.length) {
    const c = pattern[i]
    const q = quantifier()
    if (q) {
      if (!last) fail('a quantifier with nothing to repeat')
      if (pattern[i] === '?') {
        i++
        q[0] += '?'
      }
      if (typeof last === 'object' && last.risky && q[0] !== '?' && q[0] !== '??') fail('nested repetition')
      if (q[1]) groups[groups.length - 1].risky = true
      out += q[0]
      last = undefined
      continue
    }
    i++
    if (c === '^' || c === '$') {
      out += c
      last = undefined
    } else if (c === '|') {
      groups[groups.length - 1].risky = true
      out += c
      last = undefined
    } else if (c === '(') {
      if (pattern[i] === '?') {
        if (pattern[i + 1] !== ':') fail('group flags, names or assertions')
        i += 2
        out += '(?:'
      } else out += '('
      groups.push({risky: false})
      last = undefined
    } else if (c === ')') {
      if (groups.length === 1) fail('unbalanced )')
      const group = groups.pop()
      if (group.risky) groups[groups.length - 1].risky = true
      out += ')'
      last = group
    } else if (c === '.') {
      out += '[^\\n]'
      last = 'atom'
    } else if (c === '\\') {
      out += escape(pattern[i++], false, fail)
      last = 'atom'
    } else if (c === '[') {
      const [source, length] = charClass(pattern, i, fail)
      out += source
      i += length
      last = 'atom'
    } else if (LITERAL.test(c)) {
      out += c
      last = 'atom'
    } else fail(`the character ${JSON.stringify(c)}`)
  }
  if (groups.length !== 1) fail('unbalanced (')
  checkSame(pattern, out)
  return out
}

function escape(c, inClass, fail) {
  if (c === undefined) fail('a trailing \\')
  if ('dwDW'.includes(c)) return '\\' + c
  if (SYNTAX.has(c) || (inClass && c === '-')) return '\\' + c
  fail(`the escape \\${c}`)
}

/** A class `[…]` starting after the `[` at `start`: its JS source and the length consumed. */
function charClass(pattern, start, fail) {
  let i = start
  let out = '['
  if (pattern[i] === '^') {
    out += '^'
    i++
  }
  let items = 0
  for (;;) {
    const c = pattern[i]
    if (c === undefined) fail('an unterminated class')
    if (c === ']') {
      if (items === 0) fail('an empty class')
      return [out + ']', i + 1 - start]
    }
    i++
    items++
    if (c === '\\') {
      const e = pattern[i++]
      out += escape(e, true, fail)
      if (pattern[i] === '-' && pattern[i + 1] !== ']') fail('a range from an escape')
      continue
    }
    if (c === '-') {
      // Literal only first or last.
      if (items !== 1 && pattern[i] !== ']') fail('a - in the middle of a class')
      out += '\\-'
      continue
    }
    if (!CLASS_LITERAL.test(c)) fail(`the character ${JSON.stringify(c)} in a class`)
    out += c
    if (pattern[i] === '-' && pattern[i + 1] !== ']') {
      const end = pattern[i + 1]
      if (end === undefined || !CLASS_LITERAL.test(end) || end < c) fail('a range')
      out += '-' + end
      i += 2
    }
  }
}

/** Both engines must accept the pattern (RE2 through the CEL library, JS with the u flag). */
function checkSame(pattern, js) {
  try {
    new RegExp(js, 'u')
  } catch (err) {
    throw new Unsupported(`regular expression ${JSON.stringify(pattern)}: ${err.message}`)
  }
  const result = plan(celEnv(), parse('s.matches(p)'))({s: '', p: pattern})
  if (typeof result !== 'boolean') throw new Unsupported(`regular expression ${JSON.stringify(pattern)}: RE2 rejects it`)
}
