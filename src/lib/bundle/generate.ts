/**
 * The VM bootstrap bundle, computed from cluster values exactly as `istioctl x workload entry
 * configure` computes it (istioctl-behaviour.md §3.4), plus meshvm's documented improvements:
 * deterministic ISTIO_INBOUND_PORTS, defaults applied to every WorkloadGroup however it was read,
 * gateways known only by a load-balancer host name, and an install.sh. Pure: no I/O.
 */
import {isIP} from 'node:net'
import {UsageError} from '../errors.js'
import {shellQuote} from '../cli/prompt.js'
import {goJsonString, goJsonStringMap, goYamlMarshal, istioShellQuote, type GoYaml} from '../util/go-compat.js'
import {compareStrings, isRecord} from '../util/records.js'
import {checkBundleValues} from './validate.js'
import {parseMeshYaml} from './mesh-yaml.js'

export interface WorkloadGroupLike {
  metadata: {name: string; namespace: string; annotations?: Record<string, string>}
  spec: {
    metadata?: {labels?: Record<string, string>; annotations?: Record<string, string>}
    template?: {serviceAccount?: string; ports?: Record<string, number>; network?: string; labels?: Record<string, string>; locality?: string}
    probe?: Record<string, unknown>
  }
}

export type GatewayAddress = {kind: 'ip'; address: string} | {kind: 'hostname'; hostname: string} | {kind: 'none'}

export interface BundleInputs {
  workloadGroup: WorkloadGroupLike
  /** `data.mesh` of ConfigMap istio[-REV]; may be empty. */
  meshConfigYaml: string
  clusterId: string
  rootCert: string
  token: string
  /** When the token stops working (from the TokenRequest status), printed and checked by install.sh. */
  tokenExpiry?: Date
  istioNamespace: string
  revision?: string
  gateway: GatewayAddress
  internalIp?: string
  externalIp?: string
  autoregister: boolean
  captureDns: boolean
}

export interface BundleFile {
  name: string
  data: string
  mode: number
}

export interface Bundle {
  files: BundleFile[]
  warnings: string[]
  istiodHost: string
}

/** The group's service account: an empty or missing one is "default", as for a Pod. */
export function serviceAccountOf(wg: WorkloadGroupLike): string {
  return wg.spec?.template?.serviceAccount || 'default'
}

/** istioctl applies these defaults only to files; meshvm applies them to every WorkloadGroup. */
export function withWorkloadGroupDefaults(wg: WorkloadGroupLike): WorkloadGroupLike {
  const spec = wg.spec ?? {}
  return {
    metadata: wg.metadata,
    spec: {
      ...spec,
      metadata: spec.metadata ?? {},
      template: {...(spec.template ?? {}), serviceAccount: serviceAccountOf(wg)},
    },
  }
}

export function isRevisioned(revision: string | undefined): revision is string {
  return revision !== undefined && revision !== '' && revision !== 'default'
}

type Json = Record<string, unknown>

/** Proto-merge semantics of protomarshal.ApplyYAML: messages and maps merge, everything else replaces. */
function mergeInto(target: Json, source: Json): Json {
  for (const [k, v] of Object.entries(source)) {
    target[k] = isRecord(v) && isRecord(target[k]) ? mergeInto({...(target[k] as Json)}, v) : v
  }
  return target
}

function parseYamlObject(text: string, what: string): Json {
  let value: unknown
  try {
    value = parseMeshYaml(text)
  } catch (err) {
    throw new UsageError(`${what} is not valid YAML: ${(err as Error).message.split('\n')[0]}`)
  }
  if (value === null || value === undefined) return {}
  if (!isRecord(value)) throw new UsageError(`${what} must be a YAML mapping`)
  return value
}

/** jsonpb omits zero values (0, "", false, empty lists and maps). */
function omitEmpty(value: unknown): unknown {
  if (Array.isArray(value)) return value.length === 0 ? undefined : value.map(omitEmpty)
  if (isRecord(value)) {
    const out: Json = {}
    for (const [k, v] of Object.entries(value)) {
      const c = omitEmpty(v)
      if (c !== undefined) out[k] = c
    }
    return out
  }
  if (value === 0 || value === '' || value === false || value === null) return undefined
  return value
}

function firstLabel(labels: Record<string, string>, keys: string[]): string | undefined {
  for (const k of keys) if (labels[k]) return labels[k]
  return undefined
}

export function validateBundleInputs(inputs: BundleInputs): void {
  if (inputs.internalIp !== undefined && inputs.externalIp !== undefined) {
    throw new UsageError('--internal-ip and --external-ip are mutually exclusive: give the address the mesh should use to reach the VM')
  }
  for (const [flag, ip] of [
    ['--internal-ip', inputs.internalIp],
    ['--external-ip', inputs.externalIp],
  ] as const) {
    if (ip !== undefined && isIP(ip) === 0) throw new UsageError(`${flag} ${JSON.stringify(ip)}: expected an IPv4 or IPv6 address`)
  }
}

/**
 * cluster.env's quoting: Istio's shellescape.Quote, except that a value with a backslash is always
 * single-quoted (Istio's pattern leaves `w\` bare, which the shell reads as a line continuation).
 */
function clusterEnvQuote(value: string): string {
  return value.includes('\\') ? shellQuote(value) : istioShellQuote(value)
}

/** cluster.env: one sorted KEY='value' line per variable (the keys are checked shell names; proxyMetadata values may be YAML numbers). */
export function clusterEnvText(env: Record<string, string>): string {
  return (
    Object.entries(env)
      .map(([k, v]) => `${k}=${clusterEnvQuote(String(v))}`)
      .sort()
      .join('\n') + '\n'
  )
}

export function buildBundle(inputs: BundleInputs): Bundle {
  validateBundleInputs(inputs)
  // The second wall (writeBundle checks first, before the token): nothing unsafe is ever generated.
  const {rootCert: _checkedByWriteBundle, ...values} = inputs
  checkBundleValues(values, 'input')
  const warnings: string[] = []
  const wg = withWorkloadGroupDefaults(inputs.workloadGroup)
  const name = wg.metadata.name
  const namespace = wg.metadata.namespace
  const template = wg.spec.template ?? {}
  const serviceAccount = serviceAccountOf(wg)
  const revisioned = isRevisioned(inputs.revision)
  const istiodHost = `${revisioned ? `istiod-${inputs.revision}` : 'istiod'}.${inputs.istioNamespace}.svc`

  // mesh.yaml: the cluster's defaultConfig, the proxy.istio.io/config annotations, then meshvm's keys.
  const mesh = parseYamlObject(inputs.meshConfigYaml, `the "mesh" key of ConfigMap ${revisioned ? `istio-${inputs.revision}` : 'istio'}`)
  const defaultConfig: Json = mergeInto({proxyMetadata: {}}, isRecord(mesh.defaultConfig) ? mesh.defaultConfig : {})
  if (revisioned && !defaultConfig.discoveryAddress) defaultConfig.discoveryAddress = `${istiodHost}:15012`
  for (const annotations of [wg.metadata.annotations, wg.spec.metadata?.annotations]) {
    const proxyConfig = annotations?.['proxy.istio.io/config']
    if (proxyConfig) mergeInto(defaultConfig, parseYamlObject(proxyConfig, 'the proxy.istio.io/config annotation of the WorkloadGroup'))
  }
  const labels: Record<string, string> = {...(wg.spec.metadata?.labels ?? {})}
  if (template.labels && Object.keys(template.labels).length > 0) {
    warnings.push(
      `labels belong in spec.metadata.labels; these template labels override them: ${Object.entries(template.labels)
        .map(([k, v]) => `${k}=${v}`)
        .join(', ')}`,
    )
    Object.assign(labels, template.labels)
  }
  if (wg.spec.probe) defaultConfig.readinessProbe = omitEmpty(wg.spec.probe)

  const canonicalName = firstLabel(labels, ['service.istio.io/canonical-name', 'app.kubernetes.io/name', 'app']) ?? name
  const canonicalRevision = firstLabel(labels, ['service.istio.io/canonical-revision', 'app.kubernetes.io/version', 'version']) ?? 'latest'
  const meta: Record<string, string> = {...((defaultConfig.proxyMetadata as Record<string, string>) ?? {})}
  meta.CANONICAL_SERVICE = canonicalName
  meta.CANONICAL_REVISION = canonicalRevision
  meta.POD_NAMESPACE = namespace
  meta.SERVICE_ACCOUNT = serviceAccount
  meta.TRUST_DOMAIN = typeof mesh.trustDomain === 'string' ? mesh.trustDomain : ''
  meta.ISTIO_META_CLUSTER_ID = inputs.clusterId
  meta.ISTIO_META_MESH_ID = typeof defaultConfig.meshId === 'string' ? defaultConfig.meshId : ''
  meta.ISTIO_META_NETWORK = template.network ?? ''
  const ports = Object.entries(template.ports ?? {})
  if (ports.length > 0) {
    const podPorts = [...ports].sort(([a], [b]) => compareStrings(a, b)).map(([n, p]) => `{"name":${goJsonString(n)},"containerPort":${p},"protocol":""}`)
    meta.ISTIO_META_POD_PORTS = `[${podPorts.join(',')}]`
  }
  meta.ISTIO_META_WORKLOAD_NAME = name
  meta.ISTIO_METAJSON_LABELS = goJsonStringMap({...labels, 'service.istio.io/canonical-name': canonicalName, 'service.istio.io/canonical-revision': canonicalRevision})
  if (inputs.captureDns) meta.ISTIO_META_DNS_CAPTURE = 'true'
  if (inputs.autoregister) meta.ISTIO_META_AUTO_REGISTER_GROUP = name
  defaultConfig.proxyMetadata = meta

  // sigs.k8s.io/yaml of ToJSONMap(defaultConfig): the JSON shape (dates as strings), then yaml.v2 (keys, quoting, folding).
  const meshYaml = goYamlMarshal(JSON.parse(JSON.stringify({defaultConfig})) as GoYaml)

  // cluster.env: every proxyMetadata key plus the VM-specific ones, one sorted KEY='value' line each.
  const env: Record<string, string> = {...meta}
  // Deterministic, unlike istioctl's Go map order: ascending, without duplicates.
  const inbound = [...new Set(ports.map(([, p]) => p))].sort((a, b) => a - b)
  env.ISTIO_INBOUND_PORTS = inbound.length > 0 ? inbound.join(',') : '*'
  env.ISTIO_NAMESPACE = namespace
  env.ISTIO_SERVICE = `${name}.${namespace}`
  env.ISTIO_SERVICE_CIDR = '*'
  const statusPort = Number(defaultConfig.statusPort ?? 0)
  env.ISTIO_LOCAL_EXCLUDE_PORTS = `22,15090,15021${statusPort === 15090 || statusPort === 15021 ? '' : `,${statusPort || 15020}`}`
  env.SERVICE_ACCOUNT = serviceAccount
  if (revisioned) env.CA_ADDR = `${istiodHost}:15012`
  const svcIp = inputs.internalIp ?? inputs.externalIp
  if (svcIp !== undefined) env.ISTIO_SVC_IP = svcIp
  if (inputs.externalIp !== undefined) env.REWRITE_PROBE_LEGACY_LOCALHOST_DESTINATION = 'true'
  const clusterEnv = clusterEnvText(env)

  let hosts = ''
  if (inputs.gateway.kind === 'ip') hosts = `${inputs.gateway.address} ${istiodHost}\n`
  else if (inputs.gateway.kind === 'hostname') hosts = `# ${istiodHost} is reached through the east-west gateway ${commentSafe(inputs.gateway.hostname)}; install.sh resolves it on the VM\n`

  const files: BundleFile[] = [
    {name: 'mesh.yaml', data: meshYaml, mode: 0o644},
    {name: 'cluster.env', data: clusterEnv, mode: 0o644},
    {name: 'root-cert.pem', data: inputs.rootCert, mode: 0o644},
    {name: 'istio-token', data: inputs.token, mode: 0o600},
    {name: 'hosts', data: hosts, mode: 0o644},
    {name: 'install.sh', data: installScript(inputs, istiodHost), mode: 0o755},
  ]
  return {files, warnings, istiodHost}
}

/** Text inside a `#` comment: a line break would end the comment and start a command. */
const commentSafe = (text: string) =>
  JSON.stringify(text)
    .slice(1, -1)
    .replace(/[\u0080-\u009f\u2028\u2029]/g, (c) => `\\u${c.charCodeAt(0).toString(16).padStart(4, '0')}`)

/**
 * The VM side of the istio.io VM guide, as one idempotent script. Every value from the cluster or
 * the user is a shellQuote'd word or inside a commentSafe comment, even though buildBundle has
 * checked them all already.
 */
export function installScript(inputs: BundleInputs, istiodHost: string): string {
  const wg = inputs.workloadGroup.metadata
  const expiry = inputs.tokenExpiry
  const lines = [
    '#!/bin/sh',
    `# Generated by meshvm for WorkloadGroup ${commentSafe(`${wg.namespace}/${wg.name}`)}.`,
    '# Run as root on the VM, from this directory, after installing the istio-sidecar package',
    '# (deb or rpm) of the same Istio version as the control plane. Safe to run again.',
    'set -eu',
    'cd "$(dirname "$0")"',
    '',
  ]
  if (expiry) {
    const epoch = Math.floor(expiry.getTime() / 1000)
    lines.push(
      `# The token in istio-token expires at ${expiry.toISOString()}; the sidecar must first connect before then.`,
      `if [ "$(date +%s)" -ge ${epoch} ]; then`,
      `  echo ${shellQuote(`meshvm: istio-token expired at ${expiry.toISOString()}; generate a new bundle (meshvm bundle ${wg.name} -n ${wg.namespace} -d DIR)`)} >&2`,
      '  exit 1',
      'fi',
      '',
    )
  }
  lines.push(
    'install -d -m 0755 /etc/certs /etc/istio/config /etc/istio/proxy /var/lib/istio/envoy /var/run/secrets/tokens',
    'install -m 0644 root-cert.pem /etc/certs/root-cert.pem',
    'install -m 0600 istio-token /var/run/secrets/tokens/istio-token',
    'install -m 0644 cluster.env /var/lib/istio/envoy/cluster.env',
    'install -m 0644 mesh.yaml /etc/istio/config/mesh',
    '',
  )
  if (inputs.gateway.kind === 'ip') {
    const entry = `${inputs.gateway.address} ${istiodHost}`
    lines.push(`grep -qxF ${shellQuote(entry)} /etc/hosts || echo ${shellQuote(entry)} >> /etc/hosts`)
  } else if (inputs.gateway.kind === 'hostname') {
    const host = inputs.gateway.hostname
    lines.push(
      `# The east-west gateway is known by host name only: resolve it here, on the VM.`,
      `gateway_ip=$(getent ahosts ${shellQuote(host)} | awk 'NR==1 {print $1}')`,
      `if [ -z "$gateway_ip" ]; then echo ${shellQuote(`meshvm: cannot resolve the east-west gateway ${host}`)} >&2; exit 1; fi`,
      // Every regular-expression character, the delimiter and line breaks escaped: the host is data to sed, never a command.
      `sed -i ${shellQuote(`/ ${istiodHost.replace(/[\\/.*[\]^$]/g, '\\$&').replace(/\n/g, '\\n')}$/d`)} /etc/hosts`,
      `echo "$gateway_ip "${shellQuote(istiodHost)} >> /etc/hosts`,
    )
  } else {
    lines.push(`# No east-west gateway address: the VM must resolve ${commentSafe(istiodHost)} itself.`)
  }
  lines.push(
    '',
    'chown -R istio-proxy /var/lib/istio /etc/certs /etc/istio/proxy /etc/istio/config /var/run/secrets /etc/certs/root-cert.pem',
    'systemctl enable istio >/dev/null 2>&1 || true',
    'systemctl restart istio',
    `echo ${shellQuote(`meshvm: sidecar started for ${wg.namespace}/${wg.name}; check with: systemctl status istio`)}`,
    '',
  )
  return lines.join('\n')
}
