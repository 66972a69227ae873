/**
 * The table engine as it was before its speed rewrite (commit 817da10, src/lib/output/table.ts), kept
 * only as an oracle: test/lib/output/table.test.ts checks the engine prints byte-identical text on a
 * corpus of rows (ASCII, wide characters, emoji, combining marks, control characters, colours, empty
 * and space-ended cells, streamed pages).
 */
import {terminalSafe} from '../../../src/lib/output/terminal.js'
import {displayWidth} from '../../../src/lib/output/width.js'

import type {Column, TableOptions} from '../../../src/lib/output/table.js'

export type {Column, TableOptions}

interface Cells {
  plain: string[]
  shown: string[]
}

export class OracleTableWriter<Row> {
  private readonly columns: Column<Row>[]
  private widths: number[] | undefined
  private buffer: Cells[] = []
  private rows = 0
  private readonly gap: string
  private readonly noHeaders: boolean
  private readonly bufferRows: number

  constructor(
    columns: Column<Row>[],
    options: TableOptions,
    private readonly write: (text: string) => void,
  ) {
    this.columns = columns.filter((c) => options.wide || !c.wide)
    this.gap = ' '.repeat(options.gap ?? 3)
    this.noHeaders = Boolean(options.noHeaders)
    this.bufferRows = options.bufferRows === undefined || options.bufferRows <= 0 ? Number.POSITIVE_INFINITY : options.bufferRows
  }

  /** Rows added so far. */
  get count(): number {
    return this.rows
  }

  /** Adds rows; they are rendered now and may be dropped by the caller. */
  add(page: Iterable<Row>): void {
    const cells: Cells[] = []
    for (const row of page) {
      const plain = this.columns.map((c) => terminalSafe(c.value(row)))
      cells.push({plain, shown: this.columns.map((c, i) => (c.color ? c.color(plain[i]!, row) : plain[i]!))})
    }
    this.rows += cells.length
    if (this.widths === undefined) {
      this.buffer.push(...cells)
      if (this.buffer.length >= this.bufferRows) this.flush()
      return
    }
    this.print(cells)
  }

  /** Prints what is buffered (with `header`, the header even when there are no rows); later rows are printed as they are added. */
  flush(options: {header?: boolean} = {}): void {
    if (this.widths !== undefined || (this.buffer.length === 0 && !(options.header && !this.noHeaders))) return
    this.widths = this.columns.map((c) => (this.noHeaders ? 1 : Math.max(1, displayWidth(c.header))))
    const cells = this.buffer
    this.buffer = []
    const widths = this.grow(cells)
    const headers = this.columns.map((c) => c.header)
    const header = this.noHeaders ? '' : this.line(headers, headers, widths)
    this.write(header + cells.map((c) => this.line(c.plain, c.shown, widths)).join(''))
  }

  private print(cells: Cells[]): void {
    if (cells.length === 0) return
    const widths = this.grow(cells)
    this.write(cells.map((c) => this.line(c.plain, c.shown, widths)).join(''))
  }

  private grow(cells: Cells[]): number[] {
    const widths = this.widths!
    for (const c of cells) {
      for (const [i, text] of c.plain.entries()) widths[i] = Math.max(widths[i]!, displayWidth(text))
    }
    return widths
  }

  private line(plain: string[], shown: string[], widths: number[]): string {
    const last = plain.length - 1
    const parts = shown.map((text, i) => (i === last ? text : text + ' '.repeat(Math.max(0, widths[i]! - displayWidth(plain[i]!))) + this.gap))
    return parts.join('').trimEnd() + '\n'
  }
}

/** A whole table as text (the header alone when there are no rows, nothing with noHeaders). */
export function oracleRenderTable<Row>(rows: Iterable<Row>, columns: Column<Row>[], options: TableOptions = {}): string {
  let text = ''
  const table = new OracleTableWriter(columns, {...options, bufferRows: 0}, (t) => (text += t))
  table.add(rows)
  table.flush({header: true})
  return text
}
