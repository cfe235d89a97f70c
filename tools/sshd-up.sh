#!/usr/bin/env bash
# Brings up an OpenSSH server on 127.0.0.1 as the login node of tools/slurm-up.sh's cluster,
# for the tests of `slurm -cfg ssh=...` (submission from a laptop), reusing a running one:
#   - Debian's openssh-server, started without systemd on $PORT with its own host key and
#     configuration under $STATE (key authentication only);
#   - three unprivileged users: torchx-login, the cluster account jobs run as (the login
#     node's side), torchx-laptop, the client, whose key torchx-login accepts and whose
#     ~/.ssh/config names the login node `torchx-login-node`, and torchx-bare, an account
#     that accepts the same key but whose commands find no Slurm (PATH=/nonexistent);
#   - torchx-tcsh and torchx-fish: login accounts (same key) whose login shells are not
#     POSIX, as on clusters that give users csh or fish.
# `sshd-up.sh --check` only tells (exit status) whether the server already answers.
# Prints one summary line on success. Idempotent.
set -euo pipefail

STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/sshd"
PORT="${TORCHX_TEST_SSH_PORT:-2222}"
LOGIN=torchx-login
LAPTOP=torchx-laptop
BARE=torchx-bare
SHELLS=(torchx-tcsh:/usr/bin/tcsh torchx-fish:/usr/bin/fish)
NAME=sshd-up
source "$(dirname "$0")/lib/backend.sh"

answers() {
  [ -f "$STATE/sshd.pid" ] && kill -0 "$(cat "$STATE/sshd.pid")" 2>/dev/null || return 1
  [ -f "/home/$LAPTOP/.ssh/config" ] && [ -f "/home/$LOGIN/.ssh/authorized_keys" ] || return 1
  [ -f "/home/$BARE/.ssh/authorized_keys" ] || return 1
  [ -f /home/torchx-fish/.ssh/authorized_keys ] && [ -x /usr/bin/tcsh ] || return 1
  bash -c "exec 3<>/dev/tcp/127.0.0.1/$PORT" 2>/dev/null
}

check_or_reuse "${1:-}" "the running ssh server on port $PORT"

if [ ! -x /usr/sbin/sshd ] || ! command -v ssh >/dev/null 2>&1 || [ ! -x /usr/bin/tcsh ] \
  || [ ! -x /usr/bin/fish ]; then
  apt_install openssh-server openssh-client tcsh fish
fi

# the users: a password of "*" is no password, yet not a locked account (sshd refuses those)
for user in "$LOGIN" "$LAPTOP" "$BARE"; do
  id "$user" >/dev/null 2>&1 || useradd --create-home --shell /bin/bash "$user"
  usermod -p '*' "$user"
  install -d -m 700 -o "$user" -g "$user" "/home/$user/.ssh"
done
for entry in "${SHELLS[@]}"; do
  user="${entry%%:*}"
  id "$user" >/dev/null 2>&1 || useradd --create-home --shell "${entry#*:}" "$user"
  usermod -p '*' --shell "${entry#*:}" "$user"
  install -d -m 700 -o "$user" -g "$user" "/home/$user/.ssh"
done

# the server: host key and configuration of its own
[ -f "$STATE/host_ed25519" ] || ssh-keygen -q -t ed25519 -N '' -f "$STATE/host_ed25519"
install -d -m 755 /run/sshd
cat >"$STATE/sshd_config" <<EOF
Port $PORT
ListenAddress 127.0.0.1
HostKey $STATE/host_ed25519
PidFile $STATE/sshd.pid
AuthenticationMethods publickey
PubkeyAuthentication yes
PasswordAuthentication no
KbdInteractiveAuthentication no
UsePAM no
AllowUsers $LOGIN $BARE ${SHELLS[*]%%:*}
MaxStartups 100:30:200
MaxSessions 100
EOF

# the client's key, accepted by the login account; the client knows the host key
key="/home/$LAPTOP/.ssh/id_ed25519"
[ -f "$key" ] || runuser -u "$LAPTOP" -- ssh-keygen -q -t ed25519 -N '' -f "$key"
install -m 600 -o "$LOGIN" -g "$LOGIN" "$key.pub" "/home/$LOGIN/.ssh/authorized_keys"
install -m 600 -o "$BARE" -g "$BARE" "$key.pub" "/home/$BARE/.ssh/authorized_keys"
for entry in "${SHELLS[@]}"; do
  user="${entry%%:*}"
  install -m 600 -o "$user" -g "$user" "$key.pub" "/home/$user/.ssh/authorized_keys"
done
# bash reads ~/.bashrc for a command sent over ssh: this account finds no programs
echo 'export PATH=/nonexistent' >"/home/$BARE/.bashrc"
chown "$BARE:$BARE" "/home/$BARE/.bashrc"
hostkey="$(cut -d' ' -f1-2 "$STATE/host_ed25519.pub")"
printf '[127.0.0.1]:%s %s\n[localhost]:%s %s\n' "$PORT" "$hostkey" "$PORT" "$hostkey" \
  >"/home/$LAPTOP/.ssh/known_hosts"
cat >"/home/$LAPTOP/.ssh/config" <<EOF
Host torchx-login-node
  HostName 127.0.0.1
  Port $PORT
  User $LOGIN
EOF
chown "$LAPTOP:$LAPTOP" "/home/$LAPTOP/.ssh/known_hosts" "/home/$LAPTOP/.ssh/config"
chmod 600 "/home/$LAPTOP/.ssh/known_hosts" "/home/$LAPTOP/.ssh/config"

if [ -f "$STATE/sshd.pid" ] && kill -0 "$(cat "$STATE/sshd.pid")" 2>/dev/null; then
  kill -HUP "$(cat "$STATE/sshd.pid")"  # re-reads the configuration written above
  sleep 0.5
else
  rm -f "$STATE/sshd.pid"
  /usr/sbin/sshd -f "$STATE/sshd_config" -E "$STATE/sshd.log"
fi
wait_until 20 "" "$STATE/sshd.log" sshd answers
echo "sshd-up: ssh server on 127.0.0.1:$PORT ($LAPTOP -> $LOGIN@torchx-login-node; state in $STATE)"
