import {execFileSync} from 'node:child_process'
import {mkdtempSync, readFileSync, rmSync, statSync, writeFileSync} from 'node:fs'
import {tmpdir} from 'node:os'
import {join} from 'node:path'
import {afterAll, describe, expect, it} from 'vitest'
import {tarGz} from '../../src/lib/fs/tar.js'

const work = mkdtempSync(join(tmpdir(), 'meshvm-tar-'))
afterAll(() => rmSync(work, {recursive: true, force: true}))

describe('tarGz', () => {
  it('is read by the system tar with contents and modes intact', () => {
    const archive = join(work, 'b.tar.gz')
    writeFileSync(
      archive,
      tarGz(
        'bundle',
        [
          {name: 'istio-token', data: 'secret', mode: 0o600},
          {name: 'install.sh', data: '#!/bin/sh\n'.repeat(100), mode: 0o755},
        ],
        1_700_000_000,
      ),
    )
    execFileSync('tar', ['-xzf', archive, '-C', work])
    expect(readFileSync(join(work, 'bundle/istio-token'), 'utf8')).toBe('secret')
    expect(statSync(join(work, 'bundle/istio-token')).mode & 0o777).toBe(0o600)
    expect(statSync(join(work, 'bundle/install.sh')).mode & 0o777).toBe(0o755)
    expect(execFileSync('tar', ['-tzvf', archive], {encoding: 'utf8'})).toContain('2023-11-14')
  })
})
