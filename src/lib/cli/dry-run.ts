/**
 * --dry-run, the same on every command that changes a cluster (kubectl's): none (default), client
 * (print what would be done, send nothing that changes anything), server (the API server runs the
 * change with dryRun=All and reports, persisting nothing). A bare --dry-run means client, as kubectl.
 */
import * as Flags from '@oclif/core/flags'

const DRY_RUN_VALUES = ['none', 'client', 'server'] as const

export function dryRunFlag(summary: string, helpGroup?: string) {
  return Flags.option({summary, description: 'A bare --dry-run means client.', options: DRY_RUN_VALUES, default: 'none' as const, helpGroup})()
}

/** kubectl's NoOptDefVal: the exact word --dry-run (before any `--`) becomes --dry-run=client. */
export function bareDryRunIsClient(argv: string[]): string[] {
  const end = argv.indexOf('--')
  return argv.map((a, i) => (a === '--dry-run' && (end < 0 || i < end) ? '--dry-run=client' : a))
}
