import {existsSync, statSync} from 'node:fs'
import * as Flags from '@oclif/core/flags'
import {BaseCommand, durationOrZeroFlag, KUBE_GROUP, OUTPUT_GROUP} from '../lib/cli/base-command.js'
import {canPrompt, terminalPrompter} from '../lib/cli/prompt.js'
import {ExitCode, MeshvmError, UsageError, flagError} from '../lib/errors.js'
import {checkWritablePath, writeFileAtomic} from '../lib/fs/atomic.js'
import {REMOTE_SECRET_AUTH_TYPES, REMOTE_SECRET_TYPES, validateRemoteSecretOptions} from '../lib/remote-secret/generate.js'

const SECRET_GROUP = 'REMOTE SECRET'

/** istioctl spells booleans `--flag=false`; oclif knows `--no-flag`. */
const BOOLEAN_FLAGS = ['create-service-account', 'verify', 'yes']

export function normalizeBooleanArgs(argv: string[]): string[] {
  const end = argv.includes('--') ? argv.indexOf('--') : argv.length
  const flags = argv.slice(0, end).map((arg) => {
    const m = /^--([a-z-]+)=(true|false)$/i.exec(arg)
    return m && BOOLEAN_FLAGS.includes(m[1]!) ? (m[2]!.toLowerCase() === 'true' ? `--${m[1]}` : `--no-${m[1]}`) : arg
  })
  return [...flags, ...argv.slice(end)]
}

export default class CreateRemoteSecret extends BaseCommand<typeof CreateRemoteSecret> {
  static override summary = 'Create a Secret that gives istiod in another cluster read access to this cluster.'

  static override description = `Does what istioctl create-remote-secret does, and prints the same YAML: a Secret
istio-remote-secret-NAME (or istio-kubeconfig with --type config) labelled istio/multiCluster: "true",
holding a kubeconfig for this cluster that authenticates as a ServiceAccount (default
istio-reader-service-account; istiod with --type config) in -n (default: -i, istio-system).

Steps: the cluster name (--name, else the UID of the kube-system Namespace); the ServiceAccount
(when missing and --create-service-account is on: the ServiceAccount and ClusterRole/ClusterRoleBinding
istio-reader-clusterrole-NS, by server-side apply, nothing else); its token, from a Secret of type
kubernetes.io/service-account-token (Kubernetes ≥ 1.24: one that names the ServiceAccount, or a new
SA-istio-remote-secret-token Secret, waiting up to --token-timeout for the token controller to fill it;
older clusters: the Secret in the ServiceAccount's secrets); the API server address (--server, else the
kubeconfig context's).

Safer than istioctl: --output-file writes the Secret with mode 0600, atomically; printing it to a
terminal asks first (--yes skips the question); --apply-to CONTEXT applies it straight into the Istio
namespace (-i) of another cluster; --verify first checks, with the generated kubeconfig itself, that it
reaches the API server and may read what istiod needs (SelfSubjectAccessReview); a loopback server
address and an auth provider istiod rejects by default (anything but oidc) are warned about;
--auth-plugin-config is honoured. The token never appears in messages.`

  static override examples = [
    {
      description: 'Let istiod in cluster2 read cluster1 (the usual multi-cluster step), in one step:',
      command: '<%= config.bin %> <%= command.id %> --context cluster1 --name cluster1 --apply-to cluster2',
    },
    {description: 'The istioctl way, piped into kubectl:', command: '<%= config.bin %> <%= command.id %> --context cluster1 --name cluster1 | kubectl apply -f - --context cluster2'},
    {description: 'Check the credentials first and keep the Secret in a private file:', command: '<%= config.bin %> <%= command.id %> --name cluster1 --verify --output-file cluster1-secret.yaml'},
    {description: 'A kind or k3d cluster, whose kubeconfig points at 127.0.0.1:', command: '<%= config.bin %> <%= command.id %> --name kind1 --server https://172.18.0.2:6443 --apply-to kind-kind2'},
    {
      description: "An external control plane (istio-kubeconfig, istiod's ServiceAccount):",
      command: '<%= config.bin %> <%= command.id %> --type config --name external -n external-istiod --output-file config.yaml',
    },
    {
      description: 'OIDC instead of a bearer token:',
      command:
        '<%= config.bin %> <%= command.id %> --name west --auth-type plugin --auth-plugin-name oidc --auth-plugin-config idp-issuer-url=https://issuer.example.com --auth-plugin-config client-id=mesh',
    },
  ]

  static override flags = {
    namespace: Flags.string({
      char: 'n',
      summary: 'Namespace of the ServiceAccount, its token Secret and the printed Secret (default: -i, i.e. istio-system).',
      env: 'MESHVM_NAMESPACE',
      helpGroup: KUBE_GROUP,
    }),
    name: Flags.string({summary: 'Cluster name (a DNS-1123 label); istiod takes it as the cluster ID (default: the kube-system Namespace UID).', helpGroup: SECRET_GROUP}),
    type: Flags.string({
      summary: `Secret type: ${REMOTE_SECRET_TYPES.join(' or ')} (config: istio-kubeconfig for an external control plane).`,
      default: 'remote',
      helpValue: REMOTE_SECRET_TYPES.join('|'),
      helpGroup: SECRET_GROUP,
    }),
    'service-account': Flags.string({summary: 'ServiceAccount whose token is exported (default: istio-reader-service-account; istiod with --type config).', helpGroup: SECRET_GROUP}),
    'create-service-account': Flags.boolean({summary: 'Create the reader ServiceAccount and its ClusterRole/Binding when missing.', default: true, allowNo: true, helpGroup: SECRET_GROUP}),
    'secret-name': Flags.string({summary: 'Use this ServiceAccount token Secret (when the ServiceAccount has several).', helpGroup: SECRET_GROUP}),
    'auth-type': Flags.string({
      summary: `How istiod authenticates: ${REMOTE_SECRET_AUTH_TYPES.join(' or ')}.`,
      default: 'bearer-token',
      helpValue: REMOTE_SECRET_AUTH_TYPES.join('|'),
      helpGroup: SECRET_GROUP,
    }),
    'auth-plugin-name': Flags.string({summary: 'Auth provider name with --auth-type plugin (istiod accepts oidc by default).', helpGroup: SECRET_GROUP}),
    'auth-plugin-config': Flags.string({
      summary: 'Auth provider setting k=v (repeatable, or k1=v1,k2=v2) with --auth-type plugin.',
      multiple: true,
      multipleNonGreedy: true,
      helpGroup: SECRET_GROUP,
    }),
    server: Flags.string({summary: "API server address written into the kubeconfig (default: the kubeconfig context's).", helpGroup: SECRET_GROUP}),
    'tls-server-name': Flags.string({summary: 'Server name to verify the API server certificate against (istioctl 1.26+).', helpGroup: SECRET_GROUP}),
    'token-timeout': durationOrZeroFlag({
      summary: 'How long to wait for the token controller to fill a new token Secret (e.g. 30s, 2m; 0: do not wait).',
      default: 30_000,
      defaultHelp: async () => '30s',
      helpGroup: SECRET_GROUP,
    }),
    'output-file': Flags.string({summary: 'Write the Secret to this file (mode 0600, atomically) instead of stdout.', helpGroup: OUTPUT_GROUP}),
    'apply-to': Flags.string({summary: 'Apply the Secret to this kubeconfig context, in its Istio namespace (-i), instead of printing it.', helpGroup: KUBE_GROUP}),
    verify: Flags.boolean({
      summary: 'Before printing or applying, check with the generated kubeconfig that it reaches the API server and may read what istiod needs.',
      default: false,
      helpGroup: SECRET_GROUP,
    }),
    yes: Flags.boolean({char: 'y', summary: 'Print the Secret to a terminal without asking.', default: false, helpGroup: OUTPUT_GROUP}),
  }

  public override async init(): Promise<void> {
    this.argv = normalizeBooleanArgs(this.argv)
    await super.init()
  }

  async run(): Promise<void> {
    const f = this.flags
    const namespace = f.namespace ?? f['istio-namespace']
    const settings = validateRemoteSecretOptions({
      name: f.name,
      type: f.type,
      authType: f['auth-type'],
      authPluginName: f['auth-plugin-name'],
      authPluginConfig: f['auth-plugin-config'],
      server: f.server,
      tlsServerName: f['tls-server-name'],
      secretName: f['secret-name'],
      serviceAccount: f['service-account'],
      namespace,
    })
    if (f.verify && settings.authType === 'plugin') {
      throw flagError('--verify', undefined, 'only works with --auth-type=bearer-token: meshvm cannot run the auth plugin istiod will use', [
        'leave --verify out, and check the Secret in the other cluster (istiod logs each remote cluster it adds)',
      ])
    }
    const outputFile = f['output-file']
    if (outputFile !== undefined) {
      if (outputFile === '' || (existsSync(outputFile) && statSync(outputFile).isDirectory())) {
        throw flagError('--output-file', outputFile, 'must be a file path (the Secret is written there with mode 0600)')
      }
      // Before the token exists: a path that cannot be written (below a regular file, a symlink) fails now.
      checkWritablePath(outputFile)
    }
    const applyTo = f['apply-to']
    if (applyTo === '') throw flagError('--apply-to', applyTo, 'must name a kubeconfig context')

    // The Secret goes to stdout only without --output-file and --apply-to. It holds a credential:
    // on a terminal, ask first.
    const toStdout = outputFile === undefined && applyTo === undefined
    if (toStdout && process.stdout.isTTY && !f.yes) await this.confirmTerminal()

    const {requestTimeoutMs} = await import('../lib/kube/session.js')
    const requestTimeout = requestTimeoutMs(f['request-timeout'])
    const source = await this.session()
    const target = applyTo === undefined ? undefined : await this.session(applyTo)
    try {
      if (target && target.contextName === source.contextName) {
        this.warning(`--apply-to ${applyTo} is the context whose credentials are exported: istiod there would read its own cluster as a remote one`)
      }
      const {createRemoteSecret, applyRemoteSecret} = await import('../lib/remote-secret/run.js')
      const result = await createRemoteSecret(source.client, {
        settings,
        namespace,
        createServiceAccount: f['create-service-account'],
        tokenTimeoutMs: f['token-timeout'],
        contextServer: source.server,
        log: {note: (t) => this.note(t), warning: (t) => this.warning(t)},
      })

      if (f.verify) await this.verify(result.kubeconfig, {server: result.server, namespace, serviceAccount: settings.serviceAccount, timeoutMs: requestTimeout})

      if (outputFile !== undefined) {
        writeFileAtomic(outputFile, result.manifest.yaml, 0o600)
        const {unignoredCredentialWarning} = await import('../lib/fs/git.js')
        const exposed = unignoredCredentialWarning(outputFile)
        if (exposed) this.warning(exposed)
        this.note(`Wrote Secret ${result.manifest.secretName} for cluster ${result.clusterName} to ${outputFile} (mode 0600)`)
      }
      if (target) {
        const ns = target.istioNamespace
        let outcome: string
        try {
          outcome = await applyRemoteSecret(target.client, result.manifest.object, ns)
        } catch (err) {
          if (!(err instanceof MeshvmError)) throw err
          const missingNs = /namespaces? "[^"]+" not found/.test(err.message)
          throw new MeshvmError(`--apply-to ${applyTo}: cannot apply Secret ${ns}/${result.manifest.secretName}: ${err.message}`, {
            exit: err.exit,
            code: err.code,
            hints: [
              ...err.hints,
              missingNs ? `istiod in context ${applyTo} runs in another namespace? pass -i; or install Istio there first` : 'nothing was changed in that cluster',
              ...(outputFile === undefined ? ['or pass --output-file FILE and apply the file later with kubectl apply -f FILE --context ' + applyTo] : []),
            ],
          })
        }
        this.out(`secret/${result.manifest.secretName} ${outcome} (context ${target.contextName}, namespace ${ns})\n`)
      }
      if (toStdout) this.out(result.manifest.yaml)
    } finally {
      source.client.close()
      target?.client.close()
    }
  }

  private async confirmTerminal(): Promise<void> {
    const alternatives = 'pipe it (| kubectl apply -f - --context OTHER), or use --output-file FILE or --apply-to CONTEXT'
    if (!canPrompt()) {
      throw new UsageError('refusing to print a Secret holding cluster credentials to the terminal without --yes', [alternatives])
    }
    const prompter = await terminalPrompter()
    const ok = await prompter.confirm('The Secret holds a credential for this cluster. Print it to the terminal?', {default: false})
    if (!ok) throw new MeshvmError('not printed: answered no', {exit: ExitCode.FAILURE, code: 'Declined', hints: [alternatives]})
  }

  private async verify(kubeconfig: string, o: {server: string; namespace: string; serviceAccount: string; timeoutMs: number}): Promise<void> {
    const {verifyRemoteKubeconfig, permissionText} = await import('../lib/remote-secret/verify.js')
    this.note(`Verifying the generated kubeconfig against ${o.server}...`)
    const v = await verifyRemoteKubeconfig(kubeconfig, {timeoutMs: o.timeoutMs})
    const nothing = 'nothing was printed, written or applied'
    if (v.connectError) {
      throw new MeshvmError(`--verify: the generated kubeconfig does not work: ${v.connectError.message}`, {
        exit: ExitCode.CHECK_FAILED,
        code: 'VerifyFailed',
        hints: [...v.connectError.hints, `the check connects from this machine to ${o.server}; if only istiod's cluster can reach that address, leave --verify out`, nothing],
      })
    }
    if (v.denied.length > 0) {
      const who = `ServiceAccount ${o.namespace}/${o.serviceAccount}`
      throw new MeshvmError(`--verify: ${who} lacks ${v.denied.length} permission(s) istiod needs: ${v.denied.map(permissionText).join(', ')}`, {
        exit: ExitCode.CHECK_FAILED,
        code: 'VerifyFailed',
        hints: [
          `bind it to the reader ClusterRole: kubectl create clusterrolebinding ${o.serviceAccount}-istio-reader --clusterrole istio-reader-clusterrole-${o.namespace} --serviceaccount ${o.namespace}:${o.serviceAccount}`,
          nothing,
        ],
      })
    }
    this.note(`Verified: reached ${o.server}${v.gitVersion ? ` (Kubernetes ${v.gitVersion})` : ''} with the generated kubeconfig; ${v.allowed.length} permissions istiod needs checked, all allowed`)
  }
}
