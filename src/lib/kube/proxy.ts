/**
 * HTTP proxies as kubectl uses them: the cluster's `proxy-url` in the kubeconfig wins; otherwise
 * HTTPS_PROXY/https_proxy (HTTP_PROXY for an http:// server) with NO_PROXY/no_proxy, following Go's
 * golang.org/x/net/http/httpproxy (used by client-go through http.ProxyFromEnvironment):
 * - requests to "localhost" and loopback IPs never use the environment's proxy;
 * - NO_PROXY is a comma-separated list of host names (matching the host and its sub-domains; a
 *   leading "." or "*." is the same), IPs, CIDRs, each optionally with ":port", or "*" for all.
 * The API server connection is tunnelled (HTTP CONNECT, or SOCKS5 through the `socks` library, as
 * client-go's proxy-url allows), and TLS runs inside the tunnel under kube/tls.ts's policy: OpenSSL
 * verifies the API server's certificate end to end, the proxy only sees ciphertext, and a failing
 * proxy is an error, never a reason to connect directly.
 *
 * CONNECT is a dozen lines here rather than https-proxy-agent: that agent hands the TLS socket to
 * HTTP before the handshake ends, and kube/tls.ts hands it only after the verdict. NO_PROXY follows
 * Go's rules (CIDRs, loopback) which proxy-from-env does not.
 */
import {request as httpRequest} from 'node:http'
import {BlockList, isIP} from 'node:net'
import type {Duplex} from 'node:stream'
import {SocksClient} from 'socks'
import {ExitCode, MeshvmError} from '../errors.js'
import type {Tunnel} from './tls.js'

function isLoopback(host: string): boolean {
  if (host === 'localhost' || host.endsWith('.localhost')) return true
  if (isIP(host) === 4) return host.startsWith('127.')
  if (isIP(host) === 6) return host === '::1' || host === '0:0:0:0:0:0:0:1'
  return false
}

/** True when NO_PROXY says this host:port goes direct. */
function noProxyMatches(noProxy: string, host: string, port: string): boolean {
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
    if (url.protocol !== 'http:' && url.protocol !== 'socks5:' && url.protocol !== 'socks5h:') {
      throw new MeshvmError(`${where}: only http:// and socks5:// proxies are supported (got ${url.protocol}//)`, {
        exit: ExitCode.USAGE,
        code: 'BadKubeconfig',
        hints: ['use an HTTP CONNECT or SOCKS5 proxy, or connect without a proxy'],
      })
    }
    return url
  }
  if (proxyUrl) return parse(proxyUrl, "the cluster's proxy-url in the kubeconfig")
  const https = server.protocol === 'https:'
  const value = https ? (env.HTTPS_PROXY ?? env.https_proxy) : (env.HTTP_PROXY ?? env.http_proxy)
  if (!value) return undefined
  const host = server.hostname.replace(/^\[|\]$/g, '')
  if (isLoopback(host)) return undefined
  const port = server.port || (https ? '443' : '80')
  if (noProxyMatches(env.NO_PROXY ?? env.no_proxy ?? '', host, port)) return undefined
  return parse(value, https ? 'HTTPS_PROXY' : 'HTTP_PROXY')
}

function proxyError(message: string): NodeJS.ErrnoException {
  return Object.assign(new Error(message), {code: 'MESHVM_PROXY'})
}

/** The raw tunnel to host:port through `proxy` (HTTP CONNECT or SOCKS5); TLS then runs inside it. */
export function proxyTunnel(proxy: URL): Tunnel {
  const user = decodeURIComponent(proxy.username)
  const password = decodeURIComponent(proxy.password)
  const proxyHost = proxy.hostname.replace(/^\[|\]$/g, '')
  if (proxy.protocol === 'socks5:' || proxy.protocol === 'socks5h:') {
    return async (host, port) => {
      try {
        // The host name goes to the proxy, which resolves it (as Go's SOCKS5 dialer does).
        const {socket} = await SocksClient.createConnection({
          proxy: {host: proxyHost, port: Number(proxy.port || 1080), type: 5, ...(user || password ? {userId: user, password} : {})},
          command: 'connect',
          destination: {host, port},
        })
        return socket
      } catch (err) {
        throw proxyError(`the SOCKS5 proxy ${proxy.host} refused the tunnel: ${(err as Error).message.split('\n')[0]}`)
      }
    }
  }
  return (host, port) =>
    new Promise<Duplex>((resolve, reject) => {
      const target = `${host.includes(':') ? `[${host}]` : host}:${port}`
      const headers: Record<string, string> = {Host: target}
      if (user || password) headers['Proxy-Authorization'] = `Basic ${Buffer.from(`${user}:${password}`).toString('base64')}`
      const req = httpRequest({host: proxyHost, port: proxy.port || 80, method: 'CONNECT', path: target, headers, agent: false})
      req.once('connect', (res, socket) => {
        if (res.statusCode !== 200) {
          socket.destroy()
          reject(proxyError(`the proxy ${proxy.host} refused the tunnel: ${res.statusCode}`))
          return
        }
        resolve(socket)
      })
      req.once('error', (err: NodeJS.ErrnoException) => reject(err.code ? err : proxyError(`the proxy ${proxy.host} failed: ${err.message}`)))
      req.end()
    })
}
