// oclif's explicit command discovery reads the command map from here; the bundle (or bin/dev.js)
// puts it on globalThis when it loads, so finding a command never loads a second copy of the code.
module.exports = {COMMANDS: globalThis.__MESHVM_COMMANDS__}
