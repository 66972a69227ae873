/**
 * `-o json|yaml` of a paged list, written as the pages arrive: the bytes are exactly those of
 * `renderData(asList(allItems), format)`, but only one page of objects is held at a time.
 */
import {toYaml} from '../yaml.js'

export class ListWriter {
  private count = 0
  private started = false

  constructor(
    private readonly format: 'json' | 'yaml',
    private readonly write: (text: string) => void,
  ) {}

  add(items: unknown[]): void {
    if (items.length === 0) return
    let out = ''
    if (!this.started) {
      this.started = true
      out += this.format === 'json' ? '{\n  "apiVersion": "v1",\n  "kind": "List",\n  "items": [\n' : 'apiVersion: v1\nkind: List\nitems:\n'
    }
    for (const item of items) {
      if (this.format === 'json') {
        out += (this.count > 0 ? ',\n' : '') + JSON.stringify(item, null, 2).replace(/^/gm, '    ')
      } else {
        out += toYaml([item])
      }
      this.count++
    }
    this.write(out)
  }

  finish(): void {
    if (this.format === 'json') {
      const head = this.started ? '\n  ],\n' : '{\n  "apiVersion": "v1",\n  "kind": "List",\n  "items": [],\n'
      this.write(`${head}  "metadata": {\n    "resourceVersion": ""\n  }\n}\n`)
    } else {
      this.write(`${this.started ? '' : 'apiVersion: v1\nkind: List\nitems: []\n'}metadata:\n  resourceVersion: ""\n`)
    }
  }
}
