/**
 * src/lib/output/young-generation.ts: `war list` holds V8's young generation at Node 20's size while a
 * long list streams (Node 24 lets it grow four times as large: ~90 MiB more peak RSS at 50,000).
 */
import {execFile} from 'node:child_process'
import {promisify} from 'node:util'
import {afterEach, describe, expect, it} from 'vitest'
import {capYoungGeneration, type HeapControl, resetYoungGenerationCap, YOUNG_GENERATION_CAP_BYTES} from '../../../src/lib/output/young-generation.js'

afterEach(() => resetYoungGenerationCap())

function fakeHeap(newSpaceBytes: number): HeapControl & {flags: string[]; size: number} {
  const heap = {
    flags: [] as string[],
    size: newSpaceBytes,
    getHeapSpaceStatistics: () => [
      {space_name: 'old_space', space_size: 10 * YOUNG_GENERATION_CAP_BYTES},
      {space_name: 'new_space', space_size: heap.size},
    ],
    setFlagsFromString: (f: string) => void heap.flags.push(f),
  }
  return heap
}

describe('capYoungGeneration', () => {
  it('sets no flag while the new space is below the cap', () => {
    const heap = fakeHeap(YOUNG_GENERATION_CAP_BYTES / 2)
    expect(capYoungGeneration(heap)).toBe(false)
    expect(heap.flags).toEqual([])
  })

  it('stops growth once the new space reached the cap, once per process', () => {
    const heap = fakeHeap(YOUNG_GENERATION_CAP_BYTES / 2)
    capYoungGeneration(heap)
    heap.size = YOUNG_GENERATION_CAP_BYTES
    expect(capYoungGeneration(heap)).toBe(true)
    heap.size = 2 * YOUNG_GENERATION_CAP_BYTES
    expect(capYoungGeneration(heap)).toBe(true)
    expect(heap.flags).toEqual(['--semi-space-growth-factor=1'])
  })

  it('does nothing when V8 names no new space', () => {
    const heap = {flags: [] as string[], getHeapSpaceStatistics: () => [{space_name: 'old_space', space_size: 1 << 30}], setFlagsFromString: (f: string) => void heap.flags.push(f)}
    expect(capYoungGeneration(heap)).toBe(false)
    expect(heap.flags).toEqual([])
  })

  it("holds a real V8's new space at the cap where its maximum is Node 24's (semi-spaces of 64 MiB)", async () => {
    // Pages of objects that stay alive across scavenges, as a streamed list's parsed page does. The
    // child prints the largest new space it saw; run with and without the cap per page.
    const module = JSON.stringify(new URL('../../../src/lib/output/young-generation.ts', import.meta.url).pathname)
    const script = [
      `import {capYoungGeneration} from ${module}`,
      "import {getHeapSpaceStatistics} from 'node:v8'",
      "const cap = process.env.CAP === 'yes'",
      'let largest = 0',
      'let sink = 0',
      'for (let page = 0; page < 300; page++) {',
      '  const items = Array.from({length: 5000}, (_, i) => ({name: "war-" + page + "-" + i, labels: {a: String(i)}, n: [i, page]}))',
      '  sink += JSON.stringify(items).length',
      '  if (cap) capYoungGeneration()',
      "  largest = Math.max(largest, getHeapSpaceStatistics().find((s) => s.space_name === 'new_space').space_size)",
      '}',
      'process.stdout.write(JSON.stringify({largest, sink: sink > 0}))',
    ].join('\n')
    const run = async (cap: 'yes' | 'no') => {
      const {stdout} = await promisify(execFile)(process.execPath, ['--max-semi-space-size=64', '--import', 'tsx', '--input-type=module', '-e', script], {
        cwd: new URL('../../..', import.meta.url).pathname,
        env: {...process.env, CAP: cap},
        timeout: 60_000,
        encoding: 'utf8',
      })
      return (JSON.parse(stdout) as {largest: number}).largest
    }
    expect(await run('no')).toBeGreaterThan(YOUNG_GENERATION_CAP_BYTES)
    expect(await run('yes')).toBe(YOUNG_GENERATION_CAP_BYTES)
  }, 120_000)
})
