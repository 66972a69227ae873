/**
 * The one colour policy. Never import chalk's default instance elsewhere: it ignores NO_COLOR.
 *
 * Colour is on only when the stream is a TTY, NO_COLOR is unset or empty, TERM is not `dumb`,
 * `--no-color` was not given and the output format is a human one (table or wide).
 */
import {Chalk, type ChalkInstance} from 'chalk'

export interface ColorOptions {
  noColor?: boolean
  format?: string
  stream?: {isTTY?: boolean}
  env?: NodeJS.ProcessEnv
}

export function colorEnabled(options: ColorOptions = {}): boolean {
  const env = options.env ?? process.env
  if (options.noColor) return false
  if (env.NO_COLOR !== undefined && env.NO_COLOR !== '') return false
  if (env.TERM === 'dumb') return false
  if (options.format !== undefined && options.format !== 'table' && options.format !== 'wide') return false
  const force = env.FORCE_COLOR
  if (force !== undefined && force !== '' && force !== '0' && force !== 'false') return true
  return Boolean((options.stream ?? process.stdout).isTTY)
}

export function makeChalk(options: ColorOptions = {}): ChalkInstance {
  return new Chalk({level: colorEnabled(options) ? 2 : 0})
}

/** Colours for the statuses meshvm prints; one mapping so every command agrees. */
export function statusColor(chalk: ChalkInstance, status: string): string {
  // Without colour (pipes, NO_COLOR) there is nothing to decide: this runs for every cell of big tables.
  if (chalk.level === 0) return status
  const s = status.toUpperCase()
  if (s.startsWith('SYNCED') || s === 'TRUE' || s === 'PASS' || s === 'HEALTHY' || s === 'CONNECTED') return chalk.green(status)
  if (s.startsWith('STALE') || s === 'WARN' || s === 'UNKNOWN' || s.startsWith('NOT SENT')) return chalk.yellow(status)
  if (s.startsWith('ERROR') || s.startsWith('NOT CONNECTED') || s.startsWith('NO ANSWER') || s === 'FALSE' || s === 'FAIL' || s === 'UNHEALTHY') return chalk.red(status)
  return status
}
