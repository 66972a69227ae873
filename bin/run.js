#!/usr/bin/env node
// meshvm entry point. `--version` is answered here, before anything else is loaded, because it is
// the command people (and scripts) run most and it needs nothing but package.json.
import {readFileSync} from 'node:fs'
import {createRequire} from 'node:module'

const argv = process.argv.slice(2)
if (argv.length === 1 && (argv[0] === '--version' || argv[0] === '-v' || argv[0] === 'version')) {
  const pkg = JSON.parse(readFileSync(new URL('../package.json', import.meta.url), 'utf8'))
  process.stdout.write(`meshvm/${pkg.version} ${process.platform}-${process.arch} node-${process.version}\n`)
} else {
  const {loadBundle} = createRequire(import.meta.url)('./load.cjs')
  const {exports, saveCache} = loadBundle()
  process.exitCode = await exports.main(argv, import.meta.url)
  saveCache()
}
