/**
 * istiod's namespace controller (pilot/pkg/serviceregistry/kube/controller/namespacecontroller.go):
 * it writes ConfigMap `istio-ca-root-cert` (key `root-cert.pem`, label `istio.io/config: "true"`)
 * into every namespace it sees, except Istio's ignored namespaces (kube-system, kube-public,
 * kube-node-lease, local-path-storage) and, when the mesh config sets `discoverySelectors`, the
 * namespaces none of them selects. A real istiod does it a moment after the namespace appears
 * (informer + work queue); here that moment is `delayMs`, so a client that reads the ConfigMap
 * right after creating a namespace sees what it would see against a real cluster: nothing yet.
 *
 * Simplification: an existing ConfigMap is left as it is (istiod would also rewrite one whose data
 * differs, and re-create one that is deleted); tests plant their own root certificates this way.
 */
import {parse as parseYaml} from 'yaml'
import {resourceKey, type KubeObj, type Store, type StoreEvent} from './store.js'

export const ROOT_CERT_CONFIGMAP = 'istio-ca-root-cert'
const IGNORED = new Set(['kube-system', 'kube-public', 'kube-node-lease', 'local-path-storage'])
const NAMESPACES = resourceKey('', 'namespaces')
const CONFIGMAPS = resourceKey('', 'configmaps')

export interface LabelSelector {
  matchLabels?: Record<string, string>
  matchExpressions?: {key: string; operator: 'In' | 'NotIn' | 'Exists' | 'DoesNotExist'; values?: string[]}[]
}

/** metav1.LabelSelectorAsSelector semantics; an empty selector selects everything. */
export function selectorMatches(selector: LabelSelector, labels: Record<string, string> = {}): boolean {
  for (const [k, v] of Object.entries(selector.matchLabels ?? {})) if (labels[k] !== v) return false
  for (const e of selector.matchExpressions ?? []) {
    const has = Object.hasOwn(labels, e.key)
    if (e.operator === 'In' && !(has && (e.values ?? []).includes(labels[e.key]!))) return false
    if (e.operator === 'NotIn' && has && (e.values ?? []).includes(labels[e.key]!)) return false
    if (e.operator === 'Exists' && !has) return false
    if (e.operator === 'DoesNotExist' && has) return false
  }
  return true
}

export interface NamespaceControllerOptions {
  /** PEM of the mesh root certificate. */
  rootCert: string
  /** How long after a namespace appears its ConfigMap is written. */
  delayMs: number
  istioNamespace?: string
  /** The mesh ConfigMap that holds `discoverySelectors` (default `istio`). */
  meshConfigMap?: string
}

export class NamespaceController {
  private readonly timers = new Set<NodeJS.Timeout>()
  private readonly unsubscribe: () => void

  constructor(
    private readonly store: Store,
    private readonly options: NamespaceControllerOptions,
  ) {
    this.unsubscribe = store.onEvent((e) => this.onEvent(e))
    for (const ns of store.list(NAMESPACES)) this.schedule(ns.metadata.name)
  }

  /** The mesh config's discoverySelectors, read as istiod reads them (undefined: every namespace). */
  discoverySelectors(): LabelSelector[] | undefined {
    const cm = this.store.get(CONFIGMAPS, this.options.istioNamespace ?? 'istio-system', this.options.meshConfigMap ?? 'istio')
    const mesh = (cm?.data as Record<string, string> | undefined)?.mesh
    if (!mesh) return undefined
    try {
      const selectors = (parseYaml(mesh) as {discoverySelectors?: LabelSelector[]} | null)?.discoverySelectors
      return Array.isArray(selectors) && selectors.length > 0 ? selectors : undefined
    } catch {
      return undefined
    }
  }

  /** Whether istiod would write the root certificate into this namespace now. */
  watches(ns: KubeObj): boolean {
    if (IGNORED.has(ns.metadata.name) || ns.metadata.deletionTimestamp) return false
    const selectors = this.discoverySelectors()
    return selectors === undefined || selectors.some((s) => selectorMatches(s, ns.metadata.labels))
  }

  private onEvent(e: StoreEvent): void {
    // A new namespace, or one relabelled into the discovery selectors.
    if (e.resource === NAMESPACES && e.type !== 'DELETED') this.schedule(e.object.metadata.name)
    // discoverySelectors changed: namespaces newly selected get their ConfigMap.
    if (
      e.resource === CONFIGMAPS &&
      e.type !== 'DELETED' &&
      e.object.metadata.namespace === (this.options.istioNamespace ?? 'istio-system') &&
      e.object.metadata.name === (this.options.meshConfigMap ?? 'istio')
    ) {
      for (const ns of this.store.list(NAMESPACES)) this.schedule(ns.metadata.name)
    }
  }

  private schedule(namespace: string): void {
    const t = setTimeout(() => {
      this.timers.delete(t)
      this.reconcile(namespace)
    }, this.options.delayMs)
    t.unref()
    this.timers.add(t)
  }

  reconcile(namespace: string): void {
    const ns = this.store.get(NAMESPACES, undefined, namespace)
    if (!ns || !this.watches(ns) || this.store.get(CONFIGMAPS, namespace, ROOT_CERT_CONFIGMAP)) return
    this.store.create(CONFIGMAPS, 'ConfigMap', {
      apiVersion: 'v1',
      kind: 'ConfigMap',
      metadata: {name: ROOT_CERT_CONFIGMAP, namespace, labels: {'istio.io/config': 'true'}},
      data: {'root-cert.pem': this.options.rootCert},
    })
  }

  stop(): void {
    this.unsubscribe()
    for (const t of this.timers) clearTimeout(t)
    this.timers.clear()
  }
}
