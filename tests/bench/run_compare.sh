#!/usr/bin/env bash
# run_compare.sh: the same wamp-bench scenarios against Bonefish (a C++ WAMP router, built from
# source: BONEFISH=path), optionally fox-wamp (a Node.js router from npm), and wampscope in four
# configurations, one after the other on this machine; then one table of every router's figures
# and the issue's targets as ratios measured in this run. See README.md in this folder.
#
#   bonefish   BONEFISH=/path/to/bonefish (the table says when it is absent)
#   baseline   BASELINE_WAMPSCOPE=/path/to/wampscope: another build of wampscope (an older commit),
#              run as shipped (its embedded default config); the table gives shipped / baseline
#   fox        fox-wamp@FOX_VERSION, npm-installed in the scratch directory (only if in ROUTERS)
#   shipped    wampscope, the embedded default config (flight recorder on, read from the wire
#              capture)
#   off        wampscope, flight recorder off (the default config with flight_recorder false)
#   mem        "off" + one trace capturing everything in memory (default trace options)
#   persist    "off" + one trace capturing everything, persisted ({"persist": true})
#   permsg     the default config with the flight recorder recorded per message
#              ("from_wire": false), as shipped before it was read from the wire capture
#
# Usage: tests/bench/run_compare.sh [-- WAMP-BENCH OPTIONS...]   (run from anywhere)
# Environment:
#   BONEFISH         the bonefish daemon binary (run as `bonefish -r REALM -w PORT`)
#   BASELINE_WAMPSCOPE  the wampscope binary of the "baseline" router (absent: no such runs)
#   ROUTERS          what to run, in this order each round (default "bonefish baseline shipped
#                    off mem persist permsg"; add "fox" for fox-wamp)
#   PAYLOADS         payload sizes in bytes, one set of runs per size (default 32; the issue's
#                    sizes: "32 1024 16384 65536"); the size is passed as wamp-bench --payload
#   BENCH_SCRATCH    scratch directory outside the repo (default /tmp/wampscope-bench):
#                    outputs, logs, fox-wamp's npm install, persisted traces
#   BUILD_DIR        CMake build directory (default <repo>/build), configured as Release
#   SKIP_BUILD=1     use the binaries already in BUILD_DIR
#   FOX_VERSION      fox-wamp version to install (default 0.7.28)
#   ROUTER_CORE      CPU the router under test is pinned to (default 0)
#   BENCH_CORE       CPU wamp-bench (and the trace client) is pinned to (default 1)
#   BENCH_REALM      realm to use on every router (default realm1)
#   BENCH_REPEAT     rounds (default 1); each round runs every router once, alternating them
#   BENCH_STAT       median (default) or best: how the table combines repeated runs
#   PYTHON           Python with python3-autobahn, for the traces of mem/persist
#                    (default /usr/bin/python3)
#   TABLE_ONLY=1     only print the table again from the outputs of the last run
# With a 32-octet run and larger PAYLOADS, a last table gives the router's CPU cycles per payload
# octet it moves (CPU per message at the size minus at 32 octets, over the octets) next to a
# plain memcpy's (bench-memcpy, pinned to the router's core, after the rounds).
# Everything listens on 127.0.0.1 only. Only the processes this script starts are stopped, by
# PID. Exit status: 0 when every router was measured (even if some runs failed), 1 otherwise.
set -euo pipefail

here=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
repo=$(cd "$here/../.." && pwd)
scratch=${BENCH_SCRATCH:-/tmp/wampscope-bench}
build=$(realpath -m "${BUILD_DIR:-$repo/build}")
fox_version=${FOX_VERSION:-0.7.28}
router_core=${ROUTER_CORE:-0}
bench_core=${BENCH_CORE:-1}
realm=${BENCH_REALM:-realm1}
routers=${ROUTERS:-bonefish baseline shipped off mem persist permsg}
payloads=${PAYLOADS:-32}
python=${PYTHON:-/usr/bin/python3}
bonefish=${BONEFISH:+$(realpath -m "$BONEFISH")}
baseline=${BASELINE_WAMPSCOPE:+$(realpath -m "$BASELINE_WAMPSCOPE")}
if [[ ${1:-} == "--" ]]; then
    shift
fi
bench_args=("$@")

mkdir -p "$scratch"
router_pid=""

log() { printf '== %s\n' "$*" >&2; }

# stop_pid, stop_on_exit: stopping what this script started, by PID.
. "$here/lib_stop.sh"
# shellcheck disable=SC2317 # called through the trap
stop_router() {
    stop_pid "$router_pid"
    router_pid=""
}
stop_on_exit stop_router

# Waits for a ports file (wampscope, fox-wamp) or a listening port (bonefish); prints the URL.
wait_url() {
    local file=$1 port=${2:-}
    for _ in $(seq 1 100); do
        if [[ -n $port ]]; then
            if (exec 3<>"/dev/tcp/127.0.0.1/$port") 2>/dev/null; then
                echo "ws://127.0.0.1:$port/"
                return 0
            fi
        elif [[ -s $file ]]; then
            grep -m1 '^ws://' "$file"
            return 0
        fi
        if ! kill -0 "$router_pid" 2>/dev/null; then
            return 1
        fi
        sleep 0.1
    done
    return 1
}
free_port() {
    "$python" -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1])'
}

table_only=${TABLE_ONLY:-0}
repeat=${BENCH_REPEAT:-1}
status=0

# ---- build ----
if [[ $table_only != 1 && ${SKIP_BUILD:-0} != 1 ]]; then
    log "building wampscope and wamp-bench (Release) in $build"
    cmake -S "$repo" -B "$build" -DCMAKE_BUILD_TYPE=Release -DRT_SANITIZE= >"$scratch/cmake.log"
    cmake --build "$build" --target wampscope wamp-bench bench-memcpy -j "$(nproc)" >>"$scratch/cmake.log"
fi
bench_bin=$build/tests/bench/wamp-bench
router_bin=$build/router/wampscope
for b in "$bench_bin" "$router_bin"; do
    if [[ $table_only != 1 && ! -x $b ]]; then
        log "missing $b (see $scratch/cmake.log)"
        exit 1
    fi
done
read -r -a router_list <<<"$routers"
if [[ -z $bonefish || ! -x $bonefish ]]; then
    if [[ " $routers " == *" bonefish "* && $table_only != 1 ]]; then
        log "BONEFISH not set or not executable: no Bonefish runs (the table says so)"
    fi
    router_list=("${router_list[@]/bonefish/}")
fi
if [[ -z $baseline || ! -x $baseline ]]; then
    if [[ " $routers " == *" baseline "* && $table_only != 1 && -n $baseline ]]; then
        log "BASELINE_WAMPSCOPE is not executable: no baseline runs"
    fi
    router_list=("${router_list[@]/baseline/}")
fi

# ---- fox-wamp ----
fox_dir=$scratch/fox
if [[ $table_only != 1 && " ${router_list[*]} " == *" fox "* ]] &&
    { [[ ! -f $fox_dir/node_modules/fox-wamp/package.json ]] ||
        [[ $(node -p "require('$fox_dir/node_modules/fox-wamp/package.json').version") != "$fox_version" ]]; }; then
    log "installing fox-wamp@$fox_version in $fox_dir"
    mkdir -p "$fox_dir"
    if [[ ! -f $fox_dir/package.json ]]; then
        (cd "$fox_dir" && npm init -y >/dev/null)
    fi
    (cd "$fox_dir" && npm install --no-audit --no-fund "fox-wamp@$fox_version" >"$scratch/npm.log" 2>&1)
fi

# The embedded default config with the flight recorder off (off, mem, persist), and with it
# recorded per message (permsg).
no_flight=$scratch/default-no-flight-recorder.json
permsg_cfg=$scratch/default-per-message.json

ctl() { # trace_ctl.py against the running wampscope at $1, pinned to BENCH_CORE
    local url=$1
    shift
    taskset -c "$bench_core" "$python" "$here/trace_ctl.py" --url "$url" "$@"
}

# One run of router $1 in round $2: a fresh process pinned to ROUTER_CORE, wamp-bench pinned to
# BENCH_CORE once per payload size, the process stopped. Output: $scratch/NAME.out.ROUND.
run_router() {
    local name=$1 rep=$2 ports=$scratch/$1.ports port="" url cmd
    rm -f "$ports"
    rm -rf "$scratch/wampscope-data" # persisted traces of an earlier run
    case $name in
    bonefish)
        port=$(free_port)
        cmd=("$bonefish" -r "$realm" -w "$port")
        ;;
    fox) cmd=(node "$here/fox_server.mjs" "$fox_dir" "$ports") ;;
    shipped) cmd=("$router_bin" --port 0 --ports-file "$ports" --log-level warn) ;;
    baseline) cmd=("$baseline" --port 0 --ports-file "$ports" --log-level warn) ;;
    off | mem | persist)
        cmd=("$router_bin" -c "$no_flight" --port 0 --ports-file "$ports" --log-level warn)
        ;;
    permsg) cmd=("$router_bin" -c "$permsg_cfg" --port 0 --ports-file "$ports" --log-level warn) ;;
    *)
        log "unknown router $name (bonefish, baseline, fox, shipped, off, mem, persist, permsg)"
        return 1
        ;;
    esac
    log "starting $name on core $router_core"
    (cd "$scratch" && exec taskset -c "$router_core" "${cmd[@]}") >>"$scratch/$name.log" 2>&1 &
    router_pid=$!
    if ! url=$(wait_url "$ports" "$port"); then
        log "$name did not start; see $scratch/$name.log"
        stop_router
        return 1
    fi
    case $name in
    mem) ctl "$url" start all >/dev/null || { log "mem: no trace started" && stop_router && return 1; } ;;
    persist)
        ctl "$url" start all --options '{"persist": true}' >/dev/null ||
            { log "persist: no trace started" && stop_router && return 1; }
        ;;
    esac
    log "$name (pid $router_pid) at $url; wamp-bench on core $bench_core"
    : >"$scratch/$name.out.$rep"
    for size in $payloads; do
        taskset -c "$bench_core" "$bench_bin" --url "$url" --realm "$realm" \
            --router-pid "$router_pid" --payload "$size" "${bench_args[@]}" |
            sed "s/^RESULT /RESULT payload=$size /" | tee -a "$scratch/$name.out.$rep" || true
    done
    if ! kill -0 "$router_pid" 2>/dev/null; then
        log "$name died during the benchmark; see $scratch/$name.log"
    fi
    stop_router
}

if [[ $table_only != 1 ]]; then
    rm -f "$scratch"/*.out.* "$scratch"/*.log
    "$python" "$here/no_flight_config.py" "$repo/configs/default.json" "$no_flight"
    "$python" "$here/no_flight_config.py" "$repo/configs/default.json" "$permsg_cfg" per-message
    # Alternate the routers so that drift in the machine's background load hits all alike.
    for i in $(seq 1 "$repeat"); do
        for r in "${router_list[@]}"; do
            [[ -n $r ]] || continue
            run_router "$r" "$i" || status=1
        done
    done
    echo "${router_list[*]}" >"$scratch/routers.txt"
    # The yardstick of the cycles-per-byte table, on the router's core, and the clock it uses.
    taskset -c "$router_core" "$build/tests/bench/bench-memcpy" $payloads >"$scratch/memcpy.out" ||
        log "bench-memcpy failed: no memcpy column"
    awk -F: '/^cpu MHz/ { print $2 + 0; exit }' /proc/cpuinfo >"$scratch/cpu_mhz"
else
    repeat=$(find "$scratch" -maxdepth 1 -name 'shipped.out.*' | wc -l)
fi

# ---- table: medians over the repetitions of each router's "ok" runs ----
for r in bonefish baseline fox shipped off mem persist permsg; do
    cat "$scratch/$r".out.* >"$scratch/$r.out" 2>/dev/null || : >"$scratch/$r.out"
done
mhz=$(cat "$scratch/cpu_mhz" 2>/dev/null || true)
awk -v dir="$scratch" -v repeat="$repeat" -v stat="${BENCH_STAT:-median}" \
    -v bonefish="$bonefish" -v mhz="${mhz:-0}" '
function load(who,    file, line, n, i, kv, f, p, key, m, name) {
    file = dir "/" who ".out"
    while ((getline line < file) > 0) {
        if (line !~ /^RESULT /) continue
        n = split(line, f, " ")
        delete kv
        for (i = 2; i <= n; i++) { split(f[i], p, "="); kv[p[1]] = p[2] }
        key = kv["scenario"] " " kv["ser"] " " kv["payload"]
        if (!(key in seen)) { seen[key] = 1; order[++nkeys] = key }
        if (kv["unit"] != "") unit[key] = kv["unit"]
        ran[who] = 1
        if (!((who, key) in st) || st[who, key] != "ok") st[who, key] = kv["status"]
        if (kv["status"] != "ok") continue
        split("rate p50_us p99_us router_cpu other_cpu publishes_per_s", m, " ")
        for (i = 1; i <= 6; i++) {
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
# Router CPU per message in microseconds: the CPU share over the rate.
function cpu_us(who, key,    r, c) {
    r = med(who, key, "rate"); c = med(who, key, "router_cpu")
    return (r == "" || c == "" || r == 0) ? "" : c / 100 / r * 1e6
}
function state(who, key) { return (who, key) in st ? st[who, key] : "missing" }
# The lowest and the highest ratio of the rate of a to that of b over the rounds (round i of a against
# round i of b: they ran one after the other), as "lo-hi"; "" with one round, or when a round
# failed for either (the rounds would not pair up).
function round_range(a, b, key,    n, i, r, lo, hi) {
    n = cnt[a, key, "rate"] + 0
    if (n < 2 || n != cnt[b, key, "rate"] + 0 || n != repeat) return ""
    for (i = 1; i <= n; i++) {
        if (v[b, key, "rate", i] == 0) return ""
        r = v[a, key, "rate", i] / v[b, key, "rate", i]
        if (i == 1 || r < lo) lo = r
        if (i == 1 || r > hi) hi = r
    }
    return sprintf("%.2f-%.2f", lo, hi)
}
# A target line: what, the measured ratio of rates, the target, met or not, the same ratio of
# work per CPU second (router CPU per message of b over that of a), which a loaded machine
# disturbs less, and the spread of the ratio of rates over the rounds.
function target(what, a, b, want,    x, c, ca, cb, rr) {
    x = ratio(med(a, key, "rate"), med(b, key, "rate"))
    ca = cpu_us(a, key); cb = cpu_us(b, key)
    c = (ca == "" || cb == "" || ca == 0) ? "n/a" : sprintf("%.2f", cb / ca)
    if (x == "n/a") { printf "  %-62s %7s  (target >= %.2f)\n", what, "n/a", want; return }
    rr = round_range(a, b, key)
    printf "  %-62s %7s  (target >= %.2f) %-6s per CPU %s%s\n", what, x, want, (x + 0 >= want ? "met" : "MISSED"), c, rr == "" ? "" : "  rounds " rr
}
# Payload octets the router moves per message: rpc, per call: CALL and YIELD in, INVOCATION and
# RESULT out; pub/sub, per event delivered: the EVENT out and its share of the PUBLISH in.
function moved(who, key, size,    r, p) {
    if (key ~ /^rpc/) return 4 * size
    r = med(who, key, "rate"); p = med(who, key, "publishes_per_s")
    return (r == "" || p == "" || r == 0) ? size : size * (1 + p / r)
}
# CPU cycles per payload octet: (CPU per message at this size - at 32 octets) / octets moved.
function cyc(who, key, base, size,    a, b) {
    a = cpu_us(who, key); b = cpu_us(who, base)
    return (a == "" || b == "") ? "" : (a - b) * mhz / moved(who, key, size)
}
function cycles_table(    file, line, f, p, k, key, sk, base, any, mc, i, c, w, size) {
    file = dir "/memcpy.out"
    while ((getline line < file) > 0) {
        if (line !~ /^MEMCPY /) continue
        split(line, f, " ")
        split(f[2], p, "="); size = p[2]; split(f[3], p, "="); mcns[size] = p[2]
    }
    close(file)
    if (mhz + 0 <= 0) return
    for (k = 1; k <= nkeys; k++) {
        key = order[k]; split(key, sk, " ")
        base = sk[1] " " sk[2] " 32"
        if (sk[3] + 0 <= 32 || !(base in seen)) continue
        if (!any) {
            print ""
            printf "CPU cycles per payload octet the router moves (CPU per message at the size minus at 32 octets,\n"
            printf "over the octets moved: rpc 4 x size per call, pub/sub size x (1 + publications/events));\n"
            printf "memcpy = bench-memcpy of the same size on the same core; %.0f MHz\n", mhz
            printf "%-8s %-7s %6s %9s %8s", "scenario", "ser", "bytes", "moved", "memcpy"
            for (i = 1; i <= nwho; i++) if (ran[who[i]] && who[i] != "fox") printf " %9s", who[i]
            printf " %12s\n", "shipped/mcpy"
            any = 1
        }
        mc = (sk[3] in mcns) ? mcns[sk[3]] * mhz / 1000 : ""
        printf "%-8s %-7s %6s %9.0f %8s", sk[1], sk[2], sk[3], moved("shipped", key, sk[3]), cell(mc, "%.3f")
        for (i = 1; i <= nwho; i++) {
            w = who[i]
            if (ran[w] && w != "fox") printf " %9s", cell(cyc(w, key, base, sk[3]), "%.3f")
        }
        c = cyc("shipped", key, base, sk[3])
        printf " %12s\n", (c == "" || mc == "" || mc == 0) ? "n/a" : sprintf("%.1f", c / mc)
    }
}
function target_le(what, x, want) {
    if (x == "n/a") { printf "  %-62s %7s  (target <= %.2f)\n", what, "n/a", want; return }
    printf "  %-62s %7s  (target <= %.2f) %s\n", what, x, want, (x + 0 <= want ? "met" : "MISSED")
}
BEGIN {
    nwho = split("bonefish baseline fox shipped off mem persist permsg", who, " ")
    for (i = 1; i <= nwho; i++) load(who[i])
    print ""
    what = repeat > 1 ? (stat == "best" ? ", best of " : ", medians of ") repeat " rounds" : ""
    printf "Throughput%s: rate (calls/s or events/s) per router; ratios measured in this run\n", what
    if (!ran["bonefish"])
        print "Bonefish: absent from this run (BONEFISH=/path/to/bonefish to include it)"
    print "shipped = wampscope as shipped (flight recorder on); off = flight recorder off;"
    print "mem / persist = off + one trace capturing everything, in memory / persisted"
    if (ran["permsg"]) print "permsg = the flight recorder recorded per message (\"from_wire\": false)"
    if (ran["baseline"]) print "baseline = the wampscope build of BASELINE_WAMPSCOPE, as shipped; sh/base = shipped / baseline"
    hdr = sprintf("%-8s %-7s %6s %10s %10s %10s %10s %10s", "scenario", "ser", "bytes", "bonefish", "shipped", "off", "mem", "persist")
    if (ran["baseline"]) hdr = hdr sprintf(" %10s %8s", "baseline", "sh/base")
    if (ran["fox"]) hdr = hdr sprintf(" %10s", "fox-wamp")
    if (ran["permsg"]) hdr = hdr sprintf(" %10s", "permsg")
    hdr = hdr sprintf(" %8s %8s %8s %8s", "sh/bf", "sh/off", "mem/off", "pers/off")
    if (ran["permsg"]) hdr = hdr sprintf(" %8s", "pm/off")
    hdr = hdr sprintf(" %8s %8s %6s", "p50 bf", "p50 sh", "bg%")
    print hdr
    for (k = 1; k <= nkeys; k++) {
        key = order[k]; split(key, sk, " ")
        bf = med("bonefish", key, "rate"); sh = med("shipped", key, "rate"); of = med("off", key, "rate")
        me = med("mem", key, "rate"); pe = med("persist", key, "rate")
        bg = 0
        for (i = 1; i <= nwho; i++) { b = med(who[i], key, "other_cpu"); if (b != "" && b > bg) bg = b }
        if (bg > maxbg) maxbg = bg
        line = sprintf("%-8s %-7s %6s %10s %10s %10s %10s %10s", sk[1], sk[2], sk[3], cell(bf, "%.0f"), cell(sh, "%.0f"), cell(of, "%.0f"), cell(me, "%.0f"), cell(pe, "%.0f"))
        if (ran["baseline"]) line = line sprintf(" %10s %8s", cell(med("baseline", key, "rate"), "%.0f"), ratio(sh, med("baseline", key, "rate")))
        if (ran["fox"]) line = line sprintf(" %10s", cell(med("fox", key, "rate"), "%.0f"))
        wi = med("permsg", key, "rate")
        if (ran["permsg"]) line = line sprintf(" %10s", cell(wi, "%.0f"))
        line = line sprintf(" %8s %8s %8s %8s", ratio(sh, bf), ratio(sh, of), ratio(me, of), ratio(pe, of))
        if (ran["permsg"]) line = line sprintf(" %8s", ratio(wi, of))
        line = line sprintf(" %8s %8s %6.0f", cell(med("bonefish", key, "p50_us"), "%.0f"), cell(med("shipped", key, "p50_us"), "%.0f"), bg)
        print line
    }
    print ""
    print "Router CPU per message, microseconds (router CPU share / rate; pub/sub: per event delivered)"
    printf "%-8s %-7s %6s %10s %10s %10s %10s %10s %10s %10s\n", "scenario", "ser", "bytes", "bonefish", "shipped", "off", "mem", "persist", "baseline", "permsg"
    for (k = 1; k <= nkeys; k++) {
        key = order[k]; split(key, sk, " ")
        printf "%-8s %-7s %6s %10s %10s %10s %10s %10s %10s %10s\n", sk[1], sk[2], sk[3], cell(cpu_us("bonefish", key), "%.2f"), cell(cpu_us("shipped", key), "%.2f"), cell(cpu_us("off", key), "%.2f"), cell(cpu_us("mem", key), "%.2f"), cell(cpu_us("persist", key), "%.2f"), cell(cpu_us("baseline", key), "%.2f"), cell(cpu_us("permsg", key), "%.2f")
    }
    cycles_table()
    print ""
    print "Targets (issue 24), from the table above:"
    for (k = 1; k <= nkeys; k++) {
        key = order[k]; split(key, sk, " ")
        if (sk[1] != "rpc100" && sk[1] != "pubsub10") continue
        target(key ": flight recorder on / off", "shipped", "off", 0.97)
        target(key ": trace of everything in memory / no trace", "mem", "off", 0.90)
        target(key ": trace of everything persisted / no trace", "persist", "off", 0.90)
        if (ran["permsg"])
            target(key ": per-message flight recorder / off", "permsg", "off", 0.97)
        if (sk[3] + 0 >= 16384 && ran["baseline"])
            target(key ": as shipped / baseline", "shipped", "baseline", 2)
        if (sk[3] + 0 <= 64) {
            want = sk[1] == "pubsub10" ? 3 : (sk[2] == "json" ? 1.5 : 2)
            target(key ": as shipped / Bonefish", "shipped", "bonefish", want)
            target_le(key ": p50 latency as shipped / Bonefish", ratio(med("shipped", key, "p50_us"), med("bonefish", key, "p50_us")), 1)
        }
    }
    print ""
    if (maxbg > 25)
        printf "warning: other processes used up to %.0f%% of a core during these runs: the figures are disturbed; rerun on a quiet machine\n", maxbg
    for (k = 1; k <= nkeys; k++) {
        key = order[k]
        for (i = 1; i <= nwho; i++)
            if (ran[who[i]] && state(who[i], key) != "ok" && !(who[i] == "fox" && state(who[i], key) == "unsupported"))
                printf "note: %s: %s %s\n", key, who[i], state(who[i], key)
    }
}'
log "raw outputs: $scratch/*.out; router logs: $scratch/*.log"
exit $status
