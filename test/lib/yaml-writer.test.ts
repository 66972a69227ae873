/**
 * The plain-YAML writer in src/lib/yaml.ts must print exactly what the `yaml` library prints with
 * meshvm's output options, or step aside (undefined) so `yaml` prints the document: fixed cases for
 * every quoting rule it relies on, onboard's real manifests, and generated documents.
 */
import fc from 'fast-check'
import {stringify} from 'yaml'
import {describe, expect, it} from 'vitest'
import {generateOnboardObjects} from '../../src/lib/onboard/generate.js'
import {parseOnboardInput} from '../../src/lib/onboard/spec.js'
import {plainYaml, toYaml, toYamlStream} from '../../src/lib/yaml.js'

const OPTIONS = {version: '1.1', aliasDuplicateObjects: false, lineWidth: 0, minContentWidth: 0, indentSeq: false} as const
const byYaml = (value: unknown): string => stringify(value, OPTIONS)

/** Both writers agree, and the fast one answered (or not) as expected. */
function same(value: unknown, fast: boolean): void {
  const text = plainYaml(value)
  if (text !== undefined) expect(text).toBe(byYaml(value))
  expect(text !== undefined, String(JSON.stringify(value, (_k, v) => (typeof v === 'bigint' ? String(v) : v)))).toBe(fast)
  expect(toYaml(value)).toBe(byYaml(value))
}

// Strings that need quoting (or another style) for some reason, and strings that do not.
const QUOTED = [
  '', ' ', ' a', 'a ', 'a b', 'a:b', 'a: b', 'a:', ':a', '#a', 'a #b', 'a#b', '- a', '-', '-a', '?', '? a', '[a]', '{a}', 'a,b', '&a', '*a', '!a', '|', '>',
  "'a'", '"a"', '%a', '@a', '`a', 'a\nb', 'a\n', '\ta', 'a\t', '---', '...', '--- a', '~', 'null', 'Null', 'NULL', 'y', 'Y', 'yes', 'Yes', 'YES', 'n', 'N', 'no', 'No',
  'NO', 'on', 'On', 'ON', 'off', 'Off', 'OFF', 'true', 'True', 'TRUE', 'false', 'False', 'FALSE', '0', '8080', '-1', '+1', '1_000', '0b101', '0755', '0x1F', '0x1f_ff',
  '08', '09', '1.5', '1.', '.5', '1e5', 'e5', 'E5', '1.5e-3', '1E5', '.inf', '-.inf', '.nan', '.NaN', '1:20', '190:20:30', '1:20.5', '2001-12-14', '2001-1-4', '2001-12-14t21:59:43.10-05:00',
  'é', 'café', '日本', '🙂', 'a\u0000b', 'a\u007fb', 'a\u0085b', 'a\u2028b', 'x'.repeat(1001), '<<', '=', 'a=b', 'a\\b', 'a|b', 'a>b', 'a b c',
]
const PLAIN = ['web', 'apps', 'http', 'app.kubernetes.io/managed-by', 'networking.istio.io/v1', '127.0.0.1', '10.0.0.5', '1.2.3', 'v1', 'a-b_c.d/e', 'x'.repeat(1000),
  'ClusterIP', 'Yess', 'nope', 'onn', 'nulls', '0o17', '0b2', '0x', '1a', '2001-12-14x', '1-2', 'inf', 'nan', 'HTTP', 'TCP', 'a/b', 'a..b', 'a-', '/healthz', '/', '//a', '_a', '_', '/8080', '_1']

describe('plain-YAML writer', () => {
  it('prints what yaml prints, or leaves the document to yaml', () => {
    for (const s of QUOTED) {
      same({k: s}, PLAIN.includes(s))
      same({[s]: 'v'}, PLAIN.includes(s))
      same({k: [s]}, PLAIN.includes(s))
    }
    for (const s of PLAIN) {
      same({k: s}, true)
      same({[s]: s}, true)
      same({k: [s, {[s]: s}]}, true)
    }
  })

  it('layout: nesting, sequences at the parent column, empty collections, undefined, numbers', () => {
    same({a: {b: {c: 'd'}}, e: [{f: 'g', h: ['i', 'j']}, 'k', {l: {m: 'nn'}}], o: {}, p: [], q: null, r: true, s: false, t: 0, u: -42, v: 2 ** 53 - 1}, true)
    same({a: undefined, b: 'c', d: {e: undefined, f: 'g'}}, true)
    same({a: [{}]}, false)
    same({a: [[]]}, false)
    same({a: [['b']]}, false)
    same({a: [undefined]}, false)
    same({a: [{b: undefined}]}, false)
    same({a: 1.5}, false)
    same({a: -0}, false)
    same({a: 2 ** 53}, false)
    same({a: NaN}, false)
    same({a: new Date(0)}, false)
    same({a: 10n}, false)
    same({}, false)
    same({a: undefined}, false)
    same(['a'], false)
    same('a', false)
    same(null, false)
    const shared = {x: 'yy'}
    same({a: shared, b: shared}, true)
  })

  it("onboard's manifests take the fast path and match yaml", () => {
    const spec = parseOnboardInput({name: 'web', namespace: 'apps', ports: ['http=8080', 'grpc=9090:19090/GRPC'], serviceAccount: 'web-vm', probe: {http: '8080/healthz'}, createNamespace: true, createServiceAccount: true})
    const objects = generateOnboardObjects(spec)
    for (const o of objects) expect(plainYaml(o), o.kind).toBe(byYaml(o))
    expect(toYamlStream(objects)).toBe(objects.map(byYaml).join('---\n'))
  })

  it('generated documents', () => {
    const chars = fc.constantFrom(...'aZ09._/-:# \n\t\'"{}[],&*!|>%@`?~=+eExXbB'.split(''), 'é', '🙂')
    // Mostly strings near the edge of what may be plain, so both paths are taken often.
    const str = fc.oneof(
      {arbitrary: fc.constantFrom(...QUOTED, ...PLAIN), weight: 2},
      {arbitrary: fc.string({unit: chars, maxLength: 8}), weight: 1},
      {arbitrary: fc.stringMatching(/^[A-Za-z0-9/_.-][A-Za-z0-9._/-]{0,10}$/), weight: 6},
      {arbitrary: fc.string({maxLength: 6}), weight: 1},
    )
    const scalar = fc.oneof(str, fc.integer(), fc.boolean(), fc.constant(null), fc.constant(undefined), fc.double())
    const value = fc.letrec((tie) => ({
      node: fc.oneof({depthSize: 'small', withCrossShrink: true}, scalar, tie('map'), tie('seq')),
      map: fc.dictionary(str, tie('node'), {maxKeys: 4}),
      seq: fc.array(tie('node'), {maxLength: 3}),
    }))
    let fast = 0
    fc.assert(
      fc.property(fc.dictionary(str, value.node, {minKeys: 1, maxKeys: 5}), (doc) => {
        const text = plainYaml(doc)
        if (text !== undefined) fast++
        if (text !== undefined) expect(text).toBe(byYaml(doc))
        expect(toYaml(doc)).toBe(byYaml(doc))
      }),
      {numRuns: Number(process.env.FUZZ_RUNS ?? 3000)},
    )
    // The generator must reach the fast path often enough to test it.
    expect(fast).toBeGreaterThan(100)
  })
})
