/**
 * The cluster side of `create-remote-secret` (istioctl-behaviour.md §5.3): the cluster name, the
 * ServiceAccount (created with its reader RBAC when missing), the ServiceAccount token Secret (found,
 * or created and waited for on Kubernetes ≥ 1.24; the SA's `secrets[]` on older servers).
 *
 * Every message names objects, never their contents: token Secrets are read into memory only.
 */
import {applyOne as applyObject, FIELD_MANAGER, type WriteOutcome} from '../apply/apply.js'
import {ExitCode, MeshvmError, UsageError, flagError} from '../errors.js'
import type {KubeClient} from '../kube/client.js'
import {KubeApiError} from '../kube/errors.js'
import {flagDuration} from '../output/age.js'
import type {KubeObject, Manifest, ObjectMeta} from '../kube/object.js'
import {Resources, resourcePath, type ResourceType} from '../kube/resources.js'
import {sleep} from '../util/sleep.js'
import {DEFAULT_SERVICE_ACCOUNT, SERVICE_ACCOUNT_NAME_ANNOTATION, SERVICE_ACCOUNT_TOKEN_TYPE, isServiceAccountTokenSecret, tokenSecretManifest, tokenSecretName} from './generate.js'

export {FIELD_MANAGER}

export interface ProgressLog {
  /** Progress and notes, on stderr. */
  note(text: string): void
  /** Warnings, on stderr. */
  warning(text: string): void
}

export interface SecretObject extends KubeObject {
  metadata: ObjectMeta & {name: string}
  type?: string
  data?: Record<string, string>
}

export interface ServiceAccountObject extends KubeObject {
  metadata: ObjectMeta & {name: string}
  secrets?: {name?: string}[]
}

type NamespaceObject = KubeObject & {metadata: ObjectMeta & {name: string}}

const qualified = (ns: string, name: string) => `${ns}/${name}`

/** A Kubernetes error with what we were doing in front, keeping its exit code and hints. */
export function inContext(err: unknown, what: string, hints: string[] = []): unknown {
  if (err instanceof UsageError) return err
  if (err instanceof MeshvmError) {
    return new MeshvmError(`${what}: ${err.message}`, {exit: err.exit, code: err.code, hints: [...err.hints, ...hints], cause: err})
  }
  return err
}

// ---------------------------------------------------------------------------------------------
// Cluster name and version
// ---------------------------------------------------------------------------------------------

/** istioctl's default cluster name: the UID of the kube-system Namespace. */
export async function kubeSystemUid(client: KubeClient): Promise<string> {
  const hint = 'or pass --name to name the cluster yourself (a DNS-1123 label, e.g. --name cluster-west)'
  let ns: NamespaceObject | undefined
  try {
    ns = await client.getOptional<NamespaceObject>(resourcePath(Resources.namespaces, {name: 'kube-system'}))
  } catch (err) {
    throw inContext(err, 'cannot read Namespace kube-system to name the cluster (its UID is the default --name)', [hint.replace(/^or /, '')])
  }
  const uid = ns?.metadata?.uid
  if (!uid) {
    throw new MeshvmError('cannot name the cluster: Namespace kube-system not found (its UID is the default --name)', {
      exit: ExitCode.NOT_FOUND,
      code: 'NotFound',
      hints: [`check --context; ${hint}`],
    })
  }
  return uid
}

export interface ServerVersion {
  major: number
  minor: number
  gitVersion?: string
}

export async function serverVersion(client: KubeClient): Promise<ServerVersion | undefined> {
  try {
    const v = await client.get<{major?: string; minor?: string; gitVersion?: string}>('/version')
    const major = Number.parseInt(v.major ?? '', 10)
    const minor = Number.parseInt(v.minor ?? '', 10)
    if (Number.isNaN(major) || Number.isNaN(minor)) return undefined
    return {major, minor, gitVersion: v.gitVersion}
  } catch {
    return undefined
  }
}

/** kube.IsAtLeastVersion(client, 24): true when the version cannot be read, as in istioctl. */
export function isAtLeast124(version: ServerVersion | undefined): boolean {
  if (!version) return true
  return version.major > 1 || (version.major === 1 && version.minor >= 24)
}

// ---------------------------------------------------------------------------------------------
// ServiceAccount and reader RBAC
// ---------------------------------------------------------------------------------------------

const READER_LABELS = {app: 'istio-reader', 'app.kubernetes.io/name': 'istio-reader', 'app.kubernetes.io/managed-by': 'meshvm'}

export function readerClusterRoleName(namespace: string): string {
  return `istio-reader-clusterrole-${namespace}`
}

/**
 * The rules of Istio 1.30/1.31's `istio-reader-clusterrole-NS`
 * (manifests/charts/istio-control/istio-discovery/templates/reader-clusterrole.yaml, without the
 * istiodRemote extras): what istiod in another cluster reads here. Real istiod 1.30/1.31 lists the
 * remote cluster's ConfigMaps too (test:real: without `configmaps` its clusterz stays `timeout`).
 */
export const READER_RULES = [
  {
    apiGroups: ['config.istio.io', 'security.istio.io', 'networking.istio.io', 'authentication.istio.io', 'rbac.istio.io', 'telemetry.istio.io', 'extensions.istio.io'],
    resources: ['*'],
    verbs: ['get', 'list', 'watch'],
  },
  {apiGroups: [''], resources: ['endpoints', 'pods', 'services', 'nodes', 'replicationcontrollers', 'namespaces', 'secrets', 'configmaps'], verbs: ['get', 'list', 'watch']},
  {apiGroups: ['networking.istio.io'], resources: ['workloadentries'], verbs: ['get', 'watch', 'list']},
  {apiGroups: ['networking.x-k8s.io', 'gateway.networking.k8s.io'], resources: ['gateways'], verbs: ['get', 'watch', 'list']},
  {apiGroups: ['apiextensions.k8s.io'], resources: ['customresourcedefinitions'], verbs: ['get', 'list', 'watch']},
  {apiGroups: ['discovery.k8s.io'], resources: ['endpointslices'], verbs: ['get', 'list', 'watch']},
  {apiGroups: ['multicluster.x-k8s.io'], resources: ['serviceexports'], verbs: ['get', 'list', 'watch', 'create', 'delete']},
  {apiGroups: ['multicluster.x-k8s.io'], resources: ['serviceimports'], verbs: ['get', 'list', 'watch']},
  {apiGroups: ['apps'], resources: ['replicasets'], verbs: ['get', 'list', 'watch']},
  {apiGroups: ['authentication.k8s.io'], resources: ['tokenreviews'], verbs: ['create']},
  {apiGroups: ['authorization.k8s.io'], resources: ['subjectaccessreviews'], verbs: ['create']},
]

/**
 * What istioctl 1.27+ creates for a missing reader ServiceAccount: the SA and the
 * `istio-reader-clusterrole-NS` ClusterRole and ClusterRoleBinding, nothing else (1.24 also
 * created istiod's own ClusterRoles, which later clash with Helm).
 */
export function readerObjects(namespace: string, serviceAccount: string): Manifest[] {
  const name = readerClusterRoleName(namespace)
  return [
    {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: serviceAccount, namespace, labels: {...READER_LABELS}}},
    {apiVersion: 'rbac.authorization.k8s.io/v1', kind: 'ClusterRole', metadata: {name, labels: {...READER_LABELS}}, rules: READER_RULES},
    {
      apiVersion: 'rbac.authorization.k8s.io/v1',
      kind: 'ClusterRoleBinding',
      metadata: {name, labels: {...READER_LABELS}},
      roleRef: {apiGroup: 'rbac.authorization.k8s.io', kind: 'ClusterRole', name},
      subjects: [{kind: 'ServiceAccount', name: serviceAccount, namespace}],
    },
  ]
}

const KIND_RESOURCES: Record<string, ResourceType> = {
  ServiceAccount: Resources.serviceAccounts,
  ClusterRole: Resources.clusterRoles,
  ClusterRoleBinding: Resources.clusterRoleBindings,
  Secret: Resources.secrets,
}

export type ApplyOutcome = WriteOutcome

/** `serviceaccount/x`, `clusterrole.rbac.authorization.k8s.io/x`, as kubectl names objects. */
export function refOf(obj: Manifest): string {
  const res = KIND_RESOURCES[obj.kind]
  const group = res?.group ? `.${res.group}` : ''
  return `${obj.kind.toLowerCase()}${group}/${obj.metadata.name}`
}

/** Server-side apply of one object through meshvm's one apply path (src/lib/apply), saying whether it changed anything. */
export async function applyOne(client: KubeClient, obj: Manifest, options: {force?: boolean} = {}): Promise<ApplyOutcome> {
  const res = KIND_RESOURCES[obj.kind]
  if (!res) throw new MeshvmError(`meshvm cannot apply ${obj.kind}`, {exit: ExitCode.BUG, code: 'UnsupportedKind'})
  const path = resourcePath(res, {namespace: obj.metadata.namespace, name: obj.metadata.name})
  return (await applyObject(client, path, obj, {force: options.force ?? false})).outcome
}

export interface ServiceAccountOptions {
  namespace: string
  serviceAccount: string
  /** --create-service-account */
  create: boolean
  log: ProgressLog
}

export interface ServiceAccountResult {
  serviceAccount: ServiceAccountObject
  /** True when this run created it. */
  created: boolean
}

/** istioctl's getOrCreateServiceAccount, creating only the SA and the reader ClusterRole/Binding. */
export async function getOrCreateServiceAccount(client: KubeClient, opts: ServiceAccountOptions): Promise<ServiceAccountResult> {
  const {namespace, serviceAccount, log} = opts
  const path = resourcePath(Resources.serviceAccounts, {namespace, name: serviceAccount})
  const where = qualified(namespace, serviceAccount)
  let sa: ServiceAccountObject | undefined
  try {
    sa = await client.getOptional<ServiceAccountObject>(path)
  } catch (err) {
    throw inContext(err, `cannot read ServiceAccount ${where}`)
  }
  if (sa) return {serviceAccount: sa, created: false}

  // Missing: say why precisely (namespace, flag, or a ServiceAccount meshvm does not create).
  let nsExists = true
  try {
    nsExists = (await client.getOptional(resourcePath(Resources.namespaces, {name: namespace}))) !== undefined
  } catch {
    // Not allowed to read Namespaces: carry on with the ServiceAccount message.
  }
  if (!nsExists) {
    throw new MeshvmError(`namespace ${JSON.stringify(namespace)} does not exist, so ServiceAccount ${where} cannot be used or created`, {
      exit: ExitCode.NOT_FOUND,
      code: 'NotFound',
      hints: [
        'pass -n (or -i) with the namespace Istio is installed in; the ServiceAccount and the printed Secret live there (default: -i, istio-system)',
        `or create it first: kubectl create namespace ${namespace}`,
      ],
    })
  }
  const reader = DEFAULT_SERVICE_ACCOUNT.remote
  if (!opts.create) {
    throw new MeshvmError(`ServiceAccount ${where} not found, and --create-service-account=false`, {
      exit: ExitCode.NOT_FOUND,
      code: 'NotFound',
      hints: [
        'install a minimal Istio profile on the cluster first (it creates the ServiceAccount), or run without --create-service-account=false',
        `check -n/-i: the ServiceAccount is looked up in namespace ${namespace}`,
      ],
    })
  }
  if (serviceAccount !== reader) {
    throw new MeshvmError(`ServiceAccount ${where} not found; meshvm creates only ${reader} with its reader RBAC`, {
      exit: ExitCode.NOT_FOUND,
      code: 'NotFound',
      hints: [
        serviceAccount === DEFAULT_SERVICE_ACCOUNT.config
          ? "--type config uses istiod's own ServiceAccount: install istiod in this cluster first, or pass --service-account"
          : `create the ServiceAccount and its RBAC yourself, or leave --service-account out to use ${reader}`,
      ],
    })
  }

  const objects = readerObjects(namespace, serviceAccount)
  log.note(`ServiceAccount ${where} not found: creating it and ClusterRole/ClusterRoleBinding ${readerClusterRoleName(namespace)} (server-side apply, field manager ${FIELD_MANAGER})`)
  for (const obj of objects) {
    let outcome: ApplyOutcome
    try {
      // Not forced: a ClusterRole someone else (e.g. Helm) manages is left as it is.
      outcome = await applyOne(client, obj)
    } catch (err) {
      if (obj.kind !== 'ServiceAccount' && err instanceof KubeApiError && err.status === 409) {
        log.warning(`${refOf(obj)} exists and is managed by another tool with different content; left unchanged (check that it grants ${serviceAccount} read access)`)
        continue
      }
      throw inContext(err, `cannot create ${refOf(obj)}`, [
        'creating the reader ServiceAccount needs permission to apply ServiceAccounts, ClusterRoles and ClusterRoleBindings; ask a cluster admin, or install Istio on this cluster first',
      ])
    }
    log.note(`${refOf(obj)} ${outcome}`)
  }
  try {
    sa = await client.getOptional<ServiceAccountObject>(path)
  } catch (err) {
    throw inContext(err, `cannot read ServiceAccount ${where} after creating it`)
  }
  if (!sa) throw new MeshvmError(`ServiceAccount ${where} not found after creating it`, {exit: ExitCode.FAILURE, code: 'NotFound', hints: ['something deleted it; run the command again']})
  return {serviceAccount: sa, created: true}
}

// ---------------------------------------------------------------------------------------------
// Token Secret
// ---------------------------------------------------------------------------------------------

export interface TokenSecretOptions {
  namespace: string
  serviceAccount: string
  /** --secret-name: the token Secret to use. */
  secretName?: string
  /** How long the token controller may take to fill the Secret (ms). */
  timeoutMs: number
  /** Which keys must be filled: bearer tokens need token and ca.crt, auth plugins only ca.crt. */
  needToken: boolean
  log: ProgressLog
  pollMs?: number
  /** The ServiceAccount, for the < 1.24 path. */
  account: ServiceAccountObject
  /** The ServiceAccount was just created (< 1.24: its token Secret may not be listed yet). */
  accountCreated: boolean
  /** Kubernetes ≥ 1.24 (no automatic token Secrets). */
  modern: boolean
}

function isNotFound(err: unknown): boolean {
  return err instanceof KubeApiError && err.status === 404
}

function secretPath(namespace: string, name: string): string {
  return resourcePath(Resources.secrets, {namespace, name})
}

async function readSecret(client: KubeClient, namespace: string, name: string): Promise<SecretObject | undefined> {
  try {
    return await client.getOptional<SecretObject>(secretPath(namespace, name))
  } catch (err) {
    throw inContext(err, `cannot read Secret ${qualified(namespace, name)}`)
  }
}

/**
 * The token Secret of the ServiceAccount, filled by the token controller (waiting for it when
 * needed). istioctl's getServiceAccountSecret + waitForTokenData.
 */
export async function getServiceAccountTokenSecret(client: KubeClient, opts: TokenSecretOptions): Promise<SecretObject> {
  const secret = opts.modern ? await findOrCreateTokenSecret(client, opts) : await legacyTokenSecret(client, opts)
  return waitForTokenData(client, secret, opts)
}

async function findOrCreateTokenSecret(client: KubeClient, opts: TokenSecretOptions): Promise<SecretObject> {
  const {namespace, serviceAccount, log} = opts
  if (opts.secretName !== undefined) {
    const secret = await readSecret(client, namespace, opts.secretName)
    if (!secret) {
      throw new MeshvmError(`--secret-name ${JSON.stringify(opts.secretName)}: Secret ${qualified(namespace, opts.secretName)} not found`, {
        exit: ExitCode.NOT_FOUND,
        code: 'NotFound',
        hints: [
          `list the token Secrets: kubectl get secrets -n ${namespace} --field-selector type=${SERVICE_ACCOUNT_TOKEN_TYPE}`,
          `or leave --secret-name out: meshvm then finds or creates a token Secret for ${serviceAccount}`,
        ],
      })
    }
    if (!isServiceAccountTokenSecret(secret, serviceAccount)) throw secretMismatch(namespace, opts.secretName, serviceAccount, secret)
    return secret
  }

  let secrets: SecretObject[]
  try {
    secrets = await client.list<SecretObject>(resourcePath(Resources.secrets, {namespace}))
  } catch (err) {
    throw inContext(err, `cannot list Secrets in namespace ${namespace} to find the token of ServiceAccount ${serviceAccount}`)
  }
  const matching = secrets.filter((s) => isServiceAccountTokenSecret(s, serviceAccount))
  // Prefer one the token controller has already filled; otherwise the first, as istioctl does.
  const found = matching.find((s) => hasData(s, 'token') && hasData(s, 'ca.crt')) ?? matching[0]
  secrets = [] // drop the other Secrets' contents
  if (found) return found

  const manifest = tokenSecretManifest(serviceAccount, namespace)
  const name = tokenSecretName(serviceAccount)
  log.note(`Creating token Secret ${qualified(namespace, name)} for ServiceAccount ${serviceAccount}`)
  try {
    return await client.request<SecretObject>({method: 'POST', path: resourcePath(Resources.secrets, {namespace}), body: manifest, query: {fieldManager: FIELD_MANAGER}})
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 409) {
      // Someone (or a lost answer) created it already: use it if it is the right kind of Secret.
      const existing = await readSecret(client, namespace, name)
      if (existing && isServiceAccountTokenSecret(existing, serviceAccount)) return existing
      throw new MeshvmError(`Secret ${qualified(namespace, name)} already exists and is not a token Secret of ServiceAccount ${serviceAccount}`, {
        exit: ExitCode.REJECTED,
        code: 'Conflict',
        hints: [`delete it (kubectl delete secret ${name} -n ${namespace}) or pass --secret-name with a token Secret of ${serviceAccount}`],
      })
    }
    throw inContext(err, `cannot create token Secret ${qualified(namespace, name)}`, [
      `creating a token Secret needs permission to create Secrets in ${namespace}; or pass --secret-name with an existing token Secret of ${serviceAccount}`,
    ])
  }
}

function secretMismatch(namespace: string, name: string, serviceAccount: string, secret: SecretObject): UsageError {
  const type = secret.type ?? ''
  const owner = secret.metadata.annotations?.[SERVICE_ACCOUNT_NAME_ANNOTATION]
  const why =
    type !== SERVICE_ACCOUNT_TOKEN_TYPE
      ? `its type is ${JSON.stringify(type || 'Opaque')}, not ${SERVICE_ACCOUNT_TOKEN_TYPE}`
      : owner === undefined
        ? `it has no ${SERVICE_ACCOUNT_NAME_ANNOTATION} annotation`
        : `it belongs to ServiceAccount ${JSON.stringify(owner)}`
  return flagError('--secret-name', name, `Secret ${qualified(namespace, name)} does not reference ServiceAccount ${serviceAccount}: ${why}`, [
    `pass a Secret of type ${SERVICE_ACCOUNT_TOKEN_TYPE} annotated ${SERVICE_ACCOUNT_NAME_ANNOTATION}=${serviceAccount}, or leave --secret-name out`,
    ...(owner !== undefined && owner !== serviceAccount ? [`or keep the Secret and pass --service-account ${owner}`] : []),
  ])
}

/** Kubernetes < 1.24: the token Secret the controller listed in the ServiceAccount's `secrets`. */
async function legacyTokenSecret(client: KubeClient, opts: TokenSecretOptions): Promise<SecretObject> {
  const {namespace, serviceAccount, log} = opts
  const where = qualified(namespace, serviceAccount)
  let account = opts.account
  const names = () => (account.secrets ?? []).map((s) => s.name).filter((n): n is string => typeof n === 'string' && n !== '')
  if (names().length === 0 && opts.accountCreated) {
    // The token controller lists the new account's Secret shortly after creation.
    const deadline = Date.now() + opts.timeoutMs
    log.note(`Waiting up to ${flagDuration(opts.timeoutMs)} for the token controller to give ServiceAccount ${where} a token Secret...`)
    let delay = opts.pollMs ?? 100
    while (names().length === 0 && Date.now() < deadline) {
      await sleep(Math.min(delay, Math.max(0, deadline - Date.now())))
      delay = Math.min(delay * 2, 1000)
      const again = await client.getOptional<ServiceAccountObject>(resourcePath(Resources.serviceAccounts, {namespace, name: serviceAccount}))
      if (again) account = again
    }
  }
  const listed = names()
  if (listed.length === 0) {
    throw new MeshvmError(`ServiceAccount ${where} lists no token Secret (secrets is empty)`, {
      exit: ExitCode.NOT_FOUND,
      code: 'NoTokenSecret',
      hints: [
        'Kubernetes before 1.24 adds one automatically: check that kube-controller-manager is running',
        `or create a Secret of type ${SERVICE_ACCOUNT_TOKEN_TYPE} annotated ${SERVICE_ACCOUNT_NAME_ANNOTATION}=${serviceAccount} and pass --secret-name`,
      ],
    })
  }
  let name: string
  if (opts.secretName !== undefined) {
    if (!listed.includes(opts.secretName)) {
      throw flagError('--secret-name', opts.secretName, `not one of the Secrets of ServiceAccount ${where} (it lists: ${listed.join(', ')})`)
    }
    name = opts.secretName
  } else if (listed.length === 1) {
    name = listed[0]!
  } else {
    // Several (e.g. OpenShift's dockercfg Secret next to the token): keep the token Secrets.
    const tokens: string[] = []
    for (const n of listed) {
      const s = await readSecret(client, namespace, n)
      if (s && isServiceAccountTokenSecret(s, serviceAccount)) tokens.push(n)
    }
    if (tokens.length !== 1) {
      throw new UsageError(
        `ServiceAccount ${where} has ${tokens.length === 0 ? listed.length : tokens.length} ${tokens.length === 0 ? 'Secrets and none is a token Secret' : 'token Secrets'} (${(tokens.length === 0 ? listed : tokens).join(', ')}): pass --secret-name to choose one`,
      )
    }
    name = tokens[0]!
  }
  const secret = await readSecret(client, namespace, name)
  if (!secret) {
    throw new MeshvmError(`Secret ${qualified(namespace, name)}, listed by ServiceAccount ${serviceAccount}, not found`, {
      exit: ExitCode.NOT_FOUND,
      code: 'NotFound',
      hints: ['the token controller recreates it; run the command again, or pass --secret-name with another Secret'],
    })
  }
  return secret
}

function hasData(secret: SecretObject, key: string): boolean {
  const v = secret.data?.[key]
  return typeof v === 'string' && v !== ''
}

function missingKeys(secret: SecretObject, needToken: boolean): string[] {
  return [...(needToken ? ['token'] : []), 'ca.crt'].filter((k) => !hasData(secret, k))
}

/**
 * Waits, bounded by `timeoutMs`, until the token controller has filled `token` (bearer tokens only)
 * and `ca.crt`. Progress goes to the log; the Secret's data never does.
 */
export async function waitForTokenData(client: KubeClient, initial: SecretObject, opts: Pick<TokenSecretOptions, 'timeoutMs' | 'needToken' | 'log' | 'pollMs'>): Promise<SecretObject> {
  let secret = initial
  const namespace = secret.metadata.namespace ?? ''
  const name = secret.metadata.name
  const where = qualified(namespace, name)
  const started = Date.now()
  const deadline = started + opts.timeoutMs
  let delay = opts.pollMs ?? 100
  let lastNote = 0
  for (;;) {
    const missing = missingKeys(secret, opts.needToken)
    if (missing.length === 0) return secret
    const now = Date.now()
    const what = missing.map((k) => JSON.stringify(k)).join(' and ')
    if (now >= deadline) {
      throw new MeshvmError(`timed out after ${flagDuration(opts.timeoutMs)} waiting for the token controller to fill Secret ${where}: no ${what} data yet`, {
        exit: ExitCode.TIMEOUT,
        code: 'TokenTimeout',
        hints: [
          `the token controller (kube-controller-manager) fills Secrets of type ${SERVICE_ACCOUNT_TOKEN_TYPE}; check the Secret with: kubectl describe secret ${name} -n ${namespace}`,
          'raise --token-timeout (e.g. --token-timeout 2m); the Secret is kept and reused by the next run',
        ],
      })
    }
    if (lastNote === 0) {
      opts.log.note(`Waiting up to ${flagDuration(opts.timeoutMs)} for the token controller to fill ${what} in Secret ${where}...`)
      lastNote = now
    } else if (now - lastNote >= 5000) {
      opts.log.note(`Still waiting for Secret ${where} (${Math.round((now - started) / 1000)}s of ${flagDuration(opts.timeoutMs)})...`)
      lastNote = now
    }
    await sleep(Math.min(delay, Math.max(0, deadline - Date.now())))
    delay = Math.min(delay * 2, 1000)
    let next: SecretObject | undefined
    try {
      next = await client.getOptional<SecretObject>(secretPath(namespace, name))
    } catch (err) {
      if (isNotFound(err)) next = undefined
      else throw inContext(err, `cannot read Secret ${where} while waiting for its token`)
    }
    if (!next) {
      throw new MeshvmError(`Secret ${where} was deleted while waiting for the token controller to fill it`, {
        exit: ExitCode.NOT_FOUND,
        code: 'NotFound',
        hints: ['the token controller deletes token Secrets whose ServiceAccount is gone; check the ServiceAccount and run the command again'],
      })
    }
    secret = next
  }
}

/** The bearer token of a filled token Secret (decoded; never logged). */
export function tokenOf(secret: SecretObject): string {
  return Buffer.from(secret.data?.token ?? '', 'base64').toString('utf8')
}

/** `ca.crt` of a filled token Secret, base64 as stored. */
export function caDataOf(secret: SecretObject): string {
  return secret.data?.['ca.crt'] ?? ''
}
