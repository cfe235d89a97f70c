#!/usr/bin/env bash
# Brings up a real Kubernetes cluster on this machine for the kubernetes scheduler's tests,
# reusing one that already answers:
#   - etcd, kube-apiserver (RBAC and the Node authorizer on, static bearer tokens for an
#     admin in system:masters and a limited user, service-account tokens signed by a key made
#     here), kube-controller-manager and kube-scheduler, all on 127.0.0.1;
#   - one node whose pods really run: a kubelet over containerd (runc, the bridge CNI plugin
#     from Debian), with the test image and a pause image built here loaded into it (no
#     registry outside is reachable) and the local registry of docker-up.sh trusted over HTTP;
#   - CoreDNS, so pods find each other by hostname (the rank-0 address of an app);
#   - Volcano's CRDs (its controllers cannot be built here: the Go module proxy refuses
#     volcano.sh/volcano);
#   - Kueue and JobSet (tools/k8s-controllers-build.sh): their CRDs and webhooks, and their
#     controllers running on this machine (not in pods), their webhooks served on 127.0.0.1
#     with a certificate of the cluster's CA. Kueue manages batch Jobs and JobSets that
#     carry its queue label.
# Binaries come from tools/k8s-build.sh (built once per machine). Writes the admin kubeconfig
# to $STATE/kubeconfig and the limited user's to $STATE/limited.kubeconfig. Each daemon runs
# in its own session, its pid in $STATE/<name>.pid for k8s-down.sh. Prints one summary line.
# `k8s-up.sh --check` only tells (exit status) whether the cluster answers with a Ready node.
set -euo pipefail

STATE="${TORCHX_CI_STATE:-/tmp/torchx-ci}/k8s"
PORT="${TORCHX_TEST_K8S_PORT:-6443}"
ETCD_PORT="${TORCHX_TEST_ETCD_PORT:-12379}"
NODE="torchx-node-1"
IMAGE="${TORCHX_TEST_IMAGE:-torchx-test/python:3.11-r2}"
PAUSE_IMAGE="torchx-test/pause:1"
REGISTRY_PORT="${TORCHX_TEST_REGISTRY_PORT:-5000}"
NAME=k8s-up
TOOLS="$(cd "$(dirname "$0")" && pwd)"
source "$TOOLS/lib/backend.sh"

admin_get() {
  curl -sf --max-time 3 --cacert "$STATE/pki/ca.crt" \
    -H "Authorization: Bearer $(cat "$STATE/admin.token" 2>/dev/null)" \
    "https://127.0.0.1:$PORT$1"
}
apiserver_ready() { admin_get /readyz >/dev/null; }
node_ready() {
  admin_get "/api/v1/nodes/$NODE" | python3 -c '
import json, sys
conds = json.load(sys.stdin)["status"].get("conditions", [])
sys.exit(0 if any(c["type"] == "Ready" and c["status"] == "True" for c in conds) else 1)'
}
KUEUE_WEBHOOK_PORT="${TORCHX_TEST_KUEUE_PORT:-9443}"
JOBSET_WEBHOOK_PORT="${TORCHX_TEST_JOBSET_PORT:-9444}"
KUEUE_PROBE_PORT=$((KUEUE_WEBHOOK_PORT + 10000))
JOBSET_PROBE_PORT=$((JOBSET_WEBHOOK_PORT + 10000))
# a controller is ready once its webhook serves (its readiness probe says so)
probe_ready() { curl -sf --max-time 2 "http://127.0.0.1:$1/readyz" >/dev/null; }
controllers_ready() { probe_ready "$KUEUE_PROBE_PORT" && probe_ready "$JOBSET_PROBE_PORT"; }
answers() { apiserver_ready && node_ready && controllers_ready; }

check_or_reuse "${1:-}" "the Kubernetes cluster at https://127.0.0.1:$PORT"

# --- binaries, packages, images -------------------------------------------------------------
BIN="$(bash "$TOOLS/k8s-build.sh")" || { echo "k8s-up: building the cluster's binaries failed" >&2; exit 1; }
CONTROLLERS="$(bash "$TOOLS/k8s-controllers-build.sh")" \
  || { echo "k8s-up: building Kueue and JobSet failed" >&2; exit 1; }
export PATH="$BIN:$CONTROLLERS:$PATH"
[ -x /usr/lib/cni/bridge ] || apt_install containernetworking-plugins
command -v openssl >/dev/null || apt_install openssl
# the images are built in Docker, and the registry runs there: bring it up unless it is
bash "$TOOLS/docker-up.sh" --check || bash "$TOOLS/docker-up.sh" >/dev/null

# The node's address: a kubelet refuses a loopback one, and pods reach CoreDNS there too.
HOST_IP="$(ip -4 route get 1.1.1.1 2>/dev/null | awk '{for (i = 1; i < NF; i++) if ($i == "src") print $(i + 1)}')"
HOST_IP="${HOST_IP:-$(hostname -I | awk '{print $1}')}"

# --- keys and credentials (made once per state directory) -----------------------------------
pki="$STATE/pki"
# sign NAME SUBJECT [SANS]: in the current directory (the CA's), a key and a certificate signed
# by the CA: a server's with SANS, else a client's
sign() {
  openssl req -newkey rsa:2048 -nodes -keyout "$1.key" -out "$1.csr" -subj "$2" 2>/dev/null
  local ext="$1.ext"
  printf 'basicConstraints=CA:FALSE\nkeyUsage=digitalSignature,keyEncipherment\n' >"$ext"
  if [ -n "${3:-}" ]; then
    printf 'extendedKeyUsage=serverAuth\nsubjectAltName=%s\n' "$3" >>"$ext"
  else
    printf 'extendedKeyUsage=clientAuth\n' >>"$ext"
  fi
  openssl x509 -req -in "$1.csr" -CA ca.crt -CAkey ca.key -CAcreateserial -out "$1.crt" \
    -days 3650 -extfile "$ext" 2>/dev/null
  rm -f "$1.csr" "$ext"
}
if [ ! -f "$pki/done" ]; then
  rm -rf "$pki"
  mkdir -p "$pki"
  (
    cd "$pki"
    openssl req -x509 -newkey rsa:2048 -nodes -keyout ca.key -out ca.crt -days 3650 \
      -subj "/CN=torchx-test-ca" 2>/dev/null
    sign apiserver "/CN=kube-apiserver" "IP:127.0.0.1,IP:10.0.0.1,DNS:localhost,DNS:kubernetes,DNS:kubernetes.default,DNS:kubernetes.default.svc"
    sign apiserver-kubelet-client "/O=system:masters/CN=kube-apiserver-kubelet-client"
    openssl genrsa -out sa.key 2048 2>/dev/null
    openssl rsa -in sa.key -pubout -out sa.pub 2>/dev/null
  )
  chmod 600 "$pki"/*.key
  token() { python3 -c 'import secrets; print(secrets.token_hex(16))'; }
  token >"$STATE/admin.token"
  token >"$STATE/limited.token"
  token >"$STATE/node.token"
  token >"$STATE/controllers.token"
  chmod 600 "$STATE"/*.token
  {
    echo "$(cat "$STATE/admin.token"),torchx-admin,1000,system:masters"
    echo "$(cat "$STATE/limited.token"),torchx-limited,1001,torchx-limited"
    echo "$(cat "$STATE/node.token"),system:node:$NODE,1002,system:nodes"
    echo "$(cat "$STATE/controllers.token"),torchx-controllers,1003,system:masters"
  } >"$pki/tokens.csv"
  chmod 600 "$pki/tokens.csv"
  touch "$pki/done"
fi
# the kubelet's serving certificate names this machine's address (another machine, another one)
if ! openssl x509 -in "$pki/kubelet-serving.crt" -noout -ext subjectAltName 2>/dev/null | grep -q "IP Address:$HOST_IP\b"; then
  (cd "$pki" && sign kubelet-serving "/CN=$NODE" "IP:$HOST_IP,DNS:$NODE")
  chmod 600 "$pki/kubelet-serving.key"
fi

# the controllers' webhooks, called by the API server at 127.0.0.1 (tls.crt/tls.key: the names
# controller-runtime looks for)
if [ ! -f "$pki/webhooks/tls.crt" ]; then
  (cd "$pki" && sign webhooks "/CN=torchx-test-webhooks" "IP:127.0.0.1,DNS:localhost")
  mkdir -p "$pki/webhooks"
  mv "$pki/webhooks.crt" "$pki/webhooks/tls.crt"
  mv "$pki/webhooks.key" "$pki/webhooks/tls.key"
  chmod 600 "$pki/webhooks/tls.key"
fi

# kubeconfig FILE TOKEN_FILE: a kubeconfig for https://127.0.0.1:$PORT with that bearer token
kubeconfig() {
  umask 077
  cat >"$1" <<CONF
apiVersion: v1
kind: Config
clusters:
- name: torchx-test
  cluster:
    server: https://127.0.0.1:$PORT
    certificate-authority: $pki/ca.crt
users:
- name: user
  user:
    token: $(cat "$2")
contexts:
- name: torchx-test
  context:
    cluster: torchx-test
    user: user
    namespace: default
current-context: torchx-test
CONF
}
kubeconfig "$STATE/kubeconfig" "$STATE/admin.token"
kubeconfig "$STATE/limited.kubeconfig" "$STATE/limited.token"
kubeconfig "$STATE/node.kubeconfig" "$STATE/node.token"
kubeconfig "$STATE/controllers.kubeconfig" "$STATE/controllers.token"

# --- the control plane ----------------------------------------------------------------------
etcd_healthy() { curl -sf --max-time 2 "http://127.0.0.1:$ETCD_PORT/health" | grep -q true; }
if ! etcd_healthy; then
  start_daemon "$STATE/etcd.pid" "$STATE/etcd.log" etcd --name torchx-test \
    --data-dir "$STATE/etcd" --listen-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --advertise-client-urls "http://127.0.0.1:$ETCD_PORT" \
    --listen-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-advertise-peer-urls "http://127.0.0.1:$((ETCD_PORT + 1))" \
    --initial-cluster "torchx-test=http://127.0.0.1:$((ETCD_PORT + 1))" \
    --quota-backend-bytes 2147483648 --log-level warn
  wait_until 30 "$STATE/etcd.pid" "$STATE/etcd.log" etcd etcd_healthy
fi
if ! apiserver_ready; then
  start_daemon "$STATE/apiserver.pid" "$STATE/apiserver.log" kube-apiserver \
    --etcd-servers "http://127.0.0.1:$ETCD_PORT" --bind-address 127.0.0.1 --secure-port "$PORT" \
    --advertise-address 127.0.0.1 --service-cluster-ip-range 10.0.0.0/24 \
    --authorization-mode Node,RBAC --token-auth-file "$pki/tokens.csv" \
    --client-ca-file "$pki/ca.crt" \
    --tls-cert-file "$pki/apiserver.crt" --tls-private-key-file "$pki/apiserver.key" \
    --service-account-key-file "$pki/sa.pub" --service-account-signing-key-file "$pki/sa.key" \
    --service-account-issuer https://kubernetes.default.svc.cluster.local \
    --kubelet-client-certificate "$pki/apiserver-kubelet-client.crt" \
    --kubelet-client-key "$pki/apiserver-kubelet-client.key" \
    --kubelet-certificate-authority "$pki/ca.crt" \
    --kubelet-preferred-address-types InternalIP --allow-privileged=true \
    --watch-cache=true --v=1
  wait_until 120 "$STATE/apiserver.pid" "$STATE/apiserver.log" kube-apiserver apiserver_ready
fi
healthz() { curl -skf --max-time 2 "https://127.0.0.1:$1/healthz" >/dev/null; }
if ! healthz 10257; then
  start_daemon "$STATE/controller-manager.pid" "$STATE/controller-manager.log" \
    kube-controller-manager --kubeconfig "$STATE/controllers.kubeconfig" \
    --authentication-kubeconfig "$STATE/controllers.kubeconfig" \
    --authorization-kubeconfig "$STATE/controllers.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false \
    --service-account-private-key-file "$pki/sa.key" --root-ca-file "$pki/ca.crt" \
    --use-service-account-credentials=false --controllers '*' \
    --service-cluster-ip-range 10.0.0.0/24 --v=1
  wait_until 60 "$STATE/controller-manager.pid" "$STATE/controller-manager.log" \
    kube-controller-manager healthz 10257
fi
if ! healthz 10259; then
  start_daemon "$STATE/scheduler.pid" "$STATE/scheduler.log" \
    kube-scheduler --kubeconfig "$STATE/controllers.kubeconfig" \
    --authentication-kubeconfig "$STATE/controllers.kubeconfig" \
    --authorization-kubeconfig "$STATE/controllers.kubeconfig" \
    --bind-address 127.0.0.1 --leader-elect=false --v=1
  wait_until 60 "$STATE/scheduler.pid" "$STATE/scheduler.log" kube-scheduler healthz 10259
fi

# --- the node's container runtime -----------------------------------------------------------
run="$STATE/containerd"
sock="$run/containerd.sock"
mkdir -p "$run/certs.d/127.0.0.1:$REGISTRY_PORT" "$STATE/cni"
cat >"$run/certs.d/127.0.0.1:$REGISTRY_PORT/hosts.toml" <<CONF
server = "http://127.0.0.1:$REGISTRY_PORT"
[host."http://127.0.0.1:$REGISTRY_PORT"]
  capabilities = ["pull", "resolve", "push"]
CONF
cat >"$run/config.toml" <<CONF
version = 3
root = "$run/root"
state = "$run/state"
[grpc]
  address = "$sock"
[ttrpc]
  address = "$sock.ttrpc"
[plugins.'io.containerd.cri.v1.images']
  snapshotter = "overlayfs"
  [plugins.'io.containerd.cri.v1.images'.pinned_images]
    sandbox = "docker.io/$PAUSE_IMAGE"
  [plugins.'io.containerd.cri.v1.images'.registry]
    config_path = "$run/certs.d"
[plugins.'io.containerd.cri.v1.runtime']
  # root here lacks CAP_SYS_RESOURCE: no container may get a lower OOM score than containerd
  restrict_oom_score_adj = true
  [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc]
    runtime_type = "io.containerd.runc.v2"
    [plugins.'io.containerd.cri.v1.runtime'.containerd.runtimes.runc.options]
      BinaryName = "$(command -v runc)"
      SystemdCgroup = false
      Root = "$run/runc"
  [plugins.'io.containerd.cri.v1.runtime'.cni]
    bin_dirs = ["/usr/lib/cni"]
    conf_dir = "$STATE/cni"
CONF
# firewall: lets each pod's traffic through the FORWARD chain. Docker sets that chain's
# policy to DROP and bridged packets pass through it (bridge-nf-call-iptables), so without
# it pods on this bridge could not reach each other (a DDP app's store never answered).
cat >"$STATE/cni/10-torchx.conflist" <<CONF
{
  "cniVersion": "1.0.0",
  "name": "torchx-pods",
  "plugins": [
    {"type": "bridge", "bridge": "torchx0", "isGateway": true, "ipMasq": true,
     "ipam": {"type": "host-local", "ranges": [[{"subnet": "10.88.0.0/16"}]],
              "routes": [{"dst": "0.0.0.0/0"}], "dataDir": "$STATE/cni/ipam"}},
    {"type": "firewall", "backend": "iptables"},
    {"type": "portmap", "capabilities": {"portMappings": true}},
    {"type": "loopback"}
  ]
}
CONF
ctr_() { ctr --address "$sock" "$@"; }
containerd_answers() { ctr_ version >/dev/null 2>&1; }
if ! containerd_answers; then
  sysctl -qw net.ipv4.ip_forward=1
  start_daemon "$STATE/containerd.pid" "$STATE/containerd.log" containerd --config "$run/config.toml"
  wait_until 30 "$STATE/containerd.pid" "$STATE/containerd.log" containerd containerd_answers
fi
# the images the pods use: the test image and the pause image, from the Docker daemon
if ! docker image inspect "$PAUSE_IMAGE" >/dev/null 2>&1; then
  pause="$(mktemp -d -t torchx-pause-XXXXXX)"
  printf 'module torchx.test/pause\ngo 1.26\n' >"$pause/go.mod"
  cp "$TOOLS/k8s/pause/main.go" "$pause/"
  (cd "$pause" && CGO_ENABLED=0 GOFLAGS= go build -trimpath -ldflags "-s -w" -o root/pause .)
  tar -C "$pause/root" -c pause | docker import -c 'ENTRYPOINT ["/pause"]' - "$PAUSE_IMAGE" >/dev/null
  rm -rf "$pause"
fi
for image in "$PAUSE_IMAGE" "$IMAGE"; do
  if ! ctr_ -n k8s.io images inspect "docker.io/$image" >/dev/null 2>&1 \
    && ! ctr_ -n k8s.io images ls -q | grep -qx "docker.io/$image"; then
    docker save "$image" | ctr_ -n k8s.io images import - >/dev/null 2>>"$STATE/ctr.log"
  fi
done

# --- CoreDNS and the kubelet ----------------------------------------------------------------
dns_answers() { (exec 3<>"/dev/tcp/$HOST_IP/53") 2>/dev/null; }
if ! dns_answers; then
  cat >"$STATE/Corefile" <<CONF
.:53 {
    bind $HOST_IP
    errors
    kubernetes cluster.local in-addr.arpa ip6.arpa {
        kubeconfig $STATE/controllers.kubeconfig torchx-test
        pods insecure
        fallthrough in-addr.arpa ip6.arpa
    }
    cache 5
}
CONF
  start_daemon "$STATE/coredns.pid" "$STATE/coredns.log" coredns -conf "$STATE/Corefile"
  wait_until 30 "$STATE/coredns.pid" "$STATE/coredns.log" CoreDNS dns_answers
fi
kubelet_dir="$STATE/kubelet"
mkdir -p "$kubelet_dir"
cat >"$STATE/kubelet.yaml" <<CONF
apiVersion: kubelet.config.k8s.io/v1beta1
kind: KubeletConfiguration
# this machine runs cgroup v1, which kubelet 1.35+ refuses unless told otherwise
failCgroupV1: false
cgroupDriver: cgroupfs
containerRuntimeEndpoint: unix://$sock
address: $HOST_IP
port: 10250
readOnlyPort: 0
healthzBindAddress: 127.0.0.1
healthzPort: 10248
tlsCertFile: $pki/kubelet-serving.crt
tlsPrivateKeyFile: $pki/kubelet-serving.key
authentication:
  anonymous: {enabled: false}
  webhook: {enabled: false}
  x509: {clientCAFile: $pki/ca.crt}
authorization: {mode: AlwaysAllow}
clusterDomain: cluster.local
clusterDNS: [$HOST_IP]
resolvConf: /etc/resolv.conf
failSwapOn: false
# one machine shared with the rest of the suite: never evict for disk or memory
evictionHard: {memory.available: "100Mi", nodefs.available: "1%", imagefs.available: "1%"}
imageGCHighThresholdPercent: 100
imageGCLowThresholdPercent: 99
serializeImagePulls: false
maxPods: 250
CONF
kubelet_healthy() { curl -sf --max-time 2 http://127.0.0.1:10248/healthz >/dev/null; }
if ! kubelet_healthy; then
  start_daemon "$STATE/kubelet.pid" "$STATE/kubelet.log" kubelet \
    --config "$STATE/kubelet.yaml" --kubeconfig "$STATE/node.kubeconfig" \
    --root-dir "$kubelet_dir" --cert-dir "$kubelet_dir/pki" \
    --hostname-override "$NODE" --node-ip "$HOST_IP" --v=1
  wait_until 120 "$STATE/kubelet.pid" "$STATE/kubelet.log" kubelet node_ready
fi

# --- cluster objects: Volcano's, Kueue's and JobSet's CRDs and webhooks, the limited user ----
python3 "$TOOLS/k8s/objects.py" "$STATE/kubeconfig" "$CONTROLLERS" "$pki/ca.crt" \
  "$KUEUE_WEBHOOK_PORT" "$JOBSET_WEBHOOK_PORT"

# --- Kueue and JobSet ---------------------------------------------------------------------
# Outside the cluster, so: no leader election, no metrics endpoint, our own serving
# certificate (their internal certificate management writes a Secret for a Service).
cat >"$STATE/kueue.yaml" <<CONF
apiVersion: config.kueue.x-k8s.io/v1beta2
kind: Configuration
namespace: kueue-system
health: {healthProbeBindAddress: "127.0.0.1:$KUEUE_PROBE_PORT"}
metrics: {bindAddress: "0"}
webhook: {host: 127.0.0.1, port: $KUEUE_WEBHOOK_PORT, certDir: "$pki/webhooks"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
integrations:
  frameworks: ["batch/job", "jobset.x-k8s.io/jobset"]
CONF
cat >"$STATE/jobset.yaml" <<CONF
apiVersion: config.jobset.x-k8s.io/v1alpha1
kind: Configuration
health: {healthProbeBindAddress: "127.0.0.1:$JOBSET_PROBE_PORT"}
metrics: {bindAddress: "0"}
webhook: {host: 127.0.0.1, port: $JOBSET_WEBHOOK_PORT, certDir: "$pki/webhooks"}
leaderElection: {leaderElect: false}
internalCertManagement: {enable: false}
CONF
if ! probe_ready "$KUEUE_PROBE_PORT"; then
  # without its internal certificates Kueue loads a metrics certificate from this fixed path,
  # even with the metrics endpoint off
  mkdir -p /etc/kueue/metrics
  ln -sfn "$pki/webhooks" /etc/kueue/metrics/certs
  start_daemon "$STATE/kueue.pid" "$STATE/kueue.log" \
    env KUBECONFIG="$STATE/controllers.kubeconfig" kueue --config "$STATE/kueue.yaml" \
    --feature-gates VisibilityOnDemand=false
  wait_until 60 "$STATE/kueue.pid" "$STATE/kueue.log" Kueue probe_ready "$KUEUE_PROBE_PORT"
fi
if ! probe_ready "$JOBSET_PROBE_PORT"; then
  start_daemon "$STATE/jobset.pid" "$STATE/jobset.log" \
    env KUBECONFIG="$STATE/controllers.kubeconfig" jobset --config "$STATE/jobset.yaml"
  wait_until 60 "$STATE/jobset.pid" "$STATE/jobset.log" JobSet probe_ready "$JOBSET_PROBE_PORT"
fi
python3 "$TOOLS/k8s/objects.py" "$STATE/kubeconfig" --kueue-queues
echo "k8s-up: Kubernetes $(admin_get /version | python3 -c 'import json,sys; print(json.load(sys.stdin)["gitVersion"])') at https://127.0.0.1:$PORT, node $NODE Ready (containerd $(containerd --version | awk '{print $3}')), CoreDNS at $HOST_IP; Kueue and JobSet controllers on 127.0.0.1; kubeconfig $STATE/kubeconfig"
