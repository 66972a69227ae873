/**
 * Runs a command without oclif's Config.load (package.json, the manifest, the plugin loader, the
 * theme file, the platform and shell probes) when nothing about the run needs it.
 *
 * `npm run build` loads oclif's real Config once and stores what a command run reads of it in
 * dist/commands.json (bin, name, version, help flags, the command ids and, per command, its arguments
 * and strictness). Here that snapshot stands in for the Config, and the command runs through oclif's
 * own Command class and parser as Config.runCommand would run it. Everything else goes through
 * oclif's run(): help flags, unknown or aliased commands, topics (`war list`: oclif's id resolution),
 * help/completion commands, kubectl-plugin mode, DEBUG, hooks, user plugins (a package.json in
 * oclif's data dir), a development run, a missing or stale snapshot, MESHVM_NO_DIRECT_RUN=1.
 * test/lib/direct-run.test.ts checks both paths print the same bytes and exit with the same code for
 * a matrix of command lines.
 */
import {existsSync, readFileSync} from 'node:fs'
import {homedir, tmpdir} from 'node:os'
import {join} from 'node:path'
import {setInvocation} from './invocation.js'

/** dist/commands.json, written by scripts/build.mjs. */
export interface DirectSnapshot {
  /** The meshvm version the snapshot was taken for: any other build's snapshot is not used. */
  version: string
  name: string
  bin: string
  /** oclif's help flags (`--help` and package.json's additionalHelpFlags). */
  helpFlags: string[]
  /** oclif's config.commandIDs, in its order (aliases included). */
  commandIDs: string[]
  /** Each of commandIDs: what oclif's id resolution reads of it (its arguments by name, whether it is strict). */
  commands: Record<string, {strict: boolean; args: Record<string, object>}>
}

/** The commands that read more of oclif's Config than the snapshot holds: always through oclif. */
export const NOT_DIRECT = new Set(['help', '__complete', 'completion'])

/**
 * The command id oclif's run() would pick for `argv` (help/util.js collateSpacedCmdIDFromArgs with a
 * space topic separator), when it is one the snapshot can run; else undefined.
 */
export function directCommandId(argv: readonly string[], snapshot: DirectSnapshot): string | undefined {
  const [id, next] = argv
  if (id === undefined || !Object.hasOwn(snapshot.commands, id)) return undefined
  // A command that is also a topic (`bundle verify`): oclif's resolution decides.
  if (snapshot.commandIDs.some((c) => c.startsWith(`${id}:`))) return undefined
  // oclif reads the next word as part of the id unless it is a flag, has a value or the command takes arguments.
  const {strict, args} = snapshot.commands[id]!
  if (next !== undefined && !next.startsWith('-') && !next.includes('=') && strict !== false && Object.keys(args).length === 0) return undefined
  return id
}

/** Whether anything in this run needs oclif's run(): see the list at the top. */
export function needsOclif(argv: readonly string[], env: NodeJS.ProcessEnv, script: string, helpFlags: readonly string[] = ['--help', '-h']): boolean {
  if (env.DEBUG || env.MESHVM_DEBUG || env.MESHVM_NO_DIRECT_RUN) return true
  // kubectl-meshvm and kubectl_complete-meshvm: another bin name and argv.
  if (/(^|[/\\])kubectl[-_][^/\\]*$/.test(script)) return true
  // oclif's help flags count anywhere before `--` (main.js helpAddition); version flags as argv[0].
  for (const arg of argv) {
    if (arg === '--') break
    if (helpFlags.includes(arg)) return true
  }
  return false
}

/**
 * Where oclif looks for user-installed plugins (Config.dataDir, then plugin-loader.js loadUserPlugins):
 * $MESHVM_DATA_DIR, else $XDG_DATA_HOME/meshvm (%LOCALAPPDATA%\\meshvm on Windows), else
 * ~/.local/share/meshvm; its package.json lists them. meshvm ships no plugin installer, but a
 * hand-made one is honoured: such runs go through oclif, which loads the plugins and their hooks.
 */
export function userPluginsFile(env: NodeJS.ProcessEnv = process.env, platform = process.platform): string {
  const home = env.HOME || homedir() || tmpdir()
  const base = env.XDG_DATA_HOME || (platform === 'win32' && env.LOCALAPPDATA) || join(home, '.local/share')
  return join(env.MESHVM_DATA_DIR || join(base, 'meshvm'), 'package.json')
}

/** The snapshot, if it was taken for this package.json (same version and bin, still no hooks). */
function readSnapshot(root: string): DirectSnapshot | undefined {
  try {
    const pjson = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as {version?: string; oclif?: {bin?: string; hooks?: unknown; exitCodes?: unknown}}
    const snapshot = JSON.parse(readFileSync(join(root, 'dist', 'commands.json'), 'utf8')) as DirectSnapshot
    if (snapshot.version !== pjson.version || snapshot.bin !== pjson.oclif?.bin || pjson.oclif?.hooks || pjson.oclif?.exitCodes) return undefined
    return snapshot
  } catch {
    return undefined
  }
}

type Runnable = {id?: string; new (argv: string[], config: never): {_run(): Promise<unknown>}}

/**
 * Runs the command for `argv` directly when it can (true), as Config.runCommand and Command.run
 * would: the class is oclif's `commands` entry, given its id, run with argv after the id.
 * False: nothing was run; the caller runs oclif.
 */
export async function directRun(argv: string[], root: string, commands: Record<string, unknown>, env = process.env, script = process.argv[1] ?? ''): Promise<boolean> {
  if (needsOclif(argv, env, script) || existsSync(userPluginsFile(env))) return false
  const snapshot = readSnapshot(root)
  const id = snapshot && !needsOclif(argv, env, script, snapshot.helpFlags) && directCommandId(argv, snapshot)
  if (!snapshot || !id || NOT_DIRECT.has(id) || !Object.hasOwn(commands, id)) return false
  setInvocation(argv, script)
  const command = commands[id] as Runnable
  command.id = id
  await new command(argv.slice(1), lightConfig(snapshot) as never)._run()
  return true
}

/**
 * What a command run reads of oclif's Config (Command: bin, the REDIRECTED env var, the user agent,
 * the id resolution in warnIfCommandDeprecated; BaseCommand: commandIDs; version: version), from the
 * snapshot. No hooks run: the build refuses a snapshot for a package.json with oclif hooks.
 */
export function lightConfig(snapshot: DirectSnapshot) {
  const scopedEnvVarKey = (k: string): string => [snapshot.bin.replaceAll('@', '').replaceAll(/[-/]/g, '_'), k].join('_').toUpperCase()
  return {
    name: snapshot.name,
    bin: snapshot.bin,
    version: snapshot.version,
    // oclif's getPlatform() also says `wsl`; Command only hands this to globalThis['http-call'], which meshvm never reads.
    userAgent: `${snapshot.name}/${snapshot.version} ${process.platform}-${process.arch === 'ia32' ? 'x86' : process.arch} node-${process.version}`,
    topicSeparator: ' ' as const,
    flexibleTaxonomy: false,
    isSingleCommandCLI: false,
    commandIDs: snapshot.commandIDs,
    findCommand: (id: string) => (Object.hasOwn(snapshot.commands, id) ? {id, ...snapshot.commands[id]} : undefined),
    scopedEnvVarKey,
    scopedEnvVarKeys: (k: string): string[] => [scopedEnvVarKey(k)],
    scopedEnvVar: (k: string): string | undefined => process.env[scopedEnvVarKey(k)],
    runHook: async () => ({successes: [], failures: []}),
  }
}
