"""The cluster link over a real nats-server (JetStream, ephemeral port, temp store): nodes join the
membership, a duplicate controller.id is refused at start, a node killed with kill -9 leaves the
others' view within node_ttl + 2 heartbeats, a clean stop leaves at once, a restarted
nats-server gets every node re-announced, a node started before nats-server routes locally
and joins once it is up, and --check-config checks the cluster keys without connecting.

The node list is observed through the router's log ("cluster NAME: nodes (N): a, b"); the
management API's view of it (list_nodes, forwarding) is tested in test_cluster_mgmt.py."""

import asyncio
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
# Documented bound for a killed node to leave the others' list: node_ttl + 2 heartbeats.
KILL_BOUND_S = (NODE_TTL_MS + 2 * HEARTBEAT_MS) / 1000.0
SLACK_S = 1.5  # a loaded 2-core machine and sanitizer builds


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


def wait_log(router, pattern, timeout=10.0, count=1):
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


class TestClusterLink(h.AsyncTestCase):
    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-cluster-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.nats = NatsServer(self.tmp)
        self.addCleanup(self.nats.stop)
        # Distinct cluster names per test: buckets and subjects never meet.
        self.name = "c_" + self.id().split(".")[-1][5:][:40]

    def node(self, node_id, start=True, nats=None):
        r = h.RouterProc(config=write_config(self.tmp, node_id, self.nats.port, self.name, nats))
        self.addCleanup(r.cleanup)
        return r.start() if start else r

    async def routes_locally(self, router):
        s = await h.open_session(router, "realm1", "json")
        try:
            await h.step(s.register(lambda x: x + 1, h.uri(self, "inc")))
            self.assertEqual(await h.step(s.call(h.uri(self, "inc"), 41)), 42)
        finally:
            await s.close()

    async def test_nodes_join_and_killed_node_expires(self):
        self.nats.start()
        a = self.node("node_a")
        b = self.node("node_b")
        for r in (a, b):
            wait_log(r, nodes_line(self.name, "node_a", "node_b"))
        # Each asked the other for its info over request/reply.
        wait_log(a, r"node node_b joined \(wampscope \S+, instance [0-9a-f]{16}\)")
        wait_log(b, r"node node_a joined \(wampscope \S+, instance [0-9a-f]{16}\)")
        await self.routes_locally(a)

        killed_at = time.monotonic()
        b.kill()  # SIGKILL: no leave, the key stays until node_ttl
        left_at = wait_log(a, re.escape("cluster %s: node node_b left" % self.name),
                           timeout=KILL_BOUND_S + 5)
        elapsed = left_at - killed_at
        self.assertLess(elapsed, KILL_BOUND_S + SLACK_S)
        self.assertGreater(elapsed, NODE_TTL_MS / 1000.0 - 2 * HEARTBEAT_MS / 1000.0,
                           "a killed node's key lives about node_ttl")
        wait_log(a, nodes_line(self.name, "node_a"))
        a.stop()

    async def test_duplicate_id_refused_at_start(self):
        self.nats.start()
        a = self.node("node_a")
        wait_log(a, re.escape("cluster %s: joined as node node_a" % self.name))
        dup = self.node("node_a", start=False)
        with open(dup.stderr_path, "wb") as err:
            proc = subprocess.Popen([dup.bin, "-c", dup.config, "--port", "0", "--ports-file",
                                     dup.ports_file], stdin=subprocess.DEVNULL,
                                    stdout=subprocess.DEVNULL, stderr=err, cwd=dup.tmp,
                                    preexec_fn=h._die_with_parent)
        try:
            status = proc.wait(timeout=30)
        finally:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
        text = dup.stderr_text()
        self.assertEqual(status, 1, text)
        self.assertIn('cluster %s: node id "node_a" (controller.id) is already in use by another '
                      'live node' % self.name, text)
        self.assertFalse(os.path.exists(dup.ports_file), "refused before listening")
        for m in h.SANITIZER_MARKERS:
            self.assertNotIn(m, text)
        # The owner is untouched.
        await self.routes_locally(a)
        self.assertNotIn("left", a.stderr_text().split("joined as node node_a")[-1])
        a.stop()

    async def test_clean_stop_leaves_at_once(self):
        self.nats.start()
        a = self.node("node_a")
        b = self.node("node_b")
        wait_log(a, nodes_line(self.name, "node_a", "node_b"))
        stopped_at = time.monotonic()
        b.stop()  # SIGTERM: deletes its key and announces it
        left_at = wait_log(a, re.escape("cluster %s: node node_b left" % self.name), timeout=5)
        self.assertLess(left_at - stopped_at, NODE_TTL_MS / 1000.0,
                        "a clean leave does not wait for the TTL")
        a.stop()

    async def test_nats_restart_reannounces(self):
        self.nats.start()
        a = self.node("node_a")
        b = self.node("node_b")
        for r in (a, b):
            wait_log(r, nodes_line(self.name, "node_a", "node_b"))
        self.nats.stop()
        for r in (a, b):
            wait_log(r, re.escape("cluster %s: link down; routing locally" % self.name))
        await self.routes_locally(a)
        # Memory buckets: the restarted server knows no node until they announce themselves.
        self.nats = NatsServer(self.tmp, port=self.nats.port)
        self.addCleanup(self.nats.stop)
        self.nats.start()
        for r, me in ((a, "node_a"), (b, "node_b")):
            wait_log(r, re.escape("cluster %s: joined as node %s" % (self.name, me)), count=2)
            wait_log(r, nodes_line(self.name, "node_a", "node_b"), count=2)
        a.stop()
        b.stop()

    async def test_node_started_before_nats(self):
        a = self.node("node_a")  # nats-server not running yet: starts after connect_timeout
        wait_log(a, re.escape("cluster %s: no NATS server reachable" % self.name))
        await self.routes_locally(a)
        self.assertNotIn("joined as node", a.stderr_text())
        self.nats.start()
        wait_log(a, re.escape("cluster %s: joined as node node_a" % self.name))
        wait_log(a, re.escape("cluster %s: link up" % self.name))
        await self.routes_locally(a)
        a.stop()

    async def test_tls_and_password(self):
        """TLS to the server (verified with the given CA) and user/password authentication."""
        key, cert = os.path.join(self.tmp, "key.pem"), os.path.join(self.tmp, "cert.pem")
        subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                        "-keyout", key, "-out", cert, "-subj", "/CN=localhost",
                        "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                       check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
        self.nats = NatsServer(self.tmp, extra=["--tls", "--tlscert", cert, "--tlskey", key,
                                                "--user", "wsc", "--pass", "s3cret"])
        self.addCleanup(self.nats.stop)
        self.nats.start()
        url = "tls://127.0.0.1:%d" % self.nats.port
        a = self.node("node_a", nats={"servers": [url], "user": "wsc", "password": "s3cret",
                                      "tls": {"ca": cert}})
        wait_log(a, re.escape("cluster %s: joined as node node_a" % self.name))
        # A wrong password: cnats closes the connection for good (its last error is only "No
        # server available for connection"), and the node refuses to start.
        b = self.node("node_b", start=False, nats={"servers": [url], "user": "wsc",
                                                   "password": "wrong", "tls": {"ca": cert}})
        proc = subprocess.run([b.bin, "-c", b.config, "--port", "0"], capture_output=True,
                              text=True, timeout=30, cwd=b.tmp)
        self.assertEqual(proc.returncode, 1, proc.stderr)
        self.assertIn("cluster %s: the NATS server closed the connection: " % self.name,
                      proc.stderr)
        for m in h.SANITIZER_MARKERS:
            self.assertNotIn(m, proc.stderr)
        self.assertNotIn("node_b", a.stderr_text())
        a.stop()

    async def test_check_config(self):
        """--check-config checks the cluster keys and connects to nothing."""
        path = write_config(self.tmp, "node_a", self.nats.port, self.name)  # no server there
        bin_ = os.environ["RT_ROUTER_BIN"]
        ok = subprocess.run([bin_, "-c", path, "--check-config"], capture_output=True, text=True,
                            timeout=30)
        self.assertEqual(ok.returncode, 0, ok.stderr)
        self.assertIn("configuration OK", ok.stdout)
        self.assertNotIn("cluster", ok.stderr)  # no link was started
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
        cluster = cfg["workers"][0]["wampscope"]["cluster"]
        cluster["heartbeat_interval"] = 1000
        cluster["node_ttl"] = 1500  # less than twice the heartbeat
        cluster["nats"]["servers"] = ["http://127.0.0.1:1"]
        with open(path, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        bad = subprocess.run([bin_, "-c", path, "--check-config"], capture_output=True, text=True,
                             timeout=30)
        self.assertEqual(bad.returncode, 2, bad.stderr)
        self.assertIn("workers[0].wampscope.cluster.node_ttl: must be at least twice "
                      "heartbeat_interval", bad.stderr)
        self.assertIn("workers[0].wampscope.cluster.nats.servers[0]: must be a nats:// or tls:// "
                      "URL", bad.stderr)


if __name__ == "__main__":
    h.main()
