// Builds dist/meshvm.cjs: one esbuild bundle with oclif, every command and, behind lazy requires,
// the Kubernetes client and the prompts. bin/run.js loads it through a V8 code cache (see
// bin/load.cjs), which halves start-up time; then the oclif manifest is written so `--help` needs no
// command code at all.
import {build} from 'esbuild'
import {rmSync, writeFileSync} from 'node:fs'
import {createRequire} from 'node:module'
import {join} from 'node:path'

const root = new URL('..', import.meta.url).pathname

rmSync(join(root, 'dist'), {recursive: true, force: true})
rmSync(join(root, 'oclif.manifest.json'), {force: true})

const started = Date.now()
const result = await build({
  absWorkingDir: root,
  entryPoints: [join(root, 'src/main.ts')],
  outfile: join(root, 'dist/meshvm.cjs'),
  bundle: true,
  format: 'cjs',
  platform: 'node',
  target: 'node20.17',
  minify: true,
  keepNames: true,
  sourcemap: false,
  legalComments: 'none',
  metafile: true,
  logLevel: 'warning',
  // Only used by oclif in development mode (loading .ts sources); never in the shipped CLI.
  external: ['typescript', 'tsx', 'ts-node'],
})
writeFileSync(join(root, 'dist/meta.json'), JSON.stringify(result.metafile))

// The manifest lists every command with its flags. oclif's explicit discovery reads the command map
// through bin/commands.cjs, which the bundle fills when it loads.
process.env.NODE_ENV = 'production'
createRequire(import.meta.url)(join(root, 'dist/meshvm.cjs'))
const {Plugin} = await import('@oclif/core')
const plugin = new Plugin({root, type: 'core', ignoreManifest: true, errorOnManifestCreate: true, isRoot: true})
await plugin.load()
writeFileSync(join(root, 'oclif.manifest.json'), JSON.stringify(plugin.manifest, null, 2) + '\n')
const count = Object.keys(plugin.manifest.commands).length
const size = Object.values(result.metafile.outputs).reduce((n, o) => n + o.bytes, 0)
console.error(`built dist/meshvm.cjs (${(size / 1024).toFixed(0)} KiB) and oclif.manifest.json (${count} commands) in ${Date.now() - started} ms`)
if (count === 0) {
  console.error('error: the manifest lists no commands')
  process.exit(1)
}
