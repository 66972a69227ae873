// Kept apart from render.ts (and its YAML writer) so that shell completion reads the names without loading it.
/**
 * Every -o format, once: its name and how help shows it (those with `=` take a template). Each printing
 * command accepts a subset (printer.ts parseOutput); completion offers them.
 */
export const FORMATS = {
  table: 'table',
  wide: 'wide',
  json: 'json',
  yaml: 'yaml',
  name: 'name',
  jsonpath: 'jsonpath=TEMPLATE',
  'jsonpath-as-json': 'jsonpath-as-json=TEMPLATE',
  'custom-columns': 'custom-columns=HEADER:PATH,…',
} as const
export type OutputKind = keyof typeof FORMATS
/** The formats without a template. */
export type OutputFormat = Exclude<OutputKind, 'jsonpath' | 'jsonpath-as-json' | 'custom-columns'>
