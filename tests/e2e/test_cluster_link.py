"""The cluster link over a real nats-server (JetStream, ephemeral port, temp store): nodes join the
membership, a duplicate controller.id is refused at start, a node killed with kill -9 leaves the
others' view within node_ttl + 3 heartbeats, a clean stop leaves at once, a restarted
nats-server gets every node re-announced, a node started before nats-server routes locally
and joins once it is up, and --check-config checks the cluster keys without connecting.

The node list is observed through the router's log ("cluster NAME: nodes (N): a, b"); the
management API's view of it (list_nodes, forwarding) is tested in test_cluster_mgmt.py."""

import json
import os
import re
import subprocess
import time

import rt_harness as h

# The helpers are cluster_harness's; test_cluster_mgmt_nodes.py reaches them through this module.
from cluster_harness import (HEARTBEAT_MS, KILL_BOUND_S, NODE_TTL_MS, SLACK_S,  # noqa: F401
                             ClusterCase, NatsServer, nodes_line, wait_log, write_config)


class TestClusterLink(ClusterCase):
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
