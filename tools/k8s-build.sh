#!/usr/bin/env bash
# Builds, once per machine and version, the real Kubernetes the kubernetes tests run against:
#   - one multi-call binary holding etcd, kube-apiserver, kube-controller-manager,
#     kube-scheduler and the kubelet (tools/k8s/main.go; a single link saves minutes of a
#     cold build), from the Go modules k8s.io/kubernetes and go.etcd.io/etcd/server/v3;
#   - containerd, its runc shim and ctr from github.com/containerd/containerd/v2 (kubelet
#     1.36 needs containerd 2; Debian 12 has 1.6);
#   - CoreDNS with the plugins the cluster uses (tools/k8s/coredns/main.go), from
#     github.com/coredns/coredns, so pods resolve each other's hostnames.
# Prints the directory of the binaries (links named after each component) on stdout.
# Cached under ${TORCHX_BUILD_CACHE:-$HOME/.cache/torchx-ci}: the binaries by version, and
# Go's own module and build caches (GOMODCACHE, GOCACHE: the machine's defaults), so a
# session builds once and CI on the same machine reuses it. Build output goes to
# $CACHE/build.log, shown on failure.
set -euo pipefail
trap 'echo "k8s-build: failed at line $LINENO of $0 (exit $?); see ${LOG:-its log}" >&2' ERR

K8S_VERSION="v1.36.3"
STAGING_VERSION="v0.36.3" # k8s.io/kubernetes requires its staging modules at v0.0.0
ETCD_VERSION="v3.6.8"     # the etcd client version k8s.io/kubernetes v1.36.3 requires
CONTAINERD_VERSION="v2.2.9"
COREDNS_VERSION="v1.14.7"
CACHE="${TORCHX_BUILD_CACHE:-$HOME/.cache/torchx-ci}"
SRC="$(cd "$(dirname "$0")/k8s" && pwd)"
# the binaries' directory is named by the versions and the Go sources of ours they hold
key="$(cat "$0" "$SRC/main.go" "$SRC/coredns/main.go" | sha256sum | cut -c1-12)"
OUT="$CACHE/k8s-$K8S_VERSION-containerd-$CONTAINERD_VERSION-coredns-$COREDNS_VERSION-$key"
LOG="$CACHE/build.log"
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet)
BINARIES=(kube containerd containerd-shim-runc-v2 ctr coredns "${COMPONENTS[@]}")

built() {
  local b
  for b in "${BINARIES[@]}"; do [ -x "$OUT/$b" ] || return 1; done
}
if built; then
  echo "$OUT"
  exit 0
fi
command -v go >/dev/null || { echo "k8s-build: no Go toolchain on PATH (Go 1.26 is needed)" >&2; exit 1; }
mkdir -p "$CACHE" "$OUT.tmp"
: >"$LOG"
fail() { echo "k8s-build: $1; see $LOG" >&2; tail -30 "$LOG" >&2; exit 1; }
# -trimpath and no symbol tables: smaller binaries and a faster link
flags=(-trimpath -ldflags "-s -w")
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local

# --- Kubernetes and etcd: a module of our own that requires them -------------------------
work="$OUT.tmp/kube-src"
rm -rf "$work"
mkdir -p "$work"
cp "$SRC/main.go" "$work/main.go"
{
  echo "module torchx.test/kube"
  echo "go 1.26"
  echo "require ("
  echo "  k8s.io/kubernetes $K8S_VERSION"
  echo "  go.etcd.io/etcd/server/v3 $ETCD_VERSION"
  echo ")"
  # every staging module k8s.io/kubernetes requires at v0.0.0, at its published version
  # (none before its go.mod has been downloaded: see below)
  mod="$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod"
  if [ -f "$mod" ]; then
    awk '$2 == "v0.0.0" && $1 ~ /^k8s\.io\// {print $1}' "$mod" | sort -u |
      sed "s|.*|replace & => & $STAGING_VERSION|"
  fi
} >"$work/go.mod"
if ! grep -q '^replace' "$work/go.mod"; then
  # the first run: fetch k8s.io/kubernetes's go.mod to learn its staging modules
  # (outside any module: ours cannot load before its replace lines exist)
  (cd "$CACHE" && GOFLAGS= go mod download -json "k8s.io/kubernetes@$K8S_VERSION" \
    >>"$LOG" 2>&1) \
    || fail "could not download k8s.io/kubernetes@$K8S_VERSION from the Go module proxy"
  exec "$0" "$@"
fi
start=$SECONDS
(cd "$work" && go mod tidy >>"$LOG" 2>&1) || fail "go mod tidy failed for Kubernetes $K8S_VERSION"
# the version the components report (/version, the node's kubelet version), as a release has
stamp="-X k8s.io/component-base/version.gitVersion=$K8S_VERSION -X k8s.io/component-base/version.gitMajor=1"
stamp="$stamp -X k8s.io/component-base/version.gitMinor=$(echo "$K8S_VERSION" | cut -d. -f2)"
stamp="$stamp -X k8s.io/component-base/version.gitTreeState=clean"
(cd "$work" && go build -trimpath -ldflags "-s -w $stamp" -o "$OUT.tmp/kube" . >>"$LOG" 2>&1) \
  || fail "building Kubernetes $K8S_VERSION failed"
echo "k8s-build: Kubernetes $K8S_VERSION and etcd $ETCD_VERSION built in $((SECONDS - start)) s" >&2

# --- containerd ----------------------------------------------------------------------------
start=$SECONDS
# `go install module@version` builds it exactly as its own go.mod says (it has no replaces);
# no_btrfs & co.: those snapshotters need C headers, the node uses overlayfs
for cmd in containerd containerd-shim-runc-v2 ctr; do
  GOBIN="$OUT.tmp" go install "${flags[@]}" -tags no_btrfs,no_devmapper,no_zfs \
    "github.com/containerd/containerd/v2/cmd/$cmd@$CONTAINERD_VERSION" >>"$LOG" 2>&1 \
    || fail "building $cmd $CONTAINERD_VERSION failed"
done
echo "k8s-build: containerd $CONTAINERD_VERSION built in $((SECONDS - start)) s" >&2

# --- CoreDNS -------------------------------------------------------------------------------
start=$SECONDS
work="$OUT.tmp/coredns-src"
rm -rf "$work"
mkdir -p "$work"
cp "$SRC/coredns/main.go" "$work/main.go"
printf 'module torchx.test/coredns\ngo 1.26\nrequire github.com/coredns/coredns %s\n' \
  "$COREDNS_VERSION" >"$work/go.mod"
(cd "$work" && go mod tidy >>"$LOG" 2>&1) || fail "go mod tidy failed for CoreDNS $COREDNS_VERSION"
(cd "$work" && go build "${flags[@]}" -o "$OUT.tmp/coredns" . >>"$LOG" 2>&1) \
  || fail "building CoreDNS $COREDNS_VERSION failed"
echo "k8s-build: CoreDNS $COREDNS_VERSION built in $((SECONDS - start)) s" >&2

for name in "${COMPONENTS[@]}"; do ln -sf kube "$OUT.tmp/$name"; done
rm -rf "$OUT.tmp/kube-src" "$OUT.tmp/coredns-src" "$OUT"
mv "$OUT.tmp" "$OUT"
# binaries of other versions, sources or build steps are not used again
for old in "$CACHE"/k8s-*; do [ "$old" = "$OUT" ] || rm -rf "$old"; done
echo "$OUT"
