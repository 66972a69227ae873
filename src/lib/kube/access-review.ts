/**
 * "kubectl auth can-i" for the identity a client holds: one SelfSubjectAccessReview. Used by precheck
 * (the operator's permissions) and create-remote-secret --verify (the generated kubeconfig's).
 */
import type {KubeClient} from './client.js'
import {Resources, resourcePath} from './resources.js'

export interface AccessAttributes {
  verb: string
  /** The API group ('' for the core group). */
  group: string
  /** The resource's plural name. */
  resource: string
  subresource?: string
  /** Omitted for cluster-scoped resources and cluster-wide questions. */
  namespace?: string
}

export async function canI(client: KubeClient, attributes: AccessAttributes): Promise<boolean> {
  const review = await client.request<{status?: {allowed?: boolean}}>({
    method: 'POST',
    path: resourcePath(Resources.selfSubjectAccessReviews),
    body: {apiVersion: 'authorization.k8s.io/v1', kind: 'SelfSubjectAccessReview', spec: {resourceAttributes: attributes}},
    // A review writes nothing: asking again after a dropped connection is safe.
    retry: 'idempotent',
  })
  return review?.status?.allowed === true
}
