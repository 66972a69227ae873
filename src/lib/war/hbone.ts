/**
 * Which auto-registered WorkloadEntries stand for HBONE-capable proxies yet lack the HBONE tunnel
 * label, after an upgrade to Istio 1.31 (release note 60788: auto-registration labels the entries of
 * HBONE-capable proxies `networking.istio.io/tunnel=http`, but only when it creates them; older
 * entries "continue to be reached over plaintext until either they re-register or the label is added").
 *
 * A proxy is HBONE-capable when it advertises it in its node metadata: ENABLE_HBONE, which the
 * sidecar sets from ISTIO_META_ENABLE_HBONE=true, given to every proxy of a revision through the mesh
 * config (`defaultConfig.proxyMetadata`, as Istio's ambient profile does) or in the VM's cluster.env.
 * The entry istiod made before 1.31 keeps nothing of that metadata, so meshvm reads the capability
 * where it is visible from the cluster, and says which it used:
 *   1. the entry carries the label (then nothing is missing);
 *   2. another entry of the same WorkloadGroup carries it: the VMs of a group run one bundle (one
 *      cluster.env, one mesh config), so that entry's proxy advertised HBONE and so do the others;
 *   3. the mesh config of the revision of the istiod holding the entry (istio.io/workloadController;
 *      the default revision when no istiod is named) sets proxyMetadata ISTIO_META_ENABLE_HBONE=true,
 *      and that revision's istiod runs in ambient mode (PILOT_ENABLE_AMBIENT=true in its Deployment):
 *      istiod ignores sidecar HBONE listening otherwise (pilot/pkg/features/ambient.go), so it would
 *      neither label the entry nor reach the proxy over HBONE (test:real checks this on real istiod).
 * Only Istio's own auto-registered entries are judged: WAR-owned entries are made by the onboarding
 * plane, and hand-written ones by their author.
 *
 * Pure, but for readHboneEvidence.
 */
import {MeshvmError} from '../errors.js'
import type {KubeClient} from '../kube/client.js'
import {ownerOfKind} from '../kube/object.js'
import {parseYamlStream} from '../yaml.js'
import {isAutoRegisteredWorkloadEntry, meta, TUNNEL_LABEL, tunnelOf, WE_ANNOTATIONS, type WorkloadEntryObject} from './model.js'

export const HBONE_METADATA = 'ISTIO_META_ENABLE_HBONE'
/** The first release whose auto-registration adds the tunnel label. */
export const TUNNEL_LABEL_SINCE = '1.31'

export interface HboneEvidence {
  /**
   * Revisions ('default' for the un-revisioned control plane) whose mesh config sets
   * ISTIO_META_ENABLE_HBONE=true and whose istiod runs in ambient mode.
   */
  revisions: Set<string>
  /** Running istiods by pod name: revision ('default' when un-revisioned) and version (from the image tag). */
  istiods: Map<string, {revision: string; version?: string}>
}

/** Whether a mesh config (the `mesh` key of ConfigMap istio[-REV]) makes its proxies advertise HBONE. */
export function meshEnablesHbone(meshYaml: string): boolean {
  let doc: unknown
  try {
    doc = parseYamlStream(meshYaml, 'mesh config')[0]?.value
  } catch {
    return false
  }
  const md = (doc as {defaultConfig?: {proxyMetadata?: Record<string, unknown>}} | undefined)?.defaultConfig?.proxyMetadata
  return String(md?.[HBONE_METADATA] ?? '').toLowerCase() === 'true'
}

/** `1.31.0-rc.1` ≥ `1.31`: compares major.minor. Unknown versions are not. */
export function atLeast(version: string | undefined, min: string): boolean {
  const v = /^v?(\d+)\.(\d+)/.exec(version ?? '')
  const m = /^(\d+)\.(\d+)/.exec(min)!
  if (!v) return false
  return Number(v[1]) > Number(m[1]) || (Number(v[1]) === Number(m[1]) && Number(v[2]) >= Number(m[2]))
}

const groupOf = (we: unknown): string => meta(we).annotations[WE_ANNOTATIONS.autoRegistrationGroup] ?? ''

export interface MissingTunnel {
  we: WorkloadEntryObject
  namespace: string
  name: string
  group: string
  /** Why meshvm takes its proxy for HBONE-capable. */
  because: string
  /** The istiod holding the entry, and whether it labels entries it makes (1.31+); undefined when unknown. */
  istiod?: string
  labelsOnRegistration?: boolean
}

/**
 * The auto-registered entries (of `entries`, which must include their siblings of the same group)
 * whose proxies are HBONE-capable and which lack the tunnel label.
 */
export function missingTunnelLabels(entries: readonly WorkloadEntryObject[], ev: HboneEvidence): MissingTunnel[] {
  const labelledGroups = new Map<string, string>()
  for (const we of entries) {
    if (isAutoRegisteredWorkloadEntry(we) && tunnelOf(we) !== '') {
      const m = meta(we)
      const key = `${m.namespace}/${groupOf(we)}`
      if (!labelledGroups.has(key)) labelledGroups.set(key, m.name)
    }
  }
  const defaultRevision = ev.revisions.has('default')
  const out: MissingTunnel[] = []
  for (const we of entries) {
    if (!isAutoRegisteredWorkloadEntry(we) || ownerOfKind(we, 'WorkloadAutoRegistration') || tunnelOf(we) !== '') continue
    const m = meta(we)
    const group = groupOf(we)
    const controller = m.annotations[WE_ANNOTATIONS.workloadController]
    const istiod = controller ? ev.istiods.get(controller) : undefined
    let because: string | undefined
    const sibling = labelledGroups.get(`${m.namespace}/${group}`)
    if (sibling) because = `entry ${sibling} of the same WorkloadGroup carries ${TUNNEL_LABEL} (the VMs of a group share their proxy metadata)`
    else if (istiod && ev.revisions.has(istiod.revision)) because = `the mesh config of revision ${istiod.revision} sets proxyMetadata ${HBONE_METADATA}=true`
    else if (!istiod && defaultRevision) because = `the mesh config of the default revision sets proxyMetadata ${HBONE_METADATA}=true`
    if (!because) continue
    out.push({
      we,
      namespace: m.namespace,
      name: m.name,
      group,
      because,
      ...(istiod && controller ? {istiod: controller, ...(istiod.version ? {labelsOnRegistration: atLeast(istiod.version, TUNNEL_LABEL_SINCE)} : {})} : {}),
    })
  }
  return out
}

/** The istiods of a namespace and the mesh config of each revision they run. */
export async function readHboneEvidence(client: KubeClient, istioNamespace: string): Promise<HboneEvidence> {
  const {listIstiods} = await import('../proxy-status/fetch.js')
  const {fetchMeshConfig} = await import('../bundle/fetch.js')
  const {istiodDeploymentEnv} = await import('../istiod/revision.js')
  // Whether the istiod Deployment of a revision runs with PILOT_ENABLE_AMBIENT=true (what Istio's ambient profile sets).
  const runsAmbient = async (rev: string): Promise<boolean> => {
    const env = await istiodDeploymentEnv(client, istioNamespace, rev)
    return env?.get('PILOT_ENABLE_AMBIENT')?.toLowerCase() === 'true'
  }
  const istiods = new Map<string, {revision: string; version?: string}>()
  for (const p of await listIstiods(client, istioNamespace)) {
    istiods.set(p.name, {revision: p.revision && p.revision !== '' ? p.revision : 'default', ...(p.version ? {version: p.version} : {})})
  }
  const revisions = new Set<string>()
  for (const rev of new Set(['default', ...[...istiods.values()].map((i) => i.revision)])) {
    try {
      if (meshEnablesHbone(await fetchMeshConfig(client, istioNamespace, rev === 'default' ? undefined : rev)) && (await runsAmbient(rev))) revisions.add(rev)
    } catch (err) {
      // No mesh config for that revision (or no permission to read it): no evidence from it.
      if (!(err instanceof MeshvmError)) throw err
    }
  }
  return {revisions, istiods}
}
