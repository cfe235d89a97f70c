#!/usr/bin/env bash
# Restarts one service behind a backend, as an outage would: stops it by the pid its up
# script recorded, leaves it down for DOWN_S seconds, then starts it again with that script.
#   tools/restart.sh slurmctld|dockerd|moto|mlflow [DOWN_S]
# Used by the fault-injection tests (tests/faults); state survives where the real service
# keeps it (slurmctld's StateSaveLocation, dockerd's --live-restore, MLflow's SQLite store);
# moto keeps nothing, as a real outage of AWS would not do. Fails if the service was not
# started by the tools/*-up.sh scripts (a service this project reused is not its to stop).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BASE="${TORCHX_CI_STATE:-/tmp/torchx-ci}"
SERVICE="${1:?usage: restart.sh slurmctld|dockerd|moto|mlflow [DOWN_S]}"
DOWN_S="${2:-3}"
NAME=restart
STATE="$BASE/restart"
source "$HERE/lib/backend.sh"

case "$SERVICE" in
  slurmctld) pidfile="$BASE/slurm/run/slurmctld.pid"; up=(bash "$HERE/slurm-up.sh") ;;
  dockerd) pidfile="$BASE/docker/dockerd.pid"; up=(bash "$HERE/docker-up.sh") ;;
  moto) pidfile="$BASE/moto/moto.pid"; up=(bash "$HERE/moto-up.sh") ;;
  mlflow) pidfile="$BASE/mlflow/mlflow.pid"; up=(env TORCHX_MLFLOW_KEEP_STORE=1 bash "$HERE/mlflow-up.sh") ;;
  *) echo "restart: unknown service $SERVICE (slurmctld, dockerd, moto or mlflow)" >&2; exit 2 ;;
esac
if [ ! -f "$pidfile" ] || ! kill -0 "$(cat "$pidfile")" 2>/dev/null; then
  echo "restart: $SERVICE was not started by tools/ (no live pid in $pidfile); start it with its up script" >&2
  exit 1
fi
group=""
[ "$SERVICE" = mlflow ] && group=group  # the server and its workers
stop_pid "$pidfile" $group >/dev/null
sleep "$DOWN_S"
"${up[@]}" >/dev/null
echo "restart: $SERVICE restarted after $DOWN_S s down"
