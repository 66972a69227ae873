/**
 * `tsx bench/ab.ts --variants NAME=DIR,… --case crs|bundle|ps [--runs N] -- ENV…`: CPU medians of
 * meshvm builds installed side by side (each DIR a copy of bin/, dist/, package.json and
 * oclif.manifest.json), interleaved, on Node 24, against the control plane `npm run bench:real -- --hold` holds.
 * For deciding whether a change pays (docs/decisions/istioctl-peer.md).
 */
import {execFileSync} from 'node:child_process'
import {mkdtempSync, readdirSync, rmSync} from 'node:fs'
import {loadavg, tmpdir} from 'node:os'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {parseArgs} from 'node:util'
import {measureInterleavedCpu} from './measure.js'

const ROOT = fileURLToPath(new URL('..', import.meta.url))
const {values: o} = parseArgs({
  options: {variants: {type: 'string'}, case: {type: 'string'}, runs: {type: 'string'}, kubeconfig: {type: 'string'}, xds: {type: 'string'}, istioctl: {type: 'string'}},
  strict: true,
})
const NODE = join(execFileSync('bash', [join(ROOT, '.ci/node-lts.sh'), '--fetch', '24'], {encoding: 'utf8'}).trim(), 'node')
const home = mkdtempSync(join(tmpdir(), 'meshvm-ab-'))
const env = {PATH: process.env.PATH, HOME: home, KUBECONFIG: o.kubeconfig!, NO_COLOR: '1'}
const out = join(home, 'bundle')
const args: Record<string, string[]> = {
  crs: ['create-remote-secret', '--context', 'remote', '--name', 'remote'],
  bundle: ['bundle', 'web', '-n', 'bench-apps', '-d', out, '--autoregister'],
  ps: ['proxy-status', '--xds-address', o.xds ?? ''],
}
const istioctlArgs: Record<string, string[]> = {
  crs: args.crs!,
  bundle: [], // needs the WorkloadGroup file: not compared here
  ps: ['proxy-status', '--xds-address', o.xds ?? ''],
}
const variants = o.variants!.split(',').map((v) => v.split('=') as [string, string])
const list = variants.map(([, dir]) => ({argv: [NODE, join(dir, 'bin/run.js'), ...args[o.case!]!], env, before: () => { for (const e of readdirSync(home)) if (e === 'bundle' || e.startsWith('.bundle.')) rmSync(join(home, e), {recursive: true, force: true}) }}))
const names = variants.map(([n]) => n)
if (o.istioctl && istioctlArgs[o.case!]!.length > 0) {
  list.push({argv: [o.istioctl, ...istioctlArgs[o.case!]!], env, before: () => {}})
  names.push('istioctl')
}
const l0 = loadavg()[0]!.toFixed(1)
try {
  const stats = await measureInterleavedCpu(list, {runs: Number(o.runs ?? 15), warmup: 2})
  for (const [i, s] of stats.entries()) console.log(`${o.case} ${names[i]!.padEnd(10)} cpu ${s.cpu.median.toFixed(1)} ms (${s.cpu.min.toFixed(0)}–${s.cpu.max.toFixed(0)})  wall ${s.wall.median.toFixed(1)} ms`)
  console.log(`load ${l0} → ${loadavg()[0]!.toFixed(1)}`)
} finally {
  rmSync(home, {recursive: true, force: true})
}
