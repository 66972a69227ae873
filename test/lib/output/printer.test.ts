import {describe, expect, it} from 'vitest'
import {parse} from 'yaml'
import {formatLabels, parseOutput, parseSortBy, Printer, type PrintOptions, type PrintSpec} from '../../../src/lib/output/printer.js'
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
    const names = (out: string): string[] => out.trim().split('\n').map((l) => l.split('/')[1]!)
    expect(names(print('name', {sortBy: parseSortBy('.spec.n')}))).toEqual(['a', 'b', 'c'])
    expect(names(print('name', {sortBy: parseSortBy('{.metadata.labels.app}')}))).toEqual(['a', 'c', 'b'])
  })

  it('an order (e.g. -A: namespace, then name) holds the rows until the list ends', () => {
    const order = (x: Obj, y: Obj): number => x.metadata.namespace.localeCompare(y.metadata.namespace) || x.metadata.name.localeCompare(y.metadata.name)
    expect(print('table', {}, {order}, [items.slice(0, 1), items.slice(1)])).toBe('NAME\nc\na\nb\n')
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
