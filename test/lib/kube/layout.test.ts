/**
 * The access layer's files, one idea each: transport.ts (connection, path, one bounded exchange),
 * paging.ts, watch.ts, credentials.ts below client.ts (retries, credentials refresh, JSON), which
 * is the one entry for code outside src/lib/kube.
 */
import {readdirSync, readFileSync} from 'node:fs'
import {join, relative} from 'node:path'
import {fileURLToPath} from 'node:url'
import {describe, expect, it} from 'vitest'

const SRC = fileURLToPath(new URL('../../../src/', import.meta.url))
const KUBE = join(SRC, 'lib/kube')

function tsFiles(dir: string): string[] {
  return readdirSync(dir, {withFileTypes: true}).flatMap((e) => (e.isDirectory() ? tsFiles(join(dir, e.name)) : e.name.endsWith('.ts') ? [join(dir, e.name)] : []))
}

const importsOf = (file: string) => [...readFileSync(file, 'utf8').matchAll(/(?:from|import)\s*\(?\s*'([^']+)'/g)].map((m) => m[1]!)

describe('src/lib/kube layout', () => {
  it('code outside src/lib/kube reaches transport, paging and watch only through client.ts', () => {
    const outside = tsFiles(SRC).filter((f) => !f.startsWith(`${KUBE}/`))
    const offending = outside.flatMap((f) =>
      importsOf(f)
        .filter((i) => /kube\/(transport|paging|watch)\.js$/.test(i))
        .map((i) => `${relative(SRC, f)}: ${i}`),
    )
    expect(offending).toEqual([])
    // The check sees imports of the kube layer at all.
    expect(outside.some((f) => importsOf(f).some((i) => i.endsWith('kube/client.js')))).toBe(true)
  })

  it.each([
    ['transport.ts', ['./client.js', './paging.js', './watch.js']],
    ['paging.ts', ['./client.js', './watch.js']],
    ['watch.ts', ['./client.js', './paging.js']],
  ])('%s does not import %j (it needs only a narrow view of the client)', (file, forbidden) => {
    const imports = importsOf(join(KUBE, file))
    expect(imports.filter((i) => forbidden.includes(i))).toEqual([])
    expect(imports.length).toBeGreaterThan(0)
  })
})
