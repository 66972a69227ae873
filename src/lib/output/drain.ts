/**
 * Back-pressure for the page loops that stream a list to stdout.
 *
 * When stdout is a pipe, Node writes to it asynchronously and queues whatever the reader has not
 * taken yet, without limit: `war list -A -o json` of 50,000 registrations piped into a slower reader
 * held all of its output in memory (~614 MiB peak RSS). Awaiting `drained()` after each page keeps
 * at most about one page of output queued, and also pauses the paging (the next page is requested
 * only when the previous one has been taken), as kubectl's writer does by blocking.
 */

/** What `drained` needs of a stream: Node's Writable (process.stdout is one). */
export interface DrainableStream {
  writableNeedDrain?: boolean
  writableEnded?: boolean
  destroyed?: boolean
  once(event: 'drain' | 'close' | 'error', listener: () => void): unknown
  off(event: 'drain' | 'close' | 'error', listener: () => void): unknown
}

/**
 * Undefined when `stream` can take more (the loop goes on without yielding), else a promise of its
 * next 'drain' (or of its closing or failing: the write that failed reports the error, this only
 * stops waiting). Use: `const wait = drained(); if (wait) await wait`.
 */
export function drained(stream: DrainableStream = process.stdout): Promise<void> | undefined {
  if (!stream.writableNeedDrain || stream.writableEnded || stream.destroyed) return undefined
  const events = ['drain', 'close', 'error'] as const
  return new Promise((resolve) => {
    const done = (): void => {
      for (const event of events) stream.off(event, done)
      resolve()
    }
    for (const event of events) stream.once(event, done)
  })
}
