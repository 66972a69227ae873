import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'
import {assertValidIstioObjects, validateIstioObject} from '../../../src/lib/schema/istio.js'
import {compileSchema, invalidMessage, type Schema} from '../../../src/lib/schema/validate.js'
import {REPO_ROOT} from '../../helpers/cli.js'
import {compileCelRule} from '../../cluster/cel.js'

const wg = (spec: unknown) => ({apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name: 'web', namespace: 'apps'}, spec})
const se = (spec: unknown) => ({apiVersion: 'networking.istio.io/v1', kind: 'ServiceEntry', metadata: {name: 'db', namespace: 'apps'}, spec})
const we = (spec: unknown) => ({apiVersion: 'networking.istio.io/v1', kind: 'WorkloadEntry', metadata: {name: 'vm-1', namespace: 'apps'}, spec})
const causes = (obj: object) => validateIstioObject(obj)!.map((c) => `${c.field}: ${c.message}`)

describe('the committed schemas', () => {
  it('are the served v1 schemas of the fixture CRDs (npm run gen:schemas regenerates them)', async () => {
    // @ts-expect-error plain .mjs script without types
    const {extractSchemas, CRD_FILE, OUT_FILE} = await import('../../../scripts/gen-schemas.mjs')
    const crds = readFileSync(CRD_FILE, 'utf8')
    expect(readFileSync(OUT_FILE, 'utf8')).toBe(extractSchemas(crds))
    expect(CRD_FILE).toBe(join(REPO_ROOT, 'test/fixtures/crds/istio-networking.yaml'))
  })
})

describe('valid objects', () => {
  it('accepts what meshvm generates and the istio.io examples', () => {
    expect(
      causes(wg({metadata: {labels: {app: 'web'}}, template: {ports: {http: 8080}, serviceAccount: 'default'}, probe: {periodSeconds: 10, httpGet: {path: '/', port: 8080, scheme: 'HTTP'}}})),
    ).toEqual([])
    expect(
      causes(se({hosts: ['db.example.com'], location: 'MESH_INTERNAL', ports: [{name: 'tcp', number: 5432, protocol: 'TCP'}], resolution: 'STATIC', workloadSelector: {labels: {app: 'db'}}})),
    ).toEqual([])
    expect(causes(we({address: '10.0.0.1', ports: {http: 8080}, labels: {app: 'web'}, serviceAccount: 'web'}))).toEqual([])
    expect(causes(we({address: 'unix:///var/run/x.sock'}))).toEqual([])
  })
  it('knows nothing of other kinds', () => {
    expect(validateIstioObject({apiVersion: 'v1', kind: 'Service'})).toBeUndefined()
  })
})

describe('structural rules', () => {
  it.each([
    ['required', wg({}), ['spec.template: Required value']],
    ['type', wg({template: {ports: {http: 'eighty'}}}), ['spec.template.ports.http: Invalid value: "string": spec.template.ports.http in body must be of type integer: "string"']],
    [
      'maximum',
      wg({template: {}, probe: {tcpSocket: {port: 4294967296}}}),
      ['spec.probe.tcpSocket.port: Invalid value: 4294967296: spec.probe.tcpSocket.port in body should be less than or equal to 4294967295'],
    ],
    ['enum', se({hosts: ['a.com'], resolution: 'MAGIC'}), ['spec.resolution: Unsupported value: "MAGIC": supported values: "NONE", "STATIC", "DNS", "DNS_ROUND_ROBIN", "DYNAMIC_DNS"']],
    ['maxLength', we({address: 'a'.repeat(257)}), ['spec.address: Too long: may not be more than 256 bytes']],
    ['minItems', se({hosts: []}), ['spec.hosts: Invalid value: 0: spec.hosts in body should have at least 1 items']],
    [
      'maxProperties',
      wg({template: {}, metadata: {labels: Object.fromEntries(Array.from({length: 257}, (_, i) => [`k${i}`, 'v']))}}),
      ['spec.metadata.labels: Too many: 257: must have at most 256 items'],
    ],
    ['unknown field', wg({template: {}, bogus: 1}), ['spec.bogus: unknown field "spec.bogus"']],
    [
      'probe handler exclusivity (oneOf)',
      wg({template: {}, probe: {httpGet: {port: 80}, tcpSocket: {port: 80}}}),
      ['spec.probe: Invalid value: "object": spec.probe in body must validate one and only one schema (oneOf)'],
    ],
    [
      'probe exec command items minLength',
      wg({template: {}, probe: {exec: {command: ['']}}}),
      ['spec.probe.exec.command[0]: Invalid value: "": spec.probe.exec.command[0] in body should be at least 1 chars long'],
    ],
    [
      'int32 format',
      wg({template: {}, probe: {periodSeconds: 3000000000, tcpSocket: {port: 80}}}),
      ['spec.probe.periodSeconds: Invalid value: 3000000000: spec.probe.periodSeconds in body must be of type int32'],
    ],
    ['null', wg({template: null}), ['spec.template: Invalid value: "null": spec.template in body must be of type object: "null"']],
  ])('%s', (_title, obj, expected) => {
    expect(causes(obj)).toEqual(expected)
  })
})

describe('CEL rules (x-kubernetes-validations)', () => {
  it.each([
    ['WorkloadEntry needs an address or a network', we({ports: {http: 80}}), ['spec: Invalid value: "object": Address is required']],
    ['a UDS address may not have ports', we({address: 'unix:///run/a.sock', ports: {http: 80}}), ['spec: Invalid value: "object": UDS may not include ports']],
    ['a UDS address must be absolute or abstract', we({address: 'unix://relative'}), ['spec.address: Invalid value: "string": UDS must be an absolute path or abstract socket']],
    ['a UDS address may not end with /', we({address: 'unix:///run/'}), ['spec.address: Invalid value: "string": UDS may not be a dir']],
    ['port 0 in a WorkloadEntry', we({address: '1.2.3.4', ports: {http: 0}}), ['spec.ports.http: Invalid value: "integer": port must be between 1-65535']],
    ['port 70000 in a WorkloadEntry', we({address: '1.2.3.4', ports: {http: 70000}}), ['spec.ports.http: Invalid value: "integer": port must be between 1-65535']],
    ['bad port name key', we({address: '1.2.3.4', ports: {'-bad': 80}}), ['spec.ports: Invalid value: "object": port name must be valid']],
    ['probe port 0', wg({template: {}, probe: {httpGet: {port: 0}}}), ['spec.probe.httpGet.port: Invalid value: "integer": port must be between 1-65535']],
    ['probe scheme', wg({template: {}, probe: {httpGet: {port: 80, scheme: 'FTP'}}}), ['spec.probe.httpGet.scheme: Invalid value: "string": scheme must be one of [HTTP, HTTPS]']],
    ['ServiceEntry host "*"', se({hosts: ['*']}), ['spec.hosts[0]: Invalid value: "string": hostname cannot be wildcard']],
    [
      'workloadSelector and endpoints together',
      se({hosts: ['a.com'], resolution: 'STATIC', workloadSelector: {labels: {app: 'a'}}, endpoints: [{address: '1.1.1.1'}]}),
      ['spec: Invalid value: "object": only one of WorkloadSelector or Endpoints can be set'],
    ],
    [
      'CIDR addresses need NONE or STATIC resolution',
      se({hosts: ['a.com'], addresses: ['10.0.0.0/24'], resolution: 'DNS'}),
      ['spec: Invalid value: "object": CIDR addresses are allowed only for NONE/STATIC resolution types'],
    ],
    ['endpoints need a resolution', se({hosts: ['a.com'], endpoints: [{address: '1.1.1.1'}]}), ['spec: Invalid value: "object": NONE mode cannot set endpoints']],
    [
      'DNS_ROUND_ROBIN takes one endpoint',
      se({hosts: ['a.com'], resolution: 'DNS_ROUND_ROBIN', endpoints: [{address: 'a.com'}, {address: 'b.com'}]}),
      ['spec: Invalid value: "object": DNS_ROUND_ROBIN mode cannot have multiple endpoints'],
    ],
    [
      'duplicate port numbers',
      se({
        hosts: ['a.com'],
        ports: [
          {name: 'a', number: 80},
          {name: 'b', number: 80},
        ],
      }),
      ['spec.ports: Invalid value: "array": port number cannot be duplicated'],
    ],
    [
      'workloadSelector label value with *',
      se({hosts: ['a.com'], workloadSelector: {labels: {app: 'a*'}}}),
      ['spec.workloadSelector.labels.app: Invalid value: "string": wildcard is not supported in selector'],
    ],
  ])('%s', (_title, obj, expected) => {
    expect(causes(obj)).toEqual(expected)
  })
})

describe('generic CRD schemas', () => {
  const schema: Schema = {
    type: 'object',
    properties: {
      spec: {
        type: 'object',
        properties: {
          port: {'x-kubernetes-int-or-string': true},
          items: {type: 'array', 'x-kubernetes-list-type': 'map', 'x-kubernetes-list-map-keys': ['name'], items: {type: 'object', properties: {name: {type: 'string'}}}},
          free: {type: 'object', 'x-kubernetes-preserve-unknown-fields': true},
        },
      },
    },
  }
  it('prunes unknown fields like kube-apiserver, or reports them', () => {
    const obj = {apiVersion: 'x/v1', kind: 'X', metadata: {name: 'a'}, spec: {port: 'http', junk: 1, free: {anything: {goes: true}}}}
    expect(
      compileSchema(schema, {unknownFields: 'report'})
        .validate(structuredClone(obj))
        .map((c) => c.field),
    ).toEqual(['spec.junk'])
    expect(compileSchema(schema, {unknownFields: 'prune'}).validate(obj)).toEqual([])
    expect(obj.spec).toEqual({port: 'http', free: {anything: {goes: true}}})
  })
  it('checks int-or-string and list-map keys', () => {
    const v = compileSchema(schema)
    expect(v.validate({spec: {port: 80}})).toEqual([])
    expect(v.validate({spec: {port: 1.5}})[0]!.message).toBe('Invalid value: "number": spec.port in body must be of type integer,string: "number"')
    expect(v.validate({spec: {items: [{name: 'a'}, {name: 'a'}]}})).toEqual([{reason: 'FieldValueDuplicate', field: 'spec.items[1]', message: 'Duplicate value: {"name":"a"}'}])
  })
  it('formats kube-apiserver 422 messages', () => {
    expect(invalidMessage('WorkloadGroup', 'networking.istio.io', 'web', [{reason: 'FieldValueRequired', field: 'spec.template', message: 'Required value'}])).toBe(
      'WorkloadGroup.networking.istio.io "web" is invalid: spec.template: Required value',
    )
  })
  it('assertValidIstioObjects turns causes into a usage error', () => {
    expect(() => assertValidIstioObjects([wg({})], 'wg.yaml')).toThrow('wg.yaml: WorkloadGroup.networking.istio.io "web" is invalid: spec.template: Required value')
  })
})

describe('CEL rules without a transpiled form', () => {
  const schema: Schema = {type: 'object', 'x-kubernetes-validations': [{rule: 'self.x.size() > 1', message: 'x too short'}], properties: {x: {type: 'string'}}}
  it('fail validation unless a compiler is given: never pass silently', () => {
    expect(compileSchema(schema).validate({x: 'abc'})).toEqual([
      {reason: 'FieldValueInvalid', field: '', message: 'Invalid value: "object": compilation failed: meshvm has no compiled form of this rule'},
    ])
  })
  it('use the compiler given (the test API server passes the CEL library)', () => {
    const v = compileSchema(schema, {compileRule: compileCelRule})
    expect(v.validate({x: 'abc'})).toEqual([])
    expect(v.validate({x: 'a'})).toEqual([{reason: 'FieldValueInvalid', field: '', message: 'Invalid value: "object": x too short'}])
    expect(compileSchema({type: 'object', 'x-kubernetes-validations': [{rule: 'self.(('}]}, {compileRule: compileCelRule}).validate({})[0]!.message).toMatch(
      /^Invalid value: "object": compilation failed: /,
    )
  })
})
