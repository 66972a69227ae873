/**
 * A VM host of the real-control-plane tests: the sidecar of client.ts (certificate from real istiod's
 * CA, ADS with auto-registration, health reports) plus what `meshvm doctor --vm-exec` reads on a VM,
 * each from the sidecar's real state, in the shapes the real programs answer:
 *
 * - pilot-agent's status port (15021) `/healthz/ready`: 200 once Envoy received its first CDS and LDS
 *   from istiod, 503 with pilot-agent's message before (pilot/cmd/pilot-agent/status/ready/probe.go).
 *   The application's readiness probe does not enter it: that result only goes to istiod, as
 *   HealthInformation (pkg/istio-agent/health), and shows on the WorkloadEntry's Healthy condition.
 * - Envoy's admin port (15000) `/certs`: the workload certificate real istiod issued (cert_chain) and
 *   the root Envoy trusts (ca_cert), which pilot-agent takes from the CA's answer, its last certificate
 *   (security/pkg/nodeagent/cache/secretcache.go: istiod's CA publishes no separate root bundle);
 *   `/clusters`: the `xds-grpc` cluster, which Istio's bootstrap points at pilot-agent's xDS proxy on a
 *   unix socket, `./etc/istio/proxy/XDS` (tools/packaging/common/envoy_bootstrap.json, ConfigPath
 *   ./etc/istio/proxy), not at istiod; `/ready`: LIVE.
 * - pilot-agent's TCP connection to istiod, as `ss -tn state established '( dport = :15012 )'` shows it
 *   on a VM (test/real/vm/bin/ss): while the sidecar's ADS stream to real istiod is open, one
 *   connection to the address the VM's hosts file gives istiod's name, on the discovery address's
 *   port (the VM's view of it; the test host reaches istiod on loopback). That, not Envoy's xds-grpc
 *   cluster, is what tells whether the VM reaches istiod.
 * - the host itself, always up: a control port standing in for systemd (`systemctl restart istio` and
 *   `stop istio` through test/real/vm/exec.sh) that also answers `GET /connections` for ss, and a line in the registry directory exec.sh reads:
 *   `ADMIN_PORT STATUS_PORT CONTROL_PORT HOSTS_FILE`, in a file named after the VM's address.
 *
 * A stopped sidecar closes both of its ports, as a stopped pilot-agent and Envoy would; they open on
 * the same port numbers when it starts again. When istiod ends the stream (stopped, rolled), the
 * sidecar connects again by itself, as pilot-agent does. Everything listens on 127.0.0.1.
 */
import {X509Certificate} from 'node:crypto'
import {readFileSync, rmSync, writeFileSync} from 'node:fs'
import {createServer, type IncomingMessage, type Server, type ServerResponse} from 'node:http'
import {join} from 'node:path'
import {parse as parseYaml} from 'yaml'
import {joinIstiod, type VmConnection} from './client.js'

/** Where Istio's Envoy bootstrap sends xDS: pilot-agent's xDS proxy (ConfigPath/XDS). */
export const ENVOY_XDS_PIPE = './etc/istio/proxy/XDS'

export interface VmHostOptions {
  bundleDir: string
  /** istiod's 15012 as 127.0.0.1:PORT, read at each start (istiod may have been restarted on new ports). */
  istiodAddress: () => string
  instanceIp: string
  /** The directory test/real/vm/exec.sh reads ($MESHVM_REAL_VMS). */
  registryDir: string
  hostname?: string
  /** The first sidecar life's certificate lifetime (a later start asks for the default 24h). */
  firstValiditySeconds?: number
}

interface Life {
  connection: VmConnection
  /** Envoy received its first CDS and LDS (pilot-agent's readiness, which then stays ready). */
  configReceived: boolean
  /** stopSidecar was called: no more reconnecting. */
  stopped: boolean
  /** The ADS stream to istiod is open (pilot-agent's connection to istiod). */
  istiodConnected: boolean
}

/** Where the VM connects for istiod: the discovery address's host as its hosts file maps it, and its port. */
function istiodAsTheVmSeesIt(bundleDir: string): string | undefined {
  try {
    const mesh = (parseYaml(readFileSync(join(bundleDir, 'mesh.yaml'), 'utf8')) ?? {}) as {defaultConfig?: {discoveryAddress?: string}}
    const m = /^(.*):(\d+)$/.exec(mesh.defaultConfig?.discoveryAddress ?? 'istiod.istio-system.svc:15012')
    if (!m) return undefined
    for (const line of readFileSync(join(bundleDir, 'hosts'), 'utf8').split('\n')) {
      const [ip, ...names] = line.replace(/#.*/, '').trim().split(/\s+/)
      if (ip && names.includes(m[1]!)) return `${ip.includes(':') ? `[${ip}]` : ip}:${m[2]}`
    }
  } catch {
    // No bundle on the VM: no address to connect to.
  }
  return undefined
}

/** Envoy's admin CertificateDetails (envoy/admin/v3/certs.proto) for one PEM certificate. */
function certificateDetails(pem: string, now: number): Record<string, unknown> {
  const c = new X509Certificate(pem)
  const notAfter = new Date(c.validTo)
  const uris = (c.subjectAltName ?? '')
    .split(', ')
    .filter((s) => s.startsWith('URI:'))
    .map((s) => ({uri: s.slice(4)}))
  const iso = (d: Date) => d.toISOString().replace(/\.\d+Z$/, 'Z')
  return {
    path: '<inline>',
    serial_number: c.serialNumber.toLowerCase().replace(/^0+(?=.)/, ''),
    subject_alt_names: uris,
    days_until_expiration: String(Math.max(0, Math.floor((notAfter.getTime() - now) / 86_400_000))),
    valid_from: iso(new Date(c.validFrom)),
    expiration_time: iso(notAfter),
  }
}

function listen(server: Server, port = 0): Promise<number> {
  return new Promise((resolve, reject) => {
    if (server.listening) return resolve((server.address() as {port: number}).port)
    server.once('error', reject)
    server.listen(port, '127.0.0.1', () => {
      server.off('error', reject)
      resolve((server.address() as {port: number}).port)
    })
  })
}

function close(server: Server): Promise<void> {
  return new Promise((resolve) => {
    if (!server.listening) return resolve()
    server.close(() => resolve())
    server.closeAllConnections()
  })
}

export class VmHost {
  private life?: Life
  private app: {healthy: boolean; message?: string} = {healthy: true}
  private ports = {admin: 0, status: 0, control: 0}
  private readonly admin: Server
  private readonly status: Server
  private readonly control: Server
  private starts = 0
  private queue: Promise<unknown> = Promise.resolve()

  private constructor(private readonly o: VmHostOptions) {
    this.admin = createServer((req, res) => this.answerAdmin(req, res))
    this.status = createServer((req, res) => this.answerStatus(req, res))
    this.control = createServer((req, res) => this.answerControl(req, res))
  }

  /** The host, its sidecar started (certificate, ADS, first config, a first probe result reported). */
  static async start(o: VmHostOptions): Promise<VmHost> {
    const host = new VmHost(o)
    host.ports.control = await listen(host.control)
    // The sidecar's two ports: chosen once, opened while it runs.
    host.ports.admin = await listen(host.admin)
    host.ports.status = await listen(host.status)
    writeFileSync(join(o.registryDir, o.instanceIp), `${host.ports.admin} ${host.ports.status} ${host.ports.control} ${join(o.bundleDir, 'hosts')}\n`)
    try {
      await host.startSidecar()
    } catch (err) {
      await host.close()
      throw err
    }
    return host
  }

  get address(): string {
    return this.o.instanceIp
  }

  get connection(): VmConnection | undefined {
    return this.life?.connection
  }

  get running(): boolean {
    return this.life !== undefined
  }

  /** One at a time: a restart asked while another runs waits for it. */
  private serial<T>(fn: () => Promise<T>): Promise<T> {
    const next = this.queue.then(fn, fn)
    this.queue = next.catch(() => undefined)
    return next
  }

  /** pilot-agent starting: the bundle as it is now on the VM, a new key and certificate, ADS, the first probe. */
  startSidecar(): Promise<void> {
    return this.serial(async () => {
      if (this.life) return
      const first = this.starts++ === 0
      const connection = await joinIstiod({
        bundleDir: this.o.bundleDir,
        istiodAddress: this.o.istiodAddress(),
        instanceIp: this.o.instanceIp,
        hostname: this.o.hostname,
        ...(first && this.o.firstValiditySeconds !== undefined ? {validitySeconds: this.o.firstValiditySeconds} : {}),
      })
      const life: Life = {connection, configReceived: false, stopped: false, istiodConnected: true}
      this.life = life
      await listen(this.admin, this.ports.admin)
      await listen(this.status, this.ports.status)
      try {
        await connection.synced()
        life.configReceived = true
        await connection.reportHealth(this.app.healthy, this.app.message)
      } catch (err) {
        await this.stopLife()
        throw err
      }
      void this.reconnectWhenEnded(life)
    })
  }

  /**
   * pilot-agent keeps running when istiod ends the stream (istiod stopped or rolled): it connects again,
   * with a back-off, while Envoy keeps its configuration, certificate and readiness.
   */
  private async reconnectWhenEnded(life: Life): Promise<void> {
    await life.connection.ended()
    life.istiodConnected = false
    for (let delay = 200; !life.stopped && this.life === life; delay = Math.min(delay * 2, 2000)) {
      try {
        const connection = await joinIstiod({bundleDir: this.o.bundleDir, istiodAddress: this.o.istiodAddress(), instanceIp: this.o.instanceIp, hostname: this.o.hostname})
        if (life.stopped || this.life !== life) return void (await connection.close())
        life.connection = connection
        life.istiodConnected = true
        await connection.synced()
        await connection.reportHealth(this.app.healthy, this.app.message)
        return void (await this.reconnectWhenEnded(life))
      } catch {
        // istiod not back yet, or it ended the new stream: try again.
        await new Promise((resolve) => setTimeout(resolve, delay))
      }
    }
  }

  private async stopLife(): Promise<void> {
    const life = this.life
    this.life = undefined
    if (life) life.stopped = true
    await Promise.all([close(this.admin), close(this.status)])
    await life?.connection.close()
  }

  /** pilot-agent and Envoy stopping: the ADS stream ends (istiod marks the entry disconnected), the ports close. */
  stopSidecar(): Promise<void> {
    return this.serial(() => this.stopLife())
  }

  async restartSidecar(): Promise<void> {
    await this.stopSidecar()
    await this.startSidecar()
  }

  /** The application's readiness as pilot-agent's probe sees it, reported to istiod (HealthInformation). */
  async setAppHealth(healthy: boolean, message?: string): Promise<void> {
    this.app = {healthy, ...(message !== undefined ? {message} : {})}
    if (this.life?.configReceived) await this.life.connection.reportHealth(healthy, message)
  }

  /** Envoy rejecting (NACK) istiod's configuration of one type from now on; undefined: accepting it again. */
  rejectConfig(typeUrl: string, message: string | undefined): void {
    this.life?.connection.rejectConfig(typeUrl, message)
  }

  /** Everything stopped, the registry line removed. */
  async close(): Promise<void> {
    await this.stopSidecar().catch(() => undefined)
    await close(this.control)
    rmSync(join(this.o.registryDir, this.o.instanceIp), {force: true})
  }

  private answerStatus(req: IncomingMessage, res: ServerResponse): void {
    if (req.url !== '/healthz/ready') return void res.writeHead(404).end()
    // pilot-agent's words when Envoy has no configuration yet (ready/probe.go checkConfigStatus).
    if (!this.life?.configReceived)
      return void res.writeHead(503).end('config not received from XDS server (is Istiod running?): cds updates: 0 successful, 0 rejected; lds updates: 0 successful, 0 rejected\n')
    res.writeHead(200).end()
  }

  private answerAdmin(req: IncomingMessage, res: ServerResponse): void {
    const life = this.life
    if (!life) return void res.writeHead(503).end()
    if (req.url === '/ready') return void res.writeHead(200).end('LIVE\n')
    if (req.url === '/certs') {
      const chain = life.connection.certificateChain
      const now = Date.now()
      // ROOTCA is the CA answer's last certificate; the workload certificate is its first.
      const body = {certificates: [{ca_cert: [certificateDetails(chain[chain.length - 1]!, now)], cert_chain: [certificateDetails(chain[0]!, now)]}]}
      return void res.writeHead(200, {'content-type': 'application/json'}).end(JSON.stringify(body, null, 1))
    }
    if (req.url === '/clusters') {
      // Envoy's connection is to pilot-agent's xDS proxy, open while pilot-agent runs.
      return void res
        .writeHead(200, {'content-type': 'text/plain'})
        .end(['xds-grpc::observability_name::xds-grpc', `xds-grpc::${ENVOY_XDS_PIPE}::cx_active::1`, `xds-grpc::${ENVOY_XDS_PIPE}::health_flags::healthy`, ''].join('\n'))
    }
    res.writeHead(404).end()
  }

  private answerControl(req: IncomingMessage, res: ServerResponse): void {
    if (req.method === 'GET' && req.url === '/connections') {
      // LOCAL PEER of pilot-agent's connection to istiod (the local port is not the test host's: the VM's view).
      const peer = this.life?.istiodConnected ? istiodAsTheVmSeesIt(this.o.bundleDir) : undefined
      return void res.writeHead(200).end(peer ? `${this.o.instanceIp}:40312 ${peer}\n` : '')
    }
    const action = req.method === 'POST' ? req.url : undefined
    const run = action === '/restart' ? () => this.restartSidecar() : action === '/stop' ? () => this.stopSidecar() : undefined
    if (!run) return void res.writeHead(404).end('unknown\n')
    run().then(
      () => res.writeHead(200).end('ok\n'),
      (err: Error) => res.writeHead(500).end(`istio: ${err.message}\n`),
    )
  }
}
