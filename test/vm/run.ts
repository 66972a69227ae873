/**
 * Runs the simulated VM (test/vm/vm.ts) the way `npm run demo:vm -- …` does, as a child process a
 * test can watch and signal. Its own process id (printed first) is what `kill -HUP` must target.
 */
import {spawn, type ChildProcess} from 'node:child_process'
import {fileURLToPath} from 'node:url'
import {REPO_ROOT} from '../helpers/cli.js'

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
  let stdout = ''
  let stderr = ''
  const watchers = new Set<() => void>()
  const notify = () => {
    for (const w of [...watchers]) w()
  }
  child.stdout!.setEncoding('utf8').on('data', (d: string) => {
    stdout += d
    notify()
  })
  child.stderr!.setEncoding('utf8').on('data', (d: string) => {
    stderr += d
    notify()
  })
  let ended = false
  const done = new Promise<{code: number | null; signal: NodeJS.Signals | null; stdout: string; stderr: string}>((resolve) => {
    child.on('close', (code, signal) => {
      ended = true
      notify()
      resolve({code, signal, stdout, stderr})
    })
  })
  const waitFor = (pattern: RegExp, timeoutMs = 20_000) =>
    new Promise<void>((resolve, reject) => {
      const check = () => {
        if (pattern.test(stdout) || pattern.test(stderr)) {
          watchers.delete(check)
          clearTimeout(timer)
          resolve()
        } else if (ended) {
          watchers.delete(check)
          clearTimeout(timer)
          reject(new Error(`the VM ended before printing ${pattern}:\n${stdout}\n${stderr}`))
        }
      }
      const timer = setTimeout(() => {
        watchers.delete(check)
        reject(new Error(`timed out waiting for ${pattern}:\n${stdout}\n${stderr}`))
      }, timeoutMs)
      watchers.add(check)
      check()
    })
  return {
    child,
    done,
    waitFor,
    stdout: () => stdout,
    stderr: () => stderr,
    async pid() {
      await waitFor(/^pid \d+$/m)
      return Number(/^pid (\d+)$/m.exec(stdout)![1])
    },
  }
}
