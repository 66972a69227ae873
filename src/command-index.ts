/**
 * Every command, by oclif id. oclif's "explicit" discovery reads this map from the bundled
 * dist/main.js, so running a command loads one module instead of a tree of chunks.
 * test/lib/command-index.test.ts fails when a file in src/commands is missing here.
 */
import Bundle from './commands/bundle.js'
import Onboard from './commands/onboard.js'
import Precheck from './commands/precheck.js'

export const COMMANDS = {
  bundle: Bundle,
  onboard: Onboard,
  precheck: Precheck,
}
