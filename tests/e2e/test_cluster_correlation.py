"""One action followed across cluster nodes (mgmt/README.md "Correlation", "Merged reading"), over
a real nats-server: a management client on node C starts a cluster-wide trace; a python3-autobahn
caller on node A calls a procedure registered on node B, and a publisher on A publishes to
subscribers on B and A. The merged pages (small, with per-node cursors) hold every message of
every node exactly once, in time order; the CALL's records (CALL and RESULT on A, INVOCATION and
YIELD on B) and the PUBLISH's (PUBLISH, EVENT and PUBLISHED on A, EVENT on B) share their
correlation, the message completing the action marked last; `wampscope-ctl export --node '*'`
of the trace loads in the DevTools trace engine with flow arrows from node A's group into node
B's. An action-level cluster-wide trace records the call once, on node A, naming node B as
`callee_node`; node B writes none. The helpers are test_cluster_mgmt_nodes.py's."""

import asyncio
import os

from autobahn.wamp.types import PublishOptions

import rt_harness as h
import test_cluster_mgmt_nodes as tcmn

NODES = tcmn.NODES


class TestClusterCorrelation(tcmn.ClusterMgmtCase):
    async def apps(self, a, b):
        """A callee and a subscriber on B, a subscriber, a caller and a publisher on A; returns
        (caller, events received by B's subscriber, by A's) once A knows B's registration and
        subscription (a call answered, an event received: before any trace starts)."""
        callee = await self.session(b)
        await h.step(callee.register(lambda x: x * 2, h.uri(self, "double")))
        got_b, got_a = [], []
        sub_b = await self.session(b)
        await h.step(sub_b.subscribe(got_b.append, h.uri(self, "ev")))
        sub_a = await self.session(a)
        await h.step(sub_a.subscribe(got_a.append, h.uri(self, "ev")))
        caller = await self.session(a)
        for _ in range(100):
            try:
                if await h.step(caller.call(h.uri(self, "double"), 1)) == 2:
                    break
            except Exception:  # no_such_procedure until the registration crossed NATS
                await asyncio.sleep(0.05)
        for i in range(100):
            await h.step(caller.publish(h.uri(self, "ev"), "warm",
                                        options=PublishOptions(acknowledge=True)))
            await asyncio.sleep(0.05)
            if got_b:
                break
        # The last warm-up event reaches B after every earlier one (one NATS connection).
        await h.step(caller.publish(h.uri(self, "ev"), "sync",
                                    options=PublishOptions(acknowledge=True)))
        await self.wait_for(lambda: "sync" in got_b and "sync" in got_a, "the warm-up events")
        return caller, got_b, got_a

    async def test_cross_node_actions_share_correlation(self):
        a, b, c = self.node("node_a"), self.node("node_b"), self.node("node_c")
        self.wait_nodes((a, b, c), NODES)
        caller, got_b, got_a = await self.apps(a, b)
        warm_b, warm_a = len(got_b), len(got_a)
        mgmt = await self.session(c, "mgmt")
        [w] = await self.call(mgmt, "list_workers", "node_c")
        started = await self.call(mgmt, "start_trace", "*", w, "corr", {"realms": ["realm1"]})
        self.assertEqual(sorted(started), list(NODES))

        self.assertEqual(await h.step(caller.call(h.uri(self, "double"), 21)), 42)
        await h.step(caller.publish(h.uri(self, "ev"), "traced",
                                    options=PublishOptions(acknowledge=True)))
        await self.wait_for(lambda: len(got_b) > warm_b and len(got_a) > warm_a,
                            "the traced event on A and B")
        stopped = await self.call(mgmt, "stop_trace", "*", w, "corr")
        self.assertEqual({n: v["status"] for n, v in stopped.items()},
                         {n: "stopped" for n in NODES})

        # Merged pages of 2, each continuing from the per-node cursors of the one before.
        per_node = {n: await self.call(mgmt, "get_trace_data", n, w, "corr", 0, None, 1000)
                    for n in NODES}
        recs, page = await self.merged(mgmt, w, "corr", 2)
        self.assertEqual(page["errors"], {})
        keys = [(r["ts"], r["node_id"], r["seq"]) for r in recs]
        self.assertEqual(keys, sorted(keys))
        self.assertEqual(sorted((r["node_id"], r["seq"]) for r in recs),
                         sorted((n, r["seq"]) for n in NODES for r in per_node[n]))
        self.assertEqual(len(set((r["node_id"], r["seq"]) for r in recs)), len(recs))
        types = {n: sorted(r["msg_type"] for r in recs if r["node_id"] == n) for n in NODES}
        self.assertEqual(types, {"node_a": ["Call", "Event", "Publish", "Published", "Result"],
                                 "node_b": ["Event", "Invocation", "Yield"],
                                 "node_c": []})

        def where(node, msg_type):
            [i] = [i for i, r in enumerate(recs)
                   if r["node_id"] == node and r["msg_type"] == msg_type]
            return i

        # The call: CALL on A, INVOCATION and YIELD on B, RESULT on A, in this (time) order,
        # one correlation, the RESULT completing it.
        call = [where("node_a", "Call"), where("node_b", "Invocation"),
                where("node_b", "Yield"), where("node_a", "Result")]
        self.assertEqual(call, sorted(call))
        corr = recs[call[0]]["correlation"]
        self.assertTrue(corr)
        self.assertEqual([recs[i]["correlation"] for i in call], [corr] * 4)
        self.assertEqual([recs[i]["correlation_is_last"] for i in call],
                         [False, False, False, True])
        self.assertTrue(recs[call[0]]["correlation_is_anchor"])
        self.assertEqual({recs[i]["uri"] for i in call}, {h.uri(self, "double")})
        # The publication: PUBLISH on A first, the EVENTs on A and B and the PUBLISHED share its
        # correlation; the PUBLISHED (acknowledged) completes it.
        pub = [where("node_a", "Publish"), where("node_a", "Event"), where("node_b", "Event"),
               where("node_a", "Published")]
        self.assertEqual(min(pub), pub[0])
        pcorr = recs[pub[0]]["correlation"]
        self.assertTrue(pcorr)
        self.assertNotEqual(pcorr, corr)
        self.assertEqual([recs[i]["correlation"] for i in pub], [pcorr] * 4)
        self.assertEqual([recs[i]["correlation_is_last"] for i in pub],
                         [False, False, False, True])

        # Exported for every node: the DevTools trace engine loads it; the flow arrows of the
        # two actions start at node A's action slices and end on node B's events.
        ch = os.path.join(self.tmp, "corr.json")
        rc, _, err = await self.ctl(c, "--node", "*", "export", "corr", "--format", "chrome",
                                    "-o", ch)
        self.assertEqual(rc, 0, err)
        engine = await self.trace_engine(ch)
        pid_node = {int(p): n.split()[-1] for p, n in engine["processes"].items()}
        by_key = {(r["node_id"], r["seq"]): r for r in recs}
        crossing = set()
        for src, dst in engine["flows"]:
            dst_rec = by_key[(pid_node[dst["pid"]], dst["args"]["seq"])]
            self.assertEqual(dst_rec["correlation"], src["args"]["correlation"])
            if pid_node[src["pid"]] != pid_node[dst["pid"]]:
                crossing.add((pid_node[src["pid"]], pid_node[dst["pid"]],
                              dst_rec["msg_type"], dst_rec["correlation"]))
        self.assertEqual(crossing, {("node_a", "node_b", "Invocation", corr),
                                    ("node_a", "node_b", "Yield", corr),
                                    ("node_a", "node_b", "Event", pcorr)})
        self.assertEqual(len(engine["flows"]), 6)  # 3 followers of each anchor
        await self.stop_nodes(a, b, c)

    async def test_flight_recorders_share_correlation(self):
        # No trace runs: each node's flight recorder is read from its wire capture, and a call
        # from A to B, or a publication from A with subscribers on A and B, carries in both the
        # one UUID A's capture chose for it.
        a, b, c = self.node("node_a"), self.node("node_b"), self.node("node_c")
        self.wait_nodes((a, b, c), NODES)
        caller, got_b, got_a = await self.apps(a, b)
        warm_b, warm_a = len(got_b), len(got_a)
        self.assertEqual(await h.step(caller.call(h.uri(self, "double"), 21)), 42)
        await h.step(caller.publish(h.uri(self, "ev"), "traced",
                                    options=PublishOptions(acknowledge=True)))
        await self.wait_for(lambda: len(got_b) > warm_b and len(got_a) > warm_a,
                            "the event on A and B")
        mgmt = await self.session(c, "mgmt")
        [w] = await self.call(mgmt, "list_workers", "node_c")
        fr = {n: await self.call(mgmt, "get_trace_data", n, w, "flight-recorder", 0, None, 10000)
              for n in ("node_a", "node_b")}
        # (the flight recorder keeps no payload: the last CALL of the procedure is this one)
        call = [r for r in fr["node_a"]
                if r["msg_type"] == "Call" and r["uri"] == h.uri(self, "double")][-1]
        corr = call["correlation"]
        self.assertTrue(corr and call["correlation_is_anchor"])
        on_a = [r for r in fr["node_a"] if r["correlation"] == corr]
        on_b = [r for r in fr["node_b"] if r["correlation"] == corr]
        self.assertEqual([r["msg_type"] for r in on_a], ["Call", "Result"])
        self.assertEqual([r["msg_type"] for r in on_b], ["Invocation", "Yield"])
        self.assertEqual({r["uri"] for r in on_a + on_b}, {h.uri(self, "double")})
        self.assertEqual([r["correlation_is_last"] for r in on_a + on_b],
                         [False, True, False, False])
        # The publication: PUBLISH, EVENT and PUBLISHED on A, EVENT on B.
        pub = [r for r in fr["node_a"]
               if r["msg_type"] == "Publish" and r["uri"] == h.uri(self, "ev")][-1]
        pcorr = pub["correlation"]
        self.assertTrue(pcorr and pcorr != corr)
        self.assertEqual(sorted(r["msg_type"] for r in fr["node_a"] if r["correlation"] == pcorr),
                         ["Event", "Publish", "Published"])
        ev_b = [r for r in fr["node_b"] if r["correlation"] == pcorr]
        self.assertEqual([(r["msg_type"], r["uri"]) for r in ev_b],
                         [("Event", h.uri(self, "ev"))])
        # Every call that reached B (the warm-up's, too) has its CALL's UUID there, each its own.
        calls_a = [r["correlation"] for r in fr["node_a"] if r["msg_type"] == "Call"]
        invs_b = [r["correlation"] for r in fr["node_b"] if r["msg_type"] == "Invocation"]
        self.assertLessEqual(set(invs_b), set(calls_a))
        self.assertEqual(len(set(calls_a)), len(calls_a))
        self.assertEqual(len(set(invs_b)), len(invs_b))
        await self.stop_nodes(a, b, c)

    async def test_cross_node_call_action_record(self):
        a, b, c = self.node("node_a"), self.node("node_b"), self.node("node_c")
        self.wait_nodes((a, b, c), NODES)
        caller, got_b, got_a = await self.apps(a, b)
        warm_b = len(got_b)
        mgmt = await self.session(c, "mgmt")
        [w] = await self.call(mgmt, "list_workers", "node_c")
        started = await self.call(mgmt, "start_trace", "*", w, "act",
                                  {"realms": ["realm1"], "trace_level": "action"})
        self.assertEqual(sorted(started), list(NODES))
        self.assertEqual(await h.step(caller.call(h.uri(self, "double"), 4)), 8)
        await h.step(caller.publish(h.uri(self, "ev"), "traced",
                                    options=PublishOptions(acknowledge=True)))
        await self.wait_for(lambda: len(got_b) > warm_b, "the traced event on B")
        await self.call(mgmt, "stop_trace", "*", w, "act")
        recs, page = await self.merged(mgmt, w, "act", 10)
        self.assertEqual(page["errors"], {})
        # One record per action, both on the caller's node; the call names the callee's node.
        self.assertEqual(sorted((r["node_id"], r["action"]) for r in recs),
                         [("node_a", "call"), ("node_a", "publish")])
        [call] = [r for r in recs if r["action"] == "call"]
        self.assertEqual(call["callee_node"], "node_b")
        self.assertEqual(call["uri"], h.uri(self, "double"))
        self.assertTrue(call["success"])
        self.assertEqual(call["originator"]["session_id"], caller._session_id)
        [pub] = [r for r in recs if r["action"] == "publish"]
        self.assertIsNone(pub["callee_node"])
        await self.stop_nodes(a, b, c)


if __name__ == "__main__":
    h.main()
