"""The cluster harness of the e2e tests: a real nats-server (JetStream, ephemeral port, temp
store, stopped by PID), node configs, log waits, and ClusterCase, the test case that starts a
cluster of wampscope nodes on it and opens sessions on them."""

import glob
import json
import os
import re
import shutil
import signal
import socket
import subprocess
import tempfile
import time

import rt_harness as h

NATS_BIN = shutil.which("nats-server") or "/usr/sbin/nats-server"
HEARTBEAT_MS = 500
NODE_TTL_MS = 2000
CONNECT_TIMEOUT_MS = 500
# Documented bound for a killed node to leave the others' list: node_ttl + 3 heartbeats.
KILL_BOUND_S = (NODE_TTL_MS + 3 * HEARTBEAT_MS) / 1000.0
SLACK_S = 1.5  # a loaded 2-core machine and sanitizer builds


def faked_clock(offset):
    """Environment for a router whose wall clock is offset (libfaketime's FAKETIME, e.g. "-5s")
    from the machine's, its monotonic clock left alone: nodes whose clocks disagree, on one
    machine."""
    [lib] = glob.glob("/usr/lib/*/faketime/libfaketimeMT.so.1")
    asan = os.environ.get("ASAN_OPTIONS", "")
    return {"LD_PRELOAD": lib, "FAKETIME": offset, "DONT_FAKE_MONOTONIC": "1",
            "ASAN_OPTIONS": (asan + ":" if asan else "") + "verify_asan_link_order=0"}


async def after_kill(fetch, timed_out, tries=5):
    """await fetch() of a killed node, again while timed_out(result), at most tries times: a
    request that reaches nats-server before it has seen the killed node's connection close is
    routed to that node and waits out request_timeout; one made after gets "no responders" at
    once (a race of a few ms, seen under parallel sanitizer runs)."""
    for _ in range(tries - 1):
        r = await fetch()
        if not timed_out(r):
            return r
    return await fetch()


def free_port():
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


class NatsServer:
    """nats-server with JetStream on 127.0.0.1:port, its store in a temp dir; stopped by PID."""

    def __init__(self, tmp, port=None, extra=()):
        self.port = port or free_port()
        self.extra = list(extra)
        self.store = os.path.join(tmp, "js")
        self.log = os.path.join(tmp, "nats.log")
        self.proc = None

    def start(self):
        with open(self.log, "ab") as log:
            self.proc = subprocess.Popen(
                [NATS_BIN, "-a", "127.0.0.1", "-p", str(self.port), "-js", "-sd", self.store]
                + self.extra,
                stdin=subprocess.DEVNULL, stdout=log, stderr=log,
                preexec_fn=h._die_with_parent)
        deadline = time.monotonic() + 10
        while time.monotonic() < deadline:
            if self.proc.poll() is not None:
                raise AssertionError("nats-server exited with %s" % self.proc.returncode)
            try:
                with socket.create_connection(("127.0.0.1", self.port), timeout=0.2) as s:
                    if s.recv(4).startswith(b"INFO"):
                        return self
            except OSError:
                time.sleep(0.05)
        raise AssertionError("nats-server did not come up on port %d" % self.port)

    def stop(self):
        if self.proc and self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
            try:
                self.proc.wait(timeout=10)
            except subprocess.TimeoutExpired:
                self.proc.kill()
                self.proc.wait()


def write_config(tmp, node_id, nats_port, name, nats=None):
    cfg = {
        "version": 2,
        "controller": {"id": node_id},
        "workers": [{
            "type": "router",
            "realms": [{"name": "realm1", "roles": [{"name": "anonymous", "permissions": [
                {"uri": "", "match": "prefix",
                 "allow": {"call": True, "register": True, "publish": True, "subscribe": True}}]}]}],
            "transports": [{"type": "websocket",
                            "endpoint": {"type": "tcp", "port": 0, "interface": "127.0.0.1"}}],
            "wampscope": {
                "management": {"enabled": False},
                "tracing": {"flight_recorder": False},
                "cluster": {"name": name, "heartbeat_interval": HEARTBEAT_MS,
                            "node_ttl": NODE_TTL_MS, "connect_timeout": CONNECT_TIMEOUT_MS,
                            "reconnect_wait": 200, "request_timeout": 1000,
                            "nats": nats or {"servers": ["nats://127.0.0.1:%d" % nats_port]}},
            },
        }],
    }
    path = os.path.join(tmp, "%s.json" % node_id)
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


def wait_log(router, pattern, timeout=20.0, count=1):
    """Waits until the router's log holds pattern (a regex) count times; returns the time."""
    rx = re.compile(pattern)
    deadline = time.monotonic() + timeout
    while True:
        text = router.stderr_text()
        if len(rx.findall(text)) >= count:
            return time.monotonic()
        if time.monotonic() > deadline:
            raise AssertionError("no %r (x%d) in the log within %.1f s:\n%s"
                                 % (pattern, count, timeout, text[-4000:]))
        time.sleep(0.02)


def nodes_line(name, *ids):
    return re.escape("cluster %s: nodes (%d): %s" % (name, len(ids), ", ".join(ids)))


class ClusterCase(h.AsyncTestCase):
    """A temp dir, a nats-server (not started) and a cluster name per test; node() and nodes()
    start routers on it, session() opens a session closed at tear-down. PREFIX keeps the cluster
    names (buckets, subjects) of different test files apart."""

    PREFIX = "c_"
    TMP_PREFIX = "wampscope-cluster-"

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix=self.TMP_PREFIX)
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.nats = NatsServer(self.tmp)
        self.addCleanup(self.nats.stop)
        # Distinct cluster names per test: buckets and subjects never meet.
        self.name = self.PREFIX + self.id().split(".")[-1][5:][:40]
        self.sessions = []

    async def asyncTearDown(self):
        await h.close_sessions(self.sessions)
        await super().asyncTearDown()

    def node(self, node_id, start=True, nats=None, env=None):
        """A router for node node_id (the cluster's "nats" config section: nats, if given; more
        environment variables: env, e.g. faked_clock()), started unless start is false."""
        r = h.RouterProc(config=write_config(self.tmp, node_id, self.nats.port, self.name, nats),
                         env=env)
        self.addCleanup(r.cleanup)
        return r.start() if start else r

    def nodes(self, *ids, envs=None):
        """Starts nats-server, then the nodes ids (envs: {node id: env} for node()); returns their
        routers once each lists all."""
        self.nats.start()
        routers = [self.node(i, env=(envs or {}).get(i)) for i in ids]
        for r in routers:
            wait_log(r, nodes_line(self.name, *sorted(ids)))
        return routers

    async def session(self, router, ser):
        s = await h.open_session(router, "realm1", ser)
        self.sessions.append(s)
        return s
