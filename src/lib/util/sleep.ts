/**
 * Waiting: `ms` milliseconds, or less when `signal` aborts (it resolves then, it does not throw: the
 * caller looks at the signal and reports what was done). Used by retries, polls and rollouts.
 */
export function sleep(ms: number, signal?: AbortSignal): Promise<void> {
  return new Promise((resolve) => {
    if (signal?.aborted) return resolve()
    const timer = setTimeout(done, ms)
    function done(): void {
      clearTimeout(timer)
      signal?.removeEventListener('abort', done)
      resolve()
    }
    signal?.addEventListener('abort', done, {once: true})
  })
}
