import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import {BaseCommand} from '../lib/cli/base-command.js'
import {bundleFlags, bundleOptions} from '../lib/bundle/flags.js'
import {BUNDLE_INTERRUPTED, reportBundle} from '../lib/bundle/report.js'
import {UsageError} from '../lib/errors.js'
import {readWorkloadGroupFile} from '../lib/onboard/from-file.js'
import type {WorkloadGroupLike} from '../lib/bundle/generate.js'
import type {KubeSession} from '../lib/kube/session.js'

export default class Bundle extends BaseCommand<typeof Bundle> {
  static override summary = 'Write the bootstrap files a VM needs to join the mesh, for an existing WorkloadGroup.'

  static override description = `Reads the WorkloadGroup (from the cluster, or from -f FILE) and the cluster's mesh settings, issues a
bootstrap token for the group's service account, and writes into --output-dir:
  mesh.yaml       → /etc/istio/config/mesh        cluster.env  → /var/lib/istio/envoy/cluster.env
  root-cert.pem   → /etc/certs/root-cert.pem      istio-token  → /var/run/secrets/tokens/istio-token (mode 0600)
  hosts           → appended to /etc/hosts        install.sh   → puts everything in place and starts the sidecar

The values are taken where istioctl x workload entry configure takes them (ConfigMaps istio[-REV],
istio-sidecar-injector[-REV] and istio-ca-root-cert, a TokenRequest with audience istio-ca, the
east-west gateway Service), with these differences: ISTIO_INBOUND_PORTS is deterministic; the token
file is 0600; a gateway with only a load-balancer host name works (install.sh resolves it on the VM);
a missing gateway address is an error (use --ingress-ip, or --no-hosts on a flat network); defaults
are applied to a WorkloadGroup read from the cluster as to one read from a file; the token's expiry is
printed and checked by install.sh. Files are written whole or not at all.`

  static override examples = [
    {description: 'For a WorkloadGroup in the cluster:', command: '<%= config.bin %> <%= command.id %> web -n apps -d ./web-vm'},
    {
      description: 'From a file, with a revisioned control plane and auto-registration, as a tarball too:',
      command: '<%= config.bin %> <%= command.id %> -f wg.yaml -r 1-24-6 --autoregister --archive -d ./out',
    },
    {description: 'A new token for a bundle whose token is about to expire (nothing else is rewritten):', command: '<%= config.bin %> <%= command.id %> web -n apps -d ./web-vm --refresh-token'},
    {
      description: 'A VM reachable at a public address, through a gateway you name:',
      command: '<%= config.bin %> <%= command.id %> web -n apps -d out --external-ip 203.0.113.7 --ingress-ip 198.51.100.10',
    },
  ]

  static override args = {
    name: Args.string({description: 'Name of the WorkloadGroup in the cluster.', required: false, ignoreStdin: true}),
  }

  static override flags = {
    filename: Flags.string({char: 'f', summary: 'Read the WorkloadGroup from this YAML file (- for stdin) instead of the cluster.'}),
    'output-dir': Flags.string({char: 'd', summary: 'Directory to write the files into (created if missing).', required: true, aliases: ['output']}),
    ...bundleFlags,
    'refresh-token': Flags.boolean({summary: "Only issue a new token into DIR/istio-token (atomically, mode 0600) for a bundle already there; install.sh's expiry guard follows it."}),
  }

  async run(): Promise<void> {
    const f = this.flags
    if (this.args.name && f.filename) throw new UsageError('NAME and -f are exclusive: give the WorkloadGroup by name (from the cluster) or as a file')
    if (!this.args.name && !f.filename) throw new UsageError('missing NAME or -f FILE: which WorkloadGroup is the bundle for?', ['meshvm bundle web -n apps -d ./web-vm'])
    const options = bundleOptions(f, f['output-dir'])
    const fileGroup = f.filename ? readWorkloadGroupFile(f.filename, f.namespace) : undefined
    // A file's values are checked before the kubeconfig is even read (writeBundle checks them again).
    if (fileGroup) (await import('../lib/bundle/validate.js')).checkBundleValues({workloadGroup: fileGroup}, 'input')
    const session = await this.session()
    try {
      const {fetchWorkloadGroup} = await import('../lib/bundle/fetch.js')
      if (f['refresh-token']) return await this.refreshToken(session, fileGroup ?? (await fetchWorkloadGroup(session.client, this.args.name as string, session.namespace)), options.tokenSeconds)
      const {writeBundle} = await import('../lib/bundle/run.js')
      // Ctrl-C: let the request in progress finish, then stop before the token is issued or any file written.
      const summary = await this.interruptible(BUNDLE_INTERRUPTED, async (signal) => {
        const wg = fileGroup ?? (await fetchWorkloadGroup(session.client, this.args.name as string, session.namespace))
        return writeBundle(session, wg, {...options, signal, progress: (line) => this.note(line), groupFromCluster: fileGroup === undefined})
      })
      reportBundle(this.sink, summary)
    } finally {
      session.client.close()
    }
  }

  private async refreshToken(session: KubeSession, wg: WorkloadGroupLike, tokenSeconds: number): Promise<void> {
    const {refreshToken} = await import('../lib/bundle-verify/refresh-token.js')
    const r = await refreshToken(session.client, wg, {dir: this.flags['output-dir'], tokenSeconds})
    for (const warning of r.warnings) this.warning(warning)
    this.note(`Wrote ${r.files.join(', ')}: a new token for ${r.serviceAccount}${r.expiresAt ? `, expiring at ${r.expiresAt.toISOString()}` : ''}`)
  }
}
