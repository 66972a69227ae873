/**
 * Shell completion in real shells: the scripts ask `meshvm __complete` (one engine), which answers from
 * the command list and, for names, from the kubeconfig and the cluster within a short time limit.
 */
import {execFile, execFileSync} from 'node:child_process'
import {chmodSync, mkdtempSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {BIN, runCli} from '../helpers/cli.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-completion-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))
// `meshvm` on the PATH, as the scripts call it by name.
const binDir = join(work, 'bin')
execFileSync('mkdir', ['-p', binDir])
writeFileSync(join(binDir, 'meshvm'), `#!/bin/sh\nexec ${JSON.stringify(process.execPath)} ${JSON.stringify(BIN)} "$@"\n`)
chmodSync(join(binDir, 'meshvm'), 0o755)
const PATH = `${binDir}:${process.env.PATH}`

let script = ''
const bash = (env: Record<string, string>, ...words: string[]): Promise<string> =>
  new Promise((resolve, reject) => {
    execFile(
      'bash',
      ['-c', `source ${script}; COMP_WORDS=("$@"); COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 )); _meshvm; echo "\${COMPREPLY[*]}"`, 'x', 'meshvm', ...words],
      {encoding: 'utf8', env: {...process.env, NO_COLOR: '1', PATH, ...env}, timeout: 20_000},
      (err, stdout) => (err ? reject(err) : resolve(stdout.trim())),
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

  it('zsh and fish scripts call the same engine', async () => {
    const [zsh, fish] = await Promise.all([runCli(['completion', 'zsh']), runCli(['completion', 'fish'])])
    expect(zsh.stdout).toMatch(/^#compdef meshvm\n/)
    expect(zsh.stdout).toContain('bashcompinit')
    expect(zsh.stdout).toContain('__complete')
    expect(fish.stdout).toContain("complete -c meshvm -f -a '(__meshvm_complete)'")
    const fishPath = join(work, 'meshvm.fish')
    writeFileSync(fishPath, fish.stdout)
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
      cluster.store.create('networking.istio.io/workloadgroups', 'WorkloadGroup', {apiVersion: 'networking.istio.io/v1', kind: 'WorkloadGroup', metadata: {name, namespace: 'apps'}, spec: {template: {serviceAccount: 'default'}}})
    }
    cluster.mesh.addVm({name: 'web-1', namespace: 'apps', group: 'web', address: '10.0.0.7'})
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
          err ? reject(err) : resolve(stdout)),
      )
    expect(await run('war', 'l')).toBe('list\n:4\n')
    expect(await run('onboard', '-n', 'apps', 'w')).toBe('web\nworker\n:4\n')
  })
})
