/**
 * The cluster side of `create-remote-secret` (istioctl-behaviour.md §5.3): the cluster name, the
 * ServiceAccount (created with its reader RBAC when missing), the ServiceAccount token Secret (found,
 * or created and waited for on Kubernetes ≥ 1.24; the SA's `secrets[]` on older servers).
 *
 * Every message names objects, never their contents: token Secrets are read into memory only.
 */
import {applyOne, FIELD_MANAGER, type WriteOutcome} from '../apply/apply.js'
import {ExitCode, MeshvmError, UsageError, flagError} from '../errors.js'
import type {KubeClient} from '../kube/client.js'
import {KubeApiError} from '../kube/errors.js'
import type {KubeObject, Manifest, ObjectMeta} from '../kube/object.js'
import {findResourceByKind, Resources, resourcePath} from '../kube/resources.js'
import {flagDuration} from '../output/age.js'
import {resourceName} from '../output/render.js'
import {sleep} from '../util/sleep.js'
import {DEFAULT_SERVICE_ACCOUNT, SERVICE_ACCOUNT_NAME_ANNOTATION, SERVICE_ACCOUNT_TOKEN_TYPE, isServiceAccountTokenSecret, tokenSecretManifest, tokenSecretName} from './generate.js'
import type {RemoteSecretRun} from './run.js'

export interface ProgressLog {
  /** Progress and notes, on stderr. */
  note(text: string): void
  /** Warnings, on stderr. */
  warning(text: string): void
}

type Named = KubeObject & {metadata: ObjectMeta & {name: string}}
export type SecretObject = Named & {type?: string; data?: Record<string, string>}
type ServiceAccountObject = Named & {secrets?: {name?: string}[]}

/** A Kubernetes error with what we were doing in front, keeping its exit code and hints (usage errors and bugs pass as they are). */
export function inContext(err: unknown, what: string, hints: string[] = []): unknown {
  if (!(err instanceof MeshvmError) || err instanceof UsageError) return err
  return new MeshvmError(`${what}: ${err.message}`, {exit: err.exit, code: err.code, hints: [...err.hints, ...hints], cause: err})
}

const notFound = (message: string, hints: string[], code = 'NotFound') => new MeshvmError(message, {exit: ExitCode.NOT_FOUND, code, hints})

/** getOptional, with what was being read in front of an error. */
function read<T>(client: KubeClient, path: string, what: string, hints: string[] = []): Promise<T | undefined> {
  return client.getOptional<T>(path).catch((err: unknown) => {
    throw inContext(err, what, hints)
  })
}

function readSecret(client: KubeClient, namespace: string, name: string, doing = ''): Promise<SecretObject | undefined> {
  return read<SecretObject>(client, resourcePath(Resources.secrets, {namespace, name}), `cannot read Secret ${namespace}/${name}${doing}`)
}

/** Sleeps before the next poll: `first` ms, doubling up to `cap`, never past `deadline`. */
export function backoff(deadline: number, first: number, cap: number): () => Promise<void> {
  let delay = first
  return async () => {
    await sleep(Math.min(delay, Math.max(0, deadline - Date.now())))
    delay = Math.min(delay * 2, cap)
  }
}

/** istioctl's default cluster name: the UID of the kube-system Namespace. */
export async function kubeSystemUid(client: KubeClient): Promise<string> {
  const hint = 'pass --name to name the cluster yourself (a DNS-1123 label, e.g. --name cluster-west)'
  const ns = await read<Named>(client, resourcePath(Resources.namespaces, {name: 'kube-system'}), 'cannot read Namespace kube-system to name the cluster (its UID is the default --name)', [hint])
  const uid = ns?.metadata?.uid
  if (!uid) throw notFound('cannot name the cluster: Namespace kube-system not found (its UID is the default --name)', [`check --context; or ${hint}`])
  return uid
}

/** kube.IsAtLeastVersion(client, 24): true when the version cannot be read, as in istioctl. */
async function isAtLeast124(client: KubeClient): Promise<boolean> {
  try {
    const v = await client.get<{major?: string; minor?: string}>('/version')
    const major = Number.parseInt(v.major ?? '', 10)
    const minor = Number.parseInt(v.minor ?? '', 10)
    return Number.isNaN(major) || Number.isNaN(minor) || major > 1 || (major === 1 && minor >= 24)
  } catch {
    return true
  }
}

// ---------------------------------------------------------------------------------------------
// ServiceAccount and reader RBAC
// ---------------------------------------------------------------------------------------------

const READER_LABELS = {app: 'istio-reader', 'app.kubernetes.io/name': 'istio-reader', 'app.kubernetes.io/managed-by': 'meshvm'}

/**
 * The rules of Istio 1.30/1.31's `istio-reader-clusterrole-NS`
 * (manifests/charts/istio-control/istio-discovery/templates/reader-clusterrole.yaml, without the
 * istiodRemote extras): what istiod in another cluster reads here. Real istiod 1.30/1.31 lists the
 * remote cluster's ConfigMaps too (test:real: without `configmaps` its clusterz stays `timeout`).
 */
const READER_RULES = [
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
function readerObjects(namespace: string, serviceAccount: string): Manifest[] {
  const name = `istio-reader-clusterrole-${namespace}`
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

/** Server-side apply of one object through meshvm's one apply path (src/lib/apply), saying whether it changed anything. */
export async function applyManifest(client: KubeClient, obj: Manifest, force = false): Promise<WriteOutcome> {
  const resource = findResourceByKind(obj.apiVersion, obj.kind)
  if (!resource) throw new MeshvmError(`meshvm cannot apply ${obj.kind}`, {exit: ExitCode.BUG, code: 'UnsupportedKind'})
  const path = resourcePath(resource, {namespace: obj.metadata.namespace, name: obj.metadata.name})
  return (await applyOne(client, path, obj, {force})).outcome
}

/** istioctl's getOrCreateServiceAccount, creating only the SA and the reader ClusterRole/Binding. */
async function getOrCreateServiceAccount(client: KubeClient, run: RemoteSecretRun): Promise<{account: ServiceAccountObject; created: boolean}> {
  const {namespace, log} = run
  const serviceAccount = run.settings.serviceAccount
  const path = resourcePath(Resources.serviceAccounts, {namespace, name: serviceAccount})
  const where = `${namespace}/${serviceAccount}`
  let sa = await read<ServiceAccountObject>(client, path, `cannot read ServiceAccount ${where}`)
  if (sa) return {account: sa, created: false}

  // Missing: say why precisely (namespace, flag, or a ServiceAccount meshvm does not create).
  // Not allowed to read Namespaces (or any other failure): carry on with the ServiceAccount message.
  const nsExists = await client.getOptional(resourcePath(Resources.namespaces, {name: namespace})).then(
    (ns) => ns !== undefined,
    () => true,
  )
  if (!nsExists) {
    throw notFound(`namespace ${JSON.stringify(namespace)} does not exist, so ServiceAccount ${where} cannot be used or created`, [
      'pass -n (or -i) with the namespace Istio is installed in; the ServiceAccount and the printed Secret live there (default: -i, istio-system)',
      `or create it first: kubectl create namespace ${namespace}`,
    ])
  }
  const reader = DEFAULT_SERVICE_ACCOUNT.remote
  if (!run.createServiceAccount) {
    throw notFound(`ServiceAccount ${where} not found, and --create-service-account=false`, [
      'install a minimal Istio profile on the cluster first (it creates the ServiceAccount), or run without --create-service-account=false',
      `check -n/-i: the ServiceAccount is looked up in namespace ${namespace}`,
    ])
  }
  if (serviceAccount !== reader) {
    throw notFound(`ServiceAccount ${where} not found; meshvm creates only ${reader} with its reader RBAC`, [
      serviceAccount === DEFAULT_SERVICE_ACCOUNT.config
        ? "--type config uses istiod's own ServiceAccount: install istiod in this cluster first, or pass --service-account"
        : `create the ServiceAccount and its RBAC yourself, or leave --service-account out to use ${reader}`,
    ])
  }

  const objects = readerObjects(namespace, serviceAccount)
  log.note(`ServiceAccount ${where} not found: creating it and ClusterRole/ClusterRoleBinding ${objects[1]!.metadata.name} (server-side apply, field manager ${FIELD_MANAGER})`)
  for (const obj of objects) {
    let outcome: WriteOutcome
    try {
      // Not forced: a ClusterRole someone else (e.g. Helm) manages is left as it is.
      outcome = await applyManifest(client, obj)
    } catch (err) {
      if (obj.kind !== 'ServiceAccount' && err instanceof KubeApiError && err.status === 409) {
        log.warning(`${resourceName(obj)} exists and is managed by another tool with different content; left unchanged (check that it grants ${serviceAccount} read access)`)
        continue
      }
      throw inContext(err, `cannot create ${resourceName(obj)}`, [
        'creating the reader ServiceAccount needs permission to apply ServiceAccounts, ClusterRoles and ClusterRoleBindings; ask a cluster admin, or install Istio on this cluster first',
      ])
    }
    log.note(`${resourceName(obj)} ${outcome}`)
  }
  sa = await read<ServiceAccountObject>(client, path, `cannot read ServiceAccount ${where} after creating it`)
  if (!sa) throw new MeshvmError(`ServiceAccount ${where} not found after creating it`, {exit: ExitCode.FAILURE, code: 'NotFound', hints: ['something deleted it; run the command again']})
  return {account: sa, created: true}
}

// ---------------------------------------------------------------------------------------------
// Token Secret
// ---------------------------------------------------------------------------------------------

/**
 * The ServiceAccount (created when missing) and its token Secret, filled by the token controller
 * (waiting for it when needed): istioctl's getOrCreateServiceAccount, getServiceAccountSecret and
 * waitForTokenData.
 */
export async function serviceAccountTokenSecret(client: KubeClient, run: RemoteSecretRun): Promise<SecretObject> {
  const {account, created} = await getOrCreateServiceAccount(client, run)
  const secret = (await isAtLeast124(client)) ? await findOrCreateTokenSecret(client, run) : await legacyTokenSecret(client, run, account, created)
  return waitForTokenData(client, secret, {timeoutMs: run.tokenTimeoutMs, needToken: run.settings.authType === 'bearer-token', log: run.log})
}

async function findOrCreateTokenSecret(client: KubeClient, run: RemoteSecretRun): Promise<SecretObject> {
  const {namespace, log} = run
  const {serviceAccount, secretName} = run.settings
  if (secretName !== undefined) {
    const secret = await readSecret(client, namespace, secretName)
    if (!secret) {
      throw notFound(`--secret-name ${JSON.stringify(secretName)}: Secret ${namespace}/${secretName} not found`, [
        `list the token Secrets: kubectl get secrets -n ${namespace} --field-selector type=${SERVICE_ACCOUNT_TOKEN_TYPE}`,
        `or leave --secret-name out: meshvm then finds or creates a token Secret for ${serviceAccount}`,
      ])
    }
    if (!isServiceAccountTokenSecret(secret, serviceAccount)) throw secretMismatch(namespace, secretName, serviceAccount, secret)
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

  const name = tokenSecretName(serviceAccount)
  log.note(`Creating token Secret ${namespace}/${name} for ServiceAccount ${serviceAccount}`)
  try {
    const body = tokenSecretManifest(serviceAccount, namespace)
    return await client.request<SecretObject>({method: 'POST', path: resourcePath(Resources.secrets, {namespace}), body, query: {fieldManager: FIELD_MANAGER}})
  } catch (err) {
    if (err instanceof KubeApiError && err.status === 409) {
      // Someone (or a lost answer) created it already: use it if it is the right kind of Secret.
      const existing = await readSecret(client, namespace, name)
      if (existing && isServiceAccountTokenSecret(existing, serviceAccount)) return existing
      throw new MeshvmError(`Secret ${namespace}/${name} already exists and is not a token Secret of ServiceAccount ${serviceAccount}`, {
        exit: ExitCode.REJECTED,
        code: 'Conflict',
        hints: [`delete it (kubectl delete secret ${name} -n ${namespace}) or pass --secret-name with a token Secret of ${serviceAccount}`],
      })
    }
    throw inContext(err, `cannot create token Secret ${namespace}/${name}`, [
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
  return flagError('--secret-name', name, `Secret ${namespace}/${name} does not reference ServiceAccount ${serviceAccount}: ${why}`, [
    `pass a Secret of type ${SERVICE_ACCOUNT_TOKEN_TYPE} annotated ${SERVICE_ACCOUNT_NAME_ANNOTATION}=${serviceAccount}, or leave --secret-name out`,
    ...(owner !== undefined && owner !== serviceAccount ? [`or keep the Secret and pass --service-account ${owner}`] : []),
  ])
}

/** Kubernetes < 1.24: the token Secret the controller listed in the ServiceAccount's `secrets`. */
async function legacyTokenSecret(client: KubeClient, run: RemoteSecretRun, account: ServiceAccountObject, created: boolean): Promise<SecretObject> {
  const {namespace, log} = run
  const {serviceAccount, secretName} = run.settings
  const where = `${namespace}/${serviceAccount}`
  const names = () => (account.secrets ?? []).map((s) => s.name).filter((n): n is string => typeof n === 'string' && n !== '')
  if (names().length === 0 && created) {
    // The token controller lists the new account's Secret shortly after creation.
    const deadline = Date.now() + run.tokenTimeoutMs
    log.note(`Waiting up to ${flagDuration(run.tokenTimeoutMs)} for the token controller to give ServiceAccount ${where} a token Secret...`)
    const wait = backoff(deadline, 100, 1000)
    while (names().length === 0 && Date.now() < deadline) {
      await wait()
      account = (await client.getOptional<ServiceAccountObject>(resourcePath(Resources.serviceAccounts, {namespace, name: serviceAccount}))) ?? account
    }
  }
  const listed = names()
  if (listed.length === 0) {
    throw notFound(
      `ServiceAccount ${where} lists no token Secret (secrets is empty)`,
      [
        'Kubernetes before 1.24 adds one automatically: check that kube-controller-manager is running',
        `or create a Secret of type ${SERVICE_ACCOUNT_TOKEN_TYPE} annotated ${SERVICE_ACCOUNT_NAME_ANNOTATION}=${serviceAccount} and pass --secret-name`,
      ],
      'NoTokenSecret',
    )
  }
  let name: string
  if (secretName !== undefined) {
    if (!listed.includes(secretName)) throw flagError('--secret-name', secretName, `not one of the Secrets of ServiceAccount ${where} (it lists: ${listed.join(', ')})`)
    name = secretName
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
      const has = tokens.length === 0 ? `${listed.length} Secrets and none is a token Secret (${listed.join(', ')})` : `${tokens.length} token Secrets (${tokens.join(', ')})`
      throw new UsageError(`ServiceAccount ${where} has ${has}: pass --secret-name to choose one`)
    }
    name = tokens[0]!
  }
  const secret = await readSecret(client, namespace, name)
  if (!secret) {
    throw notFound(`Secret ${namespace}/${name}, listed by ServiceAccount ${serviceAccount}, not found`, [
      'the token controller recreates it; run the command again, or pass --secret-name with another Secret',
    ])
  }
  return secret
}

function hasData(secret: SecretObject, key: string): boolean {
  const v = secret.data?.[key]
  return typeof v === 'string' && v !== ''
}

/**
 * Waits, bounded by `timeoutMs`, until the token controller has filled `token` (bearer tokens only)
 * and `ca.crt`. Progress goes to the log; the Secret's data never does.
 */
export async function waitForTokenData(client: KubeClient, initial: SecretObject, opts: {timeoutMs: number; needToken: boolean; log: ProgressLog}): Promise<SecretObject> {
  let secret = initial
  const namespace = secret.metadata.namespace ?? ''
  const name = secret.metadata.name
  const where = `${namespace}/${name}`
  const started = Date.now()
  const deadline = started + opts.timeoutMs
  const wait = backoff(deadline, 100, 1000)
  let lastNote = 0
  for (;;) {
    const missing = [...(opts.needToken ? ['token'] : []), 'ca.crt'].filter((k) => !hasData(secret, k))
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
    await wait()
    const next = await readSecret(client, namespace, name, ' while waiting for its token')
    if (!next) {
      throw notFound(`Secret ${where} was deleted while waiting for the token controller to fill it`, [
        'the token controller deletes token Secrets whose ServiceAccount is gone; check the ServiceAccount and run the command again',
      ])
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
