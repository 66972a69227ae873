/**
 * Pure generators: OnboardSpec → the Kubernetes objects a VM workload group needs.
 * Keys are built in kubectl's order (apiVersion, kind, metadata, spec) so output is deterministic.
 */
import type {Manifest} from '../kube/object.js'
import {sortedRecord} from '../util/records.js'
import type {OnboardSpec, PortSpec, ProbeSpec} from './spec.js'

export const MANAGED_BY = {'app.kubernetes.io/managed-by': 'meshvm'} as const

/** Objects in the order they must be applied: Namespace, ServiceAccount, WorkloadGroup, Service/ServiceEntry. */
export function generateOnboardObjects(spec: OnboardSpec): Manifest[] {
  const objects: Manifest[] = []
  if (spec.createNamespace) objects.push({apiVersion: 'v1', kind: 'Namespace', metadata: meta(spec, spec.namespace, false)})
  if (spec.createServiceAccount) objects.push({apiVersion: 'v1', kind: 'ServiceAccount', metadata: meta(spec, spec.serviceAccount)})
  objects.push(workloadGroupObject(spec))
  objects.push(spec.serviceKind === 'Service' ? serviceObject(spec) : serviceEntryObject(spec))
  return objects
}

function meta(spec: OnboardSpec, name: string, namespaced = true): Manifest['metadata'] {
  return {
    name,
    ...(namespaced ? {namespace: spec.namespace} : {}),
    labels: {...MANAGED_BY},
  }
}

export function workloadGroupObject(spec: OnboardSpec): Manifest {
  const groupMeta: Record<string, unknown> = {}
  if (Object.keys(spec.annotations).length > 0) groupMeta.annotations = spec.annotations
  groupMeta.labels = spec.labels

  const template: Record<string, unknown> = {}
  if (spec.locality !== undefined) template.locality = spec.locality
  if (spec.network !== undefined) template.network = spec.network
  // WorkloadEntry ports map a service port name to the port the VM listens on.
  template.ports = Object.fromEntries(spec.ports.map((p) => [p.name, p.targetPort]))
  template.serviceAccount = spec.serviceAccount
  if (spec.weight !== undefined) template.weight = spec.weight

  const wgSpec: Record<string, unknown> = {metadata: groupMeta, template}
  if (spec.probe) wgSpec.probe = probeObject(spec.probe)
  return {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: meta(spec, spec.name), spec: wgSpec}
}

export function probeObject(probe: ProbeSpec): Record<string, unknown> {
  const out: Record<string, unknown> = {}
  if (probe.initialDelaySeconds !== undefined) out.initialDelaySeconds = probe.initialDelaySeconds
  if (probe.periodSeconds !== undefined) out.periodSeconds = probe.periodSeconds
  if (probe.timeoutSeconds !== undefined) out.timeoutSeconds = probe.timeoutSeconds
  if (probe.successThreshold !== undefined) out.successThreshold = probe.successThreshold
  if (probe.failureThreshold !== undefined) out.failureThreshold = probe.failureThreshold
  const h = probe.handler
  if (h.kind === 'httpGet') {
    const httpGet: Record<string, unknown> = {host: h.host}
    if (h.headers.length > 0) httpGet.httpHeaders = h.headers
    httpGet.path = h.path
    httpGet.port = h.port
    httpGet.scheme = h.scheme
    out.httpGet = httpGet
  } else if (h.kind === 'tcpSocket') {
    out.tcpSocket = {host: h.host, port: h.port}
  } else {
    out.exec = {command: h.command}
  }
  return out
}

/** Kubernetes Services carry the L4 protocol; Istio reads the L7 one from appProtocol. */
function servicePort(p: PortSpec): Record<string, unknown> {
  return {name: p.name, port: p.port, targetPort: p.targetPort, protocol: 'TCP', appProtocol: p.protocol.toLowerCase()}
}

export function serviceObject(spec: OnboardSpec): Manifest {
  return {
    apiVersion: 'v1',
    kind: 'Service',
    metadata: {...meta(spec, spec.name), labels: sortedRecord({...spec.labels, ...MANAGED_BY})},
    spec: {type: 'ClusterIP', selector: spec.labels, ports: spec.ports.map(servicePort)},
  }
}

export function serviceEntryObject(spec: OnboardSpec): Manifest {
  return {
    apiVersion: 'networking.istio.io/v1',
    kind: 'ServiceEntry',
    metadata: {...meta(spec, spec.name), labels: sortedRecord({...spec.labels, ...MANAGED_BY})},
    spec: {
      hosts: spec.hosts,
      location: 'MESH_INTERNAL',
      ports: spec.ports.map((p) => ({name: p.name, number: p.port, protocol: p.protocol, targetPort: p.targetPort})),
      resolution: 'STATIC',
      workloadSelector: {labels: spec.labels},
    },
  }
}

/** File name for an object in `--output-dir`: the apply order prefix keeps `ls` in apply order. */
export function fileNameFor(obj: Manifest, index: number): string {
  return `${String(index + 1).padStart(2, '0')}-${obj.kind.toLowerCase()}.yaml`
}
