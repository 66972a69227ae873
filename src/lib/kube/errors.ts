/**
 * Kubernetes API and network failures, translated into one-line MeshvmErrors with a stable exit code
 * and a hint. Never includes request bodies or headers: they may carry tokens.
 */
import {ExitCode, type ExitCodeValue, MeshvmError, redactCredentials} from '../errors.js'
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
  readonly kubeStatus: KubeStatus | undefined
  constructor(message: string, options: {status: number; reason: string; kubeStatus?: KubeStatus; exit: ExitCodeValue; hints?: string[]}) {
    super(message, {exit: options.exit, code: options.reason, hints: options.hints})
    this.name = 'KubeApiError'
    this.status = options.status
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
  return `ask a cluster admin for a ${namespace ? `Role in namespace ${namespace}` : 'ClusterRole'} allowing verb "${verb}" on "${res}" (kubectl auth can-i ${verb} ${res}${namespace ? ` -n ${namespace}` : ''})`
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
  const error = (text: string, code: string, exit: ExitCodeValue, hint?: string) => new KubeApiError(text, {status, reason: code, kubeStatus, exit, hints: hint ? [hint] : []})
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
    return error(
      `the API server at ${req.server} answered ${req.method} ${req.path} with ${status}${status >= 300 && status < 400 ? ` (a redirect${host})` : ''} instead of a result; nothing is known to have changed`,
      'UnexpectedStatus',
      ExitCode.UNREACHABLE,
      'meshvm never follows redirects from the API server; check the server address in the kubeconfig (a proxy or load balancer in front of it may be redirecting)',
    )
  }
  switch (status) {
    case 401:
      return error(
        `Unauthorized: the API server at ${req.server} rejected the credentials of context ${JSON.stringify(req.context)}`,
        'Unauthorized',
        ExitCode.FORBIDDEN,
        'the token or client certificate may have expired; refresh your credentials (e.g. log in to the cloud CLI again)',
      )
    case 403:
      return error(message ?? `forbidden: ${VERBS[req.method] ?? req.method} ${req.path}`, 'Forbidden', ExitCode.FORBIDDEN, message ? rbacHint(message) : undefined)
    case 404:
      return error(message ?? `not found: ${req.path}`, 'NotFound', ExitCode.NOT_FOUND)
    case 409:
      return error(message ?? `conflict: ${req.path}`, reason, ExitCode.REJECTED)
    case 422: {
      const causes = (Array.isArray(kubeStatus?.details?.causes) ? kubeStatus.details.causes : []).map((c) =>
        terminalSafe(redactCredentials(`${typeof c?.field === 'string' ? c.field + ': ' : ''}${String(c?.message ?? c?.reason ?? '')}`)),
      )
      return error(message ?? `invalid: ${causes.join('; ')}`, 'Invalid', ExitCode.REJECTED)
    }
    case 410:
      return error(message ?? 'the list was too old to continue (410 Gone)', 'Expired', ExitCode.FAILURE)
    case 429:
      return error(
        `the API server at ${req.server} is throttling requests (429 Too Many Requests) and kept doing so after retries`,
        'TooManyRequests',
        ExitCode.UNREACHABLE,
        "try again later, or raise the API server's priority and fairness limits",
      )
  }
  if (status >= 500) {
    return error(
      `the API server at ${req.server} failed ${req.method} ${req.path}: ${status} ${message ?? httpReason(status)}`,
      reason,
      ExitCode.UNREACHABLE,
      'the request was retried; check the API server health (kubectl get --raw /readyz)',
    )
  }
  return error(`${req.method} ${req.path}: ${status} ${message ?? httpReason(status)}`, reason, ExitCode.FAILURE)
}

/** Kubernetes' reason for a status without a Status body; 401, 403, 404, 410, 422 and 429 name theirs above. */
function httpReason(status: number): string {
  const reasons: Record<number, string> = {
    400: 'BadRequest',
    405: 'MethodNotAllowed',
    409: 'Conflict',
    415: 'UnsupportedMediaType',
    500: 'InternalError',
    502: 'BadGateway',
    503: 'ServiceUnavailable',
    504: 'GatewayTimeout',
  }
  return reasons[status] ?? `HTTP ${status}`
}

const UNKNOWN_AUTHORITY = 'x509: certificate signed by unknown authority'

/** OpenSSL's verify codes (as Node names them) in kubectl's (Go's) words. */
const X509_WORDS = new Map(
  Object.entries({
    [UNKNOWN_AUTHORITY]:
      'UNABLE_TO_GET_ISSUER_CERT UNABLE_TO_GET_ISSUER_CERT_LOCALLY UNABLE_TO_VERIFY_LEAF_SIGNATURE SELF_SIGNED_CERT_IN_CHAIN DEPTH_ZERO_SELF_SIGNED_CERT CERT_SIGNATURE_FAILURE CERT_UNTRUSTED CERT_REJECTED',
    [`${UNKNOWN_AUTHORITY} (an issuer may not sign certificates)`]: 'INVALID_CA',
    'x509: certificate has expired or is not yet valid': 'CERT_HAS_EXPIRED CERT_NOT_YET_VALID',
    'x509: malformed validity (a certificate date does not parse)': 'ERROR_IN_CERT_NOT_BEFORE_FIELD ERROR_IN_CERT_NOT_AFTER_FIELD',
    'x509: certificate specifies an incompatible key usage': 'INVALID_PURPOSE',
    'x509: too many intermediates for path length constraint': 'PATH_LENGTH_EXCEEDED',
    'x509: a root or intermediate certificate is not authorized to sign for this name':
      'PERMITTED_VIOLATION EXCLUDED_VIOLATION SUBTREE_MINMAX UNSUPPORTED_CONSTRAINT_TYPE UNSUPPORTED_CONSTRAINT_SYNTAX UNSUPPORTED_NAME_SYNTAX',
    'x509: unhandled critical extension': 'UNHANDLED_CRITICAL_EXTENSION',
    [`${UNKNOWN_AUTHORITY} (insecure algorithm: a SHA-1 or MD5 signature)`]: 'CA_MD_TOO_WEAK',
    'x509: cannot verify signature: insecure key': 'CA_KEY_TOO_SMALL EE_KEY_TOO_SMALL',
    [`${UNKNOWN_AUTHORITY} (the chain is too long)`]: 'CERT_CHAIN_TOO_LONG',
  }).flatMap(([words, codes]) => codes.split(' ').map((code) => [code, words] as const)),
)

/** OpenSSL's verify texts for the results Node has no code for, and the code whose words they get. */
const OPENSSL_TEXTS: [RegExp, string][] = [
  [/subtree violation|name constraint|unsupported name/i, 'PERMITTED_VIOLATION'],
  [/unhandled critical extension/i, 'UNHANDLED_CRITICAL_EXTENSION'],
  [/md too weak|digest algorithm too weak/i, 'CA_MD_TOO_WEAK'],
  [/does not include certificate signing/i, 'INVALID_CA'],
  [/key too small/i, 'EE_KEY_TOO_SMALL'],
  [/path length/i, 'PATH_LENGTH_EXCEEDED'],
  [/invalid CA|not a CA/i, 'INVALID_CA'],
  [/format error in certificate's notAfter|format error in certificate's notBefore/i, 'ERROR_IN_CERT_NOT_AFTER_FIELD'],
  [/purpose/i, 'INVALID_PURPOSE'],
]

/** kubectl's words for a TLS failure, or undefined when `err` is not a certificate refusal. */
export function x509Words(err: unknown): string | undefined {
  const e = err as {code?: string; x509?: unknown} | undefined
  if (typeof e?.x509 === 'string') return e.x509
  const code = e?.code ?? ''
  if (X509_WORDS.has(code)) return X509_WORDS.get(code)
  // Node names only some of OpenSSL's verify results; the others come as UNSPECIFIED with OpenSSL's text.
  if (code === 'UNSPECIFIED' && typeof (err as Error).message === 'string') {
    const text = (err as Error).message
    const known = OPENSSL_TEXTS.find(([pattern]) => pattern.test(text))
    return known ? X509_WORDS.get(known[1]) : `x509: certificate refused (${text.split('\n')[0]!.slice(0, 200)})`
  }
  // Any other OpenSSL verification code (e.g. a malformed certificate): refused, named by its code.
  if (/^(?:CERT_|UNABLE_TO_|ERR_TLS_CERT|INVALID_|[A-Z_]*_VIOLATION$)/.test(code)) return `x509: certificate refused (${code})`
  return undefined
}

/** Connection failures that are not a certificate verdict: what follows "cannot connect to …: ", the error's code, a hint. */
type ConnectFailure = [why: string | undefined, code: string, hint?: string]
const DNS_FAILURE: ConnectFailure = ['the host name does not resolve', 'Unreachable', 'check the server address in the kubeconfig and your DNS/VPN']
const CONNECT_FAILURES = new Map<string, ConnectFailure>([
  ['EPROTO', ['the TLS handshake failed', 'TLSError']],
  ['ERR_SSL_WRONG_VERSION_NUMBER', ['the server does not speak TLS on this port', 'TLSError']],
  ['ECONNREFUSED', ['connection refused', 'Unreachable', 'is the cluster running, and is this the right --context?']],
  ['ENOTFOUND', DNS_FAILURE],
  ['EAI_AGAIN', DNS_FAILURE],
  // The proxy's own words (proxy.ts), which name the proxy, never its credentials.
  ['MESHVM_PROXY', [undefined, 'Unreachable', 'check proxy-url in the kubeconfig, or HTTPS_PROXY/NO_PROXY']],
])

/** Errors that mean "try again" for a request that is safe to repeat. */
export function isTransientNetworkError(err: unknown): boolean {
  const code = (err as NodeJS.ErrnoException)?.code
  return code === 'ECONNRESET' || code === 'EPIPE' || code === 'ETIMEDOUT' || code === 'ECONNABORTED' || code === 'EAI_AGAIN' || code === 'MESHVM_TIMEOUT' || code === 'MESHVM_TRUNCATED'
}

/** A time-out as messages give it: milliseconds below a second, else whole seconds. */
export function roughDuration(ms: number): string {
  return ms < 1000 ? `${ms}ms` : `${Math.round(ms / 1000)}s`
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
  const failure = CONNECT_FAILURES.get(code)
  if (failure) {
    const [why, errorCode, hint] = failure
    return new MeshvmError(`cannot connect to ${where}: ${why ?? e.message}`, {exit: ExitCode.UNREACHABLE, code: errorCode, hints: hint ? [hint] : []})
  }
  if (code === 'MESHVM_TIMEOUT' || code === 'ETIMEDOUT') {
    return new MeshvmError(`no answer from ${where} within ${roughDuration(timeoutMs)} (${req.method} ${req.path})`, {
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
