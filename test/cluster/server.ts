/**
 * The test API server: kube-apiserver's REST semantics over real HTTPS, enough for meshvm and for
 * the real kubectl (discovery, Tables, OpenAPI v3, server-side apply, watch, paging). Storage is
 * the Store; resource types come from the registry; subresources (status, serviceaccounts/token,
 * pods/proxy) and SelfSubjectAccessReview are handled here. See README.md in this folder.
 */
import {createServer, type Server} from 'node:https'
import type {IncomingMessage, ServerResponse} from 'node:http'
import {randomBytes} from 'node:crypto'
import {parse as parseYaml} from 'yaml'
import {nameProblem} from './names.js'
import {crValidator, invalidText, type Cause, type CrValidator} from './schema.js'
import {authorize, forbiddenMessage, rulesReview, type Attributes, type UserInfo} from './auth.js'
import {Faults} from './faults.js'
import {openApiV2, openApiV3Root, groupVersionDocument, gvPath} from './openapi.js'
import {applyFields, builtinListTypes, describePath, recordUpdate, schemaListTypes, type Conflict, type ListTypes} from './managed.js'
import {jsonPatch, mergePatch, PatchError, strategicMergePatch} from './patch.js'
import type {Pki} from './pki.js'
import {decodeProtobufBody, ProtobufError} from './protobuf.js'
import {tokenReviewResponse} from './tokenreview.js'
import {builtinResources, groupVersionOf, resourcesFromCrd, type Crd, type ResourceDef} from './registry.js'
import {matchesFields, matchesLabels, parseFieldSelector, parseLabelSelector, SelectorError} from './selectors.js'
import {ApiError, alreadyExists, badRequest, conflict, methodNotAllowed, notFound, pathNotFound, qualified, statusBody} from './status.js'
import {resourceKey, type Store, type KubeObj, type StoreEvent} from './store.js'
import {toTable} from './table.js'
import {handlePortForward, type PortAcceptor} from './portforward.js'
import {boundToken, legacyToken, verifyToken} from './tokens.js'
import {Timers} from './timers.js'

type Json = Record<string, unknown>

export interface RequestRecord {
  method: string
  path: string
  query: string
  user?: string
  status: number
  userAgent?: string
  /** Content-Type and Accept headers, to see which calls a client sends as protobuf. */
  contentType?: string
  accept?: string
}

export interface PodProxyRequest {
  namespace: string
  pod: string
  port: string
  path: string
  query: URLSearchParams
}

export interface PodProxyAnswer {
  status: number
  body: string
  contentType?: string
}

export interface ApiServerOptions {
  pki: Pki
  store: Store
  /** Kubernetes version reported by /version, e.g. `v1.32.0`. Below 1.24 service accounts get token Secrets automatically. */
  gitVersion: string
  /** Delay before the token controller fills a service-account-token Secret; `false` disables the controller. */
  tokenControllerDelayMs: number | false
  /** How long a continue token stays valid. */
  continueTtlMs: number
  /** Answers pod proxy requests (the mesh simulation's istiod debug endpoints). */
  podProxy?: (req: PodProxyRequest) => PodProxyAnswer | Promise<PodProxyAnswer | undefined> | undefined
  /** Called with every credential the server issues, so the suite can check none leaks. */
  onSecret?: (secret: string) => void
  /** What listens on a pod's port, for pods/portforward (portforward.ts); undefined = connection refused. */
  portForward?: (namespace: string, pod: string, port: number) => PortAcceptor | undefined
}

const SA_TOKEN_TYPE = 'kubernetes.io/service-account-token'
const FOREGROUND = 'foregroundDeletion'
/** Built-in registries with ReturnDeletedObject: true (pkg/registry/core/{pod,serviceaccount}/storage). */
const RETURNS_DELETED_OBJECT = new Set(['pods', 'serviceaccounts'])

type Validation = 'Strict' | 'Warn' | 'Ignore'

interface WriteOptions {
  dryRun?: boolean
  manager?: string
  validation?: Validation
  /** Filled with kube-apiserver's warnings (unknown fields with fieldValidation=Warn). */
  warnings?: string[]
  fromApply?: boolean
}

/**
 * `fieldValidation`: Strict, Warn (the default when absent or empty) or Ignore; anything else is
 * the 422 of apimachinery's ValidateFieldValidation on the verb's options kind.
 */
function fieldValidation(q: URLSearchParams, verb: string): Validation {
  const v = q.get('fieldValidation') || 'Warn'
  if (v === 'Strict' || v === 'Warn' || v === 'Ignore') return v
  const kind = verb === 'create' ? 'CreateOptions' : verb === 'update' ? 'UpdateOptions' : 'PatchOptions'
  const message = `Unsupported value: ${JSON.stringify(v)}: supported values: "", "Ignore", "Strict", "Warn"`
  throw new ApiError(422, 'Invalid', `${kind}.meta.k8s.io "" is invalid: fieldValidation: ${message}`, {
    group: 'meta.k8s.io',
    kind,
    causes: [{reason: 'FieldValueNotSupported', message, field: 'fieldValidation'}],
  })
}

interface DeleteOptions {
  propagationPolicy?: 'Background' | 'Foreground' | 'Orphan'
  preconditions?: {uid?: string; resourceVersion?: string}
}

function versionPriority(v: string): number[] {
  const m = /^v(\d+)(?:(alpha|beta)(\d+))?$/.exec(v)
  if (!m) return [0, 0, 0]
  return [m[2] === undefined ? 3 : m[2] === 'beta' ? 2 : 1, Number(m[1]), Number(m[3] ?? 0)]
}

function compareVersions(a: string, b: string): number {
  const pa = versionPriority(a)
  const pb = versionPriority(b)
  for (let i = 0; i < 3; i++) if (pa[i] !== pb[i]) return pb[i]! - pa[i]!
  return a.localeCompare(b)
}

function now(): string {
  return new Date().toISOString().replace(/\.\d+Z$/, 'Z')
}

interface Route {
  def: ResourceDef
  namespace?: string
  name?: string
  subresource?: string
  /** Path after a pods/proxy subresource. */
  rest: string
}

interface Continue {
  rv: number
  key: string
  iat: number
  /** The list snapshot the pages come from (kept by the server until the token expires). */
  snap?: string
}

/** A JSON body already serialized (a list joined from its objects' kept texts). */
class JsonText {
  constructor(readonly text: string) {}
}

/** What a handler answers; `warnings` become `Warning: 299 - "..."` headers. */
interface Answer {
  status: number
  body: unknown
  contentType?: string
  warnings?: string[]
}

/** The objects one paged list walks through: every page of it comes from this one snapshot. */
interface Snapshot {
  rv: number
  iat: number
  keys: string[]
  objects: KubeObj[]
}

/**
 * A boolean query parameter as kube-apiserver converts it (apimachinery runtime
 * Convert_Slice_string_To_bool): absent is false; "false" (any case) and "0" are false; anything
 * else, even an empty value, is true.
 */
export function queryBool(q: URLSearchParams, name: string): boolean {
  const v = q.get(name)
  if (v === null) return false
  return !(v === '0' || v.toLowerCase() === 'false')
}

export class ApiServer {
  readonly faults = new Faults()
  readonly requests: RequestRecord[] = []
  private readonly resources: ResourceDef[] = builtinResources()
  private readonly users = new Map<string, UserInfo>()
  private readonly strictValidators = new WeakMap<ResourceDef, CrValidator>()
  private server?: Server
  private readonly timers = new Timers()
  private readonly watchers = new Set<ServerResponse>()
  private clusterIp = 10
  /** Paged lists in progress: each continue token reads from the snapshot its first page took. */
  private readonly snapshots = new Map<string, Snapshot>()
  /** How often a watch with allowWatchBookmarks gets a BOOKMARK (kube-apiserver: about once a minute). */
  bookmarkIntervalMs = 60_000
  url = ''

  constructor(readonly options: ApiServerOptions) {
    const store = options.store
    for (const def of this.resources) store.kinds.set(resourceKey(def.group, def.plural), def.kind)
    store.onEvent((e) => this.controllers(e))
  }

  get store(): Store {
    return this.options.store
  }

  addUser(token: string, user: UserInfo): void {
    this.users.set(token, user)
  }

  /** Registers a CRD's types (as the apiextensions controller does when a CRD is created). */
  registerCrd(crd: Crd): void {
    this.unregisterCrd(crd.spec.group, crd.spec.names.plural)
    this.resources.push(...resourcesFromCrd(crd))
    this.store.kinds.set(resourceKey(crd.spec.group, crd.spec.names.plural), crd.spec.names.kind)
  }

  private unregisterCrd(group: string, plural: string): void {
    for (let i = this.resources.length - 1; i >= 0; i--) {
      if (this.resources[i]!.crd && this.resources[i]!.group === group && this.resources[i]!.plural === plural) this.resources.splice(i, 1)
    }
  }

  /** Creates a CRD object in storage and serves its types. */
  installCrd(crd: Crd): void {
    const key = resourceKey('apiextensions.k8s.io', 'customresourcedefinitions')
    const existing = this.store.get(key, undefined, crd.metadata.name)
    const obj = this.withCrdStatus({apiVersion: 'apiextensions.k8s.io/v1', kind: 'CustomResourceDefinition', ...(crd as unknown as KubeObj)})
    if (existing) this.store.update(key, {...obj, metadata: {...existing.metadata, ...obj.metadata}})
    else this.store.create(key, 'CustomResourceDefinition', obj)
  }

  resourceDefs(): readonly ResourceDef[] {
    return this.resources
  }

  async listen(): Promise<string> {
    const server = createServer({key: this.options.pki.keyPem, cert: this.options.pki.certPem}, (req, res) => {
      this.handle(req, res).catch((err: unknown) => {
        if (!res.headersSent) this.sendError(res, new ApiError(500, 'InternalError', `Internal error occurred: ${(err as Error).message}`))
        else res.destroy()
      })
    })
    // Long, like kube-apiserver's: a short idle timer can fire right after a test's long synchronous
    // burst (filling the store) and reset a socket the client is just reusing (ECONNRESET).
    server.keepAliveTimeout = 60_000
    server.on('connection', (socket: import('node:net').Socket) => {
      this.connections.add(socket)
      socket.once('close', () => this.connections.delete(socket))
    })
    server.on('upgrade', (req: IncomingMessage, socket: import('node:net').Socket, head: Buffer) => void this.upgrade(req, socket, head))
    await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
    this.server = server
    const address = server.address()
    if (!address || typeof address === 'string') throw new Error('no address')
    this.url = `https://127.0.0.1:${address.port}`
    return this.url
  }

  /**
   * Every TCP connection, as accepted. closeAllConnections() closes only those the HTTP layer holds:
   * not upgraded ones (port-forwards), nor one whose TLS handshake never finished, and either keeps
   * server.close() waiting. A stopping API server drops them all; a client that leaves one open (a
   * command run inside the test process, where no process exit ends it) must not keep the cluster
   * from stopping.
   */
  private readonly connections = new Set<import('node:net').Socket>()

  async close(): Promise<void> {
    this.timers.clear()
    for (const w of this.watchers) w.end()
    const server = this.server
    if (!server) return
    await new Promise<void>((resolve) => {
      server.close(() => resolve())
      server.closeAllConnections()
      for (const socket of this.connections) socket.destroy()
    })
  }

  /**
   * Ends every open watch, as kube-apiserver does when a watch's timeout runs out or the server
   * restarts: clients resume from the last resourceVersion they saw (or re-list after a 410).
   */
  closeWatches(): void {
    for (const w of [...this.watchers]) w.end()
  }

  // ---- request handling ----

  private async handle(req: IncomingMessage, res: ServerResponse): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://test')
    const record: RequestRecord = {
      method: req.method ?? 'GET',
      path: url.pathname,
      query: url.search,
      status: 0,
      userAgent: req.headers['user-agent'],
      contentType: req.headers['content-type'],
      accept: req.headers.accept,
    }
    this.requests.push(record)
    if (this.requests.length > 20000) this.requests.splice(0, 10000)
    res.on('finish', () => (record.status = res.statusCode))
    res.on('close', () => (record.status ||= res.statusCode))

    const user = this.authenticate(req)
    if (!user) {
      this.sendError(res, new ApiError(401, 'Unauthorized', 'Unauthorized'))
      return
    }
    record.user = user.name

    const fault = this.faults.take(record.method, url.pathname, url.searchParams)
    if (fault?.latencyMs) await new Promise((r) => setTimeout(r, fault.latencyMs))
    if (fault?.reset) {
      req.socket.destroy()
      return
    }
    if (fault?.status) {
      if (fault.retryAfterSeconds !== undefined) res.setHeader('Retry-After', String(fault.retryAfterSeconds))
      const reason = {429: 'TooManyRequests', 500: 'InternalError', 503: 'ServiceUnavailable', 403: 'Forbidden', 504: 'Timeout', 410: 'Expired'}[fault.status] ?? 'Unknown'
      this.sendError(res, new ApiError(fault.status, reason, fault.message ?? `injected fault: ${fault.status}`))
      return
    }
    if (fault?.expireContinue && url.searchParams.get('continue')) {
      this.sendError(res, expiredContinue())
      return
    }
    const body = await readBody(req)
    try {
      const result = await this.route(req, res, url, body, user)
      if (result === undefined) return // streamed (watch, proxy)
      // Proxied non-JSON answers (e.g. an istiod debug page) pass through as they are.
      const raw = typeof result.body === 'string' && result.contentType !== undefined && !result.contentType.startsWith('application/json')
      const text = fault?.malformed ? '{"kind": "Status", "apiVersion": ' : raw ? (result.body as string) : result.body instanceof JsonText ? result.body.text : JSON.stringify(result.body)
      // kube-apiserver's warnings (RFC 7234 style, code 299), e.g. unknown fields with fieldValidation=Warn.
      if (result.warnings?.length)
        res.setHeader(
          'Warning',
          result.warnings.map((w) => `299 - ${JSON.stringify(w)}`),
        )
      res.writeHead(result.status, {'Content-Type': result.contentType ?? 'application/json', 'Content-Length': Buffer.byteLength(text)})
      if (fault?.truncate) {
        res.write(text.slice(0, Math.floor(text.length / 2)))
        res.socket?.destroy()
        return
      }
      res.end(text)
    } catch (err) {
      if (err instanceof ApiError) this.sendError(res, err)
      else if (err instanceof SelectorError) this.sendError(res, badRequest(`unable to parse requirement: ${err.message}`))
      else if (err instanceof PatchError) this.sendError(res, new ApiError(err.status, err.status === 400 ? 'BadRequest' : 'Invalid', err.message))
      else throw err
    }
  }

  /** WebSocket upgrades: pods/portforward (portforward.ts). */
  private async upgrade(req: IncomingMessage, socket: import('node:net').Socket, head: Buffer): Promise<void> {
    const url = new URL(req.url ?? '/', 'https://test')
    const user = this.authenticate(req)
    const record: RequestRecord = {method: req.method ?? 'GET', path: url.pathname, query: url.search, status: 0, userAgent: req.headers['user-agent'], user: user?.name}
    this.requests.push(record)
    const fault = this.faults.take(record.method, url.pathname, url.searchParams)
    if (fault?.latencyMs) await new Promise((r) => setTimeout(r, fault.latencyMs))
    if (fault?.reset || fault?.truncate) return void socket.destroy()
    if (fault?.status) {
      record.status = fault.status
      const body = JSON.stringify(statusBody(new ApiError(fault.status, 'Unavailable', fault.message ?? `injected fault: ${fault.status}`)))
      return void socket.end(
        `HTTP/1.1 ${fault.status} Fault\r\nContent-Type: application/json\r\nContent-Length: ${Buffer.byteLength(body)}\r\n${fault.retryAfterSeconds !== undefined ? `Retry-After: ${fault.retryAfterSeconds}\r\n` : ''}Connection: close\r\n\r\n${body}`,
      )
    }
    record.status = handlePortForward(req, socket, head, {
      user,
      authorize: (attrs) => authorize(this.store, user!, attrs),
      forbidden: (attrs) => new ApiError(403, 'Forbidden', forbiddenMessage(user!, attrs, 'pods'), {name: attrs.name, kind: 'pods'}),
      podExists: (ns, name) => {
        const pod = this.store.get(resourceKey('', 'pods'), ns, name)
        return pod ? {uid: pod.metadata.uid ?? ''} : undefined
      },
      connect: (ns, pod, port) => this.options.portForward?.(ns, pod, port),
      minor: Number(/^v\d+\.(\d+)/.exec(this.options.gitVersion)?.[1] ?? 0),
    })
  }

  private sendError(res: ServerResponse, err: ApiError): void {
    const text = JSON.stringify(statusBody(err))
    res.writeHead(err.code, {'Content-Type': 'application/json', 'Content-Length': Buffer.byteLength(text)})
    res.end(text)
  }

  private authenticate(req: IncomingMessage): UserInfo | undefined {
    const header = req.headers.authorization ?? ''
    const m = /^Bearer\s+(\S+)$/i.exec(header)
    if (!m) return undefined
    const token = m[1]!
    const user = this.users.get(token)
    if (user) return user
    const claims = verifyToken(this.options.pki, token)
    if (!claims) return undefined
    const sub = /^system:serviceaccount:([^:]+):([^:]+)$/.exec(claims.sub)
    if (!sub) return undefined
    const sa = this.store.get(resourceKey('', 'serviceaccounts'), sub[1], sub[2]!)
    const uid = claims['kubernetes.io']?.serviceaccount.uid ?? claims['kubernetes.io/serviceaccount/service-account.uid']
    if (!sa || sa.metadata.uid !== uid) return undefined
    // kubernetes pkg/serviceaccount/legacy.go: a secret-based token is valid only while its Secret
    // exists, is not being deleted, and still holds that very token.
    const secretName = claims['kubernetes.io/serviceaccount/secret.name']
    if (secretName !== undefined) {
      const secret = this.store.get(resourceKey('', 'secrets'), sub[1], secretName)
      const held = (secret?.data as Json | undefined)?.token
      if (!secret || secret.metadata.deletionTimestamp || typeof held !== 'string' || Buffer.from(held, 'base64').toString('utf8') !== token) return undefined
    }
    return {name: claims.sub, groups: ['system:serviceaccounts', `system:serviceaccounts:${sub[1]}`, 'system:authenticated']}
  }

  private authorizeOrThrow(user: UserInfo, attrs: Attributes, def?: ResourceDef): void {
    if (authorize(this.store, user, attrs)) return
    const q = def ? qualified(def.group, def.plural) : ''
    throw new ApiError(
      403,
      'Forbidden',
      forbiddenMessage(user, attrs, attrs.subresource && def ? `${q}` : q),
      attrs.path ? undefined : {name: attrs.name, group: attrs.group || undefined, kind: attrs.resource},
    )
  }

  private async route(req: IncomingMessage, res: ServerResponse, url: URL, body: Buffer, user: UserInfo): Promise<Answer | undefined> {
    const path = url.pathname.replace(/\/+$/, '') || '/'
    const segs = path.split('/').filter(Boolean)
    const method = req.method ?? 'GET'
    const ok = (b: unknown, status = 200) => ({status, body: b})

    if (
      segs[0] === 'version' ||
      segs[0] === 'openapi' ||
      path === '/api' ||
      path === '/apis' ||
      (segs[0] === 'apis' && segs.length <= 3 && method === 'GET') ||
      (path === '/api/v1' && method === 'GET')
    ) {
      this.authorizeOrThrow(user, {verb: 'get', group: '', resource: '', path})
    }
    if (path === '/version') return ok(this.versionInfo())
    if (path === '/healthz' || path === '/readyz' || path === '/livez') return {status: 200, body: 'ok', contentType: 'text/plain'}
    if (path === '/api') return ok({kind: 'APIVersions', versions: ['v1'], serverAddressByClientCIDRs: [{clientCIDR: '0.0.0.0/0', serverAddress: url.host}]})
    if (path === '/apis') return ok({kind: 'APIGroupList', apiVersion: 'v1', groups: this.groups()})
    if (segs[0] === 'apis' && segs.length === 2) {
      const group = this.groups().find((g) => g.name === segs[1])
      if (!group) throw pathNotFound()
      return ok({kind: 'APIGroup', apiVersion: 'v1', ...group})
    }
    if ((segs[0] === 'api' && segs.length === 2) || (segs[0] === 'apis' && segs.length === 3)) {
      const [group, version] = segs[0] === 'api' ? ['', segs[1]!] : [segs[1]!, segs[2]!]
      const defs = this.resources.filter((d) => d.group === group && d.version === version)
      if (defs.length === 0) throw pathNotFound()
      return ok(this.resourceList(group, version, defs))
    }
    if (segs[0] === 'openapi') return ok(this.openapi(segs))

    const route = this.parseResourcePath(segs)
    if (!route) throw pathNotFound()
    return this.resourceRequest(req, res, url, body, user, route)
  }

  private versionInfo(): Json {
    const m = /^v(\d+)\.(\d+)/.exec(this.options.gitVersion)
    return {
      major: m?.[1] ?? '1',
      minor: m?.[2] ?? '32',
      gitVersion: this.options.gitVersion,
      gitCommit: '0000000000000000000000000000000000000000',
      gitTreeState: 'clean',
      buildDate: '2024-12-11T00:00:00Z',
      goVersion: 'go1.23.3',
      compiler: 'gc',
      platform: 'linux/amd64',
    }
  }

  private groups(): Json[] {
    const byGroup = new Map<string, string[]>()
    for (const d of this.resources) {
      if (!d.group) continue
      const versions = byGroup.get(d.group) ?? []
      if (!versions.includes(d.version)) versions.push(d.version)
      byGroup.set(d.group, versions)
    }
    return [...byGroup].map(([name, versions]) => {
      const sorted = versions.sort(compareVersions).map((v) => ({groupVersion: `${name}/${v}`, version: v}))
      return {name, versions: sorted, preferredVersion: sorted[0]}
    })
  }

  private resourceList(group: string, version: string, defs: ResourceDef[]): Json {
    const resources: Json[] = []
    for (const d of defs) {
      resources.push({
        name: d.plural,
        singularName: d.singular,
        namespaced: d.namespaced,
        kind: d.kind,
        verbs: d.verbs,
        ...(d.shortNames.length ? {shortNames: d.shortNames} : {}),
        ...(d.categories.length ? {categories: d.categories} : {}),
      })
      if (d.statusSubresource) resources.push({name: `${d.plural}/status`, singularName: '', namespaced: d.namespaced, kind: d.kind, verbs: ['get', 'patch', 'update']})
      if (d.subresources.includes('token'))
        resources.push({name: `${d.plural}/token`, singularName: '', namespaced: true, group: 'authentication.k8s.io', version: 'v1', kind: 'TokenRequest', verbs: ['create']})
      if (d.subresources.includes('proxy'))
        resources.push({name: `${d.plural}/proxy`, singularName: '', namespaced: true, kind: 'PodProxyOptions', verbs: ['create', 'delete', 'get', 'patch', 'update']})
    }
    return {kind: 'APIResourceList', apiVersion: 'v1', groupVersion: group ? `${group}/${version}` : version, resources}
  }

  private openapi(segs: string[]): unknown {
    if (segs[1] === 'v2') return openApiV2(this.resources)
    if (segs[1] !== 'v3') throw pathNotFound()
    if (segs.length === 2) return openApiV3Root(this.resources)
    const gv = segs.slice(2).join('/')
    const defs = this.resources.filter((d) => gvPath(d) === gv)
    if (defs.length === 0) throw pathNotFound()
    return groupVersionDocument(defs)
  }

  private parseResourcePath(segs: string[]): Route | undefined {
    let group: string
    let version: string
    let rest: string[]
    if (segs[0] === 'api' && segs.length >= 3) [group, version, rest] = ['', segs[1]!, segs.slice(2)]
    else if (segs[0] === 'apis' && segs.length >= 4) [group, version, rest] = [segs[1]!, segs[2]!, segs.slice(3)]
    else return undefined
    const find = (plural: string) => this.resources.find((d) => d.group === group && d.version === version && d.plural === plural)
    let namespace: string | undefined
    if (rest[0] === 'namespaces' && rest.length >= 3 && find(rest[2]!)?.namespaced) {
      namespace = rest[1]
      rest = rest.slice(2)
    }
    const def = find(rest[0]!)
    if (!def) return undefined
    if (def.namespaced && namespace === undefined && rest.length > 1) return undefined
    return {def, namespace, name: rest[1], subresource: rest[2], rest: rest.slice(3).join('/')}
  }

  private async resourceRequest(req: IncomingMessage, res: ServerResponse, url: URL, body: Buffer, user: UserInfo, route: Route): Promise<Answer | undefined> {
    const {def, namespace, subresource} = route
    const method = req.method ?? 'GET'
    const q = url.searchParams
    const watch = queryBool(q, 'watch')
    // pods/proxy: the name carries an optional scheme and port, `https:pod:15014`.
    let name = route.name
    let proxyPort = ''
    if (subresource === 'proxy' && name) {
      const parts = name.split(':')
      if (parts.length === 3) parts.shift()
      name = parts[0]
      proxyPort = parts[1] ?? ''
    }
    const verb =
      method === 'GET'
        ? name
          ? 'get'
          : watch
            ? 'watch'
            : 'list'
        : method === 'POST'
          ? 'create'
          : method === 'PUT'
            ? 'update'
            : method === 'PATCH'
              ? 'patch'
              : method === 'DELETE'
                ? name
                  ? 'delete'
                  : 'deletecollection'
                : ''
    if (!verb) throw methodNotAllowed()
    this.authorizeOrThrow(user, {verb, group: def.group, resource: def.plural, subresource, namespace, name}, def)

    const key = resourceKey(def.group, def.plural)
    const dryRun = q.getAll('dryRun').includes('All')
    if (subresource === 'proxy') return this.podProxy(route, name!, proxyPort, url)
    if (subresource === 'token' && def.plural === 'serviceaccounts') {
      if (method !== 'POST') throw methodNotAllowed()
      return this.tokenRequest(namespace!, name!, parseBody(body, req))
    }
    if (def.kind === 'SelfSubjectAccessReview') return this.accessReview(user, parseBody(body, req))
    if (def.kind === 'SelfSubjectRulesReview') return this.selfRulesReview(user, parseBody(body, req))
    if (def.kind === 'SelfSubjectReview') return selfReview(user)
    if (def.kind === 'TokenReview') return tokenReviewResponse(this.options.pki, this.store, parseBody(body, req))
    if (subresource && subresource !== 'status') throw pathNotFound()
    if (subresource === 'status' && !def.statusSubresource) throw pathNotFound()
    if (namespace !== undefined && def.plural !== 'namespaces' && ['create', 'update', 'patch'].includes(verb)) {
      const ns = this.store.get(resourceKey('', 'namespaces'), undefined, namespace)
      if (!ns) throw notFound('', 'namespaces', namespace)
      // The NamespaceLifecycle admission plugin: nothing new in a namespace being deleted.
      if (verb === 'create' && ns.metadata.deletionTimestamp) {
        const objName = (tryParse(body, req) as KubeObj | undefined)?.metadata?.name ?? ''
        throw new ApiError(
          403,
          'Forbidden',
          `${qualified(def.group, def.plural)}${objName ? ` "${objName}"` : ''} is forbidden: unable to create new content in namespace ${namespace} because it is being terminated`,
          {name: objName || undefined, group: def.group || undefined, kind: def.plural},
        )
      }
    }
    const validation = ['create', 'update', 'patch'].includes(verb) ? fieldValidation(q, verb) : 'Ignore'
    const warnings: string[] = []

    switch (verb) {
      case 'get': {
        const obj = this.store.get(key, namespace, name!)
        if (!obj) throw notFound(def.group, def.plural, name!)
        // A single object as a Table too (kubectl get KIND NAME asks for one, as for a list).
        if (/as=Table/.test(req.headers.accept ?? '')) return {status: 200, body: toTable(def, [obj], {resourceVersion: obj.metadata.resourceVersion ?? ''}, q.get('includeObject'))}
        return {status: 200, body: this.present(def, obj)}
      }
      case 'list':
        return {status: 200, body: this.list(def, namespace, q, req.headers.accept ?? '')}
      case 'watch':
        this.watch(def, namespace, q, req, res)
        return undefined
      case 'create': {
        const obj = parseBody(body, req) as KubeObj
        const created = this.create(def, namespace, obj, {dryRun, manager: q.get('fieldManager') ?? managerFromAgent(req), validation, warnings})
        return {status: 201, body: this.present(def, created), warnings}
      }
      case 'update': {
        const obj = parseBody(body, req) as KubeObj
        if (obj?.metadata?.name !== undefined && obj.metadata.name !== name) throw badRequest(`the name of the object (${obj.metadata.name}) does not match the name on the URL (${name})`)
        // Custom resources allow no unconditional update (the CRD strategy's AllowUnconditionalUpdate
        // is false): registry/generic/registry/store.go answers 422 for a PUT without resourceVersion.
        if (def.crd && !obj?.metadata?.resourceVersion && this.store.get(key, namespace, name!)) {
          throw new ApiError(422, 'Invalid', `${qualified(def.group, def.plural)} "${name}" is invalid: metadata.resourceVersion: Invalid value: 0x0: must be specified for an update`, {
            name,
            group: def.group || undefined,
            kind: def.plural,
            causes: [{reason: 'FieldValueInvalid', message: 'Invalid value: 0x0: must be specified for an update', field: 'metadata.resourceVersion'}],
          })
        }
        return {
          status: 200,
          body: this.present(def, this.update(def, namespace, name!, obj, {dryRun, subresource, manager: q.get('fieldManager') ?? managerFromAgent(req), validation, warnings})),
          warnings,
        }
      }
      case 'patch':
        return this.patch(def, namespace, name!, body, req, q, subresource, dryRun)
      case 'delete': {
        const options = body.length > 0 ? (parseBody(body, req) as DeleteOptions) : {}
        if (q.get('propagationPolicy')) options.propagationPolicy = q.get('propagationPolicy') as DeleteOptions['propagationPolicy']
        return this.deleteRequest(def, namespace, name!, options, dryRun)
      }
      case 'deletecollection': {
        const labels = parseLabelSelector(q.get('labelSelector'))
        const fields = parseFieldSelector(q.get('fieldSelector'), def.kind)
        const victims = this.store.list(key, namespace).filter((o) => matchesLabels(o.metadata.labels, labels) && matchesFields(o, def.kind, fields))
        const rv = String(this.store.resourceVersion)
        const options = body.length > 0 ? (parseBody(body, req) as DeleteOptions) : {}
        for (const v of victims) this.deleteRequest(def, v.metadata.namespace, v.metadata.name, {propagationPolicy: options.propagationPolicy}, dryRun)
        // registry/generic/registry/store.go DeleteCollection answers with the list it deleted.
        return {status: 200, body: {kind: `${def.kind}List`, apiVersion: groupVersionOf(def), metadata: {resourceVersion: rv}, items: victims.map((o) => this.present(def, o))}}
      }
    }
    throw methodNotAllowed()
  }

  /** The object as served by this version (apiVersion set to the requested group-version). */
  private present(def: ResourceDef, obj: KubeObj): KubeObj {
    return {...obj, apiVersion: groupVersionOf(def), kind: def.kind}
  }

  /**
   * JSON text of a stored object as one version presents it, kept with the object: the store replaces
   * an object on every write (never mutates it), so a written object gets a new text. kube-apiserver
   * serves lists from its watch cache (staging/src/k8s.io/apiserver/pkg/storage/cacher) and keeps an
   * object's serializations, one per encoding, to send the same event to many watchers
   * (cacher/caching_object.go, cachingObject); here the kept text serves lists too, so the bench's
   * 5 x 2,000-object lists do not cost this one-thread simulation a JSON.stringify of every object per
   * request. Bytes are unchanged (test/cluster/serialization-cache.test.ts).
   */
  private readonly texts = new WeakMap<KubeObj, Map<ResourceDef, string>>()
  private presentText(def: ResourceDef, obj: KubeObj): string {
    let byDef = this.texts.get(obj)
    if (!byDef) this.texts.set(obj, (byDef = new Map()))
    let text = byDef.get(def)
    if (text === undefined) byDef.set(def, (text = JSON.stringify(this.present(def, obj))))
    return text
  }

  // ---- list, paging, watch ----

  private list(def: ResourceDef, namespace: string | undefined, q: URLSearchParams, accept: string): Json | JsonText {
    const key = resourceKey(def.group, def.plural)
    const labels = parseLabelSelector(q.get('labelSelector'))
    const fields = parseFieldSelector(q.get('fieldSelector'), def.kind)
    const limit = Number(q.get('limit') ?? 0)
    if (!Number.isInteger(limit) || limit < 0) throw badRequest(`invalid limit ${q.get('limit')}`)
    for (const [id, snap] of this.snapshots) if (Date.now() - snap.iat > this.options.continueTtlMs) this.snapshots.delete(id)
    const token = q.get('continue')
    let snapshot: Snapshot
    let start: string | undefined
    let snapId: string
    if (token) {
      const c = decodeContinue(token)
      const kept = c.snap ? this.snapshots.get(c.snap) : undefined
      if (Date.now() - c.iat > this.options.continueTtlMs || !kept) throw expiredContinue()
      snapshot = kept
      snapId = c.snap!
      start = c.key
    } else {
      // The first page fixes the list's resourceVersion: later pages read the objects as they were
      // then (etcd serves them at that revision), not as they are now.
      const keys: string[] = []
      const objects: KubeObj[] = []
      for (const k of this.store.keysFrom(key, namespace, undefined)) {
        if (namespace !== undefined && !k.startsWith(`${namespace}/`)) break
        keys.push(k)
        objects.push(this.store.byKey(key, k)!)
      }
      snapshot = {rv: this.store.resourceVersion, iat: Date.now(), keys, objects}
      snapId = randomBytes(8).toString('hex')
    }
    const rv = snapshot.rv
    let i = 0
    if (start !== undefined) {
      let lo = 0
      let hi = snapshot.keys.length
      while (lo < hi) {
        const mid = (lo + hi) >> 1
        if (snapshot.keys[mid]! <= start) lo = mid + 1
        else hi = mid
      }
      i = lo
    }
    const items: KubeObj[] = []
    let last: string | undefined
    let more = false
    for (; i < snapshot.keys.length; i++) {
      if (limit > 0 && items.length >= limit) {
        more = true
        break
      }
      const k = snapshot.keys[i]!
      const obj = snapshot.objects[i]!
      if (!matchesLabels(obj.metadata.labels, labels) || !matchesFields(obj, def.kind, fields)) continue
      items.push(obj)
      last = k
    }
    const metadata: Json = {resourceVersion: String(rv)}
    if (more && last) {
      if (!token) this.snapshots.set(snapId, snapshot)
      metadata.continue = encodeContinue({rv, key: last, iat: snapshot.iat, snap: snapId})
      if (labels.length === 0 && fields.length === 0) metadata.remainingItemCount = snapshot.keys.length - i
    }
    if (/as=Table/.test(accept)) {
      return toTable(def, items, metadata as {resourceVersion: string}, q.get('includeObject'))
    }
    // The same bytes as JSON.stringify of the list object, joined from the objects' kept texts.
    const head = JSON.stringify({kind: `${def.kind}List`, apiVersion: groupVersionOf(def), metadata})
    return new JsonText(`${head.slice(0, -1)},"items":[${items.map((o) => this.presentText(def, o)).join(',')}]}`)
  }

  private watch(def: ResourceDef, namespace: string | undefined, q: URLSearchParams, req: IncomingMessage, res: ServerResponse): void {
    const key = resourceKey(def.group, def.plural)
    const labels = parseLabelSelector(q.get('labelSelector'))
    const fields = parseFieldSelector(q.get('fieldSelector'), def.kind)
    const asTable = /as=Table/.test(req.headers.accept ?? '')
    const matches = (o: KubeObj) => (namespace === undefined || o.metadata.namespace === namespace) && matchesLabels(o.metadata.labels, labels) && matchesFields(o, def.kind, fields)
    const render = (o: KubeObj) => (asTable ? toTable(def, [o], {resourceVersion: o.metadata.resourceVersion ?? ''}, q.get('includeObject')) : this.present(def, o))
    res.writeHead(200, {'Content-Type': 'application/json', 'Transfer-Encoding': 'chunked'})
    // Headers go out at once, as kube-apiserver flushes them: a client waiting for the response
    // (and its status code) must not wait for the first event.
    res.flushHeaders()
    const send = (type: string, object: unknown) => {
      if (!res.writableEnded) res.write(JSON.stringify({type, object}) + '\n')
    }
    // An object that changes across the selector's edge enters (ADDED) or leaves (DELETED) the
    // watch, as the watch cache's filter does (storage/cacher: cacheWatcher.convertToWatchEvent).
    const deliver = (e: StoreEvent) => {
      if (e.resource !== key) return
      const now = matches(e.object)
      const before = e.type === 'MODIFIED' && e.previous ? matches(e.previous) : now
      if (e.type === 'MODIFIED' && now !== before) send(now ? 'ADDED' : 'DELETED', render(e.object))
      else if (now) send(e.type, render(e.object))
    }
    const rvParam = q.get('resourceVersion')
    if (rvParam && rvParam !== '0') {
      const events = this.store.eventsSince(Number(rvParam))
      if (!events) {
        send('ERROR', statusBody(new ApiError(410, 'Expired', `too old resource version: ${rvParam} (${this.store.oldestResourceVersion})`)))
        res.end()
        return
      }
      for (const e of events) deliver(e)
    } else {
      for (const o of this.store.list(key, namespace)) if (matches(o)) send('ADDED', render(o))
    }
    const stop = this.store.onEvent(deliver)
    this.watchers.add(res)
    // allowWatchBookmarks: BOOKMARK events carry only the current resourceVersion, so a client can
    // resume from there instead of from an event that may expire meanwhile.
    let bookmarks: NodeJS.Timeout | undefined
    if (queryBool(q, 'allowWatchBookmarks')) {
      bookmarks = setInterval(() => send('BOOKMARK', {kind: def.kind, apiVersion: groupVersionOf(def), metadata: {resourceVersion: String(this.store.resourceVersion)}}), this.bookmarkIntervalMs)
      bookmarks.unref()
    }
    const end = () => {
      stop()
      if (bookmarks) clearInterval(bookmarks)
      this.watchers.delete(res)
      if (!res.writableEnded) res.end()
    }
    const timeout = Number(q.get('timeoutSeconds') ?? 0)
    if (timeout > 0) this.timers.later(timeout * 1000, end)
    res.on('close', end)
  }

  // ---- writes ----

  private prepare(def: ResourceDef, namespace: string | undefined, obj: KubeObj, validation: Validation, warnings?: string[]): KubeObj {
    if (!obj || typeof obj !== 'object' || Array.isArray(obj) || typeof obj.metadata !== 'object' || obj.metadata === null) {
      throw badRequest(`Object 'metadata' is missing in '${JSON.stringify(obj)?.slice(0, 200)}'`)
    }
    if (obj.kind !== undefined && obj.kind !== def.kind)
      throw badRequest(`the API version in the data (${obj.apiVersion}) does not match the expected API version (${groupVersionOf(def)}) or kind ${obj.kind} is not ${def.kind}`)
    if (def.namespaced) {
      if (obj.metadata.namespace !== undefined && obj.metadata.namespace !== '' && obj.metadata.namespace !== namespace) {
        throw badRequest('the namespace of the provided object does not match the namespace sent on the request')
      }
      obj.metadata.namespace = namespace
    } else delete obj.metadata.namespace
    obj.apiVersion = groupVersionOf(def)
    obj.kind = def.kind
    if (obj.metadata.generateName && !obj.metadata.name) obj.metadata.name = obj.metadata.generateName + randomBytes(3).toString('hex').slice(0, 5)
    this.validate(def, obj, validation, warnings)
    return obj
  }

  private validate(def: ResourceDef, obj: KubeObj, validation: Validation, warnings?: string[]): void {
    const causes: Cause[] = []
    const name = obj.metadata.name
    if (!name) causes.push({reason: 'FieldValueRequired', field: 'metadata.name', message: 'Required value: name or generateName is required'})
    else {
      const problem = nameProblem(def.group === '' ? def.plural : '', name)
      if (problem) causes.push({reason: 'FieldValueInvalid', field: 'metadata.name', message: `Invalid value: ${JSON.stringify(name)}: ${problem}`})
    }
    if (def.validator) {
      if (validation !== 'Ignore') {
        let strictValidator = this.strictValidators.get(def)
        if (!strictValidator) {
          strictValidator = crValidator(def.schema!, {unknownFields: 'report'})
          this.strictValidators.set(def, strictValidator)
        }
        const unknown = strictValidator.validate(structuredClone(obj)).filter((c) => c.message.startsWith('unknown field'))
        if (unknown.length > 0 && validation === 'Strict')
          throw badRequest(`${def.kind} in version "${def.version}" cannot be handled as a ${def.kind}: strict decoding error: ${unknown.map((c) => c.message).join(', ')}`)
        // fieldValidation=Warn, kube-apiserver's default since 1.27: the fields are pruned, with a warning each.
        warnings?.push(...unknown.map((c) => c.message))
      }
      causes.push(...def.validator.validate(obj))
    }
    if (causes.length > 0) {
      throw new ApiError(422, 'Invalid', invalidText(def.kind, def.group, name ?? '', causes), {
        name,
        group: def.group || undefined,
        kind: def.kind,
        causes: causes.map((c) => ({reason: c.reason, message: c.message, field: c.field})),
      })
    }
  }

  /** Defaults kube-apiserver fills in (Service clusterIP and protocols, Secret stringData, Namespace phase). */
  private defaults(def: ResourceDef, obj: KubeObj, previous?: KubeObj): void {
    const o = obj as Json & KubeObj
    if (def.plural === 'secrets' && def.group === '') {
      const data = {...((o.data as Record<string, string>) ?? {})}
      for (const [k, v] of Object.entries((o.stringData as Record<string, string>) ?? {})) data[k] = Buffer.from(v).toString('base64')
      delete o.stringData
      o.data = data
      o.type ??= 'Opaque'
    }
    if (def.plural === 'services' && def.group === '') {
      const spec = ((o.spec as Json) ??= {})
      spec.type ??= 'ClusterIP'
      spec.clusterIP ??= (previous?.spec as Json | undefined)?.clusterIP ?? (spec.type === 'ExternalName' ? undefined : `10.96.${Math.floor(this.clusterIp / 250)}.${(this.clusterIp++ % 250) + 1}`)
      for (const p of (spec.ports as Json[] | undefined) ?? []) {
        p.protocol ??= 'TCP'
        p.targetPort ??= p.port
      }
      spec.sessionAffinity ??= 'None'
    }
    if (def.plural === 'namespaces' && def.group === '') {
      o.spec ??= {finalizers: ['kubernetes']}
      o.status = {phase: 'Active'}
      o.metadata.labels = {...o.metadata.labels, 'kubernetes.io/metadata.name': o.metadata.name}
    }
    if (def.plural === 'customresourcedefinitions') Object.assign(o, this.withCrdStatus(o))
  }

  private withCrdStatus(crd: KubeObj): KubeObj {
    const spec = crd.spec as Crd['spec']
    const t = now()
    return {
      ...crd,
      status: {
        acceptedNames: spec.names,
        conditions: [
          {type: 'NamesAccepted', status: 'True', reason: 'NoConflicts', message: 'no conflicts found', lastTransitionTime: t},
          {type: 'Established', status: 'True', reason: 'InitialNamesAccepted', message: 'the initial names have been accepted', lastTransitionTime: t},
        ],
        storedVersions: spec.versions.filter((v) => v.storage).map((v) => v.name),
      },
    }
  }

  create(def: ResourceDef, namespace: string | undefined, input: KubeObj, opts: WriteOptions = {}): KubeObj {
    const obj = this.prepare(def, namespace, structuredClone(input), opts.validation ?? 'Ignore', opts.warnings)
    const key = resourceKey(def.group, def.plural)
    if (this.store.get(key, obj.metadata.namespace, obj.metadata.name)) throw alreadyExists(def.group, def.plural, obj.metadata.name)
    if (def.crd && def.statusSubresource) delete (obj as Json).status
    for (const f of ['uid', 'resourceVersion', 'creationTimestamp', 'generation', 'deletionTimestamp'] as const) delete obj.metadata[f]
    this.defaults(def, obj)
    const tracked = opts.fromApply ? obj : (recordUpdate(undefined, obj as Json, opts.manager ?? 'unknown', groupVersionOf(def), listTypes(def)) as KubeObj)
    const created = this.store.create(key, def.kind, tracked, {dryRun: opts.dryRun})
    if (!opts.dryRun) this.afterWrite(def, created)
    return created
  }

  update(def: ResourceDef, namespace: string | undefined, name: string, input: KubeObj, opts: WriteOptions & {subresource?: string} = {}): KubeObj {
    const key = resourceKey(def.group, def.plural)
    const current = this.store.get(key, namespace, name)
    if (!current) throw notFound(def.group, def.plural, name)
    const obj = this.prepare(def, namespace, structuredClone(input), opts.validation ?? 'Ignore', opts.warnings)
    obj.metadata.name = name
    if (obj.metadata.resourceVersion && obj.metadata.resourceVersion !== current.metadata.resourceVersion) throw conflict(def.group, def.plural, name)
    if (obj.metadata.uid && obj.metadata.uid !== current.metadata.uid)
      throw new ApiError(409, 'Conflict', `Precondition failed: UID in precondition: ${obj.metadata.uid}, UID in object meta: ${current.metadata.uid}`)
    // Through /status only the status changes; through the main resource everything but the status.
    const status = opts.subresource === 'status' ? (obj as Json).status : def.statusSubresource ? (current as Json).status : (obj as Json).status
    const next: KubeObj = opts.subresource === 'status' ? {...current} : {...obj}
    delete (next as Json).status
    if (status !== undefined) (next as Json).status = status
    next.metadata = {...next.metadata, uid: current.metadata.uid, creationTimestamp: current.metadata.creationTimestamp}
    this.defaults(def, next, current)
    const tracked = opts.fromApply ? next : (recordUpdate(current as Json, next as Json, opts.manager ?? 'unknown', groupVersionOf(def), listTypes(def), opts.subresource) as KubeObj)
    const updated = this.store.update(key, tracked, {dryRun: opts.dryRun})
    if (!opts.dryRun) {
      this.afterWrite(def, updated)
      this.finalizersChanged(def, updated)
    }
    return updated
  }

  private patch(def: ResourceDef, namespace: string | undefined, name: string, body: Buffer, req: IncomingMessage, q: URLSearchParams, subresource: string | undefined, dryRun: boolean): Answer {
    const key = resourceKey(def.group, def.plural)
    const type = (req.headers['content-type'] ?? '').split(';')[0]!.trim()
    const current = this.store.get(key, namespace, name)
    const validation = fieldValidation(q, 'patch')
    const warnings: string[] = []
    if (type === 'application/apply-patch+yaml') {
      const manager = q.get('fieldManager')
      if (!manager) throw new ApiError(422, 'Invalid', 'PatchOptions.meta.k8s.io "" is invalid: fieldManager: Required value: is required for apply patch')
      const applied = parseBody(body, req, true) as Json
      const appliedMeta = (applied?.metadata ?? {}) as Json
      if (appliedMeta.name !== undefined && appliedMeta.name !== name) throw badRequest(`the name of the object (${appliedMeta.name}) does not match the name on the URL (${name})`)
      const force = queryBool(q, 'force')
      const {object, conflicts} = applyFields(
        current as Json | undefined,
        {...applied, metadata: {...appliedMeta, name, ...(def.namespaced ? {namespace} : {})}},
        manager,
        force,
        groupVersionOf(def),
        listTypes(def),
        keyDefaults(def),
      )
      if (conflicts.length > 0) throw applyConflict(conflicts)
      if (!current) return {status: 201, body: this.present(def, this.create(def, namespace, object as KubeObj, {dryRun, manager, validation, warnings, fromApply: true})), warnings}
      const withRv = {...object, metadata: {...(object.metadata as Json), resourceVersion: undefined}} as KubeObj
      return {status: 200, body: this.present(def, this.update(def, namespace, name, withRv, {dryRun, subresource, manager, validation, warnings, fromApply: true})), warnings}
    }
    if (!current) throw notFound(def.group, def.plural, name)
    const patch = parseBody(body, req)
    let patched: unknown
    if (type === 'application/merge-patch+json') patched = mergePatch(current, patch)
    else if (type === 'application/strategic-merge-patch+json') {
      if (def.crd)
        throw new ApiError(
          415,
          'UnsupportedMediaType',
          `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
        )
      patched = strategicMergePatch(current, patch)
    } else if (type === 'application/json-patch+json') patched = jsonPatch(current, patch)
    else
      throw new ApiError(
        415,
        'UnsupportedMediaType',
        `the body of the request was in an unknown format - accepted media types include: application/json-patch+json, application/merge-patch+json, application/apply-patch+yaml`,
      )
    const obj = patched as KubeObj
    // A patch carrying a resourceVersion is an optimistic-lock precondition; without one it always applies.
    const rvInPatch = (patch as {metadata?: {resourceVersion?: string}} | undefined)?.metadata?.resourceVersion
    obj.metadata = {...obj.metadata, resourceVersion: rvInPatch ?? current.metadata.resourceVersion}
    return {
      status: 200,
      body: this.present(def, this.update(def, namespace, name, obj, {dryRun, subresource, manager: q.get('fieldManager') ?? managerFromAgent(req), validation, warnings})),
      warnings,
    }
  }

  /**
   * DELETE as registry/generic/registry/store.go does it: preconditions (uid, resourceVersion) → 409
   * with the storage layer's message; an object with finalizers, or deleted with Foreground
   * propagation (finalizer `foregroundDeletion`), stays with a deletionTimestamp until its finalizers
   * are gone and is returned; a namespace turns Terminating (registry/core/namespace/storage); an
   * object deleted at once is returned for the kinds with ReturnDeletedObject (pods,
   * serviceaccounts, custom resources), else a Success Status naming it.
   */
  private deleteRequest(def: ResourceDef, namespace: string | undefined, name: string, options: DeleteOptions, dryRun: boolean): Answer {
    const key = resourceKey(def.group, def.plural)
    const current = this.store.get(key, namespace, name)
    if (!current) throw notFound(def.group, def.plural, name)
    const pre = options.preconditions ?? {}
    const failed = (what: string, want: string, have: string | undefined) => {
      const msg = `Precondition failed: ${what} in precondition: ${want}, ${what} in object meta: ${have ?? ''}`
      const storageKey = `/registry/${def.group ? `${def.group}/` : ''}${def.plural}/${namespace ? `${namespace}/` : ''}${name}`
      // The namespace registry checks preconditions itself (no storage error around the message).
      const cause = def.plural === 'namespaces' && !def.group ? msg : `StorageError: invalid object, Code: 4, Key: ${storageKey}, ResourceVersion: 0, AdditionalErrorMsg: ${msg}`
      return new ApiError(409, 'Conflict', `Operation cannot be fulfilled on ${qualified(def.group, def.plural)} "${name}": ${cause}`, {name, group: def.group || undefined, kind: def.plural})
    }
    if (pre.uid && pre.uid !== current.metadata.uid) throw failed('UID', pre.uid, current.metadata.uid)
    if (pre.resourceVersion && pre.resourceVersion !== current.metadata.resourceVersion) throw failed('ResourceVersion', pre.resourceVersion, current.metadata.resourceVersion)
    const foreground = options.propagationPolicy === 'Foreground'
    const isNamespace = def.plural === 'namespaces' && !def.group
    if (isNamespace || foreground || (current.metadata.finalizers ?? []).length > 0 || current.metadata.deletionTimestamp) {
      let next = current
      if (!current.metadata.deletionTimestamp || (foreground && !current.metadata.finalizers?.includes(FOREGROUND))) {
        next = structuredClone(current)
        next.metadata.deletionTimestamp ??= now()
        next.metadata.deletionGracePeriodSeconds ??= 0
        if (foreground) next.metadata.finalizers = [...(next.metadata.finalizers ?? []), FOREGROUND]
        if (isNamespace) (next as Json).status = {...((next as Json).status as Json), phase: 'Terminating'}
        if (!dryRun) {
          next = this.store.update(key, next)
          if (isNamespace) this.timers.later(0, () => this.terminateNamespace(name))
          if (foreground) this.timers.later(0, () => this.foregroundCollect(def, next))
        }
      }
      return {status: 200, body: this.present(def, next)}
    }
    const gone = dryRun ? current : this.delete(def, namespace, name, {propagation: options.propagationPolicy})!
    if (RETURNS_DELETED_OBJECT.has(def.plural) || def.crd) return {status: 200, body: this.present(def, gone)}
    return {status: 200, body: {kind: 'Status', apiVersion: 'v1', metadata: {}, status: 'Success', details: {name, group: def.group || undefined, kind: def.plural, uid: current.metadata.uid}}}
  }

  /** The namespace controller: deletes what the namespace holds, then the namespace itself. */
  private terminateNamespace(name: string): void {
    const nsKey = resourceKey('', 'namespaces')
    let remaining = 0
    for (const def of this.resources) {
      if (!def.namespaced) continue
      const key = resourceKey(def.group, def.plural)
      for (const obj of this.store.list(key, name)) {
        if (!this.store.get(key, name, obj.metadata.name)) continue
        if ((obj.metadata.finalizers ?? []).length > 0) {
          remaining++
          if (!obj.metadata.deletionTimestamp) this.store.update(key, {...obj, metadata: {...obj.metadata, deletionTimestamp: now(), deletionGracePeriodSeconds: 0}})
        } else this.delete(def, name, obj.metadata.name, {})
      }
    }
    // Objects with finalizers keep the namespace Terminating until their controllers let them go.
    if (remaining > 0) this.timers.later(100, () => this.terminateNamespace(name))
    else if (this.store.get(nsKey, undefined, name)?.metadata.deletionTimestamp) this.store.delete(nsKey, undefined, name)
  }

  /** The garbage collector's foreground deletion: dependents first, then the owner's finalizer goes. */
  private foregroundCollect(def: ResourceDef, owner: KubeObj): void {
    const uid = owner.metadata.uid
    for (const d of this.resources) {
      const key = resourceKey(d.group, d.plural)
      for (const obj of this.store.list(key)) {
        if ((obj.metadata.ownerReferences ?? []).some((r) => r.uid === uid) && this.store.get(key, obj.metadata.namespace, obj.metadata.name))
          this.delete(d, obj.metadata.namespace, obj.metadata.name, {})
      }
    }
    const key = resourceKey(def.group, def.plural)
    const current = this.store.get(key, owner.metadata.namespace, owner.metadata.name)
    if (!current || current.metadata.uid !== uid) return
    this.finalizersChanged(def, this.store.update(key, {...current, metadata: {...current.metadata, finalizers: (current.metadata.finalizers ?? []).filter((f) => f !== FOREGROUND)}}))
  }

  /** An object being deleted goes when its last finalizer is removed. */
  private finalizersChanged(def: ResourceDef, obj: KubeObj): void {
    if (obj.metadata.deletionTimestamp && (obj.metadata.finalizers ?? []).length === 0 && !(def.plural === 'namespaces' && !def.group)) {
      this.delete(def, obj.metadata.namespace, obj.metadata.name, {})
    }
  }

  delete(def: ResourceDef, namespace: string | undefined, name: string, opts: {dryRun?: boolean; propagation?: 'Background' | 'Foreground' | 'Orphan'} = {}): KubeObj | undefined {
    const gone = this.store.delete(resourceKey(def.group, def.plural), namespace, name, opts)
    if (gone && !opts.dryRun && def.plural === 'customresourcedefinitions') {
      const spec = gone.spec as Crd['spec']
      const objectsKey = resourceKey(spec.group, spec.names.plural)
      for (const o of this.store.list(objectsKey)) this.store.delete(objectsKey, o.metadata.namespace, o.metadata.name)
      this.unregisterCrd(spec.group, spec.names.plural)
    }
    return gone
  }

  /** What controllers do after a write: CRDs become served; old clusters give service accounts token Secrets. */
  private afterWrite(def: ResourceDef, obj: KubeObj): void {
    if (def.plural === 'customresourcedefinitions') this.registerCrd(obj as unknown as Crd)
  }

  // ---- controllers ----

  private legacyServiceAccountTokens(): boolean {
    const m = /^v1\.(\d+)/.exec(this.options.gitVersion)
    return m !== null && Number(m[1]) < 24
  }

  private controllers(e: StoreEvent): void {
    if (e.type !== 'ADDED') return
    if (e.resource === resourceKey('', 'namespaces')) {
      // The service-account controller gives every namespace a `default` ServiceAccount.
      const ns = e.object.metadata.name
      this.timers.later(0, () => {
        if (this.store.get(e.resource, undefined, ns) && !this.store.get(resourceKey('', 'serviceaccounts'), ns, 'default')) {
          this.store.create(resourceKey('', 'serviceaccounts'), 'ServiceAccount', {apiVersion: 'v1', kind: 'ServiceAccount', metadata: {name: 'default', namespace: ns}})
        }
      })
    }
    if (e.resource === resourceKey('', 'serviceaccounts') && this.legacyServiceAccountTokens()) {
      const sa = e.object
      const secretName = `${sa.metadata.name}-token-${randomBytes(3).toString('hex').slice(0, 5)}`
      this.timers.later(0, () => {
        const current = this.store.get(e.resource, sa.metadata.namespace, sa.metadata.name)
        if (!current) return
        this.store.create(resourceKey('', 'secrets'), 'Secret', {
          apiVersion: 'v1',
          kind: 'Secret',
          type: SA_TOKEN_TYPE,
          metadata: {name: secretName, namespace: sa.metadata.namespace, annotations: {'kubernetes.io/service-account.name': sa.metadata.name}},
        })
        this.store.update(e.resource, {...current, secrets: [...((current.secrets as {name: string}[]) ?? []), {name: secretName}]})
      })
    }
    if (e.resource === resourceKey('', 'secrets') && e.object.type === SA_TOKEN_TYPE && this.options.tokenControllerDelayMs !== false) {
      const {namespace, name} = e.object.metadata
      this.timers.later(this.options.tokenControllerDelayMs, () => this.fillTokenSecret(namespace!, name))
    }
  }

  private fillTokenSecret(namespace: string, name: string): void {
    const secret = this.store.get(resourceKey('', 'secrets'), namespace, name)
    if (!secret || (secret.data as Json | undefined)?.token) return
    const saName = secret.metadata.annotations?.['kubernetes.io/service-account.name']
    const sa = saName ? this.store.get(resourceKey('', 'serviceaccounts'), namespace, saName) : undefined
    if (!sa) return // the real controller deletes such Secrets; leaving it empty keeps tests observable
    const token = legacyToken(this.options.pki, {namespace, name: sa.metadata.name, uid: sa.metadata.uid!}, name)
    this.options.onSecret?.(token)
    const b64 = (s: string) => Buffer.from(s).toString('base64')
    this.store.update(resourceKey('', 'secrets'), {
      ...secret,
      metadata: {...secret.metadata, annotations: {...secret.metadata.annotations, 'kubernetes.io/service-account.uid': sa.metadata.uid!}},
      data: {...((secret.data as Json) ?? {}), token: b64(token), 'ca.crt': b64(this.options.pki.caPem), namespace: b64(namespace)},
    })
  }

  // ---- subresources ----

  private tokenRequest(namespace: string, name: string, body: unknown): {status: number; body: unknown} {
    const sa = this.store.get(resourceKey('', 'serviceaccounts'), namespace, name)
    if (!sa) throw notFound('', 'serviceaccounts', name)
    const spec = ((body as Json | undefined)?.spec ?? {}) as {audiences?: string[]; expirationSeconds?: number}
    const expirationSeconds = spec.expirationSeconds ?? 3600
    if (expirationSeconds < 600) {
      throw new ApiError(
        422,
        'Invalid',
        `TokenRequest.authentication.k8s.io "${name}" is invalid: spec.expirationSeconds: Invalid value: ${expirationSeconds}: may not specify a duration less than 10 minutes`,
        {
          name,
          group: 'authentication.k8s.io',
          kind: 'TokenRequest',
          causes: [{reason: 'FieldValueInvalid', field: 'spec.expirationSeconds', message: `Invalid value: ${expirationSeconds}: may not specify a duration less than 10 minutes`}],
        },
      )
    }
    const audiences = spec.audiences?.length ? spec.audiences : ['https://kubernetes.default.svc.cluster.local']
    const {token, expires} = boundToken(this.options.pki, {namespace, name, uid: sa.metadata.uid!}, audiences, expirationSeconds)
    this.options.onSecret?.(token)
    return {
      status: 201,
      body: {
        kind: 'TokenRequest',
        apiVersion: 'authentication.k8s.io/v1',
        metadata: {name, namespace, creationTimestamp: null},
        spec: {audiences, expirationSeconds, boundObjectRef: null},
        status: {token, expirationTimestamp: expires.toISOString().replace(/\.\d+Z$/, 'Z')},
      },
    }
  }

  private accessReview(user: UserInfo, body: unknown): {status: number; body: unknown} {
    const spec = ((body as Json | undefined)?.spec ?? {}) as {resourceAttributes?: Json; nonResourceAttributes?: {path: string; verb: string}}
    let allowed: boolean
    if (spec.nonResourceAttributes) {
      allowed = authorize(this.store, user, {verb: spec.nonResourceAttributes.verb, group: '', resource: '', path: spec.nonResourceAttributes.path})
    } else {
      const ra = (spec.resourceAttributes ?? {}) as {verb?: string; group?: string; resource?: string; subresource?: string; namespace?: string; name?: string}
      allowed = authorize(this.store, user, {
        verb: ra.verb ?? '',
        group: ra.group ?? '',
        resource: ra.resource ?? '',
        subresource: ra.subresource || undefined,
        namespace: ra.namespace || undefined,
        name: ra.name || undefined,
      })
    }
    return {
      status: 201,
      body: {kind: 'SelfSubjectAccessReview', apiVersion: 'authorization.k8s.io/v1', metadata: {creationTimestamp: null}, spec, status: {allowed, ...(allowed ? {reason: 'RBAC: allowed'} : {})}},
    }
  }

  /** SelfSubjectRulesReview (`kubectl auth can-i --list`): the user's rules in a namespace. */
  private selfRulesReview(user: UserInfo, body: unknown): Answer {
    const namespace = (((body as Json | undefined)?.spec ?? {}) as {namespace?: string}).namespace ?? ''
    return {
      status: 201,
      body: {
        kind: 'SelfSubjectRulesReview',
        apiVersion: 'authorization.k8s.io/v1',
        metadata: {creationTimestamp: null},
        spec: {namespace},
        status: {...rulesReview(this.store, user, namespace), incomplete: false},
      },
    }
  }

  private async podProxy(route: Route, pod: string, port: string, url: URL): Promise<{status: number; body: unknown; contentType?: string}> {
    const obj = this.store.get(resourceKey('', 'pods'), route.namespace, pod)
    if (!obj) throw notFound('', 'pods', pod)
    const ip = ((obj.status as Json | undefined)?.podIP as string | undefined) ?? '10.244.0.1'
    const answer = await this.options.podProxy?.({namespace: route.namespace!, pod, port: port || '80', path: '/' + route.rest, query: url.searchParams})
    if (!answer) throw new ApiError(503, 'ServiceUnavailable', `error trying to reach service: dial tcp ${ip}:${port || 80}: connect: connection refused`)
    let parsed: unknown = answer.body
    const contentType = answer.contentType ?? 'application/json'
    if (contentType.startsWith('application/json')) {
      try {
        parsed = JSON.parse(answer.body)
      } catch {
        return {status: answer.status, body: answer.body, contentType: 'text/plain'}
      }
    }
    return {status: answer.status, body: parsed, contentType}
  }
}

/** How lists of this kind merge: the CRD schema's list types, or the built-in kinds' strategic-merge keys. */
function listTypes(def: ResourceDef): ListTypes {
  return def.crd ? schemaListTypes(def.schema as Json | undefined) : builtinListTypes
}

/** Defaults of list-map keys, applied before keys are compared (a Service port's protocol is TCP when left out). */
function keyDefaults(def: ResourceDef): ((path: string[], item: Json) => Json) | undefined {
  if (def.crd || def.plural !== 'services') return undefined
  return (path, item) => (path.join('.') === 'spec.ports' && item.protocol === undefined ? {...item, protocol: 'TCP'} : item)
}

/**
 * kube-apiserver's apply conflict (apimachinery managedfields/internal/conflict.go): one line for
 * one conflict, else the paths grouped by manager; one FieldManagerConflict cause per path.
 */
function applyConflict(conflicts: Conflict[]): ApiError {
  // printManager: an Update manager is named with its API version and time.
  const who = (c: Conflict) => JSON.stringify(c.manager) + (c.operation === 'Update' ? ` using ${c.apiVersion}${c.time ? ` at ${c.time}` : ''}` : '')
  let message: string
  if (conflicts.length === 1) message = `Apply failed with 1 conflict: conflict with ${who(conflicts[0]!)}: ${describePath(conflicts[0]!.path)}`
  else {
    const byManager = new Map<string, string[]>()
    for (const c of conflicts) byManager.set(who(c), [...(byManager.get(who(c)) ?? []), describePath(c.path)])
    const lines = [...byManager.keys()].sort().flatMap((m) => [`conflicts with ${m}:`, ...byManager.get(m)!.map((p) => `- ${p}`)])
    message = `Apply failed with ${conflicts.length} conflicts: ${lines.join('\n')}`
  }
  return new ApiError(409, 'Conflict', message, {causes: conflicts.map((c) => ({reason: 'FieldManagerConflict', message: `conflict with ${who(c)}`, field: describePath(c.path)}))})
}

function managerFromAgent(req: IncomingMessage): string {
  // kube-apiserver names the manager after the user agent's program name.
  return (req.headers['user-agent'] ?? 'unknown').split('/')[0]!
}

function parseBody(body: Buffer, req: IncomingMessage, yaml = false): unknown {
  const type = req.headers['content-type'] ?? ''
  if (type.startsWith('application/vnd.kubernetes.protobuf')) {
    try {
      return decodeProtobufBody(body)
    } catch (err) {
      if (err instanceof ProtobufError)
        throw new ApiError(415, 'UnsupportedMediaType', `the body of the request was in an unknown format - accepted media types include: application/json, application/yaml (${err.message})`)
      throw err
    }
  }
  const text = body.toString('utf8')
  if (text.trim() === '') throw badRequest('the body of the request was empty')
  try {
    return yaml || type.includes('yaml') ? parseYaml(text) : JSON.parse(text)
  } catch (err) {
    throw badRequest(`couldn't get version/kind; json parse error: ${(err as Error).message.split('\n')[0]}`)
  }
}

/** The body if it parses, else undefined (for messages that name the object when they can). */
function tryParse(body: Buffer, req: IncomingMessage): unknown {
  try {
    return parseBody(body, req)
  } catch {
    return undefined
  }
}

/** SelfSubjectReview (`kubectl auth whoami`): who the request authenticated as. */
function selfReview(user: UserInfo): Answer {
  return {
    status: 201,
    body: {kind: 'SelfSubjectReview', apiVersion: 'authentication.k8s.io/v1', metadata: {creationTimestamp: null}, status: {userInfo: {username: user.name, groups: user.groups}}},
  }
}

async function readBody(req: IncomingMessage): Promise<Buffer> {
  const chunks: Buffer[] = []
  for await (const chunk of req) chunks.push(chunk as Buffer)
  return Buffer.concat(chunks)
}

function encodeContinue(c: Continue): string {
  return Buffer.from(JSON.stringify(c)).toString('base64url')
}

function decodeContinue(token: string): Continue {
  try {
    const c = JSON.parse(Buffer.from(token, 'base64url').toString('utf8')) as Continue
    if (typeof c.key !== 'string' || typeof c.rv !== 'number') throw new Error('shape')
    return c
  } catch {
    throw badRequest('continue key is not valid: illegal base64 data at input byte 0')
  }
}

function expiredContinue(): ApiError {
  return new ApiError(
    410,
    'Expired',
    'The provided continue parameter is too old to display a consistent list result. You can start a new list without the continue parameter, or use the continue token in this response to retrieve the remainder of the results. Continuing with the provided token results in an inconsistent list - objects that were created, modified, or deleted between the time the first chunk was returned and now may show up in the list.',
  )
}
