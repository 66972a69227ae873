#!/usr/bin/env -S node --import tsx --disable-warning=ExperimentalWarning
// Development entry point: runs the TypeScript sources directly (no build needed).
// CommonJS like bin/run.js (bin/package.json); the ESM sources are loaded with import(), which tsx
// (registered by --import tsx) compiles.
'use strict'
const path = require('node:path')
const {pathToFileURL} = require('node:url')

// A failed write to stdout: as bin/run.js (which the shipped CLI runs) answers it.
process.stdout.on('error', (err) => {
  if (err.code !== 'EPIPE') process.stderr.write(`Error: cannot write to standard output: ${err.message}\n`)
  process.exit(err.code === 'EPIPE' ? 0 : 1)
})

async function dev() {
  const {COMMANDS} = await import('../src/command-index.ts')
  const {main} = await import('../src/main.ts')
  globalThis.__MESHVM_COMMANDS__ = COMMANDS
  // The package root, not this file: oclif would take bin/package.json for the CLI's (see bin/run.js).
  return main(process.argv.slice(2), pathToFileURL(path.join(__dirname, '..')).href, {development: true})
}
dev().then((code) => {
  process.exitCode = code
})
