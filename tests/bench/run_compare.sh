#!/usr/bin/env bash
# run_compare.sh: the same wamp-bench scenarios against fox-wamp (a Node.js WAMP router from
# npm) and against wampscope, one after the other on this machine, then a table of both
# routers' figures and the ratios wampscope/fox-wamp. See README.md in this folder.
#
# Usage: tests/bench/run_compare.sh [-- WAMP-BENCH OPTIONS...]   (run from anywhere)
# Environment:
#   BENCH_SCRATCH    scratch directory outside the repo (default /tmp/wampscope-bench):
#                    fox-wamp is npm-installed in $BENCH_SCRATCH/fox; logs and outputs land here
#   BUILD_DIR        CMake build directory (default <repo>/build), configured as Release
#   SKIP_BUILD=1     use the binaries already in BUILD_DIR
#   FOX_VERSION      fox-wamp version to install (default 0.7.28)
#   ROUTER_CORE      CPU the router under test is pinned to (default 0)
#   BENCH_CORE       CPU wamp-bench is pinned to (default 1)
#   WAMPSCOPE_CONFIG config file for wampscope (default: its embedded configuration)
#   BENCH_REALM      realm to use on both routers (default realm1)
#   BENCH_REPEAT     runs per router, alternating fox-wamp and wampscope (default 1)
#   BENCH_STAT       median (default) or best: how the tables combine repeated runs
#   TABLE_ONLY=1     only print the tables again from the outputs of the last run
# Everything listens on 127.0.0.1 only. Only the processes this script starts are stopped, by
# PID. Exit status: 0 when both routers were measured (even if some runs failed), 1 otherwise.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
scratch=${BENCH_SCRATCH:-/tmp/wampscope-bench}
build=${BUILD_DIR:-$repo/build}
fox_version=${FOX_VERSION:-0.7.28}
router_core=${ROUTER_CORE:-0}
bench_core=${BENCH_CORE:-1}
realm=${BENCH_REALM:-realm1}
if [[ ${1:-} == "--" ]]; then
    shift
fi
bench_args=("$@")

mkdir -p "$scratch"
router_pid=""

log() { printf '== %s\n' "$*" >&2; }

stop_router() {
    if [[ -n $router_pid ]] && kill -0 "$router_pid" 2>/dev/null; then
        kill -TERM "$router_pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$router_pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$router_pid" 2>/dev/null; then
            log "router $router_pid did not stop after SIGTERM within 5 s; sending SIGKILL"
            kill -KILL "$router_pid" 2>/dev/null || true
        fi
        wait "$router_pid" 2>/dev/null || true
    fi
    router_pid=""
}
# The EXIT trap cleans up; a signal ends the run (a trap that only cleaned up let the run go on
# with the next configuration after Ctrl-C or kill).
trap stop_router EXIT
trap 'exit 130' INT
trap 'exit 143' TERM

# Waits for the ports file written by the router; prints its first URL.
wait_url() {
    local file=$1
    for _ in $(seq 1 100); do
        if [[ -s $file ]]; then
            head -n 1 "$file"
            return 0
        fi
        if ! kill -0 "$router_pid" 2>/dev/null; then
            return 1
        fi
        sleep 0.1
    done
    return 1
}

table_only=${TABLE_ONLY:-0}
repeat=${BENCH_REPEAT:-1}
status=0

# ---- build ----
if [[ $table_only != 1 && ${SKIP_BUILD:-0} != 1 ]]; then
    log "building wampscope and wamp-bench (Release) in $build"
    cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRT_SANITIZE= >"$scratch/cmake.log"
    cmake --build "$build" --target wampscope wamp-bench -j "$(nproc)" >>"$scratch/cmake.log"
fi
bench_bin=$build/tests/bench/wamp-bench
router_bin=$build/router/wampscope
for b in "$bench_bin" "$router_bin"; do
    if [[ $table_only != 1 && ! -x $b ]]; then
        log "missing $b (see $scratch/cmake.log)"
        exit 1
    fi
done

# ---- fox-wamp ----
fox_dir=$scratch/fox
if [[ $table_only != 1 ]] && { [[ ! -f $fox_dir/node_modules/fox-wamp/package.json ]] ||
    [[ $(node -p "require('$fox_dir/node_modules/fox-wamp/package.json').version") != "$fox_version" ]]; }; then
    log "installing fox-wamp@$fox_version in $fox_dir"
    mkdir -p "$fox_dir"
    if [[ ! -f $fox_dir/package.json ]]; then
        (cd "$fox_dir" && npm init -y >/dev/null)
    fi
    (cd "$fox_dir" && npm install --no-audit --no-fund "fox-wamp@$fox_version" >"$scratch/npm.log" 2>&1)
fi

run_router() { # name, repetition, then the router command line (pinned to ROUTER_CORE)
    local name=$1 rep=$2
    shift 2
    local ports=$scratch/$name.ports
    rm -f "$ports"
    log "starting $name on core $router_core"
    taskset -c "$router_core" "$@" >>"$scratch/$name.log" 2>&1 &
    router_pid=$!
    local url
    if ! url=$(wait_url "$ports"); then
        log "$name did not start; see $scratch/$name.log"
        stop_router
        return 1
    fi
    log "$name (pid $router_pid) at $url; wamp-bench on core $bench_core"
    taskset -c "$bench_core" "$bench_bin" --url "$url" --realm "$realm" \
        --router-pid "$router_pid" "${bench_args[@]}" | tee "$scratch/$name.out.$rep" || true
    if ! kill -0 "$router_pid" 2>/dev/null; then
        log "$name died during the benchmark; see $scratch/$name.log"
    fi
    stop_router
}

wsargs=(--port 0 --ports-file "$scratch/wampscope.ports" --log-level warn)
if [[ -n ${WAMPSCOPE_CONFIG:-} ]]; then
    wsargs+=(-c "$WAMPSCOPE_CONFIG")
fi
if [[ $table_only != 1 ]]; then
    rm -f "$scratch"/fox-wamp.out.* "$scratch"/wampscope.out.* "$scratch"/fox-wamp.log \
        "$scratch"/wampscope.log
    # Alternate the routers so that drift in the machine's background load hits both alike.
    for i in $(seq 1 "$repeat"); do
        run_router fox-wamp "$i" node "$here/fox_server.mjs" "$fox_dir" \
            "$scratch/fox-wamp.ports" || status=1
        run_router wampscope "$i" "$router_bin" "${wsargs[@]}" || status=1
    done
else
    repeat=$(find "$scratch" -maxdepth 1 -name 'wampscope.out.*' | wc -l)
fi

# ---- table: medians over the repetitions of each router's "ok" runs ----
cat "$scratch"/fox-wamp.out.* >"$scratch/fox-wamp.out" 2>/dev/null || true
cat "$scratch"/wampscope.out.* >"$scratch/wampscope.out" 2>/dev/null || true
awk -v foxf="$scratch/fox-wamp.out" -v wsf="$scratch/wampscope.out" -v repeat="$repeat" \
    -v stat="${BENCH_STAT:-median}" '
function load(file, who,    line, n, i, kv, f, p, key, m, name) {
    while ((getline line < file) > 0) {
        if (line !~ /^RESULT /) continue
        n = split(line, f, " ")
        delete kv
        for (i = 2; i <= n; i++) { split(f[i], p, "="); kv[p[1]] = p[2] }
        key = kv["scenario"] " " kv["ser"]
        if (!(key in seen)) { seen[key] = 1; order[++nkeys] = key }
        if (kv["unit"] != "") unit[key] = kv["unit"]
        if (!((who, key) in st) || st[who, key] != "ok") st[who, key] = kv["status"]
        if (kv["status"] != "ok") continue
        split("rate p50_us p99_us router_cpu other_cpu", m, " ")
        for (i = 1; i <= 5; i++) {
            name = m[i]
            if (kv[name] == "" || kv[name] == "na") continue
            cnt[who, key, name]++
            v[who, key, name, cnt[who, key, name]] = kv[name] + 0
        }
    }
    close(file)
}
# The median of the runs (stat=median) or the best run (stat=best: the highest rate, the lowest
# latency; CPU shares and background load stay medians).
function med(who, key, name,    n, i, j, t, a) {
    n = cnt[who, key, name] + 0
    if (n == 0) return ""
    for (i = 1; i <= n; i++) a[i] = v[who, key, name, i]
    for (i = 2; i <= n; i++) { t = a[i]; for (j = i - 1; j >= 1 && a[j] > t; j--) a[j + 1] = a[j]; a[j + 1] = t }
    if (stat == "best" && name == "rate") return a[n]
    if (stat == "best" && (name == "p50_us" || name == "p99_us")) return a[1]
    return n % 2 ? a[(n + 1) / 2] : (a[n / 2] + a[n / 2 + 1]) / 2
}
function cell(x, fmt) { return x == "" ? "n/a" : sprintf(fmt, x) }
function ratio(a, b) { return (a == "" || b == "" || b == 0) ? "n/a" : sprintf("%.2f", a / b) }
function state(who, key) { return (who, key) in st ? st[who, key] : "missing" }
BEGIN {
    load(foxf, "fox"); load(wsf, "ws")
    print ""
    what = repeat > 1 ? (stat == "best" ? ", best of " : ", medians of ") repeat " runs" : ""
    printf "Throughput%s (ratio = wampscope / fox-wamp; per-core = ratio of rate per router CPU share;\n", what
    print "bg% = CPU used by other processes on the machine during the runs, % of one core)"
    printf "%-10s %-8s %-9s %10s %10s %7s %8s %8s %8s %8s %8s\n", "scenario", "ser", "unit", "fox-wamp", "wampscope", "ratio", "fox cpu%", "ws cpu%", "per-core", "fox bg%", "ws bg%"
    for (k = 1; k <= nkeys; k++) {
        key = order[k]; split(key, sk, " ")
        fr = med("fox", key, "rate"); wr = med("ws", key, "rate")
        fc = med("fox", key, "router_cpu"); wc = med("ws", key, "router_cpu")
        pc = (fr == "" || wr == "" || fc == "" || wc == "" || fc == 0 || wc == 0 || fr == 0) ? "n/a" : sprintf("%.2f", (wr / wc) / (fr / fc))
        printf "%-10s %-8s %-9s %10s %10s %7s %8s %8s %8s %8s %8s\n", sk[1], sk[2], unit[key], cell(fr, "%.0f"), cell(wr, "%.0f"), ratio(wr, fr), cell(fc, "%.1f"), cell(wc, "%.1f"), pc, cell(med("fox", key, "other_cpu"), "%.0f"), cell(med("ws", key, "other_cpu"), "%.0f")
    }
    print ""
    print "Latency in microseconds (ratio = wampscope / fox-wamp; lower is better)"
    printf "%-10s %-8s %10s %10s %8s %10s %10s %8s\n", "scenario", "ser", "fox p50", "ws p50", "ratio", "fox p99", "ws p99", "ratio"
    for (k = 1; k <= nkeys; k++) {
        key = order[k]; split(key, sk, " ")
        a = med("fox", key, "p50_us"); b = med("ws", key, "p50_us"); c = med("fox", key, "p99_us"); d = med("ws", key, "p99_us")
        printf "%-10s %-8s %10s %10s %8s %10s %10s %8s\n", sk[1], sk[2], cell(a, "%.1f"), cell(b, "%.1f"), ratio(b, a), cell(c, "%.1f"), cell(d, "%.1f"), ratio(d, c)
    }
    print ""
    bg = 0
    for (k = 1; k <= nkeys; k++) {
        a = med("fox", order[k], "other_cpu"); b = med("ws", order[k], "other_cpu")
        if (a != "" && a > bg) bg = a
        if (b != "" && b > bg) bg = b
    }
    if (bg > 25)
        printf "warning: other processes used up to %.0f%% of a core during these runs: the figures are disturbed; rerun on a quiet machine\n", bg
    for (k = 1; k <= nkeys; k++) {
        key = order[k]
        if (state("fox", key) != "ok" || state("ws", key) != "ok")
            printf "note: %s: fox-wamp %s, wampscope %s\n", key, state("fox", key), state("ws", key)
    }
}'
log "raw outputs: $scratch/fox-wamp.out $scratch/wampscope.out; router logs: $scratch/*.log"
exit $status
