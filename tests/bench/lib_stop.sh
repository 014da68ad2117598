# lib_stop.sh: sourced by the bench scripts that start routers one at a time (run_compare.sh,
# run_tracing.sh, run_callgrind.sh, run_perf_share.sh): how they stop what they started, by PID.

# stop_pid PID: SIGTERM, wait up to 5 s, then SIGKILL; then reaps it (a child of the script).
# An empty or finished PID is nothing to do.
stop_pid() {
    local pid=$1
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        for _ in $(seq 1 50); do
            kill -0 "$pid" 2>/dev/null || break
            sleep 0.1
        done
        if kill -0 "$pid" 2>/dev/null; then
            printf '== process %s did not stop after SIGTERM within 5 s; sending SIGKILL\n' "$pid" >&2
            kill -KILL "$pid" 2>/dev/null || true
        fi
        wait "$pid" 2>/dev/null || true
    fi
}

# stop_on_exit FUNCTION: FUNCTION cleans up whatever ends the script, and a signal ends the run
# (a trap that only cleaned up let the run go on with the next configuration after Ctrl-C or
# kill).
stop_on_exit() {
    # shellcheck disable=SC2064 # the function's name, expanded now
    trap "$1" EXIT
    trap 'exit 130' INT
    trap 'exit 143' TERM
}

# stop: stop_pid for the scripts that keep the router they started last in `pid` (run_callgrind.sh,
# run_perf_share.sh: `stop_on_exit stop`).
pid=""
# shellcheck disable=SC2317 # called through the trap
stop() {
    stop_pid "$pid"
    pid=""
}
