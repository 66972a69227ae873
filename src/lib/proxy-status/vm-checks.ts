/**
 * `proxy-status -o wide --vm-exec CMD`: each connected VM's own view, read through the read-only probe of
 * `meshvm doctor` (doctor/probe.ts): when its workload certificate expires, and whether the root its Envoy
 * trusts is the mesh root of its namespace (ConfigMap istio-ca-root-cert). A VM that cannot be read shows
 * why in those cells; it never stops the table.
 */
import type {KubeClient} from '../kube/client.js'
import {Resources, resourcePath} from '../kube/resources.js'
import {istiodServiceName} from '../istiod/revision.js'
import {parseProbe, pemSerials, probeScript, runVmExec} from '../doctor/probe.js'
import type {ProxyStatusRow} from './model.js'

export interface VmCheck {
  certExpires: string
  rootMatch: string
}

/** At most this many VMs are probed at once (each is an ssh or similar). */
const CONCURRENCY = 8

export async function checkVms(client: KubeClient, rows: ProxyStatusRow[], o: {vmExec: string; timeoutMs: number; istioNamespace: string}): Promise<Map<ProxyStatusRow, VmCheck>> {
  const vms = rows.filter((r) => r.type === 'vm' && r.address)
  const roots = new Map<string, Promise<string[]>>()
  const rootOf = (namespace: string) => {
    let p = roots.get(namespace)
    if (!p) {
      p = client
        .getOptional<{data?: Record<string, string>}>(resourcePath(Resources.configMaps, {namespace, name: 'istio-ca-root-cert'}))
        .then((cm) => (cm?.data?.['root-cert.pem'] ? pemSerials(cm.data['root-cert.pem']) : []))
        .catch(() => [])
      roots.set(namespace, p)
    }
    return p
  }
  const out = new Map<ProxyStatusRow, VmCheck>()
  let next = 0
  const worker = async (): Promise<void> => {
    while (next < vms.length) {
      const row = vms[next++]!
      const namespace = row.namespace ?? ''
      const revision = row.istiodRef?.revision
      const host = `${istiodServiceName(revision)}.${o.istioNamespace}.svc`
      const env = {MESHVM_VM_NAME: row.registration?.split('/').pop() ?? row.name, MESHVM_VM_ADDRESS: row.address!, MESHVM_VM_HOSTNAME: row.address!, MESHVM_NAMESPACE: namespace}
      const [result, root] = await Promise.all([runVmExec(o.vmExec, env, probeScript({istiodHost: host}), {timeoutMs: o.timeoutMs}), rootOf(namespace)])
      const probe = parseProbe(result.stdout)
      if (!probe.sections.includes('end')) {
        out.set(row, {certExpires: result.timedOut ? 'NO ANSWER' : 'ERROR', rootMatch: '-'})
        continue
      }
      const expires = probe.cert?.expires
      out.set(row, {
        // The expiration time decides: Envoy's day count is 0 for a certificate valid for 23 more hours.
        certExpires: expires ? (Date.parse(expires) <= Date.now() ? `EXPIRED ${expires}` : expires) : '-',
        // Every root of istio-ca-root-cert (a rotation publishes the new one beside the old).
        rootMatch: root.length === 0 || probe.rootSerials.length === 0 ? '-' : root.every((s) => probe.rootSerials.includes(s)) ? 'yes' : 'NO',
      })
    }
  }
  await Promise.all(Array.from({length: Math.min(CONCURRENCY, vms.length)}, worker))
  return out
}
