"""The management API across a cluster over a real nats-server: a python3-autobahn management
client on node A lists both nodes, reads node B's worker, starts a trace on node B through node A,
reads its records after traffic on B, stops and deletes it, and node A's metrics show the
cluster link; a stopped (SIGSTOP) node B gives
wamp.error.timeout after cluster.request_timeout, and a node B killed with kill -9 gives
crossbar.error.no_such_object naming it at once, and an answer over the bus's max_payload gives
wamp.error.payload_size_exceeded; a cluster-wide trace (node_id "*") started, marked, stopped and
deleted on every node with one call each, which a node C joining while it runs starts too, and a
stopped node B appears as a wamp.error.timeout entry, and the merged pages of every node's records
tile the traffic in time order, and wampscope-ctl's workers and stats with --node '*' answer for
every node, and its export and data with --node '*' mark what a busy node's trace dropped while
they read it, and read every record at once, none called dropped, while one node's wall clock is
5 s behind the other's (libfaketime), and each node tells that offset (get_worker, metrics, one
log line) (mgmt/README.md "Cluster")."""

import asyncio
import json
import os
import re
import shutil
import signal
import subprocess
import time
import urllib.request

from autobahn.exception import PayloadExceededError
from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import PublishOptions
from prometheus_client.parser import text_string_to_metric_families

import cluster_harness as ch
import rt_harness as h

P = "crossbarfabriccenter."
REQUEST_TIMEOUT_MS = 1000
SLACK_S = 1.5  # a loaded 2-core machine and sanitizer builds


def write_config(tmp, node_id, nats_port, name):
    """cluster_harness's node config with the management API on (realm "mgmt", loopback)."""
    path = ch.write_config(tmp, node_id, nats_port, name)
    with open(path, encoding="utf-8") as f:
        cfg = json.load(f)
    ws = cfg["workers"][0]["wampscope"]
    ws["management"] = {"enabled": True, "realm": "mgmt"}
    ws["cluster"]["request_timeout"] = REQUEST_TIMEOUT_MS
    ws["metrics"] = {"endpoint": {"type": "tcp", "port": 0, "interface": "127.0.0.1"},
                     "path": "/metrics"}
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


class TestClusterMgmt(ch.ClusterCase):
    PREFIX = "m_"
    TMP_PREFIX = "wampscope-cmgmt-"

    async def start_cluster(self, nats_conf=None, envs=None):
        """nats-server (with the configuration text nats_conf, if any) and nodes A and B (envs as
        for nodes()); the management session on A."""
        if nats_conf:
            path = os.path.join(self.tmp, "nats.conf")
            with open(path, "w", encoding="utf-8") as f:
                f.write(nats_conf)
            self.nats.extra = ["-c", path]
        self.a, self.b = self.nodes("node_a", "node_b", envs=envs)
        self.mgmt = await h.open_session(self.a, "mgmt", "json")

    async def finish(self, *routers):
        """Closes the management session, then stops routers (exit status 0, no sanitizer
        report)."""
        await self.mgmt.close()
        for r in routers:
            r.stop()

    def node(self, node_id, env=None):
        r = h.RouterProc(config=write_config(self.tmp, node_id, self.nats.port, self.name),
                         env=env)
        self.addCleanup(r.cleanup)
        return r.start()

    async def call(self, proc, *args, **kwargs):
        return await h.step(self.mgmt.call(P + proc, *args, **kwargs))

    async def error_of(self, proc, *args):
        with self.assertRaises(ApplicationError) as cm:
            await self.call(proc, *args)
        return cm.exception

    async def test_manage_and_trace_node_b_through_node_a(self):
        await self.start_cluster()
        self.assertEqual(await self.call("list_nodes"), ["node_a", "node_b"])
        [wb] = await self.call("list_workers", "node_b")
        worker = await self.call("get_worker", "node_b", wb)
        self.assertEqual(worker["type"], "router")
        self.assertEqual(worker["stats"]["cluster"]["state"], "up")
        self.assertEqual(worker["stats"]["cluster"]["nodes"], 2)
        self.assertNotEqual(worker["pid"], (await self.call("get_worker", "node_a", wb))["pid"])
        # An error of node B keeps its URI.
        e = await self.error_of("get_worker", "node_b", "no-such-worker")
        self.assertEqual(e.error, "crossbar.error.no_such_worker")

        md = await self.call("start_trace", "node_b", wb, "tb", {"msg_types": ["Call", "Result"]})
        self.assertEqual(md["status"], "running")
        self.assertEqual(await self.call("list_traces", "node_b", wb), ["tb"])
        self.assertEqual(await self.call("list_traces", "node_a", wb), [])

        # Traffic on node B only.
        app = await h.open_session(self.b, "realm1", "msgpack")
        try:
            await h.step(app.register(lambda x: x * 2, h.uri(self, "dbl")))
            self.assertEqual(await h.step(app.call(h.uri(self, "dbl"), 21)), 42)
        finally:
            await app.close()

        recs = await self.call("get_trace_data", "node_b", wb, "tb", 0, None, 100)
        self.assertEqual([r["msg_type"] for r in recs], ["Call", "Result"])
        self.assertEqual(recs[0]["uri"], h.uri(self, "dbl"))
        self.assertEqual((await self.call("stop_trace", "node_b", wb, "tb"))["status"], "stopped")
        self.assertIsNone(await self.call("delete_trace", "node_b", wb, "tb"))
        e = await self.error_of("get_trace", "node_b", wb, "tb")
        self.assertEqual(e.error, "crossbar.error.no_such_object")

        [url] = [u for u in self.a.urls if u.startswith("http://")]
        with urllib.request.urlopen(url, timeout=10) as r:
            lines = r.read().decode().splitlines()
        self.assertIn('wampscope_cluster_link_state{state="up"} 1', lines)
        self.assertIn("wampscope_cluster_nodes 2", lines)
        key = 'wampscope_cluster_messages_total{direction="out"} '
        out = [ln for ln in lines if ln.startswith(key)]
        self.assertEqual(len(out), 1)
        self.assertGreater(int(out[0].split()[-1]), 0)
        await self.finish(self.a, self.b)

    async def traffic(self, router, tag):
        """One call and one publication by an application client on router."""
        app = await h.open_session(router, "realm1", "json")
        try:
            await h.step(app.register(lambda x: x + 1, h.uri(self, "inc." + tag)))
            self.assertEqual(await h.step(app.call(h.uri(self, "inc." + tag), 1)), 2)
            await h.step(app.publish(h.uri(self, "ev." + tag), tag,
                                     options=PublishOptions(acknowledge=True)))
        finally:
            await app.close()

    async def test_cluster_wide_trace(self):
        await self.start_cluster()
        [w] = await self.call("list_workers", "node_a")
        opts = {"msg_types": ["Call", "Result", "Publish"], "realms": ["realm1"]}
        started = await self.call("start_trace", "*", w, None, opts)
        self.assertEqual(sorted(started), ["node_a", "node_b"])
        tid = started["node_a"]["id"]
        self.assertTrue(tid.startswith("cluster-"), tid)
        self.assertEqual(started["node_b"]["id"], tid)
        # Node C joins while it runs: it starts it too, with the same options.
        c = self.node("node_c")
        for r in (self.a, self.b, c):
            ch.wait_log(r, ch.nodes_line(self.name, "node_a", "node_b", "node_c"))
        ch.wait_log(c, re.escape('cluster-wide trace "%s" started on this node' % tid))
        md = await self.call("get_trace", "node_c", w, tid)
        self.assertEqual(md["status"], "running")
        self.assertEqual(md["options"]["msg_types"], opts["msg_types"])
        for r, tag in ((self.a, "a"), (self.b, "b"), (c, "c")):
            await self.traffic(r, tag)
        marks = await self.call("mark_trace", "*", w, tid, "deploy")
        self.assertEqual(sorted(marks), ["node_a", "node_b", "node_c"])
        # Each node holds its own part: Call, Result, Publish, then the marker.
        for node in ("node_a", "node_b", "node_c"):
            recs = await self.call("get_trace_data", node, w, tid, 0, None, 100)
            self.assertEqual([r["msg_type"] for r in recs], ["Call", "Result", "Publish", "Marker"])
            self.assertEqual(recs[-1]["seq"], marks[node])
        # The merged reading, 5 records a page while it runs: every record of every node once,
        # in (ts, node, seq) order across pages (one machine: one clock), the traffic's order.
        nodes = ("node_a", "node_b", "node_c")
        merged, nxt = [], {}
        for _ in range(20):
            page = await self.call("get_trace_data", "*", w, tid, nxt, None, 5)
            self.assertEqual(page["errors"], {})
            self.assertLessEqual(len(page["records"]), 5)
            merged += page["records"]
            nxt = page["next"]
            if len(merged) >= 12:
                break
        self.assertEqual(len(merged), 12)
        keys = [(r["ts"], r["node_id"], r["seq"]) for r in merged]
        self.assertEqual(keys, sorted(keys))
        self.assertEqual(sorted((r["node_id"], r["seq"]) for r in merged),
                         sorted((n, s) for n in nodes for s in range(4)))
        self.assertEqual([r["node_id"] for r in merged if r["msg_type"] != "Marker"],
                         ["node_a"] * 3 + ["node_b"] * 3 + ["node_c"] * 3)
        self.assertEqual(nxt, {n: 4 for n in nodes})
        page = await self.call("get_trace_data", "*", w, tid, nxt)
        self.assertEqual(page["records"], [])
        # A node that is stopped (SIGSTOP) is a timeout entry; the others answer.
        os.kill(self.b.proc.pid, signal.SIGSTOP)
        try:
            stopped = await self.call("stop_trace", "*", w, tid)
        finally:
            os.kill(self.b.proc.pid, signal.SIGCONT)
        self.assertEqual(stopped["node_a"]["status"], "stopped")
        self.assertEqual(stopped["node_c"]["status"], "stopped")
        self.assertEqual(stopped["node_b"]["error"], "wamp.error.timeout")
        self.assertIn('"node_b"', stopped["node_b"]["args"][0])
        stopped = await self.call("stop_trace", "*", w, tid)
        self.assertEqual({n: v["status"] for n, v in stopped.items()},
                         {"node_a": "stopped", "node_b": "stopped", "node_c": "stopped"})
        deleted = await self.call("delete_trace", "*", w, tid)
        self.assertEqual(deleted, {"node_a": None, "node_b": None, "node_c": None})
        await self.finish(self.a, self.b, c)

    async def test_node_b_hung_then_killed(self):
        await self.start_cluster()
        [wb] = await self.call("list_workers", "node_b")
        # A node that does not answer (stopped, its connection alive): wamp.error.timeout.
        os.kill(self.b.proc.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            e = await self.error_of("get_worker", "node_b", wb)
            elapsed = time.monotonic() - t0
        finally:
            os.kill(self.b.proc.pid, signal.SIGCONT)
        self.assertEqual(e.error, "wamp.error.timeout")
        self.assertIn('"node_b"', e.args[0])
        self.assertGreaterEqual(elapsed, REQUEST_TIMEOUT_MS / 1000.0 - 0.1)
        self.assertLess(elapsed, REQUEST_TIMEOUT_MS / 1000.0 + SLACK_S)
        # It answers again once it runs.
        self.assertEqual((await self.call("get_worker", "node_b", wb))["type"], "router")

        # kill -9: nobody serves node_b's subject any more, which NATS tells at once (once it
        # has seen the connection close: ch.after_kill()).
        self.b.kill()
        e = await ch.after_kill(lambda: self.error_of("get_worker", "node_b", wb),
                                lambda e: e.error == "wamp.error.timeout")
        t0 = time.monotonic()
        e = await self.error_of("get_worker", "node_b", wb)
        self.assertEqual(e.error, "crossbar.error.no_such_object")
        self.assertIn('"node_b"', e.args[0])
        self.assertLess(time.monotonic() - t0, SLACK_S)
        # Once its key expires it is no longer listed.
        ch.wait_log(self.a, ch.nodes_line(self.name, "node_a"), timeout=ch.KILL_BOUND_S + 5)
        self.assertEqual(await self.call("list_nodes"), ["node_a"])
        e = await self.error_of("list_traces", "node_b", wb)
        self.assertEqual(e.error, "crossbar.error.no_such_object")
        await self.finish(self.a)

    async def test_answer_over_the_bus_size_limit(self):
        # A bus that carries at most 16 KiB per message: a page of node B's records over it is
        # refused with a clear error instead of a timeout; a smaller page goes through.
        await self.start_cluster("max_payload: 16384\n")
        [wb] = await self.call("list_workers", "node_b")
        await self.call("start_trace", "node_b", wb, "big", {"msg_types": ["Call"]})
        app = await h.open_session(self.b, "realm1", "json")
        try:
            await h.step(app.register(lambda x: len(x), h.uri(self, "len")))
            for _ in range(10):
                self.assertEqual(await h.step(app.call(h.uri(self, "len"), "x" * 4000)), 4000)
        finally:
            await app.close()
        # autobahn raises wamp.error.payload_size_exceeded as its own exception class.
        with self.assertRaises(PayloadExceededError) as cm:
            await self.call("get_trace_data", "node_b", wb, "big", 0, None, 100)
        self.assertIn("max_payload", str(cm.exception))
        recs = await self.call("get_trace_data", "node_b", wb, "big", 0, None, 2)
        self.assertEqual(len(recs), 2)
        await self.call("stop_trace", "node_b", wb, "big")
        await self.finish(self.a, self.b)


    def node_runs(self, items):
        """The items of a merged reading by node, in order, each node's checked: its records and
        "dropped" gap items (naming the node) cover every seq from its first item on, with no
        silent jump. {node_id: (first seq, seq after the last, gap items)}."""
        runs = {}
        for x in items:
            node = x["node_id"]
            first = x["from_seq"] if x.get("kind") == "gap" else x["seq"]
            start, nxt, gaps = runs.get(node, (first, first, 0))
            self.assertEqual(first, nxt, "no silent jump on %s before %s" % (node, x))
            if x.get("kind") == "gap":
                self.assertEqual((x["msg_type"], x["reason"], x["seq"]),
                                 ("Gap", "dropped", x["to_seq"]), x)
                self.assertGreaterEqual(x["to_seq"], x["from_seq"])
                gaps += 1
            runs[node] = (start, x["seq"] + 1, gaps)
        return runs

    async def test_merged_reading_says_what_each_node_dropped(self):
        """wampscope-ctl export and data with --node '*' while node B's trace of 20 records keeps
        evicting: each node's records and "dropped" gap items (naming the node) tile its seqs with
        no silent jump; the export reads what each node held when it began, and no further."""
        await self.start_cluster()
        [w] = await self.call("list_workers", "node_a")
        await self.call("start_trace", "*", w, "ring", {"limit": 20, "realms": ["realm1"]})
        pub_a = await h.open_session(self.a, "realm1", "json")
        pub_b = await h.open_session(self.b, "realm1", "json")
        for i in range(30):  # node A's trace full, and then idle
            await h.step(pub_a.publish(h.uri(self, "a"), i, options=PublishOptions(acknowledge=True)))
        pressing = True

        async def press():
            n = 0
            while pressing:
                for _ in range(20):
                    pub_b.publish(h.uri(self, "b"), n)
                    n += 1
                await asyncio.sleep(0.002)

        task = asyncio.ensure_future(press())
        path = os.path.join(self.tmp, "ring.jsonl")
        try:
            await asyncio.sleep(0.2)
            for attempt in range(20):
                rc, out, err = await self.ctl(self.a, "--node", "*", "export", "ring", "--format",
                                              "jsonl", "-o", path, "--page", "1")
                self.assertEqual(rc, 0, err)
                with open(path, encoding="utf-8") as f:
                    items = [json.loads(line) for line in f]
                runs = self.node_runs(items)
                # The count on stderr is of the records written, not of those read past a range.
                self.assertIn("exported %d records" % sum(1 for x in items if x.get("kind") != "gap"),
                              err)
                # Both traces were full when it began: 20 seqs each, and no more.
                self.assertEqual({n: r[1] - r[0] for n, r in runs.items()},
                                 {"node_a": 20, "node_b": 20})
                self.assertEqual(runs["node_a"][2], 0)
                if runs["node_b"][2]:
                    self.assertRegex(err, r"records the trace held when the export began were dropped")
                    break
            else:
                self.fail("no export met a drop on node_b in 20 tries")
            rc, out, err = await self.ctl(self.a, "--node", "*", "data", "ring", "--json",
                                          "--limit", "300")
            self.assertEqual(rc, 0, err)
            # What it read tiles each node's seqs the same way (node_b's records may still be
            # held back: "Merged reading").
            runs = self.node_runs(json.loads(out))
            self.assertEqual(runs["node_a"][1] - runs["node_a"][0], 20)
        finally:
            pressing = False
            await task
        await pub_a.close()
        await pub_b.close()
        await self.call("stop_trace", "*", w, "ring")
        await self.call("delete_trace", "*", w, "ring")
        await self.finish(self.a, self.b)

    async def test_merged_reading_of_nodes_whose_clocks_differ(self):
        """wampscope-ctl export and data with --node '*' while node A's wall clock is 5 s behind
        node B's (libfaketime): B's records, 5 s ahead of A's clock, would wait for it in a page
        that a reading cannot bound, but an export and a data reading bound each node to what
        its trace held: both get every record of both nodes at once, none called dropped."""
        await self.start_cluster(envs={"node_a": ch.faked_clock("-5s")})
        [w] = await self.call("list_workers", "node_a")
        await self.call("start_trace", "*", w, "skew", {"realms": ["realm1"]})
        for node in (self.a, self.b):
            pub = await h.open_session(node, "realm1", "json")
            for i in range(5):
                await h.step(pub.publish(h.uri(self, "t"), i,
                                         options=PublishOptions(acknowledge=True)))
            await pub.close()
        held = await self.call("get_trace", "*", w, "skew")
        counts = {n: m["next_seq"] - m["first_seq"] for n, m in held.items()}
        # The records of node B are ahead of node A's clock: an unbounded page holds them back.
        page = await self.call("get_trace_data", "*", w, "skew", 0, None, 1000)
        self.assertEqual({r["node_id"] for r in page["records"]}, {"node_a"})
        path = os.path.join(self.tmp, "skew.jsonl")
        rc, out, err = await self.ctl(self.a, "--node", "*", "export", "skew", "--format", "jsonl",
                                      "-o", path)
        self.assertEqual(rc, 0, err)
        with open(path, encoding="utf-8") as f:
            items = [json.loads(line) for line in f]
        self.assertEqual([x for x in items if x.get("kind") == "gap"], [])
        runs = self.node_runs(items)
        self.assertEqual({n: r[1] - r[0] for n, r in runs.items()}, counts)
        # In time order: node A's records, 5 s behind, first.
        self.assertEqual([x["node_id"] for x in items],
                         ["node_a"] * counts["node_a"] + ["node_b"] * counts["node_b"])
        self.assertIn("exported %d records" % len(items), err)
        rc, out, err = await self.ctl(self.a, "--node", "*", "data", "skew", "--json",
                                      "--limit", "1000")
        self.assertEqual(rc, 0, err)
        runs = self.node_runs(json.loads(out))
        self.assertEqual({n: r[1] - r[0] for n, r in runs.items()}, counts)
        await self.call("stop_trace", "*", w, "skew")
        await self.call("delete_trace", "*", w, "skew")
        await self.finish(self.a, self.b)

    async def test_clock_offsets_of_the_nodes(self):
        """node_a's wall clock is 5 s behind node_b's (libfaketime): each node estimates the
        other's offset from its heartbeats, shows it in get_worker's stats.cluster.clock_offsets
        and in wampscope_cluster_clock_offset_seconds, and logs it once (over max_clock_offset,
        1 s by default)."""
        await self.start_cluster(envs={"node_a": ch.faked_clock("-5s")})
        [w] = await self.call("list_workers", "node_a")
        for node, other, sign in (("node_a", "node_b", 1), ("node_b", "node_a", -1)):
            deadline = time.monotonic() + 10
            while True:
                offsets = (await self.call("get_worker", node, w))["stats"]["cluster"][
                    "clock_offsets"]
                if other in offsets or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.2)
            self.assertEqual(list(offsets), [other])
            # Within the heartbeats' time on the way (and libfaketime's own offset reading).
            self.assertAlmostEqual(offsets[other], 5.0 * sign, delta=0.5)
        # wampscope-ctl stats shows them: node_a's table node_b about 5 s ahead, node_b's
        # node_a about 5 s behind.
        rc, out, err = await self.ctl(self.a, "--node", "*", "stats")
        self.assertEqual(rc, 0, err)
        shown = re.findall(r"\n(node_[ab]) +([-+][0-9]+\.[0-9]{6})\n", out)
        self.assertEqual([n for n, _ in shown], ["node_b", "node_a"], out)
        self.assertAlmostEqual(float(shown[0][1]), 5.0, delta=0.5)
        self.assertAlmostEqual(float(shown[1][1]), -5.0, delta=0.5)
        ch.wait_log(self.b, r"cluster %s: node node_a's wall clock is [45]\.\d+ s behind this "
                    r"node's \(over max_clock_offset 1\.000 s\)" % self.name)
        ch.wait_log(self.a, r"node node_b's wall clock is [45]\.\d+ s ahead of this node's")
        [url] = [u for u in self.a.urls if u.startswith("http://")]
        with urllib.request.urlopen(url, timeout=10) as r:
            lines = r.read().decode().splitlines()
        # The text with the cluster's families, this one's float samples with their labels
        # included, is what Prometheus' parser and promtool accept.
        fams = {f.name: f for f in text_string_to_metric_families("\n".join(lines) + "\n")}
        [sample] = fams["wampscope_cluster_clock_offset_seconds"].samples
        self.assertEqual(sample.labels, {"node": "node_b"})
        self.assertAlmostEqual(sample.value, 5.0, delta=0.5)
        r = subprocess.run([shutil.which("promtool") or "promtool", "check", "metrics"],
                           input=("\n".join(lines) + "\n").encode(), capture_output=True,
                           timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout.decode() + r.stderr.decode())
        with open(self.b.stderr_path, encoding="utf-8") as f:
            self.assertEqual(f.read().count("wall clock is"), 1)
        await self.finish(self.a, self.b)

    async def ctl(self, router, *args):
        """wampscope-ctl --url router --realm mgmt args...: (exit status, stdout, stderr)."""
        env = dict(os.environ)
        env.pop("WAMPSCOPE_URL", None)
        proc = await asyncio.create_subprocess_exec(
                h.ctl_bin(), "--url", router.url, "--realm", "mgmt", *args,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE, env=env)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        return proc.returncode, out.decode(), err.decode()

    async def test_workers_and_stats_of_every_node(self):
        """wampscope-ctl workers and stats with --node '*' answer for every node."""
        await self.start_cluster()
        # Traffic on node B only: its stats differ from A's.
        s = await h.open_session(self.b, "realm1", "json")
        await h.step(s.call("wamp.session.count"))
        rc, out, err = await self.ctl(self.a, "--node", "*", "workers", "--json")
        self.assertEqual(rc, 0, err)
        workers = json.loads(out)
        self.assertEqual(sorted(workers), ["node_a", "node_b"])
        self.assertTrue(all(isinstance(w, list) and w for w in workers.values()), workers)
        rc, out, err = await self.ctl(self.a, "--node", "*", "workers")
        self.assertEqual(rc, 0, err)
        self.assertEqual([line.split()[0] for line in out.splitlines()], ["node_a", "node_b"])
        rc, out, err = await self.ctl(self.a, "--node", "*", "stats", "--json")
        self.assertEqual(rc, 0, err)
        stats = json.loads(out)
        self.assertEqual(sorted(stats), ["node_a", "node_b"])
        # B holds the application session; A holds only the management session of ctl itself.
        b_rx = stats["node_b"]["stats"]["messages_rx"]
        self.assertGreater(b_rx, 0, stats["node_b"])
        rc, out, err = await self.ctl(self.a, "--node", "*", "stats")
        self.assertEqual(rc, 0, err)
        self.assertIn("node_a", out)
        self.assertIn("node_b", out)
        # Each node's table ends with its cluster link: its state and the live nodes it sees.
        self.assertEqual(out.count("\ncluster link up\n"), 2, out)
        self.assertEqual(len(re.findall(r"\nnodes +2\n", out)), 2, out)
        rc, out, err = await self.ctl(self.a, "--node", "*", "stats", "--watch", "1")
        self.assertEqual(rc, 2, (out, err))
        self.assertIn("follows one node", err)
        await s.leave()
        await self.finish(self.a, self.b)


if __name__ == "__main__":
    h.main()
