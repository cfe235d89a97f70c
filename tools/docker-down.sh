#!/usr/bin/env bash
# Stops what docker-up.sh started (by the pids it recorded); leaves anything it reused alone.
# Containers the tests left behind are removed first so dockerd can stop promptly.
set -uo pipefail
STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/docker"
NAME=docker-down
source "$(dirname "$0")/lib/backend.sh"

stop_pid "$STATE/registry.pid"
if [ -f "$STATE/dockerd.pid" ]; then
  ids="$(docker ps -aq --filter label=torchx.pytorch.org/app-id 2>/dev/null)"
  [ -n "$ids" ] && docker rm -f $ids >/dev/null 2>&1
  stop_pid "$STATE/dockerd.pid"
  # dockerd may leave its data-root bind mount behind
  if mountpoint -q /var/lib/docker 2>/dev/null; then umount /var/lib/docker 2>/dev/null || true; fi
fi
