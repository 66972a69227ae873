/**
 * Every value a VM bundle writes into a file the VM runs or sources as root (install.sh, cluster.env,
 * hosts, mesh.yaml) is checked here against the syntax Kubernetes and Istio give it, before any token
 * is issued: a name with a newline, `$( )`, a backtick, a quote or a look-alike letter never reaches
 * a shell. The generator still quotes every value where it writes it; this is the first of the two
 * walls. Pure: no I/O.
 */
import {X509Certificate} from 'node:crypto'
import {ExitCode, MeshvmError, UsageErrors} from '../errors.js'
import {clusterIdValue, dns1123Label, dns1123Subdomain, envVarName, hostName, ipAddress, labelValue, portNumber, qualifiedName, singleLineText} from '../validation/kube.js'
import {pemCertificates} from '../util/pem.js'
import {isRecord} from '../util/records.js'
import {parseMeshYaml} from './mesh-yaml.js'
import type {GatewayAddress, WorkloadGroupLike} from './generate.js'

export interface BundleValues {
  workloadGroup?: WorkloadGroupLike
  istioNamespace?: string
  revision?: string
  clusterId?: string
  gateway?: GatewayAddress
  internalIp?: string
  externalIp?: string
  /** `data.mesh` of ConfigMap istio[-REV]: its trust domain, mesh ID and proxyMetadata reach cluster.env. */
  meshConfigYaml?: string
  /** `root-cert.pem` of ConfigMap istio-ca-root-cert in `namespace`: written to the VM as root-cert.pem. */
  rootCert?: {pem: string; namespace: string}
}

const BEGIN = '-----BEGIN CERTIFICATE-----'
const END = '-----END CERTIFICATE-----'

/**
 * root-cert.pem as istiod publishes it: PEM CERTIFICATE blocks (blank lines between them, LF or
 * CRLF line ends) and nothing else, each block an X.509 certificate. Only the line number is reported, not the line:
 * it came from the cluster and may be anything.
 */
export function rootCertProblem(pem: string): string | undefined {
  const lines = pem.split('\n')
  if (lines[lines.length - 1] === '') lines.pop()
  // Once the lines before it are checked, the n-th block found here is the n-th block of the scan.
  const certificates = pemCertificates(pem)
  let blockStart: number | undefined
  let blocks = 0
  for (const [i, raw] of lines.entries()) {
    const n = i + 1
    // RFC 7468 allows CRLF line ends (node-forge and Windows tools write them); a CR elsewhere is refused.
    const line = raw.endsWith('\r') ? raw.slice(0, -1) : raw
    if (blockStart === undefined) {
      if (line === '') continue
      if (line !== BEGIN) return `line ${n} is not part of a PEM CERTIFICATE block (only certificates may be there)`
      blockStart = n
    } else if (line === END) {
      try {
        new X509Certificate(certificates[blocks]!)
      } catch {
        return `the PEM CERTIFICATE block ending on line ${n} is not an X.509 certificate`
      }
      blocks++
      blockStart = undefined
    } else if (!/^[A-Za-z0-9+/=]+$/.test(line)) return `line ${n} is not base64 inside a PEM CERTIFICATE block`
  }
  if (blockStart !== undefined) return `the PEM CERTIFICATE block on line ${blockStart} has no END line`
  if (blocks === 0) return 'holds no PEM CERTIFICATE block'
  return undefined
}

/** The root certificate as written to the VM: checked by rootCertProblem, with a final newline. */
export function normalizedRootCert(pem: string): string {
  return pem.endsWith('\n') ? pem : `${pem}\n`
}

type Rule = (value: string) => string | undefined

/** What `proxy.istio.io/config` (an annotation, or the mesh config's defaultConfig) puts into cluster.env. */
function proxyConfigProblems(what: string, config: unknown, problems: string[]): void {
  if (!isRecord(config)) return
  const metadata = config.proxyMetadata
  if (metadata === undefined || metadata === null) return
  if (!isRecord(metadata)) {
    problems.push(`${what} proxyMetadata must be a mapping of strings`)
    return
  }
  for (const [key, value] of Object.entries(metadata)) {
    const keyProblem = envVarName(key)
    if (keyProblem) problems.push(`${what} proxyMetadata key ${JSON.stringify(key)}: ${keyProblem}`)
    const valueProblem = typeof value === 'string' || typeof value === 'number' || typeof value === 'boolean' ? singleLineText(String(value)) : 'must be a string'
    if (valueProblem) problems.push(`${what} proxyMetadata ${JSON.stringify(key)}: value ${JSON.stringify(value)} ${valueProblem}`)
  }
  check(problems, `${what} meshId`, config.meshId, singleLineText)
}

function check(problems: string[], what: string, value: unknown, rule: Rule): void {
  if (value === undefined) return
  if (typeof value !== 'string') {
    problems.push(`${what} must be a string`)
    return
  }
  const problem = rule(value)
  if (problem) problems.push(`${what} ${JSON.stringify(value)}: ${problem}`)
}

function parsedOrUndefined(text: string): unknown {
  try {
    return parseMeshYaml(text)
  } catch {
    // The generator reports YAML that does not parse, with its own message.
    return undefined
  }
}

/** Every problem of the values given (undefined ones are not checked), each naming its field. */
export function bundleValueProblems(v: BundleValues): string[] {
  const problems: string[] = []
  const wg = v.workloadGroup
  if (wg) {
    check(problems, 'WorkloadGroup metadata.name', wg.metadata?.name, dns1123Subdomain)
    check(problems, 'WorkloadGroup metadata.namespace', wg.metadata?.namespace, dns1123Label)
    const template: Record<string, unknown> = isRecord(wg.spec?.template) ? wg.spec.template : {}
    // An empty service account means "default" (withWorkloadGroupDefaults).
    if (template.serviceAccount !== '') check(problems, 'WorkloadGroup spec.template.serviceAccount', template.serviceAccount, dns1123Subdomain)
    check(problems, 'WorkloadGroup spec.template.network', template.network, labelValue)
    for (const [field, labels] of [
      ['spec.metadata.labels', wg.spec?.metadata?.labels],
      ['spec.template.labels', template.labels],
    ] as const) {
      if (labels === undefined || labels === null) continue
      if (!isRecord(labels)) {
        problems.push(`WorkloadGroup ${field} must be a mapping of strings`)
        continue
      }
      for (const [key, value] of Object.entries(labels)) {
        const keyProblem = qualifiedName(key)
        if (keyProblem) problems.push(`WorkloadGroup ${field} ${JSON.stringify(key)}: ${keyProblem}`)
        else if (typeof value !== 'string') problems.push(`WorkloadGroup ${field} ${JSON.stringify(key)}: value must be a string`)
        else {
          const valueProblem = labelValue(value)
          if (valueProblem) problems.push(`WorkloadGroup ${field} ${JSON.stringify(key)}: value ${JSON.stringify(value)} ${valueProblem.replace(/^value /, '')}`)
        }
      }
    }
    if (template.ports !== undefined && template.ports !== null) {
      if (!isRecord(template.ports)) problems.push('WorkloadGroup spec.template.ports must be a mapping of port names to numbers')
      else {
        for (const [name, port] of Object.entries(template.ports)) {
          const nameProblem = name === '' ? 'must not be empty' : labelValue(name)
          if (nameProblem) problems.push(`WorkloadGroup spec.template.ports name ${JSON.stringify(name)}: ${nameProblem.replace(/^value /, '')}`)
          const portProblem = typeof port === 'number' ? portNumber(port) : 'must be a number'
          if (portProblem) problems.push(`WorkloadGroup spec.template.ports ${JSON.stringify(name)}: ${JSON.stringify(port)} ${portProblem}`)
        }
      }
    }
    for (const [field, annotations] of [
      ['metadata.annotations', wg.metadata?.annotations],
      ['spec.metadata.annotations', wg.spec?.metadata?.annotations],
    ] as const) {
      const proxyConfig = isRecord(annotations) ? annotations['proxy.istio.io/config'] : undefined
      if (typeof proxyConfig === 'string') proxyConfigProblems(`WorkloadGroup ${field} proxy.istio.io/config:`, parsedOrUndefined(proxyConfig), problems)
    }
  }
  check(problems, 'Istio namespace (-i)', v.istioNamespace, dns1123Label)
  if (v.revision !== undefined && v.revision !== '' && v.revision !== 'default') check(problems, 'revision', v.revision, dns1123Label)
  check(problems, 'cluster ID', v.clusterId, clusterIdValue)
  if (v.gateway?.kind === 'ip') check(problems, 'east-west gateway address', v.gateway.address, ipAddress)
  if (v.gateway?.kind === 'hostname') check(problems, 'east-west gateway host name', v.gateway.hostname, hostName)
  check(problems, '--internal-ip', v.internalIp, ipAddress)
  check(problems, '--external-ip', v.externalIp, ipAddress)
  if (v.rootCert !== undefined) {
    const problem = rootCertProblem(v.rootCert.pem)
    if (problem) problems.push(`ConfigMap ${v.rootCert.namespace}/istio-ca-root-cert root-cert.pem: ${problem}`)
  }
  if (v.meshConfigYaml !== undefined) {
    const mesh = parsedOrUndefined(v.meshConfigYaml)
    if (isRecord(mesh)) {
      check(problems, 'mesh config trustDomain', mesh.trustDomain, singleLineText)
      proxyConfigProblems('mesh config defaultConfig', mesh.defaultConfig, problems)
    }
  }
  return problems
}

/**
 * Throws when a value is not safe to write: a usage error (exit 2) for what the user gave (flags, a
 * file), exit 1 for what the cluster returned. Nothing has been issued or written when it throws.
 */
export function checkBundleValues(values: BundleValues, from: 'input' | 'cluster'): void {
  const problems = bundleValueProblems(values)
  if (problems.length === 0) return
  if (from === 'input') throw new UsageErrors(problems)
  throw new MeshvmError(`${problems[0]} (read from the cluster); no token was issued and nothing was written`, {
    exit: ExitCode.FAILURE,
    code: 'UnsafeValue',
    hints: [
      ...(problems.length > 1 ? [`${problems.length - 1} more problem(s): ${problems.slice(1).join('; ')}`] : []),
      'meshvm never writes such a value into install.sh or cluster.env, which run as root on the VM; fix the object in the cluster',
    ],
  })
}
