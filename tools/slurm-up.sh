#!/usr/bin/env bash
# Brings up a small real Slurm cluster on this host for the Slurm tests, reusing whatever is
# already running:
#   - Debian's slurm-wlm, munge, slurmdbd and mariadb-server (installed when missing),
#   - munged, mariadbd + slurmdbd (accounting, so `sacct` works), slurmctld, and one slurmd
#     per virtual node n1..n$NODES on localhost (a heterogeneous job needs one node per
#     component), all started without systemd; pids kept under $STATE for slurm-down.sh;
#   - QOS preemption: a job of QOS `urgent` requeues the `normal` jobs in its way;
#   - containers (`srun --container`): /etc/slurm/oci.conf runs OCI bundles with runc
#     (crun 1.8 refuses this host's hybrid cgroup layout), and skopeo and umoci make the
#     bundles on the submit side; skopeo may use docker-up.sh's plain-HTTP registry.
# Writes /etc/slurm/slurm.conf and oci.conf (only if absent or written by this script).
# `slurm-up.sh --check` only tells (exit status) whether the cluster already answers.
# Prints one summary line on success. Idempotent.
set -euo pipefail

STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/slurm"
# slurmd's spool holds each job's batch script, which runs as the job's user (any user,
# tools/sshd-up.sh's login account too): it lives outside the private $STATE
SPOOL="${TORCHX_SLURMD_SPOOL:-/var/spool/torchx-slurmd}"
NODES="${TORCHX_SLURM_NODES:-4}"
CONF=/etc/slurm/slurm.conf
DBD_CONF=/etc/slurm/slurmdbd.conf
MARKER="# written by torchx tools/slurm-up.sh"
NAME=slurm-up
source "$(dirname "$0")/lib/backend.sh"
HOSTS_LINE="127.0.0.1 $(seq -f 'n%g' -s ' ' 1 "$NODES") # torchx-slurm"

answers() {
  command -v sinfo >/dev/null 2>&1 || return 1
  grep -qF "SlurmdSpoolDir=$SPOOL/d-%n" "$CONF" 2>/dev/null || return 1
  # the container set-up (added later than the cluster) is there too
  [ -f /etc/slurm/oci.conf ] && command -v skopeo >/dev/null && command -v umoci >/dev/null || return 1
  scontrol ping 2>/dev/null | grep -q "is UP" || return 1
  # every node registered and usable (idle/mixed/allocated, not down/unknown)
  local bad
  bad="$(sinfo -h -N -o '%N %t' 2>/dev/null | grep -Ecv ' (idle|mix|alloc|comp)$' || true)"
  [ "$(sinfo -h -N -o '%N' 2>/dev/null | sort -u | wc -l)" -ge "$NODES" ] && [ "$bad" = 0 ]
}

check_or_reuse "${1:-}" "the running cluster"
mkdir -p "$STATE"/{run,log,spool}

missing=()
for prog in sbatch:slurm-client slurmctld:slurmctld slurmd:slurmd munged:munge \
            slurmdbd:slurmdbd mariadbd:mariadb-server runc:runc skopeo:skopeo umoci:umoci; do
  command -v "${prog%%:*}" >/dev/null 2>&1 || [ -x "/usr/sbin/${prog%%:*}" ] || missing+=("${prog#*:}")
done
if [ ${#missing[@]} -ne 0 ]; then
  apt_install slurm-wlm munge slurmdbd mariadb-server runc skopeo umoci
fi

# the daemons fork and write their own pid files: wait_until gets no pidfile to watch
alive() { [ -f "$1" ] && kill -0 "$(cat "$1" 2>/dev/null)" 2>/dev/null; }

# --- munge --------------------------------------------------------------------------------
mkdir -p /run/munge /var/log/munge /var/lib/munge
chown munge:munge /run/munge /var/log/munge /var/lib/munge
if [ ! -s /etc/munge/munge.key ]; then
  dd if=/dev/urandom bs=1 count=1024 of=/etc/munge/munge.key status=none
  chown munge:munge /etc/munge/munge.key
  chmod 400 /etc/munge/munge.key
fi
if ! alive /run/munge/munged.pid; then
  runuser -u munge -- /usr/sbin/munged --force
  wait_until 10 "" /var/log/munge/munged.log munged alive /run/munge/munged.pid
  cp /run/munge/munged.pid "$STATE/run/munged.pid"
fi

# --- mariadb + slurmdbd (accounting for sacct) --------------------------------------------
mkdir -p /run/mysqld
chown mysql:mysql /run/mysqld
if ! mysqladmin --socket=/run/mysqld/mysqld.sock ping >/dev/null 2>&1; then
  setsid /usr/sbin/mariadbd --user=mysql --datadir=/var/lib/mysql \
    --socket=/run/mysqld/mysqld.sock --pid-file=/run/mysqld/torchx-mariadbd.pid \
    --bind-address=127.0.0.1 --skip-log-bin >>"$STATE/log/mariadbd.log" 2>&1 </dev/null &
  wait_until 30 "" "$STATE/log/mariadbd.log" mariadbd \
    mysqladmin --socket=/run/mysqld/mysqld.sock ping
  cp /run/mysqld/torchx-mariadbd.pid "$STATE/run/mariadbd.pid"
fi
DB_PASS_FILE="$STATE/db-pass"
[ -s "$DB_PASS_FILE" ] || (umask 077; head -c 12 /dev/urandom | od -An -tx1 | tr -d ' \n' >"$DB_PASS_FILE")
DB_PASS="$(cat "$DB_PASS_FILE")"
mysql --socket=/run/mysqld/mysqld.sock -u root <<SQL
CREATE USER IF NOT EXISTS 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
ALTER USER 'slurm'@'localhost' IDENTIFIED BY '$DB_PASS';
CREATE DATABASE IF NOT EXISTS slurm_acct_db;
GRANT ALL ON slurm_acct_db.* TO 'slurm'@'localhost';
FLUSH PRIVILEGES;
SQL

mkdir -p /etc/slurm
(umask 077; cat >"$DBD_CONF" <<EOF
$MARKER
AuthType=auth/munge
DbdHost=localhost
DbdPort=6819
SlurmUser=root
StorageType=accounting_storage/mysql
StorageHost=localhost
StorageUser=slurm
StoragePass=$DB_PASS
StorageLoc=slurm_acct_db
PidFile=$STATE/run/slurmdbd.pid
LogFile=$STATE/log/slurmdbd.log
EOF
)
chmod 600 "$DBD_CONF"
if ! alive "$STATE/run/slurmdbd.pid"; then
  /usr/sbin/slurmdbd
  wait_until 20 "" "$STATE/log/slurmdbd.log" slurmdbd bash -c "exec 3<>/dev/tcp/127.0.0.1/6819"
fi

# --- slurm.conf ---------------------------------------------------------------------------
if [ -f "$CONF" ] && ! grep -qF "$MARKER" "$CONF"; then
  echo "slurm-up: $CONF exists and was not written by this script; refusing to replace it" >&2
  exit 1
fi
# CPUs/Sockets/Cores/Threads and memory of this host, as slurmd sees them
hw="$(/usr/sbin/slurmd -C | head -1)"
cpu_spec="$(tr ' ' '\n' <<<"$hw" | grep -E '^(CPUs|Boards|SocketsPerBoard|CoresPerSocket|ThreadsPerCore)=' | tr '\n' ' ')"
real_mem="$(tr ' ' '\n' <<<"$hw" | sed -n 's/^RealMemory=//p')"
node_mem=$((real_mem * 9 / 10))
old_conf="$(cat "$CONF" 2>/dev/null || true)"
cat >"$CONF" <<EOF
$MARKER
ClusterName=torchx-ci
SlurmctldHost=$(hostname -s)(127.0.0.1)
SlurmUser=root
AuthType=auth/munge
CredType=cred/munge
MpiDefault=none
ProctrackType=proctrack/linuxproc
TaskPlugin=task/none
ReturnToService=2
SlurmctldPidFile=$STATE/run/slurmctld.pid
SlurmdPidFile=$STATE/run/slurmd-%n.pid
SlurmctldLogFile=$STATE/log/slurmctld.log
SlurmdLogFile=$STATE/log/slurmd-%n.log
StateSaveLocation=$STATE/spool/ctld
SlurmdSpoolDir=$SPOOL/d-%n
SchedulerType=sched/backfill
# heterogeneous jobs are started only by the backfill scheduler: run it every second
SchedulerParameters=bf_interval=1
SelectType=select/cons_tres
SelectTypeParameters=CR_Core
AccountingStorageType=accounting_storage/slurmdbd
AccountingStorageHost=localhost
AccountingStoragePort=6819
JobAcctGatherType=jobacct_gather/linux
JobCompType=jobcomp/filetxt
JobCompLoc=$STATE/log/jobcomp.txt
MinJobAge=300
KillWait=5
# a job of QOS urgent preempts (requeues) jobs of QOS normal, as production clusters do
PreemptType=preempt/qos
PreemptMode=REQUEUE
NodeName=n[1-$NODES] NodeHostname=localhost NodeAddr=127.0.0.1 Port=[17001-$((17000 + NODES))] $cpu_spec RealMemory=$node_mem
PartitionName=debug Nodes=ALL Default=YES MaxTime=INFINITE State=UP
EOF
# containers: slurmstepd reads oci.conf at each step, so no daemon restart is needed.
# runc's state lives in a private directory of this cluster's.
OCI_CONF=/etc/slurm/oci.conf
if [ -f "$OCI_CONF" ] && ! grep -qF "$MARKER" "$OCI_CONF"; then
  echo "slurm-up: $OCI_CONF exists and was not written by this script; refusing to replace it" >&2
  exit 1
fi
install -d -m 700 "$STATE/runc"
RUNC="runc --root=$STATE/runc"
ID="%n.%u.%j.%s.%t"
cat >"$OCI_CONF" <<EOF
$MARKER
RunTimeQuery="$RUNC state $ID"
RunTimeKill="$RUNC kill -a $ID"
RunTimeDelete="$RUNC delete --force $ID"
RunTimeRun="$RUNC run --bundle %b $ID"
EOF
mkdir -p /etc/containers/registries.conf.d
cat >/etc/containers/registries.conf.d/50-torchx-test-registry.conf <<EOF
$MARKER: docker-up.sh's registry speaks plain HTTP
[[registry]]
location = "127.0.0.1:${TORCHX_TEST_REGISTRY_PORT:-5000}"
insecure = true
[[registry]]
location = "localhost:${TORCHX_TEST_REGISTRY_PORT:-5000}"
insecure = true
EOF

mkdir -p "$STATE/spool/ctld"
install -d -m 755 "$SPOOL"
for i in $(seq 1 "$NODES"); do install -d -m 755 "$SPOOL/d-n$i"; done
# daemons started with another configuration (an older version of this script) are
# restarted below with this one
if [ -n "$old_conf" ] && [ "$old_conf" != "$(cat "$CONF")" ]; then
  for pidfile in "$STATE"/run/slurmd-*.pid "$STATE/run/slurmctld.pid"; do
    alive "$pidfile" || continue
    pid="$(cat "$pidfile")"
    kill -TERM "$pid" 2>/dev/null || true
    for _ in $(seq 1 100); do kill -0 "$pid" 2>/dev/null || break; sleep 0.1; done
    rm -f "$pidfile"
  done
fi

# node names resolve to this host (the rank-0 host of a job is a node name)
if ! grep -qF "# torchx-slurm" /etc/hosts; then
  echo "$HOSTS_LINE" >>/etc/hosts
fi

# --- slurmctld and the slurmds --------------------------------------------------------------
if ! alive "$STATE/run/slurmctld.pid"; then
  rm -f "$STATE/run/slurmctld.pid"
  /usr/sbin/slurmctld
  wait_until 20 "" "$STATE/log/slurmctld.log" slurmctld bash -c "scontrol ping | grep -q 'is UP'"
fi
for i in $(seq 1 "$NODES"); do
  if ! alive "$STATE/run/slurmd-n$i.pid"; then
    rm -f "$STATE/run/slurmd-n$i.pid"
    /usr/sbin/slurmd -N "n$i"
  fi
done
# nodes that were down (a previous run stopped them) come back by themselves
# (ReturnToService=2); wait until all are usable
if ! wait_until 60 "" "$STATE/log" "the slurmd nodes" answers; then
  sinfo -N >&2 || true
  exit 1
fi
# the QOS that preempts (accounting: created once, kept by slurmdbd)
if ! sacctmgr -n -P show qos urgent format=name | grep -qx urgent; then
  sacctmgr -i add qos urgent Priority=1000 >/dev/null
fi
sacctmgr -i modify qos urgent set Preempt=normal PreemptMode=requeue >/dev/null || true
sacctmgr -i modify user root set qos+=urgent >/dev/null || true
echo "slurm-up: cluster up ($(sinfo -h -o '%D nodes, partition %P'); state in $STATE)"
