/**
 * The control-plane revision a command talks to. With --revision, that one. Without, istioctl 1.28's
 * default (istio/istio #56874, #58127): the revision the `default` tag points to, i.e. label
 * `istio.io/rev` of the MutatingWebhookConfiguration labelled `istio.io/tag=default`
 * (`istio-revision-tag-default`, made by `istioctl tag set default --revision REV`). No such webhook:
 * no revision (every istiod is read; the unrevisioned names istiod, istio, istio-sidecar-injector).
 */
import type {KubeClient} from '../kube/client.js'
import {KubeApiError} from '../kube/errors.js'
import {Resources, resourcePath} from '../kube/resources.js'

export const DEFAULT_TAG_WEBHOOK = 'istio-revision-tag-default'

interface WebhookConfiguration {
  metadata?: {name?: string; labels?: Record<string, string>}
}

export interface ResolvedRevision {
  /** The revision, or undefined for the default control plane. */
  revision?: string
  /** Where it came from, for --debug. */
  source: 'flag' | 'default-tag' | 'none'
}

/** Normalises "default" and "" to undefined (the unrevisioned control plane). */
export function revisionOrUndefined(revision: string | undefined): string | undefined {
  return revision === undefined || revision === '' || revision === 'default' ? undefined : revision
}

/**
 * Resolves the revision. A cluster where the webhooks cannot be listed (403) is treated as having no
 * default tag, as istioctl does when the lookup fails: the unrevisioned control plane.
 */
export async function resolveRevision(client: KubeClient, flag: string | undefined): Promise<ResolvedRevision> {
  // `--revision default` selects the pods labelled istio.io/rev=default, as in istioctl.
  if (flag !== undefined) return {revision: flag === '' ? undefined : flag, source: 'flag'}
  let hooks: WebhookConfiguration[]
  try {
    hooks = await client.list<WebhookConfiguration>(resourcePath(Resources.mutatingWebhookConfigurations), {labelSelector: 'istio.io/tag=default'})
  } catch (err) {
    if (err instanceof KubeApiError && (err.status === 403 || err.status === 404)) return {source: 'none'}
    throw err
  }
  // istioctl reads the first webhook of the tag; the canonical name first, should there be several.
  const hook = hooks.find((h) => h.metadata?.name === DEFAULT_TAG_WEBHOOK) ?? hooks[0]
  const revision = hook?.metadata?.labels?.['istio.io/rev']
  return revision === undefined || revision === '' ? {source: 'none'} : {revision, source: 'default-tag'}
}

/** istiod's Service name for a revision: `istiod` or `istiod-REV` (also its certificate's DNS SAN, with `.NS.svc`). */
export function istiodServiceName(revision: string | undefined): string {
  const rev = revisionOrUndefined(revision)
  return rev === undefined ? 'istiod' : `istiod-${rev}`
}

interface DeploymentLike {
  spec?: {template?: {spec?: {containers?: {env?: {name?: string; value?: string}[]}[]}}}
}

/**
 * The environment of a revision's istiod Deployment (`istiod` or `istiod-REV`): what the next istiod
 * pod runs with (auto-registration, health checks, ambient mode). Undefined when there is no Deployment.
 */
export async function istiodDeploymentEnv(client: KubeClient, istioNamespace: string, revision: string | undefined): Promise<Map<string, string> | undefined> {
  const d = await client.getOptional<DeploymentLike>(resourcePath(Resources.deployments, {namespace: istioNamespace, name: istiodServiceName(revision)}))
  if (!d) return undefined
  const env = new Map<string, string>()
  for (const v of d.spec?.template?.spec?.containers?.flatMap((c) => c.env ?? []) ?? []) if (v.name && typeof v.value === 'string') env.set(v.name, v.value)
  return env
}
