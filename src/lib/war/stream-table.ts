/**
 * A kubectl-style borderless table that is printed while a list is still being paged in, so a list
 * of 10,000 registrations never holds its objects in memory at once.
 *
 * The layout is the one `renderTable` (output/table.ts) draws: upper-case headers, columns left
 * aligned and separated by `gap` spaces, no trailing whitespace. Rows are kept as rendered cell
 * strings (never as objects) until `bufferRows` of them have arrived, or the list ends; the column
 * widths come from those rows, which are then printed. Later rows are printed at once; a later cell
 * wider than its column widens that column from then on (lines already printed are not re-aligned,
 * as with kubectl's --chunk-size). A list of at most `bufferRows` rows is byte-identical to
 * `renderTable`'s output.
 */
import {stripAnsi} from '../errors.js'
import type {Column, TableOptions} from '../output/table.js'

interface Cells {
  plain: string[]
  shown: string[]
}

export class StreamingTable<Row> {
  private readonly columns: Column<Row>[]
  private widths: number[] | undefined
  private buffer: Cells[] = []
  private rows = 0
  private readonly gap: string
  private readonly noHeaders: boolean
  private readonly bufferRows: number

  constructor(
    columns: Column<Row>[],
    options: TableOptions & {bufferRows?: number},
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
      const plain = this.columns.map((c) => c.value(row))
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

  /** Prints what is buffered; later rows are printed as they are added. */
  flush(): void {
    if (this.widths !== undefined || this.buffer.length === 0) return
    this.widths = this.columns.map((c) => (this.noHeaders ? 0 : width(c.header)))
    const cells = this.buffer
    this.buffer = []
    const widths = this.grow(cells)
    const header = this.noHeaders ? '' : this.line(this.columns.map((c) => c.header), this.columns.map((c) => c.header), widths)
    this.write(header + cells.map((c) => this.line(c.plain, c.shown, widths)).join(''))
  }

  private print(cells: Cells[]): void {
    if (cells.length === 0) return
    const widths = this.grow(cells)
    this.write(cells.map((c) => this.line(c.plain, c.shown, widths)).join(''))
  }

  private grow(cells: Cells[]): number[] {
    const widths = this.widths!
    for (const c of cells) c.plain.forEach((text, i) => (widths[i] = Math.max(widths[i]!, width(text))))
    return widths
  }

  private line(plain: string[], shown: string[], widths: number[]): string {
    const last = plain.length - 1
    const parts = shown.map((text, i) => (i === last ? text : text + ' '.repeat(Math.max(0, widths[i]! - width(plain[i]!))) + this.gap))
    return parts.join('').replace(/\s+$/, '') + '\n'
  }
}

function width(text: string): number {
  return stripAnsi(text).length
}
