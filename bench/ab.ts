/**
 * `tsx bench/ab.ts --variants NAME=DIR,… --case crs|bundle|ps|version|onboard [--runs N] [--kubeconfig F --xds A --istioctl F --wg F] [--node]`: CPU medians of
 * meshvm builds installed side by side (each DIR a copy of bin/, dist/, package.json and
 * oclif.manifest.json), interleaved, on Node 24, against the control plane `npm run bench:real -- --hold` holds.
 * For deciding whether a change pays (docs/decisions/istioctl-peer.md).
 * A variant that is a file is a standalone executable; one whose value ends in `.blob` is a V8 startup snapshot of the prototype
 * bench/prototypes/snapshot/entry.cjs, run as `node --snapshot-blob BLOB -- ARGS` (docs/decisions/startup.md).
 * Cases `version` and `onboard` (offline, no cluster) are the start-up cases of #31 (`--node`: with `node -e 0`).
 */
import {execFileSync} from 'node:child_process'
import {mkdtempSync, readdirSync, rmSync, statSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'
import {measureInterleavedCpu} from './measure.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const {values: o} = parseArgs({
  options: {
    variants: {type: 'string'},
    case: {type: 'string'},
    runs: {type: 'string'},
    kubeconfig: {type: 'string'},
    xds: {type: 'string'},
    istioctl: {type: 'string'},
    node: {type: 'boolean'},
    wg: {type: 'string'},
  },
  strict: true,
})
const NODE = join(execFileSync('bash', [join(ROOT, '.ci/node-lts.sh'), '--fetch', '24'], {encoding: 'utf8'}).trim(), 'node')
const home = mkdtempSync(join(tmpdir(), 'meshvm-ab-'))
const env = {PATH: process.env.PATH, HOME: home, ...(o.kubeconfig ? {KUBECONFIG: o.kubeconfig} : {}), NO_COLOR: '1'}
const out = join(home, 'bundle')
const args: Record<string, string[]> = {
  crs: ['create-remote-secret', '--context', 'remote', '--name', 'remote'],
  bundle: ['bundle', 'web', '-n', 'bench-apps', '-d', out, '--autoregister'],
  ps: ['proxy-status', '--xds-address', o.xds ?? ''],
  version: ['--version'],
  onboard: ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--probe-http', '8080/healthz'],
}
const istioctlArgs: Record<string, string[]> = {
  crs: args.crs!,
  // --wg: the WorkloadGroup as a file (istioctl reads it from one), as bench/real.ts writes it.
  bundle: o.wg ? ['x', 'workload', 'entry', 'configure', '-f', o.wg, '-o', join(home, 'bundle-istioctl'), '--autoregister'] : [],
  ps: ['proxy-status', '--xds-address', o.xds ?? ''],
  version: [],
  onboard: [],
}
const variants = o.variants!.split(',').map((v) => v.split('=') as [string, string])
// A directory: an installed copy; `.blob`: a snapshot for Node 24; any other file: a standalone executable.
const entry = (dir: string) => (dir.endsWith('.blob') ? [NODE, '--snapshot-blob', dir, '--'] : statSync(dir).isFile() ? [dir] : [NODE, join(dir, 'bin/run.js')])
const list = variants.map(([, dir]) => ({
  argv: [...entry(dir), ...args[o.case!]!],
  env,
  before: () => {
    for (const e of readdirSync(home)) if (e === 'bundle' || e.startsWith('.bundle.')) rmSync(join(home, e), {recursive: true, force: true})
  },
}))
const names = variants.map(([n]) => n)
if (o.istioctl && istioctlArgs[o.case!]!.length > 0) {
  list.push({argv: [o.istioctl, ...istioctlArgs[o.case!]!], env, before: () => rmSync(join(home, 'bundle-istioctl'), {recursive: true, force: true})})
  names.push('istioctl')
}
// --node: `node -e 0` beside them, the baseline of the start-up cases.
if (o.node) {
  list.push({argv: [NODE, '-e', '0'], env, before: () => {}})
  names.push('node -e 0')
}
const l0 = loadavg()[0]!.toFixed(1)
try {
  const stats = await measureInterleavedCpu(list, {runs: Number(o.runs ?? 15), warmup: 2})
  for (const [i, s] of stats.entries())
    console.log(`${o.case} ${names[i]!.padEnd(10)} cpu ${s.cpu.median.toFixed(1)} ms (${s.cpu.min.toFixed(0)}–${s.cpu.max.toFixed(0)})  wall ${s.wall.median.toFixed(1)} ms`)
  console.log(`load ${l0} → ${loadavg()[0]!.toFixed(1)}`)
} finally {
  rmSync(home, {recursive: true, force: true})
}
