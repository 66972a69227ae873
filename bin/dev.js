#!/usr/bin/env -S node --import tsx --disable-warning=ExperimentalWarning
// Development entry point: runs the TypeScript sources directly (no build needed).
const {main} = await import('../src/main.ts')
process.exitCode = await main(process.argv.slice(2), import.meta.url, {development: true})
