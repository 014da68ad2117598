"""The whole cluster managed from any node, over a real nats-server (mgmt/README.md "Cluster",
"Live data"): three nodes; a python3-autobahn management client on node C starts a cluster-wide
trace and follows every node's live topics (each event naming its node, nothing sent by a node
nobody listens to); application clients on A and B call and publish (locally); the merged, paged
records hold every message of every node once, in time order; every node's flight recorder is
read from C and mark_trace "*" marks all of them; node B killed mid-trace is reported gone while
A's and C's records stay readable. A persisted cluster-wide trace is read merged after every node
restarted. Access: a node with management credentials refuses an anonymous client even though
the node it would reach is in protected mode, and an application realm or a node without the
management API reaches no node."""

import asyncio
import json
import os

from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import PublishOptions

import cluster_harness as ch
import rt_harness as h
import test_cluster_mgmt as tcm

P = "crossbarfabriccenter."
TOPIC = P + "remote.tracing."
NODES = ("node_a", "node_b", "node_c")


class ClusterMgmtCase(ch.ClusterCase):
    """ClusterCase with its nats-server started and the helpers of a test with
    management-enabled nodes (no tests of its own: test_cluster_correlation.py uses it too)."""

    PREFIX = "n_"
    TMP_PREFIX = "wampscope-cmgmtn-"

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.nats.start()

    def node(self, node_id, mgmt=None):
        """A node with the management API (mgmt: its "management" object), the flight recorder
        on and its own data directory in the test's temp dir."""
        path = tcm.write_config(self.tmp, node_id, self.nats.port, self.name)
        with open(path, encoding="utf-8") as f:
            cfg = json.load(f)
        ws = cfg["workers"][0]["wampscope"]
        ws["tracing"] = {"flight_recorder": True,
                         "data_dir": os.path.join(self.tmp, "data-" + node_id)}
        if mgmt is not None:
            ws["management"] = mgmt
        with open(path, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        r = h.RouterProc(config=path)
        self.addCleanup(r.cleanup)
        return r.start()

    def wait_nodes(self, routers, ids):
        for r in routers:
            ch.wait_log(r, ch.nodes_line(self.name, *ids))

    async def session(self, router, realm="realm1", **kw):
        s = await h.open_session(router, realm, "json", **kw)
        self.sessions.append(s)
        return s

    async def stop_nodes(self, *routers):
        """Closes the test's sessions, then stops routers (each checks its exit)."""
        await h.close_sessions(self.sessions)
        self.sessions = []
        for r in routers:
            r.stop()

    async def call(self, mgmt, proc, *args):
        return await h.step(mgmt.call(P + proc, *args))

    async def traffic(self, router, tag):
        """Two sessions (HELLO, WELCOME each), a subscriber, then a call and an acknowledged
        publication, on router: 15 messages of realm1 (SUBSCRIBE/SUBSCRIBED, REGISTER/REGISTERED,
        CALL, INVOCATION, YIELD, RESULT, PUBLISH, EVENT, PUBLISHED: 11 after the joins)."""
        sub = await self.session(router)
        await h.step(sub.subscribe(lambda x: None, h.uri(self, "ev." + tag)))
        app = await self.session(router)
        await h.step(app.register(lambda x: x + 1, h.uri(self, "inc." + tag)))
        self.assertEqual(await h.step(app.call(h.uri(self, "inc." + tag), 1)), 2)
        await h.step(app.publish(h.uri(self, "ev." + tag), tag,
                                 options=PublishOptions(acknowledge=True)))

    async def merged(self, mgmt, w, tid, limit, want=None, rounds=40):
        """Every merged page of trace tid from the start (limit records each): the records, the
        last answer. Stops at an empty page, or once want records came."""
        recs, nxt, page = [], {}, None
        for _ in range(rounds):
            page = await self.call(mgmt, "get_trace_data", "*", w, tid, nxt, None, limit)
            self.assertLessEqual(len(page["records"]), limit)
            recs += page["records"]
            nxt = page["next"]
            if (want is None and not page["records"]) or (want is not None and len(recs) >= want):
                break
            if not page["records"]:
                await asyncio.sleep(0.2)  # records held back while the trace runs
        return recs, page

    async def wait_for(self, cond, what, timeout=10.0):
        for _ in range(int(timeout / 0.05)):
            if cond():
                return
            await asyncio.sleep(0.05)
        self.fail("no %s within %.0f s" % (what, timeout))

    async def ctl(self, router, *args):
        """wampscope-ctl --url router args...: (exit status, stdout, stderr)."""
        env = dict(os.environ)
        env.pop("WAMPSCOPE_URL", None)
        proc = await asyncio.create_subprocess_exec(
                h.ctl_bin(), "--url", router.url, *args, stdout=asyncio.subprocess.PIPE,
                stderr=asyncio.subprocess.PIPE, env=env)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        return proc.returncode, out.decode(), err.decode()

    async def trace_engine(self, path):
        """What the DevTools trace engine (tests/browser/analyze_chrome.mjs) made of the Chrome
        file at path; fails when it rejects it."""
        browser = os.path.join(os.environ["RT_SOURCE_DIR"], "tests", "browser")
        self.assertTrue(os.path.isdir(os.path.join(browser, "node_modules", "@paulirish")),
                        "tests/browser/node_modules missing: npm ci there (make test does)")
        proc = await asyncio.create_subprocess_exec(
                "node", os.path.join(browser, "analyze_chrome.mjs"), path, cwd=browser,
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 60)
        self.assertEqual(proc.returncode, 0, err.decode())
        return json.loads(out)


class TestClusterMgmtNodes(ClusterMgmtCase):
    async def test_three_nodes_traced_from_node_c(self):
        a, b, c = self.node("node_a"), self.node("node_b"), self.node("node_c")
        self.wait_nodes((a, b, c), NODES)
        mgmt = await self.session(c, "mgmt")
        [w] = await self.call(mgmt, "list_workers", "node_c")

        # Nobody listens: node A sends no live event for its own trace.
        await self.call(mgmt, "start_trace", "node_a", w, "quiet", {"realms": ["nothing"]})
        await self.call(mgmt, "stop_trace", "node_a", w, "quiet")
        worker_a = await self.call(mgmt, "get_worker", "node_a", w)
        self.assertEqual(worker_a["stats"]["cluster"]["live_forwarded"], 0)

        events = {"started": [], "data": [], "stopped": []}
        for kind in events:
            await h.step(mgmt.subscribe(lambda *args, k=kind: events[k].append(args),
                                        TOPIC + "on_trace_" + kind))
        # Every node learns the interest within its renewal period.
        for n in ("node_a", "node_b"):
            for _ in range(60):
                st = (await self.call(mgmt, "get_worker", n, w))["stats"]["cluster"]
                if st["live_interested_nodes"] == 1:
                    break
                await asyncio.sleep(0.1)
            self.assertEqual(st["live_interested_nodes"], 1, n)

        started = await self.call(mgmt, "start_trace", "*", w, None,
                                  {"realms": ["realm1"], "batching_period": 50})
        self.assertEqual(sorted(started), list(NODES))
        tid = started["node_c"]["id"]
        await self.wait_for(lambda: len(events["started"]) == 3, "on_trace_started of 3 nodes")
        self.assertEqual(sorted(e[0] for e in events["started"]), list(NODES))
        self.assertEqual({e[2] for e in events["started"]}, {tid})

        await self.traffic(a, "a")
        await self.traffic(b, "b")
        # Live batches of A's and B's records reach C's subscriber, each naming its node.
        live = {}

        def live_count():
            live.clear()
            for node, _, t, _, recs in events["data"]:
                if t == tid:
                    live.setdefault(node, set()).update(r["seq"] for r in recs)
            return all(len(live.get(n, ())) >= 11 for n in ("node_a", "node_b"))

        await self.wait_for(live_count, "live records of nodes A and B")

        # The flight recorders of every node, read from C: A's holds its application sessions.
        fr = await self.call(mgmt, "get_trace_data", "node_a", w, "flight-recorder", 0, None, 1000)
        self.assertIn("Call", [r["msg_type"] for r in fr])
        self.assertEqual(sorted(await self.call(mgmt, "list_traces", "node_b", w)),
                         sorted(["flight-recorder", tid]))
        # One mark for the whole cluster: every running trace of every node.
        marks = await self.call(mgmt, "mark_trace", "*", w, None, "deploy started")
        self.assertEqual(sorted(marks), list(NODES))
        for n in NODES:
            self.assertEqual(sorted(marks[n]), sorted(["flight-recorder", tid]), n)
        fr = await self.call(mgmt, "get_trace_data", "node_b", w, "flight-recorder",
                             marks["node_b"]["flight-recorder"], None, 10)
        self.assertEqual(fr[0]["msg_type"], "Marker")
        self.assertEqual(fr[0]["uri"], "deploy started")

        # Merged pages of 4: every record of every node once, in (ts, node, seq) order.
        per_node = {}
        for n in NODES:
            per_node[n] = await self.call(mgmt, "get_trace_data", n, w, tid, 0, None, 1000)
        total = sum(len(v) for v in per_node.values())
        self.assertGreaterEqual(len(per_node["node_a"]), 12)  # 11 messages and the marker
        self.assertGreaterEqual(len(per_node["node_b"]), 12)
        recs, page = await self.merged(mgmt, w, tid, 4, want=total)
        self.assertEqual(page["errors"], {})
        keys = [(r["ts"], r["node_id"], r["seq"]) for r in recs]
        self.assertEqual(keys, sorted(keys))
        self.assertEqual(sorted((r["node_id"], r["seq"]) for r in recs),
                         sorted((n, r["seq"]) for n in NODES for r in per_node[n]))
        for n in ("node_a", "node_b"):
            types = [r["msg_type"] for r in recs if r["node_id"] == n]
            for t in ("Call", "Invocation", "Yield", "Result", "Publish", "Event", "Published"):
                self.assertEqual(types.count(t), 1, (n, t, types))
            self.assertEqual({r["uri"] for r in recs if r["node_id"] == n and r["msg_type"] == "Call"},
                             {h.uri(self, "inc." + n[-1])})

        # Node B killed mid-trace: reported gone, A's and C's records still readable.
        b.kill()
        page = await ch.after_kill(
            lambda: self.call(mgmt, "get_trace_data", "*", w, tid, 0, None, 1000),
            lambda p: p["errors"].get("node_b", {}).get("error") == "wamp.error.timeout")
        self.assertEqual(page["errors"]["node_b"]["error"], "crossbar.error.no_such_object")
        self.assertIn('"node_b"', page["errors"]["node_b"]["args"][0])
        got = {(r["node_id"], r["seq"]) for r in page["records"]}
        for n in ("node_a", "node_c"):
            self.assertTrue({(n, r["seq"]) for r in per_node[n]} <= got, n)
        self.assertEqual(page["next"]["node_b"], 0)
        stopped = await self.call(mgmt, "stop_trace", "*", w, tid)
        self.assertEqual(stopped["node_a"]["status"], "stopped")
        self.assertEqual(stopped["node_c"]["status"], "stopped")
        if "node_b" in stopped:  # until its key expires it is still listed
            self.assertEqual(stopped["node_b"]["error"], "crossbar.error.no_such_object")
        await self.wait_for(lambda: sorted(e[0] for e in events["stopped"] if e[2] == tid)
                            == ["node_a", "node_c"], "on_trace_stopped of A and C")
        await self.stop_nodes(a, c)

    async def test_persisted_cluster_trace_after_restart(self):
        a, b = self.node("node_a"), self.node("node_b")
        self.wait_nodes((a, b), NODES[:2])
        mgmt = await self.session(a, "mgmt")
        [w] = await self.call(mgmt, "list_workers", "node_a")
        started = await self.call(mgmt, "start_trace", "*", w, "kept",
                                  {"realms": ["realm1"], "persist": True})
        self.assertEqual(sorted(started), ["node_a", "node_b"])
        await self.traffic(a, "a")
        await self.traffic(b, "b")
        stopped = await self.call(mgmt, "stop_trace", "*", w, "kept")
        self.assertEqual({n: v["status"] for n, v in stopped.items()},
                         {"node_a": "stopped", "node_b": "stopped"})
        before, page = await self.merged(mgmt, w, "kept", 5)
        self.assertEqual(page["errors"], {})
        self.assertGreaterEqual(len(before), 22)
        await self.stop_nodes(a, b)

        # Both nodes restart: each reloads its own part; the merged reading is the same.
        a, b = self.node("node_a"), self.node("node_b")
        self.wait_nodes((a, b), NODES[:2])
        mgmt = await self.session(b, "mgmt")
        self.assertEqual((await self.call(mgmt, "get_trace", "node_a", w, "kept"))["status"],
                         "stopped")
        after, page = await self.merged(mgmt, w, "kept", 7)
        self.assertEqual(page["errors"], {})

        def key(r):
            return (r["node_id"], r["seq"], r["ts"], r["msg_type"], r["uri"])

        self.assertEqual([key(r) for r in after], [key(r) for r in before])
        await self.stop_nodes(a, b)

    async def test_ctl_on_every_node(self):
        a, b = self.node("node_a"), self.node("node_b")
        self.wait_nodes((a, b), NODES[:2])
        rc, out, err = await self.ctl(a, "--node", "*", "start", "cw", "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(json.loads(out)), ["node_a", "node_b"])
        await self.traffic(a, "a")
        await self.traffic(b, "b")
        rc, out, err = await self.ctl(b, "--node", "*", "mark", "cw", "deploy")
        self.assertEqual(rc, 0, err)
        self.assertEqual(sorted(json.loads(out)), ["node_a", "node_b"])
        rc, out, err = await self.ctl(b, "--node", "*", "traces", "--json")
        self.assertEqual(rc, 0, err)
        self.assertEqual({n: [m["id"] for m in ms] for n, ms in json.loads(out).items()},
                         {"node_a": ["flight-recorder", "cw"], "node_b": ["flight-recorder", "cw"]})
        rc, out, err = await self.ctl(b, "--node", "*", "traces")
        self.assertEqual(rc, 0, err)
        self.assertLess(out.index("node node_a"), out.index("node node_b"))
        rc, out, err = await self.ctl(b, "--node", "*", "stop", "cw")
        self.assertEqual(rc, 0, err)
        self.assertEqual({n: m["status"] for n, m in json.loads(out).items()},
                         {"node_a": "stopped", "node_b": "stopped"})
        # data: the merged records, each naming its node, in time order.
        rc, out, err = await self.ctl(b, "--node", "*", "data", "cw", "--json", "--limit", "1000")
        self.assertEqual(rc, 0, err)
        recs = json.loads(out)
        self.assertEqual([(r["ts"], r["node_id"], r["seq"]) for r in recs],
                         sorted((r["ts"], r["node_id"], r["seq"]) for r in recs))
        for n in ("node_a", "node_b"):
            seqs = [r["seq"] for r in recs if r["node_id"] == n]
            self.assertEqual(seqs, list(range(len(seqs))))
            self.assertGreaterEqual(len(seqs), 12)
        rc, out, err = await self.ctl(b, "--node", "*", "data", "cw")
        self.assertEqual(rc, 0, err)
        self.assertTrue(out.startswith("NODE"), out[:200])
        self.assertIn("node_a", out)
        # export: JSON Lines with node_id, Chrome with one process per node.
        jl = os.path.join(self.tmp, "cw.jsonl")
        rc, _, err = await self.ctl(a, "--node", "*", "export", "cw", "--format", "jsonl",
                                    "-o", jl)
        self.assertEqual(rc, 0, err)
        with open(jl, encoding="utf-8") as f:
            lines = [json.loads(ln) for ln in f]
        self.assertEqual([(r["node_id"], r["seq"]) for r in lines],
                         [(r["node_id"], r["seq"]) for r in recs])
        ch = os.path.join(self.tmp, "cw.json")
        rc, _, err = await self.ctl(a, "--node", "*", "export", "cw", "--format", "chrome",
                                    "-o", ch)
        self.assertEqual(rc, 0, err)
        with open(ch, encoding="utf-8") as f:
            doc = json.load(f)
        procs = {e["pid"]: e["args"]["name"] for e in doc["traceEvents"]
                 if e.get("ph") == "M" and e["name"] == "process_name"}
        # One process per node (and the export's own one for the markers).
        self.assertEqual(sorted(procs.values()), ["node node_a", "node node_b",
                                                  "wampscope markers"])
        calls = {procs[e["pid"]] for e in doc["traceEvents"]
                 if e.get("ph") == "i" and e["args"].get("msg_type") == "Call"}
        self.assertEqual(calls, {"node node_a", "node node_b"})
        # A real consumer, the Chrome DevTools trace engine, loads it: one process per node and
        # one flow arrow per correlated pair, each from the anchor's action slice to the
        # follower's event on the follower's node.
        engine = await self.trace_engine(ch)
        self.assertEqual(sorted(engine["processes"].values()),
                         ["node node_a", "node node_b", "wampscope markers"])
        pid_node = {int(p): n.split()[-1] for p, n in engine["processes"].items()}
        by_corr = {}
        for r in recs:
            if r.get("correlation"):
                by_corr.setdefault(r["correlation"], []).append(r)
        pairs = sum(len(v) - 1 for v in by_corr.values())
        self.assertGreaterEqual(pairs, 16)
        self.assertEqual(len(engine["flows"]), pairs)
        by_key = {(r["node_id"], r["seq"]): r for r in recs}
        for src, dst in engine["flows"]:
            self.assertEqual(src["ph"], "X")
            rec = by_key[(pid_node[dst["pid"]], dst["args"]["seq"])]
            self.assertEqual(rec["correlation"], src["args"]["correlation"])
            self.assertLess(abs(dst["ts"] - rec["ts"] * 1e6), 5)
        rc, out, err = await self.ctl(a, "--node", "*", "delete", "cw")
        self.assertEqual(rc, 0, err)
        self.assertEqual(json.loads(out), {"node_a": None, "node_b": None})
        await self.stop_nodes(a, b)

    async def test_ctl_tail_every_node(self):
        a, b = self.node("node_a"), self.node("node_b")
        self.wait_nodes((a, b), NODES[:2])
        rc, _, err = await self.ctl(a, "--node", "*", "start", "tl", "--realm", "realm1",
                                    "--batching-period", "50")
        self.assertEqual(rc, 0, err)
        await self.traffic(a, "a")  # before tail: the last 3 records of each node come first
        proc = await asyncio.create_subprocess_exec(
                h.ctl_bin(), "--url", b.url, "--node", "*", "tail", "tl", "--json", "-n", "3",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        # A tail of node B's part alone, on node B (all of it, whenever it starts): node A's
        # batches reach node B too, and are not node B's records.
        only_b = await asyncio.create_subprocess_exec(
                h.ctl_bin(), "--url", b.url, "--node", "node_b", "tail", "tl", "--json", "-n",
                "1000",
                stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        self.addCleanup(lambda: only_b.returncode is None and only_b.kill())
        try:
            got = []

            async def read(n):
                while len(got) < n:
                    line = await asyncio.wait_for(proc.stdout.readline(), 20)
                    self.assertTrue(line, "tail ended early")
                    got.append(json.loads(line))

            await read(3)
            self.assertEqual({r["node_id"] for r in got}, {"node_a"})
            # Live records of both nodes, the tail being on node B: node A's come through the
            # live topics of every node.
            mgmt = await self.session(b, "mgmt")
            for _ in range(100):  # node B's interest (the tail's subscription) reached node A
                st = (await self.call(mgmt, "get_worker", "node_a", "router1"))["stats"]
                if st["cluster"]["live_interested_nodes"] == 1:
                    break
                await asyncio.sleep(0.05)
            await self.traffic(a, "a2")
            await self.traffic(b, "b")
            await read(3 + 2 * 15)  # HELLO, WELCOME (2 sessions) and 11 messages each
            rc, _, err = await self.ctl(a, "--node", "*", "stop", "tl")
            self.assertEqual(rc, 0, err)
            out, err = await asyncio.wait_for(proc.communicate(), 20)
            got += [json.loads(ln) for ln in out.decode().splitlines()]
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        self.assertEqual(proc.returncode, 0)
        self.assertIn("trace tl stopped on every node", err.decode())
        out_b, err_b = await asyncio.wait_for(only_b.communicate(), 20)
        self.assertEqual(only_b.returncode, 0, err_b.decode())
        seqs_b = [json.loads(ln)["seq"] for ln in out_b.decode().splitlines()]
        self.assertEqual(seqs_b, [r["seq"] for r in got if r["node_id"] == "node_b"])
        # Each node's records exactly as get_trace_data has them, from the start of the tail.
        for n in ("node_a", "node_b"):
            held = await self.call(mgmt, "get_trace_data", n, "router1", "tl", 0, None, 1000)
            mine = [r for r in got if r["node_id"] == n]
            self.assertGreaterEqual(len(mine), 15, n)
            self.assertEqual([r["seq"] for r in mine], [r["seq"] for r in held[-len(mine):]])
            self.assertEqual([r["seq"] for r in mine],
                             list(range(mine[0]["seq"], mine[0]["seq"] + len(mine))))
        await self.stop_nodes(a, b)

    async def test_forwarding_grants_nothing_more(self):
        ticket = {"ticket": {"type": "static",
                             "principals": {"ops": {"ticket": "ops-secret"}}}}
        a = self.node("node_a", {"enabled": True, "realm": "mgmt", "auth": ticket})
        b = self.node("node_b")  # protected mode: anonymous loopback sessions are admin there
        c = self.node("node_c", {"enabled": False})
        self.wait_nodes((a, b, c), NODES)
        # Node A's credentials apply to its clients, whatever node B would accept.
        with self.assertRaises(h.LeftBeforeJoin) as cm:
            await self.session(a, "mgmt")
        self.assertEqual(cm.exception.details.reason, "wamp.error.no_auth_method")
        # An application realm has no management procedures, on any node.
        for r in (a, c):
            app = await self.session(r)
            with self.assertRaises(ApplicationError) as ce:
                await h.step(app.call(P + "get_worker", "node_b", "router1"))
            self.assertEqual(ce.exception.error, "wamp.error.no_such_procedure")
        # The authenticated principal of node A manages node B; node C (no management API) is
        # a node nobody serves: gone for management calls.
        ops = await self.session(a, "mgmt", cls=tcm_ticket_client("ops", "ops-secret"))
        self.assertEqual((await self.call(ops, "get_worker", "node_b", "router1"))["type"],
                         "router")
        with self.assertRaises(ApplicationError) as ce:
            await self.call(ops, "get_worker", "node_c", "router1")
        self.assertEqual(ce.exception.error, "crossbar.error.no_such_object")
        self.assertIn('"node_c"', ce.exception.args[0])
        await self.stop_nodes(a, b, c)


def tcm_ticket_client(authid, ticket):
    """An autobahn session class that joins with ticket authentication."""

    class TicketClient(h.Client):
        def onConnect(self):
            self.join(self.config.realm, authmethods=["ticket"], authid=authid)

        def onChallenge(self, challenge):
            return ticket

    return TicketClient


if __name__ == "__main__":
    h.main()
