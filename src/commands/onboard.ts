import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import type {WorkloadGroupLike} from '../lib/bundle/generate.js'
import type {BundleOptions} from '../lib/bundle/run.js'
import {BaseCommand, OUTPUT_GROUP} from '../lib/cli/base-command.js'
import {dryRunFlag} from '../lib/cli/dry-run.js'
import {bundleFlags, bundleOptions} from '../lib/bundle/flags.js'
import {Problems, UsageError} from '../lib/errors.js'
import type {Manifest} from '../lib/kube/object.js'
import {fileNameFor, generateOnboardObjects} from '../lib/onboard/generate.js'
import {inputFromWorkloadGroup, missingRequired, PROBE_FLAGS, parseOnboardInput, type OnboardInput} from '../lib/onboard/spec.js'
import type {OutputSpec} from '../lib/output/printer.js'
import {toYaml, toYamlStream} from '../lib/yaml.js'

const PROBE_GROUP = 'PROBE'
const APPLY_GROUP = 'CLUSTER'
const WORKLOAD_GROUP = 'WORKLOAD'
const OUTPUT_KINDS = ['yaml', 'json', 'name', 'jsonpath', 'jsonpath-as-json', 'custom-columns'] as const
// What only some runs need (-o, --apply/--bundle/--diff, -d, -f, the wizard) is imported when needed:
// the default run (a YAML stream on stdout) initialises none of it (the start-up measurements: docs/decisions/startup.md).
const loadPrinter = () => import('../lib/output/printer.js')

export default class Onboard extends BaseCommand<typeof Onboard> {
  static override summary = 'Generate the manifests that bring a group of VMs into the mesh.'

  static override description = `Prints (or writes to --output-dir) the objects a VM workload group needs:
  • a WorkloadGroup (networking.istio.io/v1): the "Deployment" of your VMs: labels, ports,
    service account, network, locality and an optional readiness probe;
  • a Service (default) selecting the group's WorkloadEntries, so in-cluster clients reach the VMs
    at NAME.NAMESPACE.svc.cluster.local, or a ServiceEntry (--service-entry) for other host names;
  • optionally the Namespace and ServiceAccount (--create-namespace, --create-service-account).

Every object is validated before it is printed. Without --apply, --dry-run=server, --diff or
--bundle nothing is sent to a cluster.

--apply applies the objects with server-side apply (field manager "meshvm") in dependency order
(Namespace, ServiceAccount, WorkloadGroup, Service/ServiceEntry); re-running is idempotent. If an
object fails, the output says which objects were applied, which failed and why (exit 7 when some
were applied). --dry-run=server asks the API server what would change; --diff prints a unified diff
against the live objects. --bundle DIR also writes the VM bootstrap files (see meshvm bundle).

In a terminal, missing values (name, namespace, ports) are asked for, and the equivalent command
line is printed at the end. Without a terminal, missing values are an error.

The istioctl x workload group create flags -l/--labels, -a/--annotations, -p/--ports and
-s/--serviceAccount are accepted too.`

  static override examples = [
    {description: 'A group of web VMs serving HTTP on 8080 with a health check:', command: '<%= config.bin %> <%= command.id %> web -n apps --port http=8080 --probe-http 8080/healthz'},
    {
      description: 'gRPC on 9090 forwarded to 19090 on the VMs, with its own service account:',
      command: '<%= config.bin %> <%= command.id %> billing -n pay -p grpc=9090:19090/GRPC -s billing-vm --create-service-account',
    },
    {
      description: 'A ServiceEntry for a legacy host name, written as files for kubectl apply -k:',
      command: '<%= config.bin %> <%= command.id %> db -n data -p tcp=5432 --service-entry --host db.legacy.example.com -d ./db-manifests',
    },
    {description: 'Pipe straight into kubectl:', command: '<%= config.bin %> <%= command.id %> web -n apps -p http=8080 | kubectl apply -f -'},
    {
      description: 'Apply to the cluster and write the VM bundle in one step:',
      command: '<%= config.bin %> <%= command.id %> web -n apps -p http=8080 --create-service-account -s web-vm --apply --bundle ./web-vm',
    },
    {description: 'Show what would change in the cluster:', command: '<%= config.bin %> <%= command.id %> web -n apps -p http=8080 --diff'},
    {description: 'Start from an existing WorkloadGroup manifest:', command: '<%= config.bin %> <%= command.id %> -f workloadgroup.yaml --apply'},
  ]

  static override args = {
    // ignoreStdin: oclif would otherwise read NAME from a piped stdin, which nobody expects.
    name: Args.string({description: 'Name of the workload group (also the Service name).', required: false, ignoreStdin: true}),
  }

  static override flags = {
    name: Flags.string({summary: 'Same as the NAME argument (istioctl compatibility).', hidden: true}),
    port: Flags.string({
      char: 'p',
      summary: 'A port the VMs serve: name=port[:targetPort][/PROTOCOL]. Repeatable or comma-separated.',
      description: 'PROTOCOL is one of HTTP, HTTPS, GRPC, HTTP2, MONGO, TCP, TLS; by default it comes from the name prefix (http-web → HTTP), else TCP.',
      multiple: true,
      multipleNonGreedy: true,
      aliases: ['ports'],
      helpGroup: WORKLOAD_GROUP,
    }),
    label: Flags.string({
      char: 'l',
      summary: 'A workload label key=value (default app=NAME). Repeatable or comma-separated.',
      multiple: true,
      multipleNonGreedy: true,
      aliases: ['labels'],
      helpGroup: WORKLOAD_GROUP,
    }),
    annotation: Flags.string({
      char: 'a',
      summary: 'A workload annotation key=value, copied to every WorkloadEntry. Repeatable.',
      multiple: true,
      multipleNonGreedy: true,
      aliases: ['annotations'],
      helpGroup: WORKLOAD_GROUP,
    }),
    'service-account': Flags.string({
      char: 's',
      summary: 'ServiceAccount whose identity the VMs get.',
      default: 'default',
      aliases: ['serviceAccount'],
      helpGroup: WORKLOAD_GROUP,
    }),
    network: Flags.string({summary: 'Network of the VMs, when it differs from the cluster network (multi-network meshes).', helpGroup: WORKLOAD_GROUP}),
    locality: Flags.string({summary: 'Locality of the VMs: region[/zone[/subzone]].', helpGroup: WORKLOAD_GROUP}),
    weight: Flags.string({char: 'w', summary: 'Load-balancing weight of each VM endpoint.', helpGroup: WORKLOAD_GROUP}),
    'service-entry': Flags.boolean({summary: 'Generate a ServiceEntry instead of a Kubernetes Service.', helpGroup: WORKLOAD_GROUP}),
    host: Flags.string({summary: 'Host name of the ServiceEntry (default NAME.NAMESPACE.svc.cluster.local). Repeatable.', multiple: true, multipleNonGreedy: true, helpGroup: WORKLOAD_GROUP}),
    'create-namespace': Flags.boolean({summary: 'Also generate the Namespace.', helpGroup: WORKLOAD_GROUP}),
    'create-service-account': Flags.boolean({summary: 'Also generate the ServiceAccount.', helpGroup: WORKLOAD_GROUP}),
    'probe-http': Flags.string({summary: 'Readiness probe: HTTP GET on PORT[/PATH].', helpGroup: PROBE_GROUP}),
    'probe-https': Flags.string({summary: 'Readiness probe: HTTPS GET on PORT[/PATH].', helpGroup: PROBE_GROUP}),
    'probe-tcp': Flags.string({summary: 'Readiness probe: TCP connect to PORT.', helpGroup: PROBE_GROUP}),
    'probe-exec': Flags.string({summary: "Readiness probe: run a command on the VM, e.g. '/opt/check --quick'.", helpGroup: PROBE_GROUP}),
    'probe-host': Flags.string({summary: 'Host the HTTP/TCP probe connects to.', defaultHelp: async () => '127.0.0.1', helpGroup: PROBE_GROUP}),
    'probe-header': Flags.string({summary: 'HTTP header Name:Value sent by the probe. Repeatable.', multiple: true, multipleNonGreedy: true, helpGroup: PROBE_GROUP}),
    'probe-period': Flags.string({summary: 'Seconds between probes (e.g. 10 or 10s).', helpGroup: PROBE_GROUP}),
    'probe-timeout': Flags.string({summary: 'Seconds before a probe times out.', helpGroup: PROBE_GROUP}),
    'probe-initial-delay': Flags.string({summary: 'Seconds before the first probe.', helpGroup: PROBE_GROUP}),
    'probe-success-threshold': Flags.string({summary: 'Successes in a row that make the VM ready.', helpGroup: PROBE_GROUP}),
    'probe-failure-threshold': Flags.string({summary: 'Failures in a row that make the VM not ready.', helpGroup: PROBE_GROUP}),
    output: Flags.string({
      char: 'o',
      summary: 'Print a kubectl List as yaml or json, only the object names, or jsonpath=…/jsonpath-as-json=…/custom-columns=… (kubectl syntax). Default: a YAML stream (--- separated).',
      description: 'With --apply the objects applied are printed this way instead of the "created/configured" lines. Not with --output-dir (the files are YAML) or --diff.',
      helpGroup: OUTPUT_GROUP,
    }),
    'output-dir': Flags.string({
      char: 'd',
      summary: 'Write one file per object, plus a kustomization.yaml, into this directory instead of printing.',
      helpGroup: OUTPUT_GROUP,
    }),
    'no-prompt': Flags.boolean({summary: 'Never ask questions, even in a terminal.', helpGroup: OUTPUT_GROUP}),
    filename: Flags.string({char: 'f', summary: 'Read the WorkloadGroup from this YAML file (- for stdin) instead of the workload flags.', helpGroup: WORKLOAD_GROUP}),
    apply: Flags.boolean({summary: 'Apply the objects to the cluster (server-side apply, field manager "meshvm").', helpGroup: APPLY_GROUP}),
    'dry-run': dryRunFlag('client: only print, even with --apply (the default without --apply); server: ask the API server what would change, change nothing.', APPLY_GROUP),
    diff: Flags.boolean({
      summary: 'Print a unified diff of the live objects against what applying would produce; change nothing unless --apply is given too. Exit 1 when there are differences (as kubectl diff).',
      helpGroup: APPLY_GROUP,
    }),
    'force-conflicts': Flags.boolean({
      summary: 'Take over fields another field manager (Helm, Argo CD, kubectl...) owns with other values; without it such a field is a conflict error naming the field and its manager.',
      helpGroup: APPLY_GROUP,
    }),
    bundle: Flags.string({summary: 'Also write the VM bootstrap bundle (mesh.yaml, cluster.env, root-cert.pem, istio-token, hosts, install.sh) into this directory.', helpGroup: APPLY_GROUP}),
    ...bundleFlags,
  }

  async run(): Promise<void> {
    const f = this.flags
    // Every problem of the invocation is reported at once, one line each (not only the first).
    const problems = new Problems()
    if (this.args.name && f.name && this.args.name !== f.name) {
      problems.add(new UsageError(`NAME ${JSON.stringify(this.args.name)} and --name ${JSON.stringify(f.name)} disagree; give one of them`))
    }
    const printer = f.output === undefined ? undefined : await loadPrinter()
    const output = f.output === undefined ? undefined : problems.check(() => printer!.parseOutput(f.output!, OUTPUT_KINDS))
    if (output && f.diff) problems.add(new UsageError(`-o ${f.output} cannot be combined with --diff: --diff prints a unified diff`))
    if (output && f['output-dir']) problems.add(new UsageError(`-o ${f.output} cannot be combined with --output-dir: the directory gets one YAML file per object`))
    // Parse this before any request, so a typo never leaves a half-done job.
    const bundle = f.bundle === undefined ? undefined : problems.check(() => bundleOptions(f, f.bundle!))
    const fileGroup = f.filename === undefined ? undefined : await problems.checkAsync(() => this.readFileGroup(f.filename!))
    if (f.filename !== undefined && fileGroup === undefined) problems.throwIfAny()
    let input: OnboardInput = fileGroup ? inputFromWorkloadGroup(fileGroup, f) : this.inputFromFlags()
    const prompting = !fileGroup && missingRequired(input).length > 0 && !f['no-prompt'] ? await import('../lib/cli/prompt.js') : undefined
    const wizard = prompting?.canPrompt()
    // No questions when the answers could not make the command line valid.
    if (wizard) problems.throwIfAny()
    let wizardApply = false
    const {onboardCommandLine, runOnboardWizard} = wizard ? await import('../lib/onboard/wizard.js') : {}
    if (wizard && prompting && runOnboardWizard) {
      const given = (...names: string[]): boolean => this.argv.some((a) => names.some((n) => a === n || a.startsWith(`${n}=`)))
      const answers = await runOnboardWizard(input, await prompting.terminalPrompter(), {
        serviceAccount: given('-s', '--service-account', '--serviceAccount'),
        createNamespace: given('--create-namespace'),
        createServiceAccount: given('--create-service-account'),
        action: given('--apply', '--dry-run', '--diff', '--output-dir', '-d', '--bundle'),
      })
      wizardApply = Boolean(answers.apply)
      input = answers
    }

    const spec = problems.check(() => parseOnboardInput(input))
    problems.throwIfAny()
    const objects = generateOnboardObjects(spec!).map((o) => (fileGroup && o.kind === 'WorkloadGroup' ? (fileGroup as unknown as Manifest) : o))
    // The same schema and CEL rules kube-apiserver enforces, so nothing printed is rejected later.
    const {assertValidIstioObjects} = await import('../lib/schema/istio.js')
    assertValidIstioObjects(objects, f.filename ?? 'generated manifests')

    if (f['output-dir']) await this.writeDir(f['output-dir'], objects)
    // --dry-run=client sends nothing that changes the cluster: it only prints.
    const applying = ((f.apply || wizardApply) && f['dry-run'] !== 'client') || f['dry-run'] === 'server' || f.diff
    // Without an apply, the manifests are printed (also with --bundle, whose group must then be applied by the user).
    if (!applying && !f['output-dir']) this.out(await this.render(objects, output))
    if (applying || bundle) await this.toCluster(objects, bundle, applying, output)

    if (wizard && onboardCommandLine)
      this.note(`\nTo do this again without questions:\n  ${onboardCommandLine(input, [...(f['output-dir'] ? ['-d', f['output-dir']] : []), ...(wizardApply ? ['--apply'] : [])])}`)
  }

  private inputFromFlags(): OnboardInput {
    const f = this.flags
    return {
      name: this.args.name ?? f.name,
      namespace: f.namespace,
      ports: f.port,
      labels: f.label,
      annotations: f.annotation,
      serviceAccount: f['service-account'],
      network: f.network,
      locality: f.locality,
      weight: f.weight,
      hosts: f.host,
      serviceEntry: f['service-entry'] ? true : undefined,
      createNamespace: f['create-namespace'],
      createServiceAccount: f['create-service-account'],
      probe: Object.fromEntries(Object.entries(PROBE_FLAGS).map(([key, flag]) => [key, f[flag]])),
    }
  }

  private async readFileGroup(path: string): Promise<WorkloadGroupLike> {
    const f = this.flags
    const flagsSet = (['port', 'label', 'annotation', 'network', 'locality', 'weight', ...Object.values(PROBE_FLAGS), 'name'] as const).filter((k) => f[k] !== undefined).map((k) => `--${k}`)
    if (f['service-account'] !== 'default') flagsSet.push('--service-account')
    if (this.args.name) flagsSet.unshift('NAME')
    if (flagsSet.length > 0) {
      throw new UsageError(`${flagsSet[0]} cannot be combined with -f: the WorkloadGroup file defines the group; edit the file instead`)
    }
    const {readWorkloadGroupFile} = await import('../lib/onboard/from-file.js')
    const wg = readWorkloadGroupFile(path, f.namespace)
    // Check the file against the CRD before deriving anything from it, so errors name the file.
    const {assertValidIstioObjects} = await import('../lib/schema/istio.js')
    assertValidIstioObjects([wg as unknown as Manifest], path)
    return wg
  }

  private async toCluster(objects: Manifest[], bundle: BundleOptions | undefined, applying: boolean, output: OutputSpec | undefined): Promise<void> {
    const f = this.flags
    const [{applyFailure, applyObjects, describeResult}, {BUNDLE_INTERRUPTED, reportBundle}] = await Promise.all([import('../lib/apply/apply.js'), import('../lib/bundle/report.js')])
    const session = await this.session()
    try {
      const dryRun = f['dry-run'] === 'server' || (f.diff && !f.apply)
      if (applying) {
        const applied: Manifest[] = []
        const {results, interrupted} = await this.interruptible('Interrupted: finishing the object in progress, then stopping.', async (signal) => ({
          results: await applyObjects(session.client, objects, {
            dryRun: Boolean(dryRun),
            diff: f.diff,
            force: f['force-conflicts'],
            signal,
            missingNamespaceHints: (ns) =>
              f['create-namespace']
                ? [`namespace "${ns}" does not exist yet: a dry run (--dry-run=server, --diff) does not create it, so the objects in it cannot be checked; apply with --apply`]
                : [`namespace "${ns}" does not exist: add --create-namespace to create it too (or kubectl create namespace ${ns})`],
            onResult: (r) => {
              if (r.diff) this.out(r.diff)
              // Like kubectl: what happened on stdout, what did not on stderr. --diff --apply prints both.
              if (r.outcome === 'failed' || r.outcome === 'not applied') this.note(describeResult(r, Boolean(dryRun)))
              else if (output) applied.push(r.object)
              else if (!f.diff || !dryRun) this.out(describeResult(r, Boolean(dryRun)) + '\n')
            },
          }),
          interrupted: signal.aborted,
        }))
        if (applied.length > 0) this.out(await this.render(applied, output))
        const failure = applyFailure(results, interrupted)
        if (failure) throw failure
        // As kubectl diff: exit 1 when there are differences (only a diff was asked for).
        if (f.diff && dryRun && results.some((r) => r.diff)) process.exitCode = 1
      }
      if (bundle) {
        const wg = objects.find((o) => o.kind === 'WorkloadGroup') as unknown as WorkloadGroupLike
        if (!applying || dryRun) await this.warnIfGroupMissing(session, wg)
        // Ctrl-C: what was applied stays applied; stop before the token is issued or any file written.
        const {writeBundle} = await import('../lib/bundle/run.js')
        const summary = await this.interruptible(BUNDLE_INTERRUPTED, (signal) => writeBundle(session, wg, {...bundle, signal, progress: (line) => this.note(line)}))
        reportBundle(this.sink, summary)
      }
    } finally {
      session.client.close()
    }
  }

  /** The objects in the chosen format; without -o, a YAML stream (--- separated) for kubectl apply -f -. */
  private async render(objects: Manifest[], output: OutputSpec | undefined): Promise<string> {
    if (output === undefined) return toYamlStream(objects)
    let text = ''
    const {Printer} = await loadPrinter()
    const printer = new Printer<Manifest>({columns: [], object: (o) => o}, {output}, (t) => (text += t))
    printer.add(objects)
    printer.finish()
    return text
  }

  /** A bundle for a group the cluster does not have yet: the VM could not register until it is applied. */
  private async warnIfGroupMissing(session: Awaited<ReturnType<Onboard['session']>>, wg: WorkloadGroupLike): Promise<void> {
    const {resourcePath, Resources} = await import('../lib/kube/resources.js')
    const live = await session.client.getOptional(resourcePath(Resources.workloadGroups, {namespace: wg.metadata.namespace, name: wg.metadata.name}))
    if (!live) {
      this.warning(
        `WorkloadGroup ${wg.metadata.namespace}/${wg.metadata.name} is not in the cluster: the VM cannot join until it is applied (run again with --apply, or kubectl apply -f the manifests printed above)`,
      )
    }
  }

  private async writeDir(dir: string, objects: Manifest[]): Promise<void> {
    const {writeFilesAtomic} = await import('../lib/fs/atomic.js')
    const files = objects.map((obj, i) => ({name: fileNameFor(obj, i), data: toYaml(obj), mode: 0o644}))
    const kustomization = {
      apiVersion: 'kustomize.config.k8s.io/v1beta1',
      kind: 'Kustomization',
      resources: files.map((file) => file.name),
    }
    files.push({name: 'kustomization.yaml', data: toYaml(kustomization), mode: 0o644})
    const written = writeFilesAtomic(dir, files)
    this.note(`Wrote ${written.length} files to ${dir} (apply them with: kubectl apply -k ${dir})`)
  }
}
