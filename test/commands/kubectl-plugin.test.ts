/** `kubectl meshvm …`: kubectl finds kubectl-meshvm on the PATH and runs it as a plugin. */
import {execFileSync} from 'node:child_process'
import {mkdirSync, mkdtempSync, realpathSync, rmSync, symlinkSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {BIN} from '../helpers/cli.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-plugin-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))

/**
 * A PATH with nothing but kubectl, node and this checkout's kubectl-meshvm, so a meshvm installed on
 * the machine (npm link, krew) can neither stand in for the one under test nor shadow it.
 */
function pluginPath(): string {
  const bin = join(work, 'bin')
  mkdirSync(bin)
  const kubectl = realpathSync(execFileSync('sh', ['-c', 'command -v kubectl'], {encoding: 'utf8'}).trim())
  symlinkSync(kubectl, join(bin, 'kubectl'))
  symlinkSync(process.execPath, join(bin, 'node'))
  symlinkSync(BIN, join(bin, 'kubectl-meshvm'))
  return bin
}

describe('kubectl plugin', () => {
  it('runs as `kubectl meshvm` through the kubectl-meshvm bin', () => {
    const bin = pluginPath()
    const env = {...process.env, PATH: bin, NO_COLOR: '1'}
    expect(
      execFileSync(join(bin, 'kubectl'), ['plugin', 'list'], {env, encoding: 'utf8'})
        .split('\n')
        .filter((l) => l.startsWith('/')),
    ).toEqual([join(bin, 'kubectl-meshvm')])
    const out = execFileSync(join(bin, 'kubectl'), ['meshvm', 'onboard', 'web', '-n', 'apps', '-p', 'http=8080', '-o', 'name'], {env, encoding: 'utf8'})
    expect(out).toBe('workloadgroup.networking.istio.io/web\nservice/web\n')
  })
})
