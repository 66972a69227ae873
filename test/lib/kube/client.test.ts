/**
 * The access layer's own behaviour (retries, backoff, Retry-After, paging restarts, error
 * translation), against a tiny scripted HTTP server. End-to-end behaviour against the full test API
 * server lives in test/commands.
 */
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'
import {KubeClient, MAX_JSON_DEPTH, continueTokenOf, jsonTooDeep} from '../../../src/lib/kube/client.js'
import {loadKubeConfig} from '../../../src/lib/kube/config.js'
import {rbacHint} from '../../../src/lib/kube/errors.js'
import {MeshvmError} from '../../../src/lib/errors.js'

type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void
let handlers: Handler[] = []
let seen: {method: string; url: string}[] = []
let server: Server
let kubeconfig: string
const work = mkdtempSync(join(tmpdir(), 'meshvm-client-'))

beforeAll(async () => {
  server = createServer((req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      seen.push({method: req.method ?? '', url: req.url ?? ''})
      const h = handlers.shift()
      if (h) h(req, res, body)
      else json(res, 500, {kind: 'Status', message: 'no handler'})
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  kubeconfig = join(work, 'config')
  writeFileSync(
    kubeconfig,
    `apiVersion: v1
kind: Config
clusters:
- name: c
  cluster: {server: "http://127.0.0.1:${port}", insecure-skip-tls-verify: true}
contexts:
- name: ctx
  context: {cluster: c, user: u, namespace: team}
current-context: ctx
users:
- name: u
  user: {token: s3cr3t-token}
`,
  )
})
afterAll(async () => {
  await new Promise((r) => server.close(r))
  rmSync(work, {recursive: true, force: true})
})
afterEach(() => {
  handlers = []
  seen = []
})

function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, {'content-type': 'application/json', ...headers})
  res.end(JSON.stringify(body))
}

async function client(retries: {onRetry?: (e: {delayMs: number; reason: string}) => void} = {}): Promise<KubeClient> {
  return KubeClient.create(loadKubeConfig({kubeconfig}), {timeoutMs: 1000, backoffBaseMs: 1, onRetry: retries.onRetry})
}

describe('KubeClient', () => {
  it('sends the bearer token and resolves the context namespace', async () => {
    let auth = ''
    handlers.push((req, res) => {
      auth = req.headers.authorization ?? ''
      json(res, 200, {major: '1', minor: '30'})
    })
    const c = await client()
    expect(await c.get('/version')).toEqual({major: '1', minor: '30'})
    expect(auth).toBe('Bearer s3cr3t-token')
    expect(c.namespace).toBe('team')
    c.close()
  })

  it('retries 429 honouring Retry-After, then 503, then succeeds', async () => {
    const delays: number[] = []
    handlers.push((_q, res) => json(res, 429, {kind: 'Status', code: 429}, {'retry-after': '0'}))
    handlers.push((_q, res) => json(res, 503, {kind: 'Status', code: 503}))
    handlers.push((_q, res) => json(res, 200, {ok: true}))
    const c = await client({onRetry: (e) => delays.push(e.delayMs)})
    expect(await c.get('/api/v1/namespaces')).toEqual({ok: true})
    expect(delays[0]).toBe(0)
    expect(delays).toHaveLength(2)
    c.close()
  })

  it('retries a reset connection for reads', async () => {
    handlers.push((req) => req.socket.destroy())
    handlers.push((_q, res) => json(res, 200, {ok: 1}))
    const c = await client()
    expect(await c.get('/x')).toEqual({ok: 1})
    c.close()
  })

  it('retries a truncated body', async () => {
    handlers.push((_q, res) => {
      res.writeHead(200, {'content-type': 'application/json', 'content-length': '100'})
      res.end('{"ok":')
      res.socket?.destroy()
    })
    handlers.push((_q, res) => json(res, 200, {ok: 2}))
    const c = await client()
    expect(await c.get('/x')).toEqual({ok: 2})
    c.close()
  })

  it('gives up after the documented number of retries with a one-line error', async () => {
    for (let i = 0; i < 6; i++) handlers.push((_q, res) => json(res, 503, {kind: 'Status', message: 'etcd down', code: 503}))
    const c = await client()
    const err = await c.get('/x').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(MeshvmError)
    expect((err as MeshvmError).message).toMatch(/failed GET \/x: 503 etcd down$/)
    expect((err as MeshvmError).exit).toBe(3)
    expect(seen).toHaveLength(6)
    c.close()
  })

  it('never retries a JSON patch', async () => {
    handlers.push((_q, res) => json(res, 503, {kind: 'Status', code: 503}))
    const c = await client()
    await expect(c.request({method: 'PATCH', path: '/x', body: [], contentType: 'application/json-patch+json'})).rejects.toThrow(/503/)
    expect(seen).toHaveLength(1)
    c.close()
  })

  it('translates 403 into the missing RBAC rule', async () => {
    handlers.push((_q, res) =>
      json(res, 403, {
        kind: 'Status',
        reason: 'Forbidden',
        code: 403,
        message: 'workloadentries.networking.istio.io is forbidden: User "dev" cannot list resource "workloadentries" in API group "networking.istio.io" in the namespace "apps"',
      }),
    )
    const c = await client()
    const err = (await c.get('/x').catch((e: unknown) => e)) as MeshvmError
    expect(err.exit).toBe(5)
    expect(err.hints[0]).toBe(
      'ask a cluster admin for a Role in namespace apps allowing verb "list" on "workloadentries.networking.istio.io" (kubectl auth can-i list workloadentries.networking.istio.io -n apps)',
    )
    c.close()
  })

  it('names a ClusterRole for a cluster-scoped refusal, and core resources without a group', () => {
    expect(rbacHint('clusterroles.rbac.authorization.k8s.io is forbidden: User "dev" cannot list resource "clusterroles" in API group "rbac.authorization.k8s.io" at the cluster scope')).toBe(
      'ask a cluster admin for a ClusterRole allowing verb "list" on "clusterroles.rbac.authorization.k8s.io" (kubectl auth can-i list clusterroles.rbac.authorization.k8s.io)',
    )
    expect(rbacHint('pods is forbidden: User "dev" cannot get resource "pods" in API group "" in the namespace "a"')).toBe(
      'ask a cluster admin for a Role in namespace a allowing verb "get" on "pods" (kubectl auth can-i get pods -n a)',
    )
    expect(rbacHint('forbidden: no rule')).toBeUndefined()
  })

  it('reports malformed JSON after one more try, without echoing the body', async () => {
    handlers.push((_q, res) => {
      res.writeHead(200, {'content-type': 'application/json'})
      res.end('{not json token=s3cr3t-token')
    })
    handlers.push((_q, res) => {
      res.writeHead(200, {'content-type': 'application/json'})
      res.end('{not json token=s3cr3t-token')
    })
    const c = await client()
    const err = (await c.get('/x').catch((e: unknown) => e)) as MeshvmError
    expect(err.message).toMatch(/sent a malformed response to GET \/x \(a body that is not JSON\)$/)
    expect(err.message).not.toContain('s3cr3t')
    c.close()
  })

  it('pages with limit/continue and restarts on 410 without repeating items', async () => {
    const item = (n: number) => ({metadata: {name: `i${n}`, uid: `u${n}`}})
    handlers.push((_q, res) => json(res, 200, {items: [item(1), item(2)], metadata: {continue: 'tok1'}}))
    handlers.push((_q, res) => json(res, 410, {kind: 'Status', reason: 'Expired', code: 410, message: 'continue token expired'}))
    handlers.push((_q, res) => json(res, 200, {items: [item(1), item(2)], metadata: {continue: 'tok2'}}))
    handlers.push((_q, res) => json(res, 200, {items: [item(3)], metadata: {}}))
    const c = await client()
    const names: string[] = []
    for await (const page of c.listPages<{metadata: {name: string}}>('/apis/x/v1/things', {}, 2)) names.push(...page.items.map((i) => i.metadata.name))
    expect(names).toEqual(['i1', 'i2', 'i3'])
    expect(seen.map((s) => s.url)).toEqual(['/apis/x/v1/things?limit=2', '/apis/x/v1/things?limit=2&continue=tok1', '/apis/x/v1/things?limit=2', '/apis/x/v1/things?limit=2&continue=tok2'])
    c.close()
  })

  describe("pipelined paging (the next page is requested from the head of the current page's text)", () => {
    const item = (n: number) => ({metadata: {name: `i${n}`, uid: `u${n}`}})
    // A page as kube-apiserver writes it: kind, apiVersion, then metadata with resourceVersion and continue.
    const page = (items: number[], token?: string, extra = '') =>
      `{"kind":"ThingList","apiVersion":"x/v1","metadata":{"resourceVersion":"7"${token ? `,"continue":"${token}"` : ''}},"items":${JSON.stringify(items.map(item))}${extra}}`
    const send = (res: ServerResponse, status: number, body: string) => {
      res.writeHead(status, {'content-type': 'application/json'})
      res.end(body)
    }
    /** Handlers by continue token (none: the first page), as pipelined requests may come in any order. */
    function serve(byToken: Record<string, (res: ServerResponse) => void>): void {
      handlers = []
      for (let i = 0; i < 20; i++) {
        handlers.push((req, res) => {
          const token = new URL(req.url ?? '/', 'http://x').searchParams.get('continue') ?? ''
          const h = byToken[token]
          if (h) h(res)
          else send(res, 500, '{"kind":"Status","message":"unexpected token"}')
        })
      }
    }

    it('reads the continue token from the head of a page, and only from the usual shape', () => {
      expect(continueTokenOf(page([1], 'abc'))).toBe('abc')
      expect(continueTokenOf('{"kind":"L","apiVersion":"v1","metadata":{"selfLink":"/x","resourceVersion":"1","continue":"t"},"items":[]}')).toBe('t')
      expect(continueTokenOf(page([1]))).toBeUndefined()
      expect(continueTokenOf('{"metadata":{"continue":"t"},"items":[]}')).toBeUndefined()
      expect(continueTokenOf('{"kind":"L","apiVersion":"v1","metadata":{"resourceVersion":"1","continue":""}}')).toBeUndefined()
      expect(continueTokenOf('{"kind":"L\\"","apiVersion":"v1","metadata":{"continue":"t"}}')).toBeUndefined()
      // A custom resource list: an unstructured list's keys sorted, metadata after the items.
      const cr = (meta: string) => `{"apiVersion":"x/v1","items":[{"kind":"T","metadata":{"continue":"inner"}}],"kind":"TList","metadata":${meta}}\n`
      expect(continueTokenOf(cr('{"continue":"tail","remainingItemCount":3,"resourceVersion":"9"}'))).toBe('tail')
      expect(continueTokenOf(cr('{"continue":"tail","resourceVersion":"9"}'))).toBe('tail')
      expect(continueTokenOf(cr('{"resourceVersion":"9"}'))).toBeUndefined()
      expect(continueTokenOf(`{"apiVersion":"x/v1","items":[],"kind":"TList","metadata":{"continue":"t"}},"x":1}`)).toBeUndefined()
    })

    it('asks for page 2 before the caller has finished with page 1', async () => {
      let page2Asked!: () => void
      const asked = new Promise<void>((r) => (page2Asked = r))
      serve({
        '': (res) => send(res, 200, page([1, 2], 'tok1')),
        tok1: (res) => {
          page2Asked()
          send(res, 200, page([3]))
        },
      })
      const c = await client()
      const names: string[] = []
      for await (const p of c.listPages<{metadata: {name: string}}>('/apis/x/v1/things', {}, 2)) {
        // Holding page 1 until the server has been asked for page 2: without pipelining this never ends.
        if (names.length === 0) await asked
        names.push(...p.items.map((i) => i.metadata.name))
      }
      expect(names).toEqual(['i1', 'i2', 'i3'])
      expect(seen.map((x) => x.url)).toEqual(['/apis/x/v1/things?limit=2', '/apis/x/v1/things?limit=2&continue=tok1'])
      c.close()
    })

    it('pipelines custom resource lists too (metadata after the items)', async () => {
      let page2Asked!: () => void
      const asked = new Promise<void>((r) => (page2Asked = r))
      const crPage = (items: number[], token?: string) =>
        `{"apiVersion":"x/v1","items":${JSON.stringify(items.map(item))},"kind":"ThingList","metadata":{${token ? `"continue":"${token}",` : ''}"resourceVersion":"7"}}\n`
      serve({
        '': (res) => send(res, 200, crPage([1, 2], 'tok1')),
        tok1: (res) => {
          page2Asked()
          send(res, 200, crPage([3]))
        },
      })
      const c = await client()
      const names: string[] = []
      for await (const p of c.listPages<{metadata: {name: string}}>('/apis/x/v1/things', {}, 2)) {
        if (names.length === 0) await asked
        names.push(...p.items.map((i) => i.metadata.name))
      }
      expect(names).toEqual(['i1', 'i2', 'i3'])
      c.close()
    })

    it('drops a page read ahead with a token the parsed page does not confirm', async () => {
      // The head says "guess", but a later duplicate metadata key (JSON.parse keeps the last) says "real".
      serve({
        '': (res) => send(res, 200, page([1], 'guess', ',"metadata":{"continue":"real"}')),
        guess: (res) => send(res, 200, page([666])),
        real: (res) => send(res, 200, page([2])),
      })
      const c = await client()
      const names: string[] = []
      for await (const p of c.listPages<{metadata: {name: string}}>('/apis/x/v1/things', {}, 1)) names.push(...p.items.map((i) => i.metadata.name))
      expect(names).toEqual(['i1', 'i2'])
      expect(seen.map((x) => x.url)).toContain('/apis/x/v1/things?limit=1&continue=real')
      c.close()
    })

    it('restarts on 410 for a page read ahead, without repeating items', async () => {
      let first = true
      serve({
        '': (res) => {
          send(res, 200, first ? page([1, 2], 'old') : page([1, 2], 'new'))
          first = false
        },
        old: (res) => send(res, 410, '{"kind":"Status","reason":"Expired","code":410,"message":"continue token expired"}'),
        new: (res) => send(res, 200, page([3])),
      })
      const c = await client()
      const names: string[] = []
      for await (const p of c.listPages<{metadata: {name: string}}>('/apis/x/v1/things', {}, 2)) names.push(...p.items.map((i) => i.metadata.name))
      expect(names).toEqual(['i1', 'i2', 'i3'])
      c.close()
    })

    it('a repeating token still fails, and a caller that stops early leaves no unhandled failure', async () => {
      serve({'': (res) => send(res, 200, page([1], 'loop')), loop: (res) => send(res, 200, page([2], 'loop'))})
      const c = await client()
      await expect(
        (async () => {
          for await (const _ of c.listPages('/apis/x/v1/things', {}, 1)) void _
        })(),
      ).rejects.toThrow(/continue token repeats/)
      c.close()
      // The page read ahead fails once the caller has left: nobody hears it (vitest fails on unhandled rejections).
      let aheadFailed!: () => void
      const failed = new Promise<void>((r) => (aheadFailed = r))
      const c2 = await KubeClient.create(loadKubeConfig({kubeconfig}), {timeoutMs: 1000, backoffBaseMs: 1, onResponse: (e) => e.status === 400 && aheadFailed()})
      serve({'': (res) => send(res, 200, page([1], 'next')), next: (res) => send(res, 400, '{"kind":"Status","message":"boom"}')})
      for await (const _ of c2.listPages('/apis/x/v1/things', {}, 1)) break
      await failed
      await new Promise((r) => setImmediate(r))
      c2.close()
    })
  })

  it('refuses a watch event longer than the response limit, as it refuses such a response', async () => {
    const saved = process.env.MESHVM_MAX_RESPONSE_BYTES
    process.env.MESHVM_MAX_RESPONSE_BYTES = '1000'
    try {
      handlers.push((_q, res) => {
        res.writeHead(200, {'content-type': 'application/json'})
        res.write(`{"type":"ADDED","object":{"metadata":{"name":"${'x'.repeat(2000)}`)
      })
      const c = await client()
      const err = (await c.watch('/api/v1/pods', {}, () => undefined).catch((e: unknown) => e)) as MeshvmError
      expect(err.code).toBe('ResponseTooLarge')
      expect(err.message).toBe(`the API server at ${c.server} sent a response to GET /api/v1/pods larger than the limit (1000 bytes)`)
      c.close()
    } finally {
      if (saved === undefined) delete process.env.MESHVM_MAX_RESPONSE_BYTES
      else process.env.MESHVM_MAX_RESPONSE_BYTES = saved
    }
  })

  it('treats 404 on a retried delete as done', async () => {
    handlers.push((req) => req.socket.destroy())
    handlers.push((_q, res) => json(res, 404, {kind: 'Status', reason: 'NotFound', code: 404}))
    const c = await client()
    await expect(c.request({method: 'DELETE', path: '/api/v1/namespaces/a/pods/p'})).resolves.toEqual({})
    c.close()
  })

  it('times out a request that never answers, as an unreachable error', async () => {
    for (let i = 0; i < 6; i++) handlers.push(() => undefined)
    const c = await KubeClient.create(loadKubeConfig({kubeconfig}), {timeoutMs: 50, backoffBaseMs: 1, maxRetries: 1})
    const err = (await c.get('/slow').catch((e: unknown) => e)) as MeshvmError
    expect(err.message).toMatch(/^no answer from the API server at http:\/\/127\.0\.0\.1:\d+ \(context "ctx"\) within 50ms \(GET \/slow\)$/)
    expect(err.exit).toBe(3)
    c.close()
  })
})

describe('jsonTooDeep (the guard before JSON reaches recursive code)', () => {
  const nest = (n: number, open = '[', close = ']') => open.repeat(n) + close.repeat(n)
  it('counts arrays and objects, up to the exact limit', () => {
    expect(jsonTooDeep(nest(MAX_JSON_DEPTH))).toBe(false)
    expect(jsonTooDeep(nest(MAX_JSON_DEPTH + 1))).toBe(true)
    expect(jsonTooDeep('{"a":'.repeat(3) + '1' + '}'.repeat(3), 3)).toBe(false)
    expect(jsonTooDeep('{"a":'.repeat(4) + '1' + '}'.repeat(4), 3)).toBe(true)
    expect(jsonTooDeep('[{"a":[{}]}]', 4)).toBe(false)
    expect(jsonTooDeep('[{"a":[{"b":[]}]}]', 4)).toBe(true)
    // Siblings do not add up: depth, not count.
    expect(jsonTooDeep('[' + Array(5000).fill('[[]]').join(',') + ']', 3)).toBe(false)
  })
  it('skips brackets inside strings, escaped quotes included', () => {
    expect(jsonTooDeep('{"a":"[[[[[[{{{{"}', 2)).toBe(false)
    expect(jsonTooDeep('{"a":"\\"[[[[", "b":1}', 2)).toBe(false)
    expect(jsonTooDeep('["\\"[[[[\\"", []]', 2)).toBe(false)
    expect(jsonTooDeep('{"[[[[":"]]]]"}', 1)).toBe(false)
  })
  it('counts brackets after a string that ends in escaped backslashes', () => {
    // After an even run of backslashes (each an escaped backslash) the quote closes the string;
    // after an odd run of backslashes the quote is part of the string.
    expect(jsonTooDeep('{"a":"x\\\\","b":' + nest(3) + '}', 3)).toBe(true)
    expect(jsonTooDeep('{"a":"\\\\","b":' + nest(2) + '}', 3)).toBe(false)
    expect(jsonTooDeep('{"a":"\\\\\\"","b":' + nest(3) + '}', 3)).toBe(true)
    expect(jsonTooDeep('{"a":"\\\\\\\\\\"[[[[","b":' + nest(2) + '}', 3)).toBe(false)
  })
  it('answers at once for 100,000-deep documents, and false for text that is not JSON (JSON.parse reports it)', () => {
    expect(jsonTooDeep(nest(100_000))).toBe(true)
    expect(jsonTooDeep(nest(50_000, '{"a":', '}'))).toBe(true)
    expect(jsonTooDeep('"unterminated [[[[[')).toBe(false)
    expect(jsonTooDeep('')).toBe(false)
  })
})

describe('loadKubeConfig', () => {
  it('names unknown contexts and lists the real ones', () => {
    expect(() => loadKubeConfig({kubeconfig, context: 'prod'})).toThrow('context "prod" not found in ' + kubeconfig)
  })
  it('does not quote file contents when a kubeconfig does not parse', () => {
    const bad = join(work, 'bad')
    writeFileSync(bad, 'users:\n- name: u\n  user: {token: s3cr3t-token\n')
    let message = ''
    try {
      loadKubeConfig({kubeconfig: bad})
    } catch (err) {
      message = (err as Error).message
    }
    expect(message).toMatch(/^cannot read kubeconfig .*: not a valid kubeconfig/)
    expect(message).not.toContain('s3cr3t')
  })
  it('detects a missing kubeconfig instead of falling back to localhost:8080', () => {
    expect(() => loadKubeConfig({}, {HOME: work, KUBECONFIG: join(work, 'nope')})).toThrow(/^no kubeconfig found/)
  })
})

describe('files the kubeconfig names (certificate-authority, client-certificate, client-key)', () => {
  const create = (cluster: string, user: string) => {
    const file = join(work, 'named-files')
    writeFileSync(
      file,
      `apiVersion: v1
clusters:
- name: c
  cluster: {server: "https://127.0.0.1:1", ${cluster}}
contexts:
- name: x
  context: {cluster: c, user: u}
current-context: x
users:
- name: u
  user: {${user}}
`,
    )
    return KubeClient.create(loadKubeConfig({kubeconfig: file}), {timeoutMs: 1000})
  }

  it('says what is wrong with the file and how to fix it', async () => {
    const err = await create(`certificate-authority: ${work}`, 'token: t').catch((e: unknown) => e)
    expect(err).toBeInstanceOf(MeshvmError)
    expect((err as MeshvmError).message).toBe(`context "x": certificate-authority ${work}: is a directory`)
    expect((err as MeshvmError).hints).toEqual([`fix the certificate-authority path in the kubeconfig (${join(work, 'named-files')}), or embed the file with certificate-authority-data`])
    await expect(create('insecure-skip-tls-verify: true', `client-certificate: ${join(work, 'nope.crt')}, client-key: ${work}`)).rejects.toThrow(
      `context "x": client-certificate ${join(work, 'nope.crt')}: file not found`,
    )
  })

  it('reads every named file before it checks what the certificate authority holds', async () => {
    const notPem = Buffer.from('not a certificate').toString('base64')
    await expect(create(`certificate-authority-data: ${notPem}`, `client-certificate: ${work}, client-key: ${work}`)).rejects.toThrow(`client-certificate ${work}: is a directory`)
    await expect(create(`certificate-authority-data: ${notPem}`, 'token: t')).rejects.toThrow('certificate-authority-data holds no PEM certificate')
  })
})
