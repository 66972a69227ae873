/**
 * Commands that read several clusters at once (proxy-status, remote-secret list/status, war reconcile): a
 * repeatable --context that replaces BaseCommand's single one, and the names it resolves to.
 * No Kubernetes client here (the kubeconfig is only read for --all-contexts).
 */
import * as Flags from '@oclif/core/flags'
import type * as Interfaces from '@oclif/core/interfaces'
import {inHelpGroup, KUBE_GROUP, type commonOutputFlags, type kubeFlags} from './base-command.js'
import {ExitCode, flagError, MeshvmError} from '../errors.js'

export const multiContextFlags = inHelpGroup(KUBE_GROUP, {
  context: Flags.string({
    summary: 'Kubeconfig context to read (default: the current context). Repeatable, or comma-separated: several clusters at once.',
    multiple: true,
    multipleNonGreedy: true,
  }),
  'all-contexts': Flags.boolean({summary: 'Read every context of the kubeconfig.', exclusive: ['context']}),
})

/** The parsed flags of a command whose own flags `F` (with multiContextFlags) replace BaseCommand's single --context. */
export type MultiContextFlagValues<F extends Interfaces.FlagInput> = Omit<Interfaces.InferredFlags<typeof kubeFlags & typeof commonOutputFlags>, 'context'> & Interfaces.InferredFlags<F>

/** The contexts asked for (oclif refuses --all-contexts with --context); `undefined` stands for the kubeconfig's current context. */
export async function contextNames(flag: string[] | undefined, all: boolean, kubeconfig: string | undefined): Promise<(string | undefined)[]> {
  if (all) {
    const {kubeconfigContexts} = await import('../kube/config.js')
    const names = kubeconfigContexts({kubeconfig}).sort()
    if (names.length === 0) throw new MeshvmError('--all-contexts: the kubeconfig has no contexts', {exit: ExitCode.NOT_FOUND, code: 'NoContext'})
    return names
  }
  if (flag && flag.length > 0) {
    const names = flag.flatMap((c) => c.split(',')).map((c) => c.trim())
    if (names.some((n) => n === '')) throw flagError('--context', flag.join(','), 'context names must not be empty')
    return [...new Set(names)]
  }
  return [undefined]
}
