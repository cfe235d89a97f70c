#!/usr/bin/env bash
# Stops the ssh server that tools/sshd-up.sh started (by the pid it recorded); the users
# and their keys stay for the next start.
set -uo pipefail

STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/sshd"
NAME=sshd-down
source "$(dirname "$0")/lib/backend.sh"
stop_pid "$STATE/sshd.pid"
