import {configDefaults, defineConfig} from 'vitest/config'

export default defineConfig({
  test: {
    include: ['test/**/*.test.ts'],
    // The real control plane (Go binaries) has its own run: npm run test:real (vitest.real.config.ts).
    exclude: [...configDefaults.exclude, 'test/real/**/*.real.test.ts'],
    // Command tests spawn the CLI and read its streams; console interception would only reorder logs.
    disableConsoleIntercept: true,
    restoreMocks: true,
    testTimeout: 30_000,
    hookTimeout: 60_000,
    // One worker process runs many files: each file no longer pays for a fresh worker, a fresh module
    // graph, the test cluster's certificates and the CLI bundle (runCommand loads it once per worker).
    // Files restore what they change of the process (env, timers, spies: restoreMocks); the whole suite
    // passes with and without isolation.
    isolate: false,
    // 2-core CI machines: one worker more than the cores, because many integration files spend most of
    // their time waiting (retry back-offs, a VM's connection, child processes) rather than computing.
    // Not many more: the servers the tests start must not starve.
    maxWorkers: 3,
    setupFiles: ['test/setup.ts'],
    globalSetup: ['test/global-setup.ts'],
    env: {NO_COLOR: '1', COLUMNS: '120', MESHVM_NO_UPDATE: '1'},
  },
})
