import * as Flags from '@oclif/core/flags'
import {BaseCommand} from '../../lib/cli/base-command.js'
import {statusColor} from '../../lib/output/color.js'
import {resourceName, toJson} from '../../lib/output/render.js'
import {toYaml} from '../../lib/yaml.js'
import {listingFlags, noHeadersFlag, outputFlag} from '../../lib/war/flags.js'
import type {Listed, ListQuery, ListState} from '../../lib/war/fetch.js'

export default class WarList extends BaseCommand<typeof WarList> {
  static override summary = 'List workload registrations: WorkloadAutoRegistrations and auto-registered WorkloadEntries.'

  static override description = `Like kubectl get war: NAMESPACE (with -A), NAME, AGENT CONNECTED and AGE. -o wide adds GROUP, IDENTITY (aws/ec2, aws/ecs, gcp/gce, azure/compute, jwt or serviceaccount), ADDRESSES, AGENT and SIDECAR versions, CONNECTED-TO (onboarding plane or istiod instance), STALE (the registration was made from an older version of its WorkloadGroup: "meshvm war rollout GROUP" re-onboards it) and SOURCE.

Rows come from Tetrate WorkloadAutoRegistrations when their CRD is installed, and from the WorkloadEntries istiod auto-registered (see --source). Without the CRD only WorkloadEntries are shown, with a note on stderr. Identity keys are read in both spellings (task_id and taskId).

The list is read in pages of --chunk-size objects and printed as it arrives, so long lists start at once and never sit in memory whole. Table column widths come from the first --chunk-size rows (all rows, for a shorter list); a wider value after those widens its column from there on, as with kubectl. A list whose continue token expires (410 Gone) restarts without repeating rows. -o json|yaml print the objects as a kubectl List; -o name prints kind.group/name. --watch keeps printing a row (or object) for every change after the list.`

  static override examples = [
    {description: 'Registrations in a namespace:', command: '<%= config.bin %> <%= command.id %> -n bookinfo'},
    {description: 'Everywhere, with identities, versions and staleness:', command: '<%= config.bin %> <%= command.id %> -A -o wide'},
    {description: 'One group, then keep watching:', command: '<%= config.bin %> <%= command.id %> -n bookinfo --group ratings --watch'},
    {description: 'Only Istio auto-registered WorkloadEntries, as YAML:', command: '<%= config.bin %> <%= command.id %> -n apps --source workloadentry -o yaml'},
  ]

  static override flags = {
    ...listingFlags,
    output: outputFlag,
    'no-headers': noHeadersFlag,
    watch: Flags.boolean({char: 'w', summary: 'After listing, print every change (Ctrl-C to stop).'}),
  }

  async run(): Promise<void> {
    const f = this.flags
    const session = await this.session()
    const allNamespaces = f['all-namespaces']
    const namespace = allNamespaces ? undefined : session.namespace
    const format = f.output
    const wide = format === 'wide'
    const {CRD_MISSING_NOTE, fetchGroups, listRegistrations, watchRegistrations} = await import('../../lib/war/fetch.js')
    const {warColumns} = await import('../../lib/war/model.js')
    const {StreamingTable} = await import('../../lib/war/stream-table.js')
    const {ListWriter} = await import('../../lib/war/stream-list.js')
    const {drained} = await import('../../lib/war/stream-drain.js')
    const q: ListQuery = {namespace, labelSelector: f.selector, group: f.group, source: f.source, chunkSize: f['chunk-size']}
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
      const chalk = this.chalkFor(format)
      // One Date, moved forward for --watch rows, so AGE stays current.
      const now = new Date()
      const table = new StreamingTable(warColumns(wide, allNamespaces, now, (s) => statusColor(chalk, s)), {wide, noHeaders: f['no-headers'], bufferRows: f['chunk-size']}, (t) => this.out(t))
      const list = (format === 'json' || format === 'yaml') && !f.watch ? new ListWriter(format, (t) => this.out(t)) : undefined
      let documents = 0
      const print = (page: Listed[]): void => {
        if (format === 'table' || format === 'wide') table.add(page.map((l) => l.registration))
        else if (format === 'name') this.out(page.map((l) => resourceName(l.object) + '\n').join(''))
        else if (list) list.add(page.map((l) => l.object))
        else {
          // --watch with -o json|yaml: one document per object, as kubectl prints them.
          for (const l of page) this.out(format === 'json' ? toJson(l.object) : `${documents++ > 0 ? '---\n' : ''}${toYaml(l.object)}`)
        }
      }
      let count = 0
      let noted = false
      for await (const page of listRegistrations(session.client, q, state)) {
        if (state.warServed === false && !noted && f.source === 'all') {
          noted = true
          this.note(`Note: ${CRD_MISSING_NOTE}.`)
        }
        count += page.length
        print(page)
        const wait = drained() // stdout back-pressure: the next page is read when this one was taken
        if (wait) await wait
      }
      list?.finish()
      table.flush()
      if (count === 0 && !list) {
        const scope = namespace === undefined ? '' : ` in namespace ${namespace}`
        this.note(`No registrations found${scope}${f.group === undefined ? '' : ` for workloadgroup ${f.group}`}.`)
      }
      if (!f.watch) return
      const controller = new AbortController()
      await watchRegistrations(
        session.client,
        q,
        state,
        (change) => {
          now.setTime(Date.now())
          print([change])
        },
        controller.signal,
      )
    } finally {
      session.client.close()
    }
  }
}
