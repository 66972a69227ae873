/**
 * The base of every meshvm command: shared flags, one parse, one colour policy, and errors left to
 * the top level (src/main.ts) so every failure is printed the same way.
 */
import {Command} from '@oclif/core/command'
import * as Flags from '@oclif/core/flags'
import type * as Interfaces from '@oclif/core/interfaces'
import type {ChalkInstance} from 'chalk'
import type {KubeSession} from '../kube/session.js'
import {makeChalk} from '../output/color.js'
import {terminalSafeLines} from '../output/terminal.js'
import {processSink, type Sink} from '../output/render.js'
import {bareDryRunIsClient} from './dry-run.js'
import {applyEmptyValueRule, type FlagShape} from './empty-values.js'
import {keepInvocation} from './invocation.js'
import {ranCommand} from './ran-command.js'
import {UsageError} from '../errors.js'
import {MAX_DURATION_MS, parseDuration} from '../validation/kube.js'

/**
 * The one duration flag type for waits (time-outs, intervals): "10s", "1m30s", "500ms", "2h" or plain
 * seconds, parsed to ms; zero, negative and values beyond what Node's timers hold (2^31-1 ms, about
 * 24.8 days) are usage errors.
 */
function durationFlagType(allowZero: boolean) {
  return Flags.custom<number>({
    parse: async (input, _ctx, opts) => {
      const ms = parseDuration(input)
      if (ms === undefined || ms < 0 || (ms === 0 && !allowZero) || ms > MAX_DURATION_MS) {
        throw new UsageError(`--${opts.name} ${JSON.stringify(input)}: expected a duration such as 10s, 1m or 500ms${allowZero ? ' (0 allowed)' : ''}, at most 596h (24.8 days)`)
      }
      return ms
    },
  })
}
export const durationFlag = durationFlagType(false)
/** The same, for durations where 0 means "none" (a grace period, not waiting at all). */
export const durationOrZeroFlag = durationFlagType(true)

export type BaseFlags<T extends typeof Command> = Interfaces.InferredFlags<(typeof BaseCommand)['baseFlags'] & T['flags']>
export type BaseArgs<T extends typeof Command> = Interfaces.InferredArgs<T['args']>

export const KUBE_GROUP = 'KUBERNETES'
export const OUTPUT_GROUP = 'OUTPUT'

/** `flags`, each shown under `group` in help. */
export function inHelpGroup<F extends Record<string, {helpGroup?: string}>>(group: string, flags: F): F {
  for (const flag of Object.values(flags)) flag.helpGroup = group
  return flags
}

/** Flags every command understands. Cluster commands use them; offline commands ignore them. */
export const kubeFlags = inHelpGroup(KUBE_GROUP, {
  kubeconfig: Flags.string({summary: 'Path to the kubeconfig file (default: $KUBECONFIG, then ~/.kube/config).'}),
  context: Flags.string({summary: 'The kubeconfig context to use (default: the current context).'}),
  namespace: Flags.string({char: 'n', summary: 'Namespace (default: the context namespace, then "default").', env: 'MESHVM_NAMESPACE'}),
  'istio-namespace': Flags.string({
    char: 'i',
    summary: 'Namespace where the Istio control plane runs.',
    default: 'istio-system',
    env: 'MESHVM_ISTIO_NAMESPACE',
    aliases: ['istioNamespace'],
  }),
  revision: Flags.string({char: 'r', summary: 'Istio control-plane revision (e.g. 1-24-6 or canary).'}),
  'request-timeout': durationFlag({
    summary: 'Time to wait for one API request, its whole answer included, before retrying or giving up (e.g. 10s, 1m).',
    default: 30_000,
    defaultHelp: async () => '30s',
  }),
})

export const commonOutputFlags = inHelpGroup(OUTPUT_GROUP, {
  'no-color': Flags.boolean({summary: 'Disable coloured output (also honoured: NO_COLOR, TERM=dumb).'}),
  debug: Flags.boolean({
    summary: 'Print each API request (method, path, status, time, size; never headers or bodies) and retry on stderr, and the stack trace of internal errors (also: DEBUG=meshvm).',
  }),
})

export abstract class BaseCommand<T extends typeof Command> extends Command {
  static override baseFlags = {...kubeFlags, ...commonOutputFlags}

  protected flags!: BaseFlags<T>
  protected args!: BaseArgs<T>
  protected sink: Sink = processSink

  public override async init(): Promise<void> {
    ranCommand.id = this.id
    await super.init()
    const allFlags = {...(super.ctor as typeof BaseCommand).baseFlags, ...this.ctor.flags}
    // An empty value (`-n "$NS"`, NS unset) means what kubectl makes of it, or is refused: one rule for every flag.
    this.argv = applyEmptyValueRule(this.argv, allFlags as Record<string, FlagShape>)
    if ((this.ctor.flags as Record<string, {type?: string}> | undefined)?.['dry-run']?.type === 'option') this.argv = bareDryRunIsClient(this.argv)
    const {args, flags} = await this.parse({
      flags: this.ctor.flags,
      baseFlags: (super.ctor as typeof BaseCommand).baseFlags,
      args: this.ctor.args,
      strict: this.ctor.strict,
    })
    this.flags = flags as BaseFlags<T>
    this.args = args as BaseArgs<T>
  }

  /**
   * A session with the cluster named by --kubeconfig/--context. The Kubernetes client is imported
   * here, lazily, so commands that never call this never load it.
   */
  protected async session(context?: string): Promise<KubeSession> {
    const {openSession} = await import('../kube/session.js')
    return openSession(this.flags as Parameters<typeof openSession>[0], {context})
  }

  /** Colours for a stream and format; always goes through the one policy in output/color.ts. */
  protected chalkFor(format?: string, stream: {isTTY?: boolean} = process.stdout): ChalkInstance {
    return makeChalk({noColor: (this.flags as {'no-color'?: boolean})['no-color'], format, stream})
  }

  /** Data: stdout. */
  protected out(text: string): void {
    this.sink.out(text)
  }

  /** Suggested command lines keep the user's --kubeconfig/--context/-n (and `kubectl meshvm` as a plugin). */
  protected keepInvocation(text: string): string {
    return keepInvocation(
      text,
      this.config.commandIDs.map((id) => id.replaceAll(':', ' ')),
    )
  }

  /** Progress, warnings and notes: stderr, so pipes carry only data. */
  protected note(text: string): void {
    text = this.keepInvocation(text)
    // Notes and warnings quote names and server messages: no control character reaches the terminal.
    const safe = terminalSafeLines(text)
    this.sink.err(safe.endsWith('\n') ? safe : safe + '\n')
  }

  protected warning(text: string): void {
    this.note(`Warning: ${text}`)
  }

  /**
   * Runs `work` with a signal that Ctrl-C (and SIGTERM) aborts instead of killing the process, so the
   * step in progress finishes and the command reports what was and was not done (exit 130).
   * `note`, when given, is printed on stderr at the interruption.
   */
  protected async interruptible<R>(note: string | undefined, work: (signal: AbortSignal) => Promise<R>): Promise<R> {
    const controller = new AbortController()
    const onSignal = (): void => {
      if (note && !controller.signal.aborted) this.note(note)
      controller.abort()
    }
    process.once('SIGINT', onSignal)
    process.once('SIGTERM', onSignal)
    try {
      return await work(controller.signal)
    } finally {
      process.removeListener('SIGINT', onSignal)
      process.removeListener('SIGTERM', onSignal)
    }
  }

  // Errors are printed by src/main.ts, in one format, with stable exit codes.
  protected override async catch(err: Error & {exitCode?: number}): Promise<unknown> {
    throw err
  }
}
