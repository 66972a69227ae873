/** parseMeshYaml answers what the `yaml` library answers for the YAML a bundle reads (YAML 1.1). */
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
  ])('%s', (_, text) => {
    expect(parseMeshYaml(text)).toEqual(library(text))
  })

  it("throws the library's error for text that is not YAML, duplicate keys included", () => {
    for (const text of ['a: [\n', 'a: b\na: c\n']) {
      expect(() => library(text)).toThrow()
      expect(() => parseMeshYaml(text)).toThrow()
    }
  })
})
