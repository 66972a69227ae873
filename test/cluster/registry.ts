/**
 * The resource types the test API server serves: built-in Kubernetes kinds plus any CRD loaded
 * from YAML or created through the API. Discovery documents, Tables and validation come from here.
 */
import {crValidator, type CrValidator, type OpenApiSchema as Schema} from './schema.js'

export interface PrinterColumn {
  name: string
  type: string
  jsonPath: string
  description?: string
  priority?: number
  format?: string
}

export interface ResourceDef {
  group: string
  version: string
  plural: string
  singular: string
  kind: string
  namespaced: boolean
  shortNames: string[]
  categories: string[]
  verbs: string[]
  /** Has a /status subresource (status changes only through it). */
  statusSubresource: boolean
  /** Extra subresources served (e.g. serviceaccounts/token, pods/proxy). */
  subresources: string[]
  printerColumns: PrinterColumn[]
  schema?: Schema
  validator?: CrValidator
  /** Created from a CustomResourceDefinition. */
  crd: boolean
}

const ALL_VERBS = ['create', 'delete', 'deletecollection', 'get', 'list', 'patch', 'update', 'watch']

function builtin(group: string, version: string, plural: string, kind: string, namespaced: boolean, extra: Partial<ResourceDef> = {}): ResourceDef {
  return {
    group,
    version,
    plural,
    kind,
    namespaced,
    singular: kind.toLowerCase(),
    shortNames: [],
    categories: [],
    verbs: ALL_VERBS,
    statusSubresource: false,
    subresources: [],
    printerColumns: [],
    crd: false,
    ...extra,
  }
}

export function builtinResources(): ResourceDef[] {
  return [
    builtin('', 'v1', 'namespaces', 'Namespace', false, {shortNames: ['ns'], statusSubresource: true, printerColumns: [{name: 'Status', type: 'string', jsonPath: '.status.phase'}]}),
    builtin('', 'v1', 'serviceaccounts', 'ServiceAccount', true, {shortNames: ['sa'], subresources: ['token']}),
    builtin('', 'v1', 'secrets', 'Secret', true, {printerColumns: [{name: 'Type', type: 'string', jsonPath: '.type'}]}),
    builtin('', 'v1', 'configmaps', 'ConfigMap', true, {shortNames: ['cm']}),
    builtin('', 'v1', 'services', 'Service', true, {
      shortNames: ['svc'],
      categories: ['all'],
      statusSubresource: true,
      printerColumns: [
        {name: 'Type', type: 'string', jsonPath: '.spec.type'},
        {name: 'Cluster-IP', type: 'string', jsonPath: '.spec.clusterIP'},
      ],
    }),
    builtin('', 'v1', 'pods', 'Pod', true, {
      shortNames: ['po'],
      categories: ['all'],
      statusSubresource: true,
      subresources: ['proxy'],
      printerColumns: [{name: 'Status', type: 'string', jsonPath: '.status.phase'}],
    }),
    builtin('', 'v1', 'events', 'Event', true, {
      shortNames: ['ev'],
      printerColumns: [
        {name: 'Type', type: 'string', jsonPath: '.type'},
        {name: 'Reason', type: 'string', jsonPath: '.reason'},
        {name: 'Message', type: 'string', jsonPath: '.message'},
      ],
    }),
    builtin('', 'v1', 'nodes', 'Node', false, {shortNames: ['no'], statusSubresource: true}),
    builtin('apps', 'v1', 'deployments', 'Deployment', true, {shortNames: ['deploy'], categories: ['all'], statusSubresource: true}),
    // kube-apiserver serves Leases (leader election, node heartbeats; meshvm's rollout lock).
    builtin('coordination.k8s.io', 'v1', 'leases', 'Lease', true, {
      printerColumns: [{name: 'Holder', type: 'string', jsonPath: '.spec.holderIdentity'}],
    }),
    builtin('rbac.authorization.k8s.io', 'v1', 'clusterroles', 'ClusterRole', false),
    builtin('rbac.authorization.k8s.io', 'v1', 'clusterrolebindings', 'ClusterRoleBinding', false),
    builtin('rbac.authorization.k8s.io', 'v1', 'roles', 'Role', true),
    builtin('rbac.authorization.k8s.io', 'v1', 'rolebindings', 'RoleBinding', true),
    builtin('admissionregistration.k8s.io', 'v1', 'mutatingwebhookconfigurations', 'MutatingWebhookConfiguration', false),
    builtin('apiextensions.k8s.io', 'v1', 'customresourcedefinitions', 'CustomResourceDefinition', false, {shortNames: ['crd', 'crds'], statusSubresource: true}),
    builtin('authorization.k8s.io', 'v1', 'selfsubjectaccessreviews', 'SelfSubjectAccessReview', false, {verbs: ['create']}),
    builtin('authorization.k8s.io', 'v1', 'selfsubjectrulesreviews', 'SelfSubjectRulesReview', false, {verbs: ['create']}),
    builtin('authentication.k8s.io', 'v1', 'selfsubjectreviews', 'SelfSubjectReview', false, {verbs: ['create']}),
    builtin('authentication.k8s.io', 'v1', 'tokenreviews', 'TokenReview', false, {verbs: ['create']}),
  ]
}

interface CrdVersion {
  name: string
  served: boolean
  storage?: boolean
  schema?: {openAPIV3Schema?: Schema}
  subresources?: {status?: object}
  additionalPrinterColumns?: PrinterColumn[]
}

export interface Crd {
  metadata: {name: string}
  spec: {
    group: string
    names: {plural: string; singular?: string; kind: string; shortNames?: string[]; categories?: string[]}
    scope: 'Namespaced' | 'Cluster'
    versions: CrdVersion[]
    subresources?: {status?: object}
  }
}

/** One ResourceDef per served version of a CRD. */
export function resourcesFromCrd(crd: Crd): ResourceDef[] {
  return crd.spec.versions
    .filter((v) => v.served)
    .map((v) => {
      const schema = v.schema?.openAPIV3Schema
      return {
        group: crd.spec.group,
        version: v.name,
        plural: crd.spec.names.plural,
        singular: crd.spec.names.singular ?? crd.spec.names.kind.toLowerCase(),
        kind: crd.spec.names.kind,
        namespaced: crd.spec.scope === 'Namespaced',
        shortNames: crd.spec.names.shortNames ?? [],
        categories: crd.spec.names.categories ?? [],
        verbs: ALL_VERBS,
        statusSubresource: Boolean(v.subresources?.status ?? crd.spec.subresources?.status),
        subresources: [],
        printerColumns: v.additionalPrinterColumns ?? [],
        schema,
        validator: schema ? crValidator(schema, {unknownFields: 'prune'}) : undefined,
        crd: true,
      }
    })
}

export function groupVersionOf(def: ResourceDef): string {
  return def.group ? `${def.group}/${def.version}` : def.version
}
