import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'
import {parse} from 'yaml'
import {renderTable} from '../../src/lib/output/table.js'
import {compileSchema, type Schema} from '../../src/lib/schema/validate.js'
import {
  DEFAULT_WAR_GRACE_PERIOD_MS,
  identityRows,
  identityString,
  isAutoRegisteredWorkloadEntry,
  isPrunable,
  registrationFromWar,
  registrationFromWorkloadEntry,
  staleDifference,
  warColumns,
  workloadEntryDifference,
  type EventLike,
  type Registration,
  type WarObject,
  type WorkloadEntryObject,
  type WorkloadGroup,
} from '../../src/lib/war/model.js'
import {describeRegistration} from '../../src/lib/war/describe.js'
import {expectMatchesGoldenFile} from '../helpers/golden.js'
import {REPO_ROOT} from '../helpers/cli.js'

const GOLDEN = join(REPO_ROOT, 'test/golden/war')
const NOW = new Date('2024-05-01T12:00:00Z')
/** A timestamp `ms` before NOW. */
const ago = (ms: number): string => new Date(NOW.getTime() - ms).toISOString().replace(/\.000Z$/, 'Z')
const MIN = 60_000
const HOUR = 60 * MIN

const groupSpec = () => ({
  metadata: {labels: {app: 'ratings', class: 'vm'}},
  template: {serviceAccount: 'ratings', ports: {http: 9080}, network: 'vm-network'},
  probe: {periodSeconds: 10, httpGet: {path: '/ready', port: 9080}},
})

const group = (spec: object = groupSpec(), generation = 3): WorkloadGroup => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadGroup',
  metadata: {name: 'ratings', namespace: 'bookinfo', generation},
  spec,
})

/** The reference page's example, snake_case keys as in TSB's YAML examples. */
const ec2War = (overrides: {status?: WarObject['status']; created?: string} = {}): WarObject => ({
  apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1',
  kind: 'WorkloadAutoRegistration',
  metadata: {
    namespace: 'bookinfo',
    name: 'ratings-aws-aws-123456789012-ca-central-1b-ec2-i-1234567890abcdef0',
    creationTimestamp: overrides.created ?? ago(26 * HOUR),
    labels: {'onboarding.tetrate.io/group': 'ratings'},
    ownerReferences: [{apiVersion: 'networking.istio.io/v1beta1', kind: 'WorkloadGroup', name: 'ratings', controller: true, blockOwnerDeletion: true, uid: 'fb67dbad'}],
  },
  spec: {
    identity: {aws: {partition: 'aws', account: '123456789012', region: 'ca-central-1', zone: 'ca-central-1b', ec2: {instance_id: 'i-1234567890abcdef0', iam_role: {name: 'ratings-vm'}}}},
    registration: {
      agent: {version: '1.4.0'},
      sidecar: {istio: {version: '1.8.5-abcd', revision: 'canary'}},
      host: {
        addresses: [
          {ip: '10.0.0.1', type: 'VPC'},
          {ip: '1.2.3.4', type: 'INTERNET'},
        ],
      },
      workload: {labels: {cloud: 'aws', class: 'ec2', version: 'v3'}},
      settings: {connectedOver: 'INTERNET'},
    },
  },
  status: overrides.status ?? {
    activeAgentConnection: {connectedTo: 'onboarding-plane-745bf76677-974tq'},
    conditions: [{type: 'AgentConnected', status: 'True', reason: 'ConnectionEstablished', lastTransitionTime: ago(25 * HOUR)}],
  },
})

/** An ECS task written with camelCase keys, as `kubectl get -o json` returns them. */
const ecsWar = (): WarObject => ({
  apiVersion: 'runtime.onboarding.tetrate.io/v1alpha1',
  kind: 'WorkloadAutoRegistration',
  metadata: {
    namespace: 'payments',
    name: 'ledger-aws-aws-123456789012-us-east-2b-ecs-0f1e2d',
    creationTimestamp: ago(3 * MIN),
    ownerReferences: [{kind: 'WorkloadGroup', name: 'ledger', controller: true}],
  },
  spec: {
    identity: {aws: {partition: 'aws', account: '123456789012', region: 'us-east-2', zone: 'us-east-2b', ecs: {taskId: '0f1e2d', cluster: 'prod', iamRole: {name: 'ledger-task'}}}},
    registration: {agent: {version: '1.11.0'}, sidecar: {istio: {version: '1.24.3-tetrate3'}}, host: {addresses: [{ip: '10.1.2.3', type: 'VPC'}]}},
  },
  status: {
    activeAgentConnection: {connectedTo: 'onboarding-plane-1'},
    conditions: [{type: 'AgentConnected', status: 'False', reason: 'AgentDisconnected', lastTransitionTime: ago(2 * MIN)}],
  },
})

const jwtWar = (): WarObject => ({
  metadata: {namespace: 'onprem', name: 'payments-v1-jwt-keycloak-vm-7', creationTimestamp: ago(40 * HOUR), ownerReferences: [{kind: 'WorkloadGroup', name: 'payments-v1'}]},
  spec: {
    identity: {jwt: {issuer: 'https://keycloak.example.com/realms/vms/', subject: 'vm-7', attributes: {region: 'dc1'}}},
    registration: {agent: {version: '1.9.0'}, sidecar: {istio: {version: '1.20.1'}}, host: {addresses: [{ip: '192.168.10.7'}]}},
  },
  status: {conditions: [{type: 'AgentConnected', status: 'False', lastTransitionTime: ago(6 * MIN)}]},
})

const workloadEntry = (overrides: {annotations?: Record<string, string>; spec?: object; name?: string; created?: string} = {}): WorkloadEntryObject => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: {
    name: overrides.name ?? 'ratings-10.0.0.1-vm-network',
    namespace: 'bookinfo',
    creationTimestamp: overrides.created ?? ago(90 * MIN),
    annotations: overrides.annotations ?? {
      'istio.io/autoRegistrationGroup': 'ratings',
      'istio.io/connectedAt': ago(90 * MIN),
      'istio.io/workloadController': 'istiod-5d8f7c9b6-x2x7q',
    },
    ownerReferences: [{apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', name: 'ratings', controller: true}],
  },
  spec: overrides.spec ?? {address: '10.0.0.1', serviceAccount: 'ratings', ports: {http: 9080}, network: 'vm-network', labels: {app: 'ratings', class: 'vm', hostname: 'vm-1'}},
  status: {conditions: [{type: 'Healthy', status: 'True', reason: 'HealthCheck', lastTransitionTime: ago(89 * MIN)}]},
})

describe('identity', () => {
  it.each([
    ['aws/ec2, snake_case', {aws: {zone: 'us-east-2b', ec2: {instance_id: 'i-0123'}}}, 'aws/ec2 i-0123 us-east-2b'],
    ['aws/ec2, camelCase', {aws: {zone: 'us-east-2b', ec2: {instanceId: 'i-0123'}}}, 'aws/ec2 i-0123 us-east-2b'],
    ['aws/ecs, snake_case', {aws: {zone: 'us-east-2b', ecs: {task_id: 'abc', cluster: 'prod'}}}, 'aws/ecs prod/abc us-east-2b'],
    ['aws/ecs, camelCase, no cluster', {aws: {zone: 'us-east-2b', ecs: {taskId: 'abc'}}}, 'aws/ecs abc us-east-2b'],
    ['aws without a platform', {aws: {account: '123456789012', zone: 'eu-west-1a'}}, 'aws 123456789012 eu-west-1a'],
    ['gcp/gce', {gcp: {project_id: 'p', zone: 'us-central1-a', gce: {instance_id: '1234'}}}, 'gcp/gce 1234 us-central1-a'],
    ['gcp/gce, camelCase', {gcp: {projectId: 'p', zone: 'us-central1-a', gce: {instanceId: '1234'}}}, 'gcp/gce 1234 us-central1-a'],
    ['azure', {azure: {subscription: 's', resource_group: 'rg', compute: {instance_id: 'vm-uuid'}}}, 'azure/compute vm-uuid rg'],
    ['azure, camelCase', {azure: {subscription: 's', resourceGroup: 'rg', compute: {instanceId: 'vm-uuid'}}}, 'azure/compute vm-uuid rg'],
    ['jwt', {jwt: {issuer: 'https://idp.example.com', subject: 'vm-7'}}, 'jwt https://idp.example.com/vm-7'],
    ['jwt, issuer with a trailing slash', {jwt: {issuer: 'https://idp.example.com/realms/x/', subject: 'vm-7'}}, 'jwt https://idp.example.com/realms/x/vm-7'],
    ['an unknown platform', {oci: {instance: 'x'}}, 'oci'],
    ['none', undefined, ''],
    ['not an object', 'aws', ''],
  ])('%s', (_title, identity, expected) => {
    expect(identityString(identity)).toBe(expected)
  })
})

describe('identityRows (describe)', () => {
  it.each([
    [
      'gcp/gce',
      {gcp: {project_number: '123', projectId: 'p', region: 'r', zone: 'z', gce: {instance_id: 'i'}}},
      [
        ['Kind', ['gcp/gce']],
        ['Project Number', ['123']],
        ['Project ID', ['p']],
        ['Region', ['r']],
        ['Zone', ['z']],
        ['Instance ID', ['i']],
      ],
    ],
    [
      'azure/compute',
      {azure: {subscription: 's', resource_group: 'rg', compute: {instanceId: 'c'}}},
      [
        ['Kind', ['azure/compute']],
        ['Subscription', ['s']],
        ['Resource Group', ['rg']],
        ['Instance ID', ['c']],
      ],
    ],
    [
      'aws with ec2 and ecs',
      {aws: {partition: 'aws', account: '1', region: 'r', zone: 'z', ec2: {instanceId: 'i', iam_role: {name: 'n'}}, ecs: {cluster: 'c', task_id: 't', iamRole: {name: 'm'}}}},
      [
        ['Kind', ['aws/ec2']],
        ['Partition', ['aws']],
        ['Account', ['1']],
        ['Region', ['r']],
        ['Zone', ['z']],
        ['Instance ID', ['i']],
        ['IAM Role', ['n']],
        ['Cluster', ['c']],
        ['Task ID', ['t']],
        ['IAM Role', ['m']],
      ],
    ],
    ['a platform that is not an object', {aws: {ec2: 'x', ecs: {}}}, [['Kind', ['aws/ecs']]]],
    [
      'jwt with attributes',
      {jwt: {issuer: 'i', subject: 's', attributes: {b: 1, a: {x: 1}}}},
      [
        ['Kind', ['jwt']],
        ['Issuer', ['i']],
        ['Subject', ['s']],
        ['Attributes', ['a={"x":1}', 'b=1']],
      ],
    ],
    ['none', undefined, []],
  ])('%s', (_title, identity, expected) => {
    expect(identityRows(identity)).toEqual(expected)
  })
})

describe('registrationFromWar', () => {
  it('reads the reference example (snake_case keys)', () => {
    expect(registrationFromWar(ec2War(), group())).toEqual({
      source: 'war',
      namespace: 'bookinfo',
      name: 'ratings-aws-aws-123456789012-ca-central-1b-ec2-i-1234567890abcdef0',
      group: 'ratings',
      agentConnected: 'True',
      connectedTo: 'onboarding-plane-745bf76677-974tq',
      identity: 'aws/ec2 i-1234567890abcdef0 ca-central-1b',
      addresses: ['10.0.0.1', '1.2.3.4'],
      agentVersion: '1.4.0',
      sidecarVersion: '1.8.5-abcd',
      stale: false,
      creationTimestamp: ago(26 * HOUR),
    } satisfies Registration)
  })

  it('reads camelCase keys the same way, and a disconnected agent', () => {
    const reg = registrationFromWar(ecsWar())
    expect(reg).toMatchObject({group: 'ledger', agentConnected: 'False', identity: 'aws/ecs prod/0f1e2d us-east-2b', addresses: ['10.1.2.3'], disconnectedAt: ago(2 * MIN)})
    // A disconnected agent is connected to nothing, whatever status.activeAgentConnection still says.
    expect(reg.connectedTo).toBeUndefined()
  })

  it('takes the status of a hand-written file as a YAML boolean', () => {
    const war = ec2War({status: {conditions: [{type: 'AgentConnected', status: true}]}})
    expect(registrationFromWar(war).agentConnected).toBe('True')
    expect(registrationFromWar(ec2War({status: {conditions: [{type: 'AgentConnected', status: false}]}})).agentConnected).toBe('False')
  })

  it('is Unknown without an AgentConnected condition and tolerates a bare object', () => {
    expect(registrationFromWar(ec2War({status: {}})).agentConnected).toBe('Unknown')
    expect(registrationFromWar({})).toEqual({source: 'war', namespace: '', name: '', group: '', agentConnected: 'Unknown', identity: '', addresses: [], stale: false, creationTimestamp: ''})
    expect(registrationFromWar(null)).toMatchObject({name: '', identity: ''})
  })

  it('falls back to the group it was given when the WAR has no owner reference', () => {
    const war = ec2War()
    delete war.metadata!.ownerReferences
    expect(registrationFromWar(war).group).toBe('')
    expect(registrationFromWar(war, group()).group).toBe('ratings')
  })
})

describe('registrationFromWorkloadEntry', () => {
  it('reads an auto-registered, connected entry', () => {
    expect(registrationFromWorkloadEntry(workloadEntry(), group())).toEqual({
      source: 'workloadentry',
      namespace: 'bookinfo',
      name: 'ratings-10.0.0.1-vm-network',
      group: 'ratings',
      agentConnected: 'True',
      connectedTo: 'istiod-5d8f7c9b6-x2x7q',
      identity: 'serviceaccount bookinfo/ratings',
      addresses: ['10.0.0.1'],
      stale: false,
      creationTimestamp: ago(90 * MIN),
      // No tunnel label and no WaypointBound condition (read, and absent).
      tunnel: '',
      waypointBound: '',
    } satisfies Registration)
    expect(isAutoRegisteredWorkloadEntry(workloadEntry())).toBe(true)
    expect(isAutoRegisteredWorkloadEntry(workloadEntry({annotations: {}}))).toBe(false)
  })

  it('is False with istio.io/disconnectedAt, True again after a later connectedAt, Unknown with neither', () => {
    const disconnected = registrationFromWorkloadEntry(
      workloadEntry({
        annotations: {'istio.io/autoRegistrationGroup': 'ratings', 'istio.io/connectedAt': ago(HOUR), 'istio.io/disconnectedAt': ago(30 * MIN), 'istio.io/workloadController': 'istiod-1'},
      }),
    )
    expect(disconnected).toMatchObject({agentConnected: 'False', disconnectedAt: ago(30 * MIN)})
    expect(disconnected.connectedTo).toBeUndefined()
    const reconnected = registrationFromWorkloadEntry(workloadEntry({annotations: {'istio.io/connectedAt': ago(MIN), 'istio.io/disconnectedAt': ago(30 * MIN)}}))
    expect(reconnected.agentConnected).toBe('True')
    expect(reconnected.disconnectedAt).toBeUndefined()
    expect(registrationFromWorkloadEntry(workloadEntry({annotations: {}})).agentConnected).toBe('Unknown')
  })

  it('takes the group from the owner reference when the annotation is missing', () => {
    expect(registrationFromWorkloadEntry(workloadEntry({annotations: {}})).group).toBe('ratings')
  })
})

describe('stale registrations', () => {
  const withSnapshot = (snapshot: object): WarObject => {
    const war = ec2War()
    war.status = {...war.status, workloadGroupSnapshot: snapshot}
    return war
  }

  it('are not stale when the snapshot equals the group spec (key order, empty maps and nulls do not count)', () => {
    const snapshot = {
      probe: {httpGet: {port: 9080, path: '/ready'}, periodSeconds: 10},
      template: {network: 'vm-network', ports: {http: 9080}, serviceAccount: 'ratings', labels: {}},
      metadata: {labels: {class: 'vm', app: 'ratings'}, annotations: null},
    }
    expect(staleDifference(withSnapshot(snapshot), group())).toBe('')
    expect(registrationFromWar(withSnapshot(snapshot), group()).stale).toBe(false)
  })

  it('are stale, with a YAML diff of snapshot vs current spec, when the group changed', () => {
    const current = groupSpec()
    current.template.ports = {http: 9080, grpc: 9090} as typeof current.template.ports
    current.metadata.labels.class = 'ec2'
    const war = withSnapshot(groupSpec())
    expect(registrationFromWar(war, group(current)).stale).toBe(true)
    expect(staleDifference(war, group(current))).toBe(
      [
        '--- workloadautoregistration bookinfo/ratings-aws-aws-123456789012-ca-central-1b-ec2-i-1234567890abcdef0 (snapshot)',
        '+++ workloadgroup bookinfo/ratings (current)',
        '@@ -1,7 +1,7 @@',
        ' metadata:',
        '   labels:',
        '     app: ratings',
        '-    class: vm',
        '+    class: ec2',
        ' probe:',
        '   httpGet:',
        '     path: /ready',
        '@@ -10,5 +10,6 @@',
        ' template:',
        '   network: vm-network',
        '   ports:',
        '+    grpc: 9090',
        '     http: 9080',
        '   serviceAccount: ratings',
        '',
      ].join('\n'),
    )
  })

  it('are never stale without a group; without a snapshot the WAR is judged by its WorkloadEntry', () => {
    const changed = group({...groupSpec(), template: {...groupSpec().template, serviceAccount: 'ratings-v2'}})
    expect(registrationFromWar(withSnapshot({}), undefined).stale).toBe(false)
    expect(staleDifference(ec2War(), changed)).toBe('')
    expect(registrationFromWar(ec2War(), changed).stale).toBe(false)
    expect(registrationFromWar(ec2War(), changed, workloadEntry()).stale).toBe(true)
    expect(registrationFromWar(ec2War(), group(), workloadEntry()).stale).toBe(false)
  })

  it('compare a WorkloadEntry with the group template, ignoring labels the workload added', () => {
    expect(workloadEntryDifference(workloadEntry(), group())).toBe('')
    const changed = groupSpec()
    changed.template.ports = {http: 8080}
    changed.metadata.labels.app = 'ratings-v2'
    expect(registrationFromWorkloadEntry(workloadEntry(), group(changed)).stale).toBe(true)
    expect(workloadEntryDifference(workloadEntry(), group(changed))).toBe(
      [
        '--- workloadentry bookinfo/ratings-10.0.0.1-vm-network',
        '+++ workloadgroup bookinfo/ratings (current)',
        '@@ -1,7 +1,7 @@',
        ' labels:',
        '-  app: ratings',
        '+  app: ratings-v2',
        '   class: vm',
        ' network: vm-network',
        ' ports:',
        '-  http: 9080',
        '+  http: 8080',
        ' serviceAccount: ratings',
        '',
      ].join('\n'),
    )
    // A group annotation the entry lacks is a difference too.
    expect(workloadEntryDifference(workloadEntry(), group({...groupSpec(), metadata: {labels: groupSpec().metadata.labels, annotations: {team: 'a'}}}))).toContain('+  team: a')
  })
})

const rows = (): Registration[] => [
  registrationFromWar(ec2War(), group()),
  registrationFromWar(ecsWar()),
  registrationFromWar(jwtWar()),
  registrationFromWorkloadEntry(workloadEntry(), group({...groupSpec(), template: {...groupSpec().template, ports: {http: 8080}}})),
  registrationFromWorkloadEntry(workloadEntry({name: 'reviews-10.0.0.9', annotations: {'istio.io/autoRegistrationGroup': 'reviews'}, spec: {address: '10.0.0.9'}, created: ago(9 * 24 * HOUR)})),
]

describe('warColumns', () => {
  it('match kubectl get war: NAME AGENT CONNECTED AGE', () => {
    expect(warColumns(false, false, NOW).map((c) => c.header)).toEqual(['NAME', 'AGENT CONNECTED', 'AGE'])
    expect(warColumns(false, true, NOW).map((c) => c.header)).toEqual(['NAMESPACE', 'NAME', 'AGENT CONNECTED', 'AGE'])
    expect(warColumns(true, true, NOW).map((c) => c.header)).toEqual([
      'NAMESPACE',
      'NAME',
      'AGENT CONNECTED',
      'AGE',
      'GROUP',
      'IDENTITY',
      'ADDRESSES',
      'AGENT',
      'SIDECAR',
      'CONNECTED-TO',
      'STALE',
      'TUNNEL',
      'WAYPOINT',
      'SOURCE',
    ])
  })

  it.each([
    ['list.txt', false, false],
    ['list-all-namespaces.txt', false, true],
    ['list-wide.txt', true, true],
  ])('render %s', (file, wide, allNamespaces) => {
    expectMatchesGoldenFile(renderTable(rows(), warColumns(wide, allNamespaces, NOW)), join(GOLDEN, file))
  })

  it('colour only the AGENT CONNECTED cell, through the given function', () => {
    const cols = warColumns(false, false, NOW, (s) => `<${s}>`)
    const text = renderTable([registrationFromWar(ec2War())], cols)
    expect(text.split('\n')[1]).toMatch(/^ratings-\S+ {3}<True> +26h$/)
  })
})

describe('describeRegistration', () => {
  const events: EventLike[] = [
    {
      type: 'Warning',
      reason: 'AgentDisconnected',
      message: 'Agent lost its connection',
      count: 3,
      firstTimestamp: ago(3 * HOUR),
      lastTimestamp: ago(2 * HOUR),
      source: {component: 'onboarding-plane'},
    },
    {
      type: 'Normal',
      reason: 'Registered',
      message: 'Workload registered\nfrom 10.0.0.1',
      firstTimestamp: ago(26 * HOUR),
      lastTimestamp: ago(26 * HOUR),
      source: {component: 'onboarding-plane', host: 'node-a'},
    },
    {type: 'Normal', reason: 'WorkloadEntryCreated', note: 'created WorkloadEntry ratings-10.0.0.1-vm-network', eventTime: ago(25 * HOUR), reportingController: 'onboarding.tetrate.io/operator'},
  ]

  it('prints a stale WAR with its snapshot diff, WorkloadEntry, conditions and events', () => {
    const current = groupSpec()
    current.template.ports = {http: 9080, grpc: 9090} as typeof current.template.ports
    const war = ec2War()
    war.status = {...war.status, observedGeneration: 1, workloadGroupSnapshot: groupSpec()}
    const details = {war, group: group(current, 4), workloadEntry: workloadEntry(), events}
    expectMatchesGoldenFile(describeRegistration(registrationFromWar(war, details.group), details, NOW), join(GOLDEN, 'describe-war-stale.txt'))
  })

  it('prints a disconnected camelCase ECS WAR without group, entry or events', () => {
    const war = ecsWar()
    const text = describeRegistration(registrationFromWar(war), {war}, NOW)
    expectMatchesGoldenFile(text, join(GOLDEN, 'describe-war-ecs.txt'))
    expect(text).toMatch(/^Events: +<none>$/m)
    expect(text).toMatch(/^WorkloadEntry: +<none>$/m)
  })

  it('prints a JWT WAR', () => {
    const war = jwtWar()
    expectMatchesGoldenFile(describeRegistration(registrationFromWar(war), {war}, NOW), join(GOLDEN, 'describe-war-jwt.txt'))
  })

  it('prints an auto-registered WorkloadEntry', () => {
    const we = workloadEntry()
    const g = group()
    expectMatchesGoldenFile(describeRegistration(registrationFromWorkloadEntry(we, g), {workloadEntry: we, group: g, events: []}, NOW), join(GOLDEN, 'describe-workloadentry.txt'))
  })
})

describe('isPrunable', () => {
  const grace = DEFAULT_WAR_GRACE_PERIOD_MS
  const reg = (agentConnected: Registration['agentConnected'], disconnectedAt?: string): Registration => ({
    source: 'war',
    namespace: 'ns',
    name: 'n',
    group: 'g',
    agentConnected,
    identity: '',
    addresses: [],
    stale: false,
    creationTimestamp: ago(HOUR),
    ...(disconnectedAt === undefined ? {} : {disconnectedAt}),
  })

  it.each([
    ['connected', reg('True'), false],
    ['unknown', reg('Unknown'), false],
    ['disconnected 2m ago (within 5m)', reg('False', ago(2 * MIN)), false],
    ['disconnected exactly 5m ago', reg('False', ago(5 * MIN)), false],
    ['disconnected 5m1s ago', reg('False', ago(5 * MIN + 1000)), true],
    ['disconnected a day ago', reg('False', ago(24 * HOUR)), true],
    ['disconnected, time unknown', reg('False'), false],
    ['disconnected, time unreadable', reg('False', 'yesterday'), false],
  ])('%s', (_title, r, expected) => {
    expect(isPrunable(r, grace, NOW)).toBe(expected)
  })

  it('picks the long-disconnected rows out of a mixed list', () => {
    const list = [
      ...rows(),
      registrationFromWorkloadEntry(workloadEntry({name: 'ratings-10.0.0.2', annotations: {'istio.io/autoRegistrationGroup': 'ratings', 'istio.io/disconnectedAt': ago(20 * 1000)}})),
      registrationFromWorkloadEntry(workloadEntry({name: 'ratings-10.0.0.3', annotations: {'istio.io/autoRegistrationGroup': 'ratings', 'istio.io/disconnectedAt': ago(2 * HOUR)}})),
    ]
    expect(list.filter((r) => isPrunable(r, grace, NOW)).map((r) => r.name)).toEqual(['payments-v1-jwt-keycloak-vm-7', 'ratings-10.0.0.3'])
    // istiod's own 10s grace period prunes the entry that left 20s ago too.
    expect(list.filter((r) => isPrunable(r, 10_000, NOW)).map((r) => r.name)).toEqual([
      'ledger-aws-aws-123456789012-us-east-2b-ecs-0f1e2d',
      'payments-v1-jwt-keycloak-vm-7',
      'ratings-10.0.0.2',
      'ratings-10.0.0.3',
    ])
  })
})

describe('the WorkloadAutoRegistration CRD fixture', () => {
  const crd = parse(readFileSync(join(REPO_ROOT, 'test/fixtures/crds/workloadautoregistration.yaml'), 'utf8')) as {
    apiVersion: string
    kind: string
    metadata: {name: string}
    spec: {
      group: string
      scope: string
      names: {kind: string; plural: string; singular: string; shortNames: string[]}
      versions: {
        name: string
        served: boolean
        storage: boolean
        subresources: {status: object}
        additionalPrinterColumns: {name: string; type: string; jsonPath: string}[]
        schema: {openAPIV3Schema: Schema}
      }[]
    }
  }
  const version = crd.spec.versions[0]!
  const validator = compileSchema(version.schema.openAPIV3Schema, {unknownFields: 'report'})
  const causes = (obj: unknown) => validator.validate(obj).map((c) => `${c.field}: ${c.message}`)
  /** The reference example, parsed from YAML (status quoted: a string in the schema). */
  const sample = () =>
    parse(`
apiVersion: runtime.onboarding.tetrate.io/v1alpha1
kind: WorkloadAutoRegistration
metadata:
  namespace: bookinfo
  name: ratings-aws-aws-123456789012-ca-central-1b-ec2-i-1234567890abcdef0
spec:
  identity:
    aws: {partition: aws, account: '123456789012', region: ca-central-1, zone: ca-central-1b, ec2: {instance_id: i-1234567890abcdef0}}
  registration:
    agent: {version: '1.4.0'}
    sidecar: {istio: {version: '1.8.5-abcd'}}
    host: {addresses: [{ip: 10.0.0.1, type: VPC}, {ip: 1.2.3.4, type: INTERNET}]}
    workload: {labels: {cloud: aws, class: ec2, version: v3}}
    settings: {connectedOver: INTERNET}
status:
  activeAgentConnection: {connectedTo: onboarding-plane-745bf76677-974tq}
  conditions:
  - {type: AgentConnected, status: 'True', reason: ConnectionEstablished, lastTransitionTime: "2020-12-02T18:26:08Z"}
`) as {spec: {identity: Record<string, unknown>; registration: {sidecar: {istio: Record<string, unknown>}}}; status: Record<string, unknown>}

  it('names the resource as TSB does', () => {
    expect(crd.apiVersion).toBe('apiextensions.k8s.io/v1')
    expect(crd.kind).toBe('CustomResourceDefinition')
    expect(crd.metadata.name).toBe('workloadautoregistrations.runtime.onboarding.tetrate.io')
    expect(crd.spec.group).toBe('runtime.onboarding.tetrate.io')
    expect(crd.spec.scope).toBe('Namespaced')
    expect(crd.spec.names).toMatchObject({kind: 'WorkloadAutoRegistration', plural: 'workloadautoregistrations', singular: 'workloadautoregistration', shortNames: ['war']})
    expect(crd.spec.versions.map((v) => [v.name, v.served, v.storage])).toEqual([['v1alpha1', true, true]])
    expect(version.subresources).toEqual({status: {}})
    expect(version.additionalPrinterColumns.map((c) => [c.name.toUpperCase(), c.type, c.jsonPath])).toEqual([
      ['AGENT CONNECTED', 'string', '.status.conditions[?(@.type=="AgentConnected")].status'],
      ['AGE', 'date', '.metadata.creationTimestamp'],
    ])
  })

  it('accepts the reference example, and the same object with camelCase keys', () => {
    expect(causes(sample())).toEqual([])
    const camel = sample()
    camel.spec.identity = {aws: {partition: 'aws', account: '123456789012', region: 'us-east-2', zone: 'us-east-2b', ecs: {taskId: 't-1', cluster: 'prod', iamRole: {name: 'r'}}}}
    expect(causes(camel)).toEqual([])
    camel.spec.identity = {jwt: {issuer: 'https://idp', subject: 'vm-7', attributes: {region: 'dc1', tags: ['a']}}}
    expect(causes(camel)).toEqual([])
  })

  it('accepts the objects this test models, and keeps the snapshot meshvm reads from status', () => {
    for (const war of [ec2War(), ecsWar()]) expect(causes(war)).toEqual([])
    const war = ec2War()
    war.status = {...war.status, workloadGroupSnapshot: groupSpec()}
    const pruning = compileSchema(version.schema.openAPIV3Schema, {unknownFields: 'prune'})
    expect(pruning.validate(war)).toEqual([])
    expect(war.status.workloadGroupSnapshot).toEqual(groupSpec())
  })

  it.each([
    ['no registration', (o: ReturnType<typeof sample>) => delete (o.spec as Partial<typeof o.spec>).registration, ['spec.registration: Required value']],
    [
      'two identities',
      (o: ReturnType<typeof sample>) => (o.spec.identity.jwt = {issuer: 'x', subject: 'y'}),
      ['spec.identity: Invalid value: "object": spec.identity in body must validate one and only one schema (oneOf)'],
    ],
    [
      'no identity',
      (o: ReturnType<typeof sample>) => (o.spec.identity = {}),
      ['spec.identity: Invalid value: "object": spec.identity in body must validate one and only one schema (oneOf). Found none valid'],
    ],
    [
      'an account that is not 12 digits',
      (o: ReturnType<typeof sample>) => ((o.spec.identity.aws as Record<string, unknown>).account = '1234'),
      [`spec.identity.aws.account: Invalid value: "1234": spec.identity.aws.account in body should match '^[0-9]{12}$'`],
    ],
    [
      'a bad sidecar revision',
      (o: ReturnType<typeof sample>) => (o.spec.registration.sidecar.istio.revision = 'Canary_1'),
      [`spec.registration.sidecar.istio.revision: Invalid value: "Canary_1": spec.registration.sidecar.istio.revision in body should match '^[a-z0-9](?:[-a-z0-9]*[a-z0-9])?$'`],
    ],
    ['a sidecar without a version', (o: ReturnType<typeof sample>) => delete o.spec.registration.sidecar.istio.version, ['spec.registration.sidecar.istio.version: Required value']],
    [
      'an empty connectedTo',
      (o: ReturnType<typeof sample>) => (o.status.activeAgentConnection = {connectedTo: ''}),
      ['status.activeAgentConnection.connectedTo: Invalid value: "": status.activeAgentConnection.connectedTo in body should be at least 1 chars long'],
    ],
    [
      'an unquoted True condition status (a YAML boolean)',
      (o: ReturnType<typeof sample>) => ((o.status.conditions as {status: unknown}[])[0]!.status = true),
      ['status.conditions[0].status: Invalid value: "boolean": status.conditions[0].status in body must be of type string: "boolean"'],
    ],
  ])('rejects %s', (_title, mutate, expected) => {
    const obj = sample()
    mutate(obj)
    expect(causes(obj)).toEqual(expected)
  })
})
