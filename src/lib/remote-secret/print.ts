/**
 * What `remote-secret list` and `remote-secret status` share: several contexts, the output flags
 * without --show-labels / -L (a row is a cluster of a Secret, with no labels of its own), and one
 * printer whose rows are named secret/NAME. No Kubernetes client here.
 */
import {contextNames, multiContextFlags} from '../cli/multi-context.js'
import {outputFlags, printOptions, type OutputFlagValues} from '../cli/output-flags.js'
import {ALL_KINDS, Printer, type PrintOptions} from '../output/printer.js'
import type {Column} from '../output/table.js'

/** The flags; `schema` says what json, yaml, jsonpath, custom-columns and --sort-by read. */
export function remoteSecretFlags(schema: string) {
  const {output, 'no-headers': noHeaders, 'sort-by': sortBy} = outputFlags(ALL_KINDS)
  const description = `json, yaml, jsonpath, jsonpath-as-json, custom-columns and --sort-by read the ${schema}; -o name prints secret/NAME.`
  return {...multiContextFlags, output: {...output, description} as typeof output, 'no-headers': noHeaders, 'sort-by': sortBy}
}

/**
 * The rows in the format asked for; a table starts with CONTEXT, SECRET and CLUSTER, then `columns`;
 * json and yaml print a `kind` list of them (meshvm.io/v1alpha1).
 */
export function printRows<Row extends {context: string; secret: string; cluster: string}>(rows: Row[], kind: string, columns: Column<Row>[], print: PrintOptions, write: (text: string) => void): void {
  const first: Column<Row>[] = [
    {header: 'CONTEXT', value: (r) => r.context},
    {header: 'SECRET', value: (r) => r.secret},
    {header: 'CLUSTER', value: (r) => r.cluster},
  ]
  const spec = {columns: [...first, ...columns], object: (r: Row) => r, name: (r: Row) => `secret/${r.secret}`, document: (items: unknown[]) => ({apiVersion: 'meshvm.io/v1alpha1', kind, items})}
  const printer = new Printer<Row>(spec, print, write)
  printer.add(rows)
  printer.finish()
}

/** How to print (and whether for people: a table), and the contexts to read. */
export async function listingTargets(
  f: OutputFlagValues & {context?: string[]; 'all-contexts': boolean; kubeconfig?: string},
): Promise<{print: PrintOptions; human: boolean; contexts: (string | undefined)[]}> {
  const print = printOptions(f, ALL_KINDS)
  const human = print.output.kind === 'table' || print.output.kind === 'wide'
  return {print, human, contexts: await contextNames(f.context, f['all-contexts'], f.kubeconfig)}
}
