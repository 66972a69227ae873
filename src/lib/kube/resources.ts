/**
 * The resources meshvm reads and writes, and how their REST paths are built. One table, so a group
 * or version change (e.g. Istio CRDs served only as v1beta1 on old clusters) is made in one place.
 */

export interface ResourceType {
  group: string
  version: string
  plural: string
  kind: string
  namespaced: boolean
}

const r = (group: string, version: string, plural: string, kind: string, namespaced = true): ResourceType => ({group, version, plural, kind, namespaced})

export const Resources = {
  namespaces: r('', 'v1', 'namespaces', 'Namespace', false),
  serviceAccounts: r('', 'v1', 'serviceaccounts', 'ServiceAccount'),
  secrets: r('', 'v1', 'secrets', 'Secret'),
  configMaps: r('', 'v1', 'configmaps', 'ConfigMap'),
  services: r('', 'v1', 'services', 'Service'),
  pods: r('', 'v1', 'pods', 'Pod'),
  events: r('', 'v1', 'events', 'Event'),
  deployments: r('apps', 'v1', 'deployments', 'Deployment'),
  leases: r('coordination.k8s.io', 'v1', 'leases', 'Lease'),
  clusterRoles: r('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false),
  clusterRoleBindings: r('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', false),
  selfSubjectAccessReviews: r('authorization.k8s.io', 'v1', 'selfsubjectaccessreviews', 'SelfSubjectAccessReview', false),
  tokenReviews: r('authentication.k8s.io', 'v1', 'tokenreviews', 'TokenReview', false),
  mutatingWebhookConfigurations: r('admissionregistration.k8s.io', 'v1', 'mutatingwebhookconfigurations', 'MutatingWebhookConfiguration', false),
  customResourceDefinitions: r('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false),
  workloadGroups: r('networking.istio.io', 'v1', 'workloadgroups', 'WorkloadGroup'),
  workloadEntries: r('networking.istio.io', 'v1', 'workloadentries', 'WorkloadEntry'),
  serviceEntries: r('networking.istio.io', 'v1', 'serviceentries', 'ServiceEntry'),
  envoyFilters: r('networking.istio.io', 'v1alpha3', 'envoyfilters', 'EnvoyFilter'),
  workloadAutoRegistrations: r('runtime.onboarding.tetrate.io', 'v1alpha1', 'workloadautoregistrations', 'WorkloadAutoRegistration'),
} as const satisfies Record<string, ResourceType>

export function groupVersion(res: ResourceType): string {
  return res.group ? `${res.group}/${res.version}` : res.version
}

/** `plural.group`, as RBAC rules and kubectl name a resource. */
export function qualifiedResource(res: ResourceType): string {
  return res.group ? `${res.plural}.${res.group}` : res.plural
}

export function findResourceByKind(apiVersion: string, kind: string): ResourceType | undefined {
  return Object.values(Resources).find((res) => res.kind === kind && groupVersion(res) === apiVersion)
}

/**
 * `/api/v1/namespaces/ns/pods/name/proxy` style paths. A namespaced resource without a namespace
 * lists across all namespaces.
 */
export function resourcePath(res: ResourceType, options: {namespace?: string; name?: string; subresource?: string} = {}): string {
  const base = res.group ? `/apis/${res.group}/${res.version}` : `/api/${res.version}`
  const ns = res.namespaced && options.namespace ? `/namespaces/${encodeURIComponent(options.namespace)}` : ''
  const name = options.name ? `/${encodeURIComponent(options.name)}` : ''
  const sub = options.name && options.subresource ? `/${options.subresource}` : ''
  return `${base}${ns}/${res.plural}${name}${sub}`
}
