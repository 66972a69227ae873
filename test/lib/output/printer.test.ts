import {describe, expect, it} from 'vitest'
import {parse} from 'yaml'
import {byNamespaceThenName, formatLabels, parseOutput, parseSortBy, Printer, type PrintOptions, type PrintSpec} from '../../../src/lib/output/printer.js'
import {asList, renderData} from '../../../src/lib/output/render.js'

type Obj = {apiVersion: string; kind: string; metadata: {name: string; namespace: string; labels?: Record<string, string>; creationTimestamp?: string}; spec?: {n?: number}}
const obj = (name: string, namespace: string, labels?: Record<string, string>, n?: number): Obj => ({
  apiVersion: 'networking.istio.io/v1',
  kind: 'WorkloadEntry',
  metadata: {name, namespace, ...(labels ? {labels} : {})},
  ...(n === undefined ? {} : {spec: {n}}),
})
const items = [obj('b', 'ns2', {app: 'web', tier: 'x'}, 10), obj('a', 'ns2', undefined, 9), obj('c', 'ns1', {app: 'db'}, 100)]
const spec: PrintSpec<Obj> = {columns: [{header: 'NAME', value: (o) => o.metadata.name}], object: (o) => o}
const print = (output: string, options: Partial<PrintOptions> = {}, s: Partial<PrintSpec<Obj>> = {}, pages: Obj[][] = [items]): string => {
  let out = ''
  const p = new Printer<Obj>({...spec, ...s}, {output: parseOutput(output), ...options}, (t) => (out += t))
  for (const page of pages) p.add(page)
  p.finish()
  return out
}

describe('Printer', () => {
  it('json and yaml stream exactly renderData(asList(items)), page by page', () => {
    expect(print('json', {}, {}, [items.slice(0, 1), items.slice(1)])).toBe(renderData(asList(items), 'json'))
    expect(print('yaml', {}, {}, [items.slice(0, 2), [], items.slice(2)])).toBe(renderData(asList(items), 'yaml'))
  })

  it('name prints kind.group/name', () => {
    expect(print('name')).toBe('workloadentry.networking.istio.io/b\nworkloadentry.networking.istio.io/a\nworkloadentry.networking.istio.io/c\n')
  })

  it('--sort-by orders numbers by value and strings by text, missing first', () => {
    const names = (out: string): string[] =>
      out
        .trim()
        .split('\n')
        .map((l) => l.split('/')[1]!)
    expect(names(print('name', {sortBy: parseSortBy('.spec.n')}))).toEqual(['a', 'b', 'c'])
    expect(names(print('name', {sortBy: parseSortBy('{.metadata.labels.app}')}))).toEqual(['a', 'c', 'b'])
  })

  it('an order (e.g. -A: namespace, then name) holds the rows until the list ends', () => {
    const order = (x: Obj, y: Obj): number => x.metadata.namespace.localeCompare(y.metadata.namespace) || x.metadata.name.localeCompare(y.metadata.name)
    expect(print('table', {}, {order}, [items.slice(0, 1), items.slice(1)])).toBe('NAME\nc\na\nb\n')
  })

  it('byNamespaceThenName: a table holds each row rendered with its key, and prints what holding the rows prints', () => {
    const many = Array.from({length: 60}, (_, i) => obj(`n${(i * 37) % 23}`, `ns${(i * 11) % 7}${i % 3 ? '' : '-x'}`, {app: `a${i % 4}`}, i))
    const pages = [many.slice(0, 1), many.slice(1, 2), [], many.slice(2, 40), many.slice(40)]
    let computed = 0
    const counted = (cell: string): string => {
      computed++
      return cell
    }
    const columns = [
      {header: 'NAMESPACE', value: (o: Obj) => counted(o.metadata.namespace)},
      {header: 'NAME', value: (o: Obj) => counted(o.metadata.name), color: (t: string) => `<${t}>`},
    ]
    const keyed = byNamespaceThenName((o: Obj) => o.metadata)
    const plain = (a: Obj, b: Obj): number => keyed(a, b)
    for (const options of [{}, {bufferRows: 5}, {showLabels: true, noHeaders: true}, {output: parseOutput('wide')}] as Partial<PrintOptions>[]) {
      const held = print('table', options, {columns, order: plain}, pages)
      computed = 0
      expect(print('table', options, {columns, order: keyed}, pages)).toBe(held)
      expect(computed).toBe(2 * many.length)
    }
    // Namespace, then name, by code unit (ns1 before ns1-x), equal keys in the order they came.
    const lines = print('table', {noHeaders: true}, {columns, order: keyed}, pages)
      .trimEnd()
      .split('\n')
      .map((l) => l.split(/\s+/).slice(0, 2).join('/'))
    const expected = many
      .map((o) => `${o.metadata.namespace}/<${o.metadata.name}>`)
      .map((k, i) => ({k, i, o: many[i]!}))
      .sort((a, b) => keyed(a.o, b.o) || a.i - b.i)
      .map((x) => x.k)
    expect(lines).toEqual(expected)
    expect(lines.indexOf('ns1/<n11>')).toBeLessThan(lines.findIndex((l) => l.startsWith('ns1-x/')))
  })

  it('--sort-by on a table: held as rendered rows, missing values first, equal values in the order they came', () => {
    const withN = [obj('b', 'x', undefined, 2), obj('a', 'x'), obj('c', 'x', undefined, 1), obj('d', 'x', undefined, 2), obj('e', 'x')]
    expect(print('table', {sortBy: parseSortBy('.spec.n'), noHeaders: true}, {}, [withN.slice(0, 2), withN.slice(2)])).toBe('a\ne\nc\nb\nd\n')
  })

  it('--show-labels and -L add columns; --no-headers drops the header', () => {
    expect(print('table', {showLabels: true, labelColumns: ['app', 'example.com/tier']})).toBe(
      ['NAME   APP   TIER   LABELS', 'b      web          app=web,tier=x', 'a                   <none>', 'c      db           app=db', ''].join('\n'),
    )
    expect(print('table', {noHeaders: true})).toBe('b\na\nc\n')
  })

  it('custom-columns: one row per object, <none> for missing values, several results comma separated', () => {
    expect(print('custom-columns=NAME:.metadata.name,APP:.metadata.labels.app,ALL:.metadata.labels.*')).toBe(
      ['NAME   APP      ALL', 'b      web      web,x', 'a      <none>   <none>', 'c      db       db', ''].join('\n'),
    )
  })

  it('jsonpath over the List; jsonpath-as-json; a document of its own for json/yaml/jsonpath', () => {
    expect(print('jsonpath={.items[*].metadata.name}')).toBe('b a c')
    expect(JSON.parse(print('jsonpath-as-json={.items[*].spec.n}'))).toEqual([10, 9, 100])
    const document = (objects: unknown[]): unknown => ({checks: objects, failed: 0})
    expect(parse(print('yaml', {}, {document}))).toEqual({checks: items, failed: 0})
    expect(print('jsonpath={.failed}', {}, {document})).toBe('0')
  })

  it('--watch: after the list, each object is its own document', () => {
    let out = ''
    const p = new Printer<Obj>(spec, {output: parseOutput('json'), watch: true}, (t) => (out += t))
    p.add(items.slice(0, 1))
    p.finish()
    const list = out
    p.add(items.slice(1, 2))
    expect(out.slice(list.length)).toBe(JSON.stringify(items[1], null, 2) + '\n')
  })

  it('shows control characters from the cluster as escapes in text formats, never in json', () => {
    const evil = [obj('x', 'ns', {app: 'a\u001b[2Jb'})]
    expect(print('jsonpath={.items[0].metadata.labels.app}', {}, {}, [evil])).toBe('a\\e[2Jb')
    expect(print('custom-columns=APP:.metadata.labels.app', {}, {}, [evil])).toBe('APP\na\\e[2Jb\n')
    expect(JSON.parse(print('json', {}, {}, [evil])).items[0].metadata.labels.app).toBe('a\u001b[2Jb')
  })
})

describe('parseOutput', () => {
  it.each([
    ['tabel', '-o/--output "tabel": expected one of table, wide, json, yaml, name, jsonpath=TEMPLATE, jsonpath-as-json=TEMPLATE, custom-columns=HEADER:PATH,…'],
    ['go-template={{.kind}}', 'go-template is not supported'],
    ['jsonpath=', 'template format specified but no template given'],
    ['json=x', '-o/--output "json=x": json takes no argument'],
    ['custom-columns=A:.a,B', 'unexpected custom-columns spec "B"'],
  ])('%s', (value, message) => {
    expect(() => parseOutput(value)).toThrow(message)
  })

  it('limits the formats to those a command prints', () => {
    expect(() => parseOutput('name', ['json', 'yaml'])).toThrow('-o/--output "name": expected one of json, yaml')
  })
})

describe('formatLabels', () => {
  it('is kubectl labels.FormatLabels: sorted k=v, or <none>', () => {
    expect(formatLabels({b: '2', a: '1'})).toBe('a=1,b=2')
    expect(formatLabels({})).toBe('<none>')
  })
})

describe('--sort-by is refused as kubectl refuses it (issue 27)', () => {
  it.each([
    ['{.metadata.name', `--sort-by "{.metadata.name": unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'`],
    ['.metadata.name}', `--sort-by ".metadata.name}": unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'`],
    ['{.metadata.name}}', `--sort-by "{.metadata.name}}": unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'`],
    ['.a[', '--sort-by ".a[": unterminated array'],
  ])('malformed %s: a usage error before anything is read', (value, message) => {
    expect(() => parseSortBy(value)).toThrow(message)
  })

  it.each(['nope', '.metadata.name', 'metadata.name', '{.metadata.name}', '{metadata.name}'])('%s parses (kubectl relaxed form)', (value) => {
    expect(() => parseSortBy(value)).not.toThrow()
  })

  it('a field no object has is an error, whatever the format; an empty list or a field some objects have is not', () => {
    const message = `--sort-by: couldn't find any field with path "{.nope}" in the list of objects`
    for (const format of ['table', 'name', 'json']) {
      expect(() => print(format, {sortBy: parseSortBy('nope')})).toThrow(message)
      expect(print(format, {sortBy: parseSortBy('nope')}, {}, [])).toBe(format === 'json' ? renderData(asList([]), 'json') : '')
    }
    expect(print('name', {sortBy: parseSortBy('.metadata.labels.tier')})).toContain('/b')
  })
})
