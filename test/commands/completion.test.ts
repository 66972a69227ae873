import {execFileSync} from 'node:child_process'
import {mkdtempSync, rmSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {runCli} from '../helpers/cli.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-completion-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))

describe('meshvm completion', () => {
  it('bash: completes commands, flags and fixed flag values in a real bash', async () => {
    const r = await runCli(['completion', 'bash'])
    expect(r.code).toBe(0)
    const script = join(work, 'c.bash')
    writeFileSync(script, r.stdout)
    const complete = (...words: string[]) =>
      execFileSync('bash', ['-c', `source ${script}; COMP_WORDS=("$@"); COMP_CWORD=$(( \${#COMP_WORDS[@]} - 1 )); _meshvm; echo "\${COMPREPLY[*]}"`, 'x', 'meshvm', ...words], {encoding: 'utf8'}).trim()
    expect(complete('')).toContain('onboard')
    expect(complete('onb')).toBe('onboard')
    expect(complete('onboard', '--probe-h')).toBe('--probe-http --probe-https --probe-host --probe-header')
    expect(complete('onboard', 'web', '-o', '')).toBe('yaml json name')
    expect(complete('precheck', '-o', 'j')).toBe('json')
  })
  it('zsh and fish scripts are generated too', async () => {
    const [zsh, fish] = await Promise.all([runCli(['completion', 'zsh']), runCli(['completion', 'fish'])])
    expect(zsh.stdout).toMatch(/^#compdef meshvm\n/)
    expect(zsh.stdout).toContain('bashcompinit')
    expect(fish.stdout).toContain("complete -c meshvm -n '__fish_seen_subcommand_from onboard' -l output -s o -x -a 'yaml json name'")
  })
  it('rejects an unknown shell', async () => {
    const r = await runCli(['completion', 'tcsh'])
    expect(r.code).toBe(2)
    expect(r.stderr.split('\n')[0]).toBe('Error: Expected tcsh to be one of: bash, zsh, fish')
  })
})
