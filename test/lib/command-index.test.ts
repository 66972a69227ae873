import {execFileSync} from 'node:child_process'
import {readFileSync} from 'node:fs'
import {join} from 'node:path'
import {describe, expect, it} from 'vitest'
import {COMMANDS} from '../../src/command-index.js'
import {REPO_ROOT} from '../helpers/cli.js'

describe('command index', () => {
  it('is in sync with the files in src/commands (npm run build regenerates it)', () => {
    const before = readFileSync(join(REPO_ROOT, 'src/command-index.ts'), 'utf8')
    execFileSync(process.execPath, [join(REPO_ROOT, 'scripts/build.mjs'), '--index-only'])
    expect(readFileSync(join(REPO_ROOT, 'src/command-index.ts'), 'utf8')).toBe(before)
  })
  it('sorts the same in byte order as with localeCompare (the build replaces oclif\'s localeCompare sort)', () => {
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
