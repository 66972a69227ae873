import {describe, expect, it} from 'vitest'
import {mapSelectorSelects, parseSelector, selectorMatches, selectorString} from '../../../src/lib/kube/selector.js'

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

  it.each([
    ['app=web', [true, false, false]],
    ['app==web', [true, false, false]],
    ['app!=web', [false, true, true]],
    ['app in (web,db)', [true, false, false]],
    ['app notin (web,db)', [false, true, true]],
    ['app', [true, true, false]],
    ['!app', [false, false, true]],
  ] as const)('%s on a matching label, another value, and no label', (text, expected) => {
    const s = parseSelector([text])
    expect(([{app: 'web'}, {app: 'api'}, {tier: 'web'}] as Record<string, string>[]).map((labels) => selectorMatches(s, labels))).toEqual(expected)
  })
})

describe('selectorString', () => {
  it('writes each requirement back in kubectl syntax', () => {
    expect(selectorString(parseSelector(['a=1,b==2,c!=3', 'd in (x, y),e notin (z)', 'f,!g']))).toBe('a=1,b=2,c!=3,d in (x,y),e notin (z),f,!g')
  })
})
