#!/usr/bin/env bash
# run_perf_share.sh: where the router's time goes over sockets, the tracing's part of it. The
# router runs pinned to one core under wamp-bench on the other; `perf record -e cpu-clock`
# samples the router process (every thread) for a few seconds of the load. Prints one line per
# run: the rate, the router's sampled time per message (ns, per call or per event delivered),
# the share of it in the tracing's functions (the recorder, the hub, the store, the persisted
# trace's encoder and its writer thread's user code: names matching TRACE_PATTERN), the share of
# the threads other than the service thread (a persisted trace's writer), and the tracing's
# functions that take most. Unlike callgrind's instructions this counts cache misses and the
# kernel, and unlike the rates' ratios it compares builds by a share that the machine's drift
# moves little: alternate the builds, three runs each. See README.md in this folder.
#
# Usage: tests/bench/run_perf_share.sh [ROUTER_BINARY]...   (default $BUILD_DIR/router/wampscope;
#        several binaries: measured in turn, each round alternating them)
# Environment:
#   BUILD_DIR      Release build (default <repo>/build-rel); its wamp-bench is the load generator
#   BENCH_SCRATCH  scratch directory (default /tmp/wampscope-perf): perf data, logs
#   TRACE          shipped (default: the embedded default config, flight recorder on), mem (the
#                  flight recorder off and a trace of everything started in memory) or persist
#                  (the same, persisted)
#   SCENARIO       rpc (default: rpc100) or pubsub (pubsub10)
#   SER            json (default) or msgpack
#   ROUNDS         runs of each binary (default 3)
#   SECONDS_LOAD   seconds of load sampled (default 6; wamp-bench runs 2 s longer)
#   TRACE_PATTERN  extended regex of the functions counted as tracing
#   PYTHON         Python with python3-autobahn, for TRACE=mem/persist (default /usr/bin/python3)
# Needs perf (linux-perf) allowed to sample this user's processes (kernel.perf_event_paranoid
# <= 2). Everything listens on 127.0.0.1; the routers this script starts are stopped by PID.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
build=${BUILD_DIR:-$repo/build-rel}
bench=$build/tests/bench/wamp-bench
scratch=${BENCH_SCRATCH:-/tmp/wampscope-perf}
trace=${TRACE:-shipped}
scenario=${SCENARIO:-rpc}
ser=${SER:-json}
rounds=${ROUNDS:-3}
secs=${SECONDS_LOAD:-6}
python=${PYTHON:-/usr/bin/python3}
pattern=${TRACE_PATTERN:-'trace|repeat|flush_pending|action_uri|steady|obs_|persist|crc32c|append_rec|extend_run|writer_main|common_end'}
routers=("$@")
if [[ ${#routers[@]} -eq 0 ]]; then
    routers=("$build/router/wampscope")
fi
command -v perf >/dev/null || { echo "run_perf_share.sh: perf not found" >&2 && exit 1; }
mkdir -p "$scratch"
no_flight=$scratch/default-no-flight-recorder.json
"$python" "$here/no_flight_config.py" "$repo/configs/default.json" "$no_flight"

# stop (of `pid`, the router started last), stop_on_exit: stopping it by PID.
. "$here/lib_stop.sh"
stop_on_exit stop

# The summary of one run: rate from wamp-bench's RESULT line, samples from perf.
summary() { # name perf.data bench.out
    python3 - "$1" "$2" "$3" "$secs" "$pattern" <<'PY'
import collections, re, subprocess, sys
name, data, out, secs, pattern = sys.argv[1], sys.argv[2], sys.argv[3], float(sys.argv[4]), sys.argv[5]
m = re.search(r"\brate=([0-9.]+)", open(out).read())
if not m:
    print(f"PERF {name} failed (no RESULT line)")
    sys.exit(0)
rate = float(m.group(1))
rep = subprocess.run(["perf", "report", "-i", data, "--no-children", "--sort", "sym", "-F",
                      "sample,sym", "--stdio"], capture_output=True, text=True).stdout
tids = subprocess.run(["perf", "script", "-i", data, "-F", "tid"], capture_output=True,
                      text=True).stdout.split()
freq = 4000.0
total, tr = 0, collections.Counter()
for line in rep.splitlines():
    r = re.match(r"\s*(\d+)\s+\[(.)\]\s+(.*)", line)
    if not r:
        continue
    n, sym = int(r.group(1)), r.group(3).strip()
    total += n
    if r.group(2) == "." and re.search(pattern, sym):
        tr[sym] += n
per = lambda n: n / freq / (rate * secs) * 1e9  # ns per message
counts = collections.Counter(tids)
main = counts.most_common(1)[0][1] if counts else 0
other = 100.0 * (len(tids) - main) / len(tids) if tids else 0.0
top = ", ".join(f"{s} {per(n):.1f}" for s, n in tr.most_common(5))
print(f"PERF {name} rate={rate:.0f} ns_per_msg={per(total):.1f} tracing={per(sum(tr.values())):.1f}"
      f" tracing_share={100.0 * sum(tr.values()) / total:.1f}% other_threads={other:.1f}% top: {top}")
PY
}

for round in $(seq 1 "$rounds"); do
    for i in "${!routers[@]}"; do
        router=${routers[$i]}
        name="r$i.$round"
        ports=$scratch/ports
        rm -f "$ports"
        rm -rf "$scratch/wampscope-data"
        config=$no_flight
        [[ $trace == shipped ]] && config=$repo/configs/default.json
        (cd "$scratch" && exec taskset -c 0 "$router" -c "$config" --port 0 --ports-file "$ports" \
            --log-level warn) >"$scratch/router.$name.log" 2>&1 &
        pid=$!
        for _ in $(seq 1 100); do
            [[ -s $ports ]] && break
            sleep 0.1
        done
        url=$(head -1 "$ports")
        case $trace in
        mem) taskset -c 1 "$python" "$here/trace_ctl.py" --url "$url" start all >/dev/null ;;
        persist)
            taskset -c 1 "$python" "$here/trace_ctl.py" --url "$url" start all \
                --options '{"persist": true}' >/dev/null
            ;;
        esac
        load=(--scenarios "$scenario")
        [[ $scenario == rpc ]] && load+=(--inflight 100)
        taskset -c 1 "$bench" --url "$url" --realm realm1 "${load[@]}" --ser "$ser" \
            --seconds $((secs + 2)) --warmup 1 --router-pid "$pid" >"$scratch/bench.$name.out" 2>&1 &
        bpid=$!
        sleep 2
        perf record -q -e cpu-clock -F 4000 -p "$pid" -o "$scratch/perf.$name.data" -- sleep "$secs" \
            >/dev/null 2>&1 || true
        wait "$bpid" || true
        stop
        echo "# $name: $router"
        summary "$name" "$scratch/perf.$name.data" "$scratch/bench.$name.out"
    done
done
