import {tmpdir} from 'node:os'
import {basename, dirname} from 'node:path'
import {expect, it} from 'vitest'

// The suite's global setup gives every run its own TMPDIR, removed at the end (nothing is left in /tmp).
it('test files write temporary files below the run directory, not straight into the system one', () => {
  expect(basename(tmpdir())).toMatch(/^meshvm-test-run-/)
  expect(dirname(tmpdir())).not.toMatch(/meshvm-test-run-/)
})
