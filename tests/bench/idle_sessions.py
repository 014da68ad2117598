#!/usr/bin/python3
"""idle_sessions.py: what an idle session costs the router in memory.

Starts wampscope (the given binary; a Release build for meaningful figures) with a config whose
HELLO timeout is long enough, then, from this process (non-blocking sockets, no WAMP library):
  1. measures the router's RSS at rest (baseline),
  2. opens N WebSocket connections (HTTP upgrade with wamp.2.json) and measures RSS again: the
     cost of a connection as libwebsockets holds it (plus our per-connection adapter state and
     the unjoined session),
  3. sends HELLO on every connection, waits for every WELCOME, measures RSS again: the cost of
     a joined session (realm membership, authid/authrole, ids; with the flight recorder on, as
     in the default config, its records of the joins, whose count and bytes it prints too),
  4. closes everything and measures RSS once more.
RSS is read from /proc/PID/status (VmRSS) after the router has been idle for a moment.
Prints one RESULT line with the per-connection figures (bytes) and the totals. A measuring tool,
not a test. Needs `ulimit -n` above N (+ a margin) for both processes.

Usage: idle_sessions.py --router BIN [--sessions 10000] [--config FILE]
"""

import argparse
import base64
import json
import os
import selectors
import signal
import socket
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))


def rss_bytes(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmRSS:"):
                return int(line.split()[1]) * 1024
    raise RuntimeError("no VmRSS")


def settle(pid, seconds=1.0):
    time.sleep(seconds)
    return rss_bytes(pid)


def ws_frame(payload):
    mask = os.urandom(4)
    n = len(payload)
    head = bytes([0x81])
    if n < 126:
        head += bytes([0x80 | n])
    else:
        head += bytes([0x80 | 126]) + n.to_bytes(2, "big")
    return head + mask + bytes(b ^ mask[i % 4] for i, b in enumerate(payload))


def pump(conns, want, deadline):
    """Reads on every connection until want(conn, data) says it has what it waits for."""
    sel = selectors.DefaultSelector()
    pending = 0
    for c in conns:
        if not c["done"]:
            sel.register(c["sock"], selectors.EVENT_READ, c)
            pending += 1
    while pending and time.monotonic() < deadline:
        for key, _ in sel.select(timeout=1.0):
            c = key.data
            try:
                data = c["sock"].recv(65536)
            except BlockingIOError:
                continue
            if not data:
                raise RuntimeError("the router closed a connection")
            c["buf"] += data
            if want(c):
                c["done"] = True
                sel.unregister(c["sock"])
                pending -= 1
    sel.close()
    if pending:
        raise RuntimeError("%d connections did not answer in time" % pending)


def flight_recorder(ports):
    """The flight recorder's figures from the management API (trace_ctl.py, which needs
    python3-autobahn): the records it holds and the bytes they count against its budget (each
    record's kept bytes + TRACE_RECORD_OVERHEAD, 128). {} when there is none or no answer."""
    try:
        out = subprocess.run([sys.executable, os.path.join(HERE, "trace_ctl.py"), "--ports-file",
                              ports, "get", "flight-recorder"], capture_output=True, text=True,
                             timeout=30)
        return json.loads(out.stdout) if out.returncode == 0 else {}
    except (OSError, ValueError, subprocess.TimeoutExpired):
        return {}


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--router", required=True)
    ap.add_argument("--sessions", type=int, default=10000)
    ap.add_argument("--config", default=os.path.join(REPO, "configs", "bench-idle.json"))
    args = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="wampscope-idle-")
    ports = os.path.join(tmp, "ports")
    log = open(os.path.join(tmp, "router.log"), "w")
    proc = subprocess.Popen([args.router, "-c", args.config, "--port", "0", "--ports-file", ports,
                             "--log-level", "warn"], stdout=log, stderr=log)
    try:
        for _ in range(100):
            if os.path.exists(ports) and os.path.getsize(ports):
                break
            time.sleep(0.1)
        url = next(ln.strip() for ln in open(ports) if ln.startswith("ws://"))
        hostport = url[len("ws://"):].split("/", 1)[0]
        host, port = hostport.rsplit(":", 1)
        port = int(port)
        base = settle(proc.pid)
        conns = []
        key = base64.b64encode(os.urandom(16)).decode()
        request = ("GET /ws HTTP/1.1\r\nHost: %s\r\nUpgrade: websocket\r\nConnection: Upgrade\r\n"
                   "Sec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
                   "Sec-WebSocket-Protocol: wamp.2.json\r\n\r\n" % (hostport, key)).encode()
        t0 = time.monotonic()
        for i in range(args.sessions):
            s = socket.create_connection((host, port))
            s.setblocking(False)
            s.sendall(request)
            conns.append({"sock": s, "buf": b"", "done": False})
            if i % 500 == 499:  # let the router accept as we go
                pump([c for c in conns if not c["done"]],
                     lambda c: b"\r\n\r\n" in c["buf"], time.monotonic() + 60)
        pump(conns, lambda c: b"\r\n\r\n" in c["buf"], time.monotonic() + 60)
        for c in conns:
            if not c["buf"].startswith(b"HTTP/1.1 101"):
                raise RuntimeError("upgrade refused: %r" % c["buf"][:60])
            c["buf"] = c["buf"].split(b"\r\n\r\n", 1)[1]
            c["done"] = False
        upgraded = settle(proc.pid)
        t1 = time.monotonic()
        hello = ws_frame(json.dumps([1, "realm1", {"roles": {"subscriber": {}, "caller": {}}}])
                         .encode())
        for c in conns:
            c["sock"].sendall(hello)
        # A WELCOME frame: 0x81, length, then [2, ...
        pump(conns, lambda c: len(c["buf"]) > 4 and b"[2," in c["buf"], time.monotonic() + 120)
        joined = settle(proc.pid)
        t2 = time.monotonic()
        recorder = flight_recorder(ports)
        for c in conns:
            c["sock"].close()
        closed = settle(proc.pid, 3.0)
        n = args.sessions
        print("RESULT sessions=%d rss_base=%d rss_upgraded=%d rss_joined=%d rss_closed=%d "
              "per_connection_lws_and_adapter=%d per_session_joined_extra=%d "
              "per_session_total=%d upgrade_s=%.1f join_s=%.1f recorder_records=%s recorder_bytes=%s"
              % (n, base, upgraded, joined, closed, (upgraded - base) // n,
                 (joined - upgraded) // n, (joined - base) // n, t1 - t0, t2 - t1,
                 recorder.get("records", "na"), recorder.get("bytes", "na")))
    finally:
        proc.send_signal(signal.SIGTERM)
        try:
            proc.wait(20)
        except subprocess.TimeoutExpired:
            proc.kill()
        log.close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
