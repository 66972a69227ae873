// The entry point of the standalone executables (Node's single executable applications, built by
// scripts/build-standalone.mjs). The executable holds the npm package's files (package.json "files")
// as SEA assets. oclif reads package.json and its manifest from disk, bin/run.js loads the bundles
// from disk through bin/load.cjs (with its V8 code cache) and the vendor bundles are loaded lazily by
// path, so the files are written once to a directory of their own and run from there, exactly as the
// npm package runs: an offline command still never reads the Kubernetes client.
//
// The directory is $XDG_CACHE_HOME/meshvm/standalone/<version>-<content hash> (or ~/.cache/...),
// mode 0700; it is filled in a temporary sibling and renamed into place, so a run never sees half of
// it, and a new build (another hash) gets a new directory. When the cache cannot be written, the files
// go to a temporary directory removed when the process exits.
'use strict'
const sea = require('node:sea')
const fs = require('node:fs')
const path = require('node:path')
const os = require('node:os')
const {createRequire} = require('node:module')

const {id, files} = JSON.parse(sea.getAsset('meshvm-assets.json', 'utf8'))
const DONE = '.meshvm-complete'

function writeFiles(dir) {
  for (const file of files) {
    const target = path.join(dir, file)
    fs.mkdirSync(path.dirname(target), {recursive: true, mode: 0o700})
    fs.writeFileSync(target, new Uint8Array(sea.getRawAsset(file)), {mode: 0o600})
  }
  fs.writeFileSync(path.join(dir, DONE), `${id}\n`, {mode: 0o600})
}

function extractToCache() {
  const base = process.env.XDG_CACHE_HOME || path.join(os.homedir(), '.cache')
  const root = path.join(base, 'meshvm', 'standalone', id)
  if (fs.existsSync(path.join(root, DONE))) return root
  fs.mkdirSync(path.dirname(root), {recursive: true, mode: 0o700})
  const temp = fs.mkdtempSync(`${root}.tmp-`)
  try {
    writeFiles(temp)
    fs.renameSync(temp, root)
  } catch (err) {
    fs.rmSync(temp, {recursive: true, force: true})
    // Another run may have put the same files in place first.
    if (!fs.existsSync(path.join(root, DONE))) throw err
  }
  return root
}

function extractToTemp() {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'meshvm-'))
  process.once('exit', () => fs.rmSync(dir, {recursive: true, force: true}))
  // A code cache keyed by a path used once would only pile up.
  process.env.MESHVM_NO_COMPILE_CACHE = '1'
  writeFiles(dir)
  return dir
}

let root
try {
  root = extractToCache()
} catch {
  root = extractToTemp()
}
const entry = path.join(root, 'bin', 'run.js')
createRequire(entry)(entry)
