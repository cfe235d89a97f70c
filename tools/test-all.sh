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

# Real backends for the cross-package tests (tests/docker, ...): started here, or reused
# when already up, and stopped by pid at exit. Docker comes up in the background while the
# lint, typing and unit steps run; its output is shown only if it fails.
backend_log="$(mktemp -t torchx-backends-XXXXXX.log)"
# Everything the tests put in the temp dir (pytest's own dirs, workspace copies, ...) goes
# into one directory, exported as TMPDIR for the test steps only and removed at exit.
test_tmp="$(mktemp -d -t torchx-tests-XXXXXX)"
stop_backends() {
  bash tools/docker-down.sh >>"$backend_log" 2>&1
  [ "$slurm_was_up" = 1 ] || bash tools/slurm-down.sh >>"$backend_log" 2>&1
  [ "$moto_was_up" = 1 ] || bash tools/moto-down.sh >>"$backend_log" 2>&1
  [ "$mlflow_was_up" = 1 ] || bash tools/mlflow-down.sh >>"$backend_log" 2>&1
  rm -f "$backend_log"
  rm -rf "$test_tmp"
  [ -z "$own_home" ] || rm -rf "$own_home"
}
trap stop_backends EXIT
bash tools/docker-up.sh >>"$backend_log" 2>&1 &
docker_up_pid=$!
export TORCHX_REQUIRE_DOCKER=1
# Slurm (tests/slurm): a 4-node cluster on localhost; left running if it already was.
slurm_was_up=0
bash tools/slurm-up.sh --check && slurm_was_up=1
bash tools/slurm-up.sh >>"$backend_log" 2>&1 &
slurm_up_pid=$!
export TORCHX_REQUIRE_SLURM=1
# AWS Batch (tests/batch): moto's emulator on localhost, running jobs in the Docker daemon
# above; left running if it already was.
moto_was_up=0
bash tools/moto-up.sh --check && moto_was_up=1
bash tools/moto-up.sh >>"$backend_log" 2>&1 &
moto_up_pid=$!
export TORCHX_REQUIRE_MOTO=1
# MLflow (tests/mlflow): `mlflow server` with a SQLite store on localhost; left running if
# it already was.
mlflow_was_up=0
bash tools/mlflow-up.sh --check && mlflow_was_up=1
bash tools/mlflow-up.sh >>"$backend_log" 2>&1 &
mlflow_up_pid=$!
export TORCHX_REQUIRE_MLFLOW=1

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
step run docker:test
step run slurm:test
step run k8s:test
step run batch:test
step run mlflow:test
if ! wait "$docker_up_pid"; then
  cat "$backend_log"
  failed+=("tools/docker-up.sh")
fi
if ! wait "$slurm_up_pid"; then
  cat "$backend_log"
  failed+=("tools/slurm-up.sh")
fi
if ! wait "$moto_up_pid"; then
  cat "$backend_log"
  failed+=("tools/moto-up.sh")
fi
if ! wait "$mlflow_up_pid"; then
  cat "$backend_log"
  failed+=("tools/mlflow-up.sh")
fi
step run test tests

if [ ${#failed[@]} -ne 0 ]; then
  echo "FAILED steps: ${failed[*]}"
  exit 1
fi
echo "all steps passed"
