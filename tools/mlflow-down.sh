#!/usr/bin/env bash
# Stops the MLflow server that mlflow-up.sh started: its whole process group (the server and
# its uvicorn/gunicorn workers), found by the recorded pid; leaves a server it reused alone.
set -uo pipefail
STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/mlflow"
file="$STATE/mlflow.pid"
[ -f "$file" ] || exit 0
pid="$(cat "$file")"
if kill -0 "$pid" 2>/dev/null; then
  kill -TERM -- "-$pid" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 -- "-$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL -- "-$pid" 2>/dev/null || true
fi
rm -f "$file"
