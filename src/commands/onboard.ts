import {Args, Flags} from '@oclif/core'
import {BaseCommand, OUTPUT_GROUP} from '../lib/cli/base-command.js'
import {canPrompt, terminalPrompter} from '../lib/cli/prompt.js'
import {UsageError} from '../lib/errors.js'
import {writeFilesAtomic} from '../lib/fs/atomic.js'
import {fileNameFor, generateOnboardObjects, type KubeObject} from '../lib/onboard/generate.js'
import {missingRequired, parseOnboardInput, type OnboardInput} from '../lib/onboard/spec.js'
import {onboardCommandLine, runOnboardWizard} from '../lib/onboard/wizard.js'
import {asList, renderData, resourceName} from '../lib/output/render.js'
import {toYaml, toYamlStream} from '../lib/yaml.js'

const PROBE_GROUP = 'PROBE'
const WORKLOAD_GROUP = 'WORKLOAD'

export default class Onboard extends BaseCommand<typeof Onboard> {
  static override summary = 'Generate the manifests that bring a group of VMs into the mesh.'

  static override description = `Prints (or writes to --output-dir) the objects a VM workload group needs:
  • a WorkloadGroup (networking.istio.io/v1): the "Deployment" of your VMs: labels, ports,
    service account, network, locality and an optional readiness probe;
  • a Service (default) selecting the group's WorkloadEntries, so in-cluster clients reach the VMs
    at NAME.NAMESPACE.svc.cluster.local, or a ServiceEntry (--service-entry) for other host names;
  • optionally the Namespace and ServiceAccount (--create-namespace, --create-service-account).

Every object is validated before it is printed. Nothing is sent to a cluster.
In a terminal, missing values (name, namespace, ports) are asked for, and the equivalent command
line is printed at the end. Without a terminal, missing values are an error.

The istioctl x workload group create flags -l/--labels, -a/--annotations, -p/--ports and
-s/--serviceAccount are accepted too.`

  static override examples = [
    {description: 'A group of web VMs serving HTTP on 8080 with a health check:', command: '<%= config.bin %> <%= command.id %> web -n apps --port http=8080 --probe-http 8080/healthz'},
    {description: 'gRPC on 9090 forwarded to 19090 on the VMs, with its own service account:', command: '<%= config.bin %> <%= command.id %> billing -n pay -p grpc=9090:19090/GRPC -s billing-vm --create-service-account'},
    {description: 'A ServiceEntry for a legacy host name, written as files for kubectl apply -k:', command: '<%= config.bin %> <%= command.id %> db -n data -p tcp=5432 --service-entry --host db.legacy.example.com -d ./db-manifests'},
    {description: 'Pipe straight into kubectl:', command: '<%= config.bin %> <%= command.id %> web -n apps -p http=8080 | kubectl apply -f -'},
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
    host: Flags.string({summary: 'Host name of the ServiceEntry (default NAME.NAMESPACE.svc.cluster.local). Repeatable.', multiple: true,
      multipleNonGreedy: true, helpGroup: WORKLOAD_GROUP}),
    'create-namespace': Flags.boolean({summary: 'Also generate the Namespace.', helpGroup: WORKLOAD_GROUP}),
    'create-service-account': Flags.boolean({summary: 'Also generate the ServiceAccount.', helpGroup: WORKLOAD_GROUP}),
    'probe-http': Flags.string({summary: 'Readiness probe: HTTP GET on PORT[/PATH].', helpGroup: PROBE_GROUP}),
    'probe-https': Flags.string({summary: 'Readiness probe: HTTPS GET on PORT[/PATH].', helpGroup: PROBE_GROUP}),
    'probe-tcp': Flags.string({summary: 'Readiness probe: TCP connect to PORT.', helpGroup: PROBE_GROUP}),
    'probe-exec': Flags.string({summary: "Readiness probe: run a command on the VM, e.g. '/opt/check --quick'.", helpGroup: PROBE_GROUP}),
    'probe-host': Flags.string({summary: 'Host the HTTP/TCP probe connects to.', defaultHelp: async () => '127.0.0.1', helpGroup: PROBE_GROUP}),
    'probe-header': Flags.string({summary: 'HTTP header Name:Value sent by the probe. Repeatable.', multiple: true,
      multipleNonGreedy: true, helpGroup: PROBE_GROUP}),
    'probe-period': Flags.string({summary: 'Seconds between probes (e.g. 10 or 10s).', helpGroup: PROBE_GROUP}),
    'probe-timeout': Flags.string({summary: 'Seconds before a probe times out.', helpGroup: PROBE_GROUP}),
    'probe-initial-delay': Flags.string({summary: 'Seconds before the first probe.', helpGroup: PROBE_GROUP}),
    'probe-success-threshold': Flags.string({summary: 'Successes in a row that make the VM ready.', helpGroup: PROBE_GROUP}),
    'probe-failure-threshold': Flags.string({summary: 'Failures in a row that make the VM not ready.', helpGroup: PROBE_GROUP}),
    output: Flags.option({
      char: 'o',
      summary: 'Print a kubectl List as yaml or json, or only the object names. Default: a YAML stream (--- separated).',
      options: ['yaml', 'json', 'name'] as const,
      helpGroup: OUTPUT_GROUP,
    })(),
    'output-dir': Flags.string({
      char: 'd',
      summary: 'Write one file per object, plus a kustomization.yaml, into this directory instead of printing.',
      helpGroup: OUTPUT_GROUP,
    }),
    'no-prompt': Flags.boolean({summary: 'Never ask questions, even in a terminal.', helpGroup: OUTPUT_GROUP}),
  }

  async run(): Promise<void> {
    const f = this.flags
    if (this.args.name && f.name && this.args.name !== f.name) {
      throw new UsageError(`NAME ${JSON.stringify(this.args.name)} and --name ${JSON.stringify(f.name)} disagree; give one of them`)
    }
    let input: OnboardInput = {
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
      probe: {
        http: f['probe-http'],
        https: f['probe-https'],
        tcp: f['probe-tcp'],
        exec: f['probe-exec'],
        host: f['probe-host'],
        headers: f['probe-header'],
        period: f['probe-period'],
        timeout: f['probe-timeout'],
        initialDelay: f['probe-initial-delay'],
        successThreshold: f['probe-success-threshold'],
        failureThreshold: f['probe-failure-threshold'],
      },
    }
    const wizard = missingRequired(input).length > 0 && !f['no-prompt'] && canPrompt()
    if (wizard) input = await runOnboardWizard(input, await terminalPrompter())

    const spec = parseOnboardInput(input)
    const objects = generateOnboardObjects(spec)

    if (f['output-dir']) this.writeDir(f['output-dir'], objects)
    else this.out(this.render(objects, f.output))

    if (wizard) this.note(`\nTo do this again without questions:\n  ${onboardCommandLine(input, f['output-dir'] ? ['-d', f['output-dir']] : [])}`)
  }

  private render(objects: KubeObject[], format: 'yaml' | 'json' | 'name' | undefined): string {
    if (format === 'name') return objects.map((o) => resourceName(o) + '\n').join('')
    if (format === undefined) return toYamlStream(objects)
    return renderData(asList(objects), format) as string
  }

  private writeDir(dir: string, objects: KubeObject[]): void {
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
