#!/usr/bin/env bash
# Stops the MLflow server that mlflow-up.sh started: its whole process group (the server and
# its uvicorn/gunicorn workers), found by the recorded pid; leaves a server it reused alone.
set -uo pipefail
STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/mlflow"
NAME=mlflow-down
source "$(dirname "$0")/lib/backend.sh"
stop_pid "$STATE/mlflow.pid" group
