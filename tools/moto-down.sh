#!/usr/bin/env bash
# Stops the moto_server that moto-up.sh started (by its recorded pid); leaves an emulator it
# reused alone. Batch job containers moto still runs are its own and end with it.
set -uo pipefail
STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/moto"
NAME=moto-down
source "$(dirname "$0")/lib/backend.sh"
stop_pid "$STATE/moto.pid"
