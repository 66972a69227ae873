/**
 * The process entry point behind bin/run.js: runs oclif, then prints any failure as one line
 * (plus optional hints) on stderr and returns a stable exit code. Stack traces only with DEBUG.
 */
import {settings} from '@oclif/core/settings'
import {fileURLToPath} from 'node:url'
import {debugEnabled, ExitCode, redactCredentials, stripAnsi, toReport} from './lib/errors.js'
import {terminalSafe} from './lib/output/terminal.js'
import {COMMANDS} from './command-index.js'
import {makeChalk} from './lib/output/color.js'
import {ranCommand} from './lib/cli/ran-command.js'
import {commandNotFound, entryArgv, pluginRunOptions, withInvocation} from './lib/cli/entry.js'
import {directRun} from './lib/cli/direct-run.js'

/** The command the last main() ran, if oclif got that far (`--help` and unknown commands run none). */
export function ranCommandId(): string | undefined {
  return ranCommand.id
}
// oclif finds the commands through bin/commands.cjs, which reads them from here.
;(globalThis as {__MESHVM_COMMANDS__?: unknown}).__MESHVM_COMMANDS__ = COMMANDS

export function printError(err: unknown): number {
  const report = withInvocation(toReport(commandNotFound(err, Object.keys(COMMANDS))), Object.keys(COMMANDS))
  if (report.code === 'EPIPE') return ExitCode.OK
  const chalk = makeChalk({stream: process.stderr, noColor: process.argv.includes('--no-color')})
  // Every error line is the last gate before the terminal: no credential, no control character
  // (messages and hints may quote names, URLs and server text).
  const safe = (line: string) => terminalSafe(redactCredentials(stripAnsi(line)))
  let text = ''
  for (const line of [report.message, ...(report.problems ?? [])]) text += `${chalk.red('Error:')} ${safe(line)}\n`
  for (const hint of report.hints) text += `${chalk.dim('Hint:')} ${safe(hint)}\n`
  if (report.stack && debugEnabled()) text += report.stack + '\n'
  process.stderr.write(text)
  return report.exit
}

export async function main(argv: string[], binUrl: string, options: {development?: boolean} = {}): Promise<number> {
  // The shipped CLI runs the bundle in dist/ only. Without this, a NODE_ENV of test or development
  // (common in users' shells and CI) makes oclif look for TypeScript sources and warn.
  settings.enableAutoTranspile = Boolean(options.development)
  try {
    // Most runs skip oclif's Config.load (src/lib/cli/direct-run.ts); oclif's run() is loaded when needed.
    if (options.development || !(await directRun(argv, fileURLToPath(binUrl), COMMANDS))) {
      const {run} = await import('@oclif/core/run')
      await run(entryArgv(argv), pluginRunOptions(argv, binUrl) as Parameters<typeof run>[1])
    }
    // oclif's flush waits for stdout to drain; with nothing queued (always, for files and terminals)
    // it would return at once, after arming a 10 s timer.
    if (process.stdout.writableLength > 0) await (await import('@oclif/core/flush')).flush()
    return typeof process.exitCode === 'number' ? process.exitCode : ExitCode.OK
  } catch (err) {
    // oclif signals `--help`/`--version` completion with an ExitError of code 0.
    const exit = (err as {oclif?: {exit?: number}})?.oclif?.exit
    if (exit === 0) return ExitCode.OK
    return printError(err)
  }
}
