#!/usr/bin/env bash
# Builds the real control plane meshvm's test:real suite runs against: etcd, kube-apiserver, and istiod
# (pilot-discovery) with istioctl for each pinned Istio release, from the Go modules pinned beside this
# script. Binaries go to a cache outside the repository, keyed by component and module version
# (MESHVM_CONTROL_PLANE_CACHE, default ~/.cache/meshvm/control-plane); a binary already there is reused.
# Prints the cache directory on stdout when everything is built; progress goes to stderr.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${MESHVM_CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/meshvm/control-plane}

if ! command -v go >/dev/null 2>&1; then
  echo "control-plane: Go is not installed; test:real builds kube-apiserver, etcd and istiod from Go modules (install Go 1.25 or newer, with access to the Go module proxy)" >&2
  exit 3
fi
export CGO_ENABLED=0 GOFLAGS=-buildvcs=false
start=$(date +%s)
step() { echo "control-plane: $1 (+$(( $(date +%s) - start ))s)" >&2; }

# version of module $2 as the wrapper module in $1 resolves it (go.sum pins it)
modversion() { (cd "$here/$1" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$2"); }

build() { # build DIR PACKAGE OUT LDFLAGS TAGS
  local dir=$1 pkg=$2 out=$3 ld=$4 tags=${5:-}
  if [ -x "$out" ]; then step "$(basename "$out") cached in $(dirname "$out")"; return; fi
  step "building $(basename "$out") from $pkg (downloads modules on a cold cache)"
  mkdir -p "$(dirname "$out")"
  local tmp
  tmp=$(mktemp "$out.partial.XXXXXX")
  if ! (cd "$here/$dir" && go build -trimpath ${tags:+-tags "$tags"} -ldflags "$ld" -o "$tmp" "$pkg"); then
    rm -f "$tmp"
    echo "control-plane: building $pkg failed (is the Go module proxy reachable? go env GOPROXY: $(go env GOPROXY))" >&2
    exit 3
  fi
  mv -f "$tmp" "$out"
  step "built $(basename "$out")"
}

v=$(modversion etcd go.etcd.io/etcd/server/v3)
build etcd go.etcd.io/etcd/server/v3 "$cache/etcd-$v/etcd" "-s -w"

v=$(modversion kube k8s.io/kubernetes)
minor=${v#v1.}; minor=${minor%%.*}
ld="-s -w"
for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ld="$ld -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
build kube k8s.io/kubernetes/cmd/kube-apiserver "$cache/kube-apiserver-$v/kube-apiserver" "$ld"

for rel in 1.31 1.30; do
  v=$(modversion "istio-$rel" istio.io/istio)
  rev=${v##*-}
  ld="-s -w -X istio.io/istio/pkg/version.buildVersion=$rel-dev+$rev -X istio.io/istio/pkg/version.buildTag=$rel-dev -X istio.io/istio/pkg/version.buildGitRevision=$rev -X istio.io/istio/pkg/version.buildStatus=Clean"
  build "istio-$rel" istio.io/istio/pilot/cmd/pilot-discovery "$cache/istio-$v/pilot-discovery" "$ld" vtprotobuf,disable_pgv
  build "istio-$rel" istio.io/istio/istioctl/cmd/istioctl "$cache/istio-$v/istioctl" "$ld" vtprotobuf,disable_pgv
done
step "done"
echo "$cache"
