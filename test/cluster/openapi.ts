/**
 * Minimal OpenAPI v3 (and v2) documents for the served group-versions. kubectl reads them to learn
 * that the server supports `fieldValidation` (so plain `kubectl apply` validates server-side) and
 * which kinds a group-version has; CRD kinds carry their openAPIV3Schema.
 */
import {createHash} from 'node:crypto'
import {groupVersionOf, type ResourceDef} from './registry.js'

export function gvPath(def: ResourceDef): string {
  return def.group ? `apis/${def.group}/${def.version}` : `api/${def.version}`
}

const QUERY_PARAMS = ['dryRun', 'fieldManager', 'fieldValidation', 'force'].map((name) => ({name, in: 'query', schema: {type: name === 'force' ? 'boolean' : 'string'}, uniqueItems: true}))

function schemaName(def: ResourceDef): string {
  return `${def.group ? def.group.split('.').reverse().join('.') : 'io.k8s.api.core'}.${def.version}.${def.kind}`
}

export function groupVersionDocument(defs: ResourceDef[]): Record<string, unknown> {
  const paths: Record<string, unknown> = {}
  const schemas: Record<string, unknown> = {}
  for (const def of defs) {
    const gvk = [{group: def.group, version: def.version, kind: def.kind}]
    const base = `/${gvPath(def)}${def.namespaced ? '/namespaces/{namespace}' : ''}/${def.plural}`
    const ref = {$ref: `#/components/schemas/${schemaName(def)}`}
    const response = {responses: {'200': {description: 'OK', content: {'application/json': {schema: ref}}}}}
    paths[`${base}/{name}`] = {
      get: {operationId: `read${def.kind}`, 'x-kubernetes-action': 'get', 'x-kubernetes-group-version-kind': gvk[0], ...response},
      put: {operationId: `replace${def.kind}`, 'x-kubernetes-action': 'put', 'x-kubernetes-group-version-kind': gvk[0], parameters: QUERY_PARAMS, ...response},
      patch: {operationId: `patch${def.kind}`, 'x-kubernetes-action': 'patch', 'x-kubernetes-group-version-kind': gvk[0], parameters: QUERY_PARAMS, ...response},
      delete: {operationId: `delete${def.kind}`, 'x-kubernetes-action': 'delete', 'x-kubernetes-group-version-kind': gvk[0], ...response},
    }
    paths[base] = {
      get: {operationId: `list${def.kind}`, 'x-kubernetes-action': 'list', 'x-kubernetes-group-version-kind': gvk[0], ...response},
      post: {operationId: `create${def.kind}`, 'x-kubernetes-action': 'post', 'x-kubernetes-group-version-kind': gvk[0], parameters: QUERY_PARAMS, ...response},
    }
    schemas[schemaName(def)] = {
      ...(def.schema ?? {type: 'object', 'x-kubernetes-preserve-unknown-fields': true}),
      'x-kubernetes-group-version-kind': gvk,
    }
  }
  return {openapi: '3.0.0', info: {title: 'Kubernetes', version: 'v1.32.0'}, paths, components: {schemas}}
}

/** The /openapi/v3 index: one entry per group-version, with a content hash kubectl caches by. */
export function openApiV3Root(defs: ResourceDef[]): Record<string, unknown> {
  const byPath = new Map<string, ResourceDef[]>()
  for (const def of defs) byPath.set(gvPath(def), [...(byPath.get(gvPath(def)) ?? []), def])
  const paths: Record<string, unknown> = {}
  for (const [path, group] of byPath) {
    const hash = createHash('sha512')
      .update(JSON.stringify(groupVersionDocument(group)))
      .digest('hex')
      .slice(0, 32)
      .toUpperCase()
    paths[path] = {serverRelativeURL: `/openapi/v3/${path}?hash=${hash}`}
  }
  return {paths}
}

export function openApiV2(defs: ResourceDef[]): Record<string, unknown> {
  const definitions: Record<string, unknown> = {}
  for (const def of defs) definitions[schemaName(def)] = {...(def.schema ?? {type: 'object'}), 'x-kubernetes-group-version-kind': [{group: def.group, version: def.version, kind: def.kind}]}
  return {swagger: '2.0', info: {title: 'Kubernetes', version: 'v1.32.0'}, paths: {}, definitions, 'x-served': defs.map(groupVersionOf)}
}
