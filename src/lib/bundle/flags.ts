/** Flags shared by `meshvm bundle` and `meshvm onboard --bundle` (imported statically by both commands: no cluster code here). */
import * as Flags from '@oclif/core/flags'
import type * as Interfaces from '@oclif/core/interfaces'
import type {BundleOptions} from './run.js'
import {UsageError} from '../errors.js'
import {durationFlag} from '../cli/base-command.js'
import {parseDuration} from '../validation/kube.js'

export const BUNDLE_GROUP = 'VM BUNDLE'

export const bundleFlags = {
  'cluster-id': Flags.string({summary: 'Cluster ID written to ISTIO_META_CLUSTER_ID (default: read from the sidecar injector config).', aliases: ['clusterID'], helpGroup: BUNDLE_GROUP}),
  'token-duration': Flags.string({
    summary: 'Lifetime of the VM bootstrap token (e.g. 1h, 24h); the VM must connect before it ends.',
    default: '1h',
    aliases: ['tokenDuration'],
    helpGroup: BUNDLE_GROUP,
  }),
  'ingress-service': Flags.string({
    summary: 'Service (NAME or NAME.NAMESPACE) of the east-west gateway that exposes istiod.',
    default: 'istio-eastwestgateway',
    aliases: ['ingressService'],
    helpGroup: BUNDLE_GROUP,
  }),
  'ingress-ip': Flags.string({summary: 'Address of the east-west gateway, instead of reading it from the Service.', aliases: ['ingressIP'], helpGroup: BUNDLE_GROUP}),
  'no-hosts': Flags.boolean({summary: 'The VM reaches istiod without the gateway (flat network): write an empty hosts file.', helpGroup: BUNDLE_GROUP}),
  'internal-ip': Flags.string({summary: 'IP the mesh uses to reach the VM (ISTIO_SVC_IP).', aliases: ['internalIP'], exclusive: ['external-ip'], helpGroup: BUNDLE_GROUP}),
  'external-ip': Flags.string({summary: 'External IP of the VM (ISTIO_SVC_IP, with probe rewriting).', aliases: ['externalIP'], exclusive: ['internal-ip'], helpGroup: BUNDLE_GROUP}),
  autoregister: Flags.boolean({summary: 'Let istiod create the WorkloadEntry when the VM connects (ISTIO_META_AUTO_REGISTER_GROUP).', helpGroup: BUNDLE_GROUP}),
  'capture-dns': Flags.boolean({summary: 'Let the sidecar answer DNS for mesh hosts on the VM.', default: true, allowNo: true, helpGroup: BUNDLE_GROUP}),
  archive: Flags.boolean({summary: 'Also write NAME-bundle.tar.gz with all files, ready to copy to the VM.', helpGroup: BUNDLE_GROUP}),
  timeout: durationFlag({
    summary: 'How long to wait for istiod to publish the mesh root certificate (ConfigMap istio-ca-root-cert) in a namespace it has not reached yet, e.g. a new one.',
    default: 30_000,
    defaultHelp: async () => '30s',
    helpGroup: BUNDLE_GROUP,
  }),
}

/** --token-duration as whole seconds; TokenRequest needs at least 10 minutes. */
export function tokenSeconds(text: string): number {
  const ms = parseDuration(text)
  if (ms === undefined || ms < 600_000 || ms % 1000 !== 0 || ms > 2 ** 31 * 1000) {
    throw new UsageError(`--token-duration ${JSON.stringify(text)}: expected a duration of at least 10m, e.g. 1h or 24h`)
  }
  return ms / 1000
}

/** The bundle options the flags describe (validates --token-duration first). */
export function bundleOptions(flags: Interfaces.InferredFlags<typeof bundleFlags>, outputDir: string): BundleOptions {
  return {
    outputDir,
    clusterId: flags['cluster-id'],
    tokenSeconds: tokenSeconds(flags['token-duration']),
    ingressIp: flags['ingress-ip'],
    ingressService: flags['ingress-service'],
    noHosts: flags['no-hosts'],
    internalIp: flags['internal-ip'],
    externalIp: flags['external-ip'],
    autoregister: flags.autoregister,
    captureDns: flags['capture-dns'],
    archive: flags.archive,
    rootCertTimeoutMs: flags.timeout,
  }
}
