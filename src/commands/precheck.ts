import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import {BaseCommand} from '../lib/cli/base-command.js'
import {outputFlags, printOptions} from '../lib/cli/output-flags.js'
import {ExitCode, MeshvmError} from '../lib/errors.js'
import {statusColor} from '../lib/output/color.js'
import {Printer} from '../lib/output/printer.js'
import {terminalSafe} from '../lib/output/terminal.js'
import type {CheckResult} from '../lib/precheck/checks.js'

const OUTPUT_KINDS = ['table', 'wide', 'json', 'yaml', 'jsonpath', 'jsonpath-as-json', 'custom-columns'] as const

export default class Precheck extends BaseCommand<typeof Precheck> {
  static override summary = 'Check that the cluster is ready for VMs to join the mesh.'

  static override description = `Read-only checks, each pass, warn or fail with a hint:
  • the namespace exists (when it does not, it says so, and how to create it);
  • istiod is running and answers: the istiod of --revision, else of the revision the default tag points to (istio-revision-tag-default, as istioctl 1.28), else the un-revisioned one (istio.io/rev absent or "default"); other revisions never stand in for it;
  • workload entry auto-registration and health checks are not disabled in the istiod Deployment;
  • the east-west gateway Service is a classic (sidecar) one that exposes 15012, 15017 and 15443 and has an address; an ambient east-west gateway (class istio-east-west, HBONE on 15008) fails, with the fix, because VMs join as sidecars;
  • the WorkloadGroup NAME exists and a Service or ServiceEntry selects its labels (when NAME is given);
  • ConfigMap istio-ca-root-cert exists in the namespace; the service account exists;
  • you may issue VM tokens, apply the manifests and take war rollout's Lease (create, get, update leases.coordination.k8s.io; SelfSubjectAccessReview).
Exits 8 when a check fails, 0 otherwise (warnings included).`

  static override examples = [
    '<%= config.bin %> <%= command.id %> web -n apps',
    '<%= config.bin %> <%= command.id %> -n apps --service-account web-vm -r canary -o json',
    {description: 'Only the failed checks, by name:', command: `<%= config.bin %> <%= command.id %> web -n apps -o jsonpath='{range .checks[?(@.status=="fail")]}{.check}{"\\n"}{end}'`},
  ]

  static override args = {
    name: Args.string({description: 'WorkloadGroup to check (optional).', required: false, ignoreStdin: true}),
  }

  static override flags = {
    'service-account': Flags.string({char: 's', summary: 'Service account the VMs use, when no NAME is given.', default: 'default'}),
    'ingress-service': Flags.string({summary: 'Service (NAME or NAME.NAMESPACE) of the east-west gateway.', default: 'istio-eastwestgateway'}),
    'ingress-ip': Flags.string({summary: 'Address of the east-west gateway, when the Service has none.'}),
    ...outputFlags(OUTPUT_KINDS),
  }

  async run(): Promise<void> {
    const f = this.flags
    const print = printOptions(f, OUTPUT_KINDS)
    const session = await this.session()
    const {runPrechecks} = await import('../lib/precheck/checks.js')
    const results = await runPrechecks(session.client, {
      namespace: session.namespace,
      istioNamespace: session.istioNamespace,
      revision: session.revision,
      group: this.args.name,
      serviceAccount: f['service-account'],
      ingressService: f['ingress-service'],
      ingressIp: f['ingress-ip'],
    }).finally(() => session.client.close())
    const failed = results.filter((r) => r.status === 'fail')
    const chalk = this.chalkFor(print.output.kind)
    const printer = new Printer<CheckResult>(
      {
        columns: [
          {header: 'CHECK', value: (r) => r.check},
          {header: 'STATUS', value: (r) => r.status.toUpperCase(), color: (t) => statusColor(chalk, t)},
          {header: 'MESSAGE', value: (r) => r.message},
        ],
        object: (r) => r,
        document: (checks) => ({checks, failed: failed.length}),
      },
      print,
      (t) => this.out(t),
    )
    printer.add(results)
    printer.finish()
    if (print.output.kind === 'table' || print.output.kind === 'wide') {
      for (const r of results.filter((x) => x.hint)) this.note(terminalSafe(`${r.status === 'fail' ? 'Fix' : 'Hint'} (${r.check}): ${r.hint}`))
    }
    if (failed.length > 0) throw new MeshvmError(`${failed.length} of ${results.length} checks failed: ${failed.map((r) => r.check).join(', ')}`, {exit: ExitCode.CHECK_FAILED, code: 'ChecksFailed'})
  }
}
