import * as Args from '@oclif/core/args'
import {BaseCommand} from '../../lib/cli/base-command.js'
import {registrationRefs} from '../../lib/war/flags.js'

export default class WarDescribe extends BaseCommand<typeof WarDescribe> {
  static override summary = 'Show the details of workload registrations, like kubectl describe.'

  static override description = `For each NAME (a WorkloadAutoRegistration, else an auto-registered WorkloadEntry, in -n):
  • identity (cloud instance, ECS task, JWT issuer/subject, or service account) and registration (agent and sidecar versions, host addresses, workload labels, connection);
  • the owner WorkloadGroup and whether the registration still matches its current spec; when it does not, the difference (snapshot → current group), which "meshvm war rollout GROUP" would apply;
  • the WorkloadEntry it owns, with its address and Healthy condition;
  • its conditions with their ages, and its Events.

Details meshvm may not read (forbidden) are left out with a warning.`

  static override examples = [
    '<%= config.bin %> <%= command.id %> ratings-aws-aws-123456789012-us-east-2b-ec2-i-1234567890abcdef0 -n bookinfo',
    {description: 'An auto-registered WorkloadEntry (Istio without Tetrate):', command: '<%= config.bin %> <%= command.id %> web-10.0.0.7 -n apps'},
    {description: 'Every registration war list finds:', command: '<%= config.bin %> war list -n apps -o name | xargs <%= config.bin %> <%= command.id %> -n apps'},
  ]

  static override strict = false

  static override args = {
    name: Args.string({description: 'NAME or TYPE/NAME (as -o name prints it) of the registration; several may be given.', required: true, ignoreStdin: true}),
  }

  async run(): Promise<void> {
    const {argv} = await this.parse()
    const refs = registrationRefs(argv, 'war describe')
    const session = await this.session()
    try {
      const {describeDetails, findRegistration, warApiServed} = await import('../../lib/war/fetch.js')
      const {registrationFromWar, registrationFromWorkloadEntry} = await import('../../lib/war/model.js')
      const {describeRegistration} = await import('../../lib/war/describe.js')
      const warServed = await warApiServed(session.client)
      let first = true
      for (const ref of refs) {
        const found = await findRegistration(session.client, session.namespace, ref.name, warServed, ref.source)
        const details = await describeDetails(session.client, found, (t) => this.warning(t))
        const reg = found.source === 'war' ? registrationFromWar(found.object, details.group, details.workloadEntry) : registrationFromWorkloadEntry(found.object, details.group)
        // Printed as found, one blank line apart; a NAME that is not found stops here.
        this.out(`${first ? '' : '\n'}${describeRegistration(reg, details, new Date())}`)
        first = false
      }
    } finally {
      session.client.close()
    }
  }
}
