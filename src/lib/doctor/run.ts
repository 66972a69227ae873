/**
 * One `meshvm doctor` run: for each context, the session, the istiod readers (proxy-status's run, so
 * istiod is reached the same way), the evidence and the diagnosis; the context that holds the VM wins.
 */
import {ExitCode, MeshvmError} from '../errors.js'
import type {KubeSession} from '../kube/session.js'
import {Resources, resourcePath} from '../kube/resources.js'
import type {KubeObject} from '../kube/object.js'
import {diagnose, type DoctorReport, type FixCli} from './diagnose.js'
import {gatherEvidence, inGroup, type GatherOptions, type Target} from './gather.js'
import {cachedReads} from './cache.js'

export interface DoctorRunOptions {
  contexts: (string | undefined)[]
  openSession: (context: string | undefined) => Promise<KubeSession>
  ingressService: string
  vmExec?: string
  timeoutMs: number
  warn: (text: string) => void
  /** How fixes name meshvm and the cluster; `external` adds them to a whole command line from bundle verify. */
  cli?: Omit<FixCli, 'external'> & {external?: (commandLine: string, kube: {kubeconfig?: string; context?: string}) => string}
}

/**
 * One context's session, its client with each read made once per run (the VMs of -A and proxy-status's
 * snapshot share them), what gather needs of it, and the fixes' command-line flags: a report's fixes act
 * on its context (the one that holds the VM, when several were read).
 */
async function openContext(context: string | undefined, o: DoctorRunOptions, namespace?: string) {
  const session = await o.openSession(context)
  const client = cachedReads(session.client)
  const shared = {...session, client}
  const multi = o.contexts.length > 1
  const {ProxyStatusRun} = await import('../proxy-status/run.js')
  let run: Awaited<ReturnType<typeof ProxyStatusRun.start>> | undefined
  let snap: ReturnType<GatherOptions['rows']> | undefined
  const rows: GatherOptions['rows'] = () =>
    (snap ??= (async () => {
      try {
        // Not only VMs: a VM istiod did not register is a proxy row of its own (doctor names why it has no entry).
        run = await ProxyStatusRun.start([context], {openSession: async () => shared, vmsOnly: false}, () => {})
        const s = await run.snapshot({timeoutMs: o.timeoutMs, selector: [], namespace: namespace ?? session.namespace}, () => {})
        const problem = s.problems[0]
        if (s.rows.length === 0 && problem) return {error: problem.error.message}
        return {rows: s.rows, registrationOf: s.registrationOf}
      } catch (err) {
        if (err instanceof MeshvmError) return {error: err.message}
        throw err
      }
    })())
  const options = (): GatherOptions => ({
    namespace: session.namespace,
    istioNamespace: session.istioNamespace,
    revision: session.revision,
    ingressService: o.ingressService,
    vmExec: o.vmExec,
    timeoutMs: o.timeoutMs,
    now: new Date(),
    ...(multi ? {context: session.contextName} : {}),
    rows,
  })
  const kube = {kubeconfig: o.cli?.kubeconfig, context: multi ? session.contextName : o.cli?.context}
  const external = o.cli?.external
  const cli: FixCli = {bin: o.cli?.bin, ...kube, ...(external ? {external: (line: string) => external(line, kube)} : {})}
  return {session, client, options, cli, close: () => (run ? run.close() : session.client.close())}
}

/** Doctors one VM (a query, or the bundle's VM); with several contexts, in the one that holds it. */
export async function doctorVm(target: Target, o: DoctorRunOptions): Promise<DoctorReport> {
  let fallback: DoctorReport | undefined
  const holders: string[] = []
  let chosen: DoctorReport | undefined
  let looked: string | undefined
  for (const context of o.contexts) {
    const c = await openContext(context, o, target.bundle?.env.POD_NAMESPACE)
    looked ??= target.bundle?.env.POD_NAMESPACE ?? c.session.namespace
    try {
      const evidence = await gatherEvidence(c.client, target, c.options())
      if (evidence.ambiguous) {
        throw new MeshvmError(`${evidence.ambiguous.length} VMs match ${JSON.stringify(evidence.query)}: ${evidence.ambiguous.join(', ')}`, {
          code: 'Ambiguous',
          exit: 2,
          hints: [`name one: meshvm doctor ${evidence.ambiguous[0]} -n ${evidence.namespace}, or all of them: meshvm doctor -A -n ${evidence.namespace}`],
        })
      }
      if (target.bundle) {
        const {liveChecks} = await import('../bundle-verify/live.js')
        const live = await liveChecks(c.session.client, target.bundle, {istioNamespace: c.session.istioNamespace, ingressService: o.ingressService})
        evidence.bundle = {...evidence.bundle, checks: [...target.bundle.checks, ...live]}
      }
      const report = diagnose(evidence, c.cli)
      if (evidence.entry || evidence.war) {
        holders.push(c.session.contextName)
        chosen ??= report
      } else if (evidence.group || target.bundle || evidence.proxy) fallback ??= report
    } finally {
      c.close()
    }
  }
  if (holders.length > 1) o.warn(`the VM is registered in ${holders.length} contexts (${holders.join(', ')}): showing ${holders[0]}`)
  const report = chosen ?? fallback
  if (report) return report
  const namespace = looked ?? 'default'
  throw new MeshvmError(
    `no VM ${JSON.stringify(target.query ?? '(bundle)')} in namespace ${JSON.stringify(namespace)}: no WorkloadEntry, WorkloadAutoRegistration, WorkloadGroup or proxy has that name or address`,
    {
      exit: ExitCode.NOT_FOUND,
      code: 'NotFound',
      hints: [`list the VMs with: meshvm war list -n ${namespace}`],
    },
  )
}

/** -A: every VM of the namespace (or of one WorkloadGroup), in every context. */
export async function doctorAll(group: string | undefined, o: DoctorRunOptions): Promise<DoctorReport[]> {
  const reports: DoctorReport[] = []
  for (const context of o.contexts) {
    const c = await openContext(context, o)
    try {
      const ns = c.session.namespace
      // The VMs of the namespace share its lists (c.client): one read of each per run.
      const entries = await c.client.list<KubeObject>(resourcePath(Resources.workloadEntries, {namespace: ns}))
      const names = entries
        .filter((e) => group === undefined || inGroup(e, group))
        .flatMap((e) => e.metadata?.name || [])
        .sort()
      for (const name of names) reports.push(diagnose(await gatherEvidence(c.client, {query: name}, c.options()), c.cli))
    } finally {
      c.close()
    }
  }
  return reports
}
