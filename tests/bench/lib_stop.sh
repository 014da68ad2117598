# lib_stop.sh: sourced by the bench scripts that start one router at a time (run_callgrind.sh,
# run_perf_share.sh). `pid` is the process the script started last; stop() ends it by PID
# (SIGTERM, then waits for it); the EXIT trap stops it whatever ends the script, and a signal
# ends the run rather than letting it go on with the next one.
pid=""
stop() {
    if [[ -n $pid ]] && kill -0 "$pid" 2>/dev/null; then
        kill -TERM "$pid" 2>/dev/null || true
        wait "$pid" 2>/dev/null || true
    fi
    pid=""
}
trap stop EXIT
trap 'exit 130' INT
trap 'exit 143' TERM
