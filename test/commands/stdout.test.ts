/**
 * A failed write to stdout (issue #27): a reader that went away early (`meshvm … | head -1`) is not an
 * error (exit 0, silent); any other failure (`>/dev/full`: ENOSPC) is one line on stderr and exit 1,
 * on every start-up path: `--version` and cached help (bin/run.js alone), oclif's help, a command.
 */
import {spawn} from 'node:child_process'
import {closeSync, existsSync, openSync} from 'node:fs'
import {describe, expect, it} from 'vitest'
import {BIN, REPO_ROOT, STACK_TRACE} from '../helpers/cli.js'

interface Run {
  code: number | null
  stderr: string
}

/** Runs the CLI with stdout on `stdout` (an fd, or 'pipe' closed by the reader before it writes). */
function run(args: string[], stdout: number | 'closed-pipe', env: NodeJS.ProcessEnv = {}): Promise<Run> {
  return new Promise((resolve, reject) => {
    const child = spawn(process.execPath, [BIN, ...args], {cwd: REPO_ROOT, env: {...process.env, NO_COLOR: '1', ...env}, stdio: ['ignore', stdout === 'closed-pipe' ? 'pipe' : stdout, 'pipe']})
    // The reader goes away before the CLI writes anything.
    if (stdout === 'closed-pipe') child.stdout!.destroy()
    let stderr = ''
    child.stderr!.setEncoding('utf8').on('data', (d: string) => (stderr += d))
    child.on('error', reject)
    child.on('close', (code) => resolve({code, stderr}))
  })
}

const CASES: {name: string; args: string[]; env?: NodeJS.ProcessEnv}[] = [
  {name: '--version (answered by bin/run.js)', args: ['--version']},
  {name: '--help (the help cache)', args: ['--help']},
  {name: '--help rendered by oclif', args: ['onboard', '--help'], env: {MESHVM_NO_HELP_CACHE: '1'}},
  {name: 'a topic command through oclif', args: ['war', 'list', '--help']},
  {name: 'a command (direct run)', args: ['onboard', 'web', '-n', 'apps', '-p', 'http=8080']},
  {name: 'a command with -o json', args: ['version', '-o', 'json']},
]

describe('stdout failures', () => {
  describe.skipIf(!existsSync('/dev/full'))('stdout on a full device (/dev/full: ENOSPC)', () => {
    for (const c of CASES) {
      it(`${c.name}: one line on stderr, exit 1`, async () => {
        const full = openSync('/dev/full', 'w')
        try {
          const r = await run(c.args, full, c.env)
          expect(r.stderr).toBe('Error: cannot write to standard output: no space left on device (ENOSPC)\n')
          expect(r.stderr).not.toMatch(STACK_TRACE)
          expect(r.code).toBe(1)
        } finally {
          closeSync(full)
        }
      })
    }
  })

  describe('a reader that closed the pipe early (`| head -1`)', () => {
    for (const c of CASES) {
      it(`${c.name}: exit 0, nothing on stderr`, async () => {
        expect(await run(c.args, 'closed-pipe', c.env)).toEqual({code: 0, stderr: ''})
      })
    }
  })

  // `>&-`: Node opens /dev/null (read-write) on a closed fd 1 before any JavaScript runs, exactly as a
  // parent that discards the output does (libuv's stdio 'ignore', Python's subprocess.DEVNULL), so the
  // CLI cannot tell the two apart; it must at least run as with /dev/null, without a crash.
  it.skipIf(!existsSync('/bin/sh'))('a closed stdout (`>&-`) runs as stdout on /dev/null: exit 0, no stack trace', async () => {
    const result = await new Promise<Run>((resolve, reject) => {
      const child = spawn('/bin/sh', ['-c', 'exec "$0" "$@" >&-', process.execPath, BIN, 'onboard', 'web', '-n', 'apps', '-p', 'http=8080'], {cwd: REPO_ROOT, stdio: ['ignore', 'ignore', 'pipe']})
      let stderr = ''
      child.stderr.setEncoding('utf8').on('data', (d: string) => (stderr += d))
      child.on('error', reject)
      child.on('close', (code) => resolve({code, stderr}))
    })
    expect(result).toEqual({code: 0, stderr: ''})
  })
})
