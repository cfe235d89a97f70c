#!/usr/bin/env bash
# Stops the Slurm cluster that tools/slurm-up.sh started: every daemon by the pid it recorded
# under $STATE (signalled together, then waited for), and removes its /etc/hosts line.
# Daemons this script did not start (no pid file under $STATE) are left alone.
set -uo pipefail

STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/slurm"
[ -d "$STATE/run" ] || exit 0

pids=()
# slurmds and slurmctld first (they talk to slurmdbd on the way out), then the databases
for order in "slurmd-*.pid slurmctld.pid" "slurmdbd.pid" "mariadbd.pid munged.pid"; do
  batch=()
  for name in $order; do
    for file in "$STATE"/run/$name; do
      [ -f "$file" ] || continue
      pid="$(cat "$file" 2>/dev/null)"
      if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null && batch+=("$pid")
      fi
      rm -f "$file"
    done
  done
  for pid in "${batch[@]}"; do
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    kill -0 "$pid" 2>/dev/null && kill -KILL "$pid" 2>/dev/null
  done
  pids+=("${batch[@]}")
done
if grep -qF "# torchx-slurm" /etc/hosts 2>/dev/null; then
  # /etc/hosts may be a bind mount: rewrite it in place rather than replace the file
  grep -vF "# torchx-slurm" /etc/hosts >"$STATE/hosts.new" && cat "$STATE/hosts.new" >/etc/hosts
  rm -f "$STATE/hosts.new"
fi
echo "slurm-down: stopped ${#pids[@]} daemons"
