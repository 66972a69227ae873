// Loads dist/meshvm.cjs through a V8 code cache: compiled code is saved after the first run and
// reused after, which roughly halves start-up (Node 20 has no built-in compile cache for this).
// The cache lives in $XDG_CACHE_HOME/meshvm (or ~/.cache/meshvm); it is keyed by the bundle's
// size and mtime, rejected by V8 itself when it does not match, and skipped when it cannot be
// written. MESHVM_NO_COMPILE_CACHE=1 turns it off.
'use strict'
const fs = require('node:fs')
const path = require('node:path')
const os = require('node:os')
const vm = require('node:vm')
const Module = require('node:module')

function cacheFileFor(bundle, stat) {
  if (process.env.MESHVM_NO_COMPILE_CACHE) return undefined
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache')
  const key = `${stat.size.toString(36)}-${Math.floor(stat.mtimeMs).toString(36)}-${process.version}`
  return path.join(base, 'meshvm', `${path.basename(bundle, '.cjs')}-${key}.v8cache`)
}

/** Loads a CommonJS bundle (default: the CLI itself) through the code cache. */
function loadBundle(bundle = path.join(__dirname, '..', 'dist', 'meshvm.cjs')) {
  const stat = fs.statSync(bundle)
  const source = fs.readFileSync(bundle, 'utf8')
  const cacheFile = cacheFileFor(bundle, stat)
  let cachedData
  try {
    if (cacheFile) cachedData = fs.readFileSync(cacheFile)
  } catch {
    // No cache yet.
  }
  const script = new vm.Script(Module.wrap(source), {filename: bundle, cachedData, importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER})
  const mod = {exports: {}, filename: bundle, id: bundle, loaded: false}
  const req = Module.createRequire(bundle)
  script.runInThisContext()(mod.exports, req, mod, bundle, path.dirname(bundle))
  const saveCache = () => {
    if (!cacheFile || (cachedData && !script.cachedDataRejected)) return
    try {
      // After the run, so the functions that ran are in the cache too. Written atomically.
      fs.mkdirSync(path.dirname(cacheFile), {recursive: true, mode: 0o700})
      const temp = `${cacheFile}.${process.pid}.tmp`
      fs.writeFileSync(temp, script.createCachedData(), {mode: 0o600})
      fs.renameSync(temp, cacheFile)
    } catch {
      // A read-only home or cache dir only costs speed.
    }
  }
  return {exports: mod.exports, saveCache}
}

const vendors = new Map()

/**
 * A vendor bundle (dist/vendor/*.cjs: the Kubernetes client, the prompt library), loaded only when
 * a command first needs it, so offline commands never read or compile it. Its cache is saved when
 * the process exits, after the functions that ran were compiled.
 */
function loadVendor(bundle) {
  let loaded = vendors.get(bundle)
  if (!loaded) {
    loaded = loadBundle(bundle)
    vendors.set(bundle, loaded)
    process.once('exit', loaded.saveCache)
  }
  return loaded.exports
}

module.exports = {loadBundle, loadVendor}
