/**
 * istiod's `/debug/adsz`: every connection with the node metadata its proxy sent. syncz names a VM's
 * proxy `<hostname>.<namespace>` only; adsz adds what the proxy reports about itself: INSTANCE_IPS
 * (the first one is the address istiod writes into an auto-registered WorkloadEntry, and into its name),
 * AUTO_REGISTER_GROUP, or WORKLOAD_ENTRY for a hand-written entry. That is what pairs a proxy with its
 * registration when names do not. Pure.
 *
 * Shape (pilot/pkg/xds/debug.go `AdsClients`, 1.28–1.31): `{totalClients, clients: [{connectionId,
 * connectedAt, address, labels, metadata, locality, watches}]}`; `connectionId` is `<proxy ID>-<n>`
 * (ads.go `connectionID`); `address` is the TCP peer, which for a VM behind the east-west gateway is
 * the gateway's, so it is never used here.
 */
import {isRecord} from '../util/records.js'

export interface ProxyNode {
  proxyId: string
  namespace?: string
  /** INSTANCE_IPS, in the proxy's order. */
  ips: string[]
  autoRegisterGroup?: string
  workloadEntry?: string
}

const text = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined)

/**
 * The proxies of one adsz answer (body text or parsed), by proxy ID. Connections without metadata
 * (istioctl's own, for one) are skipped; anything that is not an adsz answer gives an empty map.
 */
export function parseAdsz(body: unknown): Map<string, ProxyNode> {
  const out = new Map<string, ProxyNode>()
  let value: unknown
  try {
    value = typeof body === 'string' ? JSON.parse(body) : body
  } catch {
    return out
  }
  const clients = isRecord(value) ? value.clients : undefined
  if (!Array.isArray(clients)) return out
  for (const c of clients) {
    if (!isRecord(c) || !isRecord(c.metadata)) continue
    const id = text(c.connectionId)
    const dash = id?.lastIndexOf('-') ?? -1
    if (id === undefined || dash <= 0 || !/^\d+$/.test(id.slice(dash + 1))) continue
    const meta = c.metadata
    // NodeMetadata's StringList marshals as one comma-separated string.
    const ips =
      typeof meta.INSTANCE_IPS === 'string'
        ? meta.INSTANCE_IPS.split(',')
            .map((s) => s.trim())
            .filter(Boolean)
        : Array.isArray(meta.INSTANCE_IPS)
          ? meta.INSTANCE_IPS.filter((s): s is string => typeof s === 'string' && s !== '')
          : []
    const node: ProxyNode = {proxyId: id.slice(0, dash), ips}
    const ns = text(meta.NAMESPACE)
    if (ns) node.namespace = ns
    const group = text(meta.AUTO_REGISTER_GROUP)
    if (group) node.autoRegisterGroup = group
    const entry = text(meta.WORKLOAD_ENTRY)
    if (entry) node.workloadEntry = entry
    out.set(node.proxyId, node)
  }
  return out
}
