/**
 * Counts fuzz cases per run, so `npm run test:faults` can print how many were thrown at meshvm.
 * Each test file appends its counts to a file named by MESHVM_FUZZ_LOG, when set.
 */
import {appendFileSync} from 'node:fs'

export function recordCases(area: string, count: number): void {
  const log = process.env.MESHVM_FUZZ_LOG
  if (log) appendFileSync(log, `${JSON.stringify({area, count})}\n`)
}
