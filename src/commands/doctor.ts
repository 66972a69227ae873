import {existsSync, statSync} from 'node:fs'
import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import {BaseCommand, durationFlag} from '../lib/cli/base-command.js'
import {contextNames, multiContextFlags, type MultiContextFlagValues} from '../lib/cli/multi-context.js'
import {outputFlags, printOptions} from '../lib/cli/output-flags.js'
import {ExitCode, MeshvmError, UsageError} from '../lib/errors.js'
import {renderData} from '../lib/output/render.js'
import {renderTable} from '../lib/output/table.js'
import {terminalSafe} from '../lib/output/terminal.js'
import type {DoctorReport} from '../lib/doctor/diagnose.js'

const REPORT_KINDS = ['table', 'json', 'yaml'] as const
const {output: REPORT_OUTPUT} = outputFlags(REPORT_KINDS)

const doctorFlags = {
  ...multiContextFlags,
  bundle: Flags.string({summary: "The VM's bundle directory (as written by meshvm bundle -d DIR): its token, root certificate and hosts entry are checked too."}),
  'vm-exec': Flags.string({
    summary: 'Command template (run with sh -c) that runs a shell on the VM reading commands from stdin, e.g. \'ssh "$MESHVM_VM_ADDRESS"\': read-only checks on the VM itself.',
    description:
      "Gets MESHVM_VM_NAME, MESHVM_VM_ADDRESS, MESHVM_VM_HOSTNAME and MESHVM_NAMESPACE. meshvm writes a read-only POSIX sh script to its stdin (pilot-agent readiness, Envoy's /certs, pilot-agent's TCP connection to istiod (ss), interception rules, DNS, what answers at the readiness probe's port) and reads the answer. Fixes that run on the VM are printed as commands piped into this template, with those variables set.",
  }),
  'all-vms': Flags.boolean({char: 'A', summary: 'Doctor every VM of the namespace (or of the WorkloadGroup VM names) and print one row each.'}),
  'ingress-service': Flags.string({summary: 'Service (NAME or NAME.NAMESPACE) of the east-west gateway.', default: 'istio-eastwestgateway'}),
  timeout: durationFlag({summary: 'Time to wait for each istiod and for --vm-exec.', default: 10_000, defaultHelp: async () => '10s'}),
  output: {...REPORT_OUTPUT, summary: 'Output format: table, json, yaml.', description: undefined} as typeof REPORT_OUTPUT,
}
type DoctorFlags = MultiContextFlagValues<typeof doctorFlags>

export default class Doctor extends BaseCommand<typeof Doctor> {
  static override summary = 'Say why a VM is not in the mesh, step by step, and how to fix it.'

  static override description =
    `Walks the chain a VM goes through to join the mesh and prints each check as pass, warn, fail or skip, with its evidence and, for what is wrong, a fix that is a command to run when the evidence proves the cause (otherwise the check says the cause is not proven, and prints no fix):
  1. the bundle and its token (with --bundle DIR: what meshvm bundle verify checks);
  2. the east-west gateway: its kind (a classic gateway with 15012, 15017 and 15443, not an ambient one), its current address against the bundle's hosts entry, and topology.istio.io/network on both sides;
  3. istiod: running, auto-registration and health checks on, the istiod the VM is connected to;
  4. the registration: present, one per address, not stale against its WorkloadGroup, Healthy (with --vm-exec, why the probe fails: what answers on the VM at the probe's port and the group's ports), WaypointBound, recent Warning events;
  5. the Service or ServiceEntry selecting it, with ports the group defines;
  6. the sync state istiod reports (SYNCED, STALE, a NACK with its error and the EnvoyFilter that caused it) and version skew;
  7. with --vm-exec, read-only checks on the VM itself: pilot-agent readiness, Envoy's certificate and whether it trusts every root of istio-ca-root-cert, interception rules, DNS for istiod, the connection to istiod.
The last line names the first failure and its fix, when there is one. VM is a WorkloadEntry or WorkloadAutoRegistration name, HOSTNAME.NAMESPACE (the proxy ID istiod reports), the VM's address, or a WorkloadGroup with a single VM; with --bundle it may be left out. With several contexts, the one that holds the VM is used. Exit codes: 0 all pass (warnings included), 8 a check failed, 4 no such VM, others as usual.`

  static override examples = [
    {description: 'One VM, by its WorkloadEntry name:', command: '<%= config.bin %> <%= command.id %> web-10.0.0.5 -n apps'},
    {description: 'From the bundle that was copied to the VM, and on the VM itself over ssh:', command: `<%= config.bin %> <%= command.id %> --bundle ./web-vm --vm-exec 'ssh "$MESHVM_VM_ADDRESS"'`},
    {description: 'Every VM of a namespace, one row each:', command: '<%= config.bin %> <%= command.id %> -A -n apps'},
    {description: 'Which of two clusters holds the VM, as JSON:', command: '<%= config.bin %> <%= command.id %> 10.0.0.5 -n apps --context east --context west -o json'},
  ]

  static override args = {
    vm: Args.string({
      description: 'The VM: a WorkloadEntry or WorkloadAutoRegistration name, HOSTNAME.NAMESPACE, an address, or a WorkloadGroup (with -A: its VMs).',
      ignoreStdin: true,
    }),
  }

  static override flags = doctorFlags

  declare protected flags: DoctorFlags

  async run(): Promise<void> {
    const f = this.flags
    const format = printOptions(f, REPORT_KINDS).output.kind as (typeof REPORT_KINDS)[number]
    const vm = this.args.vm
    if (vm !== undefined && vm.trim() === '') throw new UsageError('VM must not be empty: give a WorkloadEntry name, HOSTNAME.NAMESPACE or an address')
    if (vm === undefined && f.bundle === undefined && !f['all-vms'])
      throw new UsageError('missing VM: which VM to doctor? give its WorkloadEntry name, HOSTNAME.NAMESPACE or address, --bundle DIR, or -A for every VM of the namespace', [
        'meshvm doctor web-10.0.0.5 -n apps',
      ])
    if (f['all-vms'] && f.bundle !== undefined) throw new UsageError('-A and --bundle are exclusive: a bundle is one VM')
    if (f['vm-exec'] !== undefined && f['vm-exec'].trim() === '') throw new UsageError('--vm-exec must not be empty: give a command that runs a shell on the VM, e.g. \'ssh "$MESHVM_VM_ADDRESS"\'')
    let bundleOffline: import('../lib/bundle-verify/offline.js').OfflineResult | undefined
    if (f.bundle !== undefined) {
      if (!existsSync(f.bundle) || !statSync(f.bundle).isDirectory()) throw new UsageError(`--bundle ${JSON.stringify(f.bundle)}: not a directory (give the directory meshvm bundle -d wrote)`)
      const {offlineChecks, readBundleDir} = await import('../lib/bundle-verify/offline.js')
      bundleOffline = offlineChecks(readBundleDir(f.bundle), {now: new Date(), warnWithinMs: 600_000, source: {dir: f.bundle}})
    }

    const contexts = await contextNames(f.context, f['all-contexts'], f.kubeconfig)
    const {doctorVm, doctorAll} = await import('../lib/doctor/run.js')
    const {invocation} = await import('../lib/cli/invocation.js')
    const options = {
      contexts,
      openSession: (c: string | undefined) => this.session(c),
      ingressService: f['ingress-service'],
      vmExec: f['vm-exec'],
      timeoutMs: f.timeout,
      warn: (text: string) => this.warning(text),
      // Fixes act on the cluster doctor read: the user's --kubeconfig, and the context that holds the VM,
      // put on each command as doctor builds it (keepInvocation only for bundle verify's whole remake line).
      cli: {
        bin: invocation.bin,
        kubeconfig: invocation.kube.kubeconfig,
        context: invocation.kube.context,
        external: (line: string, kube: {kubeconfig?: string; context?: string}) => {
          const userKube = invocation.kube
          invocation.kube = {...userKube, ...kube}
          try {
            return this.keepInvocation(line)
          } finally {
            invocation.kube = userKube
          }
        },
      },
    }
    const chalk = this.chalkFor(format)
    const colour = (s: string) => (s === 'pass' ? chalk.green(s) : s === 'warn' ? chalk.yellow(s) : s === 'fail' ? chalk.red(s) : chalk.dim(s))
    const data = format === 'json' || format === 'yaml' ? format : undefined
    if (f['all-vms']) {
      const reports = await doctorAll(vm, options)
      if (data) this.out(renderData({apiVersion: 'meshvm.io/v1alpha1', kind: 'DoctorReportList', items: reports}, data)!)
      else
        this.out(
          renderTable(reports, [
            {header: 'VM', value: (r) => terminalSafe(r.workloadEntry ?? r.query)},
            {header: 'NAMESPACE', value: (r) => terminalSafe(r.namespace)},
            ...(contexts.length > 1 ? [{header: 'CONTEXT', value: (r: DoctorReport) => terminalSafe(r.context ?? '')}] : []),
            {header: 'RESULT', value: (r) => r.result, color: colour},
            {header: 'FIRST FAILURE', value: (r) => terminalSafe(r.summary ?? '-')},
          ]),
        )
      const failed = reports.filter((r) => r.result === 'fail')
      const first = failed[0]
      if (reports.length === 0) this.note('no VMs found')
      if (first)
        throw new MeshvmError(`${failed.length} of ${reports.length} VMs have a failing check`, {
          exit: ExitCode.CHECK_FAILED,
          code: 'CheckFailed',
          hints: [`details of one: meshvm doctor ${first.workloadEntry ?? first.query} -n ${first.namespace}`],
        })
      return
    }

    const report = await doctorVm({query: vm, bundle: bundleOffline}, options)
    if (data) this.out(renderData({apiVersion: 'meshvm.io/v1alpha1', kind: 'DoctorReport', ...report}, data)!)
    else
      this.out(
        renderTable(report.checks, [
          {header: 'STEP', value: (c) => String(c.step)},
          {header: 'CHECK', value: (c) => c.check},
          {header: 'STATUS', value: (c) => c.status, color: colour},
          {header: 'DETAIL', value: (c) => terminalSafe(c.detail) + (c.fix ? ` — fix: ${terminalSafe(c.fix)}` : '')},
        ]),
      )
    if (report.result === 'fail') throw new MeshvmError(terminalSafe(report.summary ?? 'a check failed'), {exit: ExitCode.CHECK_FAILED, code: 'CheckFailed'})
    this.note(report.result === 'warn' ? `${report.checks.filter((c) => c.status === 'warn').length} warning(s), no failure` : 'every check passed')
  }
}
