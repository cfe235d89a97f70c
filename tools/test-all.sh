#!/usr/bin/env bash
# The whole check suite: lint, strict typing, each distribution's tests in an env holding
# only torchx-specs, that distribution and its own dependencies, then the cross-package
# tests (tests/) with every distribution installed. Runs every step, then fails if any did.
set -uo pipefail
cd "$(dirname "$0")/.."

if ! python3 -m hatch --version >/dev/null 2>&1; then
  python3 -m pip install -q "hatch==1.18.2" "uv>=0.9" || exit 1
fi
# The CPU build of torch ships as a local wheel on these machines; let uv see it too.
if [ -d /opt/wheels ] && [ -z "${UV_FIND_LINKS:-}" ]; then
  export UV_FIND_LINKS=/opt/wheels
fi
# Keep the suite's own state out of the user's home (a home made here is removed at exit).
own_home=""
if [ -z "${TORCHX_HOME:-}" ]; then
  own_home="$(mktemp -d -t torchx-home-XXXXXX)"
  export TORCHX_HOME="$own_home"
fi

backend_log="$(mktemp -t torchx-backends-XXXXXX.log)"
# Everything the tests put in the temp dir (pytest's own dirs, workspace copies, ...) goes
# into one directory, exported as TMPDIR for the test steps only and removed at exit.
test_tmp="$(mktemp -d -t torchx-tests-XXXXXX)"
# Real backends for the cross-package tests: each started in the background while the lint,
# typing and unit steps run (its output shown only if it fails), or reused when already up,
# and stopped by pid at exit unless it was already up (docker-down.sh itself stops only what
# docker-up.sh started).
backends=(docker slurm sshd moto mlflow ray k8s)
declare -A up_pid was_up
stop_backends() {
  for name in "${backends[@]}"; do
    [ "${was_up[$name]:-0}" = 1 ] || bash "tools/$name-down.sh" >>"$backend_log" 2>&1
  done
  rm -f "$backend_log"
  rm -rf "$test_tmp"
  [ -z "$own_home" ] || rm -rf "$own_home"
}
trap stop_backends EXIT
for name in "${backends[@]}"; do
  bash "tools/$name-up.sh" --check && was_up[$name]=1
  bash "tools/$name-up.sh" >>"$backend_log" 2>&1 &
  up_pid[$name]=$!
done
# tests/docker (dockerd, the test image, a local registry), tests/slurm (a 4-node cluster on
# localhost), tests/batch (moto's emulator, running jobs in that Docker daemon), tests/mlflow
# (`mlflow server` with a SQLite store), tests/ray (a head and a worker node of a real Ray
# cluster): fail rather than skip when the backend is missing.
export TORCHX_REQUIRE_DOCKER=1 TORCHX_REQUIRE_SLURM=1 TORCHX_REQUIRE_MOTO=1 TORCHX_REQUIRE_MLFLOW=1
export TORCHX_REQUIRE_RAY=1
# tests/slurm/test_slurm_ssh.py: an OpenSSH server as the cluster's login node and an
# unprivileged laptop user beside it (tools/sshd-up.sh)
export TORCHX_REQUIRE_SSH=1
# tests/k8s: a real Kubernetes cluster (tools/k8s-up.sh: built from its Go modules on the
# first run on a machine, about 12 minutes on 2 cores, while the steps before the
# cross-package tests run; then started in seconds)
export TORCHX_REQUIRE_K8S=1
# Chromium for the documentation tests, which look at the built pages in a real browser.
bash tools/chromium-up.sh >>"$backend_log" 2>&1 &
chromium_pid=$!
export TORCHX_REQUIRE_CHROMIUM=1

failed=()
step() {
  echo "=== $* ==="
  if ! TMPDIR="$test_tmp" python3 -m hatch "$@"; then
    failed+=("$*")
  fi
}

step run lint:check
step run types:check
step run specs:test
step run runner:test
step run cli:test
step run ui:test
step run workspace-docker:test
step run docker:test
step run slurm:test
step run k8s:test
step run batch:test
step run mlflow:test
step run ray:test
step run kfp:test
# the release rehearsal: every artifact built, checked, published to a real index on
# 127.0.0.1 and installed by name in fresh venvs (tools/release.py)
step run release:rehearse
for name in "${backends[@]}"; do
  if ! wait "${up_pid[$name]}"; then
    cat "$backend_log"
    failed+=("tools/$name-up.sh")
  fi
done
if ! wait "$chromium_pid"; then
  cat "$backend_log"
  failed+=("tools/chromium-up.sh")
fi
# the documentation site: built with warnings as errors, every example on it run (against
# local_cwd, and local_docker/Slurm, which are up by now), its pages opened in Chromium
step run docs-test:test
step run test -m "not faults" tests
# faults last: they restart slurmctld, dockerd, moto, the MLflow server and the Ray
# dashboard under running jobs (tools/restart.sh); benchmarks/bench_faults.py tabulates them
step run test -m faults tests

if [ ${#failed[@]} -ne 0 ]; then
  echo "FAILED steps: ${failed[*]}"
  exit 1
fi
echo "all steps passed"
