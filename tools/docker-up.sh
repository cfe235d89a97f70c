#!/usr/bin/env bash
# Brings up what the Docker-backed tests need, reusing whatever is already running:
#   - a Docker daemon (Debian's docker.io; started without systemd, pid kept for docker-down.sh),
#   - the test image torchx-test/python:3.11-r2, built locally from Debian packages (no
#     registry on the internet is reachable from CI): Python 3.11 with its standard library,
#     bash, busybox and the C++ runtime (so a host virtualenv holding torch can be mounted),
#   - a local image registry on 127.0.0.1:${TORCHX_TEST_REGISTRY_PORT:-5000} for push tests.
# `docker-up.sh --check` only tells (exit status) whether all three are already there.
# Prints nothing on success but one summary line. Idempotent.
set -euo pipefail

STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/docker"
NAME=docker-up
source "$(dirname "$0")/lib/backend.sh"
IMAGE="${TORCHX_TEST_IMAGE:-torchx-test/python:3.11-r2}"
REGISTRY_PORT="${TORCHX_TEST_REGISTRY_PORT:-5000}"

registry_answers() { (exec 3<>"/dev/tcp/127.0.0.1/$REGISTRY_PORT") 2>/dev/null; }
answers() {
  docker info >/dev/null 2>&1 && docker image inspect "$IMAGE" >/dev/null 2>&1 && registry_answers
}

# k8s-up.sh runs this too, beside test-all.sh's own call: one at a time, the second reuses
if [ "${1:-}" != "--check" ]; then
  mkdir -p "$(dirname "$STATE")"
  exec 9>"$STATE.lock"
  flock 9
fi
check_or_reuse "${1:-}" "the Docker daemon, image $IMAGE and registry 127.0.0.1:$REGISTRY_PORT"

# --- the daemon ---------------------------------------------------------------------------
if ! docker info >/dev/null 2>&1; then
  if ! command -v dockerd >/dev/null 2>&1 || ! command -v docker >/dev/null 2>&1; then
    apt_install docker.io
  fi
  # a previous daemon that died may have left its pid file and bind mount behind
  rm -f /var/run/docker.pid
  # --live-restore: containers keep running while the daemon restarts (tools/restart.sh)
  start_daemon "$STATE/dockerd.pid" "$STATE/dockerd.log" dockerd --storage-driver=overlay2 --live-restore
  wait_until 30 "$STATE/dockerd.pid" "$STATE/dockerd.log" dockerd docker info
fi

# --- the test image -----------------------------------------------------------------------
if ! docker image inspect "$IMAGE" >/dev/null 2>&1; then
  build="$(mktemp -d -t torchx-image-XXXXXX)"
  trap 'rm -rf "$build"' EXIT
  pkgs="libc6 zlib1g libexpat1 libffi8 libssl3 libbz2-1.0 liblzma5 libuuid1 libcrypt1 media-types
        libpython3.11-minimal libpython3.11-stdlib python3.11-minimal busybox-static libsqlite3-0
        libncursesw6 libtinfo6 libreadline8 libdb5.3 libgdbm6 libnsl2 libtirpc3 libgssapi-krb5-2
        libkrb5-3 libk5crypto3 libkrb5support0 libcom-err2 libkeyutils1 netbase ca-certificates
        bash libstdc++6 libgcc-s1 libgomp1"
  mkdir -p "$build/debs" "$build/root"
  for try in 1 2 3 4 5; do
    (cd "$build/debs" && apt-get download $pkgs >/dev/null 2>&1) && break
    [ "$try" = 5 ] && { echo "docker-up: apt-get download of the image packages failed" >&2; exit 1; }
    apt-get -o DPkg::Lock::Timeout=300 update -qq >/dev/null 2>&1 || sleep $((try * 2))
  done
  for deb in "$build"/debs/*.deb; do dpkg-deb -x "$deb" "$build/root"; done
  r="$build/root"
  # Debian's merged /usr: the packages install under usr/lib and expect /lib, /bin, /sbin links
  for d in bin sbin lib lib64; do
    if [ -d "$r/$d" ] && [ ! -L "$r/$d" ]; then cp -a "$r/$d/." "$r/usr/$d/" 2>/dev/null || true; rm -rf "${r:?}/$d"; fi
    mkdir -p "$r/usr/$d"
    ln -sfn "usr/$d" "$r/$d"
  done
  ln -sf python3.11 "$r/usr/bin/python3"
  ln -sf python3.11 "$r/usr/bin/python"
  for applet in sh ash bash cat echo env sleep ls mkdir rm cp mv grep sed head tail wc true false \
                hostname id kill ps sort uniq tr cut printf test date touch pwd nslookup wget stat; do
    [ -e "$r/usr/bin/$applet" ] || ln -s busybox "$r/usr/bin/$applet"
  done
  mkdir -p "$r/tmp" "$r/proc" "$r/sys" "$r/dev" "$r/etc" "$r/root" "$r/workspace"
  chmod 1777 "$r/tmp"
  printf 'root:x:0:0:root:/root:/bin/sh\nnobody:x:65534:65534:nobody:/nonexistent:/bin/sh\n' >"$r/etc/passwd"
  printf 'root:x:0:\nnogroup:x:65534:\n' >"$r/etc/group"
  tar -C "$r" -c . | docker import \
    -c 'ENV PATH=/usr/local/bin:/usr/bin:/bin:/usr/sbin:/sbin' \
    -c 'ENV LANG=C.UTF-8' \
    -c 'WORKDIR /workspace' \
    -c 'CMD ["/bin/sh"]' - "$IMAGE" >/dev/null
fi

# --- the local registry -------------------------------------------------------------------
if ! registry_answers; then
  command -v docker-registry >/dev/null 2>&1 || apt_install docker-registry
  mkdir -p "$STATE/registry"
  cat >"$STATE/registry.yml" <<CONF
version: 0.1
log:
  level: warn
storage:
  filesystem:
    rootdirectory: $STATE/registry
  delete:
    enabled: true
http:
  addr: 127.0.0.1:$REGISTRY_PORT
CONF
  start_daemon "$STATE/registry.pid" "$STATE/registry.log" docker-registry serve "$STATE/registry.yml"
  wait_until 10 "$STATE/registry.pid" "$STATE/registry.log" docker-registry registry_answers
fi

echo "docker-up: daemon $(docker version -f '{{.Server.Version}}'), image $IMAGE, registry 127.0.0.1:$REGISTRY_PORT"
