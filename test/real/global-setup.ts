/**
 * Global setup of `npm run test:real`: builds (or reuses) the real control plane with
 * tools/control-plane/build.sh, once for the run, and hands the binaries' paths to the test files
 * (inject('realBinaries')), which start the control plane for the Istio release MESHVM_REAL_ISTIO
 * names (the npm script runs the suite once per pinned release). A missing Go or module proxy fails
 * the run with the build script's one-line reason: never a silent skip.
 */
import type {TestProject} from 'vitest/node'
import {buildControlPlane, istioReleaseFromEnv, type Binaries} from './control-plane.js'

declare module 'vitest' {
  export interface ProvidedContext {
    realBinaries: Binaries
  }
}

export async function setup(project: TestProject): Promise<void> {
  const istio = istioReleaseFromEnv()
  process.stderr.write(`test:real: Istio ${istio} (MESHVM_REAL_ISTIO)\n`)
  try {
    project.provide('realBinaries', await buildControlPlane({onProgress: (line) => process.stderr.write(`${line}\n`)}))
  } catch (err) {
    // vitest prints what setup throws; the message is the build script's one line (what to install).
    const e = new Error(`test:real cannot build the real control plane: ${(err as Error).message}`)
    e.stack = e.message
    throw e
  }
}
