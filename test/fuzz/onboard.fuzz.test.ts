/**
 * Property tests: generated and mutated inputs thrown at the onboard parsers, generator and YAML
 * reader in-process. Every case must end in a result or a UsageError with a one-line message —
 * never another exception. FUZZ_RUNS scales the number of cases (`npm run fuzz`: 25,000 per property).
 */
import fc from 'fast-check'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {MeshvmError} from '../../src/lib/errors.js'
import {buildBundle, type WorkloadGroupLike} from '../../src/lib/bundle/generate.js'
import {readWorkloadGroupFile} from '../../src/lib/onboard/from-file.js'
import {generateOnboardObjects} from '../../src/lib/onboard/generate.js'
import {parseOnboardInput, type OnboardInput} from '../../src/lib/onboard/spec.js'
import {toYamlStream} from '../../src/lib/yaml.js'
import {recordCases} from './budget.js'

const RUNS = Number(process.env.FUZZ_RUNS ?? 1500)
const work = mkdtempSync(join(tmpdir(), 'meshvm-fuzz-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))

/** Strings that look like what people type, mixed with hostile ones. */
const token = fc.oneof(
  fc.constantFrom('web', 'http', 'grpc', 'app', '8080', '0', '65536', '-1', '', ' ', '*', '=', ':', '/', ',', "'", '"', '\\', 'HTTP', 'tcp', 'a.b', 'A_B', '\u0000', '🙂', 'x'.repeat(70)),
  fc.string({maxLength: 12}),
  fc.stringMatching(/^[a-z][-a-z0-9]{0,8}$/),
  fc.integer({min: -5, max: 70000}).map(String),
)
const joined = fc.array(token, {maxLength: 5}).chain((parts) => fc.constantFrom('=', ':', '/', ',', '').map((sep) => parts.join(sep)))
const list = fc.option(fc.array(joined, {maxLength: 3}), {nil: undefined})
const maybe = fc.option(joined, {nil: undefined})

const inputArb: fc.Arbitrary<OnboardInput> = fc.record(
  {
    name: maybe,
    namespace: maybe,
    ports: list,
    labels: list,
    annotations: list,
    serviceAccount: maybe,
    network: maybe,
    locality: maybe,
    weight: maybe,
    hosts: list,
    serviceEntry: fc.option(fc.boolean(), {nil: undefined}),
    createNamespace: fc.boolean(),
    createServiceAccount: fc.boolean(),
    probe: fc.option(
      fc.record(
        {http: maybe, https: maybe, tcp: maybe, exec: maybe, host: maybe, headers: list, period: maybe, timeout: maybe, initialDelay: maybe, successThreshold: maybe, failureThreshold: maybe},
        {requiredKeys: []},
      ),
      {nil: undefined},
    ),
  },
  {requiredKeys: []},
)

/** Valid-ish inputs, then one field mutated: reaches deeper validation than pure noise does. */
const nearValid: fc.Arbitrary<OnboardInput> = fc
  .tuple(fc.constantFrom<keyof OnboardInput>('name', 'namespace', 'ports', 'labels', 'annotations', 'serviceAccount', 'locality', 'weight', 'hosts', 'probe'), joined)
  .map(([field, value]) => {
    const base: OnboardInput = {name: 'web', namespace: 'apps', ports: ['http=8080'], labels: ['app=web'], probe: {http: '8080/healthz'}, serviceEntry: field === 'hosts'}
    const mutated: OnboardInput = {...base}
    if (field === 'ports' || field === 'labels' || field === 'annotations' || field === 'hosts') (mutated as Record<string, unknown>)[field] = [value]
    else if (field === 'probe') mutated.probe = {tcp: value}
    else (mutated as Record<string, unknown>)[field] = value
    return mutated
  })

function expectCleanOutcome(run: () => unknown): 'ok' | 'usage' {
  try {
    run()
    return 'ok'
  } catch (err) {
    if (!(err instanceof MeshvmError)) throw err
    expect(err.message).not.toContain('\n')
    expect(err.exit).toBe(2)
    return 'usage'
  }
}

describe('fuzz: onboard flags', () => {
  it(`random and near-valid inputs end in manifests or a usage error (${2 * RUNS} cases)`, () => {
    const outcomes = {ok: 0, usage: 0}
    for (const arb of [inputArb, nearValid]) {
      fc.assert(
        fc.property(arb, (input) => {
          outcomes[expectCleanOutcome(() => toYamlStream(generateOnboardObjects(parseOnboardInput(input))))]++
        }),
        {numRuns: RUNS},
      )
    }
    recordCases('onboard flags', 2 * RUNS)
    // Both paths must be exercised, or the generators are not doing their job.
    expect(outcomes.ok).toBeGreaterThan(0)
    expect(outcomes.usage).toBeGreaterThan(0)
  })
})

describe('fuzz: -f WorkloadGroup files', () => {
  const yamlish = fc.oneof(
    fc.string({maxLength: 200}),
    fc.constantFrom(
      'kind: WorkloadGroup\nmetadata: {name: web, namespace: apps}\nspec: {}\n',
      'kind: WorkloadGroup\n',
      '---\n---\n',
      'a: [\n',
      'kind: WorkloadGroup\nmetadata: {name: 1}\n',
      '*a',
      '&a [*a]',
      'kind: WorkloadGroup\nmetadata: {name: web}\nspec: []\n',
    ),
    fc.jsonValue({maxDepth: 3}).map((v) => JSON.stringify(v)),
    fc.record({kind: fc.constantFrom('WorkloadGroup', 'Service', 1), metadata: fc.jsonValue({maxDepth: 2}), spec: fc.jsonValue({maxDepth: 3})}).map((v) => JSON.stringify(v)),
  )
  it(`arbitrary files are read or rejected with a one-line error (${RUNS} cases)`, () => {
    let i = 0
    fc.assert(
      fc.property(yamlish, fc.option(fc.constantFrom('apps', 'x'), {nil: undefined}), (text, ns) => {
        const file = join(work, `wg-${i++ % 50}.yaml`)
        writeFileSync(file, text)
        expectCleanOutcome(() => {
          const wg = readWorkloadGroupFile(file, ns)
          // A file that reads must also make a bundle or be rejected cleanly.
          buildBundle({
            workloadGroup: wg as WorkloadGroupLike,
            meshConfigYaml: '',
            clusterId: 'c',
            rootCert: '',
            token: '',
            istioNamespace: 'istio-system',
            gateway: {kind: 'none'},
            autoregister: false,
            captureDns: true,
          })
        })
      }),
      {numRuns: RUNS},
    )
    recordCases('workloadgroup files', RUNS)
  })
})

describe('fuzz: mesh config from the cluster', () => {
  it(`hostile mesh config and annotations end in files or a usage error (${RUNS} cases)`, () => {
    fc.assert(
      fc.property(
        fc.oneof(
          fc.string({maxLength: 100}),
          fc.jsonValue({maxDepth: 3}).map((v) => JSON.stringify({defaultConfig: v})),
        ),
        fc.string({maxLength: 60}),
        (mesh, annotation) => {
          expectCleanOutcome(() =>
            buildBundle({
              workloadGroup: {metadata: {name: 'web', namespace: 'apps', annotations: {'proxy.istio.io/config': annotation}}, spec: {}},
              meshConfigYaml: mesh,
              clusterId: 'c',
              rootCert: '',
              token: '',
              istioNamespace: 'istio-system',
              gateway: {kind: 'none'},
              autoregister: false,
              captureDns: true,
            }),
          )
        },
      ),
      {numRuns: RUNS},
    )
    recordCases('mesh config', RUNS)
  })
})
