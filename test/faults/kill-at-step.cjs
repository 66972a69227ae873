/**
 * Test harness (preload: node --require test/faults/kill-at-step.cjs): kills the process with
 * SIGKILL right after its Nth file-system change (MESHVM_TEST_KILL_AT_STEP=N), so a test can stop a
 * write at every instant that matters without a hook in product code. Counting starts when the test
 * calls globalThis.armKillAtStep() (after its modules are loaded, so a compile cache does not count).
 * Every synchronous call that changes the file system counts: creating, writing, renaming, linking,
 * removing, changing a mode.
 */
'use strict'
const fs = require('node:fs')

const at = Number(process.env.MESHVM_TEST_KILL_AT_STEP)
let armed = false
let steps = 0

globalThis.armKillAtStep = () => {
  armed = true
}

const creates = (flags) => (typeof flags === 'number' ? (flags & fs.constants.O_CREAT) !== 0 : typeof flags === 'string' && /[wa]/.test(flags))

for (const name of ['writeSync', 'renameSync', 'symlinkSync', 'linkSync', 'unlinkSync', 'rmSync', 'rmdirSync', 'mkdirSync', 'mkdtempSync', 'openSync', 'fchmodSync', 'chmodSync', 'copyFileSync']) {
  const original = fs[name]
  fs[name] = function (...args) {
    const result = original.apply(this, args)
    if (armed && (name !== 'openSync' || creates(args[1])) && ++steps === at) process.kill(process.pid, 'SIGKILL')
    return result
  }
}
