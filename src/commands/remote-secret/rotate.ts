import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import {BaseCommand, durationFlag, KUBE_GROUP, OUTPUT_GROUP} from '../../lib/cli/base-command.js'
import {flagError, UsageError} from '../../lib/errors.js'
import {renderData} from '../../lib/output/render.js'
import {terminalSafe} from '../../lib/output/terminal.js'
import type {RotateOptions} from '../../lib/remote-secret/rotate.js'

export default class RemoteSecretRotate extends BaseCommand<typeof RemoteSecretRotate> {
  static override summary = "Give a remote secret a new token, verified from istiod's side before the old token is revoked."

  static override description = `NAME is a remote secret in the Istio namespace (-i) of --context (the cluster whose istiod reads
it), or the cluster name it holds. --from is the context of the cluster the credentials are for.

Steps, each undone if a later one fails, so the old Secret stays in force until the new one is proven:
  1. a new token Secret (kubernetes.io/service-account-token) for the reader ServiceAccount the old
     token belongs to, in --from, filled by the token controller (up to --token-timeout);
  2. the new kubeconfig checked from here: it reaches the server, and SelfSubjectAccessReviews
     with it allow every read istiod needs;
  3. the remote Secret updated in place by server-side apply (same name, same cluster key, same
     server and TLS settings);
  4. every running istiod reports the cluster synced in /debug/clusterz (up to --istiod-timeout);
     if not, the old kubeconfig is applied back and the new token Secret deleted;
  5. the old token Secret deleted in --from (this revokes the old token), unless --keep-old-token.`

  static override examples = [
    {description: 'Rotate the credentials istiod in east holds for west:', command: '<%= config.bin %> <%= command.id %> istio-remote-secret-west --context east --from west'},
    {description: 'By cluster name, keeping the old token valid for now:', command: '<%= config.bin %> <%= command.id %> west --context east --from west --keep-old-token'},
  ]

  static override args = {
    name: Args.string({description: 'The remote Secret, or the cluster name it holds.', required: true, ignoreStdin: true}),
  }

  static override flags = {
    from: Flags.string({summary: 'Kubeconfig context of the cluster the credentials are for (where the new token is made).', required: true, helpGroup: KUBE_GROUP}),
    'service-account': Flags.string({summary: "Reader ServiceAccount NS/NAME, when the old token does not say (default: the old token's, else istio-system/istio-reader-service-account)."}),
    'token-timeout': durationFlag({summary: 'How long to wait for the token controller to fill the new token Secret.', default: 30_000, defaultHelp: async () => '30s'}),
    'istiod-timeout': durationFlag({summary: 'How long istiod may take to report the cluster synced with the new Secret.', default: 60_000, defaultHelp: async () => '60s'}),
    'keep-old-token': Flags.boolean({summary: 'Do not delete the old token Secret (the old token stays valid).'}),
    output: Flags.option({char: 'o', summary: 'Output format.', options: ['text', 'json', 'yaml'] as const, default: 'text', helpGroup: OUTPUT_GROUP})(),
  }

  async run(): Promise<void> {
    const f = this.flags
    if (f.from.trim() === '') throw flagError('--from', f.from, 'must name a kubeconfig context')
    let serviceAccount: RotateOptions['serviceAccount']
    if (f['service-account'] !== undefined) {
      const m = /^(?:([a-z0-9-]+)\/)?([a-z0-9.-]+)$/.exec(f['service-account'])
      if (!m) throw flagError('--service-account', f['service-account'], 'expected NAME or NAMESPACE/NAME')
      serviceAccount = {namespace: m[1], name: m[2]!}
    }
    if (this.args.name.trim() === '') throw new UsageError('NAME must not be empty: give the remote Secret or its cluster name')
    const {requestTimeoutMs} = await import('../../lib/kube/session.js')
    const target = await this.session()
    const source = await this.session(f.from)
    try {
      const {rotateRemoteSecret} = await import('../../lib/remote-secret/rotate.js')
      const result = await rotateRemoteSecret({
        name: this.args.name,
        target,
        source,
        serviceAccount,
        tokenTimeoutMs: f['token-timeout'],
        istiodTimeoutMs: f['istiod-timeout'],
        requestTimeoutMs: requestTimeoutMs(f['request-timeout']),
        keepOldToken: f['keep-old-token'],
        log: {note: (t) => this.note(t), warning: (t) => this.warning(t)},
      })
      if (f.output === 'text') {
        this.out(
          terminalSafe(
            `secret/${result.secret} rotated (context ${target.contextName}, namespace ${result.namespace}): cluster ${result.cluster}, ServiceAccount ${result.serviceAccount}, token Secret ${result.newTokenSecret}; istiod synced: ${result.istiods.map((i) => i.istiod).join(', ')}`,
          ) + '\n',
        )
        if (result.removedTokenSecret) this.out(terminalSafe(`old token Secret ${result.removedTokenSecret} deleted in context ${source.contextName}`) + '\n')
        else if (result.oldTokenSecretNote) this.note(terminalSafe(result.oldTokenSecretNote))
      } else this.out(renderData(result, f.output)!)
    } finally {
      target.client.close()
      source.client.close()
    }
  }
}
