import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import type * as Interfaces from '@oclif/core/interfaces'
import {BaseCommand, KUBE_GROUP, kubeFlags, commonOutputFlags, OUTPUT_GROUP} from '../lib/cli/base-command.js'
import {debugEnabled, ExitCode, flagError, MeshvmError, UsageError} from '../lib/errors.js'
import type {IstiodPool} from '../lib/istiod/reader.js'
import type {KubeSession} from '../lib/kube/session.js'
import {renderData} from '../lib/output/render.js'
import {parseDuration} from '../lib/validation/kube.js'
import type {ContextStatus} from '../lib/proxy-status/collect.js'
import {parseSelector, type Selector} from '../lib/proxy-status/selector.js'
import {proxyStatusJson, renderProxyStatusTable, type ProxyStatusError, type ProxyStatusRow} from '../lib/proxy-status/status.js'
import type {VmRecord} from '../lib/proxy-status/vms.js'
import type {Frame} from '../lib/proxy-status/watch.js'

interface Problem {
  context: string
  istiod?: string
  error: MeshvmError
}

interface Snapshot {
  rows: ProxyStatusRow[]
  /** How many contexts answered: with more than one, the table has a CONTEXT column. */
  contextsRead: number
  problems: Problem[]
  warnings: string[]
  registrationOf: (row: ProxyStatusRow) => VmRecord | undefined
}

const WATCH_GROUP = 'WATCH'

const proxyStatusFlags = {
  // Overrides the base command's single --context: several clusters in one table.
  context: Flags.string({
    summary: 'Kubeconfig context to read (default: the current context). Repeatable: one table for several clusters.',
    multiple: true,
    multipleNonGreedy: true,
    helpGroup: KUBE_GROUP,
  }),
  'all-contexts': Flags.boolean({summary: 'Read every context of the kubeconfig.', helpGroup: KUBE_GROUP}),
  output: Flags.option({char: 'o', summary: 'Output format.', options: ['table', 'wide', 'json', 'yaml'] as const, default: 'table', helpGroup: OUTPUT_GROUP})(),
  vms: Flags.boolean({summary: 'Show VMs only.'}),
  selector: Flags.string({
    char: 'l',
    summary: 'Only proxies whose pod or WorkloadEntry has these labels (e.g. app=web,version!=v1). Repeatable.',
    multiple: true,
    multipleNonGreedy: true,
    aliases: ['labels'],
  }),
  timeout: Flags.string({summary: 'How long to wait for each istiod to answer (e.g. 10s, 500ms).', default: '30s'}),
  'xds-address': Flags.string({
    summary: "Read one istiod outside the cluster (a managed control plane) over xDS at HOST:PORT instead of port-forwarding to istiod pods.",
    description: "The connection is TLS, verified against the mesh root in ConfigMap istio-ca-root-cert and the name istiod[-REV].NS.svc, with a token of service account default in the Istio namespace (audience istio-ca).",
    env: 'MESHVM_XDS_ADDRESS',
    helpGroup: KUBE_GROUP,
  }),
  watch: Flags.boolean({char: 'w', summary: 'Redraw on an interval, highlighting what changed.', helpGroup: WATCH_GROUP}),
  interval: Flags.string({summary: 'Time between two frames of --watch.', default: '2s', helpGroup: WATCH_GROUP}),
  'watch-count': Flags.integer({summary: 'Stop --watch after this many frames.', hidden: true, min: 1, helpGroup: WATCH_GROUP}),
}

type ProxyStatusFlags = Omit<Interfaces.InferredFlags<typeof kubeFlags & typeof commonOutputFlags>, 'context'> & Interfaces.InferredFlags<typeof proxyStatusFlags>

export default class ProxyStatus extends BaseCommand<typeof ProxyStatus> {
  static override summary = "Show whether every proxy — pods and VMs — has istiod's latest configuration."

  static override aliases = ['ps']

  static override description = `Reads every running istiod (pods labelled app=istiod, and istio.io/rev=REVISION, in the -i namespace) all at once, each within --timeout, and prints istioctl's table: NAME CLUSTER CDS LDS EDS RDS ECDS ISTIOD VERSION, sorted by name. Per type: SYNCED, NOT SENT, STALE, STALE (Never Acknowledged), ERROR (a NACK) or IGNORED (not watched), with the time since the last push in parentheses (Istio 1.23+). The syncz of Istio 1.21 (nonces only) is understood too.

Each istiod is reached the way a real cluster allows, through a port-forward (pods/portforward), never through the API server's pod proxy (istiod answers that with 401): first GET /debug/syncz on the monitoring port (annotation prometheus.io/port, else 15014); when istiod serves no HTTP debug (ENABLE_DEBUG_ON_HTTP=false) or the port is closed, xDS on 15012, as istioctl 1.22+ does: TLS verified against the mesh root (ConfigMap istio-ca-root-cert) and the name istiod[-REV].NS.svc, a token of service account default in the Istio namespace (audience istio-ca). One port-forward per istiod serves the whole command (every --watch frame). --debug says which path each istiod was read through. --xds-address reads one istiod outside the cluster (a managed control plane) over xDS.

Without --revision, the revision of the default tag is read (MutatingWebhookConfiguration istio-revision-tag-default, as istioctl 1.28); without a default tag, every istiod.

VMs come from the cluster's WorkloadEntries and WorkloadAutoRegistrations: a registered VM that no istiod reports is listed as NOT CONNECTED. -o wide adds TYPE (pod or vm), ADDRESS, HEALTH (the WorkloadEntry's Healthy condition), REGISTRATION (war/NAME, auto/GROUP or workloadentry/NAME), and marks version skew between proxy and istiod. When several contexts are read, a CONTEXT column tells their rows apart (clusters may share a cluster ID).

An istiod that does not answer is reported on stderr and its rows are marked NO ANSWER; a context that cannot be read is reported too. The rest is printed and the exit code is 7. No running istiod is exit 4; a missing permission (pods/portforward, or serviceaccounts/token for the xDS path) is exit 5, with the RBAC rule to ask for.

With NAME, one proxy is shown in detail: per-type status, nonces, the last NACK, its istiod, its registration and health. NAME is POD.NAMESPACE, HOSTNAME.NAMESPACE for a VM, or a WorkloadEntry or WorkloadAutoRegistration name (an auto-registered WorkloadEntry is GROUP-IP[-NETWORK]); with -n, NAME is looked up in that namespace first.`

  static override examples = [
    {description: 'Every proxy the control plane knows, and every registered VM:', command: '<%= config.bin %> <%= command.id %>'},
    {description: 'VMs only, with address, health and registration:', command: '<%= config.bin %> <%= command.id %> --vms -o wide'},
    {description: 'One VM in detail:', command: '<%= config.bin %> <%= command.id %> vm-1.vms'},
    {description: 'An auto-registered VM in detail, by its WorkloadEntry name:', command: '<%= config.bin %> <%= command.id %> web-10.0.0.5 -n vms'},
    {description: 'A managed control plane outside the cluster, with --debug naming the path each istiod was read through:', command: '<%= config.bin %> <%= command.id %> --xds-address istiod.example.com:15012 --debug'},
    {description: 'Proxies of one namespace and label, for a revisioned control plane:', command: '<%= config.bin %> <%= command.id %> -n apps -l app=web -r canary'},
    {description: 'Two clusters in one table:', command: '<%= config.bin %> <%= command.id %> --context east --context west'},
    {description: 'Redraw every 5 seconds, changes highlighted:', command: '<%= config.bin %> <%= command.id %> --watch --interval 5s'},
    {description: 'For scripts:', command: '<%= config.bin %> <%= command.id %> -o json | jq \'.items[] | select(.xds.CDS.status != "SYNCED") | .name\''},
  ]

  static override args = {
    name: Args.string({description: 'Show this proxy in detail: POD.NAMESPACE, HOSTNAME.NAMESPACE for a VM, or a WorkloadEntry/WorkloadAutoRegistration name (with -n NAMESPACE).', required: false, ignoreStdin: true}),
  }

  static override flags = proxyStatusFlags

  // The repeatable --context replaces the base command's single one.
  declare protected flags: ProxyStatusFlags

  async run(): Promise<void> {
    const f = this.flags
    const contextFlag = f.context
    const timeoutMs = durationFlag('--timeout', f.timeout)
    const intervalMs = durationFlag('--interval', f.interval)
    const selector = parseSelector(f.selector)
    if (f['all-contexts'] && contextFlag && contextFlag.length > 0) throw new UsageError('--all-contexts and --context are exclusive: give contexts by name, or read all of them')
    if (this.args.name !== undefined && f.watch) throw new UsageError('NAME and --watch are exclusive: --watch redraws the whole table')
    if (f['watch-count'] !== undefined && !f.watch) throw new UsageError('--watch-count needs --watch')
    if (this.args.name !== undefined && this.args.name.trim() === '') throw new UsageError('NAME must not be empty: give POD.NAMESPACE or HOSTNAME.NAMESPACE')

    if (f['xds-address'] !== undefined) {
      const {splitAddress} = await import('../lib/istiod/reader.js')
      try {
        splitAddress(f['xds-address'])
      } catch {
        throw flagError('--xds-address', f['xds-address'], 'expected HOST:PORT, e.g. istiod.example.com:15012')
      }
    }

    this.contexts = await this.contextNames(contextFlag, f['all-contexts'])
    const sessions = await this.openSessions(this.contexts)
    try {
      if (this.args.name !== undefined) {
        await this.detail(sessions, this.args.name, timeoutMs, f.output)
        return
      }
      if (f.watch) {
        await this.watchLoop(sessions, {timeoutMs, intervalMs, selector, count: f['watch-count']})
        return
      }
      const snap = await this.snapshot(sessions, {timeoutMs, selector})
      this.out(this.render(snap, undefined))
      this.report(snap)
    } finally {
      for (const p of this.pools.values()) p.close()
      for (const s of sessions.open) s.client.close()
    }
  }

  /** Per context: the istiod readers (one port-forward per istiod for the whole command). */
  private readonly pools = new Map<KubeSession, IstiodPool>()

  private async poolFor(s: KubeSession): Promise<IstiodPool> {
    let pool = this.pools.get(s)
    if (!pool) {
      const {IstiodPool} = await import('../lib/istiod/reader.js')
      const debug = this.flags.debug === true || debugEnabled()
      const where = this.multi ? `context ${s.contextName}: ` : ''
      pool = new IstiodPool(s.client, s.istioNamespace, debug ? (line: string) => this.note(`debug: ${where}${line}`) : undefined)
      this.pools.set(s, pool)
    }
    return pool
  }

  // ------------------------------------------------------------------------------------------------

  private async contextNames(flag: string[] | undefined, all: boolean): Promise<(string | undefined)[]> {
    if (all) {
      const {loadKubeConfig} = await import('../lib/kube/config.js')
      const names = loadKubeConfig({kubeconfig: this.flags.kubeconfig})
        .kc.getContexts()
        .map((c) => c.name)
        .sort()
      if (names.length === 0) throw new MeshvmError('--all-contexts: the kubeconfig has no contexts', {exit: ExitCode.NOT_FOUND, code: 'NoContext'})
      return names
    }
    if (flag && flag.length > 0) {
      const names = flag.flatMap((c) => c.split(',')).map((c) => c.trim())
      if (names.some((n) => n === '')) throw flagError('--context', flag.join(','), 'context names must not be empty')
      return [...new Set(names)]
    }
    return [undefined]
  }

  /** Sessions for every context, opened concurrently; a context that cannot be opened is a problem, not a stop. */
  private async openSessions(contexts: (string | undefined)[]): Promise<{open: KubeSession[]; failed: Problem[]}> {
    const settled = await Promise.allSettled(contexts.map((c) => this.session(c)))
    const open: KubeSession[] = []
    const failed: Problem[] = []
    let bug: unknown
    settled.forEach((s, i) => {
      if (s.status === 'fulfilled') open.push(s.value)
      else if (s.reason instanceof MeshvmError) failed.push({context: contexts[i] ?? '(current)', error: s.reason})
      else bug ??= s.reason
    })
    if (bug !== undefined) {
      for (const c of open) c.client.close()
      throw bug
    }
    if (open.length === 0) throw this.allFailed(failed)
    return {open, failed}
  }

  /** The contexts asked for (undefined: the current one). */
  private contexts: (string | undefined)[] = []

  /** Several contexts: warnings name the context, -o wide adds CONTEXT. */
  private get multi(): boolean {
    return this.contexts.length > 1
  }

  private allFailed(problems: Problem[]): MeshvmError {
    if (problems.length === 1) return problems[0]!.error
    for (const p of problems.slice(0, -1)) this.warnProblem(p)
    const last = problems.at(-1)!
    const exits = new Set(problems.map((p) => p.error.exit))
    return new MeshvmError(`none of the ${problems.length} contexts could be read; context ${last.context}: ${last.error.message}`, {
      exit: exits.size === 1 ? last.error.exit : ExitCode.UNREACHABLE,
      code: 'NoContextAnswered',
      hints: last.error.hints,
    })
  }

  private async snapshot(
    sessions: {open: KubeSession[]; failed: Problem[]},
    options: {timeoutMs: number; selector: Selector; namespace?: string},
  ): Promise<Snapshot> {
    const {collectContext, sortRows} = await import('../lib/proxy-status/collect.js')
    const settled = await Promise.allSettled(
      sessions.open.map(async (s) => {
        const pool = await this.poolFor(s)
        return collectContext(s.client, s.contextName, {
          istioNamespace: s.istioNamespace,
          revision: s.revision,
          pool,
          xdsAddress: this.flags['xds-address'],
          namespace: options.namespace ?? (s.namespaceExplicit ? s.namespace : undefined),
          timeoutMs: options.timeoutMs,
          selector: options.selector.length > 0 ? options.selector : undefined,
        })
      }),
    )
    const problems: Problem[] = [...sessions.failed]
    const warnings: string[] = []
    const statuses: ContextStatus[] = []
    settled.forEach((s, i) => {
      const context = sessions.open[i]!.contextName
      if (s.status === 'rejected') {
        if (!(s.reason instanceof MeshvmError)) throw s.reason
        problems.push({context, error: s.reason})
        return
      }
      statuses.push(s.value)
      for (const failure of s.value.failures) problems.push({context, istiod: failure.istiod.name, error: failure.error})
      for (const w of s.value.warnings) warnings.push(this.multi ? `context ${context}: ${w}` : w)
    })
    if (statuses.length === 0) throw this.allFailed(problems)
    let rows = sortRows(statuses.flatMap((s) => s.rows))
    if (this.flags.vms) rows = rows.filter((r) => r.type !== 'pod')
    const byContext = new Map(statuses.map((s) => [s.context, s.registrations]))
    return {
      rows, problems, warnings, contextsRead: statuses.length,
      registrationOf: (row) => (row.type === 'vm' ? byContext.get(row.context ?? '')?.get(row.name) : undefined),
    }
  }

  private jsonErrors(problems: Problem[]): ProxyStatusError[] {
    return problems.map((p) => ({context: p.context, istiod: p.istiod ?? null, message: p.error.message}))
  }

  private render(snap: Snapshot, changed: ((row: ProxyStatusRow, header: string) => boolean) | undefined): string {
    const output = this.flags.output
    if (output === 'json' || output === 'yaml') return renderData(proxyStatusJson(snap.rows, this.jsonErrors(snap.problems)), output) as string
    return renderProxyStatusTable(snap.rows, {
      wide: output === 'wide',
      context: snap.contextsRead > 1,
      color: false,
      chalk: this.chalkFor(output),
      changed,
    })
  }

  private warnProblem(p: Problem): void {
    const where = this.multi || p.istiod === undefined ? `context ${p.context}: ` : ''
    const tail = p.istiod !== undefined ? '; its proxies are missing from the table (rows marked NO ANSWER)' : '; its proxies are missing from the table'
    this.warning(`${where}${p.error.message}${tail}`)
    for (const h of p.error.hints) this.note(`Hint: ${h}`)
  }

  /** Warnings for what could not be read; exit 7 when part of the answer is missing. */
  private report(snap: Snapshot): void {
    for (const w of snap.warnings) this.warning(w)
    if (snap.problems.length === 0) return
    for (const p of snap.problems) this.warnProblem(p)
    const istiods = snap.problems.filter((p) => p.istiod !== undefined)
    const contexts = snap.problems.filter((p) => p.istiod === undefined)
    const parts = [
      istiods.length > 0 ? `${istiods.length} istiod${istiods.length > 1 ? 's' : ''} did not answer (${istiods.map((p) => p.istiod).join(', ')})` : '',
      contexts.length > 0 ? `${contexts.length} context${contexts.length > 1 ? 's' : ''} could not be read (${contexts.map((p) => p.context).join(', ')})` : '',
    ].filter(Boolean)
    throw new MeshvmError(`proxy status is incomplete: ${parts.join('; ')}`, {exit: ExitCode.PARTIAL, code: 'Incomplete'})
  }

  // ------------------------------------------------------------------------------------------------

  private async detail(sessions: {open: KubeSession[]; failed: Problem[]}, name: string, timeoutMs: number, output: string): Promise<void> {
    const {detailTargets, rowsForTarget} = await import('../lib/proxy-status/detail.js')
    const first = sessions.open[0]!
    const targets = detailTargets(name, {namespace: first.namespace, namespaceExplicit: first.namespaceExplicit})
    const namespaces = [...new Set(targets.map((t) => t.namespace))]
    const snap = await this.snapshot(sessions, {timeoutMs, selector: [], namespace: namespaces.length === 1 ? namespaces[0] : undefined})
    let matches: ProxyStatusRow[] = []
    for (const t of targets) {
      matches = rowsForTarget(snap.rows, t, snap.registrationOf)
      if (matches.length > 0) break
    }
    const id = `${targets[0]!.name}.${targets[0]!.namespace}`
    const namespace = targets[0]!.namespace
    if (matches.length === 0) {
      for (const w of snap.warnings) this.warning(w)
      const hints = [`list the proxies of the namespace with: meshvm proxy-status -n ${namespace}`]
      for (const p of snap.problems) hints.push(`${p.istiod ? `istiod ${p.istiod}` : `context ${p.context}`} could not be read (${p.error.message}); the proxy may be connected to it`)
      throw new MeshvmError(`proxy ${JSON.stringify(id)} not found: no istiod reports it and no WorkloadEntry or WorkloadAutoRegistration registers it`, {
        exit: ExitCode.NOT_FOUND, code: 'ProxyNotFound', hints,
      })
    }
    if (output === 'json' || output === 'yaml') {
      this.out(renderData(proxyStatusJson(matches, this.jsonErrors(snap.problems)), output) as string)
    } else {
      const {renderProxyDetail} = await import('../lib/proxy-status/detail.js')
      this.out(renderProxyDetail(matches, snap.registrationOf))
    }
    this.report({...snap, rows: matches})
  }

  // ------------------------------------------------------------------------------------------------

  private async watchLoop(
    sessions: {open: KubeSession[]; failed: Problem[]},
    options: {timeoutMs: number; intervalMs: number; selector: Selector; count?: number},
  ): Promise<void> {
    const {changedCells, frameOf, removedRows} = await import('../lib/proxy-status/watch.js')
    const tty = Boolean(process.stdout.isTTY) && (this.flags.output === 'table' || this.flags.output === 'wide')
    let previous: Frame | undefined
    let lastWarnings = ''
    let last: Snapshot | undefined
    for (let frame = 1; ; frame++) {
      let snap: Snapshot
      try {
        snap = await this.snapshot(sessions, options)
      } catch (err) {
        // The first frame fails like a plain run; later ones report and keep watching.
        if (frame === 1 || !(err instanceof MeshvmError)) throw err
        const text = `Error: ${err.message}`
        if (text !== lastWarnings) this.note(text)
        lastWarnings = text
        if (options.count !== undefined && frame >= options.count) throw err
        await sleep(options.intervalMs)
        continue
      }
      last = snap
      const current = frameOf(snap.rows)
      const body = this.render(snap, changedCells(previous, current))
      if (tty) {
        const header = `Every ${formatInterval(options.intervalMs)}: meshvm proxy-status    ${new Date().toLocaleTimeString()}\n\n`
        this.out(`\u001B[H\u001B[2J${header}${body}`)
      } else {
        this.out((frame > 1 && this.flags.output !== 'yaml' ? '\n' : '') + (this.flags.output === 'yaml' ? '---\n' : '') + body)
      }
      const gone = removedRows(previous, current)
      const warnings = [...snap.warnings, ...snap.problems.map((p) => `${p.istiod ?? p.context}: ${p.error.message}`), ...gone.map((g) => `gone: ${g}`)].join('\n')
      if (warnings !== lastWarnings && warnings !== '') {
        for (const w of [...snap.warnings]) this.warning(w)
        for (const p of snap.problems) this.warnProblem(p)
        for (const g of gone) this.note(`gone: ${g}`)
      }
      lastWarnings = warnings
      previous = current
      if (options.count !== undefined && frame >= options.count) break
      await sleep(options.intervalMs)
    }
    if (last && last.problems.length > 0) {
      throw new MeshvmError(`proxy status is incomplete in the last frame: ${last.problems.map((p) => p.istiod ?? `context ${p.context}`).join(', ')} could not be read`, {
        exit: ExitCode.PARTIAL, code: 'Incomplete',
      })
    }
  }
}

function durationFlag(flag: string, text: string): number {
  const ms = parseDuration(text)
  if (ms === undefined || ms <= 0) throw flagError(flag, text, 'expected a positive duration such as 10s, 1m or 500ms')
  return ms
}

function formatInterval(ms: number): string {
  return ms % 1000 === 0 ? `${ms / 1000}s` : `${ms}ms`
}

function sleep(ms: number): Promise<void> {
  return new Promise((r) => setTimeout(r, ms))
}
