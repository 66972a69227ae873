// Prototype (not shipped): a V8 startup snapshot holding dist/meshvm.cjs with its top level run, for
// measuring against bin/run.js's code cache (docs/decisions/startup.md, "V8 startup snapshot").
//
//   MESHVM_ROOT=. node --snapshot-blob /tmp/meshvm.blob --build-snapshot bench/prototypes/snapshot/entry.cjs
//   node --snapshot-blob /tmp/meshvm.blob onboard web -n apps -p http=8080
//   or as a standalone executable's main script with "useSnapshot": true (bench/prototypes/snapshot/sea.sh)
//
// MESHVM_SNAPSHOT_WARM=1 also runs an offline `onboard` while the snapshot is built, so the functions
// it compiles are in the snapshot (what a code cache slot holds). The snapshot is tied to the build's
// paths (the vendor bundles are loaded from MESHVM_ROOT at run time) and to the Node that built it.
'use strict'
const v8 = require('node:v8')
const fs = require('node:fs')
const path = require('node:path')

const ROOT = path.resolve(process.env.MESHVM_ROOT ?? '.')
const bundle = path.join(ROOT, 'dist', 'meshvm.cjs')
// While the snapshot is built, require() loads only Node's built-ins; at run time, anything.
let runtimeRequire = require
const req = (id) => runtimeRequire(id)
req.resolve = (id, o) => runtimeRequire.resolve(id, o)

// What the bundle's top level reads of the process would be baked into the snapshot: recorded.
const reads = new Set()
const watch = (name, target) =>
  new Proxy(target, {
    get(t, k) {
      if (typeof k === 'string') reads.add(`${name}.${k}`)
      return Reflect.get(t, k)
    },
    has(t, k) {
      reads.add(`${name}.${String(k)}`)
      return Reflect.has(t, k)
    },
  })
const real = {env: process.env, argv: process.argv}
process.env = watch('env', real.env)
process.argv = watch('argv', real.argv)
for (const s of ['stdout', 'stderr']) {
  const d = Object.getOwnPropertyDescriptor(process, s)
  Object.defineProperty(process, s, {
    configurable: true,
    enumerable: true,
    get() {
      reads.add(s)
      return d.get ? d.get.call(process) : d.value
    },
  })
  real[s] = d
}
const source = fs.readFileSync(bundle, 'latin1')
// The CommonJS wrapper made with Function rather than node:vm (which Node 24 does not vouch for in a snapshot).
const wrapper = new Function('exports', 'require', 'module', '__filename', '__dirname', `${source}\n//# sourceURL=${bundle}`)
const mod = {exports: {}, filename: bundle, id: bundle, loaded: false}
wrapper(mod.exports, req, mod, bundle, path.dirname(bundle))
process.env = real.env
process.argv = real.argv
for (const s of ['stdout', 'stderr']) Object.defineProperty(process, s, real[s])
if (reads.size) console.error(`snapshot: the bundle's top level read ${[...reads].join(' ')}`)
const rootUrl = require('node:url').pathToFileURL(ROOT).href

if (process.env.MESHVM_SNAPSHOT_WARM) {
  const write = process.stdout.write
  process.stdout.write = () => true
  mod.exports.main(['onboard', 'web', '-n', 'apps', '-p', 'http=8080', '--probe-http', '8080/healthz'], rootUrl).then(() => {
    process.stdout.write = write
    process.exitCode = undefined
  })
}

v8.startupSnapshot.setDeserializeMainFunction(() => {
  runtimeRequire = require('node:module').createRequire(bundle)
  // `node --snapshot-blob B ARGS`: argv[1] is the first of ARGS; a standalone executable (SEA,
  // "useSnapshot": true) has its own path there too.
  const argv = process.argv.slice(require('node:sea').isSea() ? 2 : 1)
  if (argv[0] === '--') argv.shift()
  process.stdout.on('error', (err) => process.exit(err.code === 'EPIPE' ? 0 : 1))
  if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
    const pkg = JSON.parse(fs.readFileSync(path.join(ROOT, 'package.json'), 'utf8'))
    process.stdout.write(`meshvm/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`)
    return
  }
  let settled = false
  mod.exports.main(argv, rootUrl).then((code) => {
    settled = true
    process.exitCode = code
  })
  process.once('beforeExit', () => {
    if (!settled) process.exitCode = 13
  })
})
