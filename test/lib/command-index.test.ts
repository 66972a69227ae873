import {spawnSync} from 'node:child_process'
import {cpSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'
import {COMMANDS} from '../../src/command-index.js'
import {REPO_ROOT} from '../helpers/cli.js'

describe('command index', () => {
  it('is in sync with the files in src/commands (npm run build regenerates it)', () => {
    // --check compares without writing, so a stale committed index fails here even after a build.
    const check = spawnSync(process.execPath, [join(REPO_ROOT, 'scripts/build.mjs'), '--check'], {encoding: 'utf8'})
    expect(check.stderr).toBe('')
    expect(check.status).toBe(0)
  })
  it('--check fails on a stale index and leaves the file as it was', () => {
    // The generator run on a copy of the tree that has one more command file.
    const copy = mkdtempSync(join(tmpdir(), 'index-check-'))
    try {
      cpSync(join(REPO_ROOT, 'scripts'), join(copy, 'scripts'), {recursive: true})
      cpSync(join(REPO_ROOT, 'src/commands'), join(copy, 'src/commands'), {recursive: true})
      symlinkSync(join(REPO_ROOT, 'node_modules'), join(copy, 'node_modules'))
      const committed = readFileSync(join(REPO_ROOT, 'src/command-index.ts'), 'utf8')
      writeFileSync(join(copy, 'src/command-index.ts'), committed)
      writeFileSync(join(copy, 'src/commands/extra.ts'), 'export default class Extra {}\n')
      const check = spawnSync(process.execPath, [join(copy, 'scripts/build.mjs'), '--check'], {encoding: 'utf8'})
      expect(check.status).toBe(1)
      expect(check.stderr).toContain('src/command-index.ts is stale')
      expect(readFileSync(join(copy, 'src/command-index.ts'), 'utf8')).toBe(committed)
    } finally {
      rmSync(copy, {recursive: true, force: true})
    }
  })
  it("sorts the same in byte order as with localeCompare (the build replaces oclif's localeCompare sort)", () => {
    const ids = Object.keys(COMMANDS)
    const byBytes = [...ids].sort((a, b) => (a < b ? -1 : a > b ? 1 : 0))
    expect([...ids].sort((a, b) => a.localeCompare(b))).toEqual(byBytes)
    // Topic commands (war:list…) are among them, so ':' is covered.
    expect(ids.some((id) => id.includes(':'))).toBe(true)
    expect(readFileSync(join(REPO_ROOT, 'dist/meshvm.cjs'), 'utf8')).not.toContain('localeCompare')
  })
  it('every command has a summary, a description and examples', () => {
    for (const [id, cmd] of Object.entries(COMMANDS)) {
      expect(cmd.summary, id).toBeTruthy()
      expect(cmd.description, id).toBeTruthy()
      expect((cmd.examples ?? []).length, id).toBeGreaterThan(0)
    }
  })
})
