/**
 * Whole-process measurement: wall time of N runs after warm-up (median, min, max) and peak RSS,
 * always next to a baseline measured in the same run on the same machine.
 */
import {spawn} from 'node:child_process'
import {existsSync} from 'node:fs'

export interface Sample {
  wallMs: number
  peakRssKiB?: number
  code: number
  stderr: string
}

export interface Stats {
  median: number
  min: number
  max: number
  runs: number
  peakRssKiB?: number
}

const GNU_TIME = '/usr/bin/time'

/**
 * Runs a command once. Wall time is measured on the process itself; peak RSS, when asked for, comes
 * from GNU time in a separate run, so the wrapper never inflates the timings.
 */
export function runOnce(argv: string[], env: NodeJS.ProcessEnv = process.env, withRss = false): Promise<Sample> {
  const useTime = withRss && existsSync(GNU_TIME)
  const cmd = useTime ? GNU_TIME : argv[0]!
  const args = useTime ? ['-f', '__MESHVM_RSS__%M', ...argv] : argv.slice(1)
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint()
    const child = spawn(cmd, args, {env, stdio: ['ignore', 'ignore', 'pipe']})
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => {
      const wallMs = Number(process.hrtime.bigint() - started) / 1e6
      const m = /__MESHVM_RSS__(\d+)/.exec(stderr)
      resolve({wallMs, peakRssKiB: m ? Number(m[1]) : undefined, code: code ?? 1, stderr})
    })
  })
}


function stats(walls: number[]): Omit<Stats, 'peakRssKiB'> {
  const sorted = [...walls].sort((a, b) => a - b)
  const mid = Math.floor(sorted.length / 2)
  const median = sorted.length % 2 ? sorted[mid]! : (sorted[mid - 1]! + sorted[mid]!) / 2
  return {median, min: sorted[0]!, max: sorted[sorted.length - 1]!, runs: sorted.length}
}

/**
 * Measures a command and its baseline in alternation (A B A B …), so both see the same machine
 * load; on a noisy 2-core machine this matters more than the number of runs.
 */
export async function measurePair(
  command: string[],
  baseline: string[],
  options: {runs: number; warmup: number; env?: NodeJS.ProcessEnv; baselineEnv?: NodeJS.ProcessEnv},
): Promise<{command: Stats; baseline: Stats}> {
  for (let i = 0; i < options.warmup; i++) {
    await runOnce(baseline, options.baselineEnv ?? options.env)
    await runOnce(command, options.env)
  }
  const a: number[] = []
  const b: number[] = []
  for (let i = 0; i < options.runs; i++) {
    const sb = await runOnce(baseline, options.baselineEnv ?? options.env)
    const sa = await runOnce(command, options.env)
    if (sa.code !== 0) throw new Error(`${command.join(' ')} exited ${sa.code}: ${sa.stderr.trim().split('\n').pop()}`)
    if (sb.code !== 0) throw new Error(`${baseline.join(' ')} exited ${sb.code}`)
    a.push(sa.wallMs)
    b.push(sb.wallMs)
  }
  const [ra, rb] = [await runOnce(command, options.env, true), await runOnce(baseline, options.baselineEnv ?? options.env, true)]
  return {command: {...stats(a), peakRssKiB: ra.peakRssKiB}, baseline: {...stats(b), peakRssKiB: rb.peakRssKiB}}
}
