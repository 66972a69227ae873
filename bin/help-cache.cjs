// The help texts oclif prints, rendered at build time (scripts/build.mjs runs `meshvm WORDS --help`
// for the root, every topic and every command and writes dist/help.json), so `meshvm --help`,
// `meshvm WORDS --help|-h` and `meshvm help WORDS` print them without loading the bundle or oclif.
// It serves only what it holds exactly: the text depends on the terminal width (oclif: OCLIF_COLUMNS,
// else the TTY's width, else 80), on colour (bold headers on a colour terminal, colours with a user
// theme file) and on the bin name (kubectl-plugin mode says `kubectl meshvm`); anything else goes to
// oclif, which renders it as before. So it serves help read through a pipe, a file, CI logs and
// scripts; a colour terminal still gets oclif's rendering.
// test/lib/help-cache.test.ts checks every served text is byte for byte what oclif prints.
'use strict'
const fs = require('node:fs')
const path = require('node:path')

const HELP_FLAGS = new Set(['--help', '-h'])
/** What scripts/build.mjs stores in place of oclif's user agent. */
const USER_AGENT_PLACEHOLDER = '\u0000USER_AGENT\u0000'

/** The command words a help invocation asks about, or undefined when it is not one the cache can answer. */
function helpWords(argv) {
  let words
  if (argv.length >= 1 && HELP_FLAGS.has(argv[argv.length - 1])) words = argv.slice(0, -1)
  else if (argv[0] === 'help') words = argv.slice(1)
  else return undefined
  // Only plain words: flags, `war:list` spellings and anything odd go to oclif.
  return words.every((w) => /^[a-z][a-z0-9-]*$/.test(w)) ? words : undefined
}

/** oclif's help width (@oclif/core lib/screen.js). */
function helpColumns(env, stdout) {
  const columns = Number.parseInt(env.OCLIF_COLUMNS, 10)
  if (columns) return columns
  if (!stdout.isTTY) return 80
  const width = stdout.getWindowSize()[0]
  return width < 1 ? 80 : Math.max(width, 40)
}

/**
 * Whether oclif's help is certainly without colour. It makes section headers bold when its
 * supports-color (8.x) finds colour on both stdout and stderr: never when FORCE_COLOR is 0/false;
 * otherwise never when FORCE_COLOR is unset and stdout or stderr is not a terminal, or TERM is dumb.
 * (Command-line colour flags count too, but a served invocation has none.) Anything else, such as a
 * colour terminal, goes to oclif.
 */
function colourOff(env, stdout) {
  if ('FORCE_COLOR' in env) return env.FORCE_COLOR === 'false' || env.FORCE_COLOR === '0'
  return !stdout.isTTY || env.TERM === 'dumb' || !require('node:tty').isatty(2)
}

/** oclif loads a user theme from CONFIG_DIR/theme.json (Config.loadTheme); with one, help has colours. */
function userThemeFile(env) {
  const home = env.HOME || require('node:os').homedir()
  const configDir = env.MESHVM_CONFIG_DIR || path.join(env.XDG_CONFIG_HOME || path.join(home, '.config'), 'meshvm')
  return path.join(configDir, 'theme.json')
}

/**
 * The help text for this invocation, or undefined when oclif must render it.
 * @param {string[]} argv the arguments after the script
 */
function cachedHelp(argv, env = process.env, stdout = process.stdout, script = process.argv[1] ?? '', file = path.join(__dirname, '..', 'dist', 'help.json')) {
  const words = helpWords(argv)
  if (!words || env.MESHVM_NO_HELP_CACHE || env.DEBUG || process.platform === 'win32') return undefined
  if (/^kubectl[-_]/.test(path.basename(script))) return undefined
  let cache
  try {
    cache = JSON.parse(fs.readFileSync(file, 'utf8'))
  } catch {
    return undefined
  }
  const text = Object.hasOwn(cache.texts, words.join(':')) ? cache.texts[words.join(':')] : undefined
  if (text === undefined || helpColumns(env, stdout) !== cache.columns || !colourOff(env, stdout) || fs.existsSync(userThemeFile(env))) return undefined
  // oclif's user agent (the root help's VERSION line) names the platform and Node of this run.
  return text.replaceAll(USER_AGENT_PLACEHOLDER, `${cache.bin}/${cache.version} ${process.platform}-${process.arch} node-${process.version}`)
}

module.exports = {cachedHelp, helpWords}
