#!/usr/bin/env -S node --import tsx --disable-warning=ExperimentalWarning
// Development entry point: runs the TypeScript sources directly (no build needed).
import {main} from '../src/main.ts'

main(process.argv.slice(2), import.meta.url, {development: true}).then((code) => {
  process.exitCode = code
})
