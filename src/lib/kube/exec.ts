/**
 * Kubeconfig exec credential plugins (users[].user.exec), run as kubectl runs them
 * (k8s.io/client-go/plugin/pkg/client/auth/exec): KUBERNETES_EXEC_INFO describes the request, the
 * plugin's stdout is an ExecCredential, and its stderr goes to the user's terminal (login prompts,
 * device codes), never into meshvm's output or errors. Unlike client-go, a plugin that does not exit
 * is killed after a bound (EXEC_TIMEOUT_MS, MESHVM_EXEC_TIMEOUT to change it) and reported cleanly.
 */
import {ExitCode, MeshvmError} from '../errors.js'
import {parseDuration} from '../validation/kube.js'
import {roughDuration} from './errors.js'

/** How long a credential plugin may run (documented): long enough for an interactive login. */
const EXEC_TIMEOUT_MS = 120_000
/** The most a plugin may print on stdout: an ExecCredential is a few KiB. */
const MAX_CREDENTIAL_BYTES = 1024 * 1024

export interface ExecConfig {
  command?: string
  args?: string[]
  env?: {name?: string; value?: string}[] | null
  apiVersion?: string
  interactiveMode?: string
  provideClusterInfo?: boolean
  /** Shown when the command is not found (client-go does too). */
  installHint?: string
}

/** What a plugin with provideClusterInfo is told about the cluster (ExecCredential spec.cluster). */
export interface ExecClusterInfo {
  server: string
  'tls-server-name'?: string
  'insecure-skip-tls-verify'?: boolean
  /** Base64 of the CA bundle. */
  'certificate-authority-data'?: string
  'proxy-url'?: string
}

export interface ExecCredentials {
  token?: string
  cert?: string
  key?: string
  /** status.expirationTimestamp, epoch ms: the credential is fetched again before then. */
  expiresAt?: number
}

function failure(context: string, command: string, why: string, hints: string[] = []): MeshvmError {
  return new MeshvmError(`cannot get credentials for context ${JSON.stringify(context)}: the credential plugin (exec: ${command}) ${why}`, {
    exit: ExitCode.FORBIDDEN,
    code: 'CredentialsFailed',
    hints: hints.length > 0 ? hints : ['run the command of the kubeconfig user by hand to see why (e.g. an expired login), or use another --context'],
  })
}

/**
 * Runs the plugin. MESHVM_EXEC_TIMEOUT, else EXEC_TIMEOUT_MS, bounds an interactive run (a login); a
 * plugin that cannot prompt is bounded like any request, by `requestTimeoutMs` (--request-timeout)
 * when that is shorter and MESHVM_EXEC_TIMEOUT is not set.
 */
export async function runExecPlugin(exec: ExecConfig, context: string, cluster?: ExecClusterInfo, requestTimeoutMs?: number, stdinIsTerminal = process.stdin.isTTY === true): Promise<ExecCredentials> {
  // Loaded here, not with the module: most kubeconfigs have no plugin.
  // process.getBuiltinModule (Node 20.16+), not import(): the bundle runs as a vm.Script, without dynamic import.
  const {spawn} = process.getBuiltinModule('node:child_process')
  const command = exec.command ?? ''
  if (!command) throw failure(context, '(none)', 'has no command')
  // client-go (exec.go isInteractive): Never: not interactive; IfAvailable: when stdin is a terminal;
  // Always: stdin must be a terminal, or the plugin is not run at all.
  if (exec.interactiveMode === 'Always' && !stdinIsTerminal) {
    throw failure(context, command, 'cannot support interactive mode: standard input is not a terminal', [
      "run the command from a terminal, or set the kubeconfig user's exec.interactiveMode to IfAvailable or Never",
    ])
  }
  const interactive = exec.interactiveMode !== 'Never' && stdinIsTerminal
  const setting = process.env.MESHVM_EXEC_TIMEOUT
  let timeoutMs = EXEC_TIMEOUT_MS
  if (setting) {
    const ms = parseDuration(setting)
    if (ms === undefined || ms <= 0) throw new MeshvmError(`MESHVM_EXEC_TIMEOUT ${JSON.stringify(setting)}: expected a duration such as 30s or 2m`, {exit: ExitCode.USAGE, code: 'Usage'})
    timeoutMs = ms
  } else if (!interactive && requestTimeoutMs !== undefined) timeoutMs = Math.min(timeoutMs, requestTimeoutMs)
  const apiVersion = exec.apiVersion ?? 'client.authentication.k8s.io/v1beta1'
  const env: NodeJS.ProcessEnv = {...process.env}
  for (const e of exec.env ?? []) if (e?.name) env[e.name] = e.value ?? ''
  env.KUBERNETES_EXEC_INFO = JSON.stringify({
    apiVersion,
    kind: 'ExecCredential',
    spec: exec.provideClusterInfo && cluster ? {cluster, interactive} : {interactive},
  })
  const stdout = await new Promise<string>((resolve, reject) => {
    let child: ReturnType<typeof spawn>
    try {
      child = spawn(command, exec.args ?? [], {env, stdio: [interactive ? 'inherit' : 'ignore', 'pipe', 'inherit']})
    } catch {
      reject(failure(context, command, 'could not be started'))
      return
    }
    const chunks: Buffer[] = []
    let size = 0
    let outcome: MeshvmError | undefined
    const timer = setTimeout(() => {
      outcome = failure(context, command, `did not finish within ${roughDuration(timeoutMs)} and was stopped`, [
        'finish the login it asks for, run it by hand to see why it hangs, or raise MESHVM_EXEC_TIMEOUT',
      ])
      child.kill('SIGKILL')
    }, timeoutMs)
    child.stdout!.on('data', (c: Buffer) => {
      size += c.length
      if (size > MAX_CREDENTIAL_BYTES) {
        outcome ??= failure(context, command, 'printed more than 1 MiB')
        child.kill('SIGKILL')
      } else chunks.push(c)
    })
    child.on('error', (err: NodeJS.ErrnoException) => {
      const hints = err.code === 'ENOENT' && exec.installHint ? [exec.installHint.replace(/[\u0000-\u001f\u007f-\u009f]+/g, ' ').trim()] : []
      outcome ??= failure(context, command, err.code === 'ENOENT' ? 'was not found on PATH' : `could not be started (${err.code ?? 'error'})`, hints)
    })
    child.on('close', (code) => {
      clearTimeout(timer)
      if (outcome) reject(outcome)
      // Its stderr already reached the terminal; its stdout may hold secrets and is never shown.
      else if (code !== 0) reject(failure(context, command, `failed (exit ${code ?? 'signal'})`))
      else resolve(Buffer.concat(chunks).toString('utf8'))
    })
  })
  let doc: {apiVersion?: unknown; status?: {token?: unknown; clientCertificateData?: unknown; clientKeyData?: unknown; expirationTimestamp?: unknown}} | null
  try {
    doc = JSON.parse(stdout)
  } catch {
    throw failure(context, command, 'printed something that is not an ExecCredential')
  }
  // client-go: "exec plugin is configured to use API version X, plugin returned version Y".
  const answered = doc?.apiVersion
  if (answered !== apiVersion) {
    const shown = typeof answered === 'string' ? JSON.stringify(answered.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?').slice(0, 100)) : 'none'
    throw failure(context, command, `is configured to use API version ${apiVersion}, plugin returned version ${shown}`)
  }
  const status = doc?.status
  if (!status || typeof status !== 'object') throw failure(context, command, 'printed an ExecCredential without a status')
  const creds: ExecCredentials = {}
  if (typeof status.token === 'string' && status.token !== '') creds.token = status.token
  if (typeof status.clientCertificateData === 'string') creds.cert = status.clientCertificateData
  if (typeof status.clientKeyData === 'string') creds.key = status.clientKeyData
  if (!creds.token && !(creds.cert && creds.key)) throw failure(context, command, 'returned neither a token nor a client certificate and key')
  if (status.expirationTimestamp !== undefined && status.expirationTimestamp !== null) {
    // RFC 3339, as metav1.Time decodes it.
    const text = status.expirationTimestamp
    const at = typeof text === 'string' && /^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}(?:\.\d+)?(?:Z|[+-]\d{2}:\d{2})$/i.test(text) ? Date.parse(text) : Number.NaN
    if (Number.isNaN(at)) throw failure(context, command, 'printed an ExecCredential whose status.expirationTimestamp is not an RFC 3339 time')
    creds.expiresAt = at
  }
  return creds
}
