/**
 * `meshvm doctor`: from what was read about one VM (Evidence) to the chain of checks, in the order a
 * VM joins the mesh: its bundle, the way to istiod, istiod, the registration, the Service selecting
 * it, its sync state, and the VM itself. Pure: every read happens in gather.ts, so each failure mode
 * is a unit test of this file. Each check that does not pass names its evidence and a fix that is a
 * command to run.
 */
import {annotationsOf, conditionOf, conditionStatus, labelsOf, type KubeObject} from '../kube/object.js'
import {mapSelectorSelects} from '../kube/selector.js'
import {shellQuote} from '../cli/prompt.js'
import {humanDuration} from '../output/age.js'
import {istiodServiceName, revisionOrUndefined} from '../istiod/revision.js'
import {isRecord} from '../util/records.js'
import {records, type VmProbe} from './probe.js'
import type {Check as BundleCheck, CheckStatus} from '../bundle-verify/offline.js'
import {TUNNEL_LABEL, WE_ANNOTATIONS, waypointBoundOf} from '../war/model.js'
import {eastWestGatewayKind, eastWestGatewayVerdict, gatewayAddress, type GatewayServiceLike} from '../precheck/gateway.js'
import type {WorkloadGroupLike} from '../bundle/generate.js'
import {FIELD_MANAGER} from '../apply/apply.js'
import {labelText, rec, servicesSelecting} from '../precheck/checks.js'
import {inputFromWorkloadGroup, parseOnboardInput} from '../onboard/spec.js'
import {serviceObject} from '../onboard/generate.js'

/** The steps' titles, for the summary: step N is STEP_TITLES[N - 1]. */
const STEP_TITLES = ['bundle and token', 'east-west gateway, DNS and network', 'istiod', 'registration', 'Service or ServiceEntry', 'sync state', 'on the VM']
/** A check's step, by the first word of its name (`gateway.kind`: 2). */
const STEP_OF: Record<string, number> = {bundle: 1, gateway: 2, network: 2, istiod: 3, registration: 4, service: 5, sync: 6, vm: 7}

export interface DoctorCheck {
  step: number
  check: string
  status: CheckStatus
  detail: string
  fix?: string
}

export interface GatewayEvidence {
  name: string
  namespace: string
  service?: KubeObject
  /** The address the VM's hosts file maps istiod's name to (from the bundle). */
  bundleAddress?: string
  /** The istio-system namespace's `topology.istio.io/network` label. */
  controlPlaneNetwork?: string
  /** A classic east-west gateway of the Istio namespace (NAME.NAMESPACE), for the fix of an ambient one. */
  classic?: string
}

export interface IstiodEvidence {
  /** Running istiod pods of the revision the VM uses. */
  pods: {name: string; ready: boolean; version?: string}[]
  revision?: string
  /** The Istio (root) namespace istiod runs in (-i). */
  namespace?: string
  /** The istiod Deployment's environment (first container), for auto-registration and health checks. */
  env: Record<string, string>
}

export interface SyncEvidence {
  /** Whether an istiod reports the VM's proxy. */
  connected: boolean
  istiod?: string
  proxyVersion?: string
  istiodVersion?: string
  versionSkew?: boolean
  /** Per xDS type: SYNCED, STALE, NOT_SENT, ERROR… and the NACK's error. */
  types: {type: string; state: string; error?: string}[]
  /** Why the sync state could not be read (an istiod that did not answer). */
  unreadable?: string
}

export interface Evidence {
  now: Date
  namespace: string
  /** What the user asked about, for messages. */
  query: string
  /** The context that holds the VM, when several were read. */
  context?: string
  /** With --bundle: its checks, directory, network, group and the meshvm bundle command that remakes it with its flags. */
  bundle?: {checks: BundleCheck[]; dir?: string; network?: string; group?: string; rerun?: string}
  gateway: GatewayEvidence
  istiod: IstiodEvidence
  group?: KubeObject
  groupName?: string
  /** The VM's WorkloadEntry, when one was found. */
  entry?: KubeObject
  /** The WorkloadAutoRegistration that owns it (Tetrate), when there is one. */
  war?: KubeObject
  /** Why the stale check says what it says: staleDifference of the WAR, or the entry compared with the group. */
  staleBecause?: string
  /** Other WorkloadEntries of the namespace with the same address. */
  duplicates: KubeObject[]
  /** Recent Warning events about the entry. */
  events: {reason?: string; message?: string; count?: number; lastTimestamp?: string}[]
  services: KubeObject[]
  serviceEntries: KubeObject[]
  sync?: SyncEvidence
  probe?: {probe?: VmProbe; error?: string}
  /** Serials of the roots in istio-ca-root-cert (lower-case hex; several while a root is rotated). */
  meshRootSerials: string[]
  /** After a NACK: the EnvoyFilters of the Istio (root) namespace and the VM's, or why they could not be listed. */
  envoyFilters?: KubeObject[] | string
  /** Template of --vm-exec, for fixes that run on the VM. */
  vmExec?: string
  /** A proxy istiod reports connected under the name asked about, which no registration pairs with. */
  proxy?: {name: string; istiod?: string}
}

const NETWORK_LABEL = 'topology.istio.io/network'

/** A non-empty string, else undefined. */
export const str = (v: unknown): string | undefined => (typeof v === 'string' && v !== '' ? v : undefined)
const nameOf = (o: KubeObject | undefined): string => o?.metadata?.name ?? '?'
const specOf = (o: KubeObject | undefined): Record<string, unknown> => rec(o?.spec)

/** A WorkloadGroup's readiness probe, and its httpGet or tcpSocket part (whichever is an object). */
export function probeOf(group: KubeObject | undefined) {
  const probe = rec(specOf(group).probe)
  return {probe, http: isRecord(probe.httpGet) ? probe.httpGet : undefined, tcp: isRecord(probe.tcpSocket) ? probe.tcpSocket : undefined}
}

/** The labels istiod serves a WorkloadEntry with: spec.labels, as a Service selector sees them. */
function entryLabels(entry: KubeObject | undefined): Record<string, string> {
  const out: Record<string, string> = {}
  for (const [k, v] of Object.entries(rec(specOf(entry).labels))) if (typeof v === 'string') out[k] = v
  return out
}

export interface DoctorReport {
  query: string
  namespace: string
  context?: string
  workloadEntry?: string
  result: 'pass' | 'warn' | 'fail'
  checks: DoctorCheck[]
  /** The first failing check, in one line (undefined when nothing fails). */
  summary?: string
}

/**
 * How the fixes name the cluster and meshvm: the user's --kubeconfig and the context that holds the VM go
 * on each kubectl and meshvm command as doctor builds it (never by rewriting the finished line, which
 * holds the user's --vm-exec template), and `bin` is `kubectl meshvm` in plugin mode. `external` gives
 * the same to a command line that comes whole from bundle verify (its `meshvm bundle …` remake).
 */
export interface FixCli {
  bin?: string
  kubeconfig?: string
  context?: string
  external?: (commandLine: string) => string
}

export function diagnose(e: Evidence, cli: FixCli = {}): DoctorReport {
  const checks: DoctorCheck[] = []
  const add = (check: string, status: CheckStatus, detail: string, fix?: string): void => {
    const step = STEP_OF[check.split('.')[0]!]!
    // A fix's trailing comment (`   # …`) may name values read from the cluster or the bundle: a line
    // break there would end the comment and make the rest a command, so its control characters go.
    const at = fix?.indexOf('   # ') ?? -1
    const safe = fix !== undefined && at >= 0 ? fix.slice(0, at) + fix.slice(at).replace(/[\u0000-\u001f\u007f]/g, ' ') : fix
    checks.push({step, check, status, detail, ...(safe !== undefined ? {fix: safe} : {})})
  }
  const ns = e.namespace
  const q = shellQuote
  const kubeFlags = `${cli.kubeconfig !== undefined ? ` --kubeconfig ${q(cli.kubeconfig)}` : ''}${cli.context !== undefined ? ` --context ${q(cli.context)}` : ''}`
  const K = `kubectl${kubeFlags}`
  const M = (id: string) => `${cli.bin ?? 'meshvm'} ${id}${kubeFlags}`
  const external = (line: string): string => (cli.external ? cli.external(line) : line)
  const istioNs = e.istiod.namespace ?? 'istio-system'
  // A fix that runs on the VM goes through --vm-exec as doctor ran it: the template, with the variables
  // doctor gave it (the user's shell has none of them), reading the commands on its standard input.
  const vmAddress = str(specOf(e.entry).address)
  const onVm = (input: string): string | undefined =>
    e.vmExec && vmAddress
      ? `${input} | MESHVM_VM_NAME=${q(nameOf(e.entry))} MESHVM_VM_ADDRESS=${q(vmAddress)} MESHVM_VM_HOSTNAME=${q(vmAddress)} MESHVM_NAMESPACE=${q(ns)} sh -c ${q(e.vmExec)}`
      : undefined
  const vmCommand = (command: string): string => onVm(`printf '%s\\n' ${q(command)}`) ?? `on the VM: ${command}`
  const restartIstio = vmCommand('sudo systemctl restart istio')
  // A new bundle (the files the VM needs from the cluster as it is now), then some of its files put where
  // the Istio VM install reads them (docs/bundle.md), then the sidecar restarted to read them.
  const group = e.bundle?.group ?? e.groupName
  const bundleDir = e.bundle?.dir ?? `${group ?? 'GROUP'}-vm`
  // A bundle's cluster.env is a file anyone may have edited: a group or namespace that is not a Kubernetes
  // name is refused, and no command line comes from it (bundle verify's remake line included).
  const kubeName = (v: string) => v.length <= 253 && /^[a-z0-9]([-a-z0-9.]*[a-z0-9])?$/.test(v)
  const badBundleName = e.bundle ? [e.bundle.group, ns].find((v): v is string => v !== undefined && !kubeName(v)) : undefined
  // A bundle remade with default flags would change what the VM's mesh.yaml says of DNS capture and the
  // cluster ID: without --bundle, the flags come from the VM's own mesh.yaml (read by the probe).
  const vmMesh = e.probe?.probe?.mesh
  const vmMeshFlags =
    vmMesh && (vmMesh.clusterId === undefined || /^[A-Za-z0-9][-A-Za-z0-9_.]*$/.test(vmMesh.clusterId))
      ? `${vmMesh.dnsCapture ? '' : ' --no-capture-dns'}${vmMesh.clusterId ? ` --cluster-id ${q(vmMesh.clusterId)}` : ''}`
      : undefined
  // With --bundle DIR, the bundle is remade by bundle verify's line, with its own flags.
  const rerun = e.bundle?.dir && badBundleName === undefined ? e.bundle.rerun : undefined
  const meshKnown = Boolean(rerun) || vmMeshFlags !== undefined
  const MESH_UNKNOWN =
    "; no fix: a new mesh.yaml made with default flags could change the VM's DNS capture and cluster ID, which doctor could not read from the VM's /etc/istio/config/mesh: run doctor with --bundle DIR (the VM's bundle, made with its flags) for the fix"
  const bundleCommand = (): string => {
    if (rerun) return external(rerun)
    const revision = revisionOrUndefined(e.istiod.revision) ? ` -r ${q(e.istiod.revision!)}` : ''
    const autoregister = e.bundle ? false : Boolean(annotationsOf(e.entry)[WE_ANNOTATIONS.autoRegistrationGroup])
    const gateway = e.gateway.name === 'istio-eastwestgateway' && e.gateway.namespace === 'istio-system' ? '' : ` --ingress-service ${q(`${e.gateway.name}.${e.gateway.namespace}`)}`
    return `${M('bundle')} ${q(group ?? 'GROUP')} -n ${q(ns)}${revision} -d ${q(bundleDir)}${autoregister ? ' --autoregister' : ''}${gateway}${vmMeshFlags ?? ''}`
  }
  // Each file travels as base64 inside a here-document: base64 text is lines of [A-Za-z0-9+/=] ending in
  // a newline, so it can never hold the MESHVM_EOF line (whatever the file holds: a ConfigMap a namespace
  // editor wrote, a missing final newline), and `base64 -d` gives the VM the file byte for byte. A file
  // that is missing or empty here stops the fix before anything reaches the VM; a write that fails on
  // the VM stops its shell before the restart.
  // An appended /etc/hosts is read at each lookup: only the Istio install's own files need the restart.
  const installOnVm = (file: string, onTheVm: string, append = false): string => {
    const path = q(`${bundleDir}/${file}`)
    const send = [
      `printf '%s\\n' ${q(`base64 -d <<\\MESHVM_EOF | sudo tee${append ? ' -a' : ''} ${onTheVm} >/dev/null || exit 1`)}`,
      `base64 < ${path}`,
      "printf '%s\\n' MESHVM_EOF",
      ...(append ? [] : ["printf '%s\\n' 'sudo systemctl restart istio'"]),
    ]
    const remote = onVm(`{ ${send.join('; ')}; }`)
    return remote
      ? `${bundleCommand()} && test -s ${path} && ${remote}`
      : `${bundleCommand()}   # then on the VM: ${append ? 'append' : 'copy'} ${bundleDir}/${file} to ${onTheVm}${append ? '' : ', and run sudo systemctl restart istio'}`
  }

  /**
   * Why the readiness probe fails, from the WorkloadGroup's probe and (with --vm-exec) what answers on
   * the VM at its port and at the group's ports. A fix only for a cause shown by that evidence.
   */
  const unhealthyCause = (message: string): {detail: string; fix?: string} => {
    const {probe: probeSpec, http, tcp} = probeOf(e.group)
    if (!e.group) return {detail: 'cause not proven: the WorkloadGroup could not be read'}
    if (isRecord(probeSpec.exec)) return {detail: 'cause not proven: the probe is an exec command, which meshvm does not run on the VM (run it there by hand)'}
    if (!http && !tcp) return {detail: 'cause not proven: the WorkloadGroup has no httpGet or tcpSocket probe'}
    const kind = http ? 'httpGet' : 'tcpSocket'
    const port = Number((http ?? tcp)!.port)
    const path = http ? (str(http.path) ?? '/') : ''
    const listener = `127.0.0.1:${port}`
    const target = listener + path
    const declared = Object.entries(rec(rec(specOf(e.group).template).ports)).filter((x): x is [string, number] => typeof x[1] === 'number')
    const declaredText = declared.map(([n, v]) => `${n}=${v}`).join(', ') || 'none'
    const app = e.probe?.probe?.app
    if (!app || app.length === 0) {
      const undeclared = declared.some(([, v]) => v === port) ? '' : `the probe's port ${port} is not one of the group's ports (${declaredText}); `
      return {detail: `cause not proven: ${undeclared}${e.vmExec ? 'the VM did not report what answers there' : 'run doctor with --vm-exec to see what answers on the VM'}`}
    }
    // Answers: HTTP 2xx or 3xx (pilot-agent's HTTP prober); for a TCP probe, a connection (curl exit 7: refused).
    const ok = (r: {code: string; connected: boolean}) => (http ? /^[23]\d\d$/.test(r.code) : r.connected)
    const atProbe = app.find((r) => r.port === port)
    // pilot-agent reports the address it probed: another port than the group's is an older mesh.yaml on the VM.
    const probed = /127\.0\.0\.1:(\d+)/.exec(message)?.[1]
    if (probed !== undefined && Number(probed) !== port && atProbe && ok(atProbe)) {
      const detail = `the VM probes port ${probed}, but the group's probe is on ${port}, where the application answers${http ? ` (HTTP ${atProbe.code})` : ''}: the VM runs an older probe (its mesh.yaml predates the group's)`
      return meshKnown ? {detail: `${detail}; the fix gives it the group's`, fix: installOnVm('mesh.yaml', '/etc/istio/config/mesh')} : {detail: detail + MESH_UNKNOWN}
    }
    if (atProbe && ok(atProbe))
      return {
        detail: `the probe's target ${target} answers now${http ? ` (HTTP ${atProbe.code})` : ''}: the condition is an earlier report; restarting the sidecar probes and reports again`,
        fix: restartIstio,
      }
    if (atProbe && http && atProbe.code !== '000')
      return {detail: `the application answers HTTP ${atProbe.code} at ${target}: it reports itself not ready (a cause in the application, which meshvm cannot fix)`}
    if (!atProbe || atProbe.connected || atProbe.exit !== 7) return {detail: `cause not proven: ${target} gave no answer the probe accepts (curl exit ${atProbe?.exit ?? '?'})`}
    // The group's other ports get only a TCP connection (probe.ts): one that is made is the application listening there.
    const others = app.filter((r) => r.port !== port && declared.some(([, v]) => v === r.port))
    const answering = others.filter((r) => r.connected)
    const named = (p: number) => `${declared.find(([, v]) => v === p)?.[0] ?? '?'}=${p}`
    if (answering.length === 0 && others.some((r) => r.exit !== 7))
      return {
        detail: `cause not proven: nothing listens on ${listener}, and the group's other ports gave no clear answer (curl exit ${others.map((r) => `${r.port}: ${r.exit}`).join(', ')})`,
      }
    if (answering.length === 0)
      return {
        detail: `nothing listens on ${listener} nor answers on the group's other ports (${declaredText}): the application is not running on the VM (start it; meshvm does not know how)`,
      }
    if (answering.length > 1)
      return {
        detail: `nothing listens on the probe's port ${port}; the application answers on several of the group's ports (${answering.map((r) => named(r.port)).join(', ')}): which one the probe should use is not proven`,
      }
    const to = answering[0]!.port
    const patch = `${K} patch workloadgroup ${q(e.groupName ?? 'GROUP')} -n ${q(ns)} --type=json -p ${q(JSON.stringify([{op: 'replace', path: `/spec/probe/${kind}/port`, value: to}]))}`
    return {
      detail: `nothing listens on the probe's port ${port}, and the application accepts connections on the group's port ${named(to)}, the only one of its ports that does: the probe names the wrong port${meshKnown ? ' (the fix points it there, and gives the VM the new probe in mesh.yaml)' : ` (${patch} points it there)${MESH_UNKNOWN}`}`,
      ...(meshKnown ? {fix: `${patch} && ${installOnVm('mesh.yaml', '/etc/istio/config/mesh')}`} : {}),
    }
  }

  /**
   * Which object a NACK comes from: an EnvoyFilter that applies to the VM (of the Istio namespace, or of
   * the VM's with a workloadSelector its labels match) and adds a filter the error names (by its
   * typed_config type, or by its name when it gives no type). Only that is a proven cause; anything
   * else is said to be unproven.
   */
  const nackCause = (error: string): {detail: string; fix?: string} => {
    if (typeof e.envoyFilters === 'string') return {detail: `cause not proven: ${e.envoyFilters}`}
    const labels = entryLabels(e.entry)
    // What applies to the VM's sidecar: not a filter attached by targetRefs (those select gateways), one of
    // the root namespace (every workload of the mesh) or of the VM's namespace whose workloadSelector (none:
    // every workload of the namespace) matches the entry's labels; and, of it, the patches whose
    // match.proxy.proxyVersion (a regex) matches the VM's proxy version, when istiod reports it.
    const applying = (e.envoyFilters ?? []).filter((ef) => {
      if (Array.isArray(specOf(ef).targetRefs) && (specOf(ef).targetRefs as unknown[]).length > 0) return false
      const selector = rec(rec(specOf(ef).workloadSelector).labels)
      return Object.entries(selector).every(([k, v]) => labels[k] === v)
    })
    const versionMatches = (cp: Record<string, unknown>): boolean => {
      const want = str(rec(rec(cp.match).proxy).proxyVersion)
      const have = e.sync?.proxyVersion
      if (!want || !have) return true
      try {
        return new RegExp(`^(?:${want})$`).test(have)
      } catch {
        return true
      }
    }
    const efName = (ef: KubeObject) => `${ef.metadata?.namespace ?? ''}/${nameOf(ef)}`
    const named = applying.flatMap((ef) => {
      const words: string[] = []
      for (const cp of records(specOf(ef).configPatches)) {
        if (!versionMatches(cp)) continue
        const value = rec(rec(cp.patch).value)
        const typed = rec(value.typed_config ?? value.typedConfig)
        // The type is what tells two filters of one name apart: when the patch gives one, the error must name it.
        const type = str(typed['@type'])?.replace(/^.*\//, '')
        const name = str(value.name)
        if (type ? !error.includes(type) : !(name && name.length > 3 && error.includes(name))) continue
        for (const w of [name, type]) if (w && error.includes(w)) words.push(w)
      }
      return words.length > 0 ? [{ef, words}] : []
    })
    if (named.length === 0) {
      const list = applying.map(efName).join(', ')
      return {
        detail: `cause not proven: the error names nothing an EnvoyFilter that applies to the VM adds${applying.length > 0 ? ` (those that apply: ${list}; run istioctl analyze -n ${ns})` : ' (none applies)'}`,
      }
    }
    const what = named.map(({ef, words}) => `EnvoyFilter ${efName(ef)} applies to the VM and adds ${[...new Set(words)].map((w) => `'${w}'`).join(', ')}, which the error names`).join('; ')
    const save = named.map(({ef}) => `${K} get envoyfilter ${q(nameOf(ef))} -n ${q(ef.metadata?.namespace ?? ns)} -o yaml > ${q(`${nameOf(ef)}.yaml`)}`).join('; ')
    // Deleting is the fix only for a filter that selects this workload alone (a workloadSelector the
    // entry matches, in the VM's namespace): one of the root namespace, or with no selector, serves
    // every workload of the mesh or of the namespace, and deleting it would change them all.
    const wide = named.filter(({ef}) => ef.metadata?.namespace === istioNs || Object.keys(rec(rec(specOf(ef).workloadSelector).labels)).length === 0)
    if (wide.length > 0) {
      const scope = wide
        .map(({ef}) => `${efName(ef)} applies to every workload of ${ef.metadata?.namespace === istioNs ? `the mesh (${istioNs} is the root namespace)` : `namespace ${ef.metadata?.namespace ?? ns}`}`)
        .join('; ')
      return {
        detail: `${what}; not deleted, as ${scope}: scope it away from this VM instead (e.g. a match.proxy.proxyVersion on its patches that excludes the VM's proxy${e.sync?.proxyVersion ? ` ${e.sync.proxyVersion}` : ''}, or a workloadSelector), or upgrade the VM's Envoy to one that has the filter (to edit it: ${save})`,
      }
    }
    return {
      detail: `${what}: deleting ${named.length > 1 ? 'them' : 'it'} makes istiod push the listeners without ${named.length > 1 ? 'those filters' : 'that filter'} (for every workload ${named.length > 1 ? 'they select' : 'it selects'}; to mend it rather than lose it, save it first: ${save})`,
      fix: named.map(({ef}) => `${K} delete envoyfilter ${q(nameOf(ef))} -n ${q(ef.metadata?.namespace ?? ns)}`).join(' && '),
    }
  }

  // 1. The bundle and its token.
  if (!e.bundle) add('bundle', 'skip', 'no bundle given (pass --bundle DIR to check the files copied to the VM)')
  else if (badBundleName !== undefined) {
    add(
      'bundle.names',
      'fail',
      `the bundle's cluster.env names ${JSON.stringify(badBundleName)}, which is not a Kubernetes name (ISTIO_META_WORKLOAD_NAME, POD_NAMESPACE): meshvm bundle did not write it so, or it was edited; no fix is built from it`,
    )
  } else {
    for (const c of e.bundle.checks) {
      // A rotated root: the new bundle alone does not reach the VM; its root-cert.pem is sent there too.
      const fix = c.id === 'root-cert' && c.status === 'fail' ? installOnVm('root-cert.pem', '/etc/certs/root-cert.pem') : c.fix !== undefined ? external(c.fix) : undefined
      add(`bundle.${c.id}`, c.status, c.detail, fix)
    }
  }

  // 2. The way to istiod: the east-west gateway, the VM's hosts entry, the network labels.
  const gw = e.gateway
  const gwName = `${gw.namespace}/${gw.name}`
  // The bundle made again for the gateway as it is now (into --bundle's directory, when given).
  const rebundle = `${M('bundle')} ${q(group ?? 'GROUP')} -n ${q(ns)}${e.bundle?.dir ? ` -d ${q(e.bundle.dir)}` : ''}`
  if (!gw.service) {
    add('gateway', 'fail', `east-west gateway Service ${gwName} not found`, `${K} get svc -n ${q(gw.namespace)} -l istio=eastwestgateway   # then: ${M('doctor')} … --ingress-service NAME.NAMESPACE`)
  } else {
    // The one classifier precheck and bundle verify use (precheck/gateway.ts).
    const reading = eastWestGatewayKind(gw.service as GatewayServiceLike)
    const verdict = eastWestGatewayVerdict(gwName, reading)
    const ambient = reading.kind === 'ambient'
    if (verdict.status === 'pass') add('gateway.kind', 'pass', verdict.message)
    else
      add(
        ambient ? 'gateway.kind' : 'gateway.ports',
        'fail',
        verdict.message,
        ambient
          ? gw.classic
            ? `${rebundle} --ingress-service ${q(gw.classic)}`
            : `${M('bundle')} ${q(e.groupName ?? 'GROUP')} -n ${q(ns)} --ingress-service NAME.NAMESPACE   # of a classic east-west gateway: ${verdict.hint}`
          : `${K} edit svc ${q(gw.name)} -n ${q(gw.namespace)}   # ${verdict.hint}`,
      )
    const address = gatewayAddress(gw.service)
    if (!address) add('gateway.address', 'fail', `${gwName} has no load-balancer address or external IP yet`, `${K} get svc ${q(gw.name)} -n ${q(gw.namespace)} -w`)
    else if (gw.bundleAddress === undefined)
      add(
        'gateway.address',
        e.bundle ? 'warn' : 'pass',
        `${gwName} is at ${address}${e.bundle ? '; the bundle has no hosts entry for istiod (it was made with --no-hosts or for a direct address)' : ''}`,
      )
    else if (gw.bundleAddress !== address) {
      add(
        'gateway.address',
        'fail',
        `the bundle's hosts file sends istiod's name to ${gw.bundleAddress}, but ${gwName} is now at ${address} (the gateway moved)`,
        `${rebundle}   # then copy hosts to the VM's /etc/hosts`,
      )
    } else add('gateway.address', 'pass', `the bundle's hosts entry points at the gateway's current address ${address}`)

    const vmNetwork = e.bundle?.network ?? str(rec(rec(specOf(e.group).template)).network) ?? str(specOf(e.entry).network)
    const gatewayNetwork = labelsOf(gw.service)[NETWORK_LABEL]
    if (vmNetwork) {
      if (!gatewayNetwork)
        add(
          'network',
          'fail',
          `the VM is on network ${vmNetwork}, but ${gwName} has no ${NETWORK_LABEL} label: istiod cannot route to it`,
          `${K} label svc ${q(gw.name)} -n ${q(gw.namespace)} ${NETWORK_LABEL}=${q(e.gateway.controlPlaneNetwork ?? 'NETWORK-OF-THE-CLUSTER')}`,
        )
      else if (!e.gateway.controlPlaneNetwork)
        add(
          'network',
          'fail',
          `the VM is on network ${vmNetwork}, but namespace ${gw.namespace} has no ${NETWORK_LABEL} label: istiod does not know the cluster's network`,
          `${K} label namespace ${q(gw.namespace)} ${NETWORK_LABEL}=${q(gatewayNetwork)}`,
        )
      else add('network', 'pass', `VM network ${vmNetwork}; cluster network ${e.gateway.controlPlaneNetwork} (gateway labelled ${gatewayNetwork})`)
    }
  }

  // 3. istiod.
  const rev = e.istiod.revision ? ` of revision ${e.istiod.revision}` : ''
  const ready = e.istiod.pods.filter((p) => p.ready)
  if (ready.length === 0)
    add(
      'istiod.running',
      'fail',
      `no running istiod${rev}${e.istiod.pods.length > 0 ? ` (${e.istiod.pods.length} not ready)` : ''}`,
      `${K} get pods -n ${q(istioNs)} -l app=istiod${e.istiod.revision ? `,istio.io/rev=${q(e.istiod.revision)}` : ''}`,
    )
  else add('istiod.running', 'pass', `${ready.length} istiod${rev} running: ${ready.map((p) => p.name + (p.version ? ` (${p.version})` : '')).join(', ')}`)
  const env = e.istiod.env
  const setEnv = (name: string) => `${K} set env ${q(`deployment/${istiodServiceName(e.istiod.revision)}`)} -n ${q(istioNs)} ${name}=true`
  if (env.PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION === 'false') {
    add(
      'istiod.autoregistration',
      'fail',
      'istiod runs with PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION=false: VMs that connect get no WorkloadEntry',
      setEnv('PILOT_ENABLE_WORKLOAD_ENTRY_AUTOREGISTRATION'),
    )
  } else add('istiod.autoregistration', 'pass', 'workload entry auto-registration is on')
  if (env.PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS === 'false')
    add('istiod.healthchecks', 'warn', "istiod runs with PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS=false: the VM's readiness probe is ignored", setEnv('PILOT_ENABLE_WORKLOAD_ENTRY_HEALTHCHECKS'))
  const controller = annotationsOf(e.entry)[WE_ANNOTATIONS.workloadController]
  if (controller && e.istiod.pods.length > 0 && !e.istiod.pods.some((p) => p.name === controller)) {
    add('istiod.controller', 'warn', `the entry names istiod ${controller} as its controller, which is not running: another istiod takes it over when the VM reconnects`)
  }

  // 4. The registration.
  const we = e.entry
  if (!we) {
    const group = e.groupName ? ` of WorkloadGroup ${ns}/${e.groupName}` : ''
    const why = e.proxy
      ? `istiod${e.proxy.istiod ? ` ${e.proxy.istiod}` : ''} reports the proxy ${e.proxy.name} connected, but registered no entry for it (auto-registration off, or a bundle made without --autoregister)`
      : 'the VM has not registered (its sidecar is not connected, or istiod refused it)'
    add(
      'registration',
      'fail',
      `no WorkloadEntry${group} matches ${e.query}: ${why}`,
      e.vmExec ? restartIstio : `on the VM: sudo systemctl restart istio   # then: ${M('doctor')} ${q(e.query)} -n ${q(ns)}`,
    )
  } else {
    const ann = annotationsOf(we)
    const autoGroup = ann[WE_ANNOTATIONS.autoRegistrationGroup]
    const address = str(specOf(we).address)
    add(
      'registration',
      'pass',
      `WorkloadEntry ${ns}/${nameOf(we)}${address ? ` at ${address}` : ''}${e.war ? ` (WorkloadAutoRegistration ${nameOf(e.war)})` : autoGroup ? ` (auto-registered from ${autoGroup})` : ''}${e.context ? ` in context ${e.context}` : ''}`,
    )
    if (ann[WE_ANNOTATIONS.disconnectedAt] && !ann[WE_ANNOTATIONS.connectedAt]) {
      const since = Date.parse(ann[WE_ANNOTATIONS.disconnectedAt]!)
      add(
        'registration.connected',
        'fail',
        `the VM disconnected from istiod${Number.isNaN(since) ? '' : ` ${humanDuration(e.now.getTime() - since)} ago`}; istiod deletes the entry after its grace period`,
        restartIstio,
      )
    }
    if (e.duplicates.length > 0) {
      const others = e.duplicates.map((d) => nameOf(d))
      add(
        'registration.duplicates',
        'fail',
        `${others.length + 1} WorkloadEntries share address ${address}: ${[nameOf(we), ...others].join(', ')} (istiod sends traffic to each)`,
        `${K} delete workloadentry ${others.map(q).join(' ')} -n ${q(ns)}`,
      )
    }
    if (e.staleBecause) {
      add(
        'registration.stale',
        'fail',
        `the entry is stale against its WorkloadGroup: ${e.staleBecause}`,
        `${M('war rollout')} ${q(e.groupName ?? autoGroup ?? 'GROUP')} -n ${q(ns)}${e.vmExec ? ` --restart-command ${q(`printf '%s\\n' 'sudo systemctl restart istio' | sh -c ${q(e.vmExec)}`)}` : ''}`,
      )
    }
    const healthy = conditionOf(we, 'Healthy')
    const probe = isRecord(specOf(e.group).probe)
    if (healthy && conditionStatus(healthy) === 'False') {
      const why = unhealthyCause(healthy.message ?? '')
      add('registration.healthy', 'fail', `Healthy=False${healthy.message ? `: ${healthy.message}` : ''} (the VM's readiness probe fails, so istiod sends it no traffic); ${why.detail}`, why.fix)
    } else if (healthy) add('registration.healthy', 'pass', 'Healthy=True')
    else if (probe && ann['proxy.istio.io/health-checks-enabled'] === 'true')
      add('registration.healthy', 'warn', 'health checks are on but istiod has no probe result yet: the entry counts as unhealthy until the first report')
    const waypoint = waypointBoundOf(we)
    if (waypoint && conditionStatus(waypoint) === 'False') {
      add(
        'registration.waypoint',
        'fail',
        `istio.io/WaypointBound=False${waypoint.message ? `: ${waypoint.message}` : ''}`,
        `${K} get gateways.gateway.networking.k8s.io -n ${q(ns)}   # the waypoint the entry uses (istio.io/use-waypoint) must exist and be programmed`,
      )
    }
    // istiod labels the entries of HBONE-capable proxies from Istio 1.31 on.
    const labelsTunnel = (version: string | undefined) => /^1\.(3[1-9]|[4-9]\d)/.test(version ?? '')
    if (autoGroup && labelsOf(we)[TUNNEL_LABEL] === undefined && labelsTunnel(e.sync?.proxyVersion) && labelsTunnel(e.sync?.istiodVersion)) {
      add(
        'registration.tunnel',
        'warn',
        `the entry has no ${TUNNEL_LABEL} label: ambient workloads reach this VM over plaintext until it re-registers`,
        `${M('war rollout')} ${q(autoGroup)} -n ${q(ns)} --missing-tunnel-label`,
      )
    }
    for (const ev of e.events.slice(0, 3))
      add('registration.event', 'warn', `event ${ev.reason ?? ''}${ev.count && ev.count > 1 ? ` (x${ev.count})` : ''}: ${ev.message ?? ''}`.replace(/\s+/g, ' ').trim())
  }

  // 5. The Service or ServiceEntry that selects it.
  if (we) {
    const labels = entryLabels(we)
    const selecting = servicesSelecting(e.services, e.serviceEntries, labels)
    const text = labelText(labels)
    if (selecting.length === 0) {
      // The Service `meshvm onboard` makes for the group, applied with meshvm's field manager: a later
      // `meshvm onboard --apply` takes it over (a `kubectl create service` would own its selector and
      // port names, and onboard's server-side apply would then conflict on them).
      const service = onboardService(e.group, e.groupName, ns)
      const fix =
        service && mapSelectorSelects(rec(specOf(service).selector), labels)
          ? `printf '%s\\n' ${q(JSON.stringify(service))} | ${K} apply --server-side --field-manager=${FIELD_MANAGER} -f -`
          : `${K} apply -n ${q(ns)} -f SERVICE.yaml   # a Service whose selector is ${text || "the entry's labels"}`
      add('service', 'fail', `no Service or ServiceEntry in ${ns} selects the entry's labels${text ? ` (${text})` : ' (it has none)'}: nothing routes to the VM`, fix)
    } else {
      add('service', 'pass', `selected by ${selecting.map((s) => `${s.kind} ${nameOf(s.obj)}`).join(', ')}`)
      const wePorts = rec(specOf(we).ports)
      const groupPorts = rec(rec(specOf(e.group).template).ports)
      const named = {...groupPorts, ...wePorts}
      for (const s of selecting.filter((x) => x.kind === 'Service')) {
        for (const p of records(specOf(s.obj).ports)) {
          if (typeof p.targetPort === 'string' && !(p.targetPort in named)) {
            add(
              'service.ports',
              'fail',
              `Service ${nameOf(s.obj)} port ${Number(p.port)} targets the port named ${p.targetPort}, which the WorkloadGroup does not define (its ports: ${Object.keys(named).join(', ') || 'none'})`,
              `${K} patch workloadgroup ${q(e.groupName ?? 'GROUP')} -n ${q(ns)} --type merge -p ${q(JSON.stringify({spec: {template: {ports: {[p.targetPort]: Number(p.port)}}}}))}`,
            )
          }
        }
      }
    }
  } else add('service', 'skip', 'no WorkloadEntry to check')

  // 6. Sync state, as istiod reports it.
  const sync = e.sync
  if (!sync) add('sync', 'skip', 'no proxy to look for')
  else if (sync.unreadable) add('sync', 'warn', `cannot read istiod's sync state: ${sync.unreadable}`)
  else if (!sync.connected) add('sync', 'fail', `no istiod reports the VM's proxy (NOT CONNECTED)`, e.vmExec ? restartIstio : `on the VM: sudo systemctl status istio; sudo journalctl -u istio -n 50`)
  else {
    const errors = sync.types.filter((t) => t.state === 'ERROR')
    const stale = sync.types.filter((t) => t.state === 'STALE')
    if (errors.length > 0) {
      const cause = nackCause(errors.map((t) => t.error ?? '').join('\n'))
      add('sync', 'fail', `the VM's Envoy rejected (NACK) ${errors.map((t) => `${t.type}${t.error ? `: ${t.error}` : ''}`).join('; ')}; ${cause.detail}`, cause.fix)
    } else if (stale.length > 0) add('sync', 'warn', `${stale.map((t) => t.type).join(', ')} STALE: istiod sent configuration the VM has not acknowledged yet`)
    else add('sync', 'pass', `SYNCED with ${sync.istiod ?? 'istiod'}`)
    if (sync.versionSkew)
      add(
        'sync.version',
        'warn',
        `proxy ${sync.proxyVersion ?? '?'} and istiod ${sync.istiodVersion ?? '?'} differ in minor version by more than Istio supports for long`,
        `upgrade the VM's istio-sidecar package to ${sync.istiodVersion ?? "istiod's version"}`,
      )
  }

  // 7. On the VM (--vm-exec).
  if (!e.probe) add('vm', 'skip', `not checked (pass --vm-exec 'ssh "$MESHVM_VM_ADDRESS"' to check the VM itself)`)
  else if (e.probe.error) add('vm', 'fail', `--vm-exec failed: ${e.probe.error}`, "run the command by hand with MESHVM_VM_ADDRESS set to the VM's address")
  else {
    const p = e.probe.probe!
    if (p.ready === '200') add('vm.ready', 'pass', 'pilot-agent is ready (15021/healthz/ready: 200)')
    else
      add(
        'vm.ready',
        'fail',
        p.ready === undefined || p.ready === 'unreachable' ? 'pilot-agent does not answer on 15021: the sidecar is not running' : `pilot-agent is not ready (15021/healthz/ready: ${p.ready})`,
        restartIstio,
      )
    if (p.cert) {
      // Envoy's days_until_expiration is whole days (0 for the 24-hour certificates Istio issues by
      // default): the expiration time decides, the day count only when there is none.
      const until = p.cert.expires ? Date.parse(p.cert.expires) : Number.NaN
      const expired = Number.isNaN(until) ? p.cert.daysLeft !== undefined && p.cert.daysLeft < 0 : until <= e.now.getTime()
      if (expired) add('vm.cert', 'fail', `Envoy's workload certificate has expired${p.cert.expires ? ` (${p.cert.expires})` : ''}`, restartIstio)
      else add('vm.cert', 'pass', `workload certificate valid${p.cert.expires ? ` until ${p.cert.expires}` : ''}`)
    } else if (p.ready === '200') add('vm.cert', 'warn', "Envoy's admin /certs gave no workload certificate")
    if (e.meshRootSerials.length > 0 && p.rootSerials.length > 0) {
      // Every root istio-ca-root-cert publishes: during a rotation it holds the new root beside the old
      // one, and a VM that lacks the new one is cut off when istiod switches to it.
      const missing = e.meshRootSerials.filter((s) => !p.rootSerials.includes(s))
      if (missing.length === 0) add('vm.root', 'pass', `the VM's Envoy trusts the current mesh root${e.meshRootSerials.length > 1 ? 's' : ''}`)
      else {
        const which =
          e.meshRootSerials.length > 1
            ? `the mesh root${missing.length > 1 ? 's' : ''} ${missing.join(', ')} of istio-ca-root-cert (which holds ${e.meshRootSerials.join(', ')})`
            : `the mesh root in istio-ca-root-cert (serial ${missing[0]})`
        add('vm.root', 'fail', `the VM's Envoy does not trust ${which}; it trusts ${p.rootSerials.join(', ')}`, installOnVm('root-cert.pem', '/etc/certs/root-cert.pem'))
      }
    }
    if (p.interceptionRules === 0) add('vm.interception', 'warn', 'no Istio interception rules (iptables/nftables) found: outbound traffic bypasses the sidecar', restartIstio)
    if (p.dns === '') add('vm.dns', 'fail', "istiod's host name does not resolve on the VM", installOnVm('hosts', '/etc/hosts', true))
    // pilot-agent's own TCP connection to istiod (Envoy's xds-grpc cluster is pilot-agent's unix socket,
    // which stays up whether or not pilot-agent reaches istiod).
    if (p.istiod) {
      if (p.istiod.peers.length > 0) add('vm.xds', 'pass', `pilot-agent is connected to istiod at ${p.istiod.peers.join(', ')}`)
      else add('vm.xds', 'fail', `pilot-agent has no connection to istiod: no established TCP connection to port ${p.istiod.port} on the VM`, vmCommand('sudo journalctl -u istio -n 50'))
    }
  }

  const firstFail = checks.find((c) => c.status === 'fail')
  const result = firstFail ? 'fail' : checks.some((c) => c.status === 'warn') ? 'warn' : 'pass'
  return {
    query: e.query,
    namespace: e.namespace,
    ...(e.context ? {context: e.context} : {}),
    ...(we ? {workloadEntry: nameOf(we)} : {}),
    result,
    checks,
    ...(firstFail ? {summary: `step ${firstFail.step} (${STEP_TITLES[firstFail.step - 1]}): ${firstFail.detail}${firstFail.fix ? `; fix: ${firstFail.fix}` : ''}`} : {}),
  }
}

/** The Service `meshvm onboard` generates for a WorkloadGroup (as `onboard -f` derives it); undefined when the group does not make one. */
function onboardService(group: KubeObject | undefined, name: string | undefined, namespace: string): KubeObject | undefined {
  if (!group || !name) return undefined
  try {
    const wg = {metadata: {name, namespace}, spec: specOf(group)} as unknown as WorkloadGroupLike
    return serviceObject(parseOnboardInput(inputFromWorkloadGroup(wg, {}))) as unknown as KubeObject
  } catch {
    // A group onboard could not have made (no ports, a port name it refuses): no Service to propose.
    return undefined
  }
}

/** Whether an auto-registered entry no longer matches its group's template (labels, service account, network). */
export function entryStaleAgainstGroup(entry: KubeObject, group: KubeObject): string | undefined {
  const template = rec(specOf(group).template)
  const spec = specOf(entry)
  const diffs: string[] = []
  const sa = str(template.serviceAccount)
  if (sa && str(spec.serviceAccount) !== sa) diffs.push(`service account ${str(spec.serviceAccount) ?? '(none)'} → ${sa}`)
  const network = str(template.network)
  if (network && str(spec.network) !== network) diffs.push(`network ${str(spec.network) ?? '(none)'} → ${network}`)
  const want = {...(rec(rec(specOf(group).metadata).labels) as Record<string, unknown>), ...rec(template.labels)}
  const have = entryLabels(entry)
  for (const [k, v] of Object.entries(want)) if (typeof v === 'string' && have[k] !== v) diffs.push(`label ${k}=${have[k] ?? '(none)'} → ${v}`)
  return diffs.length > 0 ? diffs.join(', ') : undefined
}
