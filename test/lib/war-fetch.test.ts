import {describe, expect, it} from 'vitest'
import {readAhead} from '../../src/lib/war/fetch.js'

/** A source of pages whose steps the test settles by hand, logging what was asked and what ended. */
function manualSource(pages: number, failAt?: number) {
  const log: string[] = []
  const pending: {resolve: () => void}[] = []
  async function* source(): AsyncGenerator<number> {
    try {
      for (let i = 0; i < pages; i++) {
        log.push(`request ${i}`)
        await new Promise<void>((resolve) => pending.push({resolve}))
        if (i === failAt) throw new Error(`page ${i} failed`)
        log.push(`answer ${i}`)
        yield i
      }
    } finally {
      log.push('source closed')
    }
  }
  return {log, pending, source: source()}
}

const tick = (): Promise<void> => new Promise((resolve) => setImmediate(resolve))

describe('readAhead (the next page is requested while the caller works on this one)', () => {
  it('yields every page in order, asking for the next one as soon as one is handed over', async () => {
    const {log, pending, source} = manualSource(3)
    const pages = readAhead(source)
    const first = pages.next()
    await tick()
    pending.shift()!.resolve()
    expect(await first).toEqual({value: 0, done: false})
    await tick()
    // Page 1 is already asked for while the caller holds page 0.
    expect(log).toEqual(['request 0', 'answer 0', 'request 1'])
    pending.shift()!.resolve()
    await tick()
    expect(await pages.next()).toEqual({value: 1, done: false})
    await tick()
    pending.shift()!.resolve()
    expect(await pages.next()).toEqual({value: 2, done: false})
    expect(await pages.next()).toEqual({value: undefined, done: true})
    expect(log).toEqual(['request 0', 'answer 0', 'request 1', 'answer 1', 'request 2', 'answer 2', 'source closed'])
  })

  it('reads at most one page ahead', async () => {
    const {log, pending, source} = manualSource(5)
    const pages = readAhead(source)
    const first = pages.next()
    await tick()
    pending.shift()!.resolve()
    await first
    for (let i = 0; i < 5; i++) await tick()
    pending.shift()?.resolve()
    for (let i = 0; i < 5; i++) await tick()
    // The caller has taken page 0 only: page 1 arrived, page 2 is not asked for.
    expect(log).toEqual(['request 0', 'answer 0', 'request 1', 'answer 1'])
  })

  it('a caller that stops early closes the source once the page in flight has arrived', async () => {
    const {log, pending, source} = manualSource(5)
    const taken: number[] = []
    const consumer = (async () => {
      for await (const page of readAhead(source)) {
        taken.push(page)
        break
      }
    })()
    await tick()
    pending.shift()!.resolve()
    await consumer
    expect(taken).toEqual([0])
    expect(log).toEqual(['request 0', 'answer 0', 'request 1'])
    pending.shift()!.resolve()
    for (let i = 0; i < 5; i++) await tick()
    expect(log).toEqual(['request 0', 'answer 0', 'request 1', 'answer 1', 'source closed'])
    expect(pending).toHaveLength(0)
  })

  it('the error of a page read ahead is thrown when the caller asks for it, and is never unhandled meanwhile', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      const {pending, source} = manualSource(3, 1)
      const pages = readAhead(source)
      const first = pages.next()
      await tick()
      pending.shift()!.resolve()
      expect(await first).toEqual({value: 0, done: false})
      await tick()
      // Page 1 fails while the caller is still busy with page 0.
      pending.shift()!.resolve()
      for (let i = 0; i < 5; i++) await tick()
      await expect(pages.next()).rejects.toThrow('page 1 failed')
      expect(await pages.next()).toEqual({value: undefined, done: true})
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
    expect(unhandled).toEqual([])
  })

  it('a caller that stops early does not see the failure of the page it did not want', async () => {
    const unhandled: unknown[] = []
    const onUnhandled = (reason: unknown): void => void unhandled.push(reason)
    process.on('unhandledRejection', onUnhandled)
    try {
      const {log, pending, source} = manualSource(3, 1)
      const pages = readAhead(source)
      const first = pages.next()
      await tick()
      pending.shift()!.resolve()
      await first
      await pages.return(undefined)
      pending.shift()!.resolve()
      for (let i = 0; i < 5; i++) await tick()
      expect(log).toEqual(['request 0', 'answer 0', 'request 1', 'source closed'])
    } finally {
      process.off('unhandledRejection', onUnhandled)
    }
    expect(unhandled).toEqual([])
  })
})
