/**
 * The structure CONTRIBUTING describes: commands → feature modules → kube/output/errors. src/lib/cli
 * (the command plumbing every command imports) and the shared layers never import a feature module,
 * so a feature's code is loaded only by the commands that use it.
 */
import {readdirSync, readFileSync} from 'node:fs'
import {join} from 'node:path'
import {fileURLToPath} from 'node:url'
import {describe, expect, it} from 'vitest'

const LIB = fileURLToPath(new URL('../../../src/lib/', import.meta.url))
/** What every layer may use: itself, the shared layers, and files at the top of src/lib that are no feature (errors, yaml). */
const SHARED = new Set(['cli', 'kube', 'output', 'util', 'validation', 'fs', 'errors.ts', 'yaml.ts'])

function relativeImports(dir: string): {file: string; target: string}[] {
  const out: {file: string; target: string}[] = []
  for (const name of readdirSync(join(LIB, dir))) {
    if (!name.endsWith('.ts')) continue
    const text = readFileSync(join(LIB, dir, name), 'utf8')
    for (const m of text.matchAll(/(?:from|import)\s*\(?\s*'(\.{1,2}\/[^']+)'/g)) {
      const target = m[1]!
      // '../X/…' or '../X.js': the first path element after src/lib.
      const top = target.startsWith('./') ? dir : target.slice(3).split('/')[0]!.replace(/\.js$/, '.ts')
      out.push({file: `${dir}/${name}`, target: top})
    }
  }
  return out
}

describe('layers', () => {
  it.each(['cli', 'kube', 'output', 'util', 'validation'])('src/lib/%s imports no feature module', (dir) => {
    const imports = relativeImports(dir)
    expect(imports.filter((i) => !SHARED.has(i.target))).toEqual([])
  })

  it('sees the imports it checks (a feature import would be caught)', () => {
    const cli = relativeImports('cli')
    expect(cli).toContainEqual({file: 'cli/output-flags.ts', target: 'output'})
    expect(cli).toContainEqual({file: 'cli/multi-context.ts', target: 'errors.ts'})
    expect(relativeImports('bundle').some((i) => i.target === 'bundle')).toBe(true)
  })
})
