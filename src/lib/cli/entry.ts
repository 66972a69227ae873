/**
 * What src/main.ts does around oclif's run, kept here so main.ts stays small: kubectl-plugin mode
 * (help says `kubectl meshvm …`), did-you-mean for unknown commands, and hints that keep the
 * user's --kubeconfig/--context/-n.
 */
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {UsageError, type ReportedError} from '../errors.js'
import {invocation, isKubectlPlugin, keepInvocation, setInvocation} from './invocation.js'
import {ranCommand} from './ran-command.js'
import {suggestCommands} from './suggest.js'

/** kubectl runs kubectl_complete-meshvm WORD… to complete `kubectl meshvm WORD…`: that is `meshvm __complete WORD…`. */
export function entryArgv(argv: string[], script = process.argv[1] ?? ''): string[] {
  return /(^|\/)kubectl_complete-meshvm$/.test(script) ? ['__complete', ...argv] : argv
}

/** oclif's run options: the package root, and in plugin mode its package.json with bin `kubectl meshvm`. */
export function pluginRunOptions(argv: string[], rootUrl: string): string | {root: string; pjson: unknown} {
  setInvocation(argv)
  if (!isKubectlPlugin()) return rootUrl
  const root = fileURLToPath(rootUrl)
  const pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {oclif: Record<string, unknown>}
  return {root, pjson: {...pjson, oclif: {...pjson.oclif, bin: invocation.bin}}}
}

const words = (id: string): string => id.replaceAll(':', ' ')

/** oclif's "command war:lsit not found" as a usage error with the closest commands (cobra's "Did you mean this?"). */
export function commandNotFound(err: unknown, ids: string[]): unknown {
  const m = /^command (\S+) not found$/.exec((err as Error | undefined)?.message ?? '')
  if (!m) return err
  const typed = words(m[1]!)
  // oclif reports an argument to a command that takes none as an unknown command `create-remote-secret:extra`.
  const known = ids
    .map(words)
    .filter((c) => typed.startsWith(c + ' '))
    .sort((a, b) => b.length - a.length)[0]
  if (known) return new UsageError(`Unexpected argument: ${typed.slice(known.length + 1).split(' ')[0]}`, [`see ${invocation.bin} ${known} --help for the arguments this command takes`])
  const close = suggestCommands(typed, ids.map(words)).map((c) => `${invocation.bin} ${c}`)
  const hints = [...(close.length > 0 ? [`did you mean: ${close.slice(0, 3).join(', ')}?`] : []), `see ${invocation.bin} --help for the commands`]
  return new UsageError(`unknown command "${typed}" for "${invocation.bin}"`, hints)
}

/** Hints that suggest a meshvm command keep the user's cluster flags and say `kubectl meshvm` in plugin mode. */
export function withInvocation(report: ReportedError, ids: string[]): ReportedError {
  const commands = ids.map(words)
  // oclif's parse errors say "see --help": name the command, as it was run.
  const own = ranCommand.id ? `${invocation.bin} ${words(ranCommand.id)} --help` : `${invocation.bin} --help`
  return {...report, hints: report.hints.map((h) => keepInvocation(h.replace(/^see --help /, `see ${own} `), commands))}
}
