import {defineConfig} from 'vitest/config'

// `npm run test:real`: meshvm against the real kube-apiserver, etcd and istiod (test/real/README.md).
// vitest.config.ts excludes these files, so `npm test` stays hermetic.
export default defineConfig({
  test: {
    include: ['test/real/**/*.real.test.ts'],
    disableConsoleIntercept: true,
    restoreMocks: true,
    testTimeout: 120_000,
    hookTimeout: 300_000,
    // One control plane at a time on 2 cores: files run one after another.
    fileParallelism: false,
    maxWorkers: 1,
    setupFiles: ['test/setup.ts'],
    globalSetup: ['test/global-setup.ts', 'test/real/global-setup.ts'],
    env: {NO_COLOR: '1', COLUMNS: '200', MESHVM_NO_UPDATE: '1'},
  },
})
