// Writes dist/THIRD-PARTY-NOTICES.txt: the licences of the libraries bundled into dist/ (the npm
// package and the standalone executables ship them inside the bundles, not as node_modules, so their
// licence texts travel in this file). The libraries are those esbuild put in dist/meshvm.cjs
// (dist/meta.json) and everything the vendor bundles' libraries depend on (package-lock.json), each
// with its package.json licence and its LICENSE/LICENCE/COPYING file.
//   node scripts/third-party-notices.mjs      (run by prepack and build:standalone, after the build)
import {existsSync, readdirSync, readFileSync, renameSync, writeFileSync} from 'node:fs'
import {join} from 'node:path'

const root = new URL('..', import.meta.url).pathname
// The libraries of dist/vendor/*.cjs (scripts/build.mjs VENDORS).
const VENDOR_LIBRARIES = ['@kubernetes/client-node', '@inquirer/prompts', 'string-width']

const lock = JSON.parse(readFileSync(join(root, 'package-lock.json'), 'utf8')).packages

/** Where Node would find `name` from the package at lockfile path `from` (its node_modules, then its parents'). */
function resolveFrom(from, name) {
  let dir = from
  for (;;) {
    const candidate = dir ? `${dir}/node_modules/${name}` : `node_modules/${name}`
    if (lock[candidate]) return candidate
    if (!dir) return undefined
    const up = dir.lastIndexOf('/node_modules/')
    dir = up < 0 ? '' : dir.slice(0, up)
  }
}

function closure(starts) {
  const seen = new Set()
  const queue = [...starts]
  while (queue.length > 0) {
    const path = queue.shift()
    if (seen.has(path)) continue
    seen.add(path)
    const entry = lock[path]
    for (const dep of Object.keys({...entry.dependencies, ...entry.optionalDependencies})) {
      const found = resolveFrom(path, dep)
      if (found) queue.push(found)
    }
  }
  return seen
}

export function bundledPackages() {
  const meta = JSON.parse(readFileSync(join(root, 'dist', 'meta.json'), 'utf8'))
  const paths = new Set()
  for (const input of Object.keys(meta.inputs)) {
    const match = input.match(/^(.*node_modules\/(?:@[^/]+\/)?[^/]+)\//)
    if (match && lock[match[1]]) paths.add(match[1])
  }
  for (const name of VENDOR_LIBRARIES) for (const path of closure([`node_modules/${name}`])) paths.add(path)
  // Type declarations hold no code that is bundled.
  return [...paths].filter((p) => !p.includes('node_modules/@types/')).sort()
}

export function noticesText() {
  const sections = bundledPackages().map((path) => {
    const dir = join(root, path)
    const pkg = JSON.parse(readFileSync(join(dir, 'package.json'), 'utf8'))
    const files = existsSync(dir)
      ? readdirSync(dir)
          .filter((f) => /^(licen[cs]e|copying|notice)/i.test(f))
          .sort()
      : []
    const texts = files.map((f) => readFileSync(join(dir, f), 'utf8').trim())
    return [`${pkg.name}@${pkg.version} (${pkg.license ?? 'licence not stated'})`, ...(texts.length > 0 ? texts : ['(the package ships no licence file)'])].join('\n\n')
  })
  return `Third-party software bundled in meshvm (dist/meshvm.cjs, dist/vendor/*.cjs)\n\n${sections.join(`\n\n${'-'.repeat(78)}\n\n`)}\n`
}

if (process.argv[1] === new URL(import.meta.url).pathname) {
  const out = join(root, 'dist', 'THIRD-PARTY-NOTICES.txt')
  writeFileSync(`${out}.tmp`, noticesText())
  renameSync(`${out}.tmp`, out)
  console.error(`wrote dist/THIRD-PARTY-NOTICES.txt (${bundledPackages().length} packages)`)
}
