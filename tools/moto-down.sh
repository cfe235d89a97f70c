#!/usr/bin/env bash
# Stops the moto_server that moto-up.sh started (by its recorded pid); leaves an emulator it
# reused alone. Batch job containers moto still runs are its own and end with it.
set -uo pipefail
STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/moto"
file="$STATE/moto.pid"
[ -f "$file" ] || exit 0
pid="$(cat "$file")"
if kill -0 "$pid" 2>/dev/null; then
  kill -TERM "$pid" 2>/dev/null
  for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
  kill -KILL "$pid" 2>/dev/null || true
fi
rm -f "$file"
