#!/usr/bin/env bash
# The unit and command tests on the other Node LTS lines (the main CI run uses the machine's Node 20).
# Each Node comes from the npm registry (the node-linux-<arch> package, `npm pack` into .cache/node/,
# kept between runs), never from anywhere else. Start-up code that differs by version (bin/load.cjs's
# code cache: test/lib/compile-cache.test.ts) runs under each, and so does the npm package's install
# test. (The standalone test is not repeated: its executables are Node 22 whatever Node builds them.)
#   .ci/node-lts.sh [VERSION...]      default: the versions below
set -euo pipefail
cd "$(dirname "$0")/.."
VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(22.23.2 24.21.0)
case "$(uname -m)" in x86_64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) echo "node-lts: no Node package for $(uname -m)" >&2; exit 1 ;; esac
cache=.cache/node
mkdir -p "$cache"
failed=()
npm run build >/dev/null
for version in "${VERSIONS[@]}"; do
  pkg="node-linux-$arch"
  dir="$cache/$pkg-$version"
  if [ ! -x "$dir/package/bin/node" ]; then
    [ -f "$cache/$pkg-$version.tgz" ] || npm pack --silent "$pkg@$version" --pack-destination "$cache" >/dev/null
    rm -rf "$dir" && mkdir -p "$dir"
    tar -xzf "$cache/$pkg-$version.tgz" -C "$dir" package/bin/node package/LICENSE
  fi
  started=$SECONDS
  echo "== Node $("$dir/package/bin/node" --version): unit and command tests"
  # vitest, npm and the CLI under test (spawned with process.execPath or `#!/usr/bin/env node`) all run on this Node.
  if PATH="$PWD/$dir/package/bin:$PATH" npx vitest run test/lib test/commands test/install/npm-package.test.ts --maxWorkers=2; then
    echo "== Node $version: passed in $((SECONDS - started)) s"
  else
    echo "== Node $version: FAILED after $((SECONDS - started)) s"
    failed+=("$version")
  fi
done
# Every version runs, then the run fails if any did.
if [ ${#failed[@]} -gt 0 ]; then
  echo "node-lts: tests failed on Node ${failed[*]}" >&2
  exit 1
fi
