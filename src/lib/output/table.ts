/**
 * kubectl-style borderless tables on top of cli-table3: upper-case headers, columns separated by
 * `gap` spaces, no trailing whitespace, ANSI-aware widths.
 */
import Table from 'cli-table3'
import {stripAnsi} from '../errors.js'

export interface Column<Row> {
  header: string
  /** Shown only with `-o wide`. */
  wide?: boolean
  value: (row: Row) => string
  /** Optional colouring applied after width computation (cli-table3 measures without ANSI codes). */
  color?: (text: string, row: Row) => string
}

export interface TableOptions {
  wide?: boolean
  noHeaders?: boolean
  /** Spaces between columns: kubectl uses 3, istioctl's tabwriter 5. */
  gap?: number
}

const NO_BORDER = {
  top: '', 'top-mid': '', 'top-left': '', 'top-right': '',
  bottom: '', 'bottom-mid': '', 'bottom-left': '', 'bottom-right': '',
  left: '', 'left-mid': '', mid: '', 'mid-mid': '',
  right: '', 'right-mid': '', middle: '',
}

/**
 * cli-table3 spends ~30 µs a cell (ANSI regexes built per call, a layout pass quadratic in rows):
 * fine for a screenful, seconds for 5,000 proxies. Beyond FAST_PATH_ROWS the same layout (widths
 * measured here, cells padded, `gap` between columns) is produced directly; test/lib/table checks
 * both paths give identical text.
 */
export const FAST_PATH_ROWS = 200

// Most cells are printable ASCII without colour codes: their width is their length.
const PLAIN = /^[\x20-\x7e]*$/
const displayWidth = (text: string): number => (PLAIN.test(text) ? text.length : [...stripAnsi(text)].length)

export function renderTable<Row>(rows: Iterable<Row>, columns: Column<Row>[], options: TableOptions = {}): string {
  const cols = columns.filter((c) => options.wide || !c.wide)
  const cells: string[][] = []
  if (!options.noHeaders) cells.push(cols.map((c) => c.header))
  let count = 0
  for (const row of rows) {
    cells.push(cols.map((c) => (c.color ? c.color(c.value(row), row) : c.value(row))))
    count++
  }
  if (count === 0 && options.noHeaders) return ''
  return renderCells(cells, options.gap ?? 3, count > FAST_PATH_ROWS)
}

/** Lays out rows of cells; exported for the equivalence test of the two paths. */
export function renderCells(cells: string[][], gap: number, fast: boolean): string {
  if (cells.length === 0) return '\n'
  // Each cell is measured once.
  const measured = cells.map((r) => r.map(displayWidth))
  const widths = cells[0]!.map((_, i) => {
    let width = 1
    for (const r of measured) if ((r[i] ?? 0) > width) width = r[i]!
    return width
  })
  let lines: string[]
  if (fast) {
    const sep = ' '.repeat(gap)
    lines = cells.map((r, j) => r.map((cell, i) => cell + ' '.repeat(widths[i]! - measured[j]![i]!)).join(sep))
  } else {
    const table = new Table({
      chars: {...NO_BORDER, middle: ' '.repeat(gap)},
      style: {head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true},
      colWidths: widths,
      wordWrap: false,
    })
    table.push(...cells)
    lines = table.toString().split('\n')
  }
  return lines.map((line) => line.trimEnd()).join('\n') + '\n'
}
