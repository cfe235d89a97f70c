#!/usr/bin/env bash
# Stops the Ray nodes that ray-up.sh started: each node's whole process group (raylet, GCS,
# dashboard, workers), found by its recorded pid; SIGKILL after a grace period, since
# `ray start --block` may ignore SIGTERM. Leaves a cluster it reused alone.
set -uo pipefail
STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/ray"
NAME=ray-down
source "$(dirname "$0")/lib/backend.sh"
stop_pid "$STATE/worker.pid" group
stop_pid "$STATE/head.pid" group
