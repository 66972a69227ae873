// Builds dist/: an esbuild bundle (dist/main.js with oclif, dist/command-index.js with every command)
// plus chunks for what is imported lazily, so offline commands never load @kubernetes/client-node; then writes the
// oclif manifest so `--help` needs no command code at all.
import {build} from 'esbuild'
import {rmSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

const root = new URL('..', import.meta.url).pathname

rmSync(join(root, 'dist'), {recursive: true, force: true})
rmSync(join(root, 'oclif.manifest.json'), {force: true})

const started = Date.now()
const result = await build({
  absWorkingDir: root,
  // Two entries: dist/main.js (oclif and error printing: all that --help needs) and
  // dist/command-index.js (every command, found by oclif's explicit discovery). Code imported
  // dynamically (the Kubernetes client, prompts) is split into chunks loaded on demand.
  entryPoints: [join(root, 'src/main.ts'), join(root, 'src/command-index.ts')],
  outdir: join(root, 'dist'),
  outbase: join(root, 'src'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.17',
  sourcemap: false,
  minify: true,
  keepNames: true,
  legalComments: 'none',
  chunkNames: 'chunks/[name]-[hash]',
  metafile: true,
  // Only used by oclif in development mode (loading .ts sources); never in the shipped CLI.
  external: ['typescript', 'tsx', 'ts-node'],
  logLevel: 'warning',
  // Some bundled dependencies are CommonJS and call require() for Node built-ins.
  banner: {js: "import {createRequire as __meshvmCreateRequire} from 'node:module';const require=__meshvmCreateRequire(import.meta.url);"},
})
writeFileSync(join(root, 'dist/meta.json'), JSON.stringify(result.metafile))

// The manifest lists every command with its flags; oclif then imports only the command being run.
process.env.NODE_ENV = 'production'
const {Plugin} = await import('@oclif/core')
const plugin = new Plugin({root, type: 'core', ignoreManifest: true, errorOnManifestCreate: true, isRoot: true})
await plugin.load()
writeFileSync(join(root, 'oclif.manifest.json'), JSON.stringify(plugin.manifest, null, 2) + '\n')
const count = Object.keys(plugin.manifest.commands).length
console.error(`built dist/ (${Object.keys(result.metafile.outputs).length} files) and oclif.manifest.json (${count} commands) in ${Date.now() - started} ms`)
if (count === 0) {
  console.error('error: the manifest lists no commands')
  process.exit(1)
}
