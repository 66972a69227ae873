/**
 * The output flags, the same on every command that prints objects or rows (kubectl's):
 * -o/--output, --no-headers, --sort-by, --show-labels, -L/--label-columns. Validated before any request.
 */
import * as Flags from '@oclif/core/flags'
import {parseLabelColumns, parseOutput, parseSortBy, type OutputKind, type PrintOptions} from '../output/printer.js'
import {FORMATS} from '../output/render.js'
import {inHelpGroup, OUTPUT_GROUP} from './base-command.js'

export function outputFlags(kinds: readonly OutputKind[]) {
  return inHelpGroup(OUTPUT_GROUP, {
    output: Flags.string({
      char: 'o',
      summary: `Output format: ${kinds.map((k) => FORMATS[k]).join(', ')}.`,
      description: `jsonpath and custom-columns use kubectl's JSONPath template syntax, e.g. -o jsonpath='{range .items[*]}{.metadata.name}{"\\n"}{end}' or -o custom-columns=NAME:.metadata.name,NS:.metadata.namespace. go-template is not supported (no maintained JavaScript implementation of Go templates).`,
      default: 'table',
    }),
    'no-headers': Flags.boolean({summary: 'Do not print the table header (table, wide, custom-columns).'}),
    'show-labels': Flags.boolean({summary: "Add a LABELS column with each object's labels."}),
    'label-columns': Flags.string({char: 'L', summary: 'Add a column per label key (comma separated or repeated), e.g. -L app,version.', multiple: true, multipleNonGreedy: true}),
    'sort-by': Flags.string({summary: 'Sort rows by a JSONPath into each object, e.g. --sort-by=.metadata.creationTimestamp (holds the list before printing).'}),
  })
}

export interface OutputFlagValues {
  output: string
  'no-headers'?: boolean
  'sort-by'?: string
  'show-labels'?: boolean
  'label-columns'?: string[]
}

/** The printer options the flags describe; a bad value is a usage error naming the flag. */
export function printOptions(flags: OutputFlagValues, kinds: readonly OutputKind[]): PrintOptions {
  return {
    output: parseOutput(flags.output, kinds),
    noHeaders: flags['no-headers'],
    sortBy: flags['sort-by'] === undefined ? undefined : parseSortBy(flags['sort-by']),
    showLabels: flags['show-labels'],
    labelColumns: parseLabelColumns(flags['label-columns']),
  }
}
