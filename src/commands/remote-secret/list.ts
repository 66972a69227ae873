import {BaseCommand} from '../../lib/cli/base-command.js'
import {ExitCode, MeshvmError} from '../../lib/errors.js'
import type {KubeSession} from '../../lib/kube/session.js'
import {age, humanDuration} from '../../lib/output/age.js'
import {terminalSafe} from '../../lib/output/terminal.js'
import type {RemoteSecretEntry} from '../../lib/remote-secret/list.js'
import type {MultiContextFlagValues} from '../../lib/cli/multi-context.js'
import {listingTargets, printRows, remoteSecretFlags} from '../../lib/remote-secret/print.js'

const flags = remoteSecretFlags(
  "RemoteSecretList schema (items with context, secret, namespace, cluster, server, authType, tokenKind, serviceAccount, created, expiresAt), e.g. -o jsonpath='{.items[*].cluster}'",
)

export default class RemoteSecretList extends BaseCommand<typeof RemoteSecretList> {
  static override summary = "List the remote secrets istiod reads, with their credentials' kind and expiry."

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
  declare protected flags: MultiContextFlagValues<typeof flags>

  async run(): Promise<void> {
    const f = this.flags
    const {print, human, contexts} = await listingTargets(f)
    const {listRemoteSecrets, remoteSecretEntries} = await import('../../lib/remote-secret/list.js')
    const rows: RemoteSecretEntry[] = []
    let failed = 0
    for (const c of contexts) {
      let session: KubeSession | undefined
      try {
        session = await this.session(c)
        const secrets = await listRemoteSecrets(session.client, session.istioNamespace)
        for (const s of secrets) rows.push(...remoteSecretEntries(s, session.contextName).map((e) => e.entry))
      } catch (err) {
        if (!(err instanceof MeshvmError) || contexts.length === 1) throw err
        failed++
        this.warning(`context ${c ?? '(current)'}: ${err.message}`)
      } finally {
        session?.client.close()
      }
    }
    if (human && rows.length === 0) this.note(`No remote secrets (label istio/multiCluster=true) in namespace ${f['istio-namespace']}${contexts.length > 1 ? ' of any context' : ''}.`)
    else {
      const now = new Date()
      const expires = (r: RemoteSecretEntry): string => {
        if (!r.expiresAt) return r.tokenKind === 'legacy' ? 'never' : '-'
        const ms = Date.parse(r.expiresAt) - now.getTime()
        return ms <= 0 ? `expired ${humanDuration(-ms)} ago` : `in ${humanDuration(ms)}`
      }
      printRows(
        rows,
        'RemoteSecretList',
        [
          {header: 'SERVER', value: (r) => r.server || '<none>'},
          {header: 'AUTH', value: (r) => r.authType},
          {header: 'TOKEN', value: (r) => r.tokenKind},
          {header: 'SERVICE ACCOUNT', wide: true, value: (r) => r.serviceAccount ?? '-'},
          {header: 'AGE', value: (r) => age(r.created, now)},
          {header: 'EXPIRES', value: expires},
        ],
        print,
        (t) => this.out(t),
      )
    }
    for (const r of rows) if (r.problem) this.warning(`${r.context}: Secret ${r.namespace}/${r.secret}: ${terminalSafe(r.problem)}`)
    if (failed > 0) throw new MeshvmError(`${failed} of ${contexts.length} contexts could not be read`, {exit: ExitCode.PARTIAL, code: 'Partial'})
  }
}
