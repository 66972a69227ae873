/**
 * Shell completion in real shells: the scripts ask `meshvm __complete` (one engine), which answers from
 * the command list and, for names, from the kubeconfig and the cluster within a short time limit.
 */
import {execFile, execFileSync} from 'node:child_process'
import {existsSync, mkdirSync, mkdtempSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {spawn} from '@lydell/node-pty'
import {BIN, REPO_ROOT, runCli} from '../helpers/cli.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-completion-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))
// No `meshvm` on the PATH: the script calls the meshvm that generated it by its absolute path, so
// it works where meshvm is only an alias (the README's `alias meshvm="node $PWD/bin/run.js"`).
const PATH = (process.env.PATH ?? '')
  .split(':')
  .filter((d) => !existsSync(join(d, 'meshvm')))
  .join(':')

let script = ''
/** Runs the completion function as bash runs it at a TAB: COMP_WORDS/COMP_CWORD set, COMPREPLY read. */
const bash = async (env: Record<string, string>, ...words: string[]): Promise<string> => (await bashIn(undefined, env, ...words)).join(' ')
/** COMPREPLY, one entry per element (as bash offers them; file names may hold spaces). */
const bashIn = (cwd: string | undefined, env: Record<string, string>, ...words: string[]): Promise<string[]> =>
  new Promise((resolve, reject) => {
    execFile(
      'bash',
      ['-c', `source ${script}; COMP_WORDS=("$@"); COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 )); _meshvm; printf '%s\\n' "\${COMPREPLY[@]}"`, 'x', 'meshvm', ...words],
      {encoding: 'utf8', cwd, env: {...process.env, NO_COLOR: '1', PATH, ...env}, timeout: 20_000},
      (err, stdout) => (err ? reject(err) : resolve(stdout.split('\n').filter((l) => l !== ''))),
    )
  })

beforeAll(async () => {
  const r = await runCli(['completion', 'bash'])
  expect(r.code).toBe(0)
  script = join(work, 'c.bash')
  writeFileSync(script, r.stdout)
})

describe.concurrent('meshvm completion (offline)', () => {
  it('bash: commands, flags, fixed values and -o formats', async () => {
    const env = {KUBECONFIG: '/nonexistent/kubeconfig'}
    expect(await bash(env, '')).toContain('onboard')
    expect(await bash(env, 'onb')).toBe('onboard')
    expect(await bash(env, 'war', 'l')).toBe('list')
    expect(await bash(env, 'onboard', '--probe-h')).toBe('--probe-http --probe-https --probe-host --probe-header')
    expect(await bash(env, 'onboard', 'web', '-o', '')).toBe('table wide json yaml name jsonpath= jsonpath-as-json= custom-columns=')
    expect(await bash(env, 'precheck', '-o', 'j')).toBe('json jsonpath= jsonpath-as-json=')
    expect(await bash(env, 'war', 'list', '--source', '')).toBe('all war workloadentry')
    expect(await bash(env, 'completion', '')).toBe('bash zsh fish')
    expect(await bash(env, 'help', 'war', 'd')).toBe('delete describe')
    // Without a cluster, names complete to nothing, quickly and without an error.
    expect(await bash(env, 'war', 'describe', '')).toBe('')
  })

  it('zsh and fish scripts call the same engine, through the meshvm that generated them (goldens: test/lib/completion.test.ts)', async () => {
    const [zsh, fish] = await Promise.all([runCli(['completion', 'zsh']), runCli(['completion', 'fish'])])
    expect(zsh.stdout).toMatch(/^#compdef meshvm\n/)
    expect(zsh.stdout).toContain('bashcompinit')
    expect(zsh.stdout).toContain(`local -a values=() cmd=(${process.execPath} ${BIN})\n`)
    expect(fish.stdout).toContain(`  set -l cmd '${process.execPath}' '${BIN}'\n`)
    expect(fish.stdout).toContain("complete -c meshvm -f -a '(__meshvm_complete)'")
  })

  it('paths where a path is expected: files (-f, --kubeconfig, --output-file), directories (-d, --bundle, bundle verify DIR)', async () => {
    const dir = join(work, 'paths')
    mkdirSync(join(dir, 'bundle-dir'), {recursive: true})
    mkdirSync(join(dir, 'bundle-other'), {recursive: true})
    writeFileSync(join(dir, 'bundle.yaml'), '')
    writeFileSync(join(dir, 'wg file.yaml'), '')
    const env = {KUBECONFIG: '/nonexistent/kubeconfig'}
    // compgen lists in directory order: compare as sets.
    const inDir = async (...words: string[]) => (await bashIn(dir, env, ...words)).sort().join('|')
    expect(await inDir('bundle', 'verify', 'bun')).toBe('bundle-dir|bundle-other')
    expect(await inDir('onboard', 'web', '-d', 'bundle-')).toBe('bundle-dir|bundle-other')
    expect(await inDir('onboard', 'web', '--bundle', 'b')).toBe('bundle-dir|bundle-other')
    expect(await inDir('onboard', '-f', 'bundle')).toBe('bundle-dir|bundle-other|bundle.yaml')
    expect(await inDir('onboard', '-f', 'wg')).toBe('wg file.yaml')
    expect(await inDir('create-remote-secret', '--output-file', 'bundle.')).toBe('bundle.yaml')
    expect(await inDir('war', 'list', '--kubeconfig', 'bundle.')).toBe('bundle.yaml')
    // Not a path: no file names.
    expect(await inDir('war', 'list', '--group', 'bundle')).toBe('')
  })

  it('TAB in an interactive bash, with meshvm an alias as in the README', async () => {
    const rc = join(work, 'bashrc')
    const completion = await runCli(['completion', 'bash'])
    writeFileSync(rc, `PS1='$ '\nalias meshvm=${JSON.stringify(`${process.execPath} ${BIN}`)}\nsource <(cat <<'EOF'\n${completion.stdout}EOF\n)\n`)
    const pty = spawn('bash', ['--noprofile', '--rcfile', rc, '-i'], {
      cols: 200,
      rows: 20,
      cwd: REPO_ROOT,
      env: {...process.env, PATH, NO_COLOR: '1', KUBECONFIG: '/nonexistent/kubeconfig'} as Record<string, string>,
    })
    let screen = ''
    const waitFor = (pattern: RegExp) =>
      new Promise<void>((resolve, reject) => {
        const timer = setTimeout(() => reject(new Error(`no ${pattern} on the screen: ${JSON.stringify(screen)}`)), 15_000)
        const check = () => {
          if (pattern.test(screen)) {
            clearTimeout(timer)
            resolve()
          }
        }
        pty.onData(check)
        check()
      })
    pty.onData((d) => (screen += d))
    try {
      await waitFor(/\$ $/)
      pty.write('meshvm war rollo\t')
      await waitFor(/meshvm war rollout /)
      pty.write('\u0015meshvm precheck --no-h\t')
      await waitFor(/meshvm precheck --no-headers /)
    } finally {
      pty.kill()
    }
  })

  it('rejects an unknown shell', async () => {
    const r = await runCli(['completion', 'tcsh'])
    expect(r.code).toBe(2)
    expect(r.stderr.split('\n')[0]).toBe('Error: argument "tcsh": expected one of bash, zsh, fish')
  })
})

describe('completion from the cluster', () => {
  let cluster: TestCluster
  beforeAll(async () => {
    cluster = await startCluster()
    for (const ns of ['apps', 'apps-2']) cluster.store.create('/namespaces', 'Namespace', {apiVersion: 'v1', kind: 'Namespace', metadata: {name: ns}})
    for (const name of ['web', 'worker', 'db']) {
      cluster.store.create('networking.istio.io/workloadgroups', 'WorkloadGroup', {
        apiVersion: 'networking.istio.io/v1',
        kind: 'WorkloadGroup',
        metadata: {name, namespace: 'apps'},
        spec: {template: {serviceAccount: 'default'}},
      })
    }
    cluster.mesh.addVm({name: 'web-1', namespace: 'apps', group: 'web', address: '10.0.0.7'})
    const pod = (name: string, sidecar: boolean) => ({
      apiVersion: 'v1',
      kind: 'Pod',
      metadata: {name, namespace: 'apps', ...(sidecar ? {annotations: {'sidecar.istio.io/status': '{}'}} : {})},
      spec: {containers: [{name: 'app', image: 'app'}, ...(sidecar ? [{name: 'istio-proxy', image: 'proxyv2'}] : [])]},
    })
    cluster.store.create('/pods', 'Pod', pod('api-5d9f-x1', true))
    cluster.store.create('/pods', 'Pod', pod('batch-7c1a-y2', false))
    for (const [name, labelled] of [
      ['istio-remote-secret-east', true],
      ['istio-remote-secret-west', true],
      ['unrelated', false],
    ] as const) {
      cluster.store.create('/secrets', 'Secret', {
        apiVersion: 'v1',
        kind: 'Secret',
        metadata: {name, namespace: 'istio-system', ...(labelled ? {labels: {'istio/multiCluster': 'true'}} : {})},
        data: {},
      })
    }
  })
  afterAll(() => cluster?.stop())

  it('namespaces, contexts, WorkloadGroup and registration names, with the -n typed', async () => {
    const env = cluster.env
    expect(await bash(env, 'war', 'list', '-n', 'app')).toBe('apps apps-2')
    expect(await bash(env, 'war', 'list', '--context', '')).toBe(cluster.contextName)
    expect(await bash(env, 'onboard', '-n', 'apps', 'w')).toBe('web worker')
    expect(await bash(env, 'war', 'rollout', '-n', 'apps', '')).toBe('db web worker')
    expect(await bash(env, 'war', 'list', '-n', 'apps', '--group', 'd')).toBe('db')
    expect(await bash(env, 'war', 'describe', '-n', 'apps', '')).toBe('web-10.0.0.7')
    expect(await bash(env, 'war', 'describe', '')).toBe('')
  })

  it('proxy names for proxy-status NAME (pods with a sidecar as POD.NAMESPACE, then VMs), remote secret names for remote-secret status|rotate', async () => {
    const env = cluster.env
    expect(await bash(env, 'proxy-status', '-n', 'apps', '')).toBe('api-5d9f-x1.apps web-10.0.0.7')
    expect(await bash(env, 'ps', '-n', 'apps', 'w')).toBe('web-10.0.0.7')
    expect(await bash(env, 'proxy-status', '-n', 'apps', 'api-5d9f-x1.apps', '')).toBe('')
    expect(await bash(env, 'remote-secret', 'status', '')).toBe('istio-remote-secret-east istio-remote-secret-west')
    expect(await bash(env, 'remote-secret', 'rotate', 'istio-remote-secret-w')).toBe('istio-remote-secret-west')
    expect(await bash(env, 'remote-secret', 'status', '-i', 'elsewhere', '')).toBe('')
  })

  it('a cluster that does not answer completes nothing instead of blocking the shell', async () => {
    const remove = cluster.faults.add({path: '/api/v1/namespaces', latencyMs: 60_000})
    try {
      expect(await bash(cluster.env, 'war', 'list', '-n', '')).toBe('')
    } finally {
      remove()
    }
  })

  it('as a kubectl plugin: kubectl completes `kubectl meshvm …` through kubectl_complete-meshvm', async () => {
    const dir = join(work, 'plugin')
    execFileSync('mkdir', ['-p', dir])
    symlinkSync(BIN, join(dir, 'kubectl-meshvm'))
    symlinkSync(BIN, join(dir, 'kubectl_complete-meshvm'))
    // Asynchronous: the test API server answers from this process's event loop.
    const run = (...words: string[]): Promise<string> =>
      new Promise((resolve, reject) =>
        execFile('kubectl', ['__complete', 'meshvm', ...words], {encoding: 'utf8', env: {...process.env, ...cluster.env, PATH: `${dir}:${process.env.PATH}`}}, (err, stdout) =>
          err ? reject(err) : resolve(stdout),
        ),
      )
    expect(await run('war', 'l')).toBe('list\n:4\n')
    expect(await run('onboard', '-n', 'apps', 'w')).toBe('web\nworker\n:4\n')
  })
})
