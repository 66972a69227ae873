/**
 * Kubernetes label selectors (`-l`), parsed and matched client-side: used by every -l. proxy-status needs every pod and
 * WorkloadEntry of a namespace to tell VMs from pods, so it lists them whole and filters here.
 *
 * Grammar (as kubectl): comma-separated requirements `k=v`, `k==v`, `k!=v`, `k in (a,b)`,
 * `k notin (a,b)`, `k` (exists), `!k` (does not exist). Pure.
 */
import {flagError} from '../errors.js'
import {labelValue, qualifiedName} from '../validation/kube.js'

type Requirement = {key: string; op: 'eq' | 'ne'; value: string} | {key: string; op: 'in' | 'notin'; values: string[]} | {key: string; op: 'exists' | 'notexists'}

export type Selector = Requirement[]

/** Splits on commas that are not inside `( … )`. */
function splitTop(text: string): string[] {
  const parts: string[] = []
  let depth = 0
  let cur = ''
  for (const ch of text) {
    if (ch === '(') depth++
    if (ch === ')') depth--
    if (ch === ',' && depth === 0) {
      parts.push(cur)
      cur = ''
    } else cur += ch
  }
  parts.push(cur)
  return parts.map((p) => p.trim())
}

function checkKey(flag: string, text: string, key: string): void {
  const problem = qualifiedName(key)
  if (problem) throw flagError(flag, text, `label key ${JSON.stringify(key)}: ${problem}`)
}

function checkValue(flag: string, text: string, value: string): void {
  const problem = labelValue(value)
  if (problem) throw flagError(flag, text, `label value ${JSON.stringify(value)}: ${problem}`)
}

/** Parses `-l` values (each may hold several comma-separated requirements); throws a UsageError naming the flag. */
export function parseSelector(texts: string[] | undefined, flag = '-l'): Selector {
  const out: Selector = []
  for (const text of texts ?? []) {
    for (const part of splitTop(text)) {
      if (part === '') throw flagError(flag, text, 'empty requirement; expected key=value, key!=value, key in (a,b), key notin (a,b), key or !key')
      let m: RegExpExecArray | null
      if ((m = /^([^\s!=()]+)\s+(in|notin)\s*\(([^()]*)\)$/.exec(part))) {
        const [, key, op, list] = m as unknown as [string, string, 'in' | 'notin', string]
        checkKey(flag, text, key)
        const values = list.split(',').map((v) => v.trim())
        for (const v of values) checkValue(flag, text, v)
        out.push({key, op, values})
      } else if ((m = /^([^\s!=()]+)\s*(==|=|!=)\s*([^\s!=(),]*)$/.exec(part))) {
        const [, key, op, value] = m as unknown as [string, string, string, string]
        checkKey(flag, text, key)
        checkValue(flag, text, value)
        out.push({key, op: op === '!=' ? 'ne' : 'eq', value})
      } else if ((m = /^!\s*([^\s!=()]+)$/.exec(part))) {
        checkKey(flag, text, m[1]!)
        out.push({key: m[1]!, op: 'notexists'})
      } else if (/^[^\s!=()]+$/.test(part)) {
        checkKey(flag, text, part)
        out.push({key: part, op: 'exists'})
      } else {
        throw flagError(flag, text, `cannot parse ${JSON.stringify(part)}; expected key=value, key!=value, key in (a,b), key notin (a,b), key or !key`)
      }
    }
  }
  return out
}

export function selectorMatches(selector: Selector, labels: Record<string, string> | undefined): boolean {
  const l = labels ?? {}
  return selector.every((r) => {
    const has = Object.hasOwn(l, r.key)
    const hit = 'value' in r ? has && l[r.key] === r.value : 'values' in r ? has && r.values.includes(l[r.key]!) : has
    // ne, notin and notexists hold where eq, in and exists do not, also for a label that is absent.
    return r.op === 'eq' || r.op === 'in' || r.op === 'exists' ? hit : !hit
  })
}

/**
 * A map selector (a Service's spec.selector, a ServiceEntry's workloadSelector.labels) against a
 * workload's labels: every pair must match, and an empty one selects no workload (as istiod treats it
 * for WorkloadEntries). Values that are not strings are ignored.
 */
export function mapSelectorSelects(selector: Record<string, unknown> | undefined, labels: Record<string, string>): boolean {
  const entries = Object.entries(selector ?? {}).filter((e): e is [string, string] => typeof e[1] === 'string')
  return entries.length > 0 && entries.every(([k, v]) => labels[k] === v)
}

/** The selector back in kubectl's syntax, for messages. */
export function selectorString(selector: Selector): string {
  return selector
    .map((r) => {
      if ('values' in r) return `${r.key} ${r.op} (${r.values.join(',')})`
      if ('value' in r) return `${r.key}${r.op === 'ne' ? '!=' : '='}${r.value}`
      return r.op === 'exists' ? r.key : `!${r.key}`
    })
    .join(',')
}
