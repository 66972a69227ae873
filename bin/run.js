#!/usr/bin/env node
// meshvm entry point. `--version`/`-v` is answered here, before anything else is loaded, because it is
// the command people (and scripts) run most and it needs nothing but package.json: the same text as
// oclif's config.userAgent. `meshvm version` (with --short, -o json|yaml) is a command.
// CommonJS (bin/package.json says so): an ES module entry starts Node's ESM loader.
// Start-up mechanisms and what each one saves: docs/decisions/startup.md.
'use strict'
const argv = process.argv.slice(2)
process.stdout.on('error', stdoutFailed)
// Help rendered at build time, when it is a help invocation (bin/help-cache.cjs says when it applies
// and what it saves); other commands do not load that module.
const last = argv[argv.length - 1]
const help = last === '--help' || last === '-h' || argv[0] === 'help' ? require('./help-cache.cjs').cachedHelp(argv) : undefined
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v')) {
  const pkg = JSON.parse(require('node:fs').readFileSync(require('node:path').join(__dirname, '..', 'package.json'), 'utf8'))
  process.stdout.write(`meshvm/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`)
} else if (help !== undefined) {
  process.stdout.write(help)
} else {
  const {loadBundle, setRanCommand} = require('./load.cjs')
  const {exports, saveCache} = loadBundle(undefined, cacheSlot(argv))
  // oclif finds the CLI's package.json by walking up from this path. It skips bin/run.js but would
  // stop at bin/package.json, so it is given the package root rather than this file.
  const rootUrl = require('node:url').pathToFileURL(require('node:path').join(__dirname, '..')).href
  let settled = false
  exports.main(argv, rootUrl).then((code) => {
    settled = true
    process.exitCode = code
    // The code caches learn which command's functions they now hold (`meshvm` for help and errors).
    const command = exports.ranCommandId() ?? 'meshvm'
    setRanCommand(command)
    saveCache(command)
  })
  // As the ES module entry did (unsettled top-level await): if main never finishes, do not exit 0.
  process.once('beforeExit', () => {
    if (!settled) process.exitCode = 13
  })
}

/**
 * Every path's answer to a failed write to stdout, installed before anything is written. A reader that
 * went away (`meshvm … | head -1`: EPIPE) is not an error: exit 0, silently. Anything else (a full disk,
 * an I/O error) is one line on stderr and exit 1 (ExitCode.FAILURE), never an unhandled 'error' event
 * with a stack trace, and never exit 0 with the output lost. (A stdout closed with `>&-` cannot be seen:
 * Node opens /dev/null in its place before any JavaScript runs, as a caller that discards the output
 * would: docs/exit-codes.md.)
 */
function stdoutFailed(err) {
  if (err.code === 'EPIPE') process.exit(0)
  const reason = String(err.message)
    .replace(/^[A-Z]+: /, '')
    .replace(/, write$/, '')
  try {
    process.stderr.write(`Error: cannot write to standard output: ${reason}${err.code ? ` (${err.code})` : ''}\n`)
  } catch {
    // stderr is gone too: the exit code is all that is left.
  }
  process.exit(1)
}

/**
 * The code cache a run uses (bin/load.cjs): one per command word (`onboard`, `war`…), so a command
 * deserialises only what its own runs compiled; `meshvm` for everything else (help, errors, typos).
 * The words are those of dist/commands.json (written by the build), so a typo never makes a cache.
 */
function cacheSlot(argv) {
  const word = argv[0]
  if (word === undefined || !/^[a-z][a-z0-9-]*$/.test(word)) return 'meshvm'
  try {
    const {commandIDs} = JSON.parse(require('node:fs').readFileSync(require('node:path').join(__dirname, '..', 'dist', 'commands.json'), 'utf8'))
    return commandIDs.some((id) => id === word || id.startsWith(`${word}:`)) ? word : 'meshvm'
  } catch {
    return 'meshvm'
  }
}
