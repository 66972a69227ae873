/**
 * kubectl-style borderless tables on top of cli-table3: upper-case headers, columns separated by
 * `gap` spaces, no trailing whitespace, ANSI-aware widths.
 */
import Table from 'cli-table3'

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

export function renderTable<Row>(rows: Iterable<Row>, columns: Column<Row>[], options: TableOptions = {}): string {
  const cols = columns.filter((c) => options.wide || !c.wide)
  const gap = ' '.repeat(options.gap ?? 3)
  const table = new Table({
    chars: {...NO_BORDER, middle: gap},
    style: {head: [], border: [], 'padding-left': 0, 'padding-right': 0, compact: true},
    wordWrap: false,
  })
  if (!options.noHeaders) table.push(cols.map((c) => c.header))
  let count = 0
  for (const row of rows) {
    table.push(cols.map((c) => (c.color ? c.color(c.value(row), row) : c.value(row))))
    count++
  }
  if (count === 0 && options.noHeaders) return ''
  return (
    table
      .toString()
      .split('\n')
      .map((line) => line.replace(/\s+$/, ''))
      .join('\n') + '\n'
  )
}
