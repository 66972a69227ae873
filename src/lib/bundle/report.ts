/** What `meshvm bundle` and `onboard --bundle` tell the user after writing the files (stderr). */
import {relative, resolve} from 'node:path'
import type {BundleSummary} from './run.js'
import type {Sink} from '../output/render.js'
import {humanDuration} from '../output/age.js'

/** The note on Ctrl-C while a bundle is being made: nothing is written after it. */
export const BUNDLE_INTERRUPTED = 'Interrupted: stopping before any file is written.'

export function reportBundle(sink: Sink, summary: BundleSummary, now = new Date()): void {
  for (const w of summary.warnings) sink.err(`Warning: ${w}\n`)
  sink.err(`Wrote the VM bundle to ${summary.dir}: ${summary.files.map((p) => relative(resolve(summary.dir), resolve(p))).join(', ')}\n`)
  if (summary.tokenExpiresAt) {
    const left = summary.tokenExpiresAt.getTime() - now.getTime()
    sink.err(`The istio-token (mode 0600) expires at ${summary.tokenExpiresAt.toISOString()} (in ${humanDuration(left)}): start the VM's sidecar before then.\n`)
  }
  sink.err(`On the VM, as root: copy the directory over, install the istio-sidecar package, then run ./install.sh\n`)
  if (summary.linked) {
    // cp -r, rsync -a and tar copy a symbolic link as a link: say how to copy the files.
    sink.err(
      `${summary.dir} is a link to the bundle's current version (so that a new bundle replaces it in one step): copy the files, e.g. scp -r ${summary.dir} VM: or rsync -a ${summary.dir}/ VM:DIR/ (cp and tar need -L)\n`,
    )
  }
}
