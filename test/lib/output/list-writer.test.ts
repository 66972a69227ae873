import {describe, expect, it} from 'vitest'
import {ListWriter} from '../../../src/lib/output/list-writer.js'
import {asList, renderData} from '../../../src/lib/output/render.js'

describe('ListWriter', () => {
  const items = [
    {apiVersion: 'v1', kind: 'X', metadata: {name: 'a', labels: {on: 'yes'}}, spec: {list: [{a: 1, b: [1, 2]}], text: 'two\nlines'}},
    {kind: 'Y', metadata: {name: 'b'}},
  ]
  it.each(['json', 'yaml'] as const)('writes exactly renderData(asList(items)) in %s, page by page', (format) => {
    for (const pages of [[items.slice(0, 1), [], items.slice(1)], [[]], []]) {
      let out = ''
      const w = new ListWriter(format, (s) => (out += s))
      for (const p of pages) w.add(p)
      w.finish()
      expect(out).toBe(renderData(asList(pages.flat()), format))
    }
  })
})
