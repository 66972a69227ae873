/**
 * The npm package: `npm pack` → `npm install -g meshvm-X.tgz` into an empty prefix, offline, then the
 * installed `meshvm` and `kubectl-meshvm` run with nothing else (no node_modules: the bundles in dist/
 * hold every runtime library, so package.json declares no dependencies and the install fetches nothing).
 */
import {execFile} from 'node:child_process'
import {existsSync, mkdtempSync, readdirSync, readFileSync, realpathSync, rmSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {promisify} from 'node:util'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {REPO_ROOT} from '../helpers/cli.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {logRun} from '../helpers/secrets.js'

const run = promisify(execFile)
const work = mkdtempSync(join(tmpdir(), 'meshvm-npm-'))
const prefix = join(work, 'prefix')
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {version: string; files: string[]; bin: Record<string, string>}
let cluster: TestCluster

/** npm with its cache, logs and global config inside the test's own dir (nothing outside it is read or written). */
const npmEnv = {
  ...process.env,
  npm_config_cache: join(work, 'npm-cache'),
  npm_config_userconfig: join(work, 'npmrc'),
  npm_config_update_notifier: 'false',
  npm_config_audit: 'false',
  npm_config_fund: 'false',
}

async function installed(bin: string, args: string[], env: Record<string, string> = {}): Promise<{code: number; stdout: string; stderr: string}> {
  let res: {code: number; stdout: string; stderr: string}
  try {
    const {stdout, stderr} = await run(join(prefix, 'bin', bin), args, {
      cwd: work,
      env: {...process.env, NO_COLOR: '1', XDG_CACHE_HOME: join(work, 'cache'), ...env},
      encoding: 'utf8',
      timeout: 20_000,
    })
    res = {code: 0, stdout, stderr}
  } catch (err) {
    const e = err as {code?: number; stdout?: string; stderr?: string}
    res = {code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? ''}
  }
  logRun({args, stdout: res.stdout, stderr: res.stderr, stdoutMayHoldSecrets: false})
  return res
}

beforeAll(async () => {
  // --ignore-scripts: the test suite has just built dist/ (pretest); prepack would rebuild it under
  // the other test files' feet; the notices are what prepack adds after the build.
  await run(process.execPath, [join(REPO_ROOT, 'scripts/third-party-notices.mjs')], {cwd: REPO_ROOT})
  await run('npm', ['pack', '--ignore-scripts', '--pack-destination', work], {cwd: REPO_ROOT, env: npmEnv})
  // --offline: a package with no dependencies needs nothing from the registry.
  await run('npm', ['install', '--global', '--offline', '--prefix', prefix, join(work, `meshvm-${pkg.version}.tgz`)], {cwd: work, env: npmEnv})
  cluster = await startCluster()
}, 120_000)

afterAll(async () => {
  await cluster?.stop()
  rmSync(work, {recursive: true, force: true})
})

describe('npm package', () => {
  it('holds the bins, the bundles and the manifest, and installs no dependencies', () => {
    const root = join(prefix, 'lib', 'node_modules', 'meshvm')
    for (const file of [
      'bin/run.js',
      'bin/load.cjs',
      'bin/help-cache.cjs',
      'bin/commands.cjs',
      'bin/package.json',
      'dist/meshvm.cjs',
      'dist/help.json',
      'dist/commands.json',
      'dist/vendor/kube.cjs',
      'dist/vendor/prompts.cjs',
      'dist/THIRD-PARTY-NOTICES.txt',
      'oclif.manifest.json',
      'package.json',
    ]) {
      expect(existsSync(join(root, file)), file).toBe(true)
    }
    expect(existsSync(join(root, 'src'))).toBe(false)
    expect(existsSync(join(root, 'test'))).toBe(false)
    expect(existsSync(join(root, 'node_modules'))).toBe(false)
    const manifest = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8')) as Record<string, unknown>
    expect(manifest.dependencies ?? {}).toEqual({})
    // Nothing is built or run at install time.
    expect(Object.keys(manifest.scripts ?? {}).filter((s) => /^(pre|post)?install$|^prepare$/.test(s))).toEqual([])
    // kubectl_complete-meshvm: kubectl (1.26+) runs it to complete `kubectl meshvm …`.
    expect(Object.keys(pkg.bin).sort()).toEqual(['kubectl-meshvm', 'kubectl_complete-meshvm', 'meshvm'])
    for (const bin of Object.keys(pkg.bin)) expect(realpathSync(join(prefix, 'bin', bin))).toBe(join(realpathSync(root), 'bin', 'run.js'))
    expect(readdirSync(join(prefix, 'lib', 'node_modules'))).toEqual(['meshvm'])
  })

  it('answers --version from both bins', async () => {
    for (const bin of ['meshvm', 'kubectl-meshvm']) {
      const res = await installed(bin, ['--version'])
      expect(res).toMatchObject({code: 0, stderr: ''})
      expect(res.stdout).toBe(`meshvm/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`)
    }
  })

  it('prints the pre-rendered help (dist/help.json), as oclif does', async () => {
    const help = JSON.parse(readFileSync(join(REPO_ROOT, 'dist/help.json'), 'utf8')) as {texts: Record<string, string>}
    const res = await installed('meshvm', ['onboard', '--help'], {XDG_CONFIG_HOME: join(work, 'config')})
    expect(res).toEqual({code: 0, stdout: help.texts.onboard, stderr: ''})
  })

  it('runs an offline onboard', async () => {
    const res = await installed('meshvm', ['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-o', 'name'], {KUBECONFIG: join(work, 'no-such-kubeconfig')})
    expect(res).toEqual({code: 0, stdout: 'workloadgroup.networking.istio.io/web\nservice/web\n', stderr: ''})
  })

  it('lists WARs from the test cluster (the lazily loaded Kubernetes client is in the package)', async () => {
    cluster.mesh.addVm({name: 'ratings-vm-npm', namespace: 'bookinfo', group: 'ratings', address: '10.9.0.1', source: 'war', disconnectedAgoMs: 60_000})
    const res = await installed('kubectl-meshvm', ['war', 'list', '-A', '-o', 'name'], cluster.env)
    expect(res.stderr).toBe('')
    expect(res.code).toBe(0)
    expect(res.stdout).toContain('ratings-vm-npm')
  })
})
