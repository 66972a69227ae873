import * as Flags from '@oclif/core/flags'
import {BaseCommand} from '../../lib/cli/base-command.js'
import {outputFlags, printOptions} from '../../lib/cli/output-flags.js'
import {statusColor} from '../../lib/output/color.js'
import {byNamespaceThenName, onRows, Printer} from '../../lib/output/printer.js'
import {labelSelectorFlag, listingFlags, WAR_OUTPUT_KINDS} from '../../lib/war/flags.js'
import type {Listed, ListQuery, ListState} from '../../lib/war/fetch.js'

export default class WarList extends BaseCommand<typeof WarList> {
  static override summary = 'List workload registrations: WorkloadAutoRegistrations and auto-registered WorkloadEntries.'

  static override description =
    `Like kubectl get war: NAMESPACE (with -A), NAME, AGENT CONNECTED and AGE. -o wide adds GROUP, IDENTITY (aws/ec2, aws/ecs, gcp/gce, azure/compute, jwt or serviceaccount), ADDRESSES, AGENT and SIDECAR versions, CONNECTED-TO (onboarding plane or istiod instance), STALE (the registration was made from an older version of its WorkloadGroup: "meshvm war rollout GROUP" re-onboards it), TUNNEL (the WorkloadEntry's HBONE tunnel label networking.istio.io/tunnel, which Istio 1.31 puts on the entries it creates for HBONE-capable proxies; "-" for WARs, whose entry the list does not read), WAYPOINT (the entry's WaypointBound condition) and SOURCE.

Rows come from Tetrate WorkloadAutoRegistrations when their CRD is installed, and from the WorkloadEntries istiod auto-registered (see --source). Without the CRD only WorkloadEntries are shown, with a note on stderr. Identity keys are read in both spellings (task_id and taskId).

The list is read in pages of --chunk-size objects and printed as it arrives, so long lists start at once and never sit in memory whole. Table column widths come from the first --chunk-size rows (all rows, for a shorter list); a wider value after those widens its column from there on, as with kubectl. A list whose continue token expires (410 Gone) restarts without repeating rows. -o json|yaml print the objects as a kubectl List; -o name prints kind.group/name (which war describe and war delete accept back); -o jsonpath=…, -o jsonpath-as-json=… and -o custom-columns=… take kubectl's JSONPath templates. With -A, table rows are ordered by namespace, then name, across both kinds (machine formats stream in the API server's order, each kind by namespace and name); --sort-by orders them by any field. Both hold the list until it is complete. --watch keeps printing a row (or object) for every change after the list.`

  static override examples = [
    {description: 'Registrations in a namespace:', command: '<%= config.bin %> <%= command.id %> -n bookinfo'},
    {description: 'Everywhere, with identities, versions and staleness:', command: '<%= config.bin %> <%= command.id %> -A -o wide'},
    {description: 'One group, then keep watching:', command: '<%= config.bin %> <%= command.id %> -n bookinfo --group ratings --watch'},
    {description: 'Only Istio auto-registered WorkloadEntries, as YAML:', command: '<%= config.bin %> <%= command.id %> -n apps --source workloadentry -o yaml'},
    {description: 'Names only, fed back to another command:', command: '<%= config.bin %> <%= command.id %> -n apps -o name | xargs <%= config.bin %> war delete -n apps --dry-run=client'},
    {
      description: "kubectl's JSONPath and custom columns:",
      command: `<%= config.bin %> <%= command.id %> -A -o custom-columns=NS:.metadata.namespace,NAME:.metadata.name --sort-by=.metadata.creationTimestamp`,
    },
  ]

  static override flags = {
    ...listingFlags,
    ...outputFlags(WAR_OUTPUT_KINDS),
    watch: Flags.boolean({char: 'w', summary: 'After listing, print every change (Ctrl-C to stop).'}),
  }

  async run(): Promise<void> {
    const f = this.flags
    const print = printOptions(f, WAR_OUTPUT_KINDS)
    const labelSelector = labelSelectorFlag(f.selector)
    const session = await this.session()
    const allNamespaces = f['all-namespaces']
    const namespace = allNamespaces ? undefined : session.namespace
    const wide = print.output.kind === 'wide'
    const {CRD_MISSING_NOTE, fetchGroups, listRegistrations, watchRegistrations} = await import('../../lib/war/fetch.js')
    const {warColumns} = await import('../../lib/war/model.js')
    const {drained} = await import('../../lib/output/drain.js')
    const {capYoungGeneration} = await import('../../lib/output/young-generation.js')
    const q: ListQuery = {namespace, labelSelector, group: f.group, source: f.source, chunkSize: f['chunk-size']}
    const state: ListState = {resourceVersions: {}}
    try {
      if (wide) {
        // STALE compares each registration with its group's current spec.
        try {
          q.groups = await fetchGroups(session.client, namespace)
        } catch (err) {
          this.warning(`${(err as Error).message}: the STALE column is not computed`)
        }
      }
      const chalk = this.chalkFor(print.output.kind)
      // One Date, moved forward for --watch rows, so AGE stays current.
      const now = new Date()
      const color = (s: string): string => statusColor(chalk, s)
      const printer = new Printer<Listed>(
        {
          // Without -o wide a row needs only the registration's summary (no identity, addresses, versions or owner).
          columns: wide ? onRows(warColumns(true, allNamespaces, now, color), (l: Listed) => l.registration) : onRows(warColumns(false, allNamespaces, now, color), (l: Listed) => l.summary),
          object: (l) => l.object,
          // -A tables are ordered by namespace, then name, across both kinds (holding each row rendered). Machine
          // formats stream in the API server's order, each kind by namespace and name, as `kubectl get
          // war,we -A -o json` does, so memory stays flat however long the list.
          order: allNamespaces && (print.output.kind === 'table' || print.output.kind === 'wide') ? byNamespaceThenName((l: Listed) => l.summary) : undefined,
        },
        {...print, bufferRows: f['chunk-size'], watch: f.watch},
        (t) => this.out(t),
      )
      let noted = false
      for await (const page of listRegistrations(session.client, q, state)) {
        if (state.warServed === false && !noted && f.source === 'all') {
          noted = true
          this.note(`Note: ${CRD_MISSING_NOTE}.`)
        }
        printer.add(page)
        // Node 24 would let a long list's young generation grow to four times Node 20's size.
        capYoungGeneration()
        const wait = drained() // stdout back-pressure: the next page is read when this one was taken
        if (wait) await wait
      }
      if (printer.count === 0 && print.output.kind !== 'json' && print.output.kind !== 'yaml') {
        const scope = namespace === undefined ? '' : ` in namespace ${namespace}`
        this.note(`No registrations found${scope}${f.group === undefined ? '' : ` for workloadgroup ${f.group}`}.`)
      }
      printer.finish()
      if (!f.watch) return
      const controller = new AbortController()
      await watchRegistrations(
        session.client,
        q,
        state,
        (change) => {
          now.setTime(Date.now())
          printer.add([change])
        },
        controller.signal,
      )
    } finally {
      session.client.close()
    }
  }
}
