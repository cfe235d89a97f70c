#!/usr/bin/env bash
# Builds, once per machine and version, the real Kubernetes the kubernetes tests run against:
#   - one multi-call binary holding etcd, kube-apiserver, kube-controller-manager,
#     kube-scheduler and the kubelet (tools/k8s/main.go; a single link saves minutes of a
#     cold build), from the Go modules k8s.io/kubernetes and go.etcd.io/etcd/server/v3;
#   - containerd and its runc shim from github.com/containerd/containerd/v2 (kubelet 1.36
#     needs containerd 2; Debian 12 has 1.6).
# Prints the directory of the binaries (links named after each component) on stdout.
# Cached under ${TORCHX_BUILD_CACHE:-$HOME/.cache/torchx-ci}: the binaries by version, and
# Go's own module and build caches (GOMODCACHE, GOCACHE: the machine's defaults), so a
# session builds once and CI on the same machine reuses it. Build output goes to
# $CACHE/build.log, shown on failure.
set -euo pipefail

K8S_VERSION="v1.36.3"
STAGING_VERSION="v0.36.3" # k8s.io/kubernetes requires its staging modules at v0.0.0
ETCD_VERSION="v3.6.8"     # the etcd client version k8s.io/kubernetes v1.36.3 requires
CONTAINERD_VERSION="v2.2.9"
CACHE="${TORCHX_BUILD_CACHE:-$HOME/.cache/torchx-ci}"
OUT="$CACHE/k8s-$K8S_VERSION-containerd-$CONTAINERD_VERSION"
SRC="$(cd "$(dirname "$0")/k8s" && pwd)"
LOG="$CACHE/build.log"
COMPONENTS=(etcd kube-apiserver kube-controller-manager kube-scheduler kubelet)

if [ -x "$OUT/kube" ] && [ -x "$OUT/containerd" ] && [ -x "$OUT/containerd-shim-runc-v2" ] && [ -x "$OUT/ctr" ] \
  && cmp -s "$SRC/main.go" "$OUT/main.go"; then
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
  awk '$2 == "v0.0.0" && $1 ~ /^k8s\.io\// {print $1}' \
    "$(go env GOMODCACHE)/cache/download/k8s.io/kubernetes/@v/$K8S_VERSION.mod" 2>/dev/null |
    sort -u | sed "s|.*|replace & => & $STAGING_VERSION|"
} >"$work/go.mod"
if ! grep -q '^replace' "$work/go.mod"; then
  # the first run: fetch k8s.io/kubernetes's go.mod to learn its staging modules
  (cd "$work" && go mod download -json "k8s.io/kubernetes@$K8S_VERSION" >>"$LOG" 2>&1) \
    || fail "could not download k8s.io/kubernetes@$K8S_VERSION from the Go module proxy"
  exec "$0" "$@"
fi
start=$SECONDS
(cd "$work" && go mod tidy >>"$LOG" 2>&1) || fail "go mod tidy failed for Kubernetes $K8S_VERSION"
(cd "$work" && go build "${flags[@]}" -o "$OUT.tmp/kube" . >>"$LOG" 2>&1) \
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

for name in "${COMPONENTS[@]}"; do ln -sf kube "$OUT.tmp/$name"; done
cp "$SRC/main.go" "$OUT.tmp/main.go"
rm -rf "$OUT.tmp/kube-src" "$OUT"
mv "$OUT.tmp" "$OUT"
echo "$OUT"
