#!/usr/bin/env bash
# Builds the real control plane meshvm's test:real suite runs against: etcd, kube-apiserver and
# kube-controller-manager, and istiod
# (pilot-discovery) with istioctl for each pinned Istio release, from the Go modules pinned beside this
# script (go.mod + go.sum: nothing is resolved anew, -mod=readonly). Binaries go to a cache outside the
# repository, keyed by component and module version (MESHVM_CONTROL_PLANE_CACHE, default
# ~/.cache/meshvm/control-plane); a binary already there is reused, so a warm run takes seconds.
# The Go module and build caches (go env GOMODCACHE GOCACHE) are Go's own, also outside the repository.
#
# stdout: KEY=VALUE lines (cache, etcd, kube_apiserver, kube_controller_manager, pilot_discovery_1_31, istioctl_1_31,
# istio_module_1_31, *_version, ...), read by test/real/control-plane.ts. stderr: progress with elapsed
# time. Exit 3 with one line saying what to install when Go or the module proxy is missing.
set -euo pipefail
here=$(cd "$(dirname "$0")" && pwd)
cache=${MESHVM_CONTROL_PLANE_CACHE:-${XDG_CACHE_HOME:-$HOME/.cache}/meshvm/control-plane}
releases=(1.31 1.30)
need_go=1.26 # the highest `go` line of the wrapper modules

fail() { echo "control-plane: $*" >&2; exit 3; }

command -v go >/dev/null 2>&1 ||
  fail "Go is not installed; test:real builds kube-apiserver, etcd and istiod from Go modules: install Go $need_go or newer (https://go.dev/dl), with access to the Go module proxy"
# The wrappers' toolchain is the one installed: never a silent toolchain download.
export GOTOOLCHAIN=${GOTOOLCHAIN:-local}
gov=$(go env GOVERSION 2>/dev/null || true)
gov=${gov#go}
if [ "$GOTOOLCHAIN" = local ] && [ "$(printf '%s\n%s\n' "$need_go" "${gov%%-*}" | sort -V | head -1)" != "$need_go" ]; then
  fail "Go ${gov:-unknown} is too old: the control-plane modules need Go $need_go or newer (https://go.dev/dl)"
fi
export CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false"

mkdir -p "$cache"
# One build at a time (two test runs may start together); the second then finds the binaries cached.
exec 9>"$cache/.lock"
flock 9

start=$(date +%s)
step() { echo "control-plane: $1 (+$(( $(date +%s) - start ))s)" >&2; }

# version of module $2 as the wrapper module in $1 pins it (go.sum)
modversion() { (cd "$here/$1" && go list -m -f '{{if .Replace}}{{.Replace.Version}}{{else}}{{.Version}}{{end}}' "$2") 2>"$cache/.go-list.err" || gofailed "$1" "$cache/.go-list.err"; }
moddir() { (cd "$here/$1" && go mod download "$2" && go list -m -f '{{.Dir}}' "$2") 2>"$cache/.go-list.err" || gofailed "$1" "$cache/.go-list.err"; }

gofailed() { # gofailed WRAPPER LOG: one line saying why
  local line
  line=$(grep -m1 -E 'GOPROXY=off|dial tcp|proxyconnect|no such host|Forbidden|403|404 Not Found|not available|i/o timeout|verifying|checksum mismatch|connection refused|TLS handshake' "$2" || true)
  if [ -n "$line" ]; then
    fail "cannot download modules for $1 from the Go module proxy (GOPROXY=$(go env GOPROXY)): $line"
  fi
  fail "go failed in tools/control-plane/$1: $(grep -v '^#' "$2" | head -1) (full log: $2)"
}

build() { # build WRAPPER PACKAGE OUT LDFLAGS [TAGS]
  local dir=$1 pkg=$2 out=$3 ld=$4 tags=${5:-} t0
  if [ -x "$out" ]; then step "$(basename "$out") cached in $(dirname "$out")"; return; fi
  step "building $(basename "$out") from $pkg (downloads modules on a cold cache)"
  t0=$(date +%s)
  mkdir -p "$(dirname "$out")"
  local tmp log="$(dirname "$out")/build.log"
  tmp=$(mktemp "$out.partial.XXXXXX")
  if ! (cd "$here/$dir" && go build -trimpath ${tags:+-tags "$tags"} -ldflags "$ld" -o "$tmp" "$pkg") 2>"$log"; then
    rm -f "$tmp"
    gofailed "$dir" "$log"
  fi
  mv -f "$tmp" "$out"
  step "built $(basename "$out") in $(( $(date +%s) - t0 ))s"
}

v=$(modversion etcd go.etcd.io/etcd/server/v3)
etcd="$cache/etcd-$v/etcd"
build etcd go.etcd.io/etcd/server/v3 "$etcd" "-s -w"
out="cache=$cache
etcd=$etcd
etcd_version=$v"

v=$(modversion kube k8s.io/kubernetes)
minor=${v#v1.}; minor=${minor%%.*}
ld="-s -w"
for p in k8s.io/client-go/pkg/version k8s.io/component-base/version; do
  ld="$ld -X $p.gitVersion=$v -X $p.gitMajor=1 -X $p.gitMinor=$minor -X $p.gitTreeState=clean"
done
build kube k8s.io/kubernetes/cmd/kube-apiserver "$cache/kube-apiserver-$v/kube-apiserver" "$ld"
# its token, service-account, namespace, garbage-collector and root-CA controllers
build kube k8s.io/kubernetes/cmd/kube-controller-manager "$cache/kube-controller-manager-$v/kube-controller-manager" "$ld"
out="$out
kube_apiserver=$cache/kube-apiserver-$v/kube-apiserver
kube_controller_manager=$cache/kube-controller-manager-$v/kube-controller-manager
kubernetes_version=$v"

for rel in "${releases[@]}"; do
  v=$(modversion "istio-$rel" istio.io/istio)
  rev=${v##*-}
  # What Istio's own Makefile stamps on a build of an untagged commit: the VERSION file plus "-dev"
  # (these are release-branch commits, not tags; the revision says which).
  iv="$rel-dev"
  ld="-s -w -X istio.io/istio/pkg/version.buildVersion=$iv -X istio.io/istio/pkg/version.buildTag=$iv -X istio.io/istio/pkg/version.buildGitRevision=$rev -X istio.io/istio/pkg/version.buildStatus=Clean"
  build "istio-$rel" istio.io/istio/pilot/cmd/pilot-discovery "$cache/istio-$v/pilot-discovery" "$ld" vtprotobuf,disable_pgv
  build "istio-$rel" istio.io/istio/istioctl/cmd/istioctl "$cache/istio-$v/istioctl" "$ld" vtprotobuf,disable_pgv
  k=${rel/./_}
  out="$out
pilot_discovery_$k=$cache/istio-$v/pilot-discovery
istioctl_$k=$cache/istio-$v/istioctl
istio_module_$k=$(moddir "istio-$rel" istio.io/istio)
istio_version_$k=$iv ($rev)"
done
rm -f "$cache/.go-list.err"
step "done"
echo "$out"
