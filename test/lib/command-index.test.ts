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
  it('every command has a summary, a description and examples', () => {
    for (const [id, cmd] of Object.entries(COMMANDS)) {
      expect(cmd.summary, id).toBeTruthy()
      expect(cmd.description, id).toBeTruthy()
      expect((cmd.examples ?? []).length, id).toBeGreaterThan(0)
    }
  })
})
