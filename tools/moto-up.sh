#!/usr/bin/env bash
# Brings up moto's AWS emulator (moto_server, with its Batch, CloudWatch Logs, IAM and EC2
# back-ends) on 127.0.0.1:${TORCHX_TEST_MOTO_PORT:-4566} for the aws_batch tests, reusing one
# that already answers there. moto runs Batch jobs as real containers in the Docker daemon of
# tools/docker-up.sh (from local images), so bring Docker up too.
# moto lives in its own virtualenv under $STATE (created on first use from PyPI), so the test
# envs need only boto3. The pid is kept in $STATE/moto.pid for moto-down.sh.
# `moto-up.sh --check` only tells (exit status) whether an emulator already answers.
# Prints one summary line on success. Idempotent.
set -euo pipefail

STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/moto"
PORT="${TORCHX_TEST_MOTO_PORT:-4566}"
MOTO_SPEC="moto[server,batch]==5.2.5"
URL="http://127.0.0.1:$PORT"

answers() {
  python3 - "$URL" <<'PY' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1] + "/moto-api/data.json", timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
}

if [ "${1:-}" = "--check" ]; then
  answers
  exit $?
fi
if answers; then
  echo "moto-up: reusing the emulator at $URL"
  exit 0
fi

mkdir -p "$STATE"
chmod 700 "$STATE"
venv="$STATE/venv"
if [ ! -x "$venv/bin/moto_server" ] || ! "$venv/bin/python" -c 'import moto, sys; sys.exit(moto.__version__ != "5.2.5")' 2>/dev/null; then
  if command -v uv >/dev/null 2>&1; then
    uv venv -q --clear -p python3 "$venv"
    uv pip install -q -p "$venv/bin/python" "$MOTO_SPEC"
  elif python3 -m uv --version >/dev/null 2>&1; then
    python3 -m uv venv -q --clear -p python3 "$venv"
    python3 -m uv pip install -q -p "$venv/bin/python" "$MOTO_SPEC"
  else
    python3 -m venv --clear "$venv"
    "$venv/bin/pip" install -q "$MOTO_SPEC"
  fi
fi

# the emulator must not see the caller's AWS settings (it answers for every account/region)
env -u AWS_ENDPOINT_URL -u AWS_PROFILE \
  setsid nohup "$venv/bin/moto_server" -H 127.0.0.1 -p "$PORT" >>"$STATE/moto.log" 2>&1 </dev/null &
echo $! >"$STATE/moto.pid"
for _ in $(seq 1 300); do
  answers && break
  if ! kill -0 "$(cat "$STATE/moto.pid")" 2>/dev/null; then
    echo "moto-up: moto_server exited; see $STATE/moto.log" >&2
    tail -20 "$STATE/moto.log" >&2
    rm -f "$STATE/moto.pid"
    exit 1
  fi
  sleep 0.1
done
answers || { echo "moto-up: moto_server did not answer in 30 s; see $STATE/moto.log" >&2; exit 1; }
echo "moto-up: moto $("$venv/bin/python" -c 'import moto; print(moto.__version__)') at $URL (pid $(cat "$STATE/moto.pid"))"
