/**
 * The wizard, driven through a real pseudo-terminal: the CLI sees a TTY on stdin and stdout and
 * asks its questions; we answer like a person would, then check the result and the printed
 * equivalent command line.
 */
import {mkdtempSync, readFileSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {spawn, type IPty} from '@lydell/node-pty'
import {describe, expect, it} from 'vitest'
import {parseAllDocuments} from 'yaml'
import {BIN, REPO_ROOT, runCli} from '../helpers/cli.js'
import {stripAnsi} from '../../src/lib/errors.js'

class Terminal {
  private buffer = ''
  private readonly exited: Promise<number>
  constructor(private readonly pty: IPty) {
    pty.onData((d) => (this.buffer += d))
    this.exited = new Promise((resolve) => pty.onExit(({exitCode}) => resolve(exitCode)))
  }
  get screen(): string {
    return stripAnsi(this.buffer).replace(/\r/g, '')
  }
  async waitFor(text: string, timeoutMs = 10_000): Promise<void> {
    const start = Date.now()
    while (!this.screen.includes(text)) {
      if (Date.now() - start > timeoutMs) throw new Error(`timed out waiting for ${JSON.stringify(text)}; screen:\n${this.screen}`)
      await new Promise((r) => setTimeout(r, 20))
    }
  }
  async answer(prompt: string, keys: string): Promise<void> {
    await this.waitFor(prompt)
    this.pty.write(keys)
  }
  exit(): Promise<number> {
    return this.exited
  }
}

function startPty(args: string[]): Terminal {
  return new Terminal(spawn(process.execPath, [BIN, ...args], {cols: 200, rows: 50, cwd: REPO_ROOT, env: {...process.env, NO_COLOR: '1', TERM: 'xterm'} as Record<string, string>}))
}

const DOWN = '\u001B[B'

describe('meshvm onboard wizard', () => {
  it('asks for what is missing, prints the manifests and the equivalent command line', async () => {
    const t = startPty(['onboard'])
    await t.answer('Workload group name', 'web\r')
    await t.answer('Namespace', 'apps\r')
    await t.answer('Ports the VMs serve', '\r') // default http=8080
    await t.answer('Workload labels', '\r') // default app=web
    await t.answer('Readiness probe', DOWN + '\r') // HTTP GET
    await t.answer('Probe PORT[/PATH]', '\r') // default 8080/healthz
    await t.answer('ServiceEntry instead', 'n\r')
    await t.answer('Service account the VMs run as', '\r') // default
    await t.answer('Also create the namespace apps?', '\r') // no
    await t.answer('Apply the objects to the cluster now', '\r') // no: print them
    expect(await t.exit()).toBe(0)
    const screen = t.screen
    expect(screen).toContain('kind: WorkloadGroup')
    expect(screen).toContain('path: /healthz')
    expect(screen).toContain('kind: Service\n')
    const line = /To do this again without questions:\n\s+(meshvm onboard .*)/.exec(screen)?.[1]
    expect(line).toBe('meshvm onboard web -n apps --port http=8080 --label app=web --probe-http 8080/healthz')

    // The printed command line, run without a terminal, produces the same manifests.
    const replay = await runCli(line!.split(' ').slice(1))
    expect(replay.code).toBe(0)
    expect(screen.replace(/\n+/g, '\n')).toContain(replay.stdout.trim().replace(/\n+/g, '\n'))
  }, 30_000)

  it('runs with stdout piped (prompts on stderr) and asks for the service account, namespace creation and whether to apply', async () => {
    const work = mkdtempSync(join(tmpdir(), 'meshvm-wizard-'))
    try {
      const out = join(work, 'web.yaml')
      const t = new Terminal(
        spawn('/bin/sh', ['-c', 'exec "$0" "$1" onboard -p http=8080 -l app=web --probe-tcp 8080 > "$2"', process.execPath, BIN, out], {
          cols: 200,
          rows: 50,
          cwd: REPO_ROOT,
          env: {...process.env, NO_COLOR: '1', TERM: 'xterm'} as Record<string, string>,
        }),
      )
      await t.answer('Workload group name', 'web\r')
      await t.answer('Namespace', 'apps\r')
      await t.answer('ServiceEntry instead', 'n\r')
      await t.answer('Service account the VMs run as', 'web-vm\r')
      await t.answer('Also create the namespace apps?', 'y\r')
      await t.answer('Also create the ServiceAccount web-vm?', '\r') // default yes
      await t.answer('Apply the objects to the cluster now', 'n\r')
      expect(await t.exit()).toBe(0)
      // The manifests went to the file, not to the terminal.
      expect(t.screen).not.toContain('kind: WorkloadGroup')
      const kinds = parseAllDocuments(readFileSync(out, 'utf8')).map((d) => (d.toJS() as {kind: string}).kind)
      expect(kinds).toEqual(['Namespace', 'ServiceAccount', 'WorkloadGroup', 'Service'])
      expect(t.screen).toContain('meshvm onboard web -n apps --port http=8080 --label app=web --service-account web-vm --create-namespace --create-service-account --probe-tcp 8080')
    } finally {
      rmSync(work, {recursive: true, force: true})
    }
  }, 30_000)

  it('re-asks when an answer is invalid', async () => {
    const t = startPty(['onboard', '-n', 'apps', '-p', 'http=80', '-l', 'app=x', '--probe-tcp', '80', '--service-entry'])
    await t.answer('Workload group name', 'Bad_Name\r')
    await t.waitFor('must be a DNS-1123 label')
    for (let i = 0; i < 8; i++) await t.answer('', '\u007F') // backspace
    await t.answer('', 'good\r')
    await t.answer('Service account the VMs run as', '\r')
    await t.answer('Also create the namespace apps?', '\r')
    await t.answer('Apply the objects to the cluster now', '\r')
    expect(await t.exit()).toBe(0)
    expect(t.screen).toContain('kind: ServiceEntry')
    expect(t.screen).toContain('meshvm onboard good -n apps --port http=80 --label app=x --service-entry --probe-tcp 80')
  }, 30_000)

  it('Ctrl-C exits 130 with a one-line message and writes nothing', async () => {
    const t = startPty(['onboard', '-d', '/tmp/meshvm-wizard-never'])
    await t.answer('Workload group name', '\u0003')
    expect(await t.exit()).toBe(130)
    expect(t.screen).toContain('Error: interrupted: nothing was written')
    expect(t.screen).not.toMatch(/^\s+at /m)
  }, 30_000)

  it('never prompts without a terminal', async () => {
    const r = await runCli(['onboard'], {input: 'web\napps\n'})
    expect(r.code).toBe(2)
    expect(r.stderr).toMatch(/^Error: missing NAME, --namespace, --port/)
  })
})
