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
VERSION="5.2.5"
URL="http://127.0.0.1:$PORT"
NAME=moto-up
source "$(dirname "$0")/lib/backend.sh"

answers() { http_ok "$URL/moto-api/"; }  # cheap: data.json would dump every job

check_or_reuse "${1:-}" "the emulator at $URL"
venv="$STATE/venv"
tool_venv "$venv" "import moto, sys; sys.exit(moto.__version__ != '$VERSION')" \
  "moto[server,batch]==$VERSION"

# the emulator must not see the caller's AWS settings (it answers for every account/region)
start_daemon "$STATE/moto.pid" "$STATE/moto.log" \
  env -u AWS_ENDPOINT_URL -u AWS_PROFILE "$venv/bin/moto_server" -H 127.0.0.1 -p "$PORT"
wait_until 30 "$STATE/moto.pid" "$STATE/moto.log" moto_server answers
echo "moto-up: moto $("$venv/bin/python" -c 'import moto; print(moto.__version__)') at $URL (pid $(cat "$STATE/moto.pid"))"
