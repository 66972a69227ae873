/**
 * Authentication (static bearer tokens and service-account JWTs) and RBAC authorization: explicit
 * rules given to a test user, plus the Roles/ClusterRoles bound in the store, evaluated the way
 * kube-apiserver's RBAC authorizer does. Forbidden messages match kube-apiserver's text.
 */
import type {Store, KubeObj} from './store.js'
import {resourceKey} from './store.js'

export interface PolicyRule {
  verbs: string[]
  apiGroups?: string[]
  resources?: string[]
  resourceNames?: string[]
  nonResourceURLs?: string[]
}

export interface UserInfo {
  name: string
  groups: string[]
  /** Extra rules for this user, cluster-wide (tests use them to grant or withhold a verb). */
  rules?: PolicyRule[]
}

export interface Attributes {
  verb: string
  group: string
  resource: string
  subresource?: string
  namespace?: string
  name?: string
  /** Set for non-resource requests such as /version. */
  path?: string
}

/** The system:basic-user ClusterRole every authenticated user has (plugin/pkg/auth/authorizer/rbac/bootstrappolicy). */
const BASIC_USER: PolicyRule[] = [
  {verbs: ['create'], apiGroups: ['authorization.k8s.io'], resources: ['selfsubjectaccessreviews', 'selfsubjectrulesreviews']},
  {verbs: ['create'], apiGroups: ['authentication.k8s.io'], resources: ['selfsubjectreviews']},
]

/** The rules a user has in a namespace, as SelfSubjectRulesReview reports them (`kubectl auth can-i --list`). */
export function rulesReview(store: Store, user: UserInfo, namespace: string): {resourceRules: PolicyRule[]; nonResourceRules: PolicyRule[]} {
  const rules: PolicyRule[] = [...BASIC_USER]
  if (user.groups.includes('system:masters')) rules.push({verbs: ['*'], apiGroups: ['*'], resources: ['*']}, {verbs: ['*'], nonResourceURLs: ['*']})
  rules.push(...(user.rules ?? []))
  for (const binding of store.list(resourceKey('rbac.authorization.k8s.io', 'clusterrolebindings'))) {
    if (((binding.subjects as Subject[] | undefined) ?? []).some((s) => subjectMatches(s, user))) rules.push(...rulesOf(store, binding.roleRef as {kind: string; name: string}, undefined))
  }
  if (namespace) {
    for (const binding of store.list(resourceKey('rbac.authorization.k8s.io', 'rolebindings'), namespace)) {
      if (((binding.subjects as Subject[] | undefined) ?? []).some((s) => subjectMatches(s, user))) rules.push(...rulesOf(store, binding.roleRef as {kind: string; name: string}, namespace))
    }
  }
  // Discovery paths every authenticated user may read (system:discovery, system:public-info-viewer).
  rules.push({verbs: ['get'], nonResourceURLs: ['/api', '/api/*', '/apis', '/apis/*', '/healthz', '/livez', '/openapi', '/openapi/*', '/readyz', '/version', '/version/']})
  const resourceRules = rules
    .filter((r) => !r.nonResourceURLs)
    .map((r) => ({verbs: r.verbs, apiGroups: r.apiGroups ?? [], resources: r.resources ?? [], ...(r.resourceNames?.length ? {resourceNames: r.resourceNames} : {})}))
  const nonResourceRules = rules.filter((r) => r.nonResourceURLs).map((r) => ({verbs: r.verbs, nonResourceURLs: r.nonResourceURLs}))
  return {resourceRules, nonResourceRules}
}

function matches(list: string[] | undefined, value: string): boolean {
  return (list ?? []).some((v) => v === '*' || v === value)
}

export function ruleAllows(rule: PolicyRule, a: Attributes): boolean {
  if (!matches(rule.verbs, a.verb)) return false
  if (a.path !== undefined) return (rule.nonResourceURLs ?? []).some((u) => u === '*' || u === a.path || (u.endsWith('*') && a.path!.startsWith(u.slice(0, -1))))
  if (!matches(rule.apiGroups, a.group)) return false
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource
  if (!(rule.resources ?? []).some((r) => r === '*' || r === resource || (a.subresource && r === `*/${a.subresource}`))) return false
  if (rule.resourceNames && rule.resourceNames.length > 0) return a.name !== undefined && rule.resourceNames.includes(a.name)
  return true
}

interface Subject {
  kind: string
  name: string
  namespace?: string
}

function subjectMatches(s: Subject, user: UserInfo): boolean {
  if (s.kind === 'User') return s.name === user.name
  if (s.kind === 'Group') return user.groups.includes(s.name)
  if (s.kind === 'ServiceAccount') return user.name === `system:serviceaccount:${s.namespace}:${s.name}`
  return false
}

function rulesOf(store: Store, roleRef: {kind: string; name: string}, namespace: string | undefined): PolicyRule[] {
  const role =
    roleRef.kind === 'ClusterRole'
      ? store.get(resourceKey('rbac.authorization.k8s.io', 'clusterroles'), undefined, roleRef.name)
      : store.get(resourceKey('rbac.authorization.k8s.io', 'roles'), namespace, roleRef.name)
  return ((role as KubeObj | undefined)?.rules as PolicyRule[] | undefined) ?? []
}

export function authorize(store: Store, user: UserInfo, a: Attributes): boolean {
  if (user.groups.includes('system:masters')) return true
  if (a.path !== undefined && ['/version', '/api', '/apis', '/openapi', '/healthz', '/readyz', '/livez'].some((p) => a.path === p || a.path!.startsWith(p + '/'))) return true
  if (BASIC_USER.some((r) => ruleAllows(r, a))) return true
  if ((user.rules ?? []).some((r) => ruleAllows(r, a))) return true
  for (const binding of store.list(resourceKey('rbac.authorization.k8s.io', 'clusterrolebindings'))) {
    if (!((binding.subjects as Subject[] | undefined) ?? []).some((s) => subjectMatches(s, user))) continue
    if (rulesOf(store, binding.roleRef as {kind: string; name: string}, undefined).some((r) => ruleAllows(r, a))) return true
  }
  if (a.namespace) {
    for (const binding of store.list(resourceKey('rbac.authorization.k8s.io', 'rolebindings'), a.namespace)) {
      if (!((binding.subjects as Subject[] | undefined) ?? []).some((s) => subjectMatches(s, user))) continue
      if (rulesOf(store, binding.roleRef as {kind: string; name: string}, a.namespace).some((r) => ruleAllows(r, a))) return true
    }
  }
  return false
}

/** kube-apiserver's text: `pods "x" is forbidden: User "bob" cannot get resource "pods" in API group "" in the namespace "ns"`. */
export function forbiddenMessage(user: UserInfo, a: Attributes, qualifiedName: string): string {
  if (a.path !== undefined) return `forbidden: User "${user.name}" cannot ${a.verb} path "${a.path}"`
  const what = a.name ? `${qualifiedName} "${a.name}"` : qualifiedName
  const resource = a.subresource ? `${a.resource}/${a.subresource}` : a.resource
  const where = a.namespace ? `in the namespace "${a.namespace}"` : 'at the cluster scope'
  return `${what} is forbidden: User "${user.name}" cannot ${a.verb} resource "${resource}" in API group "${a.group}" ${where}`
}
