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
    // 2-core CI machines: keep parallelism modest so integration tests with servers do not starve.
    maxWorkers: 2,
    setupFiles: ['test/setup.ts'],
    globalSetup: ['test/global-setup.ts'],
    env: {NO_COLOR: '1', COLUMNS: '120', MESHVM_NO_UPDATE: '1'},
  },
})
