// Extracts, from the official Istio CRDs in ../shared/reference/crds, the served v1 schemas meshvm
// validates its output against, into src/lib/schema/istio-networking.schemas.json (committed: the
// installed CLI has no ../shared). test/lib/schema checks the committed file is not stale.
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {parseAllDocuments} from 'yaml'
import {parse} from '@bufbuild/cel'
import {ParsedExprSchema} from '@bufbuild/cel-spec/cel/expr/syntax_pb.js'
import {toBinary} from '@bufbuild/protobuf'

/** The rule's parsed CEL AST (protobuf ParsedExpr, base64): parsing costs ~35 ms per process, decoding ~4. */
export const PARSED_KEY = 'x-meshvm-parsed'

function withParsedRules(schema) {
  if (Array.isArray(schema)) return schema.map(withParsedRules)
  if (!schema || typeof schema !== 'object') return schema
  const out = {}
  for (const [k, v] of Object.entries(schema)) {
    out[k] = k === 'x-kubernetes-validations'
      ? v.map((r) => ({...r, [PARSED_KEY]: Buffer.from(toBinary(ParsedExprSchema, parse(r.rule))).toString('base64')}))
      : withParsedRules(v)
  }
  return out
}

const root = new URL('..', import.meta.url).pathname
export const CRD_FILE = join(root, '../shared/reference/crds/istio-networking.yaml')
export const OUT_FILE = join(root, 'src/lib/schema/istio-networking.schemas.json')

export function extractSchemas(text) {
  const out = {}
  for (const doc of parseAllDocuments(text)) {
    const crd = doc.toJS()
    if (crd?.kind !== 'CustomResourceDefinition') continue
    const version = crd.spec.versions.find((v) => v.name === 'v1' && v.served)
    if (!version) continue
    out[crd.spec.names.kind] = {
      group: crd.spec.group,
      version: 'v1',
      plural: crd.spec.names.plural,
      schema: withParsedRules(version.schema.openAPIV3Schema),
    }
  }
  return JSON.stringify(out, null, 1) + '\n'
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  writeFileSync(OUT_FILE, extractSchemas(readFileSync(CRD_FILE, 'utf8')))
  console.error(`wrote ${OUT_FILE}`)
}
