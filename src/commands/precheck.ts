import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import {BaseCommand, OUTPUT_GROUP} from '../lib/cli/base-command.js'
import {ExitCode, MeshvmError} from '../lib/errors.js'
import {statusColor} from '../lib/output/color.js'
import {renderData} from '../lib/output/render.js'
import {renderTable} from '../lib/output/table.js'
import type {CheckResult} from '../lib/precheck/checks.js'

export default class Precheck extends BaseCommand<typeof Precheck> {
  static override summary = 'Check that the cluster is ready for VMs to join the mesh.'

  static override description = `Read-only checks, each pass, warn or fail with a hint:
  • istiod is running (for --revision, when given);
  • workload entry auto-registration and health checks are not disabled in the istiod Deployment;
  • the east-west gateway Service exposes 15012, 15017 and 15443 and has an address;
  • the WorkloadGroup NAME exists and a Service or ServiceEntry selects its labels (when NAME is given);
  • ConfigMap istio-ca-root-cert exists in the namespace; the service account exists;
  • you may issue VM tokens and apply the manifests (SelfSubjectAccessReview).
Exits 8 when a check fails, 0 otherwise (warnings included).`

  static override examples = [
    '<%= config.bin %> <%= command.id %> web -n apps',
    '<%= config.bin %> <%= command.id %> -n apps --service-account web-vm -r canary -o json',
  ]

  static override args = {
    name: Args.string({description: 'WorkloadGroup to check (optional).', required: false, ignoreStdin: true}),
  }

  static override flags = {
    'service-account': Flags.string({char: 's', summary: 'Service account the VMs use, when no NAME is given.', default: 'default'}),
    'ingress-service': Flags.string({summary: 'Service (NAME or NAME.NAMESPACE) of the east-west gateway.', default: 'istio-eastwestgateway'}),
    'ingress-ip': Flags.string({summary: 'Address of the east-west gateway, when the Service has none.'}),
    output: Flags.option({char: 'o', summary: 'Output format.', options: ['table', 'json', 'yaml'] as const, default: 'table', helpGroup: OUTPUT_GROUP})(),
  }

  async run(): Promise<void> {
    const f = this.flags
    const session = await this.session()
    let results: CheckResult[]
    try {
      const {runPrechecks} = await import('../lib/precheck/checks.js')
      results = await runPrechecks(session.client, {
        namespace: session.namespace, istioNamespace: session.istioNamespace, revision: session.revision, group: this.args.name,
        serviceAccount: f['service-account'], ingressService: f['ingress-service'], ingressIp: f['ingress-ip'],
      })
    } finally {
      session.client.close()
    }
    if (f.output === 'table') {
      const chalk = this.chalkFor('table')
      this.out(
        renderTable(results, [
          {header: 'CHECK', value: (r) => r.check},
          {header: 'STATUS', value: (r) => r.status.toUpperCase(), color: (t) => statusColor(chalk, t)},
          {header: 'MESSAGE', value: (r) => r.message},
        ]),
      )
      for (const r of results.filter((x) => x.hint)) this.note(`${r.status === 'fail' ? 'Fix' : 'Hint'} (${r.check}): ${r.hint}`)
    } else {
      this.out(renderData({checks: results, failed: results.filter((r) => r.status === 'fail').length}, f.output) as string)
    }
    const failed = results.filter((r) => r.status === 'fail')
    if (failed.length > 0) {
      throw new MeshvmError(`${failed.length} of ${results.length} checks failed: ${failed.map((r) => r.check).join(', ')}`, {exit: ExitCode.CHECK_FAILED, code: 'ChecksFailed'})
    }
  }
}
