/**
 * Golden cases ported from client-go's util/jsonpath/jsonpath_test.go (kubernetes/kubernetes,
 * staging/src/k8s.io/client-go/util/jsonpath, Apache-2.0): same templates, same inputs (Go structs as
 * the JSON objects they marshal to), same expected text.
 */
import {describe, expect, it} from 'vitest'
import {execute, executeAsJson, parseRelaxed, parseTemplate} from '../../../src/lib/output/jsonpath.js'

type Case = [name: string, template: string, input: unknown, expect: string | Error]

function run(cases: Case[], allowMissingKeys: boolean): void {
  for (const [name, template, input, expected] of cases) {
    it(`${name}: ${template}`, () => {
      const go = (): string => execute(parseTemplate(template), input, {allowMissingKeys})
      if (expected instanceof Error) expect(go).toThrow(expected.message === '' ? undefined : expected.message)
      else expect(go()).toBe(expected)
    })
  }
}
const fails = (message = ''): Error => new Error(message)

const types = {
  bools: [true, false, true, false],
  integers: [1, 2, 3, 4],
  floats: [1.0, 2.2, 3.3, 4.0],
  strings: ['one', 'two', 'three', 'four'],
  interfaces: [true, 'one', 1, 1.1],
  maps: [
    {name: 'one', value: 1},
    {name: 'two', value: 2.02},
    {name: 'three', value: 3.03},
    {name: 'four', value: 4.04},
  ],
  structs: [
    {name: 'one', value: 1, type: 'integer'},
    {name: 'two', value: 2.002, type: 'float'},
    {name: 'three', value: 3, type: 'integer'},
    {name: 'four', value: 4.004, type: 'float'},
  ],
}

describe('TestTypesInput', () => {
  run(
    [
      ['boolSlice', '{ .bools }', types, '[true,false,true,false]'],
      ['boolSliceIndex', '{ .bools[0] }', types, 'true'],
      ['boolSliceIndex', '{ .bools[-1] }', types, 'false'],
      ['boolSubSlice', '{ .bools[0:2] }', types, 'true false'],
      ['boolSubSliceFirst2', '{ .bools[:2] }', types, 'true false'],
      ['boolSubSliceStep2', '{ .bools[:4:2] }', types, 'true true'],
      ['integerSlice', '{ .integers }', types, '[1,2,3,4]'],
      ['integerSliceIndexReverse', '{ .integers[-2] }', types, '3'],
      ['integerSubSliceStep2', '{ .integers[:4:2] }', types, '1 3'],
      ['floatSlice', '{ .floats }', types, '[1,2.2,3.3,4]'],
      ['floatSliceIndexReverse', '{ .floats[-2] }', types, '3.3'],
      ['floatSubSliceFirst2', '{ .floats[0:2] }', types, '1 2.2'],
      ['stringSlice', '{ .strings }', types, '["one","two","three","four"]'],
      ['stringSubSliceStep2', '{ .strings[:4:2] }', types, 'one three'],
      ['interfaceSlice', '{ .interfaces }', types, '[true,"one",1,1.1]'],
      ['interfaceSubSliceStep2', '{ .interfaces[:4:2] }', types, 'true 1'],
      ['mapSlice', '{ .maps }', types, '[{"name":"one","value":1},{"name":"two","value":2.02},{"name":"three","value":3.03},{"name":"four","value":4.04}]'],
      ['mapSliceIndex', '{ .maps[0] }', types, '{"name":"one","value":1}'],
      ['mapSubSliceFirst2', '{ .maps[0:2] }', types, '{"name":"one","value":1} {"name":"two","value":2.02}'],
      ['mapSubSliceStepOdd', '{ .maps[::2] }', types, '{"name":"one","value":1} {"name":"three","value":3.03}'],
      ['mapSubSliceStepEven', '{ .maps[1::2] }', types, '{"name":"two","value":2.02} {"name":"four","value":4.04}'],
      // Go marshals its test structs in field order; here every object is a map, as kubectl's objects are, and Go writes map keys sorted.
      ['structSliceIndexReverse', '{ .structs[-2] }', types, '{"name":"three","type":"integer","value":3}'],
    ],
    false,
  )
})

const storeData = {
  Book: [
    {Category: 'reference', Author: 'Nigel Rees', Title: 'Sayings of the Centurey', Price: 8.95},
    {Category: 'fiction', Author: 'Evelyn Waugh', Title: 'Sword of Honour', Price: 12.99},
    {Category: 'fiction', Author: 'Herman Melville', Title: 'Moby Dick', Price: 8.99},
  ],
  Bicycle: [
    {Color: 'red', Price: 19.95, IsNew: true},
    {Color: 'green', Price: 20.01, IsNew: false},
  ],
  Name: 'jsonpath',
  Labels: {engieer: 10, 'web/html': 15, 'k8s-app': 20},
  Employees: {jason: 'manager', dan: 'clerk'},
}

describe('TestStructInput', () => {
  run(
    [
      ['plain', 'hello jsonpath', null, 'hello jsonpath'],
      ['recursive', '{..}', [1, 2, 3], '[1,2,3]'],
      ['filter', '{[?(@<5)]}', [2, 6, 3, 7], '2 3'],
      ['quote', '{"{"}', null, '{'],
      ['union', '{[1,3,4]}', [0, 1, 2, 3, 4], '1 3 4'],
      ['array', '{[0:2]}', ['Monday', 'Tudesday'], 'Monday Tudesday'],
      ['variable', 'hello {.Name}', storeData, 'hello jsonpath'],
      ['dict/', '{$.Labels.web/html}', storeData, '15'],
      ['dict/', '{$.Employees.jason}', storeData, 'manager'],
      ['dict-', '{.Labels.k8s-app}', storeData, '20'],
      ['nest', '{.Bicycle[*].Color}', storeData, 'red green'],
      ['allarray', '{.Book[*].Author}', storeData, 'Nigel Rees Evelyn Waugh Herman Melville'],
      ['allfields', '{range .Bicycle[*]}{ "{" }{ @.* }{ "} " }{end}', storeData, '{red 19.95 true} {green 20.01 false} '],
      ['recurfields', '{..Price}', storeData, '8.95 12.99 8.99 19.95 20.01'],
      ['recurdotfields', '{...Price}', storeData, '8.95 12.99 8.99 19.95 20.01'],
      ['superrecurfields', '{............................................................Price}', storeData, fails()],
      // (struct field order in Go's cases; sorted map keys here, as for kubectl's objects)
      ['allstructsSlice', '{.Bicycle}', storeData, '[{"Color":"red","IsNew":true,"Price":19.95},{"Color":"green","IsNew":false,"Price":20.01}]'],
      ['allstructs', '{range .Bicycle[*]}{ @ }{ " " }{end}', storeData, '{"Color":"red","IsNew":true,"Price":19.95} {"Color":"green","IsNew":false,"Price":20.01} '],
      ['lastarray', '{.Book[-1:]}', storeData, '{"Author":"Herman Melville","Category":"fiction","Price":8.99,"Title":"Moby Dick"}'],
      ['recurarray', '{..Book[2]}', storeData, '{"Author":"Herman Melville","Category":"fiction","Price":8.99,"Title":"Moby Dick"}'],
      ['bool', '{.Bicycle[?(@.IsNew==true)]}', storeData, '{"Color":"red","IsNew":true,"Price":19.95}'],
    ],
    false,
  )
  run(
    [
      ['nonexistent field', '{.hello}', storeData, ''],
      ['nonexistent field 2', 'before-{.hello}after', storeData, 'before-after'],
    ],
    true,
  )
  run(
    [
      ['invalid identifier', '{hello}', storeData, fails('unrecognized identifier hello')],
      ['nonexistent field', '{.hello}', storeData, fails('hello is not found')],
      ['invalid array', '{.Labels[0]}', storeData, fails('map[string]interface {} is not array or slice')],
      ['invalid filter operator', '{.Book[?(@.Price<>10)]}', storeData, fails('unrecognized filter operator <>')],
      ['redundant end', '{range .Labels.*}{@}{end}{end}', storeData, fails('not in range, nothing to end')],
    ],
    false,
  )
})

const points = [
  {id: 'i1', x: 4, y: -5},
  {id: 'i2', x: -2, y: -5, z: 1},
  {id: 'i3', x: 8, y: 3},
  {id: 'i4', x: -6, y: -1},
  {id: 'i5', x: 0, y: 2, z: 1},
  {id: 'i6', x: 1, y: 4},
]
describe('TestJSONInput', () => {
  run(
    [
      ['exists filter', '{[?(@.z)].id}', points, 'i2 i5'],
      ['bracket key', "{[0]['id']}", points, 'i1'],
    ],
    false,
  )
})

const nodes = {
  kind: 'List',
  items: [
    {
      kind: 'None',
      metadata: {name: '127.0.0.1', labels: {'kubernetes.io/hostname': '127.0.0.1'}},
      status: {capacity: {cpu: '4'}, ready: true, addresses: [{type: 'LegacyHostIP', address: '127.0.0.1'}]},
    },
    {
      kind: 'None',
      metadata: {name: '127.0.0.2', labels: {'kubernetes.io/hostname': '127.0.0.2'}},
      status: {
        capacity: {cpu: '8'},
        ready: false,
        addresses: [
          {type: 'LegacyHostIP', address: '127.0.0.2'},
          {type: 'another', address: '127.0.0.3'},
        ],
      },
    },
  ],
  users: [
    {name: 'myself', user: {}},
    {name: 'e2e', user: {username: 'admin', password: 'secret'}},
  ],
}
describe('TestKubernetes', () => {
  run(
    [
      ['range item', '{range .items[*]}{.metadata.name}, {end}{.kind}', nodes, '127.0.0.1, 127.0.0.2, List'],
      ['range item with quote', '{range .items[*]}{.metadata.name}{"\\t"}{end}', nodes, '127.0.0.1\t127.0.0.2\t'],
      ['range addresss', '{.items[*].status.addresses[*].address}', nodes, '127.0.0.1 127.0.0.2 127.0.0.3'],
      ['double range', '{range .items[*]}{range .status.addresses[*]}{.address}, {end}{end}', nodes, '127.0.0.1, 127.0.0.2, 127.0.0.3, '],
      ['item name', '{.items[*].metadata.name}', nodes, '127.0.0.1 127.0.0.2'],
      ['union nodes capacity', "{.items[*]['metadata.name', 'status.capacity']}", nodes, '127.0.0.1 127.0.0.2 {"cpu":"4"} {"cpu":"8"}'],
      ['range nodes capacity', '{range .items[*]}[{.metadata.name}, {.status.capacity}] {end}', nodes, '[127.0.0.1, {"cpu":"4"}] [127.0.0.2, {"cpu":"8"}] '],
      ['user password', '{.users[?(@.name=="e2e")].user.password}', nodes, 'secret'],
      ['hostname', '{.items[0].metadata.labels.kubernetes\\.io/hostname}', nodes, '127.0.0.1'],
      ['hostname filter', '{.items[?(@.metadata.labels.kubernetes\\.io/hostname=="127.0.0.1")].kind}', nodes, 'None'],
      ['bool item', '{.items[?(@..ready==true)].metadata.name}', nodes, '127.0.0.1'],
      ['recursive name', '{..name}', nodes, '127.0.0.1 127.0.0.2 myself e2e'],
    ],
    false,
  )
  run(
    [
      ['empty range', '{range .items[*]}{.metadata.name}{end}', {items: []}, ''],
      ['empty nested range', '{range .items[*]}{.metadata.name}{":"}{range @.spec.containers[*]}{.name}{","}{end}{"+"}{end}', {items: []}, ''],
    ],
    true,
  )
})

const pods = {
  items: [
    {
      metadata: {name: 'pod1'},
      spec: {
        containers: [
          {name: 'foo', another: [{name: 'value1'}, {name: 'value2'}]},
          {name: 'bar', another: [{name: 'value1'}, {name: 'value2'}]},
        ],
      },
    },
    {metadata: {name: 'pod2'}, spec: {containers: [{name: 'baz', another: [{name: 'value1'}, {name: 'value2'}]}]}},
  ],
}
describe('TestNestedRanges', () => {
  run(
    [
      ['nested range', '{range .items[*]}{.metadata.name}{":"}{range @.spec.containers[*]}{.name}{","}{end}{"+"}{end}', pods, 'pod1:foo,bar,+pod2:baz,+'],
      [
        'nested range within nested range',
        '{range .items[*]}{.metadata.name}{"~"}{range @.spec.containers[*]}{.name}{":"}{range @.another[*]}{.name}{","}{end}{"+"}{end}{"#"}{end}',
        pods,
        'pod1~foo:value1,value2,+bar:value1,value2,+#pod2~baz:value1,value2,+#',
      ],
      [
        'two nested ranges at the same level',
        '{range .items[*]}{.metadata.name}{"\\t"}{range @.spec.containers[*]}{.name}{" "}{end}{"\\t"}{range @.spec.containers[*]}{.name}{" "}{end}{"\\n"}{end}',
        pods,
        'pod1\tfoo bar \tfoo bar \npod2\tbaz \tbaz \n',
      ],
    ],
    false,
  )
})

const annotated = {
  kind: 'List',
  items: [
    {kind: 'Pod', metadata: {name: 'pod1', annotations: {color: 'blue'}}},
    {kind: 'Pod', metadata: {name: 'pod2'}},
    {kind: 'Pod', metadata: {name: 'pod3', annotations: {color: 'green'}}},
    {kind: 'Pod', metadata: {name: 'pod4', annotations: {color: 'blue'}}},
  ],
}
describe('TestFilterPartialMatchesSometimesMissingAnnotations', () => {
  run([['tolerate missing items', '{.items[?(@.metadata.annotations.color=="blue")].metadata.name}', annotated, 'pod1 pod4']], true)
  run([['error on missing items', '{.items[?(@.metadata.annotations.color=="blue")].metadata.name}', annotated, fails('annotations is not found')]], false)
})

const containers = (n: number): unknown => ({apiVersion: 'v1', kind: 'Pod', spec: {containers: Array.from({length: n}, (_, i) => ({image: 'radial/busyboxplus:curl', name: `fake${i}`}))}})
describe('TestNegativeIndex and TestStep', () => {
  const four = containers(4)
  const six = containers(6)
  run(
    [
      ['[0]', '{.spec.containers[0].name}', four, 'fake0'],
      ['[0:0]', '{.spec.containers[0:0].name}', four, ''],
      ['[0:-1]', '{.spec.containers[0:-1].name}', four, 'fake0 fake1 fake2'],
      ['[-1:0]', '{.spec.containers[-1:0].name}', four, fails()],
      ['[-1]', '{.spec.containers[-1].name}', four, 'fake3'],
      ['[-1:]', '{.spec.containers[-1:].name}', four, 'fake3'],
      ['[-2]', '{.spec.containers[-2].name}', four, 'fake2'],
      ['[-2:]', '{.spec.containers[-2:].name}', four, 'fake2 fake3'],
      ['[-3]', '{.spec.containers[-3].name}', four, 'fake1'],
      ['[-4]', '{.spec.containers[-4].name}', four, 'fake0'],
      ['[-4:]', '{.spec.containers[-4:].name}', four, 'fake0 fake1 fake2 fake3'],
      ['[-5]', '{.spec.containers[-5].name}', four, fails()],
      ['[5:5]', '{.spec.containers[5:5].name}', four, ''],
      ['[-5:-5]', '{.spec.containers[-5:-5].name}', four, ''],
      ['[3:1]', '{.spec.containers[3:1].name}', four, fails()],
      ['[-1:-2]', '{.spec.containers[-1:-2].name}', four, fails()],
      ['[0:]', '{.spec.containers[0:].name}', six, 'fake0 fake1 fake2 fake3 fake4 fake5'],
      ['[0:6:]', '{.spec.containers[0:6:].name}', six, 'fake0 fake1 fake2 fake3 fake4 fake5'],
      ['[0:6:0]', '{.spec.containers[0:6:0].name}', six, fails()],
      ['[0:6:-1]', '{.spec.containers[0:6:-1].name}', six, fails()],
      ['[1:4:2]', '{.spec.containers[1:4:2].name}', six, 'fake1 fake3'],
      ['[1:4:4]', '{.spec.containers[1:4:4].name}', six, 'fake1'],
      ['[0:6:5]', '{.spec.containers[0:6:5].name}', six, 'fake0 fake5'],
    ],
    false,
  )
})

describe('TestRunningPodsJSONPathOutput', () => {
  const data = {kind: 'List', items: ['pod1', 'pod2', 'pod3'].map((name) => ({kind: 'Pod', metadata: {name}, status: {phase: 'Running'}})).concat([{resourceVersion: '', selfLink: ''} as never])}
  run(
    [
      [
        'range over pods without selecting the last one',
        '{range .items[?(.status.phase=="Running")]}{.metadata.name}{" is Running\\n"}{end}',
        data,
        'pod1 is Running\npod2 is Running\npod3 is Running\n',
      ],
    ],
    true,
  )
})

describe('parse errors and kubectl forms', () => {
  it.each([
    ['{.a', 'unclosed action'],
    ['{.a[0}', 'unterminated array'],
    ['{.a[?(@.b=="x"}', 'unterminated filter'],
    ['{"abc}', 'unterminated quoted string'],
    ['{"a\\"}', 'unterminated quoted string'],
    ['{"a\nb"}', 'unterminated quoted string'],
    ['{.a[0\n]}', 'unterminated array'],
    ['{1.2.3}', 'cannot parse number 1.2.3'],
    ['{.a[-]}', 'array index - is not a number'],
    ['{.a[0:-]}', 'array index - is not a number'],
    ['{.a[x]}', 'invalid array index x'],
    ['{#}', 'unrecognized character in action'],
  ])('%s: %s', (template, message) => {
    expect(() => parseTemplate(template)).toThrow(message)
  })

  it('scans quotes, escaped field names, numbers and identifiers as client-go does', () => {
    expect(execute(parseTemplate('{"a\\"b"}{\'it\\\'s\'}'), {})).toBe('a"bit\'s')
    expect(execute(parseTemplate('{.a\\.b}{.c[-1:]}{.d}'), {'a.b': 1, c: [1, 2, 3], d: true})).toBe('13true')
    expect(execute(parseTemplate('{range .x[*]}{@}{end}{true}{-2}'), {x: [1, 2]})).toBe('12true-2')
    expect(execute(parseTemplate('{.c[1]}{.c[:2]}{.c[::2]}{.c[-2:]}{.c[]}'), {c: [1, 2, 3]})).toBe('21 21 32 31')
  })

  it('maps print as Go marshals them: sorted keys, HTML characters escaped', () => {
    expect(execute(parseTemplate('{.a}'), {a: {z: 1, b: '<&>'}})).toBe('{"b":"\\u003c\\u0026\\u003e","z":1}')
  })

  it("maps with array-index keys keep Go's byte order of keys, not JavaScript's numeric-first order", () => {
    const data = {a: {b: 3, '9': {'10': true, x: []}, '10': [{'2': null, '1': 'v'}]}}
    expect(execute(parseTemplate('{.a}'), data)).toBe('{"10":[{"1":"v","2":null}],"9":{"10":true,"x":[]},"b":3}')
    expect(executeAsJson(parseTemplate('{.a}'), data)).toBe(
      '[\n    {\n        "10": [\n            {\n                "1": "v",\n                "2": null\n            }\n        ],\n        "9": {\n            "10": true,\n            "x": []\n        },\n        "b": 3\n    }\n]\n',
    )
    // without such keys the layout is JSON.stringify's, and the two writers agree
    const plain = {a: {z: [1, {}], b: {c: 'd'}, e: []}}
    expect(executeAsJson(parseTemplate('{.a}'), plain)).toBe(`${JSON.stringify([{b: {c: 'd'}, e: [], z: [1, {}]}], null, '    ')}\n`)
  })

  it('jsonpath-as-json prints each result group as an indented JSON array', () => {
    expect(executeAsJson(parseTemplate('{.items[*].metadata.name}'), nodes)).toBe('[\n    "127.0.0.1",\n    "127.0.0.2"\n]\n')
  })

  it('relaxed paths (custom-columns, --sort-by) accept .a.b, a.b and {.a.b}', () => {
    for (const p of ['.metadata.name', 'metadata.name', '{.metadata.name}']) expect(execute(parseRelaxed(p), nodes.items[0])).toBe('127.0.0.1')
    expect(() => parseRelaxed('')).toThrow('unexpected path string')
  })
})
