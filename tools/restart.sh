#!/usr/bin/env bash
# Restarts one service behind a backend, as an outage would: stops it by the pid its up
# script recorded, leaves it down for DOWN_S seconds, then starts it again with that script.
#   tools/restart.sh slurmctld|dockerd|moto|mlflow|ray-dashboard [DOWN_S]
# Used by the fault-injection tests (tests/faults); state survives where the real service
# keeps it (slurmctld's StateSaveLocation, dockerd's --live-restore, MLflow's SQLite store);
# moto keeps nothing, as a real outage of AWS would not do. The Ray dashboard (the Jobs API
# server of the head node) is started again with the command line and environment it had;
# the jobs, kept by the cluster's GCS, live on. Fails if the service was not
# started by the tools/*-up.sh scripts (a service this project reused is not its to stop).
set -euo pipefail
HERE="$(cd "$(dirname "$0")" && pwd)"
BASE="${TORCHX_CI_STATE:-/tmp/torchx-ci}"
SERVICE="${1:?usage: restart.sh slurmctld|dockerd|moto|mlflow|ray-dashboard [DOWN_S]}"
DOWN_S="${2:-3}"
NAME=restart
STATE="$BASE/restart"
source "$HERE/lib/backend.sh"
# A service started again here outlives the test run that asked for it (the next run on
# the machine reuses it), so it must not inherit that run's temp dir, which the run
# removes at its end: runc, under dockerd, keeps its exec files there.
unset TMPDIR

if [ "$SERVICE" = ray-dashboard ]; then
  [ -f "$BASE/ray/head.pid" ] || { echo "restart: the Ray cluster was not started by tools/ray-up.sh" >&2; exit 1; }
  exec python3 - "$DOWN_S" <<'PY'
import os, signal, subprocess, sys, time, urllib.request

down_s = float(sys.argv[1])
pids = [p for p in os.listdir("/proc") if p.isdigit()]
def cmdline(pid):
    try:
        with open(f"/proc/{pid}/cmdline", "rb") as f:
            return f.read().split(b"\0")
    except OSError:
        return []
dash = [p for p in pids if any(a.endswith(b"ray/dashboard/dashboard.py") for a in cmdline(p))]
if len(dash) != 1:
    sys.exit(f"restart: expected one Ray dashboard process, found {len(dash)}")
argv = [a.decode() for a in cmdline(dash[0]) if a]
with open(f"/proc/{dash[0]}/environ", "rb") as f:
    env = dict(e.decode().split("=", 1) for e in f.read().split(b"\0") if b"=" in e)
port = next(a.split("=", 1)[1] for a in argv if a.startswith("--port="))
os.kill(int(dash[0]), signal.SIGTERM)
deadline = time.monotonic() + 20
while os.path.exists(f"/proc/{dash[0]}") and time.monotonic() < deadline:
    time.sleep(0.1)
time.sleep(down_s)
ray_state = os.path.join(os.environ.get("TORCHX_CI_STATE", "/tmp/torchx-ci"), "ray")
with open(os.path.join(ray_state, "dashboard.log"), "ab") as log:
    started = subprocess.Popen(argv, env=env, stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                               start_new_session=True, cwd="/")
# it is no longer in the head node's process group: ray-down.sh stops it by this pid
with open(os.path.join(ray_state, "dashboard.pid"), "w") as f:
    f.write(f"{started.pid}\n")
deadline = time.monotonic() + 60
while True:
    try:
        urllib.request.urlopen(f"http://127.0.0.1:{port}/api/version", timeout=1).read()
        break
    except OSError:
        if time.monotonic() > deadline:
            sys.exit("restart: the Ray dashboard did not come back in 60 s")
        time.sleep(0.2)
print(f"restart: ray-dashboard restarted after {down_s:g} s down")
PY
fi

case "$SERVICE" in
  slurmctld) pidfile="$BASE/slurm/run/slurmctld.pid"; up=(bash "$HERE/slurm-up.sh") ;;
  dockerd) pidfile="$BASE/docker/dockerd.pid"; up=(bash "$HERE/docker-up.sh") ;;
  moto) pidfile="$BASE/moto/moto.pid"; up=(bash "$HERE/moto-up.sh") ;;
  mlflow) pidfile="$BASE/mlflow/mlflow.pid"; up=(env TORCHX_MLFLOW_KEEP_STORE=1 bash "$HERE/mlflow-up.sh") ;;
  *) echo "restart: unknown service $SERVICE (slurmctld, dockerd, moto, mlflow or ray-dashboard)" >&2; exit 2 ;;
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
