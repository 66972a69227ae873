/** `kubectl meshvm …`: kubectl finds kubectl-meshvm on the PATH and runs it as a plugin. */
import {execFileSync} from 'node:child_process'
import {mkdtempSync, rmSync, symlinkSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {BIN} from '../helpers/cli.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-plugin-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))

describe('kubectl plugin', () => {
  it('runs as `kubectl meshvm` through the kubectl-meshvm bin', () => {
    symlinkSync(BIN, join(work, 'kubectl-meshvm'))
    const env = {...process.env, PATH: `${work}:${process.env.PATH}`, NO_COLOR: '1'}
    expect(execFileSync('kubectl', ['plugin', 'list', '--name-only'], {env, encoding: 'utf8'})).toContain('kubectl-meshvm')
    const out = execFileSync('kubectl', ['meshvm', 'onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-o', 'name'], {env, encoding: 'utf8'})
    expect(out).toBe('workloadgroup.networking.istio.io/web\nservice/web\n')
  })
})
