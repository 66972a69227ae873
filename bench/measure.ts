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

/** One command line and the environment it runs in. */
export interface Run {
  argv: string[]
  env: NodeJS.ProcessEnv
}

/**
 * Measures several runs in alternation (A B C A B C …), so all see the same machine load; on a
 * noisy 2-core machine this matters more than the number of runs. Then one more run of each under
 * GNU time for its peak RSS.
 */
export async function measureInterleaved(list: Run[], options: {runs: number; warmup: number}): Promise<Stats[]> {
  for (let i = 0; i < options.warmup; i++) for (const r of list) await runOnce(r.argv, r.env)
  const walls: number[][] = list.map(() => [])
  for (let i = 0; i < options.runs; i++) {
    for (const [j, r] of list.entries()) {
      const s = await runOnce(r.argv, r.env)
      if (s.code !== 0) throw new Error(`${r.argv.join(' ')} exited ${s.code}: ${s.stderr.trim().split('\n').pop()}`)
      walls[j]!.push(s.wallMs)
    }
  }
  const out: Stats[] = []
  for (const [j, r] of list.entries()) out.push({...stats(walls[j]!), peakRssKiB: (await runOnce(r.argv, r.env, true)).peakRssKiB})
  return out
}

/** A command and its baseline in alternation (see measureInterleaved). */
export async function measurePair(
  command: string[],
  baseline: string[],
  options: {runs: number; warmup: number; env?: NodeJS.ProcessEnv; baselineEnv?: NodeJS.ProcessEnv},
): Promise<{command: Stats; baseline: Stats}> {
  const env = options.env ?? process.env
  const [b, a] = await measureInterleaved(
    [
      {argv: baseline, env: options.baselineEnv ?? env},
      {argv: command, env},
    ],
    options,
  )
  return {command: a!, baseline: b!}
}

/**
 * Peak RSS of a command whose stdout is a pipe into `cat` (as in `meshvm … | cat`): Node then writes
 * stdout asynchronously, and a writer that ignores back-pressure queues its output in memory.
 */
export function peakRssThroughPipe(argv: string[], env: NodeJS.ProcessEnv): Promise<Sample> {
  if (!existsSync(GNU_TIME)) return Promise.reject(new Error(`${GNU_TIME} (GNU time) is needed to measure peak RSS`))
  return new Promise((resolve, reject) => {
    const started = process.hrtime.bigint()
    // sh runs `time -f … meshvm … | cat > /dev/null`: a real pipe between meshvm and cat.
    const child = spawn('sh', ['-c', '"$@" | cat > /dev/null', 'sh', GNU_TIME, '-f', '__MESHVM_RSS__%M', ...argv], {env, stdio: ['ignore', 'ignore', 'pipe']})
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => {
      const m = /__MESHVM_RSS__(\d+)/.exec(stderr)
      resolve({wallMs: Number(process.hrtime.bigint() - started) / 1e6, peakRssKiB: m ? Number(m[1]) : undefined, code: code ?? 1, stderr})
    })
  })
}

const RUSAGE = new URL('./rusage.py', import.meta.url).pathname

/** One run's wall time, CPU time (user + sys, from wait4) and peak RSS. */
export interface CpuSample {
  wallMs: number
  cpuMs: number
  peakRssKiB: number
}

/**
 * Runs a command once under bench/rusage.py, stdout to /dev/null: its CPU time is what a run costs
 * on a shared machine, where wall time measures the load as much as the program.
 */
export function runCpu(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<CpuSample & {code: number; stderr: string}> {
  return new Promise((resolve, reject) => {
    const child = spawn('python3', [RUSAGE, ...argv], {env, stdio: ['ignore', 'ignore', 'pipe']})
    let stderr = ''
    child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.on('error', reject)
    child.on('close', () => {
      const m = /\n__RUSAGE__ ([\d.]+) ([\d.]+) (\d+) (-?\d+)\n$/.exec(stderr)
      if (!m) return reject(new Error(`${argv.join(' ')}: no rusage line: ${stderr.trim().split('\n').pop()}`))
      resolve({wallMs: Number(m[1]), cpuMs: Number(m[2]), peakRssKiB: Number(m[3]), code: Number(m[4]), stderr: stderr.slice(0, m.index)})
    })
  })
}

export interface CpuStats {
  wall: Omit<Stats, 'peakRssKiB'>
  cpu: Omit<Stats, 'peakRssKiB'>
  /** The largest peak RSS of the measured runs. */
  peakRssKiB: number
}

/**
 * Like measureInterleaved (A B C A B C …, after warm-up), with CPU time and peak RSS of every run.
 * `before`, when given, runs ahead of each run outside the measurement (e.g. removing an output directory).
 */
export async function measureInterleavedCpu(list: (Run & {before?: () => void})[], options: {runs: number; warmup: number}): Promise<CpuStats[]> {
  const samples: CpuSample[][] = list.map(() => [])
  for (let i = 0; i < options.warmup + options.runs; i++) {
    for (const [j, r] of list.entries()) {
      r.before?.()
      const s = await runCpu(r.argv, r.env)
      if (s.code !== 0) throw new Error(`${r.argv.join(' ')} exited ${s.code}: ${s.stderr.trim().split('\n').pop()}`)
      if (i >= options.warmup) samples[j]!.push(s)
    }
  }
  return samples.map((s) => ({wall: stats(s.map((x) => x.wallMs)), cpu: stats(s.map((x) => x.cpuMs)), peakRssKiB: Math.max(...s.map((x) => x.peakRssKiB))}))
}
