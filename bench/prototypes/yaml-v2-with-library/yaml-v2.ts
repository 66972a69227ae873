/**
 * Prototype (issue #29): yaml.v2's Marshal built on the `yaml` library's options instead of
 * src/lib/util/go-compat.ts's emitter. Not product code; compare.ts measures how far it is from
 * goYamlMarshal. The key order is yaml.v2's own (no library option gives it), so it is imported.
 */
import {stringify} from 'yaml'
import {goYamlKeyCompare} from '../../../src/lib/util/go-compat.js'

type Pair = {key: unknown}
const keyOf = (p: Pair) => String((p.key as {value?: unknown})?.value ?? p.key)

export function yamlV2(value: unknown): string {
  return stringify(value, {
    version: '1.1', // quote what YAML 1.1 would read as bool/null/number/timestamp/base 60
    aliasDuplicateObjects: false,
    sortMapEntries: (a: Pair, b: Pair) => goYamlKeyCompare(keyOf(a), keyOf(b)),
    indentSeq: false, // `- ` at the parent key's column
    blockQuote: 'literal', // multi-line strings as `|`, never `>`
    lineWidth: 0, // no folding (yaml.v2 folds after column 80; the library folds before it)
    minContentWidth: 0,
  })
}
