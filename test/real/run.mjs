// `npm run test:real`: the real-control-plane suite once per pinned Istio release (or only the one
// MESHVM_REAL_ISTIO names), one after the other; extra arguments go to vitest (e.g. -t NAME). It builds
// (or finds cached) the control plane first, so a missing Go or module proxy is one line before vitest
// starts. Prints each run's wall time.
import {spawn, spawnSync} from 'node:child_process'

const build = spawn('bash', ['tools/control-plane/build.sh'], {stdio: ['ignore', 'ignore', 'pipe']})
let last = ''
build.stderr.setEncoding('utf8').on('data', (d) => {
  process.stderr.write(d)
  for (const line of d.split('\n')) if (line.startsWith('control-plane:')) last = line
})
const code = await new Promise((resolve) => build.on('close', resolve))
if (code !== 0) {
  process.stderr.write(`test:real: ${last.replace(/^control-plane: /, '') || 'the control-plane build failed'}\n`)
  process.exit(3)
}

const releases = process.env.MESHVM_REAL_ISTIO ? [process.env.MESHVM_REAL_ISTIO] : ['1.30', '1.31']
const times = []
let failed = 0
for (const istio of releases) {
  const start = Date.now()
  const r = spawnSync('npx', ['vitest', 'run', '-c', 'vitest.real.config.ts', ...process.argv.slice(2)], {stdio: 'inherit', env: {...process.env, MESHVM_REAL_ISTIO: istio}})
  const s = Math.round((Date.now() - start) / 1000)
  times.push(`Istio ${istio}: ${r.status === 0 ? 'passed' : 'FAILED'} in ${s}s`)
  if (r.status !== 0) failed++
}
console.log(`test:real: ${times.join('; ')}`)
process.exit(failed > 0 ? 1 : 0)
