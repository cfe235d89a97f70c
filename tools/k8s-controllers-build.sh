#!/usr/bin/env bash
# Builds, once per machine and version, the batch controllers the test cluster runs beside
# Kubernetes (tools/k8s-up.sh):
#   - Kueue (sigs.k8s.io/kueue, its cmd/kueue) and JobSet (sigs.k8s.io/jobset), each with
#     `go install module@version`, exactly as its own go.mod says;
#   - their CRDs and webhook configurations as released (config/components/ in each
#     module), turned into JSON by tools/k8s/manifests so that tools/k8s/objects.py, which
#     uses only the standard library, can install them.
# Prints the directory of the binaries and JSON files on stdout. Cached under
# ${TORCHX_BUILD_CACHE:-$HOME/.cache/torchx-ci} like tools/k8s-build.sh (Go's module and
# build caches are the machine's defaults). Build output goes to $CACHE/controllers-build.log.
set -euo pipefail
trap 'echo "k8s-controllers-build: failed at line $LINENO of $0 (exit $?); see ${LOG:-its log}" >&2' ERR

KUEUE_VERSION="v0.17.0"
JOBSET_VERSION="v0.11.1" # the JobSet that Kueue $KUEUE_VERSION requires
YAML_VERSION="v1.6.0"    # sigs.k8s.io/yaml, as Kueue's go.mod requires it
CACHE="${TORCHX_BUILD_CACHE:-$HOME/.cache/torchx-ci}"
SRC="$(cd "$(dirname "$0")/k8s" && pwd)"
key="$(cat "$0" "$SRC/manifests/main.go" | sha256sum | cut -c1-12)"
OUT="$CACHE/controllers-kueue-$KUEUE_VERSION-jobset-$JOBSET_VERSION-$key"
LOG="$CACHE/controllers-build.log"
FILES=(kueue jobset kueue-crds.json kueue-webhooks.json jobset-crds.json jobset-webhooks.json)

built() {
  local f
  for f in "${FILES[@]}"; do [ -s "$OUT/$f" ] || return 1; done
}
if built; then
  echo "$OUT"
  exit 0
fi
command -v go >/dev/null || { echo "k8s-controllers-build: no Go toolchain on PATH (Go 1.26 is needed)" >&2; exit 1; }
mkdir -p "$CACHE" "$OUT.tmp"
: >"$LOG"
fail() { echo "k8s-controllers-build: $1; see $LOG" >&2; tail -30 "$LOG" >&2; exit 1; }
export CGO_ENABLED=0 GOFLAGS=-mod=mod GOTOOLCHAIN=local
flags=(-trimpath -ldflags "-s -w")

start=$SECONDS
GOBIN="$OUT.tmp" go install "${flags[@]}" "sigs.k8s.io/kueue/cmd/kueue@$KUEUE_VERSION" >>"$LOG" 2>&1 \
  || fail "building Kueue $KUEUE_VERSION failed"
echo "k8s-controllers-build: Kueue $KUEUE_VERSION built in $((SECONDS - start)) s" >&2
start=$SECONDS
# JobSet from a module of ours that requires only it (the same build list as its own go.mod,
# which has no replaces): `go install ...@version` asks the proxy for the module's version
# list, which it refuses for sigs.k8s.io/jobset
work="$OUT.tmp/jobset-src"
rm -rf "$work"
mkdir -p "$work"
printf 'module torchx.test/jobset\ngo 1.26\nrequire sigs.k8s.io/jobset %s\n' "$JOBSET_VERSION" >"$work/go.mod"
(cd "$work" && go build "${flags[@]}" -o "$OUT.tmp/jobset" sigs.k8s.io/jobset >>"$LOG" 2>&1) \
  || fail "building JobSet $JOBSET_VERSION failed"
echo "k8s-controllers-build: JobSet $JOBSET_VERSION built in $((SECONDS - start)) s" >&2

# --- the manifests, as JSON ---------------------------------------------------------------
work="$OUT.tmp/manifests-src"
rm -rf "$work"
mkdir -p "$work"
cp "$SRC/manifests/main.go" "$work/main.go"
printf 'module torchx.test/manifests\ngo 1.26\nrequire sigs.k8s.io/yaml %s\n' "$YAML_VERSION" >"$work/go.mod"
(cd "$work" && go mod tidy >>"$LOG" 2>&1 && go build "${flags[@]}" -o "$OUT.tmp/manifests" .) \
  || fail "building the manifest reader failed"
# where `go install` left each module's files (its config/components/ holds the manifests)
module_dir() {
  (cd "$work" && GOFLAGS= go mod download -json "$1" 2>>"$LOG") \
    | python3 -c 'import json, sys; print(json.load(sys.stdin)["Dir"])'
}
kueue="$(module_dir "sigs.k8s.io/kueue@$KUEUE_VERSION")"
jobset="$(module_dir "sigs.k8s.io/jobset@$JOBSET_VERSION")"
"$OUT.tmp/manifests" "$kueue"/config/components/crd/bases/*.yaml >"$OUT.tmp/kueue-crds.json"
"$OUT.tmp/manifests" "$kueue/config/components/webhook/manifests.yaml" >"$OUT.tmp/kueue-webhooks.json"
"$OUT.tmp/manifests" "$jobset"/config/components/crd/bases/*.yaml >"$OUT.tmp/jobset-crds.json"
"$OUT.tmp/manifests" "$jobset/config/components/webhook/manifests.yaml" >"$OUT.tmp/jobset-webhooks.json"

rm -rf "$work" "$OUT.tmp/jobset-src" "$OUT"
mv "$OUT.tmp" "$OUT"
for old in "$CACHE"/controllers-*; do
  [ "$old" = "$OUT" ] || [ "$old" = "$LOG" ] || rm -rf "$old"
done
echo "$OUT"
