import {defineConfig} from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // @oclif/test captures stdout/stderr itself; vitest's interception would swallow them.
    disableConsoleIntercept: true,
    restoreMocks: true,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // 2-core CI machines: keep parallelism modest so integration tests with servers do not starve.
    maxWorkers: 2,
    setupFiles: ['test/setup.ts'],
    globalSetup: ['test/global-setup.ts'],
    env: {NO_COLOR: '1', COLUMNS: '120', MESHVM_NO_UPDATE: '1'},
  },
})
