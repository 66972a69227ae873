import {readdirSync, statSync} from 'node:fs'
import {join, relative} from 'node:path'
import {describe, expect, it} from 'vitest'
import {COMMANDS} from '../../src/command-index.js'
import {REPO_ROOT} from '../helpers/cli.js'

function commandIds(dir: string, root = dir): string[] {
  return readdirSync(dir).flatMap((name) => {
    const p = join(dir, name)
    if (statSync(p).isDirectory()) return commandIds(p, root)
    return name.endsWith('.ts') ? [relative(root, p).replace(/\.ts$/, '').split('/').join(':')] : []
  })
}

describe('command index', () => {
  it('registers every file in src/commands under its oclif id', () => {
    expect(Object.keys(COMMANDS).sort()).toEqual(commandIds(join(REPO_ROOT, 'src/commands')).sort())
  })
  it('every command has a summary, a description and examples', () => {
    for (const [id, cmd] of Object.entries(COMMANDS)) {
      expect(cmd.summary, id).toBeTruthy()
      expect(cmd.description, id).toBeTruthy()
      expect((cmd.examples ?? []).length, id).toBeGreaterThan(0)
    }
  })
})
