# Shared by testbed/up and testbed/down (sourced, not run).
# shellcheck shell=bash
# shellcheck disable=SC2034 # variables used by the scripts that source this file
here="${here:-$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)}"
root="$(dirname "$here")"
# shellcheck source=versions.env
. "$here/versions.env"
bin="${NRL_TESTBED_BIN:-$root/target/testbed}"
runs="$bin/run"

log() { printf 'testbed: %s\n' "$*" >&2; }
die() { log "$*"; exit 1; }

# kuberay-v1.5.1 -> a name kwokctl accepts (lower case, digits, dashes).
default_name() { printf 'kuberay-%s' "$1" | tr '.' '-'; }
state_dir() { printf '%s/%s' "$runs" "$1"; }
cluster_dir() { printf '%s/kwok/clusters/%s' "$1" "$2"; }

print_env() { cat "$1/env"; }

# The last lines of each log, then exit 1: which component, and why.
component_failed() {
    local what="$1" f
    shift
    log "$what failed to start"
    for f in "$@"; do
        if [ -d "$f" ]; then
            for g in "$f"/*.log; do [ -f "$g" ] && { log "--- last lines of $g"; tail -n 15 "$g" >&2; }; done
        elif [ -f "$f" ]; then
            log "--- last lines of $f"
            tail -n 30 "$f" >&2
        fi
    done
    exit 1
}

# wait_for WHAT SECONDS CMD…: runs CMD every 200 ms until it succeeds or SECONDS pass.
wait_for() {
    local what="$1" limit="$2" deadline
    shift 2
    deadline=$((SECONDS + limit))
    until "$@" >/dev/null 2>&1; do
        if [ "$SECONDS" -ge "$deadline" ]; then
            log "gave up waiting for $what after $limit s"
            return 1
        fi
        sleep 0.2
    done
}

free_port() {
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

probe_ok() { python3 -c 'import sys, urllib.request; urllib.request.urlopen(sys.argv[1], timeout=2)' "$1"; }

# start_daemon NAME STATE CMD…: runs CMD in a session of its own (so it outlives this script
# and a test runner's process group), logs to STATE/logs/NAME.log, pid in STATE/pids/NAME.pid
# (written by the process itself before it execs, so it is CMD's own pid).
start_daemon() {
    local name="$1" state="$2"
    shift 2
    setsid bash -c 'echo $$ >"$0"; exec "$@"' "$state/pids/$name.pid" "$@" \
        </dev/null >"$state/logs/$name.log" 2>&1 &
    wait_for "$name's pid file" 10 test -s "$state/pids/$name.pid"
}

# Whether the pid in FILE is a live process (not a zombie).
alive() {
    local pid
    pid="$(cat "$1" 2>/dev/null)" || return 1
    [ -n "$pid" ] && [ -d "/proc/$pid" ] && ! grep -q '^State:.*Z' "/proc/$pid/status" 2>/dev/null
}

# stop_pid FILE: SIGTERM, up to 10 s, then SIGKILL; then remove FILE.
stop_pid() {
    local file="$1" pid i
    pid="$(cat "$file" 2>/dev/null)" || return 0
    if [ -n "$pid" ] && alive "$file"; then
        kill -TERM "$pid" 2>/dev/null || true
        for i in $(seq 50); do alive "$file" || break; sleep 0.2; done
        if alive "$file"; then kill -KILL "$pid" 2>/dev/null || true; fi
    fi
    rm -f "$file"
}

healthy() {
    local state="$1" f
    for f in "$state"/pids/*.pid; do alive "$f" || return 1; done
    for f in "$state"/kwok/clusters/*/pids/*.pid; do alive "$f" || return 1; done
    # shellcheck disable=SC1091
    (. "$state/env" && "$bin/kube-$K8S_VERSION/kubectl" --request-timeout=5s get --raw /readyz >/dev/null 2>&1)
}

# N Node objects that kwok manages (annotation kwok.x-k8s.io/node=fake): 8 GPUs, 96 CPUs.
make_nodes() {
    local n="$1" i
    for ((i = 0; i < n; i++)); do
        cat <<NODE
---
apiVersion: v1
kind: Node
metadata:
  name: gpu-node-$i
  annotations:
    kwok.x-k8s.io/node: fake
    node.alpha.kubernetes.io/ttl: "0"
  labels:
    kubernetes.io/hostname: gpu-node-$i
    kubernetes.io/os: linux
    kubernetes.io/arch: amd64
    type: kwok
    nvidia.com/gpu.product: NVIDIA-H100-80GB-HBM3
    nvidia.com/gpu.count: "8"
status:
  allocatable: {cpu: "96", memory: 1Ti, ephemeral-storage: 1Ti, nvidia.com/gpu: "8", pods: "110"}
  capacity: {cpu: "96", memory: 1Ti, ephemeral-storage: 1Ti, nvidia.com/gpu: "8", pods: "110"}
NODE
    done
}
