/**
 * meshvm's YAML output (src/lib/yaml.ts): what kubectl reads back is what was written. Strings that
 * YAML 1.1 would read as another type (`yes`, `0755`, dates) stay strings, a shared object is written
 * twice (no anchors), long lines are not folded, and sequences sit at the parent's column.
 */
import fc from 'fast-check'
import {parse} from 'yaml'
import {describe, expect, it} from 'vitest'
import {generateOnboardObjects} from '../../src/lib/onboard/generate.js'
import {parseOnboardInput} from '../../src/lib/onboard/spec.js'
import {parseYamlStream, toYaml, toYamlStream} from '../../src/lib/yaml.js'

// Strings that YAML 1.1 or YAML syntax would read as something else unless quoted, and plain ones.
const STRINGS = [
  '',
  ' ',
  ' a',
  'a:b',
  'a: b',
  '#a',
  'a #b',
  '- a',
  '-',
  '?',
  '[a]',
  '{a}',
  '&a',
  '*a',
  '!a',
  '|',
  '>',
  "'a'",
  '"a"',
  '%a',
  '@a',
  '`a',
  'a\nb',
  '\ta',
  '---',
  '...',
  '~',
  'null',
  'NULL',
  'y',
  'Y',
  'yes',
  'YES',
  'n',
  'no',
  'on',
  'ON',
  'off',
  'true',
  'False',
  '0',
  '8080',
  '-1',
  '1_000',
  '0b101',
  '0755',
  '0x1F',
  '08',
  '1.5',
  '.5',
  '1e5',
  '.inf',
  '-.inf',
  '.nan',
  '1:20',
  '190:20:30',
  '2001-12-14',
  '2001-12-14t21:59:43.10-05:00',
  'é',
  '日本',
  '🙂',
  'x'.repeat(1001),
  'a=b',
  'web',
  'apps',
  'app.kubernetes.io/managed-by',
  'networking.istio.io/v1',
  '127.0.0.1',
  'v1',
  '/healthz',
  'Yess',
  'nulls',
  '0o17',
]
const read11 = (text: string): unknown => parse(text, {version: '1.1'})

describe('YAML output', () => {
  it('strings read back as the same strings under YAML 1.1, as keys, values and items', () => {
    for (const s of STRINGS) {
      const doc = {k: s, [s]: 'v', list: [s]}
      expect(read11(toYaml(doc)), JSON.stringify(s)).toEqual(doc)
    }
  })

  it('layout: sequences at the parent column, no anchors, no folding, empty collections', () => {
    const shared = {x: 'yy'}
    expect(toYaml({a: {b: ['c', {d: 'e', f: 'g'}]}, h: {}, i: [], j: null, k: true, l: 8080, s1: shared, s2: shared})).toBe(
      'a:\n  b:\n  - c\n  - d: e\n    f: g\nh: {}\ni: []\nj: null\nk: true\nl: 8080\ns1:\n  x: yy\ns2:\n  x: yy\n',
    )
    const long = 'a '.repeat(200).trim()
    expect(toYaml({long})).toBe(`long: ${long}\n`)
    expect(toYaml({a: undefined, b: 'c'})).toBe('b: c\n')
  })

  it("onboard's manifests: a stream without a leading separator that parses back to the objects", () => {
    const spec = parseOnboardInput({
      name: 'web',
      namespace: 'apps',
      ports: ['http=8080', 'grpc=9090:19090/GRPC'],
      serviceAccount: 'web-vm',
      probe: {http: '8080/healthz'},
      createNamespace: true,
      createServiceAccount: true,
    })
    const objects = generateOnboardObjects(spec)
    const text = toYamlStream(objects)
    expect(text.startsWith('---')).toBe(false)
    expect(parseYamlStream(text, 'stream').map((d) => d.value)).toEqual(JSON.parse(JSON.stringify(objects)))
  })

  it('generated documents read back equal', () => {
    // Not the key `<<`: `yaml` writes it plain, and YAML 1.1 readers take it as a merge key.
    const str = fc.oneof(
      fc.constantFrom(...STRINGS),
      fc.string({maxLength: 8}).filter((s) => s !== '<<'),
    )
    const scalar = fc.oneof(str, fc.integer(), fc.boolean(), fc.constant(null))
    const value = fc.letrec((tie) => ({
      node: fc.oneof({depthSize: 'small', withCrossShrink: true}, scalar, tie('map'), tie('seq')),
      map: fc.dictionary(str, tie('node'), {maxKeys: 4}),
      seq: fc.array(tie('node'), {maxLength: 3}),
    }))
    fc.assert(
      fc.property(fc.dictionary(str, value.node, {minKeys: 1, maxKeys: 5}), (doc) => {
        expect(read11(toYaml(doc))).toEqual(doc)
      }),
      {numRuns: Number(process.env.FUZZ_RUNS ?? 500)},
    )
  })
})
