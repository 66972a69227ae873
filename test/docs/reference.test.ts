import {spawnSync} from 'node:child_process'
import {cpSync, existsSync, mkdtempSync, readdirSync, readFileSync, rmSync, unlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {REPO_ROOT} from '../helpers/cli.js'

// docs/reference/ is generated from the built oclif.manifest.json (npm test builds first; after a
// plain `npx vitest run`, run `npm run build` first). --check compares without writing anything.
const SCRIPT = join(REPO_ROOT, 'scripts/gen-docs.mjs')
const REFERENCE = join(REPO_ROOT, 'docs/reference')

function genDocs(args: string[]) {
  const run = spawnSync(process.execPath, [SCRIPT, ...args], {cwd: REPO_ROOT, encoding: 'utf8'})
  return {code: run.status, stderr: run.stderr}
}

function snapshot(dir: string): Record<string, string> {
  return Object.fromEntries(
    readdirSync(dir)
      .sort()
      .map((f) => [f, readFileSync(join(dir, f), 'utf8')]),
  )
}

const scratch = mkdtempSync(join(tmpdir(), 'meshvm-docs-reference-'))
afterAll(() => rmSync(scratch, {recursive: true, force: true}))

describe('docs/reference (npm run docs:reference)', () => {
  it('is up to date with the commands: run "npm run docs:reference" and commit the result if this fails', () => {
    const before = snapshot(REFERENCE)
    const run = genDocs(['--check'])
    expect(run.stderr).toContain('is up to date')
    expect(run.code).toBe(0)
    // --check never writes.
    expect(snapshot(REFERENCE)).toEqual(before)
  })

  it('has one page per command in the manifest, listed in the index', () => {
    const manifest = JSON.parse(readFileSync(join(REPO_ROOT, 'oclif.manifest.json'), 'utf8')) as {commands: Record<string, {hidden?: boolean}>}
    const ids = Object.keys(manifest.commands).filter((id) => !manifest.commands[id]?.hidden)
    const index = readFileSync(join(REFERENCE, 'README.md'), 'utf8')
    for (const id of ids) {
      const file = `${id.replaceAll(':', '-')}.md`
      expect(existsSync(join(REFERENCE, file)), file).toBe(true)
      expect(index).toContain(`](${file})`)
    }
    expect(readdirSync(REFERENCE).sort()).toEqual(['README.md', ...ids.map((id) => `${id.replaceAll(':', '-')}.md`)].sort())
  })

  it('--check fails on a changed, a missing and an extra file, names them, and leaves the directory as it was', () => {
    const out = join(scratch, 'stale')
    cpSync(REFERENCE, out, {recursive: true})
    writeFileSync(join(out, 'onboard.md'), readFileSync(join(out, 'onboard.md'), 'utf8') + 'edited by hand\n')
    unlinkSync(join(out, 'bundle.md'))
    writeFileSync(join(out, 'removed-command.md'), '# gone\n')
    const before = snapshot(out)
    const run = genDocs(['--check', '--out', out])
    expect(run.code).toBe(1)
    expect(run.stderr).toContain('onboard.md (differs)')
    expect(run.stderr).toContain('bundle.md (missing)')
    expect(run.stderr).toContain('removed-command.md (no such command)')
    expect(snapshot(out)).toEqual(before)
  })

  it('without --check, rewrites a stale directory to exactly what --check expects', () => {
    const out = join(scratch, 'rewrite')
    cpSync(REFERENCE, out, {recursive: true})
    writeFileSync(join(out, 'onboard.md'), 'edited by hand\n')
    writeFileSync(join(out, 'removed-command.md'), '# gone\n')
    expect(genDocs(['--out', out]).code).toBe(0)
    expect(snapshot(out)).toEqual(snapshot(REFERENCE))
    expect(genDocs(['--check', '--out', out]).code).toBe(0)
  })

  it('a missing manifest or an unknown argument is a one-line error, exit 2', () => {
    const missing = genDocs(['--check', '--manifest', join(scratch, 'none.json')])
    expect(missing.code).toBe(2)
    expect(missing.stderr).toMatch(/^gen-docs: .*none\.json not found: run "npm run build" first\n$/)
    const unknown = genDocs(['--chek'])
    expect(unknown.code).toBe(2)
    expect(unknown.stderr).toBe('gen-docs: unknown argument "--chek" (valid: --check, --manifest FILE, --out DIR)\n')
  })
})

/** Markdown files of the user documentation: README.md and docs/ (the generated reference included). */
function docFiles(): string[] {
  const files = ['README.md']
  const walk = (dir: string) => {
    for (const entry of readdirSync(join(REPO_ROOT, dir), {withFileTypes: true})) {
      if (entry.isDirectory()) walk(`${dir}/${entry.name}`)
      else if (entry.name.endsWith('.md')) files.push(`${dir}/${entry.name}`)
    }
  }
  walk('docs')
  return files.sort()
}

/** GitHub's heading anchors: lower case, punctuation other than - and _ dropped, spaces to dashes. */
function anchors(markdown: string): Set<string> {
  const out = new Set<string>()
  let fence = false
  for (const line of markdown.split('\n')) {
    if (/^(`{3,}|~{3,})/.test(line)) fence = !fence
    const m = !fence && /^#{1,6}\s+(.*)$/.exec(line)
    if (m)
      out.add(
        m[1]!
          .trim()
          .toLowerCase()
          .replace(/[^\p{L}\p{N}\s_-]/gu, '')
          .replace(/\s/g, '-'),
      )
  }
  return out
}

describe('README.md and docs/', () => {
  it('every relative link points at a file that exists, and at a heading that exists', () => {
    const broken: string[] = []
    for (const file of docFiles()) {
      const text = readFileSync(join(REPO_ROOT, file), 'utf8').replace(/^(`{3,})[^\n]*\n[\s\S]*?^\1\s*$/gm, '')
      for (const [, target] of text.matchAll(/\]\(([^)\s]+)\)/g)) {
        if (/^[a-z]+:/i.test(target!)) continue
        const [path, anchor] = target!.split('#') as [string, string | undefined]
        const resolved = path === '' ? file : join(file, '..', path)
        if (!existsSync(join(REPO_ROOT, resolved))) broken.push(`${file}: ${target} (no such file)`)
        else if (anchor && resolved.endsWith('.md') && !anchors(readFileSync(join(REPO_ROOT, resolved), 'utf8')).has(anchor)) broken.push(`${file}: ${target} (no such heading)`)
      }
    }
    expect(broken).toEqual([])
  })

  it('stand on their own: nothing cites ../shared', () => {
    for (const file of docFiles()) expect(readFileSync(join(REPO_ROOT, file), 'utf8'), file).not.toMatch(/\.\.\/shared|\/shared\/reference/)
  })

  it('keep the two set-up commands CI and the README promise', () => {
    const readme = readFileSync(join(REPO_ROOT, 'README.md'), 'utf8')
    expect(readme).toContain('\nnpm ci && npm run example\n')
    expect(readme).toContain('\nnpm test\n')
  })
})
