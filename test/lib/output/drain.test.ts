/**
 * src/lib/output/drain.ts: the page loops of `war list` wait for stdout's 'drain' between pages,
 * so a slow reader of a pipe never makes meshvm queue the whole list in memory.
 */
import {Writable} from 'node:stream'
import {describe, expect, it} from 'vitest'
import {drained} from '../../../src/lib/output/drain.js'

/** A writable whose writes complete only when the test says so (a reader that has not read yet). */
function slowWritable(): {stream: Writable; release: () => void} {
  const pending: (() => void)[] = []
  const stream = new Writable({highWaterMark: 16, write: (_chunk, _enc, callback) => void pending.push(callback)})
  const release = (): void => {
    for (const cb of pending.splice(0)) cb()
  }
  return {stream, release}
}

describe('drained', () => {
  it('has nothing to wait for while the stream takes more', () => {
    const {stream} = slowWritable()
    stream.write('short')
    expect(drained(stream)).toBeUndefined()
  })

  it('waits for drain when the stream is over its high-water mark', async () => {
    const {stream, release} = slowWritable()
    expect(stream.write('more than sixteen bytes of output')).toBe(false)
    let done = false
    const wait = drained(stream)!.then(() => (done = true))
    await new Promise((r) => setImmediate(r))
    expect(done).toBe(false)
    release()
    await wait
    expect(done).toBe(true)
    expect(stream.listenerCount('drain')).toBe(0)
    expect(stream.listenerCount('close')).toBe(0)
  })

  it('stops waiting when the stream is destroyed (the failed write reports the error)', async () => {
    const {stream} = slowWritable()
    stream.on('error', () => {})
    stream.write('more than sixteen bytes of output')
    const wait = drained(stream)
    stream.destroy(new Error('EPIPE'))
    await expect(wait).resolves.toBeUndefined()
  })
})
