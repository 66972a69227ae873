/**
 * Shared pieces of the attacker-style tests (test/faults/hostile-*.test.ts): a scripted HTTPS
 * server on loopback that answers however a test tells it to, a kubeconfig for it, and the fault log
 * that `npm run test:faults` summarises by class.
 */
import {appendFileSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {createServer, type Server} from 'node:https'
import type {IncomingMessage, ServerResponse} from 'node:http'
import type {AddressInfo} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {testPki} from '../cluster/pki.js'

/** The hardening classes of issue #17, as `npm run test:faults` reports them. */
export type FaultClass = 'false success' | 'files' | 'hangs and limits' | 'secrets and terminals' | 'crashes' | 'kubectl compatibility' | 'shell injection'

export function logFault(cls: FaultClass, fault: string, command = 'kube client'): void {
  const log = process.env.MESHVM_FAULT_LOG
  if (log) appendFileSync(log, JSON.stringify({command, fault, class: cls}) + '\n')
}

export type Handler = (req: IncomingMessage, res: ServerResponse, body: string) => void

export interface HostileServer {
  url: string
  port: number
  /** Answers, in order; when none is left the server answers 500. */
  handlers: Handler[]
  seen: {method: string; url: string; headers: IncomingMessage['headers']}[]
  /** A kubeconfig file for this server (token "s3cr3t-token"), with extra lines for cluster/user. */
  kubeconfig(options?: {server?: string; cluster?: string[]; user?: string[]; name?: string}): string
  dir: string
  close(): Promise<void>
}

export async function hostileServer(): Promise<HostileServer> {
  const pki = testPki()
  const dir = mkdtempSync(join(tmpdir(), 'meshvm-hostile-'))
  const state = {handlers: [] as Handler[], seen: [] as HostileServer['seen']}
  const server: Server = createServer({cert: pki.certPem, key: pki.keyPem}, (req, res) => {
    let body = ''
    req.on('data', (c) => (body += c))
    req.on('end', () => {
      state.seen.push({method: req.method ?? '', url: req.url ?? '', headers: req.headers})
      const h = state.handlers.shift()
      if (h) h(req, res, body)
      else json(res, 500, {kind: 'Status', message: 'no handler'})
    })
  })
  await new Promise<void>((r) => server.listen(0, '127.0.0.1', r))
  const port = (server.address() as AddressInfo).port
  let n = 0
  return {
    url: `https://127.0.0.1:${port}`,
    port,
    get handlers() {
      return state.handlers
    },
    set handlers(h) {
      state.handlers = h
    },
    get seen() {
      return state.seen
    },
    set seen(s) {
      state.seen = s
    },
    dir,
    kubeconfig(options = {}) {
      const file = join(dir, options.name ?? `config-${++n}`)
      writeFileSync(
        file,
        [
          'apiVersion: v1',
          'kind: Config',
          'clusters:',
          '- name: c',
          '  cluster:',
          `    server: ${options.server ?? `https://127.0.0.1:${port}`}`,
          `    certificate-authority-data: ${Buffer.from(pki.caPem).toString('base64')}`,
          ...(options.cluster ?? []).map((l) => `    ${l}`),
          'contexts:',
          '- name: ctx',
          '  context: {cluster: c, user: u, namespace: team}',
          'current-context: ctx',
          'users:',
          '- name: u',
          '  user:',
          ...(options.user ?? ['token: s3cr3t-token']).map((l) => `    ${l}`),
          '',
        ].join('\n'),
      )
      return file
    },
    async close() {
      server.closeAllConnections()
      await new Promise((r) => server.close(r))
      rmSync(dir, {recursive: true, force: true})
    },
  }
}

export function json(res: ServerResponse, status: number, body: unknown, headers: Record<string, string> = {}): void {
  res.writeHead(status, {'content-type': 'application/json', ...headers})
  res.end(JSON.stringify(body))
}
