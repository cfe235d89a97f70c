#!/usr/bin/env bash
# Brings up a real MLflow tracking server (SQLite store, proxied artifacts under $STATE) on
# 127.0.0.1:${TORCHX_TEST_MLFLOW_PORT:-5055} for the MLflow tracker tests (tests/mlflow),
# reusing one that already answers there.
# The server's mlflow lives in its own virtualenv under $STATE (full `mlflow`, which has the
# server; created with uv on first use), so the test envs need only the client. The server
# runs in its own session (setsid); its pid (= process group id) is kept in $STATE/mlflow.pid
# for mlflow-down.sh. `mlflow-up.sh --check` only tells (exit status) whether one answers.
# Prints one summary line on success. Idempotent.
set -euo pipefail

STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/mlflow"
PORT="${TORCHX_TEST_MLFLOW_PORT:-5055}"
VERSION="3.17.2"
URL="http://127.0.0.1:$PORT"
NAME=mlflow-up
source "$(dirname "$0")/lib/backend.sh"

answers() { http_ok "$URL/health"; }

check_or_reuse "${1:-}" "the MLflow server at $URL"
venv="$STATE/venv"
tool_venv "$venv" "import mlflow.server, sys; sys.exit(mlflow.__version__ != '$VERSION')" \
  "mlflow==$VERSION"

# A fresh store per start: runs of an earlier session would only slow the searches down.
# tools/restart.sh keeps it (TORCHX_MLFLOW_KEEP_STORE=1): a restart must not lose runs.
data="$STATE/data"
[ "${TORCHX_MLFLOW_KEEP_STORE:-}" = 1 ] || rm -rf "$data"
mkdir -p "$data/artifacts"
# Job execution (huey workers) is not needed by a tracking server; one worker keeps it light.
start_daemon "$STATE/mlflow.pid" "$STATE/mlflow.log" \
  env MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false "$venv/bin/mlflow" server \
  --backend-store-uri "sqlite:///$data/mlflow.db" \
  --artifacts-destination "$data/artifacts" \
  --host 127.0.0.1 --port "$PORT" --workers 1
wait_until 60 "$STATE/mlflow.pid" "$STATE/mlflow.log" "mlflow server" answers
echo "mlflow-up: MLflow $VERSION at $URL (pid $(cat "$STATE/mlflow.pid"))"
