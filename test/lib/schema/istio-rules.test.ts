/**
 * src/lib/schema/istio-rules.ts against the CEL library (@bufbuild/cel, as the test API server runs
 * it): every rule of Istio's networking CRDs (test/fixtures/crds) has a predicate, and at every place
 * a CRD puts a rule, validating generated values with the predicates gives the same causes (verdicts
 * and messages, `evaluation failed: …` included) as validating them with the library.
 */
import {readFileSync} from 'node:fs'
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'
import {ISTIO_RULES} from '../../../src/lib/schema/istio-rules.js'
import {compileSchema, type Schema} from '../../../src/lib/schema/validate.js'
import {compileCelRule} from '../../cluster/cel.js'
// @ts-expect-error plain .mjs script without types
import {CRD_FILE, celRules, servedSchemas} from '../../../scripts/gen-schemas.mjs'

const fuzzRuns = (n: number): number => Math.max(n, Number(process.env.FUZZ_RUNS ?? 0) / 10)

const schemas = servedSchemas(readFileSync(CRD_FILE, 'utf8')) as Record<string, {schema: Schema}>
const crdRules = [...(celRules(Object.values(schemas).map((s) => s.schema)) as Set<string>)]

/** Every schema node that carries rules, with where it is. */
function ruleNodes(schema: Schema, path: string, out: {path: string; node: Schema}[] = []): {path: string; node: Schema}[] {
  if (schema['x-kubernetes-validations']) out.push({path, node: schema})
  for (const [k, v] of Object.entries(schema.properties ?? {})) ruleNodes(v, `${path}.${k}`, out)
  if (schema.items) ruleNodes(schema.items, `${path}[]`, out)
  if (typeof schema.additionalProperties === 'object') ruleNodes(schema.additionalProperties, `${path}{}`, out)
  return out
}
const nodes = Object.entries(schemas).flatMap(([kind, {schema}]) => ruleNodes(schema, kind))

// Strings near the rules' edges: sockets, wildcards, CIDRs, the enums they test, port names.
const STRINGS = [
  '',
  'unix://',
  'unix:///run/a.sock',
  'unix://@abstract',
  'unix://rel',
  'unix:///dir/',
  'unix://a/',
  'unix://é',
  '*',
  'a*b',
  '*.example.com',
  'db.example.com',
  '10.0.0.0/24',
  '10.0.0.1',
  'HTTP',
  'HTTPS',
  'http',
  'STATIC',
  'NONE',
  'DNS',
  'DNS_ROUND_ROBIN',
  'net-1',
  'a'.repeat(62),
  'a'.repeat(63),
  '-bad',
  'bad-',
  'tcp-1',
  'é',
]
const string = fc.oneof(fc.constantFrom(...STRINGS), fc.string({maxLength: 8}))
const integer = fc.oneof(fc.constantFrom(-1, 0, 1, 80, 8080, 65535, 65536), fc.integer({min: -10, max: 70_000}))

/** Values shaped by a schema (optional fields present or not), sometimes of the wrong type. */
function arbitraryFor(schema: Schema, depth = 0): fc.Arbitrary<unknown> {
  if (schema['x-kubernetes-int-or-string']) return fc.oneof(integer, string)
  switch (schema.type) {
    case 'string':
      return schema.enum ? fc.oneof(fc.constantFrom(...schema.enum), string) : string
    case 'integer':
      return integer
    case 'boolean':
      return fc.boolean()
    case 'array':
      return depth > 3 || !schema.items ? fc.constant([]) : fc.array(arbitraryFor(schema.items, depth + 1), {maxLength: 3})
    case 'object': {
      if (depth > 3) return fc.constant({})
      const props = Object.fromEntries(Object.entries(schema.properties ?? {}).map(([k, v]) => [k, arbitraryFor(v, depth + 1)]))
      const record = fc.record(props, {requiredKeys: []})
      if (typeof schema.additionalProperties !== 'object') return record
      return fc.dictionary(fc.oneof(fc.constantFrom(...STRINGS), fc.string({maxLength: 4})), arbitraryFor(schema.additionalProperties, depth + 1), {maxKeys: 3})
    }
    default:
      return fc.oneof(string, integer)
  }
}

describe('Istio CEL rules as predicates', () => {
  it('every rule of the CRDs has a predicate, and every predicate is a rule of the CRDs', () => {
    expect(crdRules.length).toBeGreaterThanOrEqual(14)
    expect([...ISTIO_RULES.keys()].sort()).toEqual([...crdRules].sort())
  })

  it.each(nodes.map((n) => [n.path, n.node] as const))('%s: the same causes as the CEL library', (_path, node) => {
    const byPredicates = compileSchema(node, {unknownFields: 'report'})
    const byLibrary = compileSchema(node, {unknownFields: 'report', preferTranspiled: false, compileRule: compileCelRule})
    fc.assert(
      fc.property(arbitraryFor(node), (value) => {
        expect(byPredicates.validate(structuredClone(value))).toEqual(byLibrary.validate(structuredClone(value)))
      }),
      {numRuns: fuzzRuns(300)},
    )
  })

  it('reports a failed evaluation as the library does (a socket path cut short)', () => {
    const causes = compileSchema(nodes.find((n) => n.path === 'WorkloadEntry.spec.address')!.node).validate('unix://')
    expect(causes).toEqual([
      {reason: 'FieldValueInvalid', field: '', message: 'Invalid value: "string": evaluation failed: index 8 out of bounds [0, 7)'},
      {reason: 'FieldValueInvalid', field: '', message: 'Invalid value: "string": UDS may not be a dir'},
    ])
  })
})
