import {existsSync, readFileSync, statSync} from 'node:fs'
import * as Args from '@oclif/core/args'
import * as Flags from '@oclif/core/flags'
import {BaseCommand, durationOrZeroFlag} from '../../lib/cli/base-command.js'
import {outputFlags, printOptions} from '../../lib/cli/output-flags.js'
import {ExitCode, flagError, MeshvmError, UsageError} from '../../lib/errors.js'
import {renderData} from '../../lib/output/render.js'
import {renderTable} from '../../lib/output/table.js'
import {terminalSafe} from '../../lib/output/terminal.js'
import {offlineChecks, readBundleDir, readTarGz, type BundleFiles, type Check} from '../../lib/bundle-verify/offline.js'

const REPORT_KINDS = ['table', 'json', 'yaml'] as const
const {output: REPORT_OUTPUT} = outputFlags(REPORT_KINDS)

export default class BundleVerify extends BaseCommand<typeof BundleVerify> {
  static override summary = 'Check a VM bundle against the live cluster: token, root certificate, istiod, gateway, cluster ID, WorkloadGroup.'

  static override description = `Checks what meshvm bundle wrote (DIR, or the .tar.gz of --archive) and prints one row per check,
pass / warn / fail / skip, with the fix for each failure. Exit 8 when any check fails.

Offline first (nothing is sent anywhere): the files are all there; istio-token is mode 0600 and not a
symbolic link; cluster.env parses as the VM's shell reads it (istio-start.sh: set -a; . cluster.env),
without running it; root-cert.pem holds certificates only, as meshvm bundle writes it; the token is a JWT, not expired (warn when it expires within --warn-within), for
audience istio-ca and for the service account cluster.env names.

Then against the cluster (skipped with --offline): the API server accepts the token for audience
istio-ca (TokenReview, as istiod's CA does); root-cert.pem is the ConfigMap istio-ca-root-cert of the
VM's namespace (a rotated mesh root fails here); CA_ADDR / discoveryAddress name an istiod Service
and a running istiod of that revision; the hosts address is the east-west gateway's current address
and the gateway exposes 15012 and 15017 (an ambient east-west gateway, class istio-east-west with HBONE
on 15008, is named as such: a warning with the fix when it lacks 15443, which the VM's sidecar needs for
services in other networks, a failure when it lacks 15012 or 15017); ISTIO_META_CLUSTER_ID is the cluster's ID; the WorkloadGroup
still exists with the bundle's service account, network and labels. Checks the credentials may not
make (403) are "skip".`

  static override examples = [
    {description: 'Before copying a bundle to the VM:', command: '<%= config.bin %> <%= command.id %> ./web-vm -n apps'},
    {description: 'The archive, warning when the token has less than an hour left:', command: '<%= config.bin %> <%= command.id %> --archive out/web-bundle.tar.gz --warn-within 1h'},
    {description: 'Only the offline checks, as JSON:', command: '<%= config.bin %> <%= command.id %> ./web-vm --offline -o json'},
  ]

  static override args = {
    dir: Args.string({description: 'The bundle directory (as written by meshvm bundle -d DIR).', required: false, ignoreStdin: true}),
  }

  static override flags = {
    archive: Flags.string({summary: 'Check this .tar.gz (meshvm bundle --archive) instead of a directory.'}),
    'warn-within': durationOrZeroFlag({summary: 'Warn when the token expires within this time (e.g. 10m, 1h; 0: never).', default: 600_000, defaultHelp: async () => '10m'}),
    offline: Flags.boolean({summary: 'Only the checks that need no cluster.'}),
    'ingress-service': Flags.string({summary: 'Service (NAME or NAME.NAMESPACE) of the east-west gateway the bundle was made for.', default: 'istio-eastwestgateway'}),
    // The shared -o flag (one validation, one message); the verification is one document: no row flags.
    output: {...REPORT_OUTPUT, summary: 'Output format: table, json, yaml.', description: undefined} as typeof REPORT_OUTPUT,
  }

  async run(): Promise<void> {
    const f = this.flags
    const format = printOptions(f, REPORT_KINDS).output.kind as (typeof REPORT_KINDS)[number]
    const dir = this.args.dir
    if (dir !== undefined && f.archive !== undefined) throw new UsageError('DIR and --archive are exclusive: check a directory or an archive')
    if (dir === undefined && f.archive === undefined) throw new UsageError('missing DIR or --archive FILE: which bundle to check?', ['meshvm bundle verify ./web-vm'])
    const warnWithinMs = f['warn-within']
    let files: BundleFiles
    if (dir !== undefined) {
      if (!existsSync(dir) || !statSync(dir).isDirectory()) throw new UsageError(`DIR ${JSON.stringify(dir)}: not a directory`)
      files = readBundleDir(dir)
    } else {
      const path = f.archive!
      if (!existsSync(path) || !statSync(path).isFile()) throw flagError('--archive', path, 'not a file')
      try {
        files = readTarGz(readFileSync(path))
      } catch (err) {
        throw flagError('--archive', path, `cannot read it as a .tar.gz: ${(err as Error).message}`)
      }
    }
    const off = offlineChecks(files, {now: new Date(), warnWithinMs, source: dir !== undefined ? {dir} : {archive: f.archive!}})
    const checks: Check[] = [...off.checks]
    if (!f.offline) {
      const session = await this.session()
      try {
        const {liveChecks} = await import('../../lib/bundle-verify/live.js')
        checks.push(...(await liveChecks(session.client, off, {istioNamespace: session.istioNamespace, ingressService: f['ingress-service']})))
      } finally {
        session.client.close()
      }
    }
    // Each fix is a command line to paste: it keeps the user's --kubeconfig/--context (and plugin name).
    for (const c of checks) if (c.fix) c.fix = this.keepInvocation(c.fix)
    const failed = checks.filter((c) => c.status === 'fail')
    const warned = checks.filter((c) => c.status === 'warn')
    const source = dir ?? f.archive!
    if (format === 'json' || format === 'yaml') {
      this.out(
        renderData(
          {apiVersion: 'meshvm.io/v1alpha1', kind: 'BundleVerification', bundle: source, offline: f.offline, result: failed.length > 0 ? 'fail' : warned.length > 0 ? 'warn' : 'pass', checks},
          format,
        )!,
      )
    } else {
      const chalk = this.chalkFor(format)
      const colour = (s: string) => (s === 'pass' ? chalk.green(s) : s === 'warn' ? chalk.yellow(s) : s === 'fail' ? chalk.red(s) : chalk.dim(s))
      this.out(
        renderTable(checks, [
          {header: 'CHECK', value: (c) => c.id},
          {header: 'STATUS', value: (c) => c.status, color: (t) => colour(t)},
          {header: 'DETAIL', value: (c) => terminalSafe(c.detail) + (c.fix ? ` — fix: ${terminalSafe(c.fix)}` : '')},
        ]),
      )
    }
    if (failed.length > 0) {
      throw new MeshvmError(`${failed.length} of ${checks.length} checks failed: ${failed.map((c) => c.id).join(', ')}`, {
        exit: ExitCode.CHECK_FAILED,
        code: 'CheckFailed',
        hints: [...new Set(failed.map((c) => c.fix).filter((x): x is string => x !== undefined))].slice(0, 2),
      })
    }
    this.note(`${checks.length} checks: ${checks.length - warned.length - checks.filter((c) => c.status === 'skip').length} passed${warned.length ? `, ${warned.length} warning(s)` : ''}`)
  }
}
