/**
 * `meshvm bundle verify`, the part that needs no cluster: reading the bundle (a directory, or the
 * .tar.gz `meshvm bundle --archive` writes), and checking its files, modes, cluster.env (parsed as
 * the VM's shell reads it: istio-start.sh does `set -a; . cluster.env`) and the token's claims.
 * Pure apart from reading the files; nothing here prints or returns the token.
 */
import {lstatSync, readdirSync, readFileSync} from 'node:fs'
import {dirname, join} from 'node:path'
import {gunzipSync} from 'node:zlib'
import {parse as parseYaml} from 'yaml'
import {shellQuote} from '../cli/prompt.js'
import {rootCertProblem} from '../bundle/validate.js'
import {jwtClaims} from '../remote-secret/list.js'
import {dns1123Label, dns1123Subdomain} from '../validation/kube.js'

export type CheckStatus = 'pass' | 'warn' | 'fail' | 'skip'

export interface Check {
  /** Stable identifier, e.g. `token.expiry`. */
  id: string
  status: CheckStatus
  detail: string
  fix?: string
}

export interface BundleFileData {
  data: Buffer
  mode: number
  symlink: boolean
}

export type BundleFiles = Map<string, BundleFileData>

export const REQUIRED_FILES = ['mesh.yaml', 'cluster.env', 'root-cert.pem', 'istio-token', 'hosts'] as const

/** Where the checked bundle is: the directory (`bundle verify DIR`) or the archive (`--archive FILE`). */
export type BundleSource = {dir: string} | {archive: string}

/** `istiod-REV.NS.svc:15012` → {service, namespace, revision}. */
export function parseIstiodAddress(address: string): {service: string; namespace: string; revision?: string; port: string} | undefined {
  const m = /^(istiod(?:-([a-z0-9-]+))?)\.([a-z0-9-]+)\.svc(?:\.[a-z0-9.-]+)?:(\d+)$/.exec(address)
  if (!m) return undefined
  return {service: m[1]!, revision: m[2], namespace: m[3]!, port: m[4]!}
}

/**
 * The `meshvm bundle` line that writes this bundle again, to paste as it is: the group and namespace
 * from cluster.env, the revision from CA_ADDR, --autoregister / --no-capture-dns as the bundle was
 * made, and the directory checked (for an archive, the directory holding NAME-bundle.tar.gz, with
 * --archive). --kubeconfig/--context are added where the line is shown (src/lib/cli/invocation.ts).
 * `extra` (e.g. --refresh-token) goes before -d. Placeholders only for what the bundle does not say.
 * Every word is shell-quoted: the names come from a file someone else may have written.
 */
export function bundleCommand(env: Record<string, string>, source: BundleSource | undefined, extra: string[] = []): string {
  const words = ['meshvm', 'bundle', env.ISTIO_META_WORKLOAD_NAME || 'NAME', '-n', env.POD_NAMESPACE || 'NS']
  const revision = env.CA_ADDR ? parseIstiodAddress(env.CA_ADDR)?.revision : undefined
  if (revision) words.push('-r', revision)
  const refresh = extra.includes('--refresh-token')
  // --refresh-token rewrites only the token: the other bundle flags would not be read.
  if (!refresh && env.ISTIO_META_AUTO_REGISTER_GROUP) words.push('--autoregister')
  // A bundle's cluster.env (it names the cluster ID) without ISTIO_META_DNS_CAPTURE was made with --no-capture-dns.
  if (!refresh && env.ISTIO_META_CLUSTER_ID !== undefined && env.ISTIO_META_DNS_CAPTURE !== 'true') words.push('--no-capture-dns')
  words.push(...extra)
  if (source === undefined) words.push('-d', 'DIR')
  else if ('dir' in source) words.push('-d', source.dir)
  else words.push('-d', dirname(source.archive), ...(refresh ? [] : ['--archive']))
  return words.map(shellQuote).join(' ')
}

/** The files of a bundle directory; symbolic links are recorded, never followed. */
export function readBundleDir(dir: string): BundleFiles {
  const files: BundleFiles = new Map()
  for (const name of readdirSync(dir)) {
    const path = join(dir, name)
    const st = lstatSync(path)
    if (st.isSymbolicLink()) files.set(name, {data: Buffer.alloc(0), mode: st.mode, symlink: true})
    else if (st.isFile()) files.set(name, {data: readFileSync(path), mode: st.mode, symlink: false})
  }
  return files
}

/** The regular files of a ustar archive (one directory level), with their modes. */
export function readTarGz(buf: Buffer): BundleFiles {
  let tar: Buffer
  try {
    tar = gunzipSync(buf)
  } catch {
    throw new Error('not a gzip file')
  }
  const files: BundleFiles = new Map()
  for (let off = 0; off + 512 <= tar.length; ) {
    const h = tar.subarray(off, off + 512)
    if (h.every((b) => b === 0)) break
    const field = (start: number, len: number) =>
      h
        .subarray(start, start + len)
        .toString('latin1')
        .replace(/\0.*$/s, '')
        .trim()
    const name = field(0, 100)
    const size = parseInt(field(124, 12) || '0', 8)
    const mode = parseInt(field(100, 8) || '0', 8)
    const type = field(156, 1) || '0'
    if (Number.isNaN(size) || off + 512 + size > tar.length) throw new Error('truncated tar archive')
    const base = name.split('/').filter(Boolean).pop() ?? name
    if (type === '0' || type === '2') files.set(base, {data: Buffer.from(tar.subarray(off + 512, off + 512 + size)), mode, symlink: type === '2'})
    off += 512 + Math.ceil(size / 512) * 512
  }
  return files
}

export interface ParsedEnv {
  values: Record<string, string>
  problems: string[]
}

/**
 * cluster.env as `sh` reads it with `set -a`: NAME=WORD lines, comments, blank lines. A WORD may mix
 * unquoted text, '…' and "…" parts. Anything the shell would expand or run ($, `, ;, |, &, <, >, (, ))
 * is reported instead of evaluated: the bundle is never executed here.
 */
export function parseClusterEnv(text: string): ParsedEnv {
  const values: Record<string, string> = {}
  const problems: string[] = []
  text.split('\n').forEach((raw, i) => {
    const line = raw.replace(/\r$/, '')
    const n = i + 1
    if (/^\s*(#.*)?$/.test(line)) return
    const m = /^\s*(?:export\s+)?([A-Za-z_][A-Za-z0-9_]*)=(.*)$/.exec(line)
    if (!m) {
      problems.push(`line ${n}: not NAME=value (the VM's shell would run it as a command)`)
      return
    }
    const [, name, rest] = m as unknown as [string, string, string]
    let value = ''
    let j = 0
    let bad: string | undefined
    while (j < rest.length && bad === undefined) {
      const c = rest[j]!
      if (c === "'") {
        const end = rest.indexOf("'", j + 1)
        if (end < 0) bad = 'unterminated single quote'
        else {
          value += rest.slice(j + 1, end)
          j = end + 1
        }
      } else if (c === '"') {
        let k = j + 1
        for (; k < rest.length && rest[k] !== '"'; k++) {
          if (rest[k] === '\\' && k + 1 < rest.length && '$`"\\'.includes(rest[k + 1]!)) {
            value += rest[++k]
          } else if (rest[k] === '$' || rest[k] === '`') {
            bad = `${rest[k]} inside double quotes would be expanded by the VM's shell`
            break
          } else value += rest[k]
        }
        if (bad === undefined && k >= rest.length) bad = 'unterminated double quote'
        j = k + 1
      } else if (c === '\\') {
        if (j + 1 < rest.length) value += rest[j + 1]
        j += 2
      } else if (/\s/.test(c)) {
        if (!/^\s*(#.*)?$/.test(rest.slice(j))) bad = 'unquoted space: the rest of the line would run as a command'
        break
      } else if ('$`;|&<>()'.includes(c)) {
        bad = `unquoted ${c} would be interpreted by the VM's shell`
      } else {
        value += c
        j++
      }
    }
    if (bad !== undefined) problems.push(`line ${n} (${name}): ${bad}`)
    else values[name] = value
  })
  return {values, problems}
}

export interface OfflineResult {
  checks: Check[]
  env: Record<string, string>
  source?: BundleSource
  /** The runnable `meshvm bundle` lines that fix a failure: write the bundle again, or only a new token. */
  rerun: string
  refresh: string
  /** The token (kept in memory for the TokenReview; never shown). */
  token?: string
  tokenSubject?: string
  rootCert?: string
  discoveryAddress?: string
  hosts?: string
}

const text = (f: BundleFileData | undefined) => f?.data.toString('utf8')

function formatIn(ms: number): string {
  const s = Math.round(Math.abs(ms) / 1000)
  if (s < 120) return `${s}s`
  const m = Math.round(s / 60)
  if (m < 180) return `${m}m`
  const h = Math.round(m / 60)
  return h < 72 ? `${h}h` : `${Math.round(h / 24)}d`
}

export function offlineChecks(files: BundleFiles, o: {now: Date; warnWithinMs: number; source?: BundleSource}): OfflineResult {
  const checks: Check[] = []
  // Failures found before cluster.env is read get the same fix line, made once cluster.env is read.
  const fixes: Check[] = []
  const rerun = (c: Check): Check => {
    fixes.push(c)
    return c
  }
  const missing = REQUIRED_FILES.filter((f) => !files.has(f))
  checks.push(missing.length === 0 ? {id: 'files', status: 'pass', detail: `${REQUIRED_FILES.join(', ')} present`} : rerun({id: 'files', status: 'fail', detail: `missing: ${missing.join(', ')}`}))
  const token = files.get('istio-token')
  if (token) {
    const mode = (token.mode & 0o777).toString(8).padStart(4, '0')
    if (token.symlink) checks.push({id: 'files.token-mode', status: 'fail', detail: 'istio-token is a symbolic link', fix: 'replace it with the file itself (mode 0600)'})
    else if ((token.mode & 0o077) !== 0) {
      const loose: Check = {id: 'files.token-mode', status: 'fail', detail: `istio-token has mode ${mode}: others can read the VM's credential`}
      // A directory's file can be fixed in place; an archive's mode comes from the archive.
      checks.push(o.source && 'dir' in o.source ? {...loose, fix: `chmod 600 ${shellQuote(join(o.source.dir, 'istio-token'))}`} : rerun(loose))
    } else checks.push({id: 'files.token-mode', status: 'pass', detail: `istio-token mode ${mode}`})
  }

  const result: OfflineResult = {checks, env: {}, source: o.source, rerun: '', refresh: ''}
  const envText = text(files.get('cluster.env'))
  if (envText !== undefined) {
    const parsed = parseClusterEnv(envText)
    result.env = {...parsed.values}
    // The group and namespace as Kubernetes could hold them (a WorkloadGroup name is a DNS-1123
    // subdomain, a namespace a DNS-1123 label); a bad one is left out: no fix line, live check or
    // doctor step names it.
    const badNames: string[] = []
    for (const [key, check] of [
      ['POD_NAMESPACE', dns1123Label],
      ['ISTIO_META_WORKLOAD_NAME', dns1123Subdomain],
    ] as const) {
      const problem = key in result.env ? check(result.env[key]!) : undefined
      if (problem) {
        badNames.push(`cluster.env: ${key} ${JSON.stringify(result.env[key])} ${problem}`)
        delete result.env[key]
      }
    }
    const needed = ['ISTIO_META_CLUSTER_ID', 'SERVICE_ACCOUNT', 'POD_NAMESPACE', 'ISTIO_META_WORKLOAD_NAME'].filter((k) => !(k in parsed.values))
    const problems = [...parsed.problems, ...badNames]
    if (problems.length > 0) checks.push(rerun({id: 'cluster-env', status: 'fail', detail: problems.join('; ')}))
    else if (needed.length > 0) checks.push(rerun({id: 'cluster-env', status: 'fail', detail: `sets no ${needed.join(', ')}`}))
    else checks.push({id: 'cluster-env', status: 'pass', detail: `${Object.keys(parsed.values).length} variables, parsed as sh reads them`})
  }

  // The lines name the group, namespace and revision cluster.env gives (placeholders without it).
  result.rerun = bundleCommand(result.env, o.source)
  result.refresh = bundleCommand(result.env, o.source, ['--refresh-token'])
  for (const c of fixes) c.fix = result.rerun

  const meshText = text(files.get('mesh.yaml'))
  if (meshText !== undefined) {
    try {
      const mesh = parseYaml(meshText) as {defaultConfig?: {discoveryAddress?: unknown}} | null
      const da = mesh?.defaultConfig?.discoveryAddress
      if (typeof da === 'string') result.discoveryAddress = da
      checks.push({id: 'mesh-yaml', status: 'pass', detail: `valid YAML${typeof da === 'string' ? `; discoveryAddress ${da}` : ''}`})
    } catch (err) {
      checks.push({id: 'mesh-yaml', status: 'fail', detail: `not valid YAML: ${(err as Error).message.split('\n')[0]}`, fix: result.rerun})
    }
  }
  result.rootCert = text(files.get('root-cert.pem'))
  result.hosts = text(files.get('hosts'))
  // The rule `bundle` writes root-cert.pem by: certificates only (a key or a stray line is a problem).
  const rootCertFormat = result.rootCert === undefined ? undefined : rootCertProblem(result.rootCert)
  if (rootCertFormat) checks.push({id: 'root-cert.format', status: 'fail', detail: `root-cert.pem: ${rootCertFormat}`, fix: result.rerun})

  if (token) {
    const t = token.data.toString('utf8').trim()
    result.token = t
    const claims = jwtClaims(t)
    if (!claims) checks.push({id: 'token.format', status: 'fail', detail: 'istio-token is not a JWT', fix: result.refresh})
    else {
      const refresh = result.refresh
      if (typeof claims.exp !== 'number') checks.push({id: 'token.expiry', status: 'warn', detail: 'the token has no expiry (not a TokenRequest token)'})
      else {
        const left = claims.exp * 1000 - o.now.getTime()
        const when = new Date(claims.exp * 1000).toISOString()
        if (left <= 0) checks.push({id: 'token.expiry', status: 'fail', detail: `expired ${formatIn(left)} ago (${when})`, fix: refresh})
        else if (left <= o.warnWithinMs) checks.push({id: 'token.expiry', status: 'warn', detail: `expires in ${formatIn(left)} (${when}): the sidecar must connect before then`, fix: refresh})
        else checks.push({id: 'token.expiry', status: 'pass', detail: `expires in ${formatIn(left)} (${when})`})
      }
      const aud = Array.isArray(claims.aud) ? claims.aud : typeof claims.aud === 'string' ? [claims.aud] : []
      checks.push(
        aud.includes('istio-ca')
          ? {id: 'token.audience', status: 'pass', detail: 'audience istio-ca'}
          : {id: 'token.audience', status: 'fail', detail: `audience ${aud.length > 0 ? aud.join(', ') : '(none)'}, istiod's CA wants istio-ca`, fix: refresh},
      )
      const sub = typeof claims.sub === 'string' ? claims.sub : ''
      result.tokenSubject = sub
      const want = result.env.POD_NAMESPACE && result.env.SERVICE_ACCOUNT ? `system:serviceaccount:${result.env.POD_NAMESPACE}:${result.env.SERVICE_ACCOUNT}` : undefined
      if (want !== undefined) {
        checks.push(
          sub === want
            ? {id: 'token.service-account', status: 'pass', detail: `for ${sub}, as cluster.env says`}
            : {id: 'token.service-account', status: 'fail', detail: `the token is for ${sub || '(no subject)'}, cluster.env says ${want}`, fix: result.rerun},
        )
      }
    }
  }
  return result
}
