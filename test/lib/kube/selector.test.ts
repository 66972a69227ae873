import {describe, expect, it} from 'vitest'
import {mapSelectorSelects, parseSelector, selectorMatches} from '../../../src/lib/kube/selector.js'

describe('mapSelectorSelects (Service selector, ServiceEntry workloadSelector)', () => {
  const labels = {app: 'web', version: 'v1'}
  it('selects when every pair matches', () => {
    expect(mapSelectorSelects({app: 'web'}, labels)).toBe(true)
    expect(mapSelectorSelects({app: 'web', version: 'v1'}, labels)).toBe(true)
  })
  it('does not select on a differing or missing label', () => {
    expect(mapSelectorSelects({app: 'api'}, labels)).toBe(false)
    expect(mapSelectorSelects({app: 'web', tier: 'front'}, labels)).toBe(false)
  })
  it('an empty or absent selector selects no workload', () => {
    expect(mapSelectorSelects({}, labels)).toBe(false)
    expect(mapSelectorSelects(undefined, labels)).toBe(false)
  })
  it('ignores values that are not strings (a malformed object from the cluster)', () => {
    expect(mapSelectorSelects({app: 'web', n: 1}, labels)).toBe(true)
    expect(mapSelectorSelects({n: 1}, labels)).toBe(false)
  })
})

describe('selectorMatches (-l)', () => {
  it('reads kubectl set-based syntax', () => {
    const s = parseSelector(['app=web,version in (v1,v2),!canary'])
    expect(selectorMatches(s, {app: 'web', version: 'v2'})).toBe(true)
    expect(selectorMatches(s, {app: 'web', version: 'v2', canary: 'x'})).toBe(false)
  })
})
