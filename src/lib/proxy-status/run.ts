/**
 * One `meshvm proxy-status` run, without its output: the contexts to read, a session and a pool of
 * istiod readers per context (one port-forward per istiod for the whole run), snapshots of every
 * context at once, the lookup of one proxy for NAME, and the frames of --watch. The command parses
 * flags, calls this, and renders.
 */
import {ExitCode, MeshvmError} from '../errors.js'
import {IstiodPool} from '../istiod/reader.js'
import type {KubeSession} from '../kube/session.js'
import {collectContext, sortRows, type ContextStatus} from './collect.js'
import {detailTargets, rowsForTarget} from './detail.js'
import type {ProxyStatusRow} from './model.js'
import type {Selector} from '../kube/selector.js'
import {sleep} from '../util/sleep.js'
import type {VmRecord} from './vms.js'

export interface Problem {
  context: string
  istiod?: string
  error: MeshvmError
}

export interface Snapshot {
  rows: ProxyStatusRow[]
  /** How many contexts answered: with more than one, the table has a CONTEXT column. */
  contextsRead: number
  problems: Problem[]
  warnings: string[]
  registrationOf: (row: ProxyStatusRow) => VmRecord | undefined
  /** Registrations connected to istiods of other revisions (not in the rows). */
  elsewhere: VmRecord[]
}

export interface RunOptions {
  /** Opens the session of a context (undefined: the current one). */
  openSession: (context: string | undefined) => Promise<KubeSession>
  /** --debug lines (which path each istiod was read through), or undefined. */
  debug?: (line: string) => void
  xdsAddress?: string
  /** --vms: VM rows only. */
  vmsOnly: boolean
}

/** When no context could be read: the one error, or a summary naming the last (the others go to `warn`). */
function allContextsFailed(problems: Problem[], warn: (p: Problem) => void): MeshvmError {
  if (problems.length === 1) return problems[0]!.error
  for (const p of problems.slice(0, -1)) warn(p)
  const last = problems.at(-1)!
  const exits = new Set(problems.map((p) => p.error.exit))
  return new MeshvmError(`none of the ${problems.length} contexts could be read; context ${last.context}: ${last.error.message}`, {
    exit: exits.size === 1 ? last.error.exit : ExitCode.UNREACHABLE,
    code: 'NoContextAnswered',
    hints: last.error.hints,
  })
}

export class ProxyStatusRun {
  private readonly pools = new Map<KubeSession, IstiodPool>()

  private constructor(
    readonly contexts: (string | undefined)[],
    private readonly open: KubeSession[],
    private readonly failed: Problem[],
    private readonly options: RunOptions,
  ) {}

  /** Sessions for every context, opened concurrently; a context that cannot be opened is a problem, not a stop. */
  static async start(contexts: (string | undefined)[], options: RunOptions, warn: (p: Problem) => void): Promise<ProxyStatusRun> {
    const settled = await Promise.allSettled(contexts.map((c) => options.openSession(c)))
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
    if (open.length === 0) throw allContextsFailed(failed, warn)
    return new ProxyStatusRun(contexts, open, failed, options)
  }

  /** Several contexts asked for: warnings name the context. */
  private get multi(): boolean {
    return this.contexts.length > 1
  }

  private poolFor(s: KubeSession): IstiodPool {
    let pool = this.pools.get(s)
    if (!pool) {
      const debug = this.options.debug
      const where = this.multi ? `context ${s.contextName}: ` : ''
      pool = new IstiodPool(s.client, s.istioNamespace, debug ? (line: string) => debug(`${where}${line}`) : undefined)
      this.pools.set(s, pool)
    }
    return pool
  }

  /** Every context read at once; throws only when none could be read. */
  async snapshot(options: {timeoutMs: number; selector: Selector; namespace?: string; entries?: boolean}, warn: (p: Problem) => void): Promise<Snapshot> {
    const settled = await Promise.allSettled(
      this.open.map((s) =>
        collectContext(s.client, s.contextName, {
          istioNamespace: s.istioNamespace,
          revision: s.revision,
          pool: this.poolFor(s),
          xdsAddress: this.options.xdsAddress,
          namespace: options.namespace ?? (s.namespaceExplicit ? s.namespace : undefined),
          timeoutMs: options.timeoutMs,
          selector: options.selector.length > 0 ? options.selector : undefined,
          entries: options.entries,
        }),
      ),
    )
    const problems: Problem[] = [...this.failed]
    const warnings: string[] = []
    const statuses: ContextStatus[] = []
    settled.forEach((s, i) => {
      const context = this.open[i]!.contextName
      if (s.status === 'rejected') {
        if (!(s.reason instanceof MeshvmError)) throw s.reason
        problems.push({context, error: s.reason})
        return
      }
      statuses.push(s.value)
      for (const failure of s.value.failures) problems.push({context, istiod: failure.istiod.name, error: failure.error})
      for (const w of s.value.warnings) warnings.push(this.multi ? `context ${context}: ${w}` : w)
    })
    if (statuses.length === 0) throw allContextsFailed(problems, warn)
    let rows = sortRows(statuses.flatMap((s) => s.rows))
    if (this.options.vmsOnly) rows = rows.filter((r) => r.type !== 'pod')
    const byContext = new Map(statuses.map((s) => [s.context, s.registrations]))
    return {
      rows,
      problems,
      warnings,
      contextsRead: statuses.length,
      elsewhere: statuses.flatMap((s) => s.elsewhere),
      registrationOf: (row) => (row.type === 'vm' ? byContext.get(row.context ?? '')?.get(row.name) : undefined),
    }
  }

  /**
   * The rows NAME names (detail.ts: a proxy ID, or a WorkloadEntry/WAR name, -n first), with the
   * snapshot they come from; a ProxyNotFound error when none does.
   */
  async detail(name: string, timeoutMs: number, warn: (p: Problem) => void): Promise<{snap: Snapshot; matches: ProxyStatusRow[]}> {
    const first = this.open[0]!
    const targets = detailTargets(name, {namespace: first.namespace, namespaceExplicit: first.namespaceExplicit})
    const namespaces = [...new Set(targets.map((t) => t.namespace))]
    // The detail view reads each VM's WorkloadEntry (tunnel label, health checks, WaypointBound).
    const snap = await this.snapshot({timeoutMs, selector: [], namespace: namespaces.length === 1 ? namespaces[0] : undefined, entries: true}, warn)
    for (const t of targets) {
      const matches = rowsForTarget(snap.rows, t, snap.registrationOf)
      if (matches.length > 0) return {snap, matches}
    }
    // The snapshot's warnings go with the error: the command prints them before it.
    const notFound = (message: string, hints: string[]) => Object.assign(new MeshvmError(message, {exit: ExitCode.NOT_FOUND, code: 'ProxyNotFound', hints}), {warnings: snap.warnings})
    // A registration that exists but is connected to another revision's istiod is not "not found".
    for (const t of targets) {
      const other = snap.elsewhere.find((v) => v.namespace === t.namespace && (v.workloadEntry === t.name || v.war === t.name || v.name === t.name))
      if (other) {
        throw notFound(
          `proxy ${JSON.stringify(`${t.name}.${t.namespace}`)} is not in this revision's view: ${other.war ? `WorkloadAutoRegistration ${other.war}` : `WorkloadEntry ${other.workloadEntry}`} is connected to istiod ${other.istiod}, of another revision`,
          ['leave --revision out to read every istiod, or pass the revision of that istiod with -r'],
        )
      }
    }
    const {name: proxy, namespace} = targets[0]!
    const hints = [`list the proxies of the namespace with: meshvm proxy-status -n ${namespace}`]
    for (const p of snap.problems) hints.push(`${p.istiod ? `istiod ${p.istiod}` : `context ${p.context}`} could not be read (${p.error.message}); the proxy may be connected to it`)
    throw notFound(`proxy ${JSON.stringify(`${proxy}.${namespace}`)} not found: no istiod reports it and no WorkloadEntry or WorkloadAutoRegistration registers it`, hints)
  }

  /**
   * --watch: a snapshot every `intervalMs`, `count` times (or for ever). The first frame fails like a
   * plain run; a later one that fails yields its error and the watch goes on.
   */
  async *frames(
    options: {timeoutMs: number; intervalMs: number; selector: Selector; count?: number},
    warn: (p: Problem) => void,
  ): AsyncGenerator<{frame: number; snap?: Snapshot; error?: MeshvmError}> {
    for (let frame = 1; ; frame++) {
      try {
        yield {frame, snap: await this.snapshot(options, warn)}
      } catch (err) {
        if (frame === 1 || !(err instanceof MeshvmError)) throw err
        yield {frame, error: err}
      }
      if (options.count !== undefined && frame >= options.count) return
      await sleep(options.intervalMs)
    }
  }

  close(): void {
    for (const p of this.pools.values()) p.close()
    for (const s of this.open) s.client.close()
  }
}
