/**
 * Kubernetes API and network failures, translated into one-line MeshvmErrors with a stable exit code
 * and a hint. Never includes request bodies or headers: they may carry tokens.
 */
import {ExitCode, MeshvmError, redactCredentials} from '../errors.js'
import {terminalSafe} from '../output/terminal.js'

export interface KubeStatus {
  kind?: string
  status?: string
  message?: string
  reason?: string
  code?: number
  details?: {name?: string; group?: string; kind?: string; causes?: {reason?: string; message?: string; field?: string}[]; retryAfterSeconds?: number}
}

/** An HTTP answer from the API server that is an error. Keeps the parsed Status for callers. */
export class KubeApiError extends MeshvmError {
  readonly status: number
  readonly reason: string
  readonly kubeStatus: KubeStatus | undefined
  constructor(message: string, options: {status: number; reason: string; kubeStatus?: KubeStatus; exit: (typeof ExitCode)[keyof typeof ExitCode]; hints?: string[]}) {
    super(message, {exit: options.exit, code: options.reason, hints: options.hints})
    this.name = 'KubeApiError'
    this.status = options.status
    this.reason = options.reason
    this.kubeStatus = options.kubeStatus
  }
}

export interface RequestDescription {
  method: string
  path: string
  server: string
  context: string
}

const VERBS: Record<string, string> = {GET: 'get', POST: 'create', PUT: 'update', PATCH: 'patch', DELETE: 'delete'}

/** What RBAC rule is missing, from a 403 Status message like kube-apiserver writes it. */
export function rbacHint(message: string): string | undefined {
  const m = /cannot (\w+) resource "([^"]+)" in API group "([^"]*)"(?: in the namespace "([^"]+)")?/.exec(message)
  if (!m) return undefined
  const [, verb, resource, group, namespace] = m
  const res = group ? `${resource}.${group}` : resource
  return `ask a cluster admin for a Role${namespace ? ` in namespace ${namespace}` : 'ClusterRole'} allowing verb "${verb}" on "${res}" (kubectl auth can-i ${verb} ${res}${namespace ? ` -n ${namespace}` : ''})`.replace(
    'RoleClusterRole',
    'ClusterRole',
  )
}

export function translateHttpError(req: RequestDescription, status: number, body: string, location?: string | string[]): KubeApiError {
  let kubeStatus: KubeStatus | undefined
  try {
    const parsed = JSON.parse(body) as KubeStatus
    // The Status kept for callers carries the cleaned message too (proxy-status quotes it).
    if (parsed && parsed.kind === 'Status')
      kubeStatus =
        typeof parsed.message === 'string'
          ? {
              ...parsed,
              message: parsed.message
                .split('\n')
                .map((l) => terminalSafe(redactCredentials(l)))
                .join('\n'),
            }
          : parsed
  } catch {
    // Not a Status: some proxies answer with HTML or plain text. Their text is not shown.
  }
  // The server's own words are shown, minus anything that looks like a credential.
  // Made terminal-safe here, at the source, because callers quote it in warnings and reports too.
  const message = typeof kubeStatus?.message === 'string' ? kubeStatus.message.split('\n')[0] : undefined
  const reason = terminalSafe((typeof kubeStatus?.reason === 'string' && kubeStatus.reason) || httpReason(status))
  if (status < 200 || (status >= 300 && status < 400) || status > 599) {
    // Not an answer meshvm asked for: a redirect (never followed: it would take the token to
    // another host) or a status outside HTTP's range. Nothing was confirmed.
    const to = Array.isArray(location) ? location[0] : location
    let host = ''
    try {
      if (to) host = ` to ${new URL(to, req.server).host}`
    } catch {
      // An unparsable Location is not shown.
    }
    return new KubeApiError(
      `the API server at ${req.server} answered ${req.method} ${req.path} with ${status}${status >= 300 && status < 400 ? ` (a redirect${host})` : ''} instead of a result; nothing is known to have changed`,
      {
        status,
        reason: 'UnexpectedStatus',
        kubeStatus,
        exit: ExitCode.UNREACHABLE,
        hints: ['meshvm never follows redirects from the API server; check the server address in the kubeconfig (a proxy or load balancer in front of it may be redirecting)'],
      },
    )
  }
  switch (status) {
    case 401:
      return new KubeApiError(`Unauthorized: the API server at ${req.server} rejected the credentials of context ${JSON.stringify(req.context)}`, {
        status,
        reason: 'Unauthorized',
        kubeStatus,
        exit: ExitCode.FORBIDDEN,
        hints: ['the token or client certificate may have expired; refresh your credentials (e.g. log in to the cloud CLI again)'],
      })
    case 403: {
      const hint = message ? rbacHint(message) : undefined
      return new KubeApiError(message ?? `forbidden: ${VERBS[req.method] ?? req.method} ${req.path}`, {
        status,
        reason: 'Forbidden',
        kubeStatus,
        exit: ExitCode.FORBIDDEN,
        hints: hint ? [hint] : [],
      })
    }
    case 404:
      return new KubeApiError(message ?? `not found: ${req.path}`, {status, reason: 'NotFound', kubeStatus, exit: ExitCode.NOT_FOUND})
    case 409:
      return new KubeApiError(message ?? `conflict: ${req.path}`, {status, reason, kubeStatus, exit: ExitCode.REJECTED})
    case 422: {
      const causes = (Array.isArray(kubeStatus?.details?.causes) ? kubeStatus.details.causes : []).map((c) =>
        terminalSafe(redactCredentials(`${typeof c?.field === 'string' ? c.field + ': ' : ''}${String(c?.message ?? c?.reason ?? '')}`)),
      )
      const text = message ?? `invalid: ${causes.join('; ')}`
      return new KubeApiError(text, {status, reason: 'Invalid', kubeStatus, exit: ExitCode.REJECTED})
    }
    case 410:
      return new KubeApiError(message ?? 'the list was too old to continue (410 Gone)', {status, reason: 'Expired', kubeStatus, exit: ExitCode.FAILURE})
    case 429:
      return new KubeApiError(`the API server at ${req.server} is throttling requests (429 Too Many Requests) and kept doing so after retries`, {
        status,
        reason: 'TooManyRequests',
        kubeStatus,
        exit: ExitCode.UNREACHABLE,
        hints: ["try again later, or raise the API server's priority and fairness limits"],
      })
    default:
      if (status >= 500) {
        return new KubeApiError(`the API server at ${req.server} failed ${req.method} ${req.path}: ${status} ${message ?? httpReason(status)}`, {
          status,
          reason,
          kubeStatus,
          exit: ExitCode.UNREACHABLE,
          hints: ['the request was retried; check the API server health (kubectl get --raw /readyz)'],
        })
      }
      return new KubeApiError(`${req.method} ${req.path}: ${status} ${message ?? httpReason(status)}`, {status, reason, kubeStatus, exit: ExitCode.FAILURE})
  }
}

function httpReason(status: number): string {
  const reasons: Record<number, string> = {
    400: 'BadRequest',
    401: 'Unauthorized',
    403: 'Forbidden',
    404: 'NotFound',
    405: 'MethodNotAllowed',
    409: 'Conflict',
    410: 'Gone',
    415: 'UnsupportedMediaType',
    422: 'Invalid',
    429: 'TooManyRequests',
    500: 'InternalError',
    502: 'BadGateway',
    503: 'ServiceUnavailable',
    504: 'GatewayTimeout',
  }
  return reasons[status] ?? `HTTP ${status}`
}

/** OpenSSL's verify codes (as Node names them) in kubectl's (Go's) words. */
const X509_WORDS: Record<string, string> = {
  UNABLE_TO_GET_ISSUER_CERT: 'x509: certificate signed by unknown authority',
  UNABLE_TO_GET_ISSUER_CERT_LOCALLY: 'x509: certificate signed by unknown authority',
  UNABLE_TO_VERIFY_LEAF_SIGNATURE: 'x509: certificate signed by unknown authority',
  SELF_SIGNED_CERT_IN_CHAIN: 'x509: certificate signed by unknown authority',
  DEPTH_ZERO_SELF_SIGNED_CERT: 'x509: certificate signed by unknown authority',
  CERT_SIGNATURE_FAILURE: 'x509: certificate signed by unknown authority',
  CERT_UNTRUSTED: 'x509: certificate signed by unknown authority',
  CERT_REJECTED: 'x509: certificate signed by unknown authority',
  INVALID_CA: 'x509: certificate signed by unknown authority (an issuer may not sign certificates)',
  CERT_HAS_EXPIRED: 'x509: certificate has expired or is not yet valid',
  CERT_NOT_YET_VALID: 'x509: certificate has expired or is not yet valid',
  ERROR_IN_CERT_NOT_BEFORE_FIELD: 'x509: malformed validity (a certificate date does not parse)',
  ERROR_IN_CERT_NOT_AFTER_FIELD: 'x509: malformed validity (a certificate date does not parse)',
  INVALID_PURPOSE: 'x509: certificate specifies an incompatible key usage',
  PATH_LENGTH_EXCEEDED: 'x509: too many intermediates for path length constraint',
  PERMITTED_VIOLATION: 'x509: a root or intermediate certificate is not authorized to sign for this name',
  EXCLUDED_VIOLATION: 'x509: a root or intermediate certificate is not authorized to sign for this name',
  SUBTREE_MINMAX: 'x509: a root or intermediate certificate is not authorized to sign for this name',
  UNSUPPORTED_CONSTRAINT_TYPE: 'x509: a root or intermediate certificate is not authorized to sign for this name',
  UNSUPPORTED_CONSTRAINT_SYNTAX: 'x509: a root or intermediate certificate is not authorized to sign for this name',
  UNSUPPORTED_NAME_SYNTAX: 'x509: a root or intermediate certificate is not authorized to sign for this name',
  UNHANDLED_CRITICAL_EXTENSION: 'x509: unhandled critical extension',
  CA_MD_TOO_WEAK: 'x509: certificate signed by unknown authority (insecure algorithm: a SHA-1 or MD5 signature)',
  CA_KEY_TOO_SMALL: 'x509: cannot verify signature: insecure key',
  EE_KEY_TOO_SMALL: 'x509: cannot verify signature: insecure key',
  CERT_CHAIN_TOO_LONG: 'x509: certificate signed by unknown authority (the chain is too long)',
}

/** OpenSSL's verify texts for the results Node has no code for. */
const OPENSSL_TEXTS: [RegExp, string][] = [
  [/subtree violation|name constraint|unsupported name/i, X509_WORDS.PERMITTED_VIOLATION!],
  [/unhandled critical extension/i, X509_WORDS.UNHANDLED_CRITICAL_EXTENSION!],
  [/md too weak|digest algorithm too weak/i, X509_WORDS.CA_MD_TOO_WEAK!],
  [/does not include certificate signing/i, X509_WORDS.INVALID_CA!],
  [/key too small/i, X509_WORDS.EE_KEY_TOO_SMALL!],
  [/path length/i, X509_WORDS.PATH_LENGTH_EXCEEDED!],
  [/invalid CA|not a CA/i, X509_WORDS.INVALID_CA!],
  [/format error in certificate's notAfter|format error in certificate's notBefore/i, X509_WORDS.ERROR_IN_CERT_NOT_AFTER_FIELD!],
  [/purpose/i, X509_WORDS.INVALID_PURPOSE!],
]

/** kubectl's words for a TLS failure, or undefined when `err` is not a certificate refusal. */
export function x509Words(err: unknown): string | undefined {
  const e = err as {code?: string; x509?: unknown} | undefined
  if (typeof e?.x509 === 'string') return e.x509
  const code = e?.code ?? ''
  if (X509_WORDS[code]) return X509_WORDS[code]
  // Node names only some of OpenSSL's verify results; the others come as UNSPECIFIED with OpenSSL's text.
  if (code === 'UNSPECIFIED' && typeof (err as Error).message === 'string') {
    const text = (err as Error).message
    const known = OPENSSL_TEXTS.find(([pattern]) => pattern.test(text))
    return known ? known[1] : `x509: certificate refused (${text.split('\n')[0]!.slice(0, 200)})`
  }
  // Any other OpenSSL verification code (e.g. a malformed certificate): refused, named by its code.
  if (/^(?:CERT_|UNABLE_TO_|ERR_TLS_CERT|INVALID_|[A-Z_]*_VIOLATION$)/.test(code)) return `x509: certificate refused (${code})`
  return undefined
}

/** Handshake failures that are not a certificate verdict. */
const TLS_HANDSHAKE: Record<string, string> = {
  EPROTO: 'the TLS handshake failed',
  ERR_SSL_WRONG_VERSION_NUMBER: 'the server does not speak TLS on this port',
}

/** Errors that mean "try again" for a request that is safe to repeat. */
export function isTransientNetworkError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException)?.code
  return code === 'ECONNRESET' || code === 'EPIPE' || code === 'ETIMEDOUT' || code === 'ECONNABORTED' || code === 'EAI_AGAIN' || code === 'MESHVM_TIMEOUT' || code === 'MESHVM_TRUNCATED'
}

export function translateNetworkError(req: RequestDescription, err: unknown, timeoutMs: number): MeshvmError {
  if (err instanceof MeshvmError) return err
  const e = err as NodeJS.ErrnoException & {reason?: string}
  const code = e?.code ?? ''
  const where = `the API server at ${req.server} (context ${JSON.stringify(req.context)})`
  // A certificate refused by OpenSSL or by the host-name check, in kubectl's words.
  const x509 = x509Words(err)
  if (x509) {
    return new MeshvmError(`cannot connect to ${where}: tls: failed to verify certificate: ${terminalSafe(x509)}`, {
      exit: ExitCode.UNREACHABLE,
      code: 'TLSError',
      hints: ['check certificate-authority-data and tls-server-name in the kubeconfig; meshvm never skips verification unless the kubeconfig says insecure-skip-tls-verify'],
    })
  }
  if (TLS_HANDSHAKE[code]) {
    return new MeshvmError(`cannot connect to ${where}: ${TLS_HANDSHAKE[code]}`, {exit: ExitCode.UNREACHABLE, code: 'TLSError'})
  }
  if (code === 'ECONNREFUSED') {
    return new MeshvmError(`cannot connect to ${where}: connection refused`, {exit: ExitCode.UNREACHABLE, code: 'Unreachable', hints: ['is the cluster running, and is this the right --context?']})
  }
  if (code === 'ENOTFOUND' || code === 'EAI_AGAIN') {
    return new MeshvmError(`cannot connect to ${where}: the host name does not resolve`, {
      exit: ExitCode.UNREACHABLE,
      code: 'Unreachable',
      hints: ['check the server address in the kubeconfig and your DNS/VPN'],
    })
  }
  if (code === 'MESHVM_TIMEOUT' || code === 'ETIMEDOUT') {
    return new MeshvmError(`no answer from ${where} within ${timeoutMs < 1000 ? `${timeoutMs}ms` : `${Math.round(timeoutMs / 1000)}s`} (${req.method} ${req.path})`, {
      exit: ExitCode.UNREACHABLE,
      code: 'Timeout',
      hints: ['raise --request-timeout if the cluster is slow, or check connectivity'],
    })
  }
  if (code === 'MESHVM_MALFORMED') {
    return new MeshvmError(`the API server at ${req.server} sent a malformed response to ${req.method} ${req.path}${e.message && e.message !== 'malformed' ? ` (${e.message})` : ''}`, {
      exit: ExitCode.FAILURE,
      code: 'MalformedResponse',
    })
  }
  if (code === 'MESHVM_PROXY') {
    return new MeshvmError(`cannot connect to ${where}: ${e.message}`, {exit: ExitCode.UNREACHABLE, code: 'Unreachable', hints: ['check proxy-url in the kubeconfig, or HTTPS_PROXY/NO_PROXY']})
  }
  if (code === 'MESHVM_TOO_LARGE') {
    return new MeshvmError(`the API server at ${req.server} sent a response to ${req.method} ${req.path} larger than the limit (${e.message.replace(/^response larger than /, '')})`, {
      exit: ExitCode.FAILURE,
      code: 'ResponseTooLarge',
      hints: ['raise the limit with MESHVM_MAX_RESPONSE_BYTES (bytes) if this answer is expected to be that large'],
    })
  }
  if (code === 'ECONNRESET' || code === 'EPIPE' || code === 'MESHVM_TRUNCATED') {
    return new MeshvmError(`the connection to ${where} was reset (${req.method} ${req.path}), also after retries`, {exit: ExitCode.UNREACHABLE, code: 'ConnectionReset'})
  }
  const what = code || (e?.message ?? String(err)).split('\n')[0]
  return new MeshvmError(`cannot talk to ${where}: ${what}`, {exit: ExitCode.UNREACHABLE, code: 'Unreachable'})
}
