import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import {BaseCommand, durationFlag} from '../../lib/cli/base-command.js'
import {dryRunFlag} from '../../lib/cli/dry-run.js'
import {outputFlags, printOptions} from '../../lib/cli/output-flags.js'
import {MeshvmError} from '../../lib/errors.js'
import {humanDuration} from '../../lib/output/age.js'
import {renderData} from '../../lib/output/render.js'
import {renderTable} from '../../lib/output/table.js'
import type {RolloutItem, RolloutReport} from '../../lib/war/rollout.js'

const REPORT_KINDS = ['table', 'json', 'yaml'] as const
const isAgentSkip = (i: RolloutItem): boolean => i.detail?.startsWith('agent not connected') === true
const {output: REPORT_OUTPUT} = outputFlags(REPORT_KINDS)

/** What the plan does with a registration (the dry run's ACTION column). */
function planAction(i: RolloutItem): string {
  if (i.result === 'skipped') return isAgentSkip(i) ? 'skip (agent not connected)' : 'skip (label it instead)'
  if (i.result === 'needs restart') return 'needs --restart-command'
  if (i.deletedEarlier) return 'wait (deleted by an earlier rollout)'
  return i.kind === 'workloadentry' ? 'delete, restart sidecar' : 're-onboard'
}

export default class WarRollout extends BaseCommand<typeof WarRollout> {
  static override summary = "Re-onboard a WorkloadGroup's workloads after the group changed, a few at a time, like a Deployment rollout."

  static override description =
    `A WorkloadAutoRegistration keeps a snapshot of its WorkloadGroup taken when the VM onboarded; a change to the group reaches a VM only when it onboards again. This command finds the group's registrations whose snapshot differs from the current spec (STALE in "meshvm war list -o wide"), deletes them --max-unavailable at a time, and waits for each agent to re-onboard: a new registration of the same name, connected, made from the current spec and, when the group has a probe, with a healthy WorkloadEntry. A slot frees as soon as its workload is back.

The first workload that does not come back within --timeout stops the rollout (nothing new starts) with a report of every registration. Re-running continues where it stopped: what is stale is worked out from the cluster each time, and the registrations a run deleted that are not back yet are remembered in the rollout's Lease (coordination.k8s.io/v1 lease meshvm-rollout-GROUP in the group's namespace, annotation rollout.meshvm.io/awaiting; so this needs permission to create, get and update leases there, and never writes the WorkloadGroup), so that the next run waits for them first instead of losing them. Stale registrations whose agent is not connected are skipped (their agent cannot re-onboard now) with a warning. --dry-run prints the plan. Progress goes to stderr, the report to stdout.

Istio's own auto-registered WorkloadEntries (no WorkloadAutoRegistration) are rolled out too, but istiod re-makes such an entry from the current group only when the VM's sidecar reconnects after the entry was deleted, and meshvm cannot reach a VM by itself: with --restart-command CMD, each stale entry is deleted and CMD is run through sh with MESHVM_VM_NAME (the entry), MESHVM_VM_ADDRESS (the VM's address), MESHVM_VM_HOSTNAME (the address: the cluster does not record host names) and MESHVM_NAMESPACE set, --max-unavailable at a time, and the rollout waits for the entry to come back from the current group (and healthy, with a probe). Without it, the stale entries are listed with what to run on each VM, and the command exits 8.

--missing-tunnel-label selects instead the group's auto-registered WorkloadEntries of HBONE-capable proxies that lack the HBONE tunnel label networking.istio.io/tunnel: Istio 1.31 puts it on the entries it creates, but entries made before the upgrade stay reached over plaintext until they re-register (release note 60788). A proxy counts as HBONE-capable when another entry of its group carries the label, or when the mesh config of its istiod's revision sets proxyMetadata ISTIO_META_ENABLE_HBONE=true and that istiod runs in ambient mode (PILOT_ENABLE_AMBIENT=true; otherwise istiod neither labels entries nor uses HBONE to sidecars). Each is deleted and its sidecar restarted (--restart-command), --max-unavailable at a time, and must come back connected, healthy (with a probe) and labelled; an entry held by an istiod older than 1.31 would come back unlabelled, so it is skipped with the kubectl label command instead. "meshvm war reconcile" lists these entries (MissingTunnelLabel).

Only one rollout of a group runs at a time: a run takes that Lease as client-go's leader election does (holderIdentity, leaseDurationSeconds, renewTime, written with the Lease's resourceVersion), renews it while it runs and gives it back at the end; another run is refused (exit 6) and told who holds it, until the lease expires (60s after the holder's last renewal, e.g. when it was killed).

Exit codes: 0 done (or nothing to do); 9 a workload did not come back connected within --timeout; 8 a workload came back but stayed unhealthy, came back from an old snapshot, or (--missing-tunnel-label) came back without the tunnel label; 8 also when stale auto-registered WorkloadEntries need --restart-command; 1 the restart command failed; 4 no such WorkloadGroup; 5 a permission is missing; 6 another rollout of the group holds its lease; 130 Ctrl-C (the workloads in flight are reported as interrupted).`

  static override examples = [
    '<%= config.bin %> <%= command.id %> ratings -n bookinfo',
    {description: 'See the plan first:', command: '<%= config.bin %> <%= command.id %> ratings -n bookinfo --dry-run'},
    {description: 'Two at a time, allowing 10 minutes per VM:', command: '<%= config.bin %> <%= command.id %> ratings -n bookinfo --max-unavailable 2 --timeout 10m'},
    {
      description: 'After an upgrade to Istio 1.31: re-register the entries of HBONE-capable VMs that lack the tunnel label, two at a time:',
      command: `<%= config.bin %> <%= command.id %> web -n apps --missing-tunnel-label --max-unavailable 2 --restart-command 'ssh "$MESHVM_VM_ADDRESS" sudo systemctl restart istio'`,
    },
    {
      description: "Istio auto-registered VMs: restart each stale VM's sidecar over ssh:",
      command: `<%= config.bin %> <%= command.id %> web -n apps --restart-command 'ssh "$MESHVM_VM_ADDRESS" sudo systemctl restart istio'`,
    },
  ]

  static override args = {
    group: Args.string({description: 'The WorkloadGroup whose workloads to re-onboard.', required: true, ignoreStdin: true}),
  }

  static override flags = {
    'max-unavailable': Flags.integer({summary: 'How many workloads may be re-onboarding at once.', default: 1, min: 1}),
    timeout: durationFlag({summary: 'How long to wait for each workload to come back connected (and healthy).', default: 300_000, defaultHelp: async () => '5m'}),
    'dry-run': dryRunFlag('client: print the plan, change nothing; server: the plan, with every delete it holds checked by the API server (dryRun=All), changing nothing.'),
    'missing-tunnel-label': Flags.boolean({
      summary:
        'Re-register only the auto-registered WorkloadEntries of HBONE-capable proxies that lack the HBONE tunnel label (networking.istio.io/tunnel), as after an upgrade to Istio 1.31; needs --restart-command.',
    }),
    'restart-command': Flags.string({
      summary: "Command (run with sh -c) that restarts a VM's sidecar, for auto-registered WorkloadEntries; gets MESHVM_VM_NAME, MESHVM_VM_ADDRESS, MESHVM_VM_HOSTNAME, MESHVM_NAMESPACE.",
    }),
    'chunk-size': Flags.integer({summary: 'Objects per list request; 0 lists everything in one request.', default: 500, min: 0}),
    'poll-interval': durationFlag({summary: 'How often to check on workloads being re-onboarded.', default: 1000, defaultHelp: async () => '1s', hidden: true}),
    // The shared -o flag (one validation, one message); a report is one document: no row flags.
    output: {...REPORT_OUTPUT, summary: 'Output format of the report: table, json, yaml.', description: undefined} as typeof REPORT_OUTPUT,
  }

  async run(): Promise<void> {
    const f = this.flags
    const format = printOptions(f, REPORT_KINDS).output.kind as (typeof REPORT_KINDS)[number]
    const group = this.args.group as string
    const session = await this.session()
    let report: RolloutReport
    try {
      const {rollout} = await import('../../lib/war/rollout.js')
      report = await this.interruptible(undefined, (signal) =>
        rollout(session.client, {
          namespace: session.namespace,
          group,
          maxUnavailable: f['max-unavailable'],
          timeoutMs: f.timeout,
          pollIntervalMs: f['poll-interval'],
          dryRun: f['dry-run'] !== 'none',
          serverDryRun: f['dry-run'] === 'server',
          chunkSize: f['chunk-size'],
          restartCommand: f['restart-command'],
          select: f['missing-tunnel-label'] ? 'missing-tunnel-label' : 'stale',
          istioNamespace: session.istioNamespace,
          signal,
          progress: (line) => this.note(line),
          warn: (line) => this.warning(line),
        }),
      )
    } finally {
      session.client.close()
    }
    this.render(report, format)
    const where = `workloadgroup ${report.namespace}/${report.group}`
    const count = (r: RolloutItem['result']) => report.items.filter((i) => i.result === r).length
    const skipped = report.items.filter((i) => i.result === 'skipped' && isAgentSkip(i)).length
    const labelOnly = count('skipped') - skipped
    const skippedText = `${skipped > 0 ? `, ${skipped} skipped (agent not connected)` : ''}${labelOnly > 0 ? `, ${labelOnly} to label instead (istiod older than 1.31)` : ''}`
    if (report.failure) throw new MeshvmError(report.failure.message, {exit: report.failure.exit, code: 'RolloutFailed', hints: report.failure.hints})
    if (report.status === 'planned') {
      const waits = report.items.filter((i) => i.deletedEarlier).length
      const waitText = waits > 0 ? `, after waiting for ${waits} deleted by an earlier rollout and not back yet` : ''
      this.note(
        `Dry run${f['dry-run'] === 'server' ? ' (server: the API server accepted every delete)' : ''}: ${count('planned') - waits} of ${report.registrations} registration(s) of ${where} would be re-onboarded, up to ${report.maxUnavailable} at a time${waitText}${skippedText}; nothing was changed.`,
      )
    } else if (report.status === 'complete') {
      this.note(`Rollout of ${where} complete: ${count('re-onboarded')} re-onboarded, ${report.upToDate} already up to date${skippedText}.`)
    } else if (f['dry-run'] !== 'none' || skipped > 0) {
      this.note(`Nothing to re-onboard in ${where}: ${report.upToDate} of ${report.registrations} registration(s) up to date${skippedText}.`)
    }
  }

  private render(report: RolloutReport, format: 'table' | 'json' | 'yaml'): void {
    if (format !== 'table') {
      this.out(renderData(report, format) as string)
      return
    }
    if (report.items.length === 0) return
    if (report.status === 'planned' || report.status === 'nothing to do') {
      this.out(
        renderTable(report.items, [
          {header: 'STEP', value: (i) => (i.step === undefined ? '-' : String(i.step))},
          {header: 'NAME', value: (i) => i.name},
          {header: 'AGENT CONNECTED', value: (i) => i.agentConnected},
          {header: 'ACTION', value: planAction},
        ]),
      )
      return
    }
    this.out(
      renderTable(report.items, [
        {header: 'NAME', value: (i) => i.name},
        {header: 'RESULT', value: (i) => i.result},
        {header: 'TIME', value: (i) => (i.seconds === undefined ? '-' : i.seconds < 60 ? `${i.seconds.toFixed(1)}s` : humanDuration(i.seconds * 1000))},
        {header: 'DETAIL', value: (i) => i.detail ?? ''},
      ]),
    )
  }
}
