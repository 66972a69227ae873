import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import {flagDuration} from '../lib/output/age.js'
import {BaseCommand, durationFlag, KUBE_GROUP, OUTPUT_GROUP} from '../lib/cli/base-command.js'
import {contextNames, multiContextFlags, type MultiContextFlagValues} from '../lib/cli/multi-context.js'
import {outputFlags, printOptions} from '../lib/cli/output-flags.js'
import {debugEnabled, ExitCode, flagError, MeshvmError, UsageError} from '../lib/errors.js'
import {parseSelector, type Selector} from '../lib/kube/selector.js'
import {ALL_KINDS, byNamespaceThenName, Printer, type OutputKind} from '../lib/output/printer.js'
import type {Problem, ProxyStatusRun, Snapshot} from '../lib/proxy-status/run.js'
import {ISTIOCTL_GAP, istioctlSyncz, PROXY_STATUS_LAYOUTS, proxyStatusColumns, proxyStatusJsonItem, proxyStatusList, proxyStatusName, renderProxyStatusTable} from '../lib/proxy-status/status.js'
import type {ProxyStatusJsonItem, ProxyStatusLayout, ProxyStatusRow} from '../lib/proxy-status/status.js'
import type {VmCheck} from '../lib/proxy-status/vm-checks.js'
import type {Frame} from '../lib/proxy-status/watch.js'

const WATCH_GROUP = 'WATCH'

/** Formats in kubectl's dialect: their rows come in kubectl's order for lists across namespaces (namespace, then name). */
const KUBECTL_ORDERED = new Set<OutputKind>(['name', 'jsonpath', 'jsonpath-as-json', 'custom-columns'])
// Rows carry no labels of their own (-l matches the pod's or WorkloadEntry's), so no --show-labels / -L.
const {output, 'no-headers': noHeaders, 'sort-by': sortBy} = outputFlags(ALL_KINDS)

const proxyStatusFlags = {
  // Overrides the base command's single --context: several clusters in one table.
  ...multiContextFlags,
  output: {
    ...output,
    description: `json, yaml, jsonpath, jsonpath-as-json and --sort-by read the ProxyStatusList schema (items with name, namespace, type, cluster, context, version, istiod, xds.TYPE.status, vm), e.g. -o jsonpath='{.items[*].name}' or -o custom-columns=NAME:.name,CDS:.xds.CDS.status; -o name prints pod/NAME for pods and the WorkloadEntry (or WorkloadAutoRegistration) of a VM. With --schema istioctl, -o json|yaml print istioctl 1.30+'s shape instead. go-template is not supported (no maintained JavaScript implementation of Go templates).`,
  } as typeof output,
  'no-headers': noHeaders,
  'sort-by': sortBy,
  verbosity: Flags.integer({
    char: 'v',
    summary: "As istioctl's -v: 0 prints SUBSCRIBED TYPES; 1 (or more) one column per xDS type with its state, in alphabetical order (CDS ECDS EDS LDS RDS).",
    min: 0,
    default: 0,
    helpGroup: OUTPUT_GROUP,
  }),
  layout: Flags.option({
    summary: "Table columns: subscribed (istioctl 1.27+'s default), verbose (the same as -v 1) or types (istioctl 1.22–1.26: CDS LDS EDS RDS ECDS ISTIOD VERSION).",
    options: PROXY_STATUS_LAYOUTS as ProxyStatusLayout[],
    helpGroup: OUTPUT_GROUP,
  })(),
  schema: Flags.option({
    summary:
      "What -o json|yaml print: meshvm (the ProxyStatusList schema, the default) or istioctl (istioctl 1.30+'s -o json|yaml: one syncz DiscoveryResponse per istiod, -n keeping that namespace's proxies).",
    options: ['meshvm', 'istioctl'] as const,
    default: 'meshvm',
    helpGroup: OUTPUT_GROUP,
  })(),
  'all-namespaces': Flags.boolean({char: 'A', summary: 'Proxies of every namespace (the default without -n; accepted as in kubectl).', exclusive: ['namespace']}),
  vms: Flags.boolean({summary: 'Show VMs only.'}),
  'vm-exec': Flags.string({
    summary:
      'With -o wide: command template (run with sh -c) that runs a shell on a VM, e.g. \'ssh "$MESHVM_VM_ADDRESS"\'; adds CERT EXPIRES and ROOT MATCH for each VM (read-only, as meshvm doctor --vm-exec).',
    exclusive: ['watch'],
  }),
  selector: Flags.string({
    char: 'l',
    summary: 'Only proxies whose pod or WorkloadEntry has these labels (e.g. app=web,version!=v1). Repeatable.',
    multiple: true,
    multipleNonGreedy: true,
    aliases: ['labels'],
  }),
  timeout: durationFlag({summary: 'How long to wait for each istiod to answer (e.g. 10s, 500ms).', default: 30_000, defaultHelp: async () => '30s'}),
  'xds-address': Flags.string({
    summary: 'Read one istiod outside the cluster (a managed control plane) over xDS at HOST:PORT instead of port-forwarding to istiod pods.',
    description:
      'The connection is TLS, verified against the mesh root in ConfigMap istio-ca-root-cert and the name istiod[-REV].NS.svc, with a token of service account default in the Istio namespace (audience istio-ca).',
    env: 'MESHVM_XDS_ADDRESS',
    helpGroup: KUBE_GROUP,
  }),
  watch: Flags.boolean({char: 'w', summary: 'Redraw on an interval, highlighting what changed.', helpGroup: WATCH_GROUP}),
  interval: durationFlag({summary: 'Time between two frames of --watch.', default: 2000, defaultHelp: async () => '2s', helpGroup: WATCH_GROUP}),
  'watch-count': Flags.integer({summary: 'Stop --watch after this many frames.', hidden: true, min: 1, dependsOn: ['watch'], helpGroup: WATCH_GROUP}),
}

type ProxyStatusFlags = MultiContextFlagValues<typeof proxyStatusFlags>

export default class ProxyStatus extends BaseCommand<typeof ProxyStatus> {
  static override summary = "Show whether every proxy — pods and VMs — has istiod's latest configuration."

  static override aliases = ['ps']

  static override description =
    `Reads every running istiod (pods labelled app=istiod, and istio.io/rev=REVISION, in the -i namespace) all at once, each within --timeout, and prints what istioctl 1.28+ prints for the same answers: NAME CLUSTER ISTIOD VERSION SUBSCRIBED TYPES (e.g. 5 (CDS,LDS,EDS,RDS,ECDS)), sorted by name; with no proxy, the header alone (exit 0). -v 1 prints one column per type instead, in istioctl's alphabetical order (CDS ECDS EDS LDS RDS): SYNCED, NOT SENT, STALE, STALE (Never Acknowledged), ERROR (a NACK) or IGNORED (not watched), with the time since the last push in parentheses (Istio 1.23+). --layout types prints istioctl 1.22–1.26's table (NAME CLUSTER CDS LDS EDS RDS ECDS ISTIOD VERSION). The syncz of Istio 1.21 (nonces only) is understood too.

Each istiod is reached the way a real cluster allows, through a port-forward (pods/portforward), never through the API server's pod proxy (istiod answers that with 401): first GET /debug/syncz on the monitoring port (annotation prometheus.io/port, else 15014); when istiod serves no HTTP debug (ENABLE_DEBUG_ON_HTTP=false) or the port is closed, xDS on 15012, as istioctl 1.22+ does: TLS verified against the mesh root (ConfigMap istio-ca-root-cert), as istioctl 1.29.9+ verifies it, and the name istiod[-REV].NS.svc (there is no --insecure), a token of service account default in the Istio namespace (audience istio-ca). One port-forward per istiod serves the whole command (every --watch frame). --debug says which path each istiod was read through. --xds-address reads one istiod outside the cluster (a managed control plane) over xDS.

Without --revision, the revision of the default tag is read (MutatingWebhookConfiguration istio-revision-tag-default, as istioctl 1.28+); without a default tag, every istiod.

VMs come from the cluster's WorkloadEntries and WorkloadAutoRegistrations: a registered VM that no istiod reports is listed as NOT CONNECTED. A proxy is paired with its registration by name, else by the address it reports to istiod (istiod's /debug/adsz, read only where names do not pair). -o wide adds TYPE (pod or vm), ADDRESS, HEALTH (the WorkloadEntry's Healthy condition), REGISTRATION (war/NAME, auto/GROUP or workloadentry/NAME), and marks version skew between proxy and istiod. When several contexts are read, a CONTEXT column tells their rows apart (clusters may share a cluster ID).

An istiod that does not answer is reported on stderr and its rows are marked NO ANSWER; a context that cannot be read is reported too. The rest is printed and the exit code is 7. No running istiod is exit 4; a missing permission (pods/portforward, or serviceaccounts/token for the xDS path) is exit 5, with the RBAC rule to ask for.

With NAME, one proxy is shown in detail: per-type status, nonces, the last NACK, its istiod, its registration and health, and for a VM its WorkloadEntry's tunnel label (networking.istio.io/tunnel) and WaypointBound condition (Istio 1.31). NAME is POD.NAMESPACE, HOSTNAME.NAMESPACE for a VM, or a WorkloadEntry or WorkloadAutoRegistration name (an auto-registered WorkloadEntry is GROUP-IP[-NETWORK]); with -n, NAME is looked up in that namespace first.`

  static override examples = (
    [
      ['Every proxy the control plane knows, and every registered VM:', ''],
      ['VMs only, with address, health and registration:', ' --vms -o wide'],
      ['One VM in detail:', ' vm-1.vms'],
      ['An auto-registered VM in detail, by its WorkloadEntry name:', ' web-10.0.0.5 -n vms'],
      ['A managed control plane outside the cluster, with --debug naming the path each istiod was read through:', ' --xds-address istiod.example.com:15012 --debug'],
      ['Proxies of one namespace and label, for a revisioned control plane:', ' -n apps -l app=web -r canary'],
      ['Two clusters in one table:', ' --context east --context west'],
      ['Redraw every 5 seconds, changes highlighted:', ' --watch --interval 5s'],
      ['Per-type sync states, as istioctl -v 1 (or the 1.22–1.26 table with --layout types):', ' -v 1'],
      ['For scripts:', ' -o json | jq \'.items[] | select(.xds.CDS.status != "SYNCED") | .name\''],
      ['What istioctl 1.30+ prints with -o json (one syncz answer per istiod), for scripts written against it:', ' -n apps -o json --schema istioctl'],
    ] as const
  ).map(([description, args]) => ({description, command: `<%= config.bin %> <%= command.id %>${args}`}))

  static override args = {
    name: Args.string({
      description: 'Show this proxy in detail: POD.NAMESPACE, HOSTNAME.NAMESPACE for a VM, or a WorkloadEntry/WorkloadAutoRegistration name (with -n NAMESPACE).',
      required: false,
      ignoreStdin: true,
    }),
  }

  static override flags = proxyStatusFlags

  // The repeatable --context replaces the base command's single one.
  declare protected flags: ProxyStatusFlags

  async run(): Promise<void> {
    const f = this.flags
    const timeoutMs = f.timeout
    const intervalMs = f.interval
    const selector = parseSelector(f.selector)
    const print = printOptions(f, ALL_KINDS)
    if (f.layout !== undefined && f.layout !== 'verbose' && f.verbosity > 0) {
      throw flagError('--layout', f.layout, `cannot be combined with -v ${f.verbosity} (which is --layout verbose); give one of them`)
    }
    this.layout = f.layout ?? (f.verbosity > 0 ? 'verbose' : 'subscribed')
    if (f.schema === 'istioctl' && print.output.kind !== 'json' && print.output.kind !== 'yaml') {
      throw flagError('--schema', f.schema, "is the shape of -o json|yaml: add -o json or -o yaml (the table is istioctl's by default)")
    }
    if (f.schema === 'istioctl' && (f.watch || this.args.name !== undefined)) {
      throw flagError('--schema', f.schema, `prints istioctl's whole answer: it cannot be combined with ${f.watch ? '--watch' : 'NAME'}`)
    }
    // NAME is an argument: oclif's exclusive/dependsOn only relate flags.
    if (this.args.name !== undefined && f.watch) throw new UsageError('NAME and --watch are exclusive: --watch redraws the whole table')
    if (this.args.name !== undefined && this.args.name.trim() === '') throw new UsageError('NAME must not be empty: give POD.NAMESPACE, HOSTNAME.NAMESPACE or a WorkloadEntry name')
    if (f['vm-exec'] !== undefined && (print.output.kind !== 'wide' || this.args.name !== undefined)) {
      throw new UsageError('--vm-exec adds CERT EXPIRES and ROOT MATCH to -o wide: use it with -o wide (for one VM in depth: meshvm doctor NAME --vm-exec …)')
    }
    if (f['xds-address'] !== undefined && !/^(\[[^\]]+\]|[^:\s]+):\d{1,5}$/.test(f['xds-address'])) {
      throw flagError('--xds-address', f['xds-address'], 'expected HOST:PORT, e.g. istiod.example.com:15012')
    }

    const {ProxyStatusRun} = await import('../lib/proxy-status/run.js')
    const contexts = await contextNames(f.context, f['all-contexts'], f.kubeconfig)
    this.multi = contexts.length > 1
    const debug = f.debug === true || debugEnabled()
    const run = await ProxyStatusRun.start(
      contexts,
      {openSession: (c) => this.session(c), debug: debug ? (line) => this.note(`debug: ${line}`) : undefined, xdsAddress: f['xds-address'], vmsOnly: f.vms},
      this.onProblem,
    )
    this.kind = print.output.kind
    this.print = print
    try {
      if (this.args.name !== undefined) await this.detail(run, this.args.name, timeoutMs)
      else if (f.watch) await this.watchLoop(run, {timeoutMs, intervalMs, selector, count: f['watch-count']})
      else {
        const snap = await run.snapshot({timeoutMs, selector}, this.onProblem)
        if (f.schema === 'istioctl') {
          this.out(await this.istioctlDocuments(snap))
          this.report(snap)
          return
        }
        if (f['vm-exec'] !== undefined) this.vmChecks = await this.checkVms(snap, f['vm-exec'], timeoutMs)
        this.out(this.render(snap, snap.rows, undefined))
        if (snap.rows.length === 0 && this.kind !== 'json' && this.kind !== 'yaml') {
          // istioctl 1.28+ prints its header and exits 0 when no proxy is connected: the same bytes on stdout.
          if ((this.kind === 'table' || this.kind === 'wide') && this.print.noHeaders !== true) {
            this.out(renderProxyStatusTable([], {wide: this.kind === 'wide', context: snap.contextsRead > 1, color: false, layout: this.layout}))
          }
          this.note(this.nothingFound())
        }
        this.report(snap)
      }
    } finally {
      run.close()
    }
  }

  /** Several contexts asked for: warnings name the context. */
  private multi = false

  private kind: OutputKind = 'table'

  private layout: ProxyStatusLayout = 'subscribed'

  private print!: ReturnType<typeof printOptions>

  private readonly onProblem = (p: Problem): void => this.warnProblem(p)

  /** `war list`'s note for an empty answer, on stderr (stdout stays empty, as kubectl's "No resources found"). */
  private nothingFound(): string {
    const what = this.flags.vms ? 'VMs' : 'proxies'
    const ns = this.flags.namespace
    return `No ${what} found${ns === undefined ? '' : ` in namespace ${ns}`}${this.flags.selector ? ' matching -l' : ''}.`
  }

  private vmChecks: Map<ProxyStatusRow, VmCheck> | undefined

  /** --vm-exec: each VM probed through the command, its namespace's mesh root read from the current context. */
  private async checkVms(snap: Snapshot, vmExec: string, timeoutMs: number): Promise<Map<ProxyStatusRow, VmCheck>> {
    const session = await this.session(this.flags.context?.[0])
    try {
      const {checkVms} = await import('../lib/proxy-status/vm-checks.js')
      return await checkVms(session.client, snap.rows, {vmExec, timeoutMs, istioNamespace: session.istioNamespace})
    } finally {
      session.client.close()
    }
  }

  /** `rows` in the chosen format, through the one printer (table and wide: istioctl's table, byte for byte). */
  private render(snap: Snapshot, rows: ProxyStatusRow[], changed: ((row: ProxyStatusRow, header: string) => boolean) | undefined): string {
    const kind = this.kind
    let text = ''
    const printer = new Printer<ProxyStatusRow>(
      {
        columns: proxyStatusColumns({wide: kind === 'wide', context: snap.contextsRead > 1, color: false, chalk: this.chalkFor(kind), changed, layout: this.layout, vmChecks: this.vmChecks}),
        object: proxyStatusJsonItem,
        name: (r) => proxyStatusName(r, snap.registrationOf(r)),
        document: (items) =>
          proxyStatusList(
            items as ProxyStatusJsonItem[],
            snap.problems.map((p) => ({context: p.context, istiod: p.istiod ?? null, message: p.error.message})),
          ),
        gap: ISTIOCTL_GAP,
        // istioctl's order (name, then istiod) for its table and meshvm's JSON; kubectl's for its formats.
        order: KUBECTL_ORDERED.has(kind) ? byNamespaceThenName((r: ProxyStatusRow) => r) : undefined,
      },
      this.print,
      (t) => (text += t),
    )
    // Placeholder rows (an istiod that did not answer) are table-only: elsewhere the failure is in `errors`.
    printer.add(kind === 'table' || kind === 'wide' ? rows : rows.filter((r) => r.type !== 'istiod'))
    printer.finish()
    return text
  }

  /** istioctl 1.30+'s -o json|yaml: each document as istioctl's Fprintln writes it (JSON indented by 4; YAML with sorted keys). */
  private async istioctlDocuments(snap: Snapshot): Promise<string> {
    const docs = istioctlSyncz(snap.rows)
    if (this.kind === 'json') return docs.map((d) => JSON.stringify(d, null, 4) + '\n').join('')
    const {toYaml} = await import('../lib/yaml.js')
    return docs.map((d) => toYaml(sortedKeys(d)) + '\n').join('')
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

  private async detail(run: ProxyStatusRun, name: string, timeoutMs: number): Promise<void> {
    let found: Awaited<ReturnType<ProxyStatusRun['detail']>>
    try {
      found = await run.detail(name, timeoutMs, this.onProblem)
    } catch (err) {
      for (const w of (err as {warnings?: string[]}).warnings ?? []) this.warning(w)
      throw err
    }
    const {snap, matches} = found
    if (this.kind === 'table' || this.kind === 'wide') {
      const {renderProxyDetail} = await import('../lib/proxy-status/detail.js')
      this.out(renderProxyDetail(matches, snap.registrationOf))
    } else {
      this.out(this.render(snap, matches, undefined))
    }
    this.report({...snap, rows: matches})
  }

  private async watchLoop(run: ProxyStatusRun, options: {timeoutMs: number; intervalMs: number; selector: Selector; count?: number}): Promise<void> {
    const {changedCells, frameOf, removedRows} = await import('../lib/proxy-status/watch.js')
    const tty = Boolean(process.stdout.isTTY) && (this.kind === 'table' || this.kind === 'wide')
    let previous: Frame | undefined
    let lastWarnings = ''
    let last: Snapshot | undefined
    for await (const {frame, snap, error} of run.frames(options, this.onProblem)) {
      if (error) {
        const text = `Error: ${error.message}`
        if (text !== lastWarnings) this.note(text)
        lastWarnings = text
        if (options.count !== undefined && frame >= options.count) throw error
        continue
      }
      last = snap!
      const current = frameOf(last.rows)
      const body = this.render(last, last.rows, changedCells(previous, current))
      if (tty) {
        const header = `Every ${flagDuration(options.intervalMs)}: meshvm proxy-status    ${new Date().toLocaleTimeString()}\n\n`
        this.out(`\u001B[H\u001B[2J${header}${body}`)
      } else {
        this.out((frame > 1 && this.kind !== 'yaml' ? '\n' : '') + (this.kind === 'yaml' ? '---\n' : '') + body)
      }
      const gone = removedRows(previous, current)
      const warnings = [...last.warnings, ...last.problems.map((p) => `${p.istiod ?? p.context}: ${p.error.message}`), ...gone.map((g) => `gone: ${g}`)].join('\n')
      if (warnings !== lastWarnings && warnings !== '') {
        for (const w of last.warnings) this.warning(w)
        for (const p of last.problems) this.warnProblem(p)
        for (const g of gone) this.note(`gone: ${g}`)
      }
      lastWarnings = warnings
      previous = current
    }
    if (last && last.problems.length > 0) {
      throw new MeshvmError(`proxy status is incomplete in the last frame: ${last.problems.map((p) => p.istiod ?? `context ${p.context}`).join(', ')} could not be read`, {
        exit: ExitCode.PARTIAL,
        code: 'Incomplete',
      })
    }
  }
}

/** sigs.k8s.io/yaml's key order (it goes through a Go map): sorted, at every level. */
function sortedKeys(v: unknown): unknown {
  if (Array.isArray(v)) return v.map(sortedKeys)
  if (v === null || typeof v !== 'object') return v
  const out: Record<string, unknown> = {}
  for (const k of Object.keys(v).sort()) out[k] = sortedKeys((v as Record<string, unknown>)[k])
  return out
}
