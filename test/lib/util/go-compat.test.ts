/**
 * goYamlMarshal writes printable ASCII strings a run at a time; yaml.v2's emitter (and
 * goYamlMarshalByCodePoint, which test/lib/remote-secret.test.ts and test:real hold to istioctl's
 * bytes) walks them code point by code point. The two must write the same bytes for every value.
 */
import {randomBytes} from 'node:crypto'
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'
import {parse} from 'yaml'
import {type GoYaml, goYamlMarshal, goYamlMarshalByCodePoint} from '../../../src/lib/util/go-compat.js'

/** Both emitters' output, or the error each throws. */
function both(value: GoYaml): [string, string] {
  const run = (f: (v: GoYaml) => string) => {
    try {
      return f(value)
    } catch (err) {
      return `error: ${(err as Error).message}`
    }
  }
  return [run(goYamlMarshal), run(goYamlMarshalByCodePoint)]
}

function same(value: GoYaml): string {
  const [fast, reference] = both(value)
  expect(fast).toBe(reference)
  return fast
}

const base64 = (n: number) => randomBytes(n).toString('base64')
const b64url = (n: number) => randomBytes(n).toString('base64url')
const pem = (der: string) => `-----BEGIN CERTIFICATE-----\n${der.match(/.{1,64}/g)!.join('\n')}\n-----END CERTIFICATE-----\n`

describe('goYamlMarshal writes ASCII runs exactly as yaml.v2 writes them code point by code point', () => {
  it('a remote secret: its kubeconfig (CA data, JWT) as a literal inside the Secret', () => {
    const jwt = `eyJhbGciOiJSUzI1NiIsImtpZCI6Ik${b64url(20)}.${b64url(600)}.${b64url(256)}`
    const kubeconfig = same({
      apiVersion: 'v1',
      clusters: [{cluster: {'certificate-authority-data': base64(1100), server: 'https://10.0.0.1:6443'}, name: 'remote'}],
      contexts: [{context: {cluster: 'remote', user: 'remote'}, name: 'remote'}],
      'current-context': 'remote',
      kind: 'Config',
      preferences: {},
      users: [{name: 'remote', user: {token: jwt}}],
    })
    expect(kubeconfig).toContain(`    token: ${jwt}\n`)
    const secret = same({
      apiVersion: 'v1',
      kind: 'Secret',
      metadata: {annotations: {'networking.istio.io/cluster': 'remote'}, labels: {'istio/multiCluster': 'true'}, name: 'istio-remote-secret-remote', namespace: 'istio-system'},
      stringData: {remote: kubeconfig},
    })
    expect(secret).toContain('stringData:\n  remote: |\n    apiVersion: v1\n')
    expect(parse(secret).stringData.remote).toBe(kubeconfig)
  })

  it('tokens, hex tokens, PEM certificates and keys, JSON, as values, sequence items and keys', () => {
    const values = [
      base64(1500),
      b64url(900),
      randomBytes(16).toString('hex'),
      `admin-${randomBytes(16).toString('hex')}`,
      '0123456789',
      '1e5',
      '0x1F',
      '2024-01-01',
      pem(base64(900)),
      pem(base64(900)).trimEnd(),
      `${pem(base64(300))}\n`,
      JSON.stringify({a: 'b', 'c"d': 'e\\f'}),
      "it's",
      "'q",
      '"q"',
      'a\\b',
    ]
    for (const v of values) {
      same({k: v})
      same({a: {b: {c: [v, {d: v}]}}})
      same([v, [v]])
      same(v)
      if (!v.includes('\n')) same({[v.slice(0, 100)]: 'x'})
    }
  })

  it('long strings that fold (plain, single- and double-quoted), with runs of spaces at the fold', () => {
    const words = (n: number, sep = ' ') => Array.from({length: n}, (_, i) => 'w'.repeat(1 + ((i * 7) % 11))).join(sep)
    for (const v of [
      words(40),
      `'${words(40)}`,
      `${words(40)} `,
      ` ${words(40)}`,
      words(40, '  '),
      words(40, '   '),
      `"${words(40)}"`,
      `${words(30)} \\ ${words(10)}`,
      `${words(20)}\n ${words(20)}`,
      `${words(20)} \n${words(20)}`,
      `${words(40, '  ')} \n${words(20, '  ')}`,
      `"${words(40, '  ')}\\`,
      `${words(20)}: ${words(20)}`,
      `${words(20)} #${words(20)}`,
      '-'.repeat(90) + ' x',
      `${'x'.repeat(79)}  y  z`,
    ]) {
      same({k: v})
      same({deep: {deeper: {deepest: v}}})
      same({list: [v]})
    }
  })

  it('any value of printable ASCII, spaces, quotes, backslashes, indicators and line feeds', () => {
    const piece = fc.oneof(
      fc.constantFrom(
        ' ',
        ' ',
        '  ',
        '\n',
        '\n\n',
        "'",
        '"',
        '\\',
        '#',
        ':',
        ': ',
        '-',
        '- ',
        '?',
        '---',
        '...',
        '|',
        '&',
        '*',
        '!',
        '%',
        '@',
        '`',
        '{',
        '}',
        '[',
        ']',
        ',',
        '>',
        '.',
        '0',
        '1',
        'e',
        '_',
        'x',
        'true',
        'null',
        '~',
        '<<',
      ),
      fc.string({unit: fc.constantFrom(...'abcdefABCDEF0123456789+/='), minLength: 1, maxLength: 40}),
    )
    const text = fc.array(piece, {maxLength: 60}).map((p) => p.join(''))
    const value: fc.Arbitrary<GoYaml> = fc.letrec<{node: GoYaml}>((tie) => ({
      node: fc.oneof({depthSize: 'small'}, text, fc.dictionary(text, tie('node'), {maxKeys: 3}), fc.array(tie('node'), {maxLength: 3})),
    })).node
    fc.assert(
      fc.property(value, (v) => {
        const [fast, reference] = both(v)
        expect(fast).toBe(reference)
      }),
      {numRuns: 3000, seed: 31},
    )
  })
})

describe('goYamlMarshal: a `|+` block scalar last in the document', () => {
  // Expected bytes from gopkg.in/yaml.v2 v2.4.0 and sigs.k8s.io/yaml v1.4.0 `Marshal` (the same for both):
  // Marshal clears the emitter's open-ended flag before the stream ends, so no `...` line follows.
  const cases: Array<[GoYaml, string]> = [
    [{a: 'a\n\n'}, 'a: |+\n  a\n\n'],
    [{a: '\n'}, 'a: |2+\n\n'],
    [{a: '\n\n'}, 'a: |2+\n\n\n'],
    [{a: 'x\n'}, 'a: |\n  x\n'],
    [{a: 'a\n\n', b: 'c'}, 'a: |+\n  a\n\nb: c\n'],
    [{b: {a: '\n'}}, 'b:\n  a: |2+\n\n'],
    ['\n', '|2+\n\n'],
  ]
  it.each(cases)('%j ends without a document end marker, in both emitters', (value, expected) => {
    expect(goYamlMarshal(value)).toBe(expected)
    expect(goYamlMarshalByCodePoint(value)).toBe(expected)
  })
})
