#!/usr/bin/env bash
# Stops what k8s-up.sh started (by the pids it recorded), leaving anything it reused alone:
# Kueue and JobSet, the kubelet, then every pod container containerd still runs (their shims outlive
# containerd), containerd, CoreDNS, the control plane and etcd; unmounts what the kubelet
# mounted for pods (service-account token volumes) so the state directory can be removed.
set -uo pipefail
STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/k8s"
NAME=k8s-down
source "$(dirname "$0")/lib/backend.sh"
BIN="$(ls -d "${TORCHX_BUILD_CACHE:-$HOME/.cache/torchx-ci}"/k8s-* 2>/dev/null | grep -v '\.tmp$' | tail -1)"

stop_pid "$STATE/kueue.pid"
stop_pid "$STATE/jobset.pid"
stop_pid "$STATE/kubelet.pid"
if [ -f "$STATE/containerd.pid" ]; then
  sock="$STATE/containerd/containerd.sock"
  ctr_() { "$BIN/ctr" --address "$sock" -n k8s.io "$@"; }
  for task in $(ctr_ tasks ls -q 2>/dev/null); do
    ctr_ tasks kill -s SIGKILL "$task" >/dev/null 2>&1
  done
  for task in $(ctr_ tasks ls -q 2>/dev/null); do
    for _ in $(seq 1 50); do ctr_ tasks delete "$task" >/dev/null 2>&1 && break; sleep 0.1; done
  done
  for container in $(ctr_ containers ls -q 2>/dev/null); do
    ctr_ containers delete "$container" >/dev/null 2>&1
  done
  stop_pid "$STATE/containerd.pid" group
fi
stop_pid "$STATE/coredns.pid"
stop_pid "$STATE/scheduler.pid"
stop_pid "$STATE/controller-manager.pid"
stop_pid "$STATE/apiserver.pid"
stop_pid "$STATE/etcd.pid"
# the kubelet's and containerd's mounts (token volumes, pod sandboxes' /dev/shm, rootfs)
grep -o " $STATE/[^ ]*" /proc/self/mounts 2>/dev/null | sort -r | while read -r mount; do
  umount -l "$mount" 2>/dev/null || true
done
exit 0
