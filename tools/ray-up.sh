#!/usr/bin/env bash
# Brings up a real Ray cluster on this machine for the Ray scheduler tests (tests/ray): a
# head node (GCS on 127.0.0.1:6390, dashboard + Jobs REST API on
# 127.0.0.1:${TORCHX_TEST_RAY_PORT:-8265}) and one worker node that joins it, both with
# 2 logical CPUs; the worker also offers the custom resource `worker_node` (4) so a test can
# place a replica there. Reuses a cluster whose dashboard already answers with both nodes.
# Ray lives in its own virtualenv under $STATE (`ray[default]`, pinned; created with uv on
# first use), so the test envs need no Ray at all: the scheduler talks HTTP. Each node runs
# `ray start --block` in its own session (setsid); their pids (= process group ids) are kept
# in $STATE/head.pid and $STATE/worker.pid for ray-down.sh, which stops exactly those
# groups (never `ray stop`, which would end every Ray process on the host). Usage stats off.
# `ray-up.sh --check` only tells (exit status) whether a dashboard answers with both nodes alive.
set -euo pipefail

STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/ray"
PORT="${TORCHX_TEST_RAY_PORT:-8265}"
GCS_PORT="${TORCHX_TEST_RAY_GCS_PORT:-6390}"
VERSION="2.60.0"
URL="http://127.0.0.1:$PORT"
NAME=ray-up
source "$(dirname "$0")/lib/backend.sh"

# reused only when its dashboard answers and both nodes are alive: a dashboard alone (its
# cluster gone) is no cluster
dashboard_answers() { http_ok "$URL/api/version"; }
answers() { dashboard_answers && two_nodes; }
two_nodes() {
  python3 - "$URL" <<'PY' 2>/dev/null
import json, sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/nodes?view=summary", timeout=2) as r:
    summary = json.load(r)["data"]["summary"]
alive = [n for n in summary if n.get("raylet", {}).get("state") == "ALIVE"]
sys.exit(0 if len(alive) >= 2 else 1)
PY
}

check_or_reuse "${1:-}" "the Ray cluster at $URL"
venv="$STATE/venv"
# torch lets tests run dist.ddp (torchrun + gloo) across the two nodes. The pin is the test
# envs' own (hatch.toml), so uv takes it from the cache they filled: the CPU build where a
# wheelhouse at /opt/wheels has it, else PyPI's build.
wanted=("ray[default]==$VERSION" "torch==2.13.0")
check="import torch, ray, sys; sys.exit(ray.__version__ != '$VERSION')"
if [ -d /opt/wheels ] && ls /opt/wheels/torch-2.13.0+cpu-*.whl >/dev/null 2>&1; then
  export UV_FIND_LINKS=/opt/wheels
fi
tool_venv "$venv" "$check" "${wanted[@]}"

# The worker node's dashboard agent (which serves its actors' log files) needs a port of
# its own: both nodes are on one machine. Jobs' entrypoints run `python` from the PATH Ray
# started with: make it Ray's own.
export PATH="$venv/bin:$PATH" RAY_USAGE_STATS_ENABLED=0
rm -rf "$STATE/tmp" "$STATE/tmp-worker"
mkdir -p "$STATE/tmp" "$STATE/tmp-worker"
start_daemon "$STATE/head.pid" "$STATE/head.log" \
  "$venv/bin/ray" start --head --block --num-cpus 2 --node-ip-address 127.0.0.1 \
  --port "$GCS_PORT" --dashboard-host 127.0.0.1 --dashboard-port "$PORT" \
  --disable-usage-stats --temp-dir "$STATE/tmp"
wait_until 120 "$STATE/head.pid" "$STATE/head.log" "the Ray head node" dashboard_answers
# The worker keeps its files apart, as a node on another machine does: two nodes sharing
# one temp dir would each unpack a job's working dir over the other's.
start_daemon "$STATE/worker.pid" "$STATE/worker.log" \
  "$venv/bin/ray" start --block --address "127.0.0.1:$GCS_PORT" --num-cpus 2 \
  --node-ip-address 127.0.0.1 --resources '{"worker_node": 4}' --disable-usage-stats \
  --dashboard-agent-listen-port "$((PORT + 1))" --temp-dir "$STATE/tmp-worker"
wait_until 120 "$STATE/worker.pid" "$STATE/worker.log" "the Ray worker node" two_nodes
echo "ray-up: Ray $VERSION at $URL, 2 nodes (pids $(cat "$STATE/head.pid") $(cat "$STATE/worker.pid"))"
