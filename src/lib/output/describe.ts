/**
 * kubectl's describe layout: `Key:` padded so values line up within each run of sibling fields,
 * nested sections indented by two spaces, small tables (conditions, events) with dashed underlines
 * drawn by the one table engine. Every line passes through terminalSafe: values come from clusters.
 */
import {renderTable} from './table.js'
import {terminalSafe} from './terminal.js'
import {displayWidth, padEnd} from './width.js'

type Item = {kind: 'field'; level: number; key: string; values: string[]} | {kind: 'raw'; level: number; text: string}

export class Describer {
  private readonly items: Item[] = []

  field(level: number, key: string, values: string | string[] | undefined): void {
    const list = Array.isArray(values) ? values : [values ?? '<none>']
    this.items.push({kind: 'field', level, key, values: list.length === 0 ? ['<none>'] : list})
  }

  section(level: number, key: string, value?: string): void {
    if (value === undefined) this.items.push({kind: 'raw', level, text: `${key}:`})
    else this.field(level, key, value)
  }

  raw(level: number, text: string): void {
    this.items.push({kind: 'raw', level, text})
  }

  /** A table under a header and a dashed underline (kubectl's Conditions and Events), columns two spaces apart. */
  table(level: number, header: string[], rows: string[][], underline = header.map((h) => '-'.repeat(h.length))): void {
    const columns = header.map((h, i) => ({header: h, value: (r: string[]) => r[i] ?? ''}))
    const text = renderTable([underline, ...rows], columns, {gap: 2})
    for (const line of text.replace(/\n$/, '').split('\n')) this.raw(level, line)
  }

  toString(): string {
    const out: string[] = []
    let i = 0
    while (i < this.items.length) {
      const item = this.items[i]!
      if (item.kind === 'raw') {
        out.push('  '.repeat(item.level) + item.text)
        i++
        continue
      }
      // A run of sibling fields shares one value column.
      let j = i
      while (j < this.items.length && this.items[j]!.kind === 'field' && this.items[j]!.level === item.level) j++
      const run = this.items.slice(i, j) as Extract<Item, {kind: 'field'}>[]
      const keys = run.map((f) => terminalSafe(`${f.key}:`))
      const width = Math.max(...keys.map(displayWidth)) + 2
      const indent = '  '.repeat(item.level)
      for (const [r, f] of run.entries()) {
        for (const [k, v] of f.values.entries()) out.push(indent + (k === 0 ? padEnd(keys[r]!, width) : ' '.repeat(width)) + terminalSafe(v))
      }
      i = j
    }
    return out.map((l) => terminalSafe(l).trimEnd()).join('\n') + '\n'
  }
}
