import * as Flags from '@oclif/core/flags'
import {BaseCommand, durationOrZeroFlag} from '../../lib/cli/base-command.js'
import {outputFlags, printOptions} from '../../lib/cli/output-flags.js'
import {flagDuration} from '../../lib/output/age.js'
import {byNamespaceThenName, onRows, Printer} from '../../lib/output/printer.js'
import {labelSelectorFlag, listingFlags, notDeletedError, WAR_OUTPUT_KINDS} from '../../lib/war/flags.js'
import type {Listed, ListState} from '../../lib/war/fetch.js'
import type {PruneOutcome} from '../../lib/war/prune.js'

export default class WarPrune extends BaseCommand<typeof WarPrune> {
  static override summary = 'List, and with --yes delete, registrations whose agent has been disconnected for longer than a grace period.'

  static override description =
    `Finds WorkloadAutoRegistrations whose AgentConnected condition has been False for longer than --grace-period, and auto-registered WorkloadEntries whose istio.io/disconnectedAt annotation is older than that: registrations of VMs that are gone. The default grace period, 5m, is TSB's own (after it, the onboarding plane treats a silent workload as gone); istiod's own for WorkloadEntries is 10s.

Without --yes the candidates are only listed (columns [NAMESPACE] NAME SOURCE GROUP DISCONNECTED AGE; wide adds IDENTITY and ADDRESSES). With --yes each is read again and deleted only if it is still disconnected for that long (UID and resourceVersion preconditions), so a VM that reconnects keeps its registration. Exit 7 when some deletes failed and others succeeded.`

  static override examples = [
    {description: 'What would be pruned, everywhere:', command: '<%= config.bin %> <%= command.id %> -A'},
    {description: 'Delete registrations disconnected for more than an hour in one namespace:', command: '<%= config.bin %> <%= command.id %> -n bookinfo --grace-period 1h --yes'},
    {description: 'Names only, for scripts:', command: '<%= config.bin %> <%= command.id %> -n apps -o name'},
  ]

  static override flags = {
    ...listingFlags,
    'grace-period': durationOrZeroFlag({summary: 'How long an agent must have been disconnected (e.g. 30s, 5m, 1h).', default: 300_000, defaultHelp: async () => '5m'}),
    yes: Flags.boolean({char: 'y', summary: 'Delete the registrations found (otherwise they are only listed).'}),
    ...outputFlags(WAR_OUTPUT_KINDS),
  }

  async run(): Promise<void> {
    const f = this.flags
    const gracePeriodMs = f['grace-period']
    const print = printOptions(f, WAR_OUTPUT_KINDS)
    const labelSelector = labelSelectorFlag(f.selector)
    const grace = flagDuration(gracePeriodMs)
    const session = await this.session()
    const allNamespaces = f['all-namespaces']
    const namespace = allNamespaces ? undefined : session.namespace
    const format = print.output.kind
    const human = format === 'table' || format === 'wide'
    try {
      const {CRD_MISSING_NOTE, kindName} = await import('../../lib/war/fetch.js')
      const {findPrunable, prune, pruneColumns} = await import('../../lib/war/prune.js')
      const state: ListState = {resourceVersions: {}}
      const now = new Date()
      const candidates = await findPrunable(session.client, {namespace, labelSelector, group: f.group, source: f.source, chunkSize: f['chunk-size'], gracePeriodMs}, state, now)
      if (state.warServed === false && f.source === 'all') this.note(`Note: ${CRD_MISSING_NOTE}.`)
      const scope = namespace === undefined ? '' : ` in namespace ${namespace}`
      // Candidates without --yes, the deleted ones with it (except in tables, where each delete is reported as a line).
      const printer = new Printer<Listed>(
        {
          columns: onRows(pruneColumns(allNamespaces, now), (l: Listed) => l.registration),
          object: (l) => l.object,
          order: allNamespaces ? byNamespaceThenName((l: Listed) => l.registration) : undefined,
        },
        print,
        (t) => this.out(t),
      )
      if (candidates.length === 0) {
        if (!human) printer.finish()
        this.note(`No registrations${scope} have been disconnected for longer than ${grace}.`)
        return
      }
      if (!f.yes) {
        printer.add(candidates)
        printer.finish()
        this.note(`${candidates.length} registration(s)${scope} have been disconnected for longer than ${grace}; run again with --yes to delete them.`)
        return
      }
      const report = (o: PruneOutcome): void => {
        const name = o.listed.object.metadata?.name ?? ''
        const ns = o.listed.object.metadata?.namespace ?? ''
        const kind = kindName(o.listed.source)
        if (o.result === 'deleted') {
          if (human) this.out(`${kind} "${name}" deleted${allNamespaces ? ` from namespace ${ns}` : ''}\n`)
          else printer.add([o.listed])
        } else if (o.result === 'reconnected') this.note(`Kept ${kind} "${name}": its agent reconnected.`)
        else if (o.result === 'gone') this.note(`Skipped ${kind} "${name}": it was already deleted or replaced.`)
        else this.note(`Error: ${kind} "${name}" not deleted: ${o.error?.message ?? 'unknown error'}`)
      }
      const outcomes = await prune(session.client, candidates, gracePeriodMs, report)
      const deleted = outcomes.filter((o) => o.result === 'deleted')
      if (!human) printer.finish()
      const failed = outcomes.filter((o) => o.result === 'failed')
      this.note(`Pruned ${deleted.length} of ${candidates.length} registration(s) disconnected for longer than ${grace}.`)
      if (failed.length > 0)
        throw notDeletedError(
          failed.map((o) => o.error!),
          candidates.length,
          deleted.length,
        )
    } finally {
      session.client.close()
    }
  }
}
