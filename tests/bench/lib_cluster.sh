# lib_cluster.sh: sourced by the bench scripts that run wampscope nodes over a nats-server they
# start (run_cluster.sh, run_soak.sh with CLUSTER=1): the server, and a node's configuration.

# start_nats DIR [CORE]: nats-server with JetStream (store DIR/js, log DIR/nats.log) on a free
# port of 127.0.0.1, pinned to CORE when given; sets nats_pid and nats_port once it accepts
# connections. The caller stops it by nats_pid.
start_nats() {
    local dir=$1 bin pin=()
    bin=$(command -v nats-server || echo /usr/sbin/nats-server)
    [[ -n ${2:-} ]] && pin=(taskset -c "$2")
    nats_port=$(python3 -c 'import socket; s = socket.socket(); s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])')
    "${pin[@]}" "$bin" -a 127.0.0.1 -p "$nats_port" -js -sd "$dir/js" >"$dir/nats.log" 2>&1 &
    nats_pid=$!
    for _ in $(seq 1 100); do
        (exec 3<>"/dev/tcp/127.0.0.1/$nats_port") 2>/dev/null && return 0
        sleep 0.1
    done
    echo "nats-server did not come up on port $nats_port; see $dir/nats.log" >&2
    return 1
}

# node_config FILE ID DATA_DIR MANAGEMENT CLUSTER: a node's configuration: realm1 open to
# anonymous clients, a WebSocket transport on a free port of 127.0.0.1, traces' files under
# DATA_DIR, the management realm "mgmt" for 127.0.0.0/8 when MANAGEMENT is true, and CLUSTER (a
# JSON object, or empty: one node alone) as wampscope.cluster.
node_config() {
    local mgmt='{"enabled": false}' cluster=""
    [[ $4 == true ]] && mgmt='{"enabled": true, "realm": "mgmt", "trusted_networks": ["127.0.0.0/8"]}'
    [[ -n $5 ]] && cluster=", \"cluster\": $5"
    cat >"$1" <<EOF
{"version": 2, "controller": {"id": "$2"},
 "workers": [{"type": "router",
   "realms": [{"name": "realm1", "roles": [{"name": "anonymous", "permissions": [
     {"uri": "", "match": "prefix",
      "allow": {"call": true, "register": true, "publish": true, "subscribe": true}}]}]}],
   "transports": [{"type": "websocket",
                   "endpoint": {"type": "tcp", "port": 0, "interface": "127.0.0.1"}}],
   "wampscope": {"management": $mgmt,
                 "tracing": {"data_dir": "$3"}$cluster}}]}
EOF
}
