// Loads dist/meshvm.cjs through a V8 code cache: compiled code is saved after the first run and
// reused after. Node's module.enableCompileCache() is not used: it caches what is compiled before the
// code runs, not the functions a run compiles lazily, and measured slower on Node 24
// (docs/decisions/startup.md).
// The cache lives in $XDG_CACHE_HOME/meshvm (or ~/.cache/meshvm); it is keyed by the bundle's
// install path, size and mtime (an upgrade replaces it), rejected by V8 itself when it does not
// match, and skipped when it cannot be written. MESHVM_NO_COMPILE_CACHE=1 turns it off.
'use strict'
const fs = require('node:fs')
const path = require('node:path')
const os = require('node:os')
const vm = require('node:vm')
const Module = require('node:module')
const {isAscii} = require('node:buffer')

/** FNV-1a, 32 bits: a short, stable name for an install path (without loading node:crypto). */
function pathHash(text) {
  let h = 0x811c9dc5
  for (let i = 0; i < text.length; i++) h = Math.imul(h ^ text.charCodeAt(i), 0x01000193)
  return (h >>> 0).toString(36)
}

/**
 * `<bundle>-<install path hash>-[<slot>.]<size>-<mtime>-<node version>.v8cache`: one cache per
 * installed copy of a bundle and slot; an upgrade (new size or mtime) or another Node version makes a
 * new one, and the stale ones of the same copy are removed when it is written (see removeStale).
 */
function cacheFileFor(bundle, stat, slot) {
  if (process.env.MESHVM_NO_COMPILE_CACHE) return undefined
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache')
  return path.join(base, 'meshvm', `${cachePrefix(bundle)}${slot ? `${slot}.` : ''}${cacheKey(stat)}.v8cache`)
}

function cacheKey(stat) {
  return `${stat.size.toString(36)}-${Math.floor(stat.mtimeMs).toString(36)}-${process.version}`
}

function cachePrefix(bundle) {
  return `${path.basename(bundle, '.cjs')}-${pathHash(path.resolve(bundle))}-`
}

/**
 * Removes the caches of other builds (or Node versions) of the same installed bundle, whatever their
 * slot, so upgrades do not pile up; the other slots of this build stay.
 */
function removeStale(bundle, stat) {
  const dir = path.join(process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache'), 'meshvm')
  const prefix = cachePrefix(bundle)
  const current = `${cacheKey(stat)}.v8cache`
  for (const name of fs.readdirSync(dir)) {
    if (name.startsWith(prefix) && name.endsWith('.v8cache') && !(name.endsWith(`.${current}`) || name === `${prefix}${current}`)) fs.rmSync(path.join(dir, name), {force: true})
  }
}

/**
 * Loads a CommonJS bundle (default: the CLI itself) through the code cache. `slot` names a cache of
 * its own (bin/run.js: the command's first word), so a command deserialises only the functions the
 * runs of that slot compiled, not those of every other command.
 */
function loadBundle(bundle = path.join(__dirname, '..', 'dist', 'meshvm.cjs'), slot = undefined) {
  const stat = fs.statSync(bundle)
  // The build makes the bundles pure ASCII (scripts/build.mjs), so they are read as one-byte strings
  // instead of being decoded as UTF-8. Anything else is read as UTF-8.
  const bytes = fs.readFileSync(bundle)
  const source = isAscii(bytes) ? bytes.latin1Slice(0, bytes.length) : bytes.toString('utf8')
  const cacheFile = cacheFileFor(bundle, stat, slot)
  const cached = cacheFile ? readCache(cacheFile) : undefined
  const script = new vm.Script(Module.wrap(source), {filename: bundle, cachedData: cached?.data, importModuleDynamically: vm.constants?.USE_MAIN_CONTEXT_DEFAULT_LOADER})
  const mod = {exports: {}, filename: bundle, id: bundle, loaded: false}
  const req = Module.createRequire(bundle)
  script.runInThisContext()(mod.exports, req, mod, bundle, path.dirname(bundle))
  /**
   * Called after the run, so the functions that ran are in the cache too. The cache (of this slot:
   * bin/run.js keeps one per command word) records which commands it has seen; a command it has not seen rewrites it, adding its own functions to those it
   * already held (V8 serialises every function compiled or deserialised so far), so after a few
   * different commands the cache covers them all, and then it is never written again.
   */
  const saveCache = (command = 'meshvm') => {
    if (!cacheFile) return
    const fresh = cached && !script.cachedDataRejected
    if (fresh && cached.commands.includes(command)) return
    const commands = fresh ? [...cached.commands, command] : [command]
    try {
      mkdirs(path.dirname(cacheFile))
      if (!safeDir(path.dirname(cacheFile))) return
      // Exclusive create, never through a planted symlink; the rename replaces a link, never follows it.
      const temp = `${cacheFile}.${process.pid}.${Math.random().toString(36).slice(2)}.tmp`
      const header = Buffer.from(`${CACHE_MAGIC}${JSON.stringify(commands)}\n`)
      const fd = fs.openSync(temp, NEW_FILE, 0o600)
      try {
        fs.writeFileSync(fd, Buffer.concat([header, script.createCachedData()]))
      } finally {
        fs.closeSync(fd)
      }
      fs.renameSync(temp, cacheFile)
      removeStale(bundle, stat)
    } catch {
      // A read-only home or cache dir only costs speed.
    }
  }
  return {exports: mod.exports, saveCache}
}

/**
 * mkdir -p one level at a time (as src/lib/fs/atomic.ts ensureDir): Node's recursive mkdirSync never
 * returns where mkdir(2) says ENOENT under an existing parent, as under /proc (XDG_CACHE_HOME=/proc/x).
 */
function mkdirs(dir) {
  const missing = []
  for (let at = dir; !fs.existsSync(at) && path.dirname(at) !== at; at = path.dirname(at)) missing.push(at)
  for (const d of missing.reverse()) fs.mkdirSync(d, {mode: 0o700})
}

/** A cache file: `meshvm-v8cache 1 ["onboard","war:list"]\n` then V8's code cache. */
const CACHE_MAGIC = 'meshvm-v8cache 1 '

const {O_WRONLY, O_CREAT, O_EXCL, O_RDONLY, O_NOFOLLOW = 0, O_NONBLOCK = 0} = fs.constants
const NEW_FILE = O_WRONLY | O_CREAT | O_EXCL | O_NOFOLLOW

/** The cache dir is used only if it is a real directory of this user that others cannot write. */
function safeDir(dir) {
  const st = fs.lstatSync(dir)
  return st.isDirectory() && (typeof process.getuid !== 'function' || st.uid === process.getuid()) && (st.mode & 0o022) === 0
}

function readCache(cacheFile) {
  let buf
  try {
    if (!safeDir(path.dirname(cacheFile))) return undefined
    // Never through a symlink, never from a FIFO or device (a planted /dev/zero would never end).
    const fd = fs.openSync(cacheFile, O_RDONLY | O_NOFOLLOW | O_NONBLOCK)
    try {
      if (!fs.fstatSync(fd).isFile()) return undefined
      buf = fs.readFileSync(fd)
    } finally {
      fs.closeSync(fd)
    }
  } catch {
    return undefined // no cache yet
  }
  const end = buf.indexOf(10)
  if (end < 0 || buf.toString('latin1', 0, CACHE_MAGIC.length) !== CACHE_MAGIC) return undefined
  try {
    const commands = JSON.parse(buf.toString('utf8', CACHE_MAGIC.length, end))
    if (!Array.isArray(commands) || !commands.every((c) => typeof c === 'string')) return undefined
    return {commands, data: buf.subarray(end + 1)}
  } catch {
    return undefined // damaged: rebuilt after this run
  }
}

const vendors = new Map()

/**
 * A vendor bundle (dist/vendor/*.cjs: the Kubernetes client, the prompt library), loaded only when
 * a command first needs it, so offline commands never read or compile it. Its cache is saved when the process exits, after the
 * functions that ran were compiled.
 */
function loadVendor(bundle) {
  let loaded = vendors.get(bundle)
  if (!loaded) {
    loaded = loadBundle(bundle)
    vendors.set(bundle, loaded)
    const {saveCache} = loaded
    process.once('exit', () => saveCache(ranCommand))
  }
  return loaded.exports
}

/** The command this process ran (set by bin/run.js when it knows), for the caches' command lists. */
let ranCommand = 'meshvm'
function setRanCommand(command) {
  ranCommand = command
}

module.exports = {loadBundle, loadVendor, setRanCommand}
