/**
 * HTTP proxies as kubectl uses them: the cluster's `proxy-url` in the kubeconfig wins; otherwise
 * HTTPS_PROXY/https_proxy (HTTP_PROXY for an http:// server) with NO_PROXY/no_proxy, following Go's
 * golang.org/x/net/http/httpproxy (used by client-go through http.ProxyFromEnvironment):
 * - requests to "localhost" and loopback IPs never use the environment's proxy;
 * - NO_PROXY is a comma-separated list of host names (matching the host and its sub-domains; a
 *   leading "." or "*." is the same), IPs, CIDRs, each optionally with ":port", or "*" for all.
 * The API server connection is tunnelled with CONNECT, so TLS (and its verification) stays end to end.
 */
import {request as httpRequest} from 'node:http'
import {Agent, type AgentOptions, type RequestOptions} from 'node:https'
import {isIP} from 'node:net'
import type {Duplex} from 'node:stream'
import {connect as tlsConnect, type ConnectionOptions} from 'node:tls'
import {BlockList} from 'node:net'
import {ExitCode, MeshvmError} from '../errors.js'

function isLoopback(host: string): boolean {
  if (host === 'localhost' || host.endsWith('.localhost')) return true
  if (isIP(host) === 4) return host.startsWith('127.')
  if (isIP(host) === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1'
  return false
}

/** True when NO_PROXY says this host:port goes direct. */
export function noProxyMatches(noProxy: string, host: string, port: string): boolean {
  const h = host.toLowerCase().replace(/^\[|\]$/g, '')
  for (const raw of noProxy.split(',')) {
    let entry = raw.trim().toLowerCase()
    if (entry === '') continue
    if (entry === '*') return true
    if (entry.includes('/')) {
      const [net, bits] = entry.split('/')
      const type = isIP(net ?? '')
      if (type && isIP(h) === type) {
        const list = new BlockList()
        try {
          list.addSubnet(net!, Number(bits), type === 4 ? 'ipv4' : 'ipv6')
          if (list.check(h, type === 4 ? 'ipv4' : 'ipv6')) return true
        } catch {
          // Not a CIDR: ignored, as Go ignores it.
        }
      }
      continue
    }
    let entryPort = ''
    const m = /^(\[[^\]]+\]|[^:]+):(\d+)$/.exec(entry)
    if (m && isIP(entry) !== 6) {
      entry = m[1]!
      entryPort = m[2]!
    }
    entry = entry.replace(/^\[|\]$/g, '')
    if (entryPort && entryPort !== port) continue
    if (isIP(entry)) {
      if (entry === h) return true
      continue
    }
    const name = entry.replace(/^\*?\./, '')
    if (h === name || h.endsWith(`.${name}`)) return true
  }
  return false
}

/** The proxy URL for this API server, or undefined to connect directly. */
export function proxyFor(server: URL, proxyUrl: string | undefined, env: NodeJS.ProcessEnv = process.env): URL | undefined {
  const parse = (text: string, where: string): URL => {
    let url: URL
    try {
      url = new URL(text.includes('://') ? text : `http://${text}`)
    } catch {
      throw new MeshvmError(`${where} is not a URL`, {exit: ExitCode.USAGE, code: 'BadKubeconfig'})
    }
    if (url.protocol !== 'http:') {
      throw new MeshvmError(`${where}: only http:// proxies are supported (got ${url.protocol}//)`, {exit: ExitCode.USAGE, code: 'BadKubeconfig', hints: ['use an HTTP CONNECT proxy, or connect without a proxy']})
    }
    return url
  }
  if (proxyUrl) return parse(proxyUrl, 'the cluster\'s proxy-url in the kubeconfig')
  const https = server.protocol === 'https:'
  const value = https ? (env.HTTPS_PROXY ?? env.https_proxy) : (env.HTTP_PROXY ?? env.http_proxy)
  if (!value) return undefined
  const host = server.hostname.replace(/^\[|\]$/g, '')
  if (isLoopback(host)) return undefined
  const port = server.port || (https ? '443' : '80')
  if (noProxyMatches(env.NO_PROXY ?? env.no_proxy ?? '', host, port)) return undefined
  return parse(value, https ? 'HTTPS_PROXY' : 'HTTP_PROXY')
}

/**
 * An https.Agent whose connections go through an HTTP proxy's CONNECT tunnel; TLS to the API
 * server (certificate checks included) runs inside the tunnel.
 */
export class TunnelAgent extends Agent {
  constructor(
    private readonly proxy: URL,
    options: AgentOptions,
  ) {
    super(options)
  }

  override createConnection(requestOptions: RequestOptions, callback?: (err: Error | null, stream: Duplex) => void): undefined {
    const options = requestOptions as ConnectionOptions & {host?: string; port?: number}
    const target = `${options.host?.includes(':') ? `[${options.host}]` : options.host}:${options.port}`
    const headers: Record<string, string> = {Host: target}
    if (this.proxy.username || this.proxy.password) {
      headers['Proxy-Authorization'] = `Basic ${Buffer.from(`${decodeURIComponent(this.proxy.username)}:${decodeURIComponent(this.proxy.password)}`).toString('base64')}`
    }
    const req = httpRequest({host: this.proxy.hostname.replace(/^\[|\]$/g, ''), port: this.proxy.port || 80, method: 'CONNECT', path: target, headers, agent: false})
    let done = false
    const fail = (err: Error): void => {
      if (done) return
      done = true
      callback?.(err, undefined as unknown as Duplex)
    }
    req.once('connect', (res, socket) => {
      if (res.statusCode !== 200) {
        socket.destroy()
        fail(Object.assign(new Error(`the proxy ${this.proxy.host} refused the tunnel: ${res.statusCode}`), {code: 'MESHVM_PROXY'}))
        return
      }
      done = true
      const tls = tlsConnect({...options, socket, servername: options.servername ?? (isIP(options.host ?? '') ? undefined : options.host)})
      callback?.(null, tls)
    })
    req.once('error', fail)
    req.end()
    return undefined
  }
}
