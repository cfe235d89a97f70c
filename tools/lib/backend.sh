# Shell helpers shared by the tools/*-up.sh and tools/*-down.sh scripts that start and stop
# the real backends of the test suite (sourced, not run). Each script sets STATE (its private
# state directory) and NAME (the prefix of its messages) before calling these.

# check_or_reuse ARG WHAT: the common start of an up script, whose `answers` function tells
# whether its server already answers. With ARG `--check`, exits with that answer; when it
# answers, says it reuses WHAT and exits 0; otherwise makes the private $STATE and returns.
check_or_reuse() {
  if [ "${1:-}" = "--check" ]; then
    answers
    exit $?
  fi
  if answers; then
    echo "$NAME: reusing $2"
    exit 0
  fi
  mkdir -p "$STATE"
  chmod 700 "$STATE"
}

# apt_install PACKAGE...: installs Debian packages without recommends. Another job (the other
# up scripts run beside each other) may hold the apt/dpkg lock for a while: wait for it, and
# retry a failed update/install a few times. The log is $STATE/apt.log, shown on failure.
apt_install() {
  export DEBIAN_FRONTEND=noninteractive
  local try
  for try in 1 2 3 4 5; do
    if [ ! -f "$STATE/apt-updated" ]; then
      apt-get -o DPkg::Lock::Timeout=300 update -qq >"$STATE/apt.log" 2>&1 \
        && touch "$STATE/apt-updated"
    fi
    if apt-get -o DPkg::Lock::Timeout=300 install -y -qq --no-install-recommends "$@" \
      >>"$STATE/apt.log" 2>&1; then
      return 0
    fi
    echo "$NAME: apt-get install $* failed (try $try)" >&2
    rm -f "$STATE/apt-updated"
    sleep $((try * 2))
  done
  cat "$STATE/apt.log" >&2
  return 1
}

# http_ok URL: whether URL answers 200 within 2 s.
http_ok() {
  python3 - "$1" <<'PY' 2>/dev/null
import sys, urllib.request
with urllib.request.urlopen(sys.argv[1], timeout=2) as r:
    sys.exit(0 if r.status == 200 else 1)
PY
}

# tool_venv VENV CHECK SPEC...: a virtualenv at VENV holding SPEC (pip requirement strings),
# created (with uv where it can be had) unless `VENV/bin/python -c CHECK` already succeeds.
# Servers get their own venvs so that the test envs need only their clients.
tool_venv() {
  local venv="$1" check="$2" uv
  shift 2
  "$venv/bin/python" -c "$check" 2>/dev/null && return 0
  if command -v uv >/dev/null 2>&1; then
    uv=(uv)
  elif python3 -m uv --version >/dev/null 2>&1; then
    uv=(python3 -m uv)
  else
    python3 -m pip install -q "uv>=0.9"
    uv=(python3 -m uv)
  fi
  "${uv[@]}" venv -q --clear -p python3 "$venv"
  "${uv[@]}" pip install -q --compile-bytecode -p "$venv/bin/python" "$@"
}

# start_daemon PIDFILE LOG COMMAND...: starts COMMAND in its own session (so its pid is also
# its process group id), detached from this shell, output appended to LOG; records the pid.
start_daemon() {
  local pidfile="$1" log="$2"
  shift 2
  # fd 9 is an up script's lock (docker-up.sh): a daemon must not hold it for its life
  setsid nohup "$@" >>"$log" 2>&1 </dev/null 9>&- &
  echo $! >"$pidfile"
}

# wait_until SECONDS PIDFILE LOG WHAT COMMAND...: waits until COMMAND succeeds; fails (showing
# the end of LOG) as soon as the process of PIDFILE has exited, or after SECONDS. An empty
# PIDFILE skips the exit check (daemons that fork and write their own pid files).
wait_until() {
  local limit="$1" pidfile="$2" log="$3" what="$4" deadline=$((SECONDS + $1))
  shift 4
  until "$@" >/dev/null 2>&1; do
    if [ -n "$pidfile" ] && ! kill -0 "$(cat "$pidfile" 2>/dev/null)" 2>/dev/null; then
      echo "$NAME: $what exited; see $log" >&2
      tail -20 "$log" >&2
      rm -f "$pidfile"
      return 1
    fi
    if [ $SECONDS -ge $deadline ]; then
      echo "$NAME: $what did not answer in $limit s; see $log" >&2
      return 1
    fi
    sleep 0.1
  done
}

# stop_pid PIDFILE [group]: SIGTERM the recorded pid (its whole process group with `group`),
# wait up to 20 s for it to go, then SIGKILL; removes PIDFILE. Nothing recorded, nothing done:
# a server these scripts reused rather than started is left alone.
stop_pid() {
  local file="$1" target pid what
  what="$(basename "$file" .pid)"
  if [ ! -f "$file" ]; then
    echo "$NAME: $what was not started by the up script (nothing to stop)"
    return 0
  fi
  pid="$(cat "$file" 2>/dev/null)"
  target="$pid"
  [ "${2:-}" = group ] && target="-$pid"
  if [ -n "$pid" ] && kill -0 "$pid" 2>/dev/null; then
    kill -TERM -- "$target" 2>/dev/null || kill -TERM "$pid" 2>/dev/null
    for _ in $(seq 1 200); do kill -0 -- "$target" 2>/dev/null || break; sleep 0.1; done
    kill -KILL -- "$target" 2>/dev/null || true
    echo "$NAME: stopped $what (pid $pid)"
  else
    echo "$NAME: $what (pid ${pid:-?}) had already exited"
  fi
  rm -f "$file"
}
