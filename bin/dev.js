#!/usr/bin/env -S node --import tsx --disable-warning=ExperimentalWarning
// Development entry point: runs the TypeScript sources directly (no build needed).
import {COMMANDS} from '../src/command-index.ts'
import {main} from '../src/main.ts'

globalThis.__MESHVM_COMMANDS__ = COMMANDS
main(process.argv.slice(2), import.meta.url, {development: true}).then((code) => {
  process.exitCode = code
})
