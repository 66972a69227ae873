// Builds dist/: one esbuild bundle with an entry per command and code splitting, so a command loads
// only what it uses (offline commands never load @kubernetes/client-node), then writes the oclif
// manifest so `--help` and command lookup need no command module at all.
import {build} from 'esbuild'
import {readdirSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {join, relative} from 'node:path'

const root = new URL('..', import.meta.url).pathname

function commandFiles(dir) {
  const out = []
  for (const name of readdirSync(dir)) {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) out.push(...commandFiles(p))
    else if (name.endsWith('.ts')) out.push(p)
  }
  return out
}

rmSync(join(root, 'dist'), {recursive: true, force: true})
rmSync(join(root, 'oclif.manifest.json'), {force: true})

const started = Date.now()
const result = await build({
  absWorkingDir: root,
  entryPoints: [join(root, 'src/main.ts'), ...commandFiles(join(root, 'src/commands'))],
  outdir: join(root, 'dist'),
  outbase: join(root, 'src'),
  bundle: true,
  splitting: true,
  format: 'esm',
  platform: 'node',
  target: 'node20.17',
  sourcemap: false,
  minifySyntax: true,
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
void relative
