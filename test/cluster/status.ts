/**
 * Kubernetes `Status` error bodies, as kube-apiserver writes them. The handlers throw ApiError; the
 * server turns it into the JSON body and HTTP code.
 */

export interface StatusCause {
  reason?: string
  message: string
  field?: string
}

export class ApiError extends Error {
  constructor(
    readonly code: number,
    readonly reason: string,
    message: string,
    readonly details?: {name?: string; group?: string; kind?: string; causes?: StatusCause[]; retryAfterSeconds?: number},
  ) {
    super(message)
  }
}

export function statusBody(err: ApiError): Record<string, unknown> {
  return {
    kind: 'Status',
    apiVersion: 'v1',
    metadata: {},
    status: 'Failure',
    message: err.message,
    reason: err.reason,
    ...(err.details ? {details: err.details} : {}),
    code: err.code,
  }
}

/** `workloadgroups.networking.istio.io` or `pods`: how kube-apiserver names a resource in messages. */
export function qualified(group: string, plural: string): string {
  return group ? `${plural}.${group}` : plural
}

export const notFound = (group: string, plural: string, name: string) =>
  new ApiError(404, 'NotFound', `${qualified(group, plural)} "${name}" not found`, {name, group: group || undefined, kind: plural})

export const alreadyExists = (group: string, plural: string, name: string) =>
  new ApiError(409, 'AlreadyExists', `${qualified(group, plural)} "${name}" already exists`, {name, group: group || undefined, kind: plural})

export const conflict = (group: string, plural: string, name: string) =>
  new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(group, plural)} "${name}": the object has been modified; please apply your changes to the latest version and try again`, {
    name,
    group: group || undefined,
    kind: plural,
  })

export const badRequest = (message: string) => new ApiError(400, 'BadRequest', message)

export const methodNotAllowed = () => new ApiError(405, 'MethodNotAllowed', 'the server does not allow this method on the requested resource')

export const pathNotFound = () => new ApiError(404, 'NotFound', 'the server could not find the requested resource')
