#!/usr/bin/env bash
# run_callgrind.sh: instructions the router executes per RPC call (rpc100) and per pub/sub event
# (pubsub10: one publisher, ten subscribers), counted by valgrind's callgrind, which makes them
# deterministic enough to compare two builds on a loaded machine. See README.md in this folder.
#
# Usage: tests/bench/run_callgrind.sh [ROUTER_BINARY]   (default $BUILD_DIR/router/wampscope)
# Environment:
#   BUILD_DIR      Release build without sanitizers (default <repo>/build-rel); its wamp-bench is
#                  the load generator
#   BENCH_SCRATCH  scratch directory (default /tmp/wampscope-callgrind): callgrind outputs, logs
#   SCENARIOS      "rpc pubsub" (default) or one of them
#   SERS           "msgpack json" (default) or one of them
#   CALLGRIND_OPTS more valgrind options, e.g. --cache-sim=yes for the cache model's misses
#                  (I1mr: instruction-cache misses) next to the instructions
#   CONFIG         router config file (default: the embedded default with the flight recorder
#                  off, written to the scratch directory, so that no trace runs)
#   PAYLOAD        wamp-bench --payload: octets of the string argument (default 32)
# Prints one line per scenario and serializer: the router's instructions inclusive in
# rt_session_on_message() (everything a received message causes, the sends included), divided
# by the CALLs handled (rt_dealer_on_call) or by the EVENTs sent (10 per rt_broker_on_publish),
# and `loop=`, the same division of everything the service loop runs (rt_lws_run: reads,
# unmasking and writes included, the part that grows with the payload).
# Everything listens on 127.0.0.1; the routers this script starts are stopped by PID.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$repo/build-rel}
router=${1:-$build/router/wampscope}
bench=$build/tests/bench/wamp-bench
scratch=${BENCH_SCRATCH:-/tmp/wampscope-callgrind}
mkdir -p "$scratch"
config=${CONFIG:-$scratch/default-no-flight-recorder.json}
if [[ -z ${CONFIG:-} ]]; then
    python3 "$here/no_flight_config.py" "$repo/configs/default.json" "$config"
fi

# stop (of `pid`, the router started last), stop_on_exit: stopping it by PID.
. "$here/lib_stop.sh"
stop_on_exit stop

# Calls to FUNC (summed over its callers) and FUNC's inclusive Ir, from a callgrind output.
count() { # file func
    python3 - "$1" "$2" <<'PY'
import re, subprocess, sys
path, fn = sys.argv[1], sys.argv[2]
names, calls, cur = {}, 0, None
with open(path) as f:
    for line in f:
        m = re.match(r"^(c?fn)=\((\d+)\)(?: (.*))?$", line.rstrip("\n"))
        if m:
            if m.group(3):
                names[m.group(2)] = m.group(3)
            if m.group(1) == "cfn":
                cur = names.get(m.group(2))
            continue
        m = re.match(r"^calls=(\d+)", line)
        if m and cur == fn:
            calls += int(m.group(1))
out = subprocess.run(["callgrind_annotate", "--inclusive=yes", "--threshold=100", path],
                     capture_output=True, text=True, check=True).stdout
incl = {}
for line in out.splitlines():
    m = re.match(r"^\s*([\d,]+)\s.*:(rt_session_on_message|rt_lws_run)(?: \[|$)", line)
    if m and m.group(2) not in incl:
        incl[m.group(2)] = int(m.group(1).replace(",", ""))
print(calls, incl.get("rt_session_on_message", 0), incl.get("rt_lws_run", 0))
PY
}

for sc in ${SCENARIOS:-rpc pubsub}; do
    for ser in ${SERS:-msgpack json}; do
        out=$scratch/callgrind.$sc.$ser.out
        rm -f "$scratch/ports"
        (cd "$scratch" && exec valgrind --tool=callgrind ${CALLGRIND_OPTS:-} --callgrind-out-file="$out" "$router" \
            -c "$config" --port 0 --ports-file "$scratch/ports" --log-level warn \
            >"$scratch/router.$sc.$ser.log" 2>&1) &
        pid=$!
        for _ in $(seq 1 150); do
            [[ -s $scratch/ports ]] && break
            sleep 0.2
        done
        if [[ $sc == rpc ]]; then
            load=(--scenarios rpc --inflight 100)
            fn=rt_dealer_on_call
            per=1
        else
            load=(--scenarios pubsub)
            fn=rt_broker_on_publish
            per=10
        fi
        "$bench" --url "$(head -1 "$scratch/ports")" --realm realm1 "${load[@]}" --ser "$ser" \
            --payload "${PAYLOAD:-32}" --seconds 3 --warmup 1 >"$scratch/bench.$sc.$ser.out" 2>&1 || true
        stop
        read -r n incl loop < <(count "$out" "$fn")
        if [[ $n -gt 0 ]]; then
            awk -v sc="$sc" -v ser="$ser" -v n="$n" -v i="$incl" -v l="$loop" -v per="$per" \
                -v pl="${PAYLOAD:-32}" 'BEGIN {
                printf "CALLGRIND scenario=%s ser=%s payload=%s per_%s=%.0f loop=%.0f count=%d\n",
                       sc, ser, pl, per == 1 ? "call" : "event", i / (n * per), l / (n * per), n * per }'
        else
            echo "CALLGRIND scenario=$sc ser=$ser failed (nothing counted; see $scratch)" >&2
        fi
    done
done
