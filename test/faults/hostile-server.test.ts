/**
 * An attacker's API server (HTTPS on loopback, scripted per test) against the one access layer,
 * src/lib/kube/client.ts: redirects and odd statuses, empty/null/deep/huge bodies, bodies that never
 * end, lists and watches that never end, credentials in server messages and URLs, proxies.
 * Every case must end in a clean MeshvmError (never a crash, a hang or a false success).
 */
import {getEventListeners} from 'node:events'
import {createServer as createHttpServer, type Server} from 'node:http'
import {connect, type AddressInfo, type Socket} from 'node:net'
import {afterAll, afterEach, beforeAll, describe, expect, it} from 'vitest'
import {KubeClient, MAX_QUICK_WATCH_ENDS} from '../../src/lib/kube/client.js'
import {loadKubeConfig} from '../../src/lib/kube/config.js'
import {applyObjects} from '../../src/lib/apply/apply.js'
import {MeshvmError} from '../../src/lib/errors.js'
import {hostileServer, json, logFault, type HostileServer} from './hostile.js'

let s: HostileServer

beforeAll(async () => {
  s = await hostileServer()
})
afterAll(async () => {
  await s.close()
})
afterEach(() => {
  s.handlers = []
  s.seen = []
})

async function client(options: {timeoutMs?: number; maxRetries?: number; kubeconfig?: string} = {}): Promise<KubeClient> {
  return KubeClient.create(loadKubeConfig({kubeconfig: options.kubeconfig ?? s.kubeconfig()}), {timeoutMs: options.timeoutMs ?? 2000, backoffBaseMs: 1, maxRetries: options.maxRetries ?? 1})
}

async function failure(p: Promise<unknown>): Promise<MeshvmError> {
  const err = await p.then(
    () => undefined,
    (e: unknown) => e,
  )
  expect(err).toBeInstanceOf(MeshvmError)
  return err as MeshvmError
}

const WG = {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name: 'web', namespace: 'apps'}, spec: {}}

describe('false success: only the documented success status is success', () => {
  for (const status of [301, 302, 303, 307, 308, 304, 300]) {
    it(`a ${status} to server-side apply is a failure, never "created"`, async () => {
      logFault('false success', `${status} on apply`)
      s.handlers.push((_q, res) => json(res, 404, {kind: 'Status', code: 404, reason: 'NotFound'}))
      s.handlers.push((_q, res) => {
        res.writeHead(status, {location: 'https://evil.example:6443/steal', 'content-type': 'application/json'})
        res.end(status === 304 ? undefined : JSON.stringify({apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name: 'web', resourceVersion: '9'}}))
      })
      const c = await client()
      const [result] = await applyObjects(c, [WG])
      expect(result!.outcome).toBe('failed')
      expect(result!.error?.message).toMatch(new RegExp(`answered PATCH \\S+ with ${status}`))
      if (status !== 304 && status !== 300) expect(result!.error?.message).toContain('a redirect to evil.example:6443')
      c.close()
    })
  }

  it('a redirect on a read is an error and is never followed (the token stays home)', async () => {
    logFault('false success', '302 on read')
    let stolen = 0
    const thief: Server = createHttpServer((_q, res) => {
      stolen++
      res.end('{}')
    })
    await new Promise<void>((r) => thief.listen(0, '127.0.0.1', r))
    const to = `http://127.0.0.1:${(thief.address() as AddressInfo).port}/api`
    s.handlers.push((_q, res) => {
      res.writeHead(302, {location: to})
      res.end()
    })
    const c = await client()
    const err = await failure(c.get('/api/v1/namespaces/x'))
    expect(err.message).toMatch(/answered GET \/api\/v1\/namespaces\/x with 302 \(a redirect to 127\.0\.0\.1:\d+\) instead of a result/)
    expect(err.exit).toBe(3)
    expect(stolen).toBe(0)
    expect(s.seen).toHaveLength(1)
    c.close()
    await new Promise((r) => thief.close(r))
  })

  it('a 1xx-free but out-of-range status (600) is a failure', async () => {
    logFault('false success', 'status 600')
    s.handlers.push((_q, res) => {
      res.writeHead(600)
      res.end('{}')
    })
    const c = await client()
    const err = await failure(c.request({method: 'DELETE', path: '/api/v1/namespaces/a/pods/p', retry: 'never'}))
    expect(err.message).toMatch(/with 600 instead of a result/)
    c.close()
  })
})

describe('crashes become clean errors: bodies that are not objects', () => {
  const cases: [string, string][] = [
    ['an empty body', ''],
    ['null', 'null'],
    ['a number', '42'],
    ['an array', '[]'],
    [`JSON nested deeper than 1000 levels`, '['.repeat(100_000) + ']'.repeat(100_000)],
  ]
  for (const [what, body] of cases) {
    it(`200 with ${what} on apply is a malformed answer, not success`, async () => {
      logFault('crashes', `200 with ${what}`)
      s.handlers.push((_q, res) => {
        res.writeHead(200, {'content-type': 'application/json'})
        res.end(body)
      })
      const c = await client()
      const err = await failure(c.apply('/apis/networking.istio.io/v1/namespaces/apps/workloadgroups/web', WG, {fieldManager: 'meshvm'}))
      expect(err.message).toMatch(new RegExp(`sent a malformed response to PATCH \\S+ \\(${what.replace(/[()]/g, '\\$&')}(?: instead of an object)?\\)$`))
      expect(err.code).toBe('MalformedResponse')
      c.close()
    })
  }

  it('a list page hiding 100,000-deep JSON behind escaped quotes and backslashes is malformed, read or watched', async () => {
    logFault('crashes', 'deep JSON after escaped quotes in a list and a watch line')
    // A scanner that took \\" for the end of the string, or \\\\" for an escaped quote, would miss the depth.
    const deep = '{"a":' + '['.repeat(100_000) + ']'.repeat(100_000) + '}'
    const body = `{"kind":"List","metadata":{"continue":"x\\\\"},"items":[{"metadata":{"name":"a\\"b"},"spec":${deep}}]}`
    for (let i = 0; i < 2; i++) {
      s.handlers.push((_q, res) => {
        res.writeHead(200, {'content-type': 'application/json'})
        res.end(body)
      })
    }
    const c = await client()
    const err = await failure(c.list('/api/v1/pods'))
    expect(err.message).toMatch(/\(JSON nested deeper than 1000 levels\)$/)
    expect(err.code).toBe('MalformedResponse')
    s.handlers.push((_q, res) => {
      res.writeHead(200, {'content-type': 'application/json'})
      res.end(`{"type":"ADDED","object":{"metadata":{"name":"a\\"b","resourceVersion":"1"},"spec":${deep}}}\n`)
    })
    const watchErr = await failure(c.watch('/api/v1/pods', {}, () => undefined))
    expect(watchErr.code).toBe('MalformedResponse')
    c.close()
  })

  for (const [what, items] of [
    ['a string', '"x"'],
    ['an object', '{}'],
    ['a null entry', '[null]'],
    ['a number entry', '[1]'],
  ] as const) {
    it(`a list whose items is ${what} is malformed`, async () => {
      logFault('crashes', `items is ${what}`)
      s.handlers.push((_q, res) => {
        res.writeHead(200, {'content-type': 'application/json'})
        res.end(`{"kind":"List","metadata":{},"items":${items}}`)
      })
      const c = await client()
      const err = await failure(c.list('/api/v1/pods'))
      expect(err.message).toMatch(/malformed response to GET \/api\/v1\/pods \(a list whose items are not objects\)$/)
      c.close()
    })
  }

  it('a list with "items": null is an empty list, as kubectl reads it', async () => {
    s.handlers.push((_q, res) => json(res, 200, {kind: 'List', metadata: {}, items: null}))
    const c = await client()
    expect(await c.list('/api/v1/pods')).toEqual([])
    c.close()
  })
})

describe('hangs and limits', () => {
  it('a Content-Length beyond the response limit fails at once, with the env to raise it', async () => {
    logFault('hangs and limits', 'huge Content-Length')
    s.handlers.push((_q, res) => {
      res.writeHead(200, {'content-type': 'application/json', 'content-length': String(10 * 1024 ** 3)})
      res.write('{"a":')
    })
    const c = await client({maxRetries: 0})
    const err = await failure(c.get('/api/v1/pods'))
    expect(err.message).toMatch(/sent a response to GET \/api\/v1\/pods larger than the limit \(67108864 bytes\)$/)
    expect(err.hints[0]).toContain('MESHVM_MAX_RESPONSE_BYTES')
    c.close()
  })

  it('a chunked body that grows past MESHVM_MAX_RESPONSE_BYTES is cut off', async () => {
    logFault('hangs and limits', 'endless chunked body')
    process.env.MESHVM_MAX_RESPONSE_BYTES = '4096'
    try {
      s.handlers.push((_q, res) => {
        res.writeHead(200, {'content-type': 'application/json'})
        const timer = setInterval(() => {
          if (!res.write('x'.repeat(1024))) return
        }, 1)
        res.on('close', () => clearInterval(timer))
      })
      const c = await client({maxRetries: 0})
      const err = await failure(c.get('/api/v1/pods'))
      expect(err.code).toBe('ResponseTooLarge')
      expect(err.message).toContain('(4096 bytes)')
      c.close()
    } finally {
      delete process.env.MESHVM_MAX_RESPONSE_BYTES
    }
  })

  it('a body that arrives one byte at a time and never ends obeys the request time-out', async () => {
    logFault('hangs and limits', 'body one byte at a time')
    const drip = (_q: unknown, res: import('node:http').ServerResponse) => {
      res.writeHead(200, {'content-type': 'application/json'})
      const timer = setInterval(() => res.write(' '), 20)
      res.on('close', () => clearInterval(timer))
    }
    s.handlers.push(drip, drip)
    const c = await client({timeoutMs: 300, maxRetries: 1})
    const err = await failure(c.get('/api/v1/pods'))
    expect(err.code).toBe('Timeout')
    expect(err.message).toMatch(/^no answer from the API server at https:\/\/127\.0\.0\.1:\d+ \(context "ctx"\) within 300ms \(GET \/api\/v1\/pods\)$/)
    c.close()
  })

  it('a continue token that repeats ends the list instead of paging forever', async () => {
    logFault('hangs and limits', 'continue token that never ends')
    for (let i = 0; i < 5; i++) s.handlers.push((_q, res) => json(res, 200, {items: [{metadata: {name: `p${i}`, uid: `u${i}`}}], metadata: {continue: i < 2 ? `t${i}` : 'same'}}))
    const c = await client()
    const err = await failure(c.list('/api/v1/pods'))
    expect(err.message).toMatch(/\(a list whose continue token repeats\)$/)
    expect(s.seen.length).toBeLessThanOrEqual(4)
    c.close()
  })

  it("a repeating continue token in kube-apiserver's own list shape (pages requested ahead) still ends the list", async () => {
    logFault('hangs and limits', 'continue token that never ends, pipelined paging')
    // kind, apiVersion and metadata before the items: listPages requests the next page from this head.
    for (let i = 0; i < 8; i++) {
      s.handlers.push((_q, res) => {
        res.writeHead(200, {'content-type': 'application/json'})
        res.end(`{"kind":"PodList","apiVersion":"v1","metadata":{"resourceVersion":"1","continue":"${i < 2 ? `t${i}` : 'same'}"},"items":[{"metadata":{"name":"p${i}","uid":"u${i}"}}]}`)
      })
    }
    const c = await client()
    const err = await failure(c.list('/api/v1/pods'))
    expect(err.message).toMatch(/\(a list whose continue token repeats\)$/)
    expect(s.seen.length).toBeLessThanOrEqual(4)
    c.close()
  })

  it('a watch the server closes at once is re-watched with backoff, then given up, with no listener leak', async () => {
    logFault('hangs and limits', 'watch closed at once')
    const warnings: string[] = []
    const onWarning = (w: Error) => warnings.push(w.name)
    process.on('warning', onWarning)
    for (let i = 0; i < 50; i++)
      s.handlers.push((_q, res) => {
        res.writeHead(200, {'content-type': 'application/json'})
        res.end()
      })
    const c = await client()
    const controller = new AbortController()
    // The re-watch loop of a caller (as in war list --watch): resume after every close.
    const loop = async () => {
      for (;;) await c.watch('/api/v1/pods', {}, () => undefined, controller.signal)
    }
    const err = await failure(loop())
    expect(err.message).toMatch(new RegExp(`\\(the watch was closed at once ${MAX_QUICK_WATCH_ENDS} times in a row\\)$`))
    expect(s.seen).toHaveLength(MAX_QUICK_WATCH_ENDS)
    await new Promise((r) => setImmediate(r))
    process.removeListener('warning', onWarning)
    expect(warnings).not.toContain('MaxListenersExceededWarning')
    c.close()
  })

  it('many watches on one signal leave no abort listener behind', async () => {
    logFault('hangs and limits', 'listener leak')
    const controller = new AbortController()
    const c = await client()
    for (let i = 0; i < 15; i++) {
      s.handlers.push((_q, res) => {
        res.writeHead(200, {'content-type': 'application/json'})
        res.end(JSON.stringify({type: 'ADDED', object: {metadata: {name: `p${i}`, resourceVersion: String(i)}}}) + '\n')
      })
      await c.watch('/api/v1/pods', {}, () => undefined, controller.signal)
    }
    expect(getEventListeners(controller.signal, 'abort')).toHaveLength(0)
    c.close()
  })
})

describe('secrets: server text and URLs never show credentials', () => {
  it('removes bearer tokens, Authorization values and JWTs from a Status message', async () => {
    logFault('secrets and terminals', 'credential in Status message')
    const jwt = 'eyJhbGciOiJSUzI1NiJ9.eyJzdWIiOiJzeXN0ZW06YWRtaW4ifQ.c2lnbmF0dXJlLXNlY3JldA'
    s.handlers.push((_q, res) => json(res, 422, {kind: 'Status', code: 422, reason: 'Invalid', message: `bad request with Authorization: Bearer s3cr3t-token and ${jwt} and token=abcd1234efgh`}))
    const c = await client()
    const err = await failure(c.request({method: 'POST', path: '/api/v1/namespaces/a/configmaps', body: {}}))
    expect(err.message).toBe('bad request with Authorization: [redacted] and [redacted JWT] and token=[redacted]')
    c.close()
  })

  it('never shows the userinfo of a server URL', async () => {
    logFault('secrets and terminals', 'userinfo in server URL')
    s.handlers.push(
      (_q, res) => json(res, 500, {kind: 'Status', code: 500, message: 'boom'}),
      (_q, res) => json(res, 500, {kind: 'Status', code: 500, message: 'boom'}),
    )
    const c = await client({kubeconfig: s.kubeconfig({server: `https://admin:hunter2@127.0.0.1:${s.port}`})})
    expect(c.server).toBe(`https://127.0.0.1:${s.port}`)
    const err = await failure(c.get('/x'))
    expect(err.message).not.toContain('hunter2')
    expect(err.message).toContain(`https://127.0.0.1:${s.port}`)
    c.close()
  })
})

/** A CONNECT proxy on loopback that sends every tunnel to 127.0.0.1 (whatever host was asked). */
async function connectProxy(): Promise<{url: string; connects: string[]; close(): Promise<void>}> {
  const connects: string[] = []
  const sockets = new Set<Socket>()
  const proxy = createHttpServer((_q, res) => {
    res.writeHead(405)
    res.end()
  })
  proxy.on('connect', (req, client: Socket) => {
    connects.push(req.url ?? '')
    const port = Number((req.url ?? '').split(':').pop())
    const upstream = connect(port, '127.0.0.1', () => {
      client.write('HTTP/1.1 200 Connection Established\r\n\r\n')
      upstream.pipe(client)
      client.pipe(upstream)
    })
    sockets.add(client).add(upstream)
    upstream.on('error', () => client.destroy())
    client.on('error', () => upstream.destroy())
  })
  await new Promise<void>((r) => proxy.listen(0, '127.0.0.1', r))
  return {
    url: `http://127.0.0.1:${(proxy.address() as AddressInfo).port}`,
    connects,
    async close() {
      for (const so of sockets) so.destroy()
      await new Promise((r) => proxy.close(r))
    },
  }
}

describe('kubectl compatibility: proxies', () => {
  it("tunnels through the cluster's proxy-url, TLS verified end to end", async () => {
    logFault('kubectl compatibility', 'proxy-url')
    const proxy = await connectProxy()
    try {
      s.handlers.push((_q, res) => json(res, 200, {major: '1'}))
      const c = await client({kubeconfig: s.kubeconfig({cluster: [`proxy-url: ${proxy.url}`]})})
      expect(await c.get('/version')).toEqual({major: '1'})
      expect(proxy.connects).toEqual([`127.0.0.1:${s.port}`])
      c.close()
    } finally {
      await proxy.close()
    }
  })

  it("honours HTTPS_PROXY, and NO_PROXY and loopback addresses bypass it, as Go's httpproxy does", async () => {
    logFault('kubectl compatibility', 'HTTPS_PROXY/NO_PROXY')
    const proxy = await connectProxy()
    const saved = {HTTPS_PROXY: process.env.HTTPS_PROXY, NO_PROXY: process.env.NO_PROXY}
    try {
      process.env.HTTPS_PROXY = proxy.url
      delete process.env.NO_PROXY
      // A host name only the proxy can reach; the certificate is checked against tls-server-name.
      const far = s.kubeconfig({server: `https://kube.invalid:${s.port}`, cluster: ['tls-server-name: localhost']})
      s.handlers.push((_q, res) => json(res, 200, {via: 'proxy'}))
      let c = await client({kubeconfig: far})
      expect(await c.get('/version')).toEqual({via: 'proxy'})
      expect(proxy.connects).toEqual([`kube.invalid:${s.port}`])
      c.close()

      // Loopback: direct, even with HTTPS_PROXY set.
      s.handlers.push((_q, res) => json(res, 200, {via: 'direct'}))
      c = await client()
      expect(await c.get('/version')).toEqual({via: 'direct'})
      expect(proxy.connects).toHaveLength(1)
      c.close()

      // NO_PROXY names the host (as a domain suffix): direct, so the name does not resolve.
      process.env.NO_PROXY = 'example.com,.invalid'
      c = await client({kubeconfig: far, maxRetries: 0})
      const err = await failure(c.get('/version'))
      expect(err.code).toBe('Unreachable')
      expect(proxy.connects).toHaveLength(1)
      c.close()
    } finally {
      for (const [k, v] of Object.entries(saved))
        if (v === undefined) delete process.env[k]
        else process.env[k] = v
      await proxy.close()
    }
  })
})
