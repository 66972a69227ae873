/**
 * `doctor --vm-exec`: the read-only checks run on the VM itself (what each reads: docs/doctor.md,
 * "--vm-exec"). One POSIX sh script goes on the standard input of the user's command template (e.g.
 * `ssh "$MESHVM_VM_ADDRESS"`), and the answer comes back in sections marked `@@meshvm-doctor NAME`.
 *
 * Values embedded in the script are validated by the caller and shell-quoted here; nothing the VM
 * answers is executed or shown unescaped.
 */
import {spawn} from 'node:child_process'
import {X509Certificate} from 'node:crypto'
import {shellQuote} from '../cli/prompt.js'
import {isRecord} from '../util/records.js'
import {pemCertificates} from '../util/pem.js'

export const PROBE_MARK = '@@meshvm-doctor'

/** What to ask the VM's application: the probe's kind, its path (httpGet) and the ports to try, the probe's first. */
export interface AppTarget {
  kind: 'http' | 'tcp'
  path?: string
  ports: number[]
}

/** A TCP port number. */
export const isPort = (n: unknown): n is number => Number.isInteger(n) && (n as number) > 0 && (n as number) < 65536

/** A probe path that can go into a URL and a shell word as it is (pilot-agent sends it as written). */
export function safeProbePath(path: string): boolean {
  return /^\/[A-Za-z0-9._~!$&'()*+,;=:@%/?-]*$/.test(path) && path.length <= 1024
}

/**
 * The script the VM runs. `istiodHost` is the host name of the bundle's discovery address, `istiodPort`
 * its port (15012 when not given); `app`, the readiness probe's target (ports are whole numbers and the
 * path passes safeProbePath: the caller checks).
 */
export function probeScript(o: {istiodHost: string; istiodPort?: number; app?: AppTarget}): string {
  const port = isPort(o.istiodPort) ? o.istiodPort : 15012
  const hexPort = port.toString(16).toUpperCase().padStart(4, '0')
  const section = (name: string) => `echo; echo '${PROBE_MARK} ${name}'`
  // Each port: PORT HTTP-CODE CONNECTS CURL-EXIT (000, 0 and exit 7: refused). Only the probe's port of
  // an httpGet probe gets the GET pilot-agent sends; every other port (a database, say) only a TCP
  // connection that sends nothing (curl's telnet with no input; exit 28 once it gives up waiting, with
  // the connection made), as a tcpSocket probe does.
  const app = o.app
    ? [
        section('app'),
        ...o.app.ports.filter(isPort).map((p, i) => {
          const get = i === 0 && o.app!.kind === 'http'
          const request = get ? `--max-time 3 ${shellQuote(`http://127.0.0.1:${p}${o.app!.path ?? '/'}`)}` : `--max-time 1 telnet://127.0.0.1:${p} </dev/null`
          return `code=$(curl -s -o /dev/null -w '%{http_code} %{num_connects}' ${request} 2>/dev/null) && rc=0 || rc=$?; echo "${p} \${code:-000 0} $rc"`
        }),
      ]
    : []
  return [
    '#!/bin/sh',
    '# meshvm doctor: read-only checks of the Istio sidecar on this VM.',
    `istiod_host=${shellQuote(o.istiodHost)}`,
    'get() { curl -s --max-time 3 "$1" 2>/dev/null || wget -q -T 3 -O - "$1" 2>/dev/null; }',
    section('ready'),
    `curl -s -o /dev/null -w '%{http_code}' --max-time 3 http://127.0.0.1:15021/healthz/ready 2>/dev/null || echo unreachable`,
    section('certs'),
    'get http://127.0.0.1:15000/certs',
    // Envoy's xds-grpc cluster is pilot-agent's unix socket (Istio's bootstrap), which says nothing of
    // istiod: pilot-agent's own connection to istiod's port is what the VM sees of it. Only established
    // connections to that port are listed (state 01 in /proc/net/tcp), so the answer stays small.
    section('istiod'),
    `if command -v ss >/dev/null 2>&1; then echo 'via ss ${port}'; ss -tn state established '( dport = :${port} )' 2>/dev/null; elif [ -r /proc/net/tcp ]; then echo 'via proc ${port}'; awk '$4 == "01" && substr($3, length($3) - 4) == ":${hexPort}" {print $3}' /proc/net/tcp /proc/net/tcp6 2>/dev/null; fi`,
    section('interception'),
    `{ iptables-save -t nat 2>/dev/null; nft list ruleset 2>/dev/null; } | grep -c -E 'ISTIO_(OUTPUT|REDIRECT|IN_REDIRECT)|istio' || true`,
    section('dns'),
    `getent hosts "$istiod_host" 2>/dev/null | head -n 1 || true`,
    // The settings of the VM's mesh.yaml a new bundle would change if remade with default flags (DNS
    // capture, cluster ID): a fix that sends the VM a new mesh.yaml keeps them.
    section('mesh'),
    `if m=$(cat /etc/istio/config/mesh 2>/dev/null); then echo read; printf '%s\\n' "$m" | grep -E '^ *ISTIO_META_(DNS_CAPTURE|CLUSTER_ID):' || true; fi`,
    ...app,
    section('end'),
    '',
  ].join('\n')
}

export interface VmProbe {
  /** HTTP status of pilot-agent's /healthz/ready, or 'unreachable'. */
  ready?: string
  /** The workload certificate Envoy serves. */
  cert?: {expires?: string; daysLeft?: number; serial?: string}
  /** Serial numbers of the roots Envoy trusts (lower-case hex, no leading zeros). */
  rootSerials: string[]
  /**
   * pilot-agent's established TCP connections to istiod's port, by peer address (HOST:PORT as the VM
   * sees it: the east-west gateway's address, when the hosts file points there); undefined when the VM
   * has neither ss nor /proc/net/tcp.
   */
  istiod?: {peers: string[]; port: number}
  /** Number of Istio interception rules found (iptables or nftables); undefined when not read. */
  interceptionRules?: number
  /** What the VM's resolver returns for istiod's host (an address), or '' when it resolves nothing. */
  dns?: string
  /** The VM's /etc/istio/config/mesh, when it could be read: whether it captures DNS, and its cluster ID. */
  mesh?: {dnsCapture: boolean; clusterId?: string}
  /** What answered on the probe's port and the group's ports: HTTP code ('000': none), whether a connection was made, curl's exit (7: refused). */
  app?: {port: number; code: string; connected: boolean; exit: number}[]
  /** The sections the answer had: a VM that stopped half-way is reported as such. */
  sections: string[]
}

/**
 * The peer of one line of `ss -tn state established …`: the second ADDRESS:PORT word (the first is the
 * local one). Header lines and anything else give undefined.
 */
export function ssPeer(line: string): string | undefined {
  const addrs = line.split(/\s+/).filter((w) => /^\S+:\d+$/.test(w))
  // ss writes an IPv4-mapped IPv6 peer as [::ffff:10.0.0.1]:15012
  return addrs[1]?.replace(/^\[::ffff:([0-9.]+)\]/i, '$1')
}

/** One /proc/net/tcp(6) address (hex, host byte order per 32-bit word) as ADDRESS:PORT; undefined when it does not parse. */
export function procAddress(hex: string): string | undefined {
  const m = /^([0-9A-Fa-f]{8}|[0-9A-Fa-f]{32}):([0-9A-Fa-f]{4})$/.exec(hex.trim())
  if (!m) return undefined
  const port = Number.parseInt(m[2]!, 16)
  // Each 32-bit word is written in host (little-endian) byte order: swap32 puts its bytes back in address order.
  const bytes = [...Buffer.from(m[1]!, 'hex').swap32()]
  if (bytes.length === 4) return `${bytes.join('.')}:${port}`
  // IPv4-mapped (::ffff:a.b.c.d) as the IPv4 address, as ss prints it.
  if (bytes.slice(0, 10).every((b) => b === 0) && bytes[10] === 0xff && bytes[11] === 0xff) return `${bytes.slice(12).join('.')}:${port}`
  const groups: string[] = []
  for (let i = 0; i < 16; i += 2) groups.push(((bytes[i]! << 8) | bytes[i + 1]!).toString(16))
  return `[${groups.join(':').replace(/(^|:)0(:0)+(:|$)/, '::')}]:${port}`
}

export function normalSerial(serial: string): string {
  return serial
    .toLowerCase()
    .replace(/[^0-9a-f]/g, '')
    .replace(/^0+(?=.)/, '')
}

/** The serials of every certificate of a PEM bundle (istio-ca-root-cert may hold several roots while one is rotated). */
export function pemSerials(pem: string): string[] {
  return pemCertificates(pem)
    .map(pemSerial)
    .filter((serial) => serial !== undefined)
}

/** The serial of a PEM certificate, as Envoy prints serials; undefined when it does not parse. */
export function pemSerial(pem: string): string | undefined {
  try {
    return normalSerial(new X509Certificate(pem).serialNumber)
  } catch {
    return undefined
  }
}

/** The entries of a list that are objects ([] for anything else). */
export function records(list: unknown): Record<string, unknown>[] {
  return Array.isArray(list) ? list.filter(isRecord) : []
}

/** Parses the probe's answer. Never throws: what is missing stays undefined. */
export function parseProbe(text: string): VmProbe {
  // Each section: a line `@@meshvm-doctor NAME`, then its body up to the next such line. Lines end at
  // \n only (a multiline ^ would also start one after a lone \r, U+2028 or U+2029).
  const sections = new Map<string, string>()
  for (const part of text.split(new RegExp(`(?:^|\n)${PROBE_MARK} `)).slice(1)) {
    const [name = '', ...body] = part.split('\n')
    sections.set(name.trim(), body.join('\n').trim())
  }

  const probe: VmProbe = {rootSerials: [], sections: [...sections.keys()]}
  const ready = sections.get('ready')
  if (ready !== undefined && ready !== '') probe.ready = /^\d{3}$/.test(ready) ? ready : 'unreachable'

  const certs = sections.get('certs')
  if (certs) {
    try {
      const doc: unknown = JSON.parse(certs)
      for (const c of records(isRecord(doc) ? doc.certificates : undefined)) {
        for (const root of records(c.ca_cert)) if (typeof root.serial_number === 'string') probe.rootSerials.push(normalSerial(root.serial_number))
        const leaf = records(c.cert_chain)[0]
        if (leaf && !probe.cert) {
          const days = Number(leaf.days_until_expiration)
          probe.cert = {
            expires: typeof leaf.expiration_time === 'string' ? leaf.expiration_time : undefined,
            daysLeft: Number.isFinite(days) ? days : undefined,
            serial: typeof leaf.serial_number === 'string' ? normalSerial(leaf.serial_number) : undefined,
          }
        }
      }
    } catch {
      // Not JSON: Envoy's admin port answered something else; the cert stays unknown.
    }
  }

  const istiod = sections.get('istiod')
  if (istiod !== undefined) {
    const lines = istiod
      .split('\n')
      .map((l) => l.trim())
      .filter((l) => l !== '')
    const via = /^via (ss|proc) (\d+)$/.exec(lines.shift() ?? '')
    if (via) {
      const peers = lines.map((line) => (via[1] === 'ss' ? ssPeer(line) : procAddress(line))).filter((peer) => peer !== undefined)
      probe.istiod = {peers: [...new Set(peers)], port: Number(via[2])}
    }
  }

  const rules = sections.get('interception')
  if (rules !== undefined && /^\d+$/.test(rules)) probe.interceptionRules = Number(rules)
  const dns = sections.get('dns')
  if (dns !== undefined) probe.dns = dns.split(/\s+/)[0] ?? ''
  const mesh = sections.get('mesh')
  if (mesh !== undefined) {
    const lines = mesh.split('\n').map((l) => l.trim())
    if (lines[0] === 'read') {
      const value = (key: string) => {
        const line = lines.find((l) => l.startsWith(`${key}:`))
        return line
          ?.slice(key.length + 1)
          .trim()
          .replace(/^(["'])(.*)\1$/, '$2')
      }
      const clusterId = value('ISTIO_META_CLUSTER_ID')
      probe.mesh = {dnsCapture: value('ISTIO_META_DNS_CAPTURE') === 'true', ...(clusterId ? {clusterId} : {})}
    }
  }
  const app = sections.get('app')
  if (app !== undefined) {
    probe.app = []
    for (const line of app.split('\n')) {
      const m = /^(\d+) (\d{3}) (\d+) (\d+)$/.exec(line.trim())
      if (m) probe.app.push({port: Number(m[1]), code: m[2]!, connected: Number(m[3]) > 0, exit: Number(m[4])})
    }
  }
  return probe
}

export interface ExecResult {
  code: number
  stdout: string
  stderr: string
  /** The answer was cut at maxBytes, or the command ran past the time-out and was stopped. */
  truncated?: boolean
  timedOut?: boolean
}

/**
 * Runs the user's command template through sh with `env`, the script on its stdin. Output is bounded
 * (what passes maxBytes is dropped and the command stopped) and so is time.
 */
export function runVmExec(template: string, env: Record<string, string>, script: string, o: {timeoutMs: number; maxBytes?: number}): Promise<ExecResult> {
  const maxBytes = o.maxBytes ?? 1024 * 1024
  return new Promise((resolve) => {
    const child = spawn('/bin/sh', ['-c', template], {env: {...process.env, ...env}, stdio: ['pipe', 'pipe', 'pipe'], detached: process.platform !== 'win32'})
    const out: Buffer[] = []
    const err: Buffer[] = []
    let size = 0
    let truncated = false
    let timedOut = false
    const stop = (): void => {
      try {
        // The template may start a process tree (ssh, a wrapper): stop the whole group.
        if (child.pid !== undefined && process.platform !== 'win32') process.kill(-child.pid, 'SIGKILL')
        else child.kill('SIGKILL')
      } catch {
        // already gone
      }
    }
    const timer = setTimeout(() => {
      timedOut = true
      stop()
    }, o.timeoutMs)
    const keep = (into: Buffer[]) => (d: Buffer) => {
      if (truncated) return
      size += d.length
      if (size > maxBytes) {
        truncated = true
        stop()
        return
      }
      into.push(d)
    }
    child.stdout.on('data', keep(out))
    child.stderr.on('data', keep(err))
    child.stdin.on('error', () => {}) // a template that ignores stdin closes it early
    child.stdin.end(script)
    child.on('error', (e) => {
      clearTimeout(timer)
      resolve({code: 127, stdout: '', stderr: e.message})
    })
    child.on('close', (code, sig) => {
      clearTimeout(timer)
      resolve({code: code ?? (sig ? 128 : 1), stdout: Buffer.concat(out).toString('utf8'), stderr: Buffer.concat(err).toString('utf8'), truncated, timedOut})
    })
  })
}
