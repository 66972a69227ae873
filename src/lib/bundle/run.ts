/**
 * `meshvm bundle` and `meshvm onboard --bundle`: fetch the cluster values, build the files, write
 * them atomically (all or none; the token 0600), optionally as a .tar.gz too.
 */
import {join} from 'node:path'
import {InterruptedError} from '../errors.js'
import {checkWritableDir, managedVersionOf, writeDirAtomic, type FileToWrite} from '../fs/atomic.js'
import {tarGz} from '../fs/tar.js'
import {unignoredCredentialWarning} from '../fs/git.js'
import type {KubeSession} from '../kube/session.js'
import {buildBundle, serviceAccountOf, validateBundleInputs, withWorkloadGroupDefaults, type GatewayAddress, type WorkloadGroupLike} from './generate.js'
import {fetchClusterId, fetchMeshConfig, fetchRootCert, findGateway, requestToken, type GatewayOptions} from './fetch.js'
import {resolveRevision} from '../istiod/revision.js'
import {checkBundleValues, normalizedRootCert} from './validate.js'

export interface BundleOptions extends GatewayOptions {
  outputDir: string
  clusterId?: string
  tokenSeconds: number
  internalIp?: string
  externalIp?: string
  autoregister: boolean
  captureDns: boolean
  archive: boolean
  /** How long to wait for istiod to publish istio-ca-root-cert in a namespace it has not reached yet. */
  rootCertTimeoutMs: number
  /** Progress lines (stderr), e.g. while waiting for the root certificate. */
  progress?: (line: string) => void
  /** Ctrl-C: checked before each step, so an interrupted run issues no token and writes no file. */
  signal?: AbortSignal
  /** The WorkloadGroup was read from the cluster (its bad values are the cluster's, exit 1), not from flags or a file (exit 2). */
  groupFromCluster?: boolean
}

export interface BundleSummary {
  dir: string
  files: string[]
  archive?: string
  tokenExpiresAt?: Date
  warnings: string[]
  /** The directory is meshvm's link to its current version (see writeDirAtomic). */
  linked?: boolean
}

export async function writeBundle(session: KubeSession, workloadGroup: WorkloadGroupLike, options: BundleOptions, now = new Date()): Promise<BundleSummary> {
  const wg = withWorkloadGroupDefaults(workloadGroup)
  const warnings: string[] = []
  // Check what needs no cluster first, so a typo fails before any request (and before a token is issued).
  validateBundleInputs({internalIp: options.internalIp, externalIp: options.externalIp} as Parameters<typeof validateBundleInputs>[0])
  checkBundleValues(
    {
      workloadGroup: options.groupFromCluster ? undefined : wg,
      istioNamespace: session.istioNamespace,
      revision: session.revision,
      clusterId: options.clusterId,
      gateway: options.ingressIp === undefined ? undefined : {kind: 'ip', address: options.ingressIp},
      internalIp: options.internalIp,
      externalIp: options.externalIp,
    },
    'input',
  )
  if (options.groupFromCluster) checkBundleValues({workloadGroup: wg}, 'cluster')
  checkWritableDir(options.outputDir)
  const stopIfInterrupted = (): void => {
    if (options.signal?.aborted) throw new InterruptedError(`interrupted: nothing was written to ${options.outputDir}`)
  }
  stopIfInterrupted()
  const {client, istioNamespace} = session
  // Without --revision, the default tag's revision (istioctl 1.28): CA_ADDR and hosts then name istiod-REV.
  const {revision} = await resolveRevision(client, session.revision)
  const namespace = wg.metadata.namespace
  // One request after the other: each reuses the client's kept-alive connection, where concurrent
  // ones would each open and verify a TLS connection of their own, which costs more CPU than the
  // round trips they would overlap. The root certificate last: it is the one that may be waited for.
  let clusterId: string
  let meshConfigYaml: string
  let gateway: GatewayAddress
  let rootCert: string
  try {
    clusterId = options.clusterId ?? (await fetchClusterId(client, istioNamespace, revision, (w) => warnings.push(w)))
    meshConfigYaml = await fetchMeshConfig(client, istioNamespace, revision)
    gateway = await findGateway(client, istioNamespace, options)
    rootCert = await fetchRootCert(client, namespace, {timeoutMs: options.rootCertTimeoutMs, signal: options.signal, progress: options.progress})
  } catch (err) {
    // Ctrl-C while waiting for the root certificate: say so, not that it is missing.
    stopIfInterrupted()
    throw err
  }
  stopIfInterrupted()
  // What the cluster returned is checked as strictly, and the whole bundle built once without a token:
  // anything unsafe or malformed fails here, before a token exists.
  checkBundleValues({revision, clusterId, gateway, meshConfigYaml, rootCert: {pem: rootCert, namespace}}, 'cluster')
  const inputs = {
    workloadGroup: wg,
    meshConfigYaml,
    clusterId,
    rootCert: normalizedRootCert(rootCert),
    token: '',
    istioNamespace,
    revision,
    gateway,
    internalIp: options.internalIp,
    externalIp: options.externalIp,
    autoregister: options.autoregister,
    captureDns: options.captureDns,
  }
  buildBundle(inputs)
  // The token last: it is the only value that grants something, so only issue it when all else worked.
  const issued = await requestToken(client, namespace, serviceAccountOf(wg), options.tokenSeconds)
  const bundle = buildBundle({...inputs, token: issued.token, tokenExpiry: issued.expiresAt})
  warnings.push(...bundle.warnings)
  const files: FileToWrite[] = [...bundle.files]
  let archive: string | undefined
  if (options.archive) {
    const name = `${wg.metadata.name}-bundle.tar.gz`
    files.push({name, data: tarGz(`${wg.metadata.name}-bundle`, bundle.files, Math.floor(now.getTime() / 1000)), mode: 0o600})
    archive = join(options.outputDir, name)
  }
  // The write is synchronous: a Ctrl-C from here on is handled only after every file is in place.
  stopIfInterrupted()
  // A new bundle replaces the old one whole (files the user added there stay).
  const written = writeDirAtomic(options.outputDir, files, {keep: 'others'})
  const linked = managedVersionOf(options.outputDir) !== undefined
  for (const file of files.filter((f) => f.mode === 0o600)) {
    const warning = unignoredCredentialWarning(join(options.outputDir, file.name))
    if (warning) warnings.push(warning)
  }
  return {dir: options.outputDir, files: written, archive, tokenExpiresAt: issued.expiresAt, warnings, ...(linked ? {linked} : {})}
}
