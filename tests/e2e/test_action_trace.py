"""Action-level traces (trace_level "action", mgmt/README.md "Action-level traces") against the real
router: a management client (python3-autobahn, JSON or MessagePack) starts an action trace,
autobahn application clients join, register, subscribe, call and publish, and the records paged
with get_trace_data (and fed live through on_trace_data) must be exactly one per completed
action, with the clients' own session ids as originator and responders, success, a plausible duration,
and the error URI of a failed action (the router's own, or the callee's).
"""

import asyncio
import time
import unittest

from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import PublishOptions

import rt_harness as h
import test_persist as tp
import test_tracing as tt

ACTION_KEYS = {"seq", "pc", "ts", "realm", "action", "correlation", "uri", "originator",
               "responders", "success", "duration", "error", "callee_node"}
PEER_KEYS = {"session_id", "authid", "authrole"}


class ActionTraceBase:
    """Runs once per management serializer (the subclasses below)."""

    def check_action_record(self, r):
        self.assertEqual(set(r), ACTION_KEYS, r)
        self.assertIsInstance(r["seq"], int)
        self.assertIsInstance(r["pc"], float)
        self.assertIsInstance(r["ts"], float)
        self.assertGreaterEqual(r["ts"], self.t_begin - 1.0)
        self.assertIsInstance(r["duration"], float)
        self.assertGreaterEqual(r["duration"], 0.0)
        self.assertLess(r["duration"], 10.0)
        # The record is stamped with its anchor's time and covers [ts, ts + duration].
        self.assertLessEqual(r["ts"] + r["duration"], time.time() + 1.0)
        self.assertRegex(r["correlation"], tt.UUID_RE)
        self.assertIsInstance(r["success"], bool)
        # A failed action names the ERROR/ABORT that ended it; a successful one has none.
        if r["success"]:
            self.assertIsNone(r["error"])
        else:
            self.assertIsInstance(r["error"], str)
        self.assertEqual(set(r["originator"]), PEER_KEYS)
        self.assertIsInstance(r["responders"], list)
        for p in r["responders"]:
            self.assertEqual(set(p), PEER_KEYS)
            self.assertNotEqual(p["session_id"], r["originator"]["session_id"])
        ids = [p["session_id"] for p in r["responders"]]
        self.assertEqual(len(ids), len(set(ids)), "responders are listed once each")

    @staticmethod
    def ident(peer):
        return {"session_id": peer.id, "authid": peer.authid, "authrole": peer.authrole}

    async def test_call_publish_subscribe_records(self):
        m = await self.mgmt()
        # Refused: an action trace filters on the anchor, which the router receives.
        await self.assert_error("crossbar.error.invalid_configuration",
                                m.start("bad", {"trace_level": "action", "direction": "rx"}),
                                "direction")
        feed = []
        await h.step(m.peer.s.subscribe(lambda *a: feed.append(list(a)),
                                        tt.TOPIC_PREFIX + "on_trace_data"))
        meta = await m.start("act", {"trace_level": "action", "realms": ["realm1"],
                                     "batching_period": 20})
        self.assertEqual(meta["options"]["trace_level"], "action")
        self.assertEqual(meta["options"]["direction"], "both")
        calls = await m.start("calls", {"trace_level": "action", "msg_types": ["Call"]})
        self.assertEqual(calls["options"]["msg_types"], ["Call"])

        callee = await self.peer("msgpack", "callee")
        caller = await self.peer("json", "caller")
        sub1 = await self.peer("json", "sub1")
        sub2 = await self.peer("msgpack", "sub2")
        pub = await self.peer("json", "pub")
        other = await self.peer("json", "other", realm="realm2")  # not in the trace's realms
        proc, topic = h.uri(self, "add"), h.uri(self, "news")

        async def add(a, b):
            await asyncio.sleep(0.05)
            return a + b

        def oops():
            raise ApplicationError("com.example.error.oops", "no")

        reg = await h.step(callee.s.register(add, proc))
        reg_fail = await h.step(callee.s.register(oops, h.uri(self, "fail")))
        inbox1, inbox2 = tt.Inbox(), tt.Inbox()
        await h.step(sub1.s.subscribe(inbox1, topic))
        sub_b = await h.step(sub2.s.subscribe(inbox2, topic))
        self.assertEqual(await h.step(caller.s.call(proc, 2, 3)), 5)
        with self.assertRaises(ApplicationError) as cm:
            await h.step(caller.s.call(h.uri(self, "nobody")))
        self.assertEqual(cm.exception.error, "wamp.error.no_such_procedure")
        with self.assertRaises(ApplicationError) as cm:
            await h.step(caller.s.call(h.uri(self, "fail")))
        self.assertEqual(cm.exception.error, "com.example.error.oops")
        await h.step(pub.s.publish(topic, "hello", options=PublishOptions(acknowledge=True)))
        await inbox1.wait(1)
        await inbox2.wait(1)
        await h.step(other.s.call("wamp.session.count"))
        await h.step(sub_b.unsubscribe())
        await h.step(reg.unregister())
        await h.step(reg_fail.unregister())
        await asyncio.sleep(0.1)  # the live feed's last period
        await m.stop("act")
        await m.stop("calls")
        records = await self.page_all(m, "act", limit=4)
        for r in records:
            self.check_action_record(r)
            self.assertEqual(r["realm"], "realm1")
        self.assertEqual([r["seq"] for r in records], list(range(len(records))))
        by = {}
        for r in records:
            by.setdefault((r["action"], r["uri"]), []).append(r)

        # Joins of the five realm1 clients (not realm2's), each with its own session.
        joins = by.pop(("join", None))
        self.assertEqual(sorted(r["originator"]["session_id"] for r in joins),
                         sorted(p.id for p in (callee, caller, sub1, sub2, pub)))
        for r in joins:
            self.assertTrue(r["success"])
            self.assertEqual(r["originator"]["authrole"], "anonymous")
            self.assertEqual(r["responders"], [])

        [r] = by.pop(("register", proc))
        self.assertEqual(r["originator"], self.ident(callee))
        self.assertTrue(r["success"])
        [r] = by.pop(("register", h.uri(self, "fail")))
        self.assertTrue(r["success"])
        subs = by.pop(("subscribe", topic))
        self.assertEqual([r["originator"] for r in subs], [self.ident(sub1), self.ident(sub2)])
        self.assertTrue(all(r["success"] for r in subs))

        [call] = by.pop(("call", proc))
        self.assertEqual(call["originator"], self.ident(caller))
        self.assertEqual(call["responders"], [self.ident(callee)])
        self.assertTrue(call["success"])
        self.assertIsNone(call["error"])
        self.assertGreaterEqual(call["duration"], 0.045)  # the callee slept 50 ms
        [refused] = by.pop(("call", h.uri(self, "nobody")))
        self.assertEqual(refused["originator"], self.ident(caller))
        self.assertEqual(refused["responders"], [])
        self.assertFalse(refused["success"])
        self.assertEqual(refused["error"], "wamp.error.no_such_procedure")
        [failed] = by.pop(("call", h.uri(self, "fail")))
        self.assertEqual(failed["responders"], [self.ident(callee)])
        self.assertFalse(failed["success"])
        self.assertEqual(failed["error"], "com.example.error.oops")

        [p] = by.pop(("publish", topic))
        self.assertEqual(p["originator"], self.ident(pub))
        self.assertEqual(sorted(x["session_id"] for x in p["responders"]), sorted([sub1.id,
                                                                                   sub2.id]))
        self.assertTrue(p["success"])

        [u] = by.pop(("unsubscribe", topic))
        self.assertEqual(u["originator"], self.ident(sub2))
        [u] = by.pop(("unregister", proc))
        self.assertEqual(u["originator"], self.ident(callee))
        by.pop(("unregister", h.uri(self, "fail")))
        self.assertEqual(by, {}, "no other record")
        # Records come in order of completion; each anchor precedes its completion.
        self.assertLess(call["ts"], p["ts"])

        # The Call-only trace (every application realm) has the three realm1 calls, with the same
        # correlations, and the realm2 one; nothing else.
        c = await self.page_all(m, "calls")
        for r in c:
            self.check_action_record(r)
        self.assertEqual({r["correlation"] for r in c if r["realm"] == "realm1"},
                         {call["correlation"], refused["correlation"], failed["correlation"]})
        self.assertEqual([r["originator"]["session_id"] for r in c if r["realm"] == "realm2"],
                         [other.id])
        self.assertEqual({r["action"] for r in c}, {"call"})

        # The live feed carried the same records.
        fed = [rec for a in feed if a[2] == "act" for rec in a[4]]
        self.assertEqual(fed, records)


class TestActionTraceMgmtJson(ActionTraceBase, tt.TraceTestCase):
    MGMT_SER = "json"


class TestActionTraceMgmtMsgpack(ActionTraceBase, tt.TraceTestCase):
    MGMT_SER = "msgpack"


class TestPersistedActionTrace(tp.PersistTestCase):
    """A persisted action trace survives a restart (SIGTERM) with every record. Inherits the
    router-restart helpers of test_persist; load_tests below runs only this class's own test."""

    async def test_persisted_action_trace_reloads(self):
        self.start_router()
        m = await self.mgmt()
        meta = await self.call(m, "start_trace", "acts",
                               {"trace_level": "action", "persist": True, "limit": 20})
        pid = meta["persistent_id"]
        self.assertEqual(meta["options"]["trace_level"], "action")
        await self.traffic(60, "com.persist.actions")
        before = await self.all_records(m, "acts", limit=33)
        # Two joins, the subscribe, 60 publishes (memory holds 20, disk every one).
        self.assertEqual([r["action"] for r in before].count("publish"), 60)
        self.assertEqual(len(before), 63)
        self.assertEqual([r["seq"] for r in before], list(range(63)))
        for r in before:
            self.assertEqual(set(r), ACTION_KEYS)
        pubs = [r for r in before if r["action"] == "publish"]
        self.assertTrue(all(len(r["responders"]) == 1 and r["success"] for r in pubs))
        await self.stop_router()

        self.start_router()
        m = await self.mgmt()
        meta = await self.call(m, "get_trace", "acts")
        self.assertEqual((meta["status"], meta["stop_reason"], meta["persistent_id"]),
                         ("stopped", "shutdown", pid))
        self.assertEqual(meta["options"]["trace_level"], "action")
        after = await self.all_records(m, "acts", limit=100)
        # The sessions' leaves (GOODBYE at SIGTERM) may have been recorded after the reads.
        self.assertEqual(after[:len(before)], before)
        self.assertEqual({r["action"] for r in after[len(before):]} - {"leave"}, set())


def load_tests(loader, tests, pattern):
    suite = unittest.TestSuite()
    for cls in (TestActionTraceMgmtJson, TestActionTraceMgmtMsgpack):
        suite.addTests(loader.loadTestsFromTestCase(cls))
    suite.addTest(TestPersistedActionTrace("test_persisted_action_trace_reloads"))
    return suite


if __name__ == "__main__":
    h.main()
