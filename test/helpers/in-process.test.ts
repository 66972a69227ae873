/**
 * runCommand() keeps what only a process gives to a process: an exec credential plugin's stderr
 * (it inherits the process's file descriptor 2) and the streams a timed-out command still writes to.
 */
import {chmodSync, mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {createServer, type Server, type Socket} from 'node:net'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, describe, expect, it, vi} from 'vitest'
import {inProcessRefused, runCommand} from './in-process.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-in-process-'))
const servers: Server[] = []
const connections: Socket[] = []
afterAll(async () => {
  for (const c of connections) c.destroy()
  await Promise.all(servers.map((s) => new Promise((resolve) => s.close(resolve))))
  rmSync(work, {recursive: true, force: true})
})

interface Endpoint {
  port: number
  kubeconfig: string
  /** The first connection arrived. */
  connected: Promise<void>
  /** From now on every connection gets text that is not TLS (held ones too): the command fails. */
  release(): void
}

let n = 0
/** An API server address on 127.0.0.1 that holds connections (no TLS answer) until released. */
async function endpoint(user: string[] = ['token: not-a-secret-0123456789'], held = true): Promise<Endpoint> {
  const sockets: Socket[] = []
  let releasing = !held
  let connected!: () => void
  const first = new Promise<void>((resolve) => (connected = resolve))
  const server = createServer((socket) => {
    connected()
    connections.push(socket)
    socket.on('error', () => undefined)
    if (releasing) socket.end('not TLS\n')
    else sockets.push(socket)
  })
  servers.push(server)
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve))
  const port = (server.address() as {port: number}).port
  const kubeconfig = join(work, `kubeconfig-${++n}`)
  writeFileSync(
    kubeconfig,
    [
      'apiVersion: v1',
      'kind: Config',
      `clusters: [{name: c, cluster: {server: "https://127.0.0.1:${port}", insecure-skip-tls-verify: true}}]`,
      'contexts: [{name: c, context: {cluster: c, user: u}}]',
      'current-context: c',
      'users:',
      '- name: u',
      '  user:',
      ...user.map((l) => `    ${l}`),
      '',
    ].join('\n'),
    {mode: 0o600},
  )
  return {
    port,
    kubeconfig,
    connected: first,
    release: () => {
      releasing = true
      for (const s of sockets.splice(0)) s.end('not TLS\n')
    },
  }
}

const notTls = (port: number) => `Error: cannot connect to the API server at https://127.0.0.1:${port} (context "c"): the server does not speak TLS on this port\n`

describe('runCommand', () => {
  it("hands a run whose kubeconfig names an exec plugin to a process: the plugin's stderr is captured", async () => {
    const plugin = join(work, 'plugin.sh')
    writeFileSync(
      plugin,
      `#!/bin/sh\necho "plugin says: log in first" >&2\necho '{"apiVersion":"client.authentication.k8s.io/v1","kind":"ExecCredential","status":{"token":"not-a-secret-0123456789"}}'\n`,
    )
    chmodSync(plugin, 0o700)
    const api = await endpoint(['exec:', '  apiVersion: client.authentication.k8s.io/v1', `  command: ${plugin}`, '  interactiveMode: Never'], false)
    for (const run of [
      () => runCommand(['war', 'list', '-A'], {env: {KUBECONFIG: api.kubeconfig}}),
      () => runCommand(['war', 'list', '-A', '--kubeconfig', api.kubeconfig]),
      () => runCommand(['war', 'list', '-A', `--kubeconfig=${api.kubeconfig}`]),
    ]) {
      const res = await run()
      expect(res.stderr).toBe(`plugin says: log in first\n${notTls(api.port)}`)
      expect(res.code, res.stderr).toBe(3)
    }
  })

  it('after a time-out, runs go to a process until the timed-out command has finished: its late output reaches no other run', async () => {
    const a = await endpoint()
    const b = await endpoint()
    await expect(runCommand(['war', 'list', '-A', '--kubeconfig', a.kubeconfig], {timeoutMs: 2000})).rejects.toThrow(/did not finish within 2000 ms/)
    const refusal = inProcessRefused()
    expect(refusal?.reason).toBe(`meshvm war list -A --kubeconfig ${a.kubeconfig} timed out and still runs in this worker`)
    // What the timed-out command writes once it fails, now that no run is active: this process's stderr.
    const realStderr = process.stderr
    const late: string[] = []
    vi.spyOn(realStderr, 'write').mockImplementation((chunk: string | Uint8Array) => {
      late.push(String(chunk))
      return true
    })

    const next = runCommand(['war', 'list', '-A', '--kubeconfig', b.kubeconfig])
    await b.connected
    a.release()
    await refusal!.settled
    expect(late.join('')).toBe(notTls(a.port))
    b.release()
    const res = await next
    expect(res.stderr).toBe(notTls(b.port))
    expect(res.code).toBe(3)
    // The timed-out command has ended: the worker runs commands in-process again.
    expect(inProcessRefused()).toBeUndefined()
  })
})
