/**
 * The printer of lists: every command that lists objects or rows in kubectl's -o formats hands them
 * here, page by page, with its table columns (reports with a layout of their own, as doctor's, use
 * renderTable and renderData); the printer writes the format the user chose:
 *
 *   table, wide             the command's columns (TableWriter; streamed page by page)
 *   json, yaml              the objects as a kubectl List (streamed page by page), or the command's document
 *   name                    kind.group/name, one per line (accepted back as TYPE/NAME arguments)
 *   jsonpath=TEMPLATE       kubectl's JSONPath template (output/jsonpath.ts) over the List
 *   jsonpath-as-json=…      the same results as indented JSON
 *   custom-columns=H:PATH,… a table of JSONPath values, one row per object
 *
 * and --no-headers, --sort-by=JSONPATH, --show-labels, -L/--label-columns. go-template is refused:
 * no maintained JavaScript library implements Go's text/template (with kubectl's sprig-less function
 * set), and a look-alike would print different text for the same template.
 *
 * Machine formats (json, yaml, jsonpath-as-json) are exact; everything shown as text passes through
 * terminalSafe (the table engine does it for tables).
 */
import {MeshvmError, UsageError} from '../errors.js'
import {labelsOf, type KubeObject} from '../kube/object.js'
import {execute, executeAsJson, findResults, goSprint, JsonPathError, parseRelaxed, parseTemplate, resultText, type Template} from './jsonpath.js'
import {ListWriter} from './list-writer.js'
import {asList, FORMATS, renderData, resourceName, type OutputFormat, type OutputKind} from './render.js'
import {TableWriter, type Column, type RenderedRow} from './table.js'
import {terminalSafe, terminalSafeLines} from './terminal.js'

export type OutputSpec = {kind: OutputFormat} | {kind: 'jsonpath' | 'jsonpath-as-json'; template: Template} | {kind: 'custom-columns'; columns: {header: string; template: Template}[]}

export type {OutputKind}
export const ALL_KINDS = Object.keys(FORMATS) as OutputKind[]

const GO_TEMPLATE_REFUSAL = 'go-template is not supported: no maintained JavaScript library implements Go text/template, and an imitation would print different text than kubectl for the same template'

/** Parses -o; `allowed` lists the kinds this command prints (a usage error names the flag and them). */
export function parseOutput(value: string, allowed: readonly OutputKind[] = ALL_KINDS, flag = '-o/--output'): OutputSpec {
  const eq = value.indexOf('=')
  const name = eq < 0 ? value : value.slice(0, eq)
  const arg = eq < 0 ? undefined : value.slice(eq + 1)
  const valid = `expected one of ${allowed.map((k) => FORMATS[k]).join(', ')}`
  if (['go-template', 'go-template-file', 'template', 'templatefile'].includes(name))
    throw new UsageError(`${flag} ${JSON.stringify(value)}: ${GO_TEMPLATE_REFUSAL}`, ['use -o jsonpath=… or -o custom-columns=… (kubectl syntax), or -o json | jq'])
  if (!(allowed as readonly string[]).includes(name)) throw new UsageError(`${flag} ${JSON.stringify(value)}: ${valid}`)
  if (name === 'jsonpath' || name === 'jsonpath-as-json') {
    if (arg === undefined || arg === '') throw new UsageError(`${flag} ${name}: template format specified but no template given, e.g. ${name}='{.items[*].metadata.name}'`)
    return {kind: name, template: jsonPathFlag(flag, value, () => parseTemplate(arg))}
  }
  if (name === 'custom-columns') {
    if (arg === undefined || arg === '') throw new UsageError(`${flag} custom-columns: custom-columns format specified but no custom columns given, e.g. custom-columns=NAME:.metadata.name`)
    return {kind: name, columns: jsonPathFlag(flag, value, () => parseCustomColumns(arg, flag))}
  }
  if (arg !== undefined) throw new UsageError(`${flag} ${JSON.stringify(value)}: ${name} takes no argument`)
  return {kind: name as OutputFormat}
}

/** kubectl's custom-columns spec: HEADER:PATH pairs separated by commas (kubectl/pkg/cmd/get/customcolumn.go). */
function parseCustomColumns(spec: string, flag: string): {header: string; template: Template}[] {
  return spec.split(',').map((part) => {
    const colon = part.indexOf(':')
    if (colon <= 0) throw new UsageError(`${flag} custom-columns: unexpected custom-columns spec ${JSON.stringify(part)}, expected <header>:<json-path-expr>`)
    return {header: part.slice(0, colon), template: parseRelaxed(part.slice(colon + 1))}
  })
}

/** --sort-by: kubectl's relaxed JSONPath (`.metadata.name`, `{.metadata.name}`). */
export function parseSortBy(value: string, flag = '--sort-by'): Template {
  return jsonPathFlag(flag, value, () => parseRelaxed(value))
}

/** A template parsed from a flag: its syntax errors are usage errors naming the flag and value. */
function jsonPathFlag<T>(flag: string, value: string, parse: () => T): T {
  try {
    return parse()
  } catch (err) {
    if (err instanceof JsonPathError) throw new UsageError(`${flag} ${JSON.stringify(value)}: ${err.message}`)
    throw err
  }
}

/** -L/--label-columns: label keys (each flag may list several, comma separated, as kubectl). */
export function parseLabelColumns(values: string[] | undefined): string[] {
  return (values ?? [])
    .flatMap((v) => v.split(','))
    .map((k) => k.trim())
    .filter((k) => k !== '')
}

/** Columns written for one row type, used for another (e.g. registration columns on listed objects). */
export function onRows<From, Row>(columns: Column<From>[], from: (row: Row) => From): Column<Row>[] {
  return columns.map((c) => ({
    header: c.header,
    wide: c.wide,
    value: (r: Row) => c.value(from(r)),
    ...(c.color ? {color: (t: string, r: Row) => c.color!(t, from(r))} : {}),
  }))
}

/**
 * An order for rows. With `key`, the comparator compares these keys (strings, element by element, by
 * code unit): a table then holds each row's key and rendered cells instead of the row and its object,
 * which for a 10,000-row list is most of what holding costs.
 */
export type RowOrder<Row> = ((a: Row, b: Row) => number) & {key?: (row: Row) => readonly string[]}

function compareKeys(a: readonly string[], b: readonly string[]): number {
  const n = Math.min(a.length, b.length)
  for (let i = 0; i < n; i++) {
    const x = a[i]!
    const y = b[i]!
    if (x !== y) return x < y ? -1 : 1
  }
  return a.length - b.length
}

/** kubectl's order for -A lists: namespace, then name. */
export function byNamespaceThenName<Row>(of: (row: Row) => {namespace?: string; name?: string}): RowOrder<Row> {
  const key = (row: Row): readonly string[] => {
    const x = of(row)
    return [x.namespace ?? '', x.name ?? '']
  }
  return Object.assign((a: Row, b: Row) => compareKeys(key(a), key(b)), {key})
}

export interface PrintSpec<Row> {
  /** The table (and wide) columns. */
  columns: Column<Row>[]
  /** The object a row stands for: machine formats, jsonpath, custom-columns and --sort-by read it. */
  object: (row: Row) => unknown
  /** -o name; default: kind.group/name of the object. */
  name?: (row: Row) => string
  /** The whole document for json/yaml/jsonpath; default: a kubectl List of the objects (streamed). */
  document?: (objects: unknown[]) => unknown
  /** Spaces between table columns (kubectl 3). */
  gap?: number
  /** An order applied before printing (e.g. namespace then name for -A); --sort-by takes precedence. */
  order?: RowOrder<Row>
}

export interface PrintOptions {
  output: OutputSpec
  noHeaders?: boolean
  sortBy?: Template
  showLabels?: boolean
  labelColumns?: string[]
  /** Rows measured before a streamed table prints (kubectl --chunk-size). */
  bufferRows?: number
  /** --watch: after the list, every object is printed on its own (one JSON/YAML document each). */
  watch?: boolean
}

/** kubectl's labels.FormatLabels: k=v pairs in key order, or <none>. */
export function formatLabels(labels: Record<string, string>): string {
  const keys = Object.keys(labels).sort()
  return keys.length === 0 ? '<none>' : keys.map((k) => `${k}=${labels[k]}`).join(',')
}

export class Printer<Row> {
  private readonly table?: TableWriter<Row>
  private readonly list?: ListWriter
  /** With an order: the rows until the list ends, each with its sort key; a table's rendered (see RowOrder). */
  private held: {key: unknown; row: unknown}[] | undefined
  private readonly order?: {key(row: Row): unknown; compare(a: unknown, b: unknown): number}
  private objects: unknown[] = []
  private rows = 0
  private documents = 0
  private listDone = false

  constructor(
    private readonly spec: PrintSpec<Row>,
    private readonly options: PrintOptions,
    private readonly write: (text: string) => void,
  ) {
    const out = options.output
    const tableOptions = {wide: out.kind === 'wide', noHeaders: options.noHeaders, gap: spec.gap, bufferRows: options.bufferRows}
    if (out.kind === 'table' || out.kind === 'wide') this.table = new TableWriter(this.tableColumns(), tableOptions, write)
    else if (out.kind === 'custom-columns') this.table = new TableWriter(this.customColumns(out.columns), tableOptions, write)
    else if ((out.kind === 'json' || out.kind === 'yaml') && !spec.document) this.list = new ListWriter(out.kind, write)
    const {sortBy} = options
    const order = spec.order
    if (sortBy) this.order = {key: (row) => findResults(sortBy, spec.object(row)).flat()[0], compare: compareValues}
    else if (order) this.order = order.key ? {key: order.key, compare: compareKeys} : {key: (row) => row, compare: order}
    if (this.order) this.held = []
  }

  /** Rows printed or held so far. */
  get count(): number {
    return this.rows
  }

  add(page: Row[]): void {
    this.rows += page.length
    if (this.held) for (const row of page) this.held.push({key: this.order!.key(row), row: this.table ? this.table.render(row) : row})
    else this.print(page)
  }

  /** Ends the list: held rows are sorted and printed, tables flushed, the List closed. Later `add`s (--watch) print at once. */
  finish(): void {
    if (this.listDone) return
    this.listDone = true
    const held = this.held
    if (held) {
      this.held = undefined
      if (this.options.sortBy) sortFieldFound(this.options.sortBy, held)
      // Array.prototype.sort is stable: equal keys keep the order the rows came in.
      held.sort((a, b) => this.order!.compare(a.key, b.key))
      const rows = held.map((h) => h.row)
      if (this.table) this.table.addRendered(rows as RenderedRow[])
      else this.print(rows as Row[])
    }
    const out = this.options.output
    this.table?.flush()
    this.list?.finish()
    if (out.kind === 'jsonpath' || out.kind === 'jsonpath-as-json' || ((out.kind === 'json' || out.kind === 'yaml') && this.spec.document)) {
      this.write(this.whole(this.objects))
      this.objects = []
    }
  }

  private print(page: Row[]): void {
    if (page.length === 0) return
    const out = this.options.output
    if (this.table) {
      this.table.add(page)
      return
    }
    if (out.kind === 'name') {
      this.write(page.map((r) => terminalSafe(this.spec.name ? this.spec.name(r) : resourceName(this.spec.object(r) as KubeObject)) + '\n').join(''))
      return
    }
    const objects = page.map((r) => this.spec.object(r))
    if (this.listDone && this.options.watch) {
      // --watch after the list: each object on its own, as kubectl prints them.
      for (const o of objects) {
        if (out.kind === 'json') this.write(renderData(o, 'json')!)
        else if (out.kind === 'yaml') this.write(`${this.documents++ > 0 || this.rows > objects.length ? '---\n' : ''}${renderData(o, 'yaml')}`)
        else this.write(this.whole([o], o))
      }
      return
    }
    if (this.list) this.list.add(objects)
    else this.objects.push(...objects)
  }

  private whole(objects: unknown[], single?: unknown): string {
    const out = this.options.output
    const doc = single ?? (this.spec.document ? this.spec.document(objects) : asList(objects))
    if (out.kind === 'json' || out.kind === 'yaml') return renderData(doc, out.kind)!
    try {
      if (out.kind === 'jsonpath') return terminalSafeLines(execute(out.template, doc))
      if (out.kind === 'jsonpath-as-json') return executeAsJson(out.template, doc)
    } catch (err) {
      if (err instanceof JsonPathError) throw new MeshvmError(`error executing jsonpath ${JSON.stringify((out as {template: Template}).template.source)}: ${err.message}`, {code: 'TemplateError'})
      throw err
    }
    return ''
  }

  private tableColumns(): Column<Row>[] {
    const columns = [...this.spec.columns]
    for (const key of this.options.labelColumns ?? []) {
      columns.push({header: (key.split('/').pop() ?? key).toUpperCase(), value: (r) => labelsOf(this.spec.object(r))[key] ?? ''})
    }
    if (this.options.showLabels) columns.push({header: 'LABELS', value: (r) => formatLabels(labelsOf(this.spec.object(r)))})
    return columns
  }

  private customColumns(columns: {header: string; template: Template}[]): Column<Row>[] {
    return columns.map((c) => ({
      header: c.header,
      value: (r: Row) => {
        // kubectl's customcolumn.go: <none> when the first result group is empty, each value as fmt.Sprint prints it.
        const groups = findResults(c.template, this.spec.object(r))
        const values = groups.flat().map(goSprint)
        return (groups.length === 0 || groups[0]!.length === 0 ? ['<none>', ...values] : values).join(',')
      },
    }))
  }
}

/**
 * kubectl's SortObjects: a field no object has is a mistake (`--sort-by=nope`), not an order; an empty
 * list is not checked. The rows are still held, so nothing has been printed.
 */
function sortFieldFound(sortBy: Template, held: {key: unknown}[]): void {
  if (held.length > 0 && held.every((h) => h.key === undefined)) {
    throw new UsageError(`--sort-by: couldn't find any field with path ${JSON.stringify(sortBy.source)} in the list of objects`)
  }
}

/** --sort-by order: missing values first, then numbers by value, strings and others by their text. */
function compareValues(a: unknown, b: unknown): number {
  if (a === undefined || b === undefined) return a === b ? 0 : a === undefined ? -1 : 1
  if (typeof a === 'number' && typeof b === 'number') return a - b
  const x = resultText(a)
  const y = resultText(b)
  return x < y ? -1 : x > y ? 1 : 0
}
