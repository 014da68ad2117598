#!/usr/bin/env bash
# run_cluster.sh: publish/subscribe or RPC across the nodes of a cluster, measured in one run with
# wamp-bench (pubsub10: 1 publisher, 10 subscribers; rpc100: 100 calls in flight; json and
# msgpack):
#   one       one node without wampscope.cluster: every session on it (the reference)
#   local     node A of a two-node cluster (nats-server, JetStream), every session on A: the cost
#             of having the cluster configured when all traffic is local
#   spread    the same cluster: the publisher and 5 subscribers on A, 5 subscribers on B
#             (wamp-bench --url2): every event crosses to B once, B fans it out to its 5;
#             for rpc, the caller on A and the callee on B: every call crosses both ways
# and prints each rate and p50 latency with the rate's ratio to "one".
#
# Environment:
#   BUILD_DIR     CMake build directory (default <repo>/build), configured as Release
#   ROUTER_CORE   core for the routers (default 0); BENCH_CORE for wamp-bench and nats-server (1)
#   BENCH_SCRATCH scratch directory (default /tmp/wampscope-bench-cluster)
#   SCENARIOS     wamp-bench scenarios: pubsub (default) or rpc
#   SEND_ASAP     true: the cluster nodes run with cluster.send_asap (default false)
# Options after -- go to wamp-bench (e.g. -- --seconds 10).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/lib_cluster.sh"
build=${BUILD_DIR:-$repo/build}
scratch=${BENCH_SCRATCH:-/tmp/wampscope-bench-cluster}
router_core=${ROUTER_CORE:-0}
bench_core=${BENCH_CORE:-1}
scenarios=${SCENARIOS:-pubsub}
send_asap=${SEND_ASAP:-false}
nats_bin=$(command -v nats-server || echo /usr/sbin/nats-server)
if [[ ${1:-} == "--" ]]; then
    shift
fi
bench_args=("$@")
router_bin=$build/router/wampscope
bench_bin=$build/tests/bench/wamp-bench
for b in "$router_bin" "$bench_bin" "$nats_bin"; do
    [[ -x $b ]] || { echo "run_cluster.sh: missing $b" >&2; exit 1; }
done
rm -rf "$scratch"
mkdir -p "$scratch"
pids=()

log() { printf '== %s\n' "$*" >&2; }

stop_all() {
    for p in "${pids[@]}"; do
        kill -TERM "$p" 2>/dev/null || true
    done
    for p in "${pids[@]}"; do # not our children (started from $(...)): poll
        for _ in $(seq 1 50); do
            kill -0 "$p" 2>/dev/null || break
            sleep 0.1
        done
    done
    pids=()
}
nats_pid=""
cleanup() {
    stop_all
    if [[ -n $nats_pid ]]; then
        kill -TERM "$nats_pid" 2>/dev/null || true
        wait "$nats_pid" 2>/dev/null || true
    fi
}
trap cleanup EXIT

start_nats "$scratch" "$bench_core"

config() { # node id, with_cluster (0/1)
    local cluster=""
    if [[ $2 == 1 ]]; then
        cluster="{\"name\": \"bench\", \"send_asap\": $send_asap, \"nats\": {\"servers\": [\"nats://127.0.0.1:$nats_port\"]}}"
    fi
    node_config "$scratch/$1.json" "$1" "$scratch/$1-data" false "$cluster"
}

start_node() { # id -> prints its URL; appends its pid to pids and to $scratch/<id>.pid
    local ports=$scratch/$1.ports
    taskset -c "$router_core" "$router_bin" -c "$scratch/$1.json" --ports-file "$ports" \
        --log-level warn >>"$scratch/$1.log" 2>&1 &
    echo $! >"$scratch/$1.pid"
    for _ in $(seq 1 100); do
        [[ -s $ports ]] && { head -n 1 "$ports"; return 0; }
        sleep 0.1
    done
    log "$1 did not start; see $scratch/$1.log"
    return 1
}

bench() { # name, url, [url2], router pid file
    local name=$1 url=$2 url2=$3 pid
    pid=$(cat "$4")
    local extra=()
    [[ -n $url2 ]] && extra=(--url2 "$url2")
    log "$name: wamp-bench on core $bench_core"
    taskset -c "$bench_core" "$bench_bin" --url "$url" "${extra[@]}" --scenarios "$scenarios" \
        --ser json,msgpack --router-pid "$pid" "${bench_args[@]}" | tee "$scratch/$name.out"
}

config one 0
config node_a 1
config node_b 1

url=$(start_node one)
pids+=("$(cat "$scratch/one.pid")")
bench one "$url" "" "$scratch/one.pid"
stop_all

url_a=$(start_node node_a)
pids+=("$(cat "$scratch/node_a.pid")")
url_b=$(start_node node_b)
pids+=("$(cat "$scratch/node_b.pid")")
sleep 1 # both joined (the log says "nodes (2)")
bench local "$url_a" "" "$scratch/node_a.pid"
bench spread "$url_a" "$url_b" "$scratch/node_a.pid"
cleanup
nats_pid=""

echo
printf "%-8s %-8s %-9s %12s %8s %9s %9s\n" run ser scenario rate ratio p50_us "A cpu%"
for ser in json msgpack; do
    for name in one local spread; do
        awk -v s="$ser" -v n="$name" -v reffile="$scratch/one.out" '
            BEGIN { while ((getline line < reffile) > 0) {
                        k = split(line, w, " "); if (w[1] != "RESULT") continue
                        delete g; for (i = 2; i <= k; i++) { split(w[i], kv, "="); g[kv[1]] = kv[2] }
                        if (g["ser"] == s) ref[g["scenario"]] = g["rate"] } }
            $1=="RESULT" {
              delete f; for (i=2;i<=NF;i++) {split($i,kv,"="); f[kv[1]]=kv[2]}
              r = ref[f["scenario"]]
              if (f["ser"]==s) printf "%-8s %-8s %-9s %12s %8.3f %9s %9s\n", n, s, f["scenario"],
                  f["rate"], (r > 0 ? f["rate"]/r : 0), f["p50_us"], f["router_cpu"]}' \
            "$scratch/$name.out"
    done
done
