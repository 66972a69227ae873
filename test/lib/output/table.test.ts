import {describe, expect, it} from 'vitest'
import {renderTable, TableWriter, type Column} from '../../../src/lib/output/table.js'
import {stripAnsi} from '../../../src/lib/errors.js'
import {displayWidth} from '../../../src/lib/output/width.js'
import {OracleTableWriter, oracleRenderTable} from './table-oracle.js'

type R = {n: string; s: string}
const cols: Column<R>[] = [
  {header: 'NAME', value: (r) => r.n},
  {header: 'STATUS', value: (r) => r.s},
]

describe('renderTable', () => {
  it('lays out like kubectl: upper-case headers given, gap 3, no trailing spaces', () => {
    const out = renderTable(
      [
        {n: 'a', s: 'Running'},
        {n: 'longer-name', s: ''},
      ],
      cols,
    )
    expect(out).toBe('NAME          STATUS\na             Running\nlonger-name\n')
  })

  it('prints the header alone for no rows, nothing with noHeaders', () => {
    expect(renderTable([], cols)).toBe('NAME   STATUS\n')
    expect(renderTable([], cols, {noHeaders: true})).toBe('')
  })

  it('aligns wide (CJK) characters, emoji and combining marks by their terminal width', () => {
    const out = renderTable(
      [
        {n: '名前', s: 'a'},
        {n: '😀x', s: 'b'},
        {n: 'e\u0301', s: 'c'},
        {n: '👩‍👩‍👧', s: 'd'},
        {n: 'abcd', s: 'e'},
      ],
      cols,
    )
    expect(out).toBe(['NAME   STATUS', '名前   a', '😀x    b', 'e\u0301      c', '👩‍👩‍👧     d', 'abcd   e', ''].join('\n'))
    // Every value of the second column starts at terminal column 7.
    for (const line of out.trimEnd().split('\n').slice(1)) expect(displayWidth(line.slice(0, -1))).toBe(7)
  })

  it('measures colour codes as nothing', () => {
    const out = renderTable([{n: 'a', s: 'x'}], [{header: 'NAME', value: (r: R) => r.n, color: (t) => `\u001b[32m${t}\u001b[39m`}, cols[1]!])
    expect(out).toBe('NAME   STATUS\n\u001b[32ma\u001b[39m      x\n')
  })

  it('shows control characters in cells as escapes (cells come from clusters)', () => {
    expect(renderTable([{n: 'evil\u001b]0;title\u0007', s: 'ok\r'}], cols)).toBe('NAME                 STATUS\nevil\\e]0;title\\x07   ok\\r\n')
  })

  it('renders 5,000 rows computing each cell once (work linear in the rows)', () => {
    const rows = Array.from({length: 5000}, (_, i) => ({n: `proxy-${i}.ns`, s: i % 7 ? 'SYNCED' : 'STALE'}))
    let cellsComputed = 0
    const count = <T>(v: T): T => {
      cellsComputed++
      return v
    }
    const out = renderTable(rows, [
      {header: 'NAME', value: (r) => count(r.n)},
      {header: 'CDS', value: (r) => count(r.s)},
    ])
    expect(cellsComputed).toBe(2 * 5000)
    expect(out.split('\n')).toHaveLength(5002)
    expect(out.split('\n')[5000]).toBe('proxy-4999.ns   SYNCED')
  })
})

describe('TableWriter (streaming pages)', () => {
  it('is byte-identical to renderTable when the list fits in the buffer', () => {
    const rows = [
      {n: 'a', s: 'x'},
      {n: '漢字漢字', s: 'yy'},
      {n: 'ccc', s: ''},
    ]
    let out = ''
    const t = new TableWriter(cols, {bufferRows: 10}, (s) => (out += s))
    t.add(rows.slice(0, 1))
    t.add(rows.slice(1))
    t.flush()
    expect(out).toBe(renderTable(rows, cols))
    expect(t.count).toBe(3)
  })

  it('prints after bufferRows rows, then each page at once, widening columns from there on', () => {
    const chunks: string[] = []
    const t = new TableWriter(cols, {bufferRows: 2}, (s) => chunks.push(s))
    t.add([{n: 'a', s: '1'}])
    expect(chunks).toEqual([])
    t.add([{n: 'b', s: '2'}])
    expect(chunks).toEqual(['NAME   STATUS\na      1\nb      2\n'])
    t.add([
      {n: 'much-longer', s: '3'},
      {n: 'c', s: '4'},
    ])
    expect(chunks[1]).toBe('much-longer   3\nc             4\n')
    t.flush()
    expect(chunks).toHaveLength(2)
  })

  it('prints nothing for an empty list', () => {
    let out = ''
    const t = new TableWriter(cols, {}, (s) => (out += s))
    t.flush()
    expect(out).toBe('')
  })
})

describe('TableWriter with wide and coloured columns', () => {
  interface R {
    name: string
    status: string
  }
  const cols: Column<R>[] = [
    {header: 'NAME', value: (r) => r.name},
    {header: 'STATUS', value: (r) => r.status, color: (t) => `\u001B[32m${t}\u001B[39m`},
    {header: 'EXTRA', wide: true, value: () => 'x'},
  ]
  const rows: R[] = [
    {name: 'a', status: 'True'},
    {name: 'a-much-longer-name', status: 'False'},
    {name: 'b', status: ''},
  ]
  const render = (pages: R[][], options: {wide?: boolean; noHeaders?: boolean; bufferRows?: number}): string => {
    let out = ''
    const t = new TableWriter(cols, options, (s) => (out += s))
    for (const p of pages) t.add(p)
    t.flush()
    return out
  }

  it.each([
    ['table', {}],
    ['wide', {wide: true}],
    ['no headers', {noHeaders: true}],
  ])('is byte-identical to renderTable for a list within the buffer (%s)', (_title, options) => {
    expect(render([rows.slice(0, 1), rows.slice(1)], {...options, bufferRows: 10})).toBe(renderTable(rows, cols, options))
  })

  it('prints the first buffer with its own widths, then widens columns for wider later rows', () => {
    const chunks: string[] = []
    const t = new TableWriter(cols, {bufferRows: 2}, (s) => chunks.push(s))
    t.add([{name: 'a', status: 'True'}])
    expect(chunks).toEqual([])
    t.add([{name: 'bb', status: 'True'}])
    expect(stripAnsi(chunks.join(''))).toBe('NAME   STATUS\na      True\nbb     True\n')
    t.add([
      {name: 'a-long-name', status: 'True'},
      {name: 'c', status: 'True'},
    ])
    expect(stripAnsi(chunks.join(''))).toBe('NAME   STATUS\na      True\nbb     True\na-long-name   True\nc             True\n')
    expect(t.count).toBe(4)
  })

  it('prints nothing for no rows', () => {
    expect(render([[], []], {bufferRows: 1})).toBe('')
  })
})

describe('the engine against the previous one (test/lib/output/table-oracle.ts)', () => {
  // Cells that exercise every path: ASCII, wide (CJK, emoji, ZWJ sequences), combining marks, control
  // characters (escaped), bidi overrides, empty cells, and cells ending in whitespace that trimEnd
  // removes at the end of a line (spaces, NBSP, ideographic space, BOM).
  const POOL = [
    '',
    'a',
    'web-vm-1',
    'app-aws-aws-123456789012-us-east-2b-ec2-i-10000007bbc',
    'True',
    'False',
    '<none>',
    '24s',
    '3d4h',
    '名前',
    '漢字漢字',
    '😀x',
    'e\u0301',
    '👩‍👩‍👧',
    'ｆｕｌｌ',
    'évian',
    'Ω',
    'evil\u001b]0;title\u0007',
    'ok\r',
    'a\nb',
    'tab\there',
    '\u0000\u007f\u009b',
    'a\u202eb',
    'x\u2028y',
    ' ',
    'trailing  ',
    'nbsp\u00a0',
    'ideo\u3000',
    'bom\ufeff',
    '\u00a0',
    'en\u2002',
    ' lead',
  ]
  const random =
    (seed: number): (() => number) =>
    () =>
      (seed = (seed * 1103515245 + 12345) % 2 ** 31) / 2 ** 31
  type Row = string[]
  const corpus = (seed: number, rows: number, width: number): Row[] => {
    const next = random(seed)
    return Array.from({length: rows}, () => Array.from({length: width}, () => POOL[Math.floor(next() * POOL.length)]!))
  }
  const columnsOf = (width: number, colours: boolean): Column<Row>[] =>
    Array.from({length: width}, (_, i) => ({
      header: ['NAME', 'STATUS', 'AGE', 'X', '名前', 'LONG HEADER'][i % 6]!,
      ...(i === 3 ? {wide: true} : {}),
      value: (r: Row) => r[i]!,
      // One column always coloured, one coloured for some values only, one whose colour changes nothing.
      ...(colours && i === 1 ? {color: (t: string) => `\u001b[32m${t}\u001b[39m`} : {}),
      ...(colours && i === 2 ? {color: (t: string, r: Row) => (r[0]!.length % 2 ? `\u001b[31m${t}\u001b[39m` : t)} : {}),
      ...(colours && i === 4 ? {color: (t: string) => t} : {}),
    }))

  it.each([
    [1, 1, false],
    [2, 2, false],
    [3, 3, true],
    [4, 5, true],
    [5, 6, false],
    [6, 6, true],
  ])('renderTable: byte-identical (seed %i, %i columns, colours %s)', (seed, width, colours) => {
    const rows = corpus(seed, 300, width)
    for (const options of [{}, {wide: true}, {noHeaders: true}, {gap: 5}, {gap: 2, wide: true, noHeaders: true}]) {
      expect(renderTable(rows, columnsOf(width, colours), options)).toBe(oracleRenderTable(rows, columnsOf(width, colours), options))
    }
    expect(renderTable([], columnsOf(width, colours))).toBe(oracleRenderTable([], columnsOf(width, colours)))
  })

  it.each([1, 2, 7, 50, 0])('streamed pages: byte-identical, write by write (bufferRows %i)', (bufferRows) => {
    const rows = corpus(bufferRows + 11, 240, 5)
    const pages: Row[][] = []
    for (let i = 0, size = 1; i < rows.length; i += size, size = (size * 3) % 17 || 1) pages.push(rows.slice(i, i + size))
    pages.splice(3, 0, [])
    for (const options of [{bufferRows}, {bufferRows, wide: true, noHeaders: true}]) {
      const mine: string[] = []
      const theirs: string[] = []
      const a = new TableWriter(columnsOf(5, true), options, (t) => mine.push(t))
      const b = new OracleTableWriter(columnsOf(5, true), options, (t) => theirs.push(t))
      for (const page of pages) {
        a.add(page)
        b.add(page)
      }
      a.flush()
      b.flush()
      expect(mine).toEqual(theirs)
      expect(a.count).toBe(b.count)
    }
  })

  it('rows rendered first and added later print as rows added at once', () => {
    const rows = corpus(99, 50, 4)
    let later = ''
    const t = new TableWriter(columnsOf(4, true), {}, (s) => (later += s))
    const rendered = rows.map((r) => t.render(r))
    t.addRendered(rendered.slice(0, 20))
    t.addRendered(rendered.slice(20))
    t.flush({header: true})
    expect(later).toBe(oracleRenderTable(rows, columnsOf(4, true)))
  })
})
