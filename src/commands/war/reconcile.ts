import * as Flags from '@oclif/core/flags'
import {BaseCommand, durationFlag, durationOrZeroFlag, OUTPUT_GROUP} from '../../lib/cli/base-command.js'
import {dryRunFlag} from '../../lib/cli/dry-run.js'
import {contextNames, multiContextFlags, type MultiContextFlagValues} from '../../lib/cli/multi-context.js'
import {canPrompt, terminalPrompter} from '../../lib/cli/prompt.js'
import {ExitCode, MeshvmError, UsageError} from '../../lib/errors.js'
import type {KubeSession} from '../../lib/kube/session.js'
import {renderData} from '../../lib/output/render.js'
import {terminalSafe} from '../../lib/output/terminal.js'
import type {FixOutcome} from '../../lib/reconcile/collect.js'
import type {ContextSnapshot, Finding} from '../../lib/reconcile/model.js'

const flags = {
  ...multiContextFlags,
  'all-namespaces': Flags.boolean({char: 'A', summary: "Every namespace (default: -n, then the context's namespace)."}),
  'grace-period': durationOrZeroFlag({summary: 'How long an entry may be without a connected proxy before it counts as dangling (e.g. 30s, 5m).', default: 300_000, defaultHelp: async () => '5m'}),
  fix: Flags.boolean({summary: 'Apply the safe fixes (delete dangling auto-registered WorkloadEntries, each only if unchanged since read), after confirmation.', exclusive: ['dry-run']}),
  'dry-run': dryRunFlag(
    'Show what --fix would delete, changing nothing. client: look each entry up again; server: also send each delete with dryRun=All, so the API server checks permission and precondition.',
  ),
  yes: Flags.boolean({char: 'y', summary: 'With --fix: do not ask for confirmation.', dependsOn: ['fix']}),
  timeout: durationFlag({summary: "How long to wait for each istiod's /debug/syncz.", default: 30_000, defaultHelp: async () => '30s'}),
  output: Flags.option({
    char: 'o',
    summary: 'Output format (json/yaml: the ReconcileReport schema in docs/war.md).',
    options: ['text', 'json', 'yaml'] as const,
    default: 'text',
    helpGroup: OUTPUT_GROUP,
  })(),
}

type ReconcileFlags = MultiContextFlagValues<typeof flags>

export default class WarReconcile extends BaseCommand<typeof WarReconcile> {
  static override summary = 'Find registrations and connected VMs that do not add up, across clusters, each with its reason and fix.'

  static override description = `Joins, for every context given, the WorkloadEntries, WorkloadAutoRegistrations and WorkloadGroups
with the proxies every running istiod reports connected (/debug/syncz), and reports:
  DanglingEntry         an auto-registered entry (or a WAR) with no connected proxy for longer than --grace-period
  UnregisteredProxy     a VM sidecar connected to istiod that no entry or WAR stands for
  DuplicateAddress      two entries with the same address and network (across all contexts)
  OrphanedEntry         an entry or WAR owned by a WorkloadGroup that does not exist
  OrphanedRegistration  a WAR whose WorkloadEntry is gone
  StaleRegistration     a registration made from an older version of its group
  MissingTunnelLabel    an auto-registered entry of an HBONE-capable proxy without networking.istio.io/tunnel
                        (made before Istio 1.31 labelled new entries): ambient workloads reach it over plaintext;
                        fix: war rollout GROUP --missing-tunnel-label, or kubectl label

A VM held by an istiod that did not answer is not judged (a warning names the istiod). Proxies are
paired with registrations as proxy-status pairs them. Hand-written WorkloadEntries are judged only for
duplicates and owners.

--fix deletes the dangling auto-registered WorkloadEntries (istiod would have removed them itself after
its grace period): each is read again and deleted only if its uid and resourceVersion are unchanged,
with the same preconditions on the DELETE, so a VM that reconnects meanwhile keeps its entry. --dry-run
shows those deletes (server-side dry run). Nothing else is ever changed. Exit 0 when nothing was found
(or everything found was fixed), 8 otherwise, 7 when a fix failed.`

  static override examples = [
    {description: 'Everything, in two clusters:', command: '<%= config.bin %> <%= command.id %> -A --context east --context west'},
    {description: 'What --fix would delete:', command: '<%= config.bin %> <%= command.id %> -n apps --dry-run'},
    {description: 'Delete dangling entries without asking, then report as JSON:', command: '<%= config.bin %> <%= command.id %> -A --fix --yes -o json'},
  ]

  static override flags = flags
  declare protected flags: ReconcileFlags

  async run(): Promise<void> {
    const f = this.flags
    if (f.fix && !f.yes && !canPrompt()) throw new UsageError('--fix asks for confirmation on a terminal; pass --yes to delete without asking', ['see first what would be deleted: --dry-run'])
    const contexts = await contextNames(f.context, f['all-contexts'], f.kubeconfig)
    const sessions: KubeSession[] = []
    try {
      for (const c of contexts) sessions.push(await this.session(c))
      const {collectSnapshot, applyFix} = await import('../../lib/reconcile/collect.js')
      const {reconcile} = await import('../../lib/reconcile/model.js')
      const snapshots: ContextSnapshot[] = []
      for (const s of sessions) {
        const {snapshot, warnings} = await collectSnapshot(s.client, s.contextName, {
          namespace: f['all-namespaces'] ? undefined : s.namespace,
          istioNamespace: s.istioNamespace,
          revision: s.revision,
          timeoutMs: f.timeout,
        })
        for (const w of warnings) this.warning(`${s.contextName}: ${terminalSafe(w)}`)
        snapshots.push(snapshot)
      }
      const report = reconcile(snapshots, {now: new Date(), gracePeriodMs: f['grace-period']})
      const safe = report.findings.filter((x) => x.safeFix)
      let fixes: FixOutcome[] | undefined
      const dryRun = f['dry-run']
      if ((f.fix || dryRun !== 'none') && safe.length > 0) {
        if (f.fix && !f.yes) {
          const prompter = await terminalPrompter()
          this.note(safe.map((x) => `  delete workloadentry ${x.namespace}/${x.name} (context ${x.context})`).join('\n'))
          const ok = await prompter.confirm(`Delete these ${safe.length} dangling WorkloadEntries?`, {default: false})
          if (!ok) throw new MeshvmError('nothing deleted: answered no', {exit: ExitCode.FAILURE, code: 'Declined'})
        }
        fixes = []
        const byContext = new Map(sessions.map((s) => [s.contextName, s.client]))
        for (const x of safe) fixes.push(await applyFix(byContext.get(x.context)!, x.safeFix!, dryRun))
      }
      if (f.output === 'json' || f.output === 'yaml') this.out(renderData(fixes ? {...report, fixes} : report, f.output)!)
      else this.out(this.text(report.findings, fixes, contexts.length > 1))
      const fixed = new Set((fixes ?? []).filter((o) => o.result === 'deleted').map((o) => `${o.context}/${o.namespace}/${o.name}`))
      const left = report.findings.filter((x) => !(x.kind === 'WorkloadEntry' && x.type === 'DanglingEntry' && fixed.has(`${x.context}/${x.namespace}/${x.name}`)))
      const failed = (fixes ?? []).filter((o) => o.result === 'failed')
      const summary = `${report.findings.length} finding(s)${fixes ? `; ${fixes.filter((o) => o.result === 'deleted').length} deleted${dryRun !== 'none' ? `, ${fixes.filter((o) => o.result === 'would-delete').length} would be deleted` : ''}` : safe.length > 0 ? `; ${safe.length} fixable with --fix` : ''}`
      this.note(summary)
      if (failed.length > 0) throw new MeshvmError(`${failed.length} fix(es) failed: ${failed[0]!.error}`, {exit: ExitCode.PARTIAL, code: 'Partial'})
      if (left.length > 0) throw new MeshvmError(`${left.length} finding(s) left`, {exit: ExitCode.CHECK_FAILED, code: 'CheckFailed'})
    } finally {
      for (const s of sessions) s.client.close()
    }
  }

  private text(findings: Finding[], fixes: FixOutcome[] | undefined, manyContexts: boolean): string {
    if (findings.length === 0) return 'No findings: every registration has its proxy and every connected VM its registration.\n'
    const lines: string[] = []
    for (const x of findings) {
      const where = `${manyContexts ? `${x.context}: ` : ''}${x.kind.toLowerCase()}/${x.namespace}/${x.name}`
      lines.push(`${x.type}  ${terminalSafe(where)}`)
      lines.push(`  reason: ${terminalSafe(x.reason)}`)
      for (const r of x.related) lines.push(`  also:   ${terminalSafe(`${manyContexts ? `${r.context}: ` : ''}${r.kind.toLowerCase()}/${r.namespace}/${r.name}`)}`)
      lines.push(`  fix:    ${terminalSafe(x.fix)}`)
      const outcome = fixes?.find((o) => x.safeFix && o.context === x.context && o.namespace === x.namespace && o.name === x.name)
      if (outcome) lines.push(`  fixed:  ${outcome.result}${outcome.error ? ` (${terminalSafe(outcome.error)})` : ''}`)
    }
    return lines.join('\n') + '\n'
  }
}
