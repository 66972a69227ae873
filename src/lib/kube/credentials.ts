/**
 * The credentials and TLS policy of a kubeconfig context, as client-go's client_config.go builds
 * them: the CA and client certificate (checked, with what to fix), static tokens (token, tokenFile,
 * basic auth), exec plugins (exec.ts) and auth providers (@kubernetes/client-node, loaded for them
 * alone), impersonation headers. KubeClient (client.ts) fetches them again when they expire.
 */
import {X509Certificate} from 'node:crypto'
import {readFileSync, statSync} from 'node:fs'
import type {RequestOptions} from 'node:https'
import {createSecureContext} from 'node:tls'
import {ExitCode, MeshvmError} from '../errors.js'
import type {LoadedKubeConfig} from './config.js'
import {runExecPlugin} from './exec.js'
import type {TlsPolicy} from './tls.js'
import {pemCertificates} from '../util/pem.js'

/**
 * A file (certificate-authority, client-certificate, client-key) or inline base64 value of the
 * kubeconfig, as kubectl reads it; a named file that cannot be read is an error that says what to fix.
 */
function fileOrData(loaded: LoadedKubeConfig, field: string, path: string | undefined, data: string | undefined): Buffer | undefined {
  if (!path) return data ? Buffer.from(data, 'base64') : undefined
  let why: string
  try {
    const st = statSync(path)
    if (st.isFile()) return readFileSync(path)
    why = st.isDirectory() ? 'is a directory' : 'is not a regular file'
  } catch (err) {
    const code = (err as NodeJS.ErrnoException).code
    why = code === 'ENOENT' ? 'file not found' : code === 'EACCES' ? 'permission denied' : 'cannot be read'
  }
  throw new MeshvmError(`context ${JSON.stringify(loaded.contextName)}: ${field} ${path}: ${why}`, {
    exit: ExitCode.USAGE,
    code: 'BadKubeconfig',
    hints: [`fix the ${field} path in the kubeconfig (${loaded.source}), or embed the file with ${field}-data`],
  })
}

/**
 * The certificates of the kubeconfig's certificate authority, as PEM for OpenSSL. Like client-go
 * (x509.CertPool.AppendCertsFromPEM): blocks that are not certificates are skipped, and a bundle
 * without one certificate is an error ("unable to load root certificates").
 */
function checkedCa(loaded: LoadedKubeConfig, ca: Buffer): string {
  const where = loaded.cluster.caFile ?? 'certificate-authority-data'
  const certs: string[] = []
  for (const block of pemCertificates(ca.toString('latin1'))) {
    try {
      certs.push(new X509Certificate(block).toString())
    } catch {
      // Not a certificate: skipped, as Go skips it.
    }
  }
  if (certs.length === 0) {
    throw new MeshvmError(`context ${JSON.stringify(loaded.contextName)}: ${where} holds no PEM certificate (unable to load root certificates)`, {
      exit: ExitCode.USAGE,
      code: 'BadKubeconfig',
      hints: ["certificate-authority-data is the base64 of the CA's PEM file (base64 -w0 ca.crt); certificate-authority is the path of that file"],
    })
  }
  return certs.join('')
}

/**
 * The credentials of an auth-provider user (oidc, azure, gcp), the one kind meshvm leaves to
 * @kubernetes/client-node: loaded here, on first use, so no other command pays for it.
 */
async function authProviderHeaders(loaded: LoadedKubeConfig): Promise<Record<string, string>> {
  const {KubeConfig} = await import('@kubernetes/client-node')
  const kc = new KubeConfig()
  const {cluster, user} = loaded
  kc.loadFromOptions({
    clusters: [{name: cluster.name, server: loaded.server, skipTLSVerify: cluster.insecureSkipTLSVerify}],
    users: [{name: user.name, authProvider: user.authProvider}],
    contexts: [{name: loaded.contextName, cluster: cluster.name, user: user.name}],
    currentContext: loaded.contextName,
  })
  const opts: RequestOptions = {}
  await kc.applyToHTTPSOptions(opts)
  const headers = (opts.headers ?? {}) as Record<string, string>
  return headers.Authorization ? {Authorization: headers.Authorization} : {}
}

export interface Credentials {
  tls: TlsPolicy
  /** Several values of one header (Impersonate-Group) are sent as several header lines. */
  headers: Record<string, string | string[]>
  /** When an exec plugin's credential expires (its expirationTimestamp), epoch ms. */
  expiresAt?: number
}

/** An exec credential is fetched again this long before its expirationTimestamp, not after a 401. */
export const CREDENTIAL_EXPIRY_MARGIN_MS = 10_000

/**
 * TLS material and credentials of the context's user (running its exec plugin, if any: see exec.ts),
 * as client-go's client_config.go builds them. A failing plugin's output is never shown: it may hold secrets.
 */
export async function tlsAndCredentials(loaded: LoadedKubeConfig, requestTimeoutMs?: number): Promise<Credentials> {
  const {cluster, user} = loaded
  const ca = fileOrData(loaded, 'certificate-authority', cluster.caFile, cluster.caData)
  let cert = fileOrData(loaded, 'client-certificate', user.certFile, user.certData)
  let key = fileOrData(loaded, 'client-key', user.keyFile, user.keyData)
  const tls: Credentials['tls'] = {insecure: cluster.insecureSkipTLSVerify}
  if (cluster.tlsServerName) tls.servername = cluster.tlsServerName
  if (ca) tls.ca = checkedCa(loaded, ca)
  const headers: Credentials['headers'] = {}
  let expiresAt: number | undefined
  const imp = user.impersonate
  if (imp?.user) headers['Impersonate-User'] = imp.user
  if (imp?.uid) headers['Impersonate-Uid'] = imp.uid
  // One header line per value, as client-go sends them (the API server reads each line as one value).
  if (imp?.groups?.length) headers['Impersonate-Group'] = imp.groups
  for (const [k, v] of Object.entries(imp?.extra ?? {})) if (v.length > 0) headers[`Impersonate-Extra-${encodeURIComponent(k)}`] = v
  // A static credential (token, basic auth, token file) wins over a plugin: client-go's exec and
  // auth-provider round trippers leave a request that already has an Authorization header alone, so
  // the plugin is not even run.
  const staticAuth = Boolean(user.token || user.username || user.password || user.tokenFile)
  try {
    if (user.exec && !staticAuth) {
      // The token (or certificate) from the plugin, run by meshvm so that its stderr reaches the
      // terminal and a plugin that never exits is stopped.
      const info = {
        server: loaded.server,
        ...(cluster.tlsServerName ? {'tls-server-name': cluster.tlsServerName} : {}),
        ...(cluster.insecureSkipTLSVerify ? {'insecure-skip-tls-verify': true} : {}),
        ...(ca ? {'certificate-authority-data': ca.toString('base64')} : {}),
        ...(cluster.proxyUrl ? {'proxy-url': cluster.proxyUrl} : {}),
      }
      const creds = await runExecPlugin(user.exec, loaded.contextName, info, requestTimeoutMs)
      expiresAt = creds.expiresAt
      if (creds.cert && creds.key) {
        cert = Buffer.from(creds.cert)
        key = Buffer.from(creds.key)
      }
      if (creds.token) headers.Authorization = `Bearer ${creds.token}`
    } else if (user.authProvider && !staticAuth) {
      Object.assign(headers, await authProviderHeaders(loaded))
    }
  } catch (err) {
    if (err instanceof MeshvmError) throw err
    const what = user.authProvider ? `the auth provider ${JSON.stringify(user.authProvider.name)}` : 'its credentials'
    throw new MeshvmError(`cannot get credentials for context ${JSON.stringify(loaded.contextName)}: ${what} failed`, {
      exit: ExitCode.FORBIDDEN,
      code: 'CredentialsFailed',
      hints: ['run the command of the kubeconfig user by hand to see why (e.g. an expired login), or use another --context'],
    })
  }
  // token and tokenFile both set: the file wins while it can be read (client-go re-reads it for
  // every request: it holds the rotated token), the token otherwise.
  let fileToken: string | undefined
  if (user.tokenFile) {
    try {
      fileToken = readFileSync(user.tokenFile, 'utf8').trim()
    } catch (err) {
      if (!user.token) {
        throw new MeshvmError(`cannot read the token file ${user.tokenFile} of context ${JSON.stringify(loaded.contextName)}: ${(err as NodeJS.ErrnoException).code ?? 'unreadable'}`, {
          exit: ExitCode.FORBIDDEN,
          code: 'CredentialsFailed',
        })
      }
    }
  }
  if (fileToken) headers.Authorization = `Bearer ${fileToken}`
  else if (user.token) headers.Authorization = `Bearer ${user.token}`
  else if (user.username || user.password) headers.Authorization = `Basic ${Buffer.from(`${user.username ?? ''}:${user.password ?? ''}`).toString('base64')}`
  else if (user.tokenFile) headers.Authorization = 'Bearer '
  if (cert || key) {
    // A certificate without its key, a key that is not the certificate's, or PEM that does not
    // parse: name the kubeconfig fields instead of failing inside the TLS handshake.
    try {
      createSecureContext({cert, key})
    } catch (err) {
      const certWhere = user.certFile ?? 'client-certificate-data'
      const keyWhere = user.keyFile ?? 'client-key-data'
      const msg = String((err as Error).message ?? '')
      const why = /mismatch/i.test(msg)
        ? `the client key (${keyWhere}) does not belong to the client certificate (${certWhere})`
        : cert && !key
          ? `a client certificate (${certWhere}) without a client key`
          : !cert && key
            ? `a client key (${keyWhere}) without a client certificate`
            : `the client certificate (${certWhere}) or client key (${keyWhere}) is not valid PEM`
      throw new MeshvmError(`context ${JSON.stringify(loaded.contextName)}: ${why}`, {
        exit: ExitCode.USAGE,
        code: 'BadKubeconfig',
        hints: ['point client-certificate and client-key at a matching pair (openssl x509 -noout -pubkey -in CERT; openssl pkey -pubout -in KEY), PEM encoded'],
      })
    }
    tls.cert = cert
    tls.key = key
  }
  return {tls, headers, ...(expiresAt !== undefined ? {expiresAt} : {})}
}
