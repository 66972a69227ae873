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
}

export interface Stats {
  median: number
  min: number
  max: number
  runs: number
  peakRssKiB?: number
}

const GNU_TIME = '/usr/bin/time'

/** Runs a command once; with GNU time available, also its peak RSS (max resident set size). */
export function runOnce(argv: string[], env: NodeJS.ProcessEnv = process.env): Promise<Sample> {
  const useTime = existsSync(GNU_TIME)
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
      resolve({wallMs, peakRssKiB: m ? Number(m[1]) : undefined, code: code ?? 1})
    })
  })
}

export async function measure(argv: string[], options: {runs: number; warmup: number; env?: NodeJS.ProcessEnv}): Promise<Stats> {
  for (let i = 0; i < options.warmup; i++) await runOnce(argv, options.env)
  const samples: Sample[] = []
  for (let i = 0; i < options.runs; i++) {
    const s = await runOnce(argv, options.env)
    if (s.code !== 0) throw new Error(`${argv.join(' ')} exited ${s.code}`)
    samples.push(s)
  }
  const walls = samples.map((s) => s.wallMs).sort((a, b) => a - b)
  const mid = Math.floor(walls.length / 2)
  const median = walls.length % 2 ? walls[mid]! : (walls[mid - 1]! + walls[mid]!) / 2
  const rss = samples.map((s) => s.peakRssKiB).filter((x): x is number => x !== undefined)
  return {median, min: walls[0]!, max: walls[walls.length - 1]!, runs: walls.length, peakRssKiB: rss.length ? Math.max(...rss) : undefined}
}
