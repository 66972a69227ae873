import * as Flags from '@oclif/core/flags'
import {BaseCommand} from '../../lib/cli/base-command.js'
import {ExitCode, MeshvmError} from '../../lib/errors.js'
import {age} from '../../lib/output/age.js'
import {asList, renderData, resourceName} from '../../lib/output/render.js'
import {renderTable} from '../../lib/output/table.js'
import {durationFlag, listingFlags, noHeadersFlag, outputFlag} from '../../lib/war/flags.js'
import type {ListState} from '../../lib/war/fetch.js'
import type {PruneOutcome} from '../../lib/war/prune.js'

export default class WarPrune extends BaseCommand<typeof WarPrune> {
  static override summary = 'List, and with --yes delete, registrations whose agent has been disconnected for longer than a grace period.'

  static override description = `Finds WorkloadAutoRegistrations whose AgentConnected condition has been False for longer than --grace-period, and auto-registered WorkloadEntries whose istio.io/disconnectedAt annotation is older than that: registrations of VMs that are gone. The default grace period, 5m, is TSB's own (after it, the onboarding plane treats a silent workload as gone); istiod's own for WorkloadEntries is 10s.

Without --yes the candidates are only listed (columns [NAMESPACE] NAME SOURCE GROUP DISCONNECTED AGE; wide adds IDENTITY and ADDRESSES). With --yes each is read again and deleted only if it is still disconnected for that long (UID and resourceVersion preconditions), so a VM that reconnects keeps its registration. Exit 7 when some deletes failed and others succeeded.`

  static override examples = [
    {description: 'What would be pruned, everywhere:', command: '<%= config.bin %> <%= command.id %> -A'},
    {description: 'Delete registrations disconnected for more than an hour in one namespace:', command: '<%= config.bin %> <%= command.id %> -n bookinfo --grace-period 1h --yes'},
    {description: 'Names only, for scripts:', command: '<%= config.bin %> <%= command.id %> -n apps -o name'},
  ]

  static override flags = {
    ...listingFlags,
    'grace-period': Flags.string({summary: 'How long an agent must have been disconnected (e.g. 30s, 5m, 1h).', default: '5m'}),
    yes: Flags.boolean({char: 'y', summary: 'Delete the registrations found (otherwise they are only listed).'}),
    output: outputFlag,
    'no-headers': noHeadersFlag,
  }

  async run(): Promise<void> {
    const f = this.flags
    const gracePeriodMs = durationFlag('--grace-period', f['grace-period'], {allowZero: true})
    const grace = f['grace-period']
    const session = await this.session()
    const allNamespaces = f['all-namespaces']
    const namespace = allNamespaces ? undefined : session.namespace
    const format = f.output
    try {
      const {CRD_MISSING_NOTE, kindName} = await import('../../lib/war/fetch.js')
      const {findPrunable, prune, pruneColumns} = await import('../../lib/war/prune.js')
      const state: ListState = {resourceVersions: {}}
      const now = new Date()
      const candidates = await findPrunable(session.client, {namespace, labelSelector: f.selector, group: f.group, source: f.source, chunkSize: f['chunk-size'], gracePeriodMs}, state, now)
      if (state.warServed === false && f.source === 'all') this.note(`Note: ${CRD_MISSING_NOTE}.`)
      const scope = namespace === undefined ? '' : ` in namespace ${namespace}`
      if (candidates.length === 0) {
        if (format === 'json' || format === 'yaml') this.out(renderData(asList([]), format) as string)
        this.note(`No registrations${scope} have been disconnected for longer than ${grace}.`)
        return
      }
      if (!f.yes) {
        if (format === 'table' || format === 'wide') {
          this.out(renderTable(candidates.map((c) => c.registration), pruneColumns(allNamespaces, now, (ts, n) => age(ts, n)), {wide: format === 'wide', noHeaders: f['no-headers']}))
        } else if (format === 'name') this.out(candidates.map((c) => resourceName(c.object) + '\n').join(''))
        else this.out(renderData(asList(candidates.map((c) => c.object)), format) as string)
        this.note(`${candidates.length} registration(s)${scope} have been disconnected for longer than ${grace}; run again with --yes to delete them.`)
        return
      }
      const report = (o: PruneOutcome): void => {
        const name = o.listed.object.metadata?.name ?? ''
        const ns = o.listed.object.metadata?.namespace ?? ''
        const kind = kindName(o.listed.source)
        if (o.result === 'deleted') {
          if (format === 'name') this.out(resourceName(o.listed.object) + '\n')
          else if (format === 'table' || format === 'wide') this.out(`${kind} "${name}" deleted${allNamespaces ? ` from namespace ${ns}` : ''}\n`)
        } else if (o.result === 'reconnected') this.note(`Kept ${kind} "${name}": its agent reconnected.`)
        else if (o.result === 'gone') this.note(`Skipped ${kind} "${name}": it was already deleted or replaced.`)
        else this.note(`Error: ${kind} "${name}" not deleted: ${o.error?.message ?? 'unknown error'}`)
      }
      const outcomes = await prune(session.client, candidates, gracePeriodMs, report)
      const deleted = outcomes.filter((o) => o.result === 'deleted')
      if (format === 'json' || format === 'yaml') this.out(renderData(asList(deleted.map((o) => o.listed.object)), format) as string)
      const failed = outcomes.filter((o) => o.result === 'failed')
      this.note(`Pruned ${deleted.length} of ${candidates.length} registration(s) disconnected for longer than ${grace}.`)
      if (failed.length > 0) {
        const first = failed[0]!.error!
        throw new MeshvmError(`${failed.length} of ${candidates.length} registration(s) not deleted: ${first.message}`, {
          exit: deleted.length > 0 ? ExitCode.PARTIAL : first.exit,
          code: first.code,
          hints: first.hints,
        })
      }
    } finally {
      session.client.close()
    }
  }
}
