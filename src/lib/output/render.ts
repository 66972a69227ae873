/**
 * Data goes to stdout in the chosen format, everything else to stderr. renderData is the one place a
 * value becomes kubectl-style `-o json|yaml` text: the printer (printer.ts), the streamed List
 * (list-writer.ts) and the commands that print a single document all go through it. (Manifests and
 * diffs are YAML from yaml.ts; proxy-status's istioctl layouts indent JSON by four, as istioctl does.)
 */
import type {KubeObject} from '../kube/object.js'
import {toYaml} from '../yaml.js'

export {FORMATS, type OutputFormat, type OutputKind} from './formats.js'
import type {OutputFormat} from './formats.js'

/** kubectl's list wrapper, so `meshvm … -o yaml | kubectl apply -f -` works. */
export function asList(items: unknown[]): {apiVersion: 'v1'; kind: 'List'; items: unknown[]; metadata: {resourceVersion: string}} {
  return {apiVersion: 'v1', kind: 'List', items, metadata: {resourceVersion: ''}}
}

/** Renders data in a machine format; `undefined` for table/wide, which each command draws itself. */
export function renderData(value: unknown, format: OutputFormat): string | undefined {
  switch (format) {
    case 'json':
      return JSON.stringify(value, null, 2) + '\n'
    case 'yaml':
      return toYaml(value)
    default:
      return undefined
  }
}

/** `kind.group/name`, as `kubectl get -o name` prints it. */
export function resourceName(obj: KubeObject): string {
  const kind = (obj.kind ?? '').toLowerCase()
  const apiVersion = obj.apiVersion ?? 'v1'
  const group = apiVersion.includes('/') ? apiVersion.split('/')[0] : ''
  return `${kind}${group ? '.' + group : ''}/${obj.metadata?.name ?? ''}`
}

/** Writers are injectable so commands can be tested without touching the process streams. */
export interface Sink {
  out(text: string): void
  err(text: string): void
}

export const processSink: Sink = {
  out: (text) => {
    process.stdout.write(text)
  },
  err: (text) => {
    process.stderr.write(text)
  },
}
