import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import {BaseCommand} from '../../lib/cli/base-command.js'
import {canPrompt, terminalPrompter} from '../../lib/cli/prompt.js'
import {MeshvmError, UsageError} from '../../lib/errors.js'
import type {Found} from '../../lib/war/fetch.js'
import {dryRunFlag} from '../../lib/cli/dry-run.js'
import {notDeletedError, registrationRefs} from '../../lib/war/flags.js'

const REONBOARD =
  "The onboarding agent on each VM re-onboards its workload: while it runs, it registers again within seconds and a new WorkloadAutoRegistration is made from the current WorkloadGroup. For an auto-registered WorkloadEntry, istiod re-creates it when the VM's sidecar reconnects. A VM that is gone does not come back."

export default class WarDelete extends BaseCommand<typeof WarDelete> {
  static override summary = 'Delete workload registrations, so their agents re-onboard them.'

  static override description =
    `Deletes each NAME (a WorkloadAutoRegistration, else an auto-registered WorkloadEntry, in -n); the API server also deletes the WorkloadEntry a WorkloadAutoRegistration owns. ${REONBOARD}

Every NAME is looked up first: if one does not exist, nothing is deleted. In a terminal meshvm asks for confirmation; elsewhere --yes is required. Deletes carry a UID precondition, so a registration re-created meanwhile is not deleted. To re-onboard a whole group safely, one VM at a time, use "meshvm war rollout GROUP"; to remove registrations of VMs that are gone, "meshvm war prune".`

  static override examples = [
    '<%= config.bin %> <%= command.id %> ratings-aws-aws-123456789012-us-east-2b-ec2-i-1234567890abcdef0 -n bookinfo',
    {description: 'Several, without a question (scripts):', command: '<%= config.bin %> <%= command.id %> web-10.0.0.7 web-10.0.0.8 -n apps --yes'},
    {description: 'Ask the API server what would happen, changing nothing:', command: '<%= config.bin %> <%= command.id %> web-10.0.0.7 -n apps --dry-run=server'},
    {
      description: 'What war list shows, as TYPE/NAME (see what would be deleted):',
      command: '<%= config.bin %> war list -n apps -o name | xargs <%= config.bin %> <%= command.id %> -n apps --dry-run=client',
    },
  ]

  static override strict = false

  static override args = {
    name: Args.string({description: 'NAME or TYPE/NAME (as -o name prints it) of the registration; several may be given.', required: true, ignoreStdin: true}),
  }

  static override flags = {
    yes: Flags.boolean({char: 'y', summary: 'Delete without asking (required when stdin or stdout is not a terminal).'}),
    'dry-run': dryRunFlag('client: look the registrations up and print what would be deleted; server: send the deletes as a server dry run. Either way nothing changes.'),
  }

  async run(): Promise<void> {
    const {argv} = await this.parse()
    const refs = registrationRefs(argv, 'war delete')
    const f = this.flags
    const dryRun = f['dry-run'] !== 'none'
    const session = await this.session()
    try {
      const {deleteRegistration, findRegistration, kindName, warApiServed} = await import('../../lib/war/fetch.js')
      const warServed = await warApiServed(session.client)
      const found: Found[] = []
      for (const ref of refs) found.push(await findRegistration(session.client, session.namespace, ref.name, warServed, ref.source))
      const listing = found.map((x) => `  ${kindName(x.source)}/${x.object.metadata?.name ?? ''}`).join('\n')
      if (!f.yes && !dryRun) {
        if (!canPrompt()) {
          throw new UsageError(`refusing to delete ${found.length} registration(s) without confirmation: pass --yes (there is no terminal to ask in)`, [
            'the agents re-onboard their workloads after a delete; "meshvm war rollout GROUP" does it one VM at a time',
          ])
        }
        this.note(`About to delete in namespace ${session.namespace}:\n${listing}\n\n${REONBOARD}\n`)
        const prompter = await terminalPrompter()
        const ok = await prompter.confirm(`Delete ${found.length} registration(s)?`, {default: false})
        if (!ok) {
          this.note('Nothing was deleted.')
          return
        }
      }
      let deleted = 0
      const failures: MeshvmError[] = []
      for (const x of found) {
        const name = x.object.metadata?.name ?? ''
        try {
          // client: found above, nothing is sent; server: the API server runs the delete with dryRun=All.
          const existed = f['dry-run'] === 'client' ? true : await deleteRegistration(session.client, x.source, x.object, {dryRun: f['dry-run'] === 'server'})
          if (existed) deleted++
          this.out(`${kindName(x.source)} "${name}" ${existed ? 'deleted' : 'was already gone'}${{none: '', client: ' (dry run)', server: ' (server dry run)'}[f['dry-run']]}\n`)
        } catch (err) {
          if (!(err instanceof MeshvmError)) throw err
          failures.push(err)
          // With one NAME the error below says it all; with several, each failure is named as it happens.
          if (found.length > 1) this.note(`${kindName(x.source)} "${name}" not deleted: ${err.message}`)
        }
      }
      if (f.yes && deleted > 0 && !dryRun) this.note(REONBOARD)
      if (failures.length > 0) throw notDeletedError(failures, found.length, deleted)
    } finally {
      session.client.close()
    }
  }
}
