/** kubectl and istioctl habits that hold on every command (issue 18): -h, help, did-you-mean, version, plugin mode, hints. */
import {readFileSync, mkdtempSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {execFile} from 'node:child_process'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {parse} from 'yaml'
import {BIN, REPO_ROOT, STACK_TRACE} from '../helpers/cli.js'
import {runCommand} from '../helpers/in-process.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {seedDemoMesh} from '../cluster/demo-mesh.js'

const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'oclif.manifest.json'), 'utf8')) as {commands: Record<string, {hidden?: boolean}>}
// `help -h` is meshvm's own help, as with oclif and kubectl; hidden commands (__complete) have none.
const ids = Object.entries(manifest.commands)
  .filter(([id, c]) => id !== 'help' && !c.hidden)
  .map(([id]) => id.split(':'))
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {version: string}

const work = mkdtempSync(join(tmpdir(), 'meshvm-conventions-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))
const PLUGIN = join(work, 'kubectl-meshvm')
symlinkSync(BIN, PLUGIN)
const runPlugin = (args: string[]): Promise<{code: number; stdout: string; stderr: string}> =>
  new Promise((resolve) => {
    execFile(process.execPath, [PLUGIN, ...args], {env: {...process.env, NO_COLOR: '1'}}, (err, stdout, stderr) => resolve({code: err ? ((err as {code?: number}).code ?? 1) : 0, stdout, stderr}))
  })

describe.concurrent('-h and help on every command', () => {
  it.each(ids.map((words) => [words.join(' '), words]))('%s -h is --help', async (_name, words) => {
    const [short, long, viaHelp] = await Promise.all([runCommand([...words, '-h']), runCommand([...words, '--help']), runCommand(['help', ...words])])
    expect(short.code, short.stderr).toBe(0)
    expect(short.stdout).toContain(`$ meshvm ${words.join(' ')}`)
    expect(short.stdout).toBe(long.stdout)
    expect(viaHelp.code, viaHelp.stderr).toBe(0)
    expect(viaHelp.stdout).toBe(long.stdout)
  })

  it('help without a command lists the commands', async () => {
    const r = await runCommand(['help'])
    expect(r.code).toBe(0)
    expect(r.stdout).toContain('onboard')
    expect(r.stdout).toContain('war')
  })
})

describe.concurrent('did you mean', () => {
  it.each([
    [['war', 'lsit'], 'unknown command "war lsit" for "meshvm"', 'did you mean: meshvm war list?'],
    [['wat', 'list'], 'unknown command "wat list" for "meshvm"', 'did you mean: meshvm war list?'],
    [['onbaord', 'web'], 'unknown command "onbaord web" for "meshvm"', 'did you mean: meshvm onboard?'],
    [['help', 'war', 'lsit'], 'unknown command "war lsit" for "meshvm"', 'did you mean: meshvm war list?'],
  ])('%j', async (args, message, hint) => {
    const r = await runCommand(args)
    expect(r.code).toBe(2)
    expect(r.stderr.split('\n')[0]).toBe(`Error: ${message}`)
    expect(r.stderr).toContain(`Hint: ${hint}`)
    expect(r.stderr).not.toMatch(STACK_TRACE)
  })
})

describe.concurrent('meshvm version (as istioctl version --remote=false)', () => {
  it('plain, --short, -o json, -o yaml', async () => {
    const [plain, short, json, yaml] = await Promise.all([runCommand(['version']), runCommand(['version', '--short']), runCommand(['version', '-o', 'json']), runCommand(['version', '-o', 'yaml'])])
    expect(plain.stdout).toBe(`client version: ${pkg.version}\n`)
    expect(short.stdout).toBe(`${pkg.version}\n`)
    const info = {clientVersion: {version: pkg.version, node_version: process.version, platform: `${process.platform}-${process.arch}`}}
    expect(JSON.parse(json.stdout)).toEqual(info)
    expect(parse(yaml.stdout)).toEqual(info)
  })

  it('--version and -v print the one-line user agent', async () => {
    const [long, short] = await Promise.all([runCommand(['--version']), runCommand(['-v'])])
    expect(long.stdout).toBe(`meshvm/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`)
    expect(short.stdout).toBe(long.stdout)
  })

  it('a bad -o is a usage error naming the flag', async () => {
    const r = await runCommand(['version', '-o', 'table'])
    expect(r.code).toBe(2)
    expect(r.stderr.split('\n')[0]).toBe('Error: -o/--output "table": expected one of json, yaml')
  })
})

describe.concurrent('suggested command lines', () => {
  it("keep the user's --context, --kubeconfig and -n", async () => {
    const r = await runCommand(['war', 'describe', 'x', '--bogus', '--context', 'c2', '-n', 'apps', '--kubeconfig', '/nonexistent/kubeconfig'])
    expect(r.code).toBe(2)
    expect(r.stderr).toContain('Hint: see meshvm war describe --kubeconfig /nonexistent/kubeconfig --context c2 -n apps --help for the flags this command takes')
  })

  it('say `kubectl meshvm` in kubectl-plugin mode, as help does', async () => {
    const [help, typo] = await Promise.all([runPlugin(['war', 'list', '-h']), runPlugin(['war', 'lsit'])])
    expect(help.stdout).toContain('$ kubectl meshvm war list')
    expect(help.stdout).not.toMatch(/\$ meshvm /)
    expect(typo.code).toBe(2)
    expect(typo.stderr).toContain('Error: unknown command "war lsit" for "kubectl meshvm"')
    expect(typo.stderr).toContain('Hint: did you mean: kubectl meshvm war list?')
  })
})

describe('an empty value means what kubectl makes of it (issue 27)', () => {
  // The context's namespace is `payments`: `-n ''` (a script's `-n "$NS"` with NS unset) must mean it.
  let cluster: TestCluster
  let env: Record<string, string>
  beforeAll(async () => {
    cluster = await startCluster({contextName: 'empty-values'})
    seedDemoMesh(cluster)
    const kubeconfig = join(work, 'payments.kubeconfig')
    writeFileSync(kubeconfig, readFileSync(cluster.kubeconfigPath, 'utf8').replace('namespace: default', 'namespace: payments'), {mode: 0o600})
    env = {...cluster.env, KUBECONFIG: kubeconfig}
  })
  afterAll(() => cluster?.stop())
  // Ages tick between two runs.
  const ageless = (text: string) => text.replace(/\b\d+[smhdy](?:\d+[smhdy])?\b/g, 'AGE').replace(/ +/g, ' ')

  it.each([
    [['proxy-status', '--vms'], 'mainframe-gw'],
    [['war', 'list'], 'mainframe-gw-192.168.10.21'],
    [['precheck'], 'payments'],
  ])('%j -n "" is %j without -n', async (args, expected) => {
    const [plain, empty, equals] = await Promise.all([runCommand(args, {env}), runCommand([...args, '-n', ''], {env}), runCommand([...args, '--namespace='], {env})])
    expect(plain.stdout + plain.stderr).toContain(expected)
    expect(ageless(empty.stdout)).toBe(ageless(plain.stdout))
    expect(ageless(empty.stderr)).toBe(ageless(plain.stderr))
    expect(empty.code).toBe(plain.code)
    expect(ageless(equals.stdout)).toBe(ageless(plain.stdout))
  })

  it.each([[['war', 'list', '-l', '', '-o', '', '--sort-by', '', '-L', '', '--context', '', '--kubeconfig', '', '-r', '', '--request-timeout', '']], [['war', 'list', '-i', '']]])(
    '%j: the defaults of kubectl and istioctl',
    async (args) => {
      const [plain, empty] = await Promise.all([runCommand(['war', 'list'], {env}), runCommand(args, {env})])
      expect(empty.code, empty.stderr).toBe(0)
      expect(ageless(empty.stdout)).toBe(ageless(plain.stdout))
    },
  )

  it.each([
    [['war', 'list', '--sort-by=nope'], `--sort-by: couldn't find any field with path "{.nope}" in the list of objects`],
    [['proxy-status', '--vms', '-o', 'json', '--sort-by', 'nope'], `--sort-by: couldn't find any field with path "{.nope}" in the list of objects`],
    [['war', 'list', '--sort-by', '{.metadata.name'], `--sort-by "{.metadata.name": unexpected path string, expected a 'name1.name2' or '.name1.name2' or '{name1.name2}' or '{.name1.name2}'`],
  ])('%j: --sort-by is refused as kubectl refuses it', async (args, message) => {
    const r = await runCommand(args, {env})
    expect([r.code, r.stdout]).toEqual([2, ''])
    expect(r.stderr.split('\n')[0]).toBe(`Error: ${message}`)
  })

  it.each([
    [['war', 'list', '--group', ''], '--group "": must not be empty; give a value, or leave the flag out'],
    [['war', 'list', '--chunk-size='], '--chunk-size "": must not be empty; give a value, or leave the flag out'],
    [['war', 'delete', 'x', '--dry-run='], '--dry-run "": must not be empty; expected one of none, client, server'],
    [['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--network', ''], '--network "": must not be empty; give a value, or leave the flag out'],
    [['create-remote-secret', '--output-file', ''], '--output-file "": must not be empty; give a value, or leave the flag out'],
  ])('%j: a usage error naming the flag', async (args, message) => {
    const r = await runCommand(args, {env})
    expect(r.code).toBe(2)
    expect(r.stderr.split('\n')[0]).toBe(`Error: ${message}`)
    expect(r.stderr).not.toMatch(STACK_TRACE)
  })
})

describe.concurrent("one style for every usage error, meshvm's (issue 27)", () => {
  it.each([
    [
      ['war', 'describe'],
      ['Error: missing NAME: NAME or TYPE/NAME (as -o name prints it) of the registration; several may be given', 'Hint: see meshvm war describe --help for the arguments this command takes'],
    ],
    [['completion'], ['Error: missing SHELL: the shell; expected one of bash, zsh, fish', 'Hint: see meshvm completion --help for the arguments this command takes']],
    [
      ['war', 'list', '--chunk-sise', '3'],
      ['Error: unknown flag --chunk-sise', 'Hint: did you mean --chunk-size?', 'Hint: see meshvm war list --help for the flags this command takes'],
    ],
    [
      ['war', 'list', '--chunk-size', 'x'],
      ['Error: --chunk-size "x": expected a whole number', 'Hint: see meshvm war list --help for the flags this command takes'],
    ],
    [
      ['war', 'reconcile', '--fix', '--dry-run=client'],
      ['Error: --fix and --dry-run=client cannot be combined: give one of them', 'Hint: see meshvm war reconcile --help for the flags this command takes'],
    ],
    [
      ['proxy-status', 'a', 'b'],
      ['Error: Unexpected argument: b', 'Hint: see meshvm proxy-status --help for the arguments this command takes'],
    ],
  ])('%j', async (args, lines) => {
    const r = await runCommand(args, {env: {KUBECONFIG: '/nonexistent/kubeconfig'}})
    expect(r.code).toBe(2)
    expect(r.stdout).toBe('')
    expect(r.stderr).toBe(lines.join('\n') + '\n')
  })
})
