import * as Flags from '@oclif/core/flags'
import type * as Interfaces from '@oclif/core/interfaces'
import {BaseCommand, commonOutputFlags, kubeFlags, OUTPUT_GROUP} from '../../lib/cli/base-command.js'
import {contextNames, multiContextFlags} from '../../lib/cli/multi-context.js'
import {ExitCode, MeshvmError} from '../../lib/errors.js'
import {age, humanDuration} from '../../lib/output/age.js'
import {renderData} from '../../lib/output/render.js'
import {renderTable} from '../../lib/output/table.js'
import {terminalSafe} from '../../lib/output/terminal.js'
import type {RemoteSecretEntry} from '../../lib/remote-secret/list.js'

const flags = {
  ...multiContextFlags,
  output: Flags.option({char: 'o', summary: 'Output format.', options: ['table', 'wide', 'json', 'yaml'] as const, default: 'table', helpGroup: OUTPUT_GROUP})(),
}

type ListFlags = Omit<Interfaces.InferredFlags<typeof kubeFlags & typeof commonOutputFlags>, 'context'> & Interfaces.InferredFlags<typeof flags>

export default class RemoteSecretList extends BaseCommand<typeof RemoteSecretList> {
  static override summary = 'List the remote secrets istiod reads, with their credentials\' kind and expiry.'

  static override description = `Lists the Secrets labelled istio/multiCluster=true in the Istio namespace (-i) of each context —
the ones istiod's multi-cluster secret controller loads — one row per cluster they hold: CONTEXT, SECRET,
CLUSTER (the key istiod takes as the cluster ID), SERVER, AUTH (bearer-token, plugin/NAME, exec,
client-certificate), TOKEN (bound: has an expiry; legacy: a secret-based ServiceAccount token that never
expires but dies with its token Secret; opaque: not a Kubernetes JWT), AGE and EXPIRES. -o wide adds
the ServiceAccount the token belongs to. The token is decoded only to read its claims; it is never shown.`

  static override examples = [
    {description: 'The remote secrets of two clusters:', command: '<%= config.bin %> <%= command.id %> --context east --context west'},
    {description: 'As JSON (for a script that alerts on expiry):', command: '<%= config.bin %> <%= command.id %> --all-contexts -o json'},
  ]

  static override flags = flags
  declare protected flags: ListFlags

  async run(): Promise<void> {
    const f = this.flags
    const contexts = await contextNames(f.context, f['all-contexts'], f.kubeconfig)
    const {listRemoteSecrets, remoteSecretEntries} = await import('../../lib/remote-secret/list.js')
    const rows: RemoteSecretEntry[] = []
    const failures: string[] = []
    for (const c of contexts) {
      let session
      try {
        session = await this.session(c)
        const secrets = await listRemoteSecrets(session.client, session.istioNamespace)
        for (const s of secrets) rows.push(...remoteSecretEntries(s, session.contextName).map((e) => e.entry))
      } catch (err) {
        if (!(err instanceof MeshvmError) || contexts.length === 1) throw err
        failures.push(`context ${c ?? '(current)'}: ${err.message}`)
        this.warning(`context ${c ?? '(current)'}: ${err.message}`)
      } finally {
        session?.client.close()
      }
    }
    const data = renderData({apiVersion: 'meshvm.io/v1alpha1', kind: 'RemoteSecretList', items: rows}, f.output as 'json')
    if (f.output === 'json' || f.output === 'yaml') this.out(data!)
    else if (rows.length === 0) this.note(`No remote secrets (label istio/multiCluster=true) in namespace ${f['istio-namespace']}${contexts.length > 1 ? ' of any context' : ''}.`)
    else {
      const now = new Date()
      const expires = (r: RemoteSecretEntry): string => {
        if (!r.expiresAt) return r.tokenKind === 'legacy' ? 'never' : '-'
        const ms = Date.parse(r.expiresAt) - now.getTime()
        return ms <= 0 ? `expired ${humanDuration(-ms)} ago` : `in ${humanDuration(ms)}`
      }
      this.out(
        renderTable(rows, [
          {header: 'CONTEXT', value: (r) => terminalSafe(r.context)},
          {header: 'SECRET', value: (r) => terminalSafe(r.secret)},
          {header: 'CLUSTER', value: (r) => terminalSafe(r.cluster)},
          {header: 'SERVER', value: (r) => terminalSafe(r.server || '<none>')},
          {header: 'AUTH', value: (r) => terminalSafe(r.authType)},
          {header: 'TOKEN', value: (r) => r.tokenKind},
          {header: 'SERVICE ACCOUNT', wide: true, value: (r) => terminalSafe(r.serviceAccount ?? '-')},
          {header: 'AGE', value: (r) => age(r.created, now)},
          {header: 'EXPIRES', value: expires},
        ], {wide: f.output === 'wide'}),
      )
    }
    for (const r of rows) if (r.problem) this.warning(`${r.context}: Secret ${r.namespace}/${r.secret}: ${terminalSafe(r.problem)}`)
    if (failures.length > 0) throw new MeshvmError(`${failures.length} of ${contexts.length} contexts could not be read`, {exit: ExitCode.PARTIAL, code: 'Partial'})
  }
}
