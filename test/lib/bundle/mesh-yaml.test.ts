/** parseMeshYaml answers what the `yaml` library answers for the YAML a bundle reads (YAML 1.1). */
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'
import {parse} from 'yaml'
import {parseMeshYaml} from '../../../src/lib/bundle/mesh-yaml.js'

const library = (text: string) => parse(text, {version: '1.1', logLevel: 'error'})

describe('parseMeshYaml', () => {
  it.each([
    ['a mesh config as istiod installs it', 'defaultConfig:\n  discoveryAddress: istiod.istio-system.svc:15012\nrootNamespace: istio-system\ntrustDomain: cluster.local\n'],
    ['numbers and YAML 1.1 booleans (left to the library)', 'defaultConfig:\n  concurrency: 2\n  holdApplicationUntilProxyStarts: yes\n'],
    ['a JSON annotation (left to the library)', '{"proxyMetadata": {"A": "1"}, "concurrency": 0}'],
    ['dates (timestamps for the library)', 'a: 2024-01-01\n'],
    ['nothing', ''],
    ['a proxyMetadata key YAML 1.1 reads as false', 'defaultConfig:\n  proxyMetadata:\n    NO: "1"\n'],
    ['keys YAML 1.1 reads as true and null', 'ON: a\nNull: b\n'],
  ])('%s', (_, text) => {
    expect(parseMeshYaml(text)).toEqual(library(text))
  })

  it('answers what the library answers for proxyMetadata keys drawn from the YAML 1.1 booleans and nulls too', () => {
    const keys = [...'y Y yes Yes YES n N no No NO on On ON off Off OFF true True TRUE false False FALSE null Null NULL ~'.split(' '), 'ISTIO_META_DNS_CAPTURE', 'A', 'Nope']
    fc.assert(
      fc.property(fc.uniqueArray(fc.constantFrom(...keys), {minLength: 1, maxLength: 4}), fc.constantFrom('"1"', 'x', 'true'), (names, value) => {
        const text = `defaultConfig:\n  proxyMetadata:\n${names.map((k) => `    ${k}: ${value}\n`).join('')}`
        let expected: unknown
        try {
          expected = library(text)
        } catch {
          // Two keys the library reads as the same boolean: its duplicate-key error, from both.
          expect(() => parseMeshYaml(text)).toThrow()
          return
        }
        expect(parseMeshYaml(text)).toEqual(expected)
      }),
      {numRuns: 2000, seed: 11},
    )
  })

  it("throws the library's error for text that is not YAML, duplicate keys included", () => {
    for (const text of ['a: [\n', 'a: b\na: c\n']) {
      expect(() => library(text)).toThrow()
      expect(() => parseMeshYaml(text)).toThrow()
    }
  })
})
