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
# Environment: SOAK_SECONDS, WARMUP_SECONDS, WINDOW_SECONDS, TRACE_OPTIONS, BUILD_DIR, BENCH_SCRATCH (default
# /tmp/wampscope-soak), PYTHON (default /usr/bin/python3).
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$repo/build-rel}
scratch=${BENCH_SCRATCH:-/tmp/wampscope-soak}
soak=${SOAK_SECONDS:-600}
warmup=${WARMUP_SECONDS:-60}
window=${WINDOW_SECONDS:-60}
python=${PYTHON:-/usr/bin/python3}
mkdir -p "$scratch"
scratch=$(cd "$scratch" && pwd) # (the router runs in it)
rm -rf "$scratch"/bench.*.out "$scratch"/rss.csv "$scratch"/churn.out "$scratch/wampscope-data"

if [[ ! -x $build/router/wampscope || ! -x $build/tests/bench/wamp-bench ]]; then
    cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release >/dev/null
    cmake --build "$build" -j"$(nproc)" --target wampscope wamp-bench >/dev/null
fi

pids=()
cleanup() {
    for pid in "${pids[@]}"; do
        kill -TERM "$pid" 2>/dev/null || true
    done
    wait 2>/dev/null || true
    rm -rf "$scratch/wampscope-data"
}
trap cleanup EXIT

ports=$scratch/ports
rm -f "$ports"
(cd "$scratch" && exec "$build/router/wampscope" --port 0 --ports-file "$ports" --log-level warn \
    >"$scratch/router.log" 2>&1) &
router=$!
pids+=("$router")
for _ in $(seq 1 100); do
    [[ -s $ports ]] && break
    sleep 0.1
done
url=$(grep -m1 '^ws://' "$ports")
"$python" "$here/trace_ctl.py" --url "$url" start soak ${TRACE_OPTIONS:+--options "$TRACE_OPTIONS"} \
    >/dev/null

start=$(date +%s)
end=$((start + soak))

( # load rounds
    round=0
    while [[ $(date +%s) -lt $end ]]; do
        round=$((round + 1))
        "$build/tests/bench/wamp-bench" --url "$url" --scenarios rpc,pubsub --inflight 100 \
            --seconds 8 --warmup 1 >"$scratch/bench.$round.out" 2>&1 || true
    done
) &
pids+=("$!")

"$python" "$here/soak_churn.py" --url "$url" --until "$end" >"$scratch/churn.out" 2>&1 &
churn=$!
pids+=("$churn")

echo "t_s,rss_kib" >"$scratch/rss.csv"
while [[ $(date +%s) -lt $end ]]; do
    kill -0 "$router" 2>/dev/null || { echo "soak: the router died" >&2; exit 1; }
    rss=$(awk '/^VmRSS:/ {print $2}' "/proc/$router/status")
    echo "$(($(date +%s) - start)),$rss" >>"$scratch/rss.csv"
    sleep 10
done
wait "$churn" || true
trace=$("$python" "$here/trace_ctl.py" --url "$url" get soak)

bench_errors=$(cat "$scratch"/bench.*.out | grep -oE 'errors=[0-9]+|mismatches=[0-9]+|invalid=[0-9]+' |
    awk -F= '{s += $2} END {print s + 0}')
bench_bad=$(cat "$scratch"/bench.*.out | grep -E '^RESULT' | grep -vc 'status=ok' || true)
runs=$(cat "$scratch"/bench.*.out | grep -c '^RESULT' || true)
churn_line=$(grep '^CHURN' "$scratch/churn.out" || echo "CHURN missing")
churn_errors=$(sed -nE 's/.* errors=([0-9]+).*/\1/p' <<<"$churn_line")
# The least sample in [from, to) seconds.
floor_of() {
    awk -F, -v a="$1" -v b="$2" 'NR > 1 && $1 >= a && $1 < b && (m == "" || $2 < m) {m = $2}
        END {print m}' "$scratch/rss.csv"
}
last_t=$(tail -1 "$scratch/rss.csv" | cut -d, -f1)
rss_warm=$(floor_of "$warmup" $((warmup + window)))
rss_end=$(floor_of $((last_t - window + 1)) $((last_t + 1)))

echo "RSS samples (s, KiB): $(tail -n +2 "$scratch/rss.csv" | tr '\n' ' ')"
echo "wamp-bench: $runs runs, $bench_bad not ok, errors+mismatches+invalid=$bench_errors"
echo "$churn_line"
echo "trace: $trace"
ratio=$(awk -v a="$rss_end" -v b="$rss_warm" 'BEGIN {printf "%.3f", a / b}')
echo "SOAK seconds=$soak rss_floor_after_warmup_kib=$rss_warm rss_floor_end_kib=$rss_end ratio=$ratio" \
    "bench_runs=$runs bench_not_ok=$bench_bad bench_errors=$bench_errors churn_errors=${churn_errors:-?}"
[[ $bench_bad -eq 0 && $bench_errors -eq 0 && ${churn_errors:-1} -eq 0 ]] &&
    awk -v r="$ratio" 'BEGIN {exit !(r <= 1.10)}'
