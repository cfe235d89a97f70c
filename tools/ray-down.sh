#!/usr/bin/env bash
# Stops the Ray nodes that ray-up.sh started: each node's whole process group (raylet, GCS,
# dashboard, workers), found by its recorded pid, and a dashboard restarted by restart.sh;
# SIGKILL after a grace period, since
# `ray start --block` may ignore SIGTERM. Leaves a cluster it reused alone.
set -uo pipefail
STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/ray"
NAME=ray-down
source "$(dirname "$0")/lib/backend.sh"
stop_pid "$STATE/worker.pid" group
stop_pid "$STATE/head.pid" group
# a dashboard that tools/restart.sh started again runs in a session of its own; left
# running, it would answer the next ray-up.sh, which would then reuse a dead cluster
[ -f "$STATE/dashboard.pid" ] && stop_pid "$STATE/dashboard.pid" group
