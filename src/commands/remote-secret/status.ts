import * as Args from '@oclif/core/args'
import {BaseCommand, durationFlag} from '../../lib/cli/base-command.js'
import {ExitCode, MeshvmError} from '../../lib/errors.js'
import {terminalSafe} from '../../lib/output/terminal.js'
import type {MultiContextFlagValues} from '../../lib/cli/multi-context.js'
import {listingTargets, printRows, remoteSecretFlags} from '../../lib/remote-secret/print.js'
import type {RemoteSecretStatus} from '../../lib/remote-secret/status.js'

const flags = {
  ...remoteSecretFlags(
    `RemoteSecretStatusList schema (items with context, secret, cluster, server, reachable, denied, istiods[].syncStatus, verdict), e.g. -o jsonpath='{.items[?(@.verdict!="ok")].cluster}'`,
  ),
  timeout: durationFlag({summary: 'How long to wait for each remote API server and each istiod to answer (e.g. 10s).', default: 10_000, defaultHelp: async () => '10s'}),
}

export default class RemoteSecretStatusCommand extends BaseCommand<typeof RemoteSecretStatusCommand> {
  static override summary = 'Check that every remote secret still works: from here with its own credentials, and as istiod sees it.'

  static override description = `For each remote secret (label istio/multiCluster=true, in -i of each context), one row per cluster:
REACHABLE — its kubeconfig, used as it is (server, CA, token), gets an answer from the remote API server;
PERMISSIONS — SelfSubjectAccessReviews made with those same credentials: every read istiod needs is
allowed (or which are not); ISTIOD — what each running istiod of the context reports for that cluster in
its /debug/clusterz (read over port-forward: HTTP on the monitoring port, else xDS istio.io/debug/clusterz
on 15012 when HTTP debug is off, as proxy-status reads syncz): synced, syncing, timeout, closed, or
not-loaded when istiod does not know the cluster at all.

The exit code is 8 when any row fails (unreachable, a permission missing, or an istiod not synced).
The check connects from this machine: a server only istiod's cluster can reach shows as unreachable
here while istiod reports it synced.`

  static override examples = [
    {description: 'Every remote secret of two clusters:', command: '<%= config.bin %> <%= command.id %> --context east --context west'},
    {description: "One cluster's secret, as JSON:", command: '<%= config.bin %> <%= command.id %> istio-remote-secret-west --context east -o json'},
  ]

  static override args = {
    name: Args.string({description: 'Only this Secret (or the Secret holding this cluster name).', required: false, ignoreStdin: true}),
  }

  static override flags = flags
  declare protected flags: MultiContextFlagValues<typeof flags>

  async run(): Promise<void> {
    const f = this.flags
    const {print, human, contexts} = await listingTargets(f)
    const {remoteSecretStatus} = await import('../../lib/remote-secret/status.js')
    const rows: RemoteSecretStatus[] = []
    for (const c of contexts) {
      const session = await this.session(c)
      try {
        rows.push(
          ...(await remoteSecretStatus(session.client, {context: session.contextName, istioNamespace: session.istioNamespace, revision: session.revision, timeoutMs: f.timeout, only: this.args.name})),
        )
      } finally {
        session.client.close()
      }
    }
    if (this.args.name !== undefined && rows.length === 0) {
      throw new MeshvmError(`no remote secret ${JSON.stringify(this.args.name)} in namespace ${f['istio-namespace']}`, {
        exit: ExitCode.NOT_FOUND,
        code: 'NotFound',
        hints: ['list them: meshvm remote-secret list'],
      })
    }
    if (human && rows.length === 0) this.note(`No remote secrets (label istio/multiCluster=true) in namespace ${f['istio-namespace']}.`)
    else {
      const chalk = this.chalkFor(print.output.kind)
      printRows(
        rows,
        'RemoteSecretStatusList',
        [
          {header: 'REACHABLE', value: (r) => (r.reachable ? 'yes' : 'no'), color: (t) => (t === 'yes' ? chalk.green(t) : chalk.red(t))},
          {
            header: 'PERMISSIONS',
            value: (r) => (!r.reachable ? '-' : r.denied.length === 0 ? 'ok' : `missing ${r.denied.length}`),
            color: (t) => (t === 'ok' ? chalk.green(t) : t === '-' ? t : chalk.red(t)),
          },
          {header: 'ISTIOD', value: (r) => (r.istiods.length === 0 ? 'no istiod' : r.istiods.map((i) => (i.error ? 'error' : i.syncStatus)).join(','))},
          {header: 'SERVER', wide: true, value: (r) => r.server},
          {header: 'VERSION', wide: true, value: (r) => r.kubernetesVersion ?? '-'},
        ],
        print,
        (t) => this.out(t),
      )
    }
    if (human) {
      for (const r of rows) {
        const where = `${r.context}: ${r.secret} (cluster ${r.cluster})`
        if (r.credentialError) this.note(`${terminalSafe(where)}: credentials: ${terminalSafe(r.credentialError)}`)
        if (r.denied.length > 0) this.note(`${terminalSafe(where)}: not allowed: ${r.denied.join(', ')}`)
        for (const i of r.istiods) if (i.error) this.note(`${terminalSafe(where)}: ${terminalSafe(i.error)}`)
      }
    }
    const failing = rows.filter((r) => r.verdict !== 'ok')
    if (failing.length > 0) {
      throw new MeshvmError(`${failing.length} of ${rows.length} remote cluster credentials failing: ${failing.map((r) => `${r.context}/${r.secret}`).join(', ')}`, {
        exit: ExitCode.CHECK_FAILED,
        code: 'CheckFailed',
        hints: ['rotate a secret whose token was revoked: meshvm remote-secret rotate SECRET --from CONTEXT'],
      })
    }
  }
}
