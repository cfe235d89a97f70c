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

answers() {
  python3 - "$URL" <<'PY' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/health", timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
}

if [ "${1:-}" = "--check" ]; then
  answers
  exit $?
fi
if answers; then
  echo "mlflow-up: reusing the MLflow server at $URL"
  exit 0
fi

mkdir -p "$STATE"
chmod 700 "$STATE"
venv="$STATE/venv"
if ! "$venv/bin/python" -c "import mlflow.server, sys; sys.exit(mlflow.__version__ != '$VERSION')" 2>/dev/null; then
  if command -v uv >/dev/null 2>&1; then
    uv=(uv)
  elif python3 -m uv --version >/dev/null 2>&1; then
    uv=(python3 -m uv)
  else
    python3 -m pip install -q "uv>=0.9"
    uv=(python3 -m uv)
  fi
  "${uv[@]}" venv -q --clear -p python3 "$venv"
  "${uv[@]}" pip install -q --compile-bytecode -p "$venv/bin/python" "mlflow==$VERSION"
fi

# A fresh store per start: runs of an earlier session would only slow the searches down.
data="$STATE/data"
rm -rf "$data"
mkdir -p "$data/artifacts"
# Job execution (huey workers) is not needed by a tracking server; one worker keeps it light.
MLFLOW_SERVER_ENABLE_JOB_EXECUTION=false setsid nohup "$venv/bin/mlflow" server \
  --backend-store-uri "sqlite:///$data/mlflow.db" \
  --artifacts-destination "$data/artifacts" \
  --host 127.0.0.1 --port "$PORT" --workers 1 \
  >>"$STATE/mlflow.log" 2>&1 </dev/null &
echo $! >"$STATE/mlflow.pid"
for _ in $(seq 1 600); do
  answers && break
  if ! kill -0 "$(cat "$STATE/mlflow.pid")" 2>/dev/null; then
    echo "mlflow-up: mlflow server exited; see $STATE/mlflow.log" >&2
    tail -20 "$STATE/mlflow.log" >&2
    rm -f "$STATE/mlflow.pid"
    exit 1
  fi
  sleep 0.1
done
answers || { echo "mlflow-up: mlflow server did not answer in 60 s; see $STATE/mlflow.log" >&2; exit 1; }
echo "mlflow-up: MLflow $VERSION at $URL (pid $(cat "$STATE/mlflow.pid"))"
