/**
 * A session with one cluster: the loaded kubeconfig, a KubeClient and the namespaces resolved the
 * way kubectl resolves them (flag, then the context's namespace, then "default").
 * Commands reach it through BaseCommand.session(), which imports this module lazily so that
 * offline commands never load the Kubernetes client.
 */
import {debugEnabled, UsageError} from '../errors.js'
import {parseDuration} from '../validation/kube.js'
import {KubeClient, type RetryEvent} from './client.js'
import type {ResponseEvent} from './transport.js'
import {loadKubeConfig} from './config.js'

export interface SessionFlags {
  kubeconfig?: string
  context?: string
  namespace?: string
  'istio-namespace'?: string
  revision?: string
  /** ms from the duration flag, or the text (create-remote-secret passes it through). */
  'request-timeout'?: string | number
  debug?: boolean
}

export interface KubeSession {
  client: KubeClient
  contextName: string
  clusterName: string
  server: string
  /** -n, else the context's namespace, else "default". */
  namespace: string
  /** True when -n (or MESHVM_NAMESPACE) was given. */
  namespaceExplicit: boolean
  istioNamespace: string
  revision?: string
}

export function requestTimeoutMs(text: string | number | undefined): number {
  if (text === undefined) return 30_000
  if (typeof text === 'number') return text
  const ms = parseDuration(text)
  if (ms === undefined || ms <= 0) throw new UsageError(`--request-timeout ${JSON.stringify(text)}: expected a duration such as 10s, 1m or 500ms`)
  return ms
}

export async function openSession(flags: SessionFlags, options: {context?: string} = {}): Promise<KubeSession> {
  const timeoutMs = requestTimeoutMs(flags['request-timeout'])
  const loaded = loadKubeConfig({kubeconfig: flags.kubeconfig, context: options.context ?? flags.context})
  // Requests and retries on stderr: what was asked and answered, never headers or bodies (secrets).
  const debug = flags.debug === true || debugEnabled()
  const onRetry = debug ? (e: RetryEvent) => process.stderr.write(`debug: retry ${e.attempt} of ${e.method} ${e.path} in ${e.delayMs}ms (${e.reason})\n`) : undefined
  const onResponse = debug ? (e: ResponseEvent) => process.stderr.write(`debug: ${e.method} ${e.path} → ${e.status} (${e.ms} ms, ${e.bytes} bytes)\n`) : undefined
  const client = await KubeClient.create(loaded, {timeoutMs, onRetry, onResponse})
  return {
    client,
    contextName: loaded.contextName,
    clusterName: loaded.clusterName,
    server: loaded.server,
    namespace: flags.namespace ?? loaded.namespace,
    namespaceExplicit: flags.namespace !== undefined,
    istioNamespace: flags['istio-namespace'] ?? 'istio-system',
    revision: flags.revision,
  }
}
