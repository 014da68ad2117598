#!/usr/bin/env bash
# run_soak.sh: a long mixed load against one wampscope process, checking that nothing fails and
# that memory stays flat. A measuring tool, never a pass/fail test in `make test`.
#
# For SOAK_SECONDS (default 600) the router (Release build, BUILD_DIR, default <repo>/build-rel)
# carries at once:
#   - wamp-bench rounds of RPC (100 in flight) and pub/sub (10 subscribers), both serializers,
#     back to back (each round: fresh sessions, 20 s);
#   - a trace capturing everything (default limits: 100,000 records, 64 MiB: it fills in the
#     first seconds, then evicts, so its memory is part of the steady state), started with
#     TRACE_OPTIONS (trace_options JSON, default none: in memory; e.g. '{"persist": true}', whose
#     files go to the scratch directory's wampscope-data/ and are deleted at the end);
#   - churn: sessions joining, subscribing, calling, publishing and leaving, several per second
#     (soak_churn.py, python3-autobahn, alternating serializers).
# Every 10 s it samples the router's RSS (VmRSS). At the end it prints the samples, the error
# counts of every wamp-bench round and of the churn client, and the verdict: zero errors, and the
# RSS floor at the end within 10% of the floor after warm-up: the least sample of the last
# WINDOW_SECONDS (default 60) against the least of the WINDOW_SECONDS after WARMUP_SECONDS
# (default 60). The floor, not one sample: the trace's ring grows in the RPC half of each round
# and shrinks in the pub/sub half (its records are smaller), so single samples move by half; what
# is leaked or kept raises the floor. Exit status 0 when both hold, 1 otherwise. Everything listens on 127.0.0.1; only processes this
# script started are stopped, by PID.
#
# CLUSTER=1 runs it on a cluster of two nodes instead (a nats-server with JetStream on a free
# port, node_a and node_b, the flight recorder on each): the bench rounds put the callee and every
# second subscriber on node_b (wamp-bench --url2), a churn client runs on each node (its own
# URIs), the trace runs on node_a, and the verdict holds for each node's RSS.
#
# Environment: SOAK_SECONDS, WARMUP_SECONDS, WINDOW_SECONDS, TRACE_OPTIONS, CLUSTER, BUILD_DIR, BENCH_SCRATCH (default
# /tmp/wampscope-soak), PYTHON (default /usr/bin/python3).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
. "$here/lib_cluster.sh"
build=${BUILD_DIR:-$repo/build-rel}
scratch=${BENCH_SCRATCH:-/tmp/wampscope-soak}
soak=${SOAK_SECONDS:-600}
warmup=${WARMUP_SECONDS:-60}
window=${WINDOW_SECONDS:-60}
python=${PYTHON:-/usr/bin/python3}
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd) # (the router runs in it)
rm -rf "$scratch"/bench.*.out "$scratch"/rss.csv "$scratch"/churn.*.out "$scratch/wampscope-data"

if [[ ! -x $build/router/wampscope || ! -x $build/tests/bench/wamp-bench ]]; then
    cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build" -j"$(nproc)" --target wampscope wamp-bench >/dev/null
fi

pids=()
nats_pid=""
cleanup() {
    for pid in "${pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    wait "${pids[@]}" 2>/dev/null || true
    if [[ -n $nats_pid ]]; then # (after the nodes: they leave the cluster cleanly)
        kill -TERM "$nats_pid" 2>/dev/null || true
        wait "$nats_pid" 2>/dev/null || true
    fi
    rm -rf "$scratch/wampscope-data" "$scratch/js" "$scratch"/node_*-data
}
trap cleanup EXIT

# Starts a router in the scratch directory (a name, then its arguments); appends it to routers,
# its URL to urls.
routers=()
urls=()
start_router() {
    local name=$1 ports=$scratch/$1.ports
    shift
    rm -f "$ports"
    (cd "$scratch" && exec "$build/router/wampscope" "$@" --ports-file "$ports" --log-level warn \
        >"$scratch/$name.log" 2>&1) &
    routers+=("$!")
    pids+=("$!")
    for _ in $(seq 1 100); do
        [[ -s $ports ]] && break
        sleep 0.1
    done
    urls+=("$(grep -m1 '^ws://' "$ports")")
}

if [[ ${CLUSTER:-0} == 1 ]]; then
    start_nats "$scratch"
    for node in node_a node_b; do
        node_config "$scratch/$node.json" "$node" "$scratch/$node-data" true \
            "{\"name\": \"soak\", \"nats\": {\"servers\": [\"nats://127.0.0.1:$nats_port\"]}}"
        start_router "$node" -c "$scratch/$node.json"
    done
    sleep 2 # both joined
else
    start_router router --port 0
fi
"$python" "$here/trace_ctl.py" --url "${urls[0]}" start soak ${TRACE_OPTIONS:+--options "$TRACE_OPTIONS"} \
    >/dev/null

start=$(date +%s)
end=$((start + soak))

( # load rounds
    round=0
    while [[ $(date +%s) -lt $end ]]; do
        round=$((round + 1))
        "$build/tests/bench/wamp-bench" --url "${urls[0]}" ${urls[1]:+--url2 "${urls[1]}"} \
            --scenarios rpc,pubsub --inflight 100 --seconds 8 --warmup 1 \
            >"$scratch/bench.$round.out" 2>&1 || true
    done
) &
pids+=("$!")

churns=()
for i in "${!urls[@]}"; do
    "$python" "$here/soak_churn.py" --url "${urls[$i]}" --until "$end" --prefix "soak.churn$i" \
        >"$scratch/churn.$i.out" 2>&1 &
    churns+=("$!")
    pids+=("$!")
done

echo "t_s$(printf ',rss_kib_%s' "${!routers[@]}")" >"$scratch/rss.csv"
while [[ $(date +%s) -lt $end ]]; do
    line=$(($(date +%s) - start))
    for r in "${routers[@]}"; do
        kill -0 "$r" 2>/dev/null || { echo "soak: a router died" >&2; exit 1; }
        line+=,$(awk '/^VmRSS:/ {print $2}' "/proc/$r/status")
    done
    echo "$line" >>"$scratch/rss.csv"
    sleep 10
done
wait "${churns[@]}" || true
trace=$("$python" "$here/trace_ctl.py" --url "${urls[0]}" get soak)

bench_errors=$(cat "$scratch"/bench.*.out | grep -oE 'errors=[0-9]+|mismatches=[0-9]+|invalid=[0-9]+' |
    awk -F= '{s += $2} END {print s + 0}')
bench_bad=$(cat "$scratch"/bench.*.out | grep -E '^RESULT' | grep -vc 'status=ok' || true)
runs=$(cat "$scratch"/bench.*.out | grep -c '^RESULT' || true)
churn_lines=$(cat "$scratch"/churn.*.out | grep '^CHURN' || true)
churn_errors=$(grep -oE 'errors=[0-9]+' <<<"$churn_lines" | awk -F= '{s += $2} END {print s + 0}')
if [[ $(grep -c '^CHURN' <<<"$churn_lines") -ne ${#urls[@]} ]]; then
    churn_errors=missing # a churn client did not finish
fi
# The least sample of column col (2: the first router's) in [from, to) seconds.
floor_of() {
    awk -F, -v c="$1" -v a="$2" -v b="$3" \
        'NR > 1 && $1 >= a && $1 < b && (m == "" || $c + 0 < m) {m = $c + 0} END {print m}' \
        "$scratch/rss.csv"
}
last_t=$(tail -1 "$scratch/rss.csv" | cut -d, -f1)

echo "RSS samples (s, KiB of each router): $(tail -n +2 "$scratch/rss.csv" | tr '\n' ' ')"
echo "wamp-bench: $runs runs, $bench_bad not ok, errors+mismatches+invalid=$bench_errors"
echo "${churn_lines:-CHURN missing}"
echo "trace: $trace"
ok=1
[[ $bench_bad -eq 0 && $bench_errors -eq 0 && $churn_errors == 0 ]] || ok=0
for i in "${!routers[@]}"; do
    rss_warm=$(floor_of $((i + 2)) "$warmup" $((warmup + window)))
    rss_end=$(floor_of $((i + 2)) $((last_t - window + 1)) $((last_t + 1)))
    ratio=$(awk -v a="$rss_end" -v b="$rss_warm" 'BEGIN {printf "%.3f", a / b}')
    awk -v r="$ratio" 'BEGIN {exit !(r <= 1.10)}' || ok=0
    echo "SOAK router=$i seconds=$soak rss_floor_after_warmup_kib=$rss_warm" \
        "rss_floor_end_kib=$rss_end ratio=$ratio bench_runs=$runs bench_not_ok=$bench_bad" \
        "bench_errors=$bench_errors churn_errors=$churn_errors"
done
[[ $ok == 1 ]]
