// Extracts, from Istio's networking CRDs, the served v1 schemas meshvm validates its output against,
// into src/lib/schema/istio-networking.schemas.json (committed; test/lib/schema checks it is current).
// Their CEL rules (x-kubernetes-validations) are plain predicates in src/lib/schema/istio-rules.ts:
// test/lib/schema/istio-rules.test.ts fails when a CRD has a rule that file does not implement.
//
//   node scripts/gen-schemas.mjs                 regenerate from the project's fixture (test/fixtures/crds)
//   node scripts/gen-schemas.mjs UPSTREAM.yaml   first refresh the fixture from upstream CRDs
//                                                (istio/api kubernetes/customresourcedefinitions.gen.yaml):
//                                                the three networking CRDs, descriptions dropped
import {readFileSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'
import {parseAllDocuments, stringify} from 'yaml'

const root = new URL('..', import.meta.url).pathname
export const CRD_FILE = join(root, 'test/fixtures/crds/istio-networking.yaml')
const FIXTURE_KINDS = new Set(['ServiceEntry', 'WorkloadEntry', 'WorkloadGroup'])
export const OUT_FILE = join(root, 'src/lib/schema/istio-networking.schemas.json')

/** The served v1 schemas by kind. */
export function servedSchemas(text) {
  const out = {}
  for (const doc of parseAllDocuments(text)) {
    const crd = doc.toJS()
    if (crd?.kind !== 'CustomResourceDefinition') continue
    const version = crd.spec.versions.find((v) => v.name === 'v1' && v.served)
    if (!version) continue
    out[crd.spec.names.kind] = {group: crd.spec.group, version: 'v1', plural: crd.spec.names.plural, schema: version.schema.openAPIV3Schema}
  }
  return out
}

export function extractSchemas(text) {
  return JSON.stringify(servedSchemas(text), null, 1) + '\n'
}

/** Every CEL rule of a schema tree, in document order, once. */
export function celRules(schema, rules = new Set()) {
  if (Array.isArray(schema)) {
    for (const s of schema) celRules(s, rules)
  } else if (schema && typeof schema === 'object') {
    for (const [k, v] of Object.entries(schema)) {
      if (k !== 'x-kubernetes-validations') celRules(v, rules)
      else for (const r of v) rules.add(r.rule)
    }
  }
  return rules
}

/** Drops `description` annotations from a schema tree (a property that is named description stays). */
function withoutDescriptions(node, inProperties = false) {
  if (Array.isArray(node)) return node.map((n) => withoutDescriptions(n))
  if (!node || typeof node !== 'object') return node
  const out = {}
  for (const [k, v] of Object.entries(node)) {
    if (k === 'description' && !inProperties && typeof v === 'string') continue
    out[k] = withoutDescriptions(v, k === 'properties' || k === 'patternProperties')
  }
  return out
}

/** The project's fixture from upstream CRDs: the three networking kinds, structure only. */
export function fixtureFromUpstream(text, source) {
  const docs = parseAllDocuments(text)
    .map((d) => d.toJS())
    .filter((crd) => crd?.kind === 'CustomResourceDefinition' && FIXTURE_KINDS.has(crd.spec?.names?.kind))
    .map((crd) => ({...crd, spec: {...crd.spec, versions: crd.spec.versions.map((v) => withoutDescriptions(v))}}))
  const header = [
    '# Istio networking CRDs (ServiceEntry, WorkloadEntry, WorkloadGroup): structure only, descriptions dropped.',
    `# Source: ${source} (Apache License 2.0, Copyright Istio Authors).`,
    '# Made by `node scripts/gen-schemas.mjs UPSTREAM.yaml`; the test API server serves them and',
    '# src/lib/schema is generated from them.',
  ]
  return header.join('\n') + '\n' + docs.map((d) => '---\n' + stringify(d, {lineWidth: 0})).join('')
}

if (process.argv[1] && import.meta.url.endsWith(process.argv[1].split('/').pop())) {
  const upstream = process.argv[2]
  if (upstream) {
    const source = process.env.CRD_SOURCE ?? `istio/api kubernetes/customresourcedefinitions.gen.yaml (${upstream})`
    writeFileSync(CRD_FILE, fixtureFromUpstream(readFileSync(upstream, 'utf8'), source))
    console.error(`wrote ${CRD_FILE}`)
  }
  const text = readFileSync(CRD_FILE, 'utf8')
  writeFileSync(OUT_FILE, extractSchemas(text))
  console.error(`wrote ${OUT_FILE}`)
}
