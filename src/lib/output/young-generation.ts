/**
 * Holds V8's young generation at the size Node 20 let it reach, for the page loops that stream a
 * long list: a streamed list keeps one parsed page alive across many scavenges, so the young
 * generation always grows to its maximum, which Node 24 sets four times as high as Node 20.
 *
 * `--max-semi-space-size` cannot be set after start (V8 reads it once; NODE_OPTIONS is the user's),
 * but the growth factor is read at every growth: once the young generation has reached Node 20's
 * size, a factor of 1 stops it there. Measurements and the flags that did not work:
 * docs/decisions/cluster-commands.md.
 */
import {getHeapSpaceStatistics, setFlagsFromString} from 'node:v8'

/** The new space (both semi-spaces) Node 20 grows to: two of 16 MiB. */
export const YOUNG_GENERATION_CAP_BYTES = 32 * 1024 * 1024

/** What `capYoungGeneration` needs of node:v8. */
export interface HeapControl {
  getHeapSpaceStatistics(): {space_name: string; space_size: number}[]
  setFlagsFromString(flags: string): void
}

const NODE_V8: HeapControl = {getHeapSpaceStatistics, setFlagsFromString}

let stopped = false

/**
 * Call once per page: when the new space has reached YOUNG_GENERATION_CAP_BYTES, V8 is told to grow
 * it no further (once per process). True once that is done. Below the cap (and on Node 20, whose
 * maximum the cap is) it only reads the heap's space sizes.
 */
export function capYoungGeneration(heap: HeapControl = NODE_V8): boolean {
  if (stopped) return true
  const newSpace = heap.getHeapSpaceStatistics().find((s) => s.space_name === 'new_space')
  if (newSpace === undefined || newSpace.space_size < YOUNG_GENERATION_CAP_BYTES) return false
  heap.setFlagsFromString('--semi-space-growth-factor=1')
  stopped = true
  return true
}

/** For tests: forget that the cap was applied (the flag set in V8 stays). */
export function resetYoungGenerationCap(): void {
  stopped = false
}
