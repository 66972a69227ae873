#!/usr/bin/env bash
# Prototype: the standalone executable (SEA) with "useSnapshot": true, its main script
# bench/prototypes/snapshot/entry.cjs (the bundle in the snapshot; the package's files stay where
# they are, at the root given). For measuring only: docs/decisions/startup.md.
#   bench/prototypes/snapshot/sea.sh NODE OUT_EXE [warm]
set -euo pipefail
node=$1 out=$2 root=$(cd "$(dirname "$0")/../../.." && pwd)
work=$(mktemp -d)
trap 'rm -rf "$work"' EXIT
printf '{"main": "%s", "output": "%s", "disableExperimentalSEAWarning": true, "useSnapshot": true}\n' "$root/bench/prototypes/snapshot/entry.cjs" "$work/sea.blob" > "$work/sea.json"
MESHVM_ROOT=$root MESHVM_SNAPSHOT_WARM=${3:+1} "$node" --experimental-sea-config "$work/sea.json" 2>&1 | grep -v 'fully verified\|may still work\|To request support\|trace-warnings\|ExperimentalWarning' >&2 || true
cp "$node" "$out"
"$root/node_modules/.bin/postject" "$out" NODE_SEA_BLOB "$work/sea.blob" --sentinel-fuse NODE_SEA_FUSE_fce680ab2cc467b6e072b8b5df1996b2 >/dev/null
