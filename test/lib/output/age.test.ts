import {describe, expect, it} from 'vitest'
import {age, humanDuration} from '../../../src/lib/output/age.js'
import {humanDurationGo} from '../../cluster/age.js'

describe('humanDuration (apimachinery duration.HumanDuration)', () => {
  it('a time up to 2 s in the future is "0s", as kubectl prints clock skew; 2 s or more is "<invalid>"', () => {
    const now = new Date('2026-01-01T00:00:00Z')
    expect(age('2026-01-01T00:00:01.500Z', now)).toBe('0s')
    expect(age('2026-01-01T00:00:01.999Z', now)).toBe('0s')
    expect(age('2026-01-01T00:00:02Z', now)).toBe('<invalid>')
    expect(humanDuration(-1001)).toBe('0s')
  })

  it("agrees with the simulated API server's separate restatement of the Go function", () => {
    for (let ms = -5000; ms < 9 * 365 * 24 * 3600e3; ms = ms < 200e3 ? ms + 250 : Math.ceil(ms * 1.001)) {
      expect(humanDuration(ms), String(ms)).toBe(humanDurationGo(ms))
    }
  })
})
