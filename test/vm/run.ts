/**
 * Runs the simulated VM (test/vm/vm.ts) the way `npm run demo:vm -- …` does, as a child process a
 * test can watch and signal. Its own process id (printed first) is what `kill -HUP` must target.
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {fileURLToPath} from 'node:url'
import {REPO_ROOT} from '../helpers/cli.js'
import {watchOutput} from '../helpers/spawn.js'

const TSX = fileURLToPath(new URL('../../node_modules/.bin/tsx', import.meta.url))
const VM = fileURLToPath(new URL('./vm.ts', import.meta.url))

export interface RunningVm {
  child: ChildProcess
  /** The VM's own process id, from its first line. */
  pid(): Promise<number>
  stdout(): string
  stderr(): string
  waitFor(pattern: RegExp, timeoutMs?: number): Promise<void>
  done: Promise<{code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string}>
}

export function startVm(bundleDir: string, o: {address: string; hostname: string; unhealthy?: boolean; appPorts?: number[]}): RunningVm {
  const args = [VM, bundleDir, '--address', o.address, '--hostname', o.hostname, ...(o.unhealthy ? ['--unhealthy'] : []), ...(o.appPorts ?? []).flatMap((p) => ['--app-port', String(p)])]
  const child = spawn(TSX, args, {cwd: REPO_ROOT, env: {...process.env, NO_COLOR: '1'}, stdio: ['ignore', 'pipe', 'pipe']})
  const output = watchOutput(child)
  const done = new Promise<{code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string}>((resolve) => {
    child.on('close', (code, signal) => {
      output.ended()
      resolve({code, signal, stdout: output.stdout(), stderr: output.stderr()})
    })
  })
  const waitFor = (pattern: RegExp, timeoutMs = 20_000) => output.waitFor(pattern, timeoutMs)
  return {
    child,
    done,
    waitFor,
    stdout: output.stdout,
    stderr: output.stderr,
    async pid() {
      await waitFor(/^pid \d+$/m)
      return Number(/^pid (\d+)$/m.exec(output.stdout())![1])
    },
  }
}
