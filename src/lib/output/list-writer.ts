/**
 * `-o json|yaml` of a paged list, written as the pages arrive: the bytes are exactly those of
 * `renderData(asList(allItems), format)`, but only one page of objects is held at a time. The List's
 * frame (what comes before and after its items) is cut from renderData's own text of an empty List.
 */
import {asList, renderData} from './render.js'

/** An empty List's text, split around its empty items: `"items": []` or `items: []`. */
function frame(format: 'json' | 'yaml'): {empty: string; head: string; tail: string} {
  const empty = renderData(asList([]), format)!
  const marker = format === 'json' ? '"items": []' : 'items: []\n'
  const at = empty.indexOf(marker)
  return format === 'json'
    ? {empty, head: `${empty.slice(0, at)}"items": [\n`, tail: `\n  ]${empty.slice(at + marker.length)}`}
    : {empty, head: `${empty.slice(0, at)}items:\n`, tail: empty.slice(at + marker.length)}
}

export class ListWriter {
  private count = 0
  private readonly frame: {empty: string; head: string; tail: string}

  constructor(
    private readonly format: 'json' | 'yaml',
    private readonly write: (text: string) => void,
  ) {
    this.frame = frame(format)
  }

  add(items: unknown[]): void {
    if (items.length === 0) return
    let out = this.count === 0 ? this.frame.head : ''
    for (const item of items) {
      // An item is rendered as the one-element list it would be inside the List: JSON indented by the
      // List's two levels, YAML as a sequence entry (sequences sit at the parent's column).
      if (this.format === 'json') out += (this.count > 0 ? ',\n' : '') + renderData(item, 'json')!.slice(0, -1).replace(/^/gm, '    ')
      else out += renderData([item], 'yaml')
      this.count++
    }
    this.write(out)
  }

  finish(): void {
    this.write(this.count === 0 ? this.frame.empty : this.frame.tail)
  }
}
