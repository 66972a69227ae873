/**
 * The one table engine: kubectl-style borderless tables (upper-case headers, columns left aligned and
 * separated by `gap` spaces, no trailing whitespace), measured with the one width function
 * (output/width.ts: wide CJK characters and emoji count two columns, colour codes none). Every cell
 * passes through terminalSafe: values come from clusters and VMs.
 *
 * Tables can be printed while a list is still being paged in: rows are kept as rendered cells (never as
 * objects) until `bufferRows` of them have arrived or the list ends; the column widths come from those
 * rows, which are then printed. Later rows are printed at once; a later cell wider than its column
 * widens that column from then on (lines already printed are not re-aligned, as with kubectl's
 * --chunk-size). A table of at most `bufferRows` rows is laid out exactly as a whole one.
 *
 * Why the loops are written for speed (each cell computed, escaped and measured once; a coloured copy of
 * a row only when colouring changed a cell): docs/decisions/table-engine.md.
 */
import {terminalSafe} from './terminal.js'
import {displayWidth, isPrintableAscii} from './width.js'

export interface Column<Row> {
  header: string
  /** Shown only with `-o wide`. */
  wide?: boolean
  value: (row: Row) => string
  /** Optional colouring applied after width computation (widths are measured on the plain text). */
  color?: (text: string, row: Row) => string
}

export interface TableOptions {
  wide?: boolean
  noHeaders?: boolean
  /** Spaces between columns: kubectl uses 3, istioctl's tabwriter 5. */
  gap?: number
  /** Rows measured before the first line is printed; unset or 0: all of them. */
  bufferRows?: number
}

/**
 * A row as the table shows it, independent of the object it came from (callers may hold these instead
 * of their rows, e.g. to order them): each cell's terminal-safe text and display width, and the
 * coloured text when a column's colour changed any cell.
 */
export interface RenderedRow {
  readonly text: readonly string[]
  readonly widths: readonly number[]
  readonly shown?: readonly string[]
}

/** Runs of spaces by length, built once each. */
const SPACES: string[] = []
function spaces(n: number): string {
  return (SPACES[n] ??= ' '.repeat(n))
}

/** String.prototype.trimEnd's whitespace (ECMAScript WhiteSpace and LineTerminator) at the end of `line`. */
function endsWithSpace(line: string): boolean {
  const c = line.charCodeAt(line.length - 1)
  return c === 32 || (c >= 9 && c <= 13) || c === 0xa0 || c === 0x1680 || (c >= 0x2000 && c <= 0x200a) || c === 0x2028 || c === 0x2029 || c === 0x202f || c === 0x205f || c === 0x3000 || c === 0xfeff
}

export class TableWriter<Row> {
  private readonly columns: Column<Row>[]
  private widths: number[] | undefined
  private buffer: RenderedRow[] = []
  private rows = 0
  private readonly gap: number
  private readonly noHeaders: boolean
  private readonly bufferRows: number

  constructor(
    columns: Column<Row>[],
    options: TableOptions,
    private readonly write: (text: string) => void,
  ) {
    this.columns = columns.filter((c) => options.wide || !c.wide)
    this.gap = options.gap ?? 3
    this.noHeaders = Boolean(options.noHeaders)
    this.bufferRows = options.bufferRows === undefined || options.bufferRows <= 0 ? Number.POSITIVE_INFINITY : options.bufferRows
  }

  /** Rows added so far. */
  get count(): number {
    return this.rows
  }

  /** Adds rows; they are rendered now and may be dropped by the caller. */
  add(page: Iterable<Row>): void {
    const rendered: RenderedRow[] = []
    for (const row of page) rendered.push(this.render(row))
    this.addRendered(rendered)
  }

  /** One row's cells, terminal-safe (and coloured), for `addRendered` now or later. */
  render(row: Row): RenderedRow {
    const columns = this.columns
    const n = columns.length
    const text = new Array<string>(n)
    const widths = new Array<number>(n)
    let shown: string[] | undefined
    for (let i = 0; i < n; i++) {
      const column = columns[i]!
      const value = column.value(row)
      let cell = value
      if (isPrintableAscii(value)) widths[i] = value.length
      else widths[i] = displayWidth((cell = terminalSafe(value)))
      text[i] = cell
      if (column.color === undefined) continue
      const coloured = column.color(cell, row)
      if (coloured === cell) continue
      shown ??= text.slice(0, n)
      shown[i] = coloured
    }
    if (shown !== undefined) for (let i = 0; i < n; i++) shown[i] ??= text[i]!
    return shown === undefined ? {text, widths} : {text, widths, shown}
  }

  /** Adds rows rendered by `render` (of this table). */
  addRendered(rows: readonly RenderedRow[]): void {
    this.rows += rows.length
    if (this.widths === undefined) {
      this.buffer = this.buffer.length === 0 ? rows.slice() : this.buffer.concat(rows)
      if (this.buffer.length >= this.bufferRows) this.flush()
      return
    }
    this.print(rows)
  }

  /** Prints what is buffered (with `header`, the header even when there are no rows); later rows are printed as they are added. */
  flush(options: {header?: boolean} = {}): void {
    if (this.widths !== undefined || (this.buffer.length === 0 && !(options.header && !this.noHeaders))) return
    this.widths = this.columns.map((c) => (this.noHeaders ? 1 : Math.max(1, displayWidth(c.header))))
    const rows = this.buffer
    this.buffer = []
    this.grow(rows)
    const headers = this.columns.map((c) => c.header)
    const header = this.noHeaders ? '' : this.line({text: headers, widths: headers.map(displayWidth)})
    this.write(header + this.lines(rows))
  }

  private print(rows: readonly RenderedRow[]): void {
    if (rows.length === 0) return
    this.grow(rows)
    this.write(this.lines(rows))
  }

  private grow(rows: readonly RenderedRow[]): void {
    const widths = this.widths!
    const n = widths.length
    for (const r of rows) {
      const cells = r.widths
      for (let i = 0; i < n; i++) if (cells[i]! > widths[i]!) widths[i] = cells[i]!
    }
  }

  private lines(rows: readonly RenderedRow[]): string {
    let out = ''
    for (const r of rows) out += this.line(r)
    return out
  }

  /** Cells padded to the column widths (the last one not), gap-separated, trailing whitespace removed. */
  private line(r: RenderedRow): string {
    const widths = this.widths!
    const cells = r.widths
    const shown = r.shown ?? r.text
    const last = shown.length - 1
    if (last < 0) return '\n'
    let line = ''
    for (let i = 0; i < last; i++) {
      const pad = widths[i]! - cells[i]!
      line += shown[i]! + spaces(pad > 0 ? pad + this.gap : this.gap)
    }
    line += shown[last]!
    return (line.length > 0 && endsWithSpace(line) ? line.trimEnd() : line) + '\n'
  }
}

/** A whole table as text (the header alone when there are no rows, nothing with noHeaders). */
export function renderTable<Row>(rows: Iterable<Row>, columns: Column<Row>[], options: TableOptions = {}): string {
  let text = ''
  const table = new TableWriter(columns, {...options, bufferRows: 0}, (t) => (text += t))
  table.add(rows)
  table.flush({header: true})
  return text
}
