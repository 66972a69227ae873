/**
 * Property tests: hostile and malformed API server data (syncz bodies, WARs, WorkloadEntries) thrown
 * at the parsers that read cluster state. Every case ends in a result or a MeshvmError with a
 * one-line message — never another exception.
 */
import fc from 'fast-check'
import {describe, expect, it} from 'vitest'
import {MeshvmError} from '../../src/lib/errors.js'
import {parseSyncz, proxyStatusRows, renderProxyStatusTable} from '../../src/lib/proxy-status/status.js'
import {describeRegistration} from '../../src/lib/war/describe.js'
import {registrationFromWar, registrationFromWorkloadEntry, summaryFromWar, summaryFromWorkloadEntry, warColumns, type WarObject, type WorkloadEntryObject} from '../../src/lib/war/model.js'
import {renderTable} from '../../src/lib/output/table.js'
import {recordCases} from './budget.js'

const RUNS = Number(process.env.FUZZ_RUNS ?? 1500)
const NOW = new Date('2026-11-23T10:00:00Z')

const scalar = fc.oneof(
  fc.string({maxLength: 10}),
  fc.integer(),
  fc.double(),
  fc.boolean(),
  fc.constant(null),
  fc.constantFrom('True', 'False', '2026-11-20T10:00:00Z', 'not-a-date', '', 'i-123', 'unix:///x'),
)
const json = fc.letrec((tie) => ({
  value: fc.oneof(
    {depthSize: 'small'},
    scalar,
    fc.array(tie('value'), {maxLength: 3}),
    fc.dictionary(
      fc.constantFrom(
        'status',
        'spec',
        'metadata',
        'conditions',
        'type',
        'aws',
        'ec2',
        'instance_id',
        'instanceId',
        'identity',
        'registration',
        'host',
        'addresses',
        'ip',
        'name',
        'namespace',
        'annotations',
        'labels',
        'resources',
        'sent',
        'acked',
        'proxy',
        'cluster_sent',
      ),
      tie('value'),
      {maxKeys: 4},
    ),
  ),
})).value

/** Near-valid objects: a valid skeleton with random parts replaced. */
function mutated(base: Record<string, unknown>): fc.Arbitrary<unknown> {
  const paths = (function collect(v: unknown, prefix: string[]): string[][] {
    if (v === null || typeof v !== 'object') return [prefix]
    return [prefix, ...Object.entries(v).flatMap(([k, c]) => collect(c, [...prefix, k]))]
  })(base, [])
  return fc.tuple(fc.constantFrom(...paths), json).map(([path, value]) => {
    const copy = structuredClone(base) as Record<string, unknown>
    if (path.length === 0) return value
    let cur: Record<string, unknown> = copy
    for (const k of path.slice(0, -1)) cur = cur[k] as Record<string, unknown>
    cur[path[path.length - 1]!] = value
    return copy
  })
}

const WAR = {
  apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1',
  kind: 'WorkloadAutoRegistration',
  metadata: {name: 'r-1', namespace: 'ns', creationTimestamp: '2026-11-20T10:00:00Z', ownerReferences: [{kind: 'WorkloadGroup', name: 'g', uid: 'u'}]},
  spec: {
    identity: {aws: {partition: 'aws', account: '123456789012', zone: 'z', ec2: {instance_id: 'i-1'}}},
    registration: {agent: {version: '1'}, sidecar: {istio: {version: '1.24.2'}}, host: {addresses: [{ip: '10.0.0.1', type: 'VPC'}]}},
  },
  status: {conditions: [{type: 'AgentConnected', status: 'True', lastTransitionTime: '2026-11-20T10:00:00Z'}], workloadGroupSnapshot: {template: {ports: {http: 80}}}},
}
const WE = {
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: {name: 'g-10.0.0.1', namespace: 'ns', annotations: {'istio.io/autoRegistrationGroup': 'g', 'istio.io/disconnectedAt': '2026-11-20T10:00:00Z'}},
  spec: {address: '10.0.0.1'},
  status: {conditions: [{type: 'Healthy', status: 'False'}]},
}
const SYNCZ = [
  {
    cluster_id: 'c1',
    proxy: 'p.ns',
    istio_version: '1.24.2',
    cluster_sent: 'a',
    cluster_acked: 'a',
    resources: {'type.googleapis.com/envoy.config.cluster.v3.Cluster': {sent: 'a', acked: 'b', sentTime: '2026-11-23T09:59:00Z', lastError: 'x'}},
  },
]

function cleanOrMeshvm(fn: () => unknown): void {
  try {
    fn()
  } catch (err) {
    expect(err).toBeInstanceOf(MeshvmError)
    expect((err as Error).message).not.toContain('\n')
  }
}

describe('fuzz: data from the API server', () => {
  it(`syncz bodies: parsed, or one clean error (${RUNS} cases)`, () => {
    fc.assert(
      fc.property(
        fc.oneof(
          json,
          mutated({list: SYNCZ}).map((v) => (v as {list?: unknown})?.list ?? v),
          fc.string(),
        ),
        (body) => {
          cleanOrMeshvm(() => {
            const syncs = parseSyncz(body, {name: 'istiod-1', namespace: 'istio-system', version: '1.24.2'})
            renderProxyStatusTable(proxyStatusRows(syncs, {now: NOW}), {color: false, wide: true})
          })
        },
      ),
      {numRuns: RUNS},
    )
    recordCases('syncz bodies', RUNS)
  })

  it(`WARs and WorkloadEntries: rows, tables and describe output, never a crash (${2 * RUNS} cases)`, () => {
    fc.assert(
      fc.property(fc.oneof(mutated(WAR), json), (obj) => {
        cleanOrMeshvm(() => {
          const reg = registrationFromWar(obj as WarObject)
          renderTable([reg], warColumns(true, true, NOW), {wide: true})
          describeRegistration(reg, {war: obj as WarObject}, NOW)
        })
      }),
      {numRuns: RUNS},
    )
    fc.assert(
      fc.property(fc.oneof(mutated(WE), json), (obj) => {
        cleanOrMeshvm(() => {
          const reg = registrationFromWorkloadEntry(obj as WorkloadEntryObject)
          renderTable([reg], warColumns(true, true, NOW), {wide: true})
          describeRegistration(reg, {workloadEntry: obj as WorkloadEntryObject}, NOW)
        })
      }),
      {numRuns: RUNS},
    )
    recordCases('WARs and WorkloadEntries', 2 * RUNS)
  })

  it(`the summary a table without -o wide prints is the registration's own fields (${2 * RUNS} cases)`, () => {
    const pick = (r: ReturnType<typeof registrationFromWar>) => ({source: r.source, namespace: r.namespace, name: r.name, agentConnected: r.agentConnected, creationTimestamp: r.creationTimestamp})
    fc.assert(
      fc.property(fc.oneof(mutated(WAR), json), (obj) => {
        expect(summaryFromWar(obj)).toEqual(pick(registrationFromWar(obj)))
        expect(renderTable([summaryFromWar(obj)], warColumns(false, true, NOW))).toBe(renderTable([registrationFromWar(obj)], warColumns(false, true, NOW)))
      }),
      {numRuns: RUNS},
    )
    fc.assert(
      fc.property(fc.oneof(mutated(WE), json), (obj) => {
        expect(summaryFromWorkloadEntry(obj)).toEqual(pick(registrationFromWorkloadEntry(obj)))
      }),
      {numRuns: RUNS},
    )
    recordCases('registration summaries', 2 * RUNS)
  })
})
