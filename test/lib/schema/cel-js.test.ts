/**
 * The Istio CRDs' CEL rules, transpiled to JavaScript at build time (scripts/cel-to-js.mjs), must
 * evaluate exactly as the CEL library does: same result, same error message, for any value
 * validate.ts can pass in (strings, bools, null, ints as bigint, doubles, lists, maps).
 */
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'
import * as runtime from '../../../src/lib/schema/cel-runtime.js'
import {CelEvalError, type CelRule} from '../../../src/lib/schema/cel-runtime.js'
import {TRANSPILED_RULES} from '../../../src/lib/schema/istio-rules.generated.js'
import {compileCelRule} from '../../cluster/cel.js'
// @ts-expect-error plain .mjs script without types
import {celToJs, jsRegex} from '../../../scripts/cel-to-js.mjs'

// Cases per property; FUZZ_RUNS (npm run fuzz) raises it.
const fuzzRuns = (n: number): number => Math.max(n, Number(process.env.FUZZ_RUNS ?? 0) / 10)

type Outcome = {value: boolean} | {error: string}
function outcome(rule: CelRule, self: unknown): Outcome {
  try {
    return {value: rule(self)}
  } catch (err) {
    if (!(err instanceof CelEvalError)) throw err
    return {error: err.message}
  }
}

// Field names and string constants the rules mention, so random maps and strings hit their branches.
const ruleTexts = [...TRANSPILED_RULES.keys()]
const fields = [...new Set(ruleTexts.flatMap((r) => [...r.matchAll(/\.([a-zA-Z_]\w*)\b(?!\()/g)].map((m) => m[1]!)))]
const constants = [...new Set(ruleTexts.flatMap((r) => [...r.matchAll(/"([^"]*)"/g)].map((m) => m[1]!)))]

const scalar = fc.oneof(
  fc.constantFrom(...constants),
  fc.constantFrom('unix:///run/a.sock', 'unix://rel', 'unix://@abstract', 'unix:///dir/', '10.0.0.0/24', 'a.com', '*.a.com', 'http', '-bad', 'a'.repeat(63), 'a'.repeat(62), 'é', ''),
  fc.string({maxLength: 12}),
  fc.string({unit: fc.constantFrom('a', 'Z', '0', '-', '.', '*', '/', '@', 'é', '_'), maxLength: 70}),
  fc.bigInt({min: -3n, max: 70000n}),
  fc.constantFrom(0n, 1n, 65535n, 65536n, -1n, 9223372036854775807n),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
)
const celValue = fc.letrec<{value: unknown}>((tie) => ({
  value: fc.oneof({depthSize: 'small', withCrossShrink: true}, scalar, fc.array(tie('value'), {maxLength: 4}), tie('map') as fc.Arbitrary<unknown>),
  map: fc.array(fc.tuple(fc.oneof(fc.constantFrom(...fields), fc.string({maxLength: 6})), tie('value')), {maxLength: 5}).map((entries) => new Map(entries)),
})).value

describe('transpiled CEL rules', () => {
  it('cover every rule of the Istio CRDs (the build fails otherwise)', () => {
    expect(TRANSPILED_RULES.size).toBeGreaterThanOrEqual(14)
  })

  it.each(ruleTexts)('%s: same results and errors as the CEL library', (text) => {
    const transpiled = TRANSPILED_RULES.get(text)!
    const library = compileCelRule(text)
    // Lists of maps with the fields the rules read, and maps of those: the shapes the rules expect.
    const shaped = fc.oneof(
      celValue,
      fc.array(fc.dictionary(fc.constantFrom(...fields), celValue, {maxKeys: 3}).map((o) => new Map(Object.entries(o))), {maxLength: 4}),
      fc.dictionary(fc.oneof(fc.constantFrom(...fields), fc.string({maxLength: 70})), fc.oneof(scalar, fc.array(scalar, {maxLength: 3})), {maxKeys: 4}).map((o) => new Map(Object.entries(o))),
    )
    fc.assert(
      fc.property(shaped, (self) => {
        expect(outcome(transpiled, self)).toEqual(outcome(library, self))
      }),
      {numRuns: fuzzRuns(400)},
    )
  })
})

describe('the transpiler', () => {
  it('refuses what it cannot reproduce exactly, rather than approximating', () => {
    expect(celToJs('self.lowerAscii() == "a"').unsupported).toMatch(/function lowerAscii/)
    expect(celToJs('duration(self) > duration("1s")').unsupported).toMatch(/function duration/)
    expect(celToJs('self.matches(self)').unsupported).toMatch(/not a string literal/)
    expect(celToJs('self.matches("(a+)+")').unsupported).toMatch(/nested repetition/)
    expect(celToJs('self.matches("\\\\pL")').unsupported).toMatch(/escape/)
    expect(celToJs('self + 1').unsupported).toMatch(/not known to be a bool/)
    expect(celToJs('self.((').unsupported).toMatch(/does not parse/)
  })

  // Beyond the Istio rules: constructs a future CRD version may use, checked the same way.
  it.each([
    'self.map(x, x + 1) == [2]',
    'self.filter(x, x > 1).size() == 1',
    'self.exists_one(x, x == "a") || size(self) == 0',
    'has(self.a) && self.a.startsWith("x") ? self.b.endsWith("y") : !has(self.b)',
    'self.all(k, self[k] != null)',
    '"a" + self.x == "ab" && [1] + self.l == [1, 2]',
    'self.substring(1) == "bc" && self.substring(0, 1) >= "a"',
  ])('%s: transpiled like the library', (text) => {
    const {code, unsupported} = celToJs(text)
    if (unsupported) {
      // Refusing is always safe; evaluating differently never is.
      expect(unsupported).toMatch(/./)
      return
    }
    const transpiled = new Function('$', `return ${code}`)(runtime) as CelRule
    const library = compileCelRule(text)
    fc.assert(
      fc.property(celValue, (self) => {
        expect(outcome(transpiled, self)).toEqual(outcome(library, self))
      }),
      {numRuns: fuzzRuns(300)},
    )
  })

  it('translates RE2 patterns into JavaScript ones that match the same strings', () => {
    const patterns = ['^[a-zA-Z0-9](?:[-a-zA-Z0-9]*[a-zA-Z0-9])?$', 'a.c', '^\\d{2,3}$', '[^/]+', 'x|y']
    for (const pattern of patterns) {
      const re = new RegExp(jsRegex(pattern), 'u')
      const library = compileCelRule(`self.matches(${JSON.stringify(pattern)})`)
      fc.assert(
        fc.property(fc.string({unit: fc.constantFrom('a', 'c', 'Z', '0', '1', '-', '/', '\n', 'x', 'y', 'é'), maxLength: 8}), (s) => {
          expect(re.test(s)).toBe(library(s))
        }),
        {numRuns: fuzzRuns(300)},
      )
    }
  })
})
