"""The flight recorder (wampscope.tracing.flight_recorder) end to end: the real router with the
DEFAULT configuration (configs/default.json, the embedded default as a file, on an ephemeral port)
and python3-autobahn clients for the traffic and the management API.

Checks: right after start list_traces shows "flight-recorder" running with limit 10000 and the
payload off (and the start-up log says so); pub/sub and RPC traffic appears in it without
args/kwargs, in get_trace_data and in the on_trace_data feed; after more traffic than 10000 records it holds exactly 10000 (dropped > 0,
first_seq > 0); mark_trace marks it; stop, delete and start_trace "flight-recorder" restart it
with its configured options; max_traces does not count it; "flight_recorder": false in the config
means no flight recorder; a persisted flight recorder of an earlier run is listed after a restart
under its own name next to the new one.
"""

import asyncio
import json
import os
import shutil
import tempfile

from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import PublishOptions

import rt_harness as h

P = "crossbarfabriccenter."
FR = "flight-recorder"
DEFAULT_CONFIG = "configs/default.json"


def write_config(tmp, tracing):
    """configs/default.json with wampscope.tracing set to `tracing`, written into tmp."""
    with open(os.path.join(os.environ["RT_SOURCE_DIR"], DEFAULT_CONFIG), encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["workers"][0]["wampscope"]["tracing"] = tracing
    path = os.path.join(tmp, "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


class FlightTestCase(h.AsyncTestCase):
    config = DEFAULT_CONFIG

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-flight-")
        self._sessions = []
        self.router = h.RouterProc(self.make_config()).start()

    def make_config(self):
        return self.config

    async def close_sessions(self):
        for s in reversed(self._sessions):
            try:
                await s.close()
            except Exception:  # a broken client must not hide the router's status
                s.abort_transport()
        self._sessions = []
        self._mgmt = None

    async def asyncTearDown(self):
        try:
            await self.close_sessions()
        finally:
            try:
                self.router.stop()
            finally:
                shutil.rmtree(self.tmp, ignore_errors=True)

    async def session(self, serializer, realm="realm1"):
        s = await h.open_session(self.router, realm, serializer)
        self._sessions.append(s)
        return s

    async def mgmt(self):
        if not getattr(self, "_mgmt", None):
            self._mgmt = await self.session("json", realm="mgmt")
            nodes = await h.step(self._mgmt.call(P + "list_nodes"))
            self.node = nodes[0]
            workers = await h.step(self._mgmt.call(P + "list_workers", self.node))
            self.worker = workers[0]
        return self._mgmt

    async def api(self, proc, *args, **kw):
        m = await self.mgmt()
        return await h.step(m.call(P + proc, self.node, self.worker, *args, **kw))

    async def records(self, trace_id=FR, frm=0):
        """Every record of the trace from seq frm on, through get_trace_data pages."""
        out = []
        while True:
            page = await self.api("get_trace_data", trace_id, frm, None, 10000)
            if not page:
                return out
            out += page
            frm = page[-1]["seq"] + 1


class TestDefaultConfig(FlightTestCase):
    async def test_running_right_after_start(self):
        self.assertEqual(await self.api("list_traces"), [FR])
        self.assertEqual(await self.api("list_traces", include_stopped=False), [FR])
        meta = await self.api("get_trace", FR)
        self.assertEqual(meta["status"], "running")
        self.assertIsNone(meta["stop_reason"])
        o = meta["options"]
        self.assertEqual(o["limit"], 10000)
        self.assertIs(o["trace_app_payload"], False)
        self.assertIsNone(o["duration"])
        self.assertIsNone(o["max_records"])
        self.assertIs(o["persist"], False)
        for key in ("realms", "uris", "msg_types", "session_ids", "authids", "authroles"):
            self.assertIn(o.get(key), (None, []), key)
        self.assertIsNone(meta["persistent_id"])
        # The Crossbar alias lists it too; the start-up log says it runs and with what limit.
        m = await self.mgmt()
        self.assertEqual(await h.step(m.call(P + "remote.tracing.get_traces", self.node,
                                             self.worker)), [FR])
        log = self.router.stderr_text() + self.router.stdout_text()
        line = [x for x in log.splitlines() if "flight recorder running" in x]
        self.assertEqual(len(line), 1, log)
        self.assertIn('"flight-recorder", last 10000 records', line[0])
        self.assertIn("payload stripped", line[0])

    async def test_pubsub_and_rpc_recorded_without_payload(self):
        topic = h.uri(self, "topic")
        proc = h.uri(self, "add")
        sub = await self.session("msgpack")
        pub = await self.session("json")
        callee = await self.session("json")
        caller = await self.session("msgpack")
        got = asyncio.get_running_loop().create_future()
        await h.step(sub.subscribe(lambda *a, **kw: got.done() or got.set_result((a, kw)), topic))
        await h.step(callee.register(lambda a, b, **kw: a + b, proc))
        await h.step(pub.publish(topic, 1, "secret-arg", k="secret-kwarg",
                                 options=PublishOptions(acknowledge=True)))
        self.assertEqual(await h.step(got), ((1, "secret-arg"), {"k": "secret-kwarg"}))
        self.assertEqual(await h.step(caller.call(proc, 20, 22, k="secret-kwarg")), 42)
        recs = await self.records()
        by_type = {}
        for r in recs:
            if r["uri"] in (topic, proc):
                by_type.setdefault(r["msg_type"], []).append(r)
        for t in ("Subscribe", "Subscribed", "Publish", "Published", "Event", "Register",
                  "Registered", "Call", "Invocation", "Yield", "Result"):
            self.assertEqual(len(by_type.get(t, [])), 1, (t, by_type.keys()))
        self.assertEqual(by_type["Publish"][0]["session_id"], pub._session_id)
        self.assertEqual(by_type["Event"][0]["session_id"], sub._session_id)
        self.assertEqual(by_type["Call"][0]["session_id"], caller._session_id)
        self.assertEqual(by_type["Invocation"][0]["session_id"], callee._session_id)
        self.assertEqual(by_type["Call"][0]["correlation"], by_type["Result"][0]["correlation"])
        # The envelope stays, args/kwargs are gone (trace_app_payload false).
        envelope = {"Publish": 4, "Event": 4, "Call": 4, "Invocation": 4, "Yield": 3,
                    "Result": 3}
        for t, n in envelope.items():
            msg = by_type[t][0]["msg"]
            self.assertEqual(len(msg), n, (t, msg))
        self.assertEqual(by_type["Publish"][0]["msg"][3], topic)
        self.assertEqual(by_type["Call"][0]["msg"][3], proc)
        self.assertNotIn("secret", json.dumps(recs))
        # Session opening is recorded too (HELLO/WELCOME of realm1 sessions); the management
        # realm is not (no self-tracing).
        self.assertTrue(any(r["msg_type"] == "Hello" and r["realm"] == "realm1" for r in recs))
        self.assertFalse(any(r["realm"] == "mgmt" for r in recs))

    async def test_large_payloads_held_without_them(self):
        """Messages of 64 KiB through the default flight recorder, from JSON, MessagePack and CBOR
        clients: each record keeps the envelope with the whole message's size, and the trace
        holds (and counts) the envelopes, not the payloads."""
        topic = h.uri(self, "big")
        proc = h.uri(self, "echo")
        big = "x" * 65536
        sub = await self.session("json")
        callee = await self.session("msgpack")
        pub = await self.session("cbor")
        got = asyncio.get_running_loop().create_future()
        await h.step(sub.subscribe(lambda a: got.done() or got.set_result(a), topic))
        await h.step(callee.register(lambda a: a, proc))
        before = await self.api("get_trace", FR)
        await h.step(pub.publish(topic, big, options=PublishOptions(acknowledge=True)))
        self.assertEqual(await h.step(got), big)
        self.assertEqual(await h.step(sub.call(proc, big)), big)
        recs = [r for r in await self.records(frm=before["next_seq"])
                if r["uri"] in (topic, proc)]
        by_type = {r["msg_type"]: r for r in recs}
        envelope = {"Publish": 4, "Event": 4, "Call": 4, "Invocation": 4, "Yield": 3,
                    "Result": 3}
        for t, n in envelope.items():
            r = by_type[t]
            self.assertEqual(len(r["msg"]), n, (t, r["msg"]))
            sizes = r["serializations"]
            self.assertTrue(sizes and all(v > 65536 for v in sizes.values()), (t, sizes))
        after = await self.api("get_trace", FR)
        held = after["bytes"] - before["bytes"]
        added = after["records"] - before["records"]
        self.assertGreater(added, len(envelope))
        # 128 per record plus its envelope: far below one payload's size.
        self.assertLess(held, added * 1024, (held, added))

    async def test_live_feed(self):
        """on_trace_data carries the flight recorder's records like any trace's."""
        m = await self.mgmt()
        batches = []
        got = asyncio.get_running_loop().create_future()
        topic = h.uri(self, "live")

        def on_data(node, worker, trace_id, period, records):
            if trace_id == FR:
                batches.append((period, records))
                if any(r["uri"] == topic for r in records) and not got.done():
                    got.set_result(True)

        await h.step(m.subscribe(on_data, P + "remote.tracing.on_trace_data"))
        pub = await self.session("json")
        await h.step(pub.publish(topic, "payload", options=PublishOptions(acknowledge=True)))
        await h.step(got)
        recs = [r for _, records in batches for r in records if r["uri"] == topic]
        self.assertEqual([r["msg_type"] for r in recs], ["Publish", "Published"])
        self.assertEqual(len(recs[0]["msg"]), 4)  # payload stripped in the feed too
        for period, records in batches:
            self.assertEqual([r["seq"] for r in records],
                             list(range(period["first_seq"], period["last_seq"] + 1)))

    async def test_holds_at_most_10000_records(self):
        topic = h.uri(self, "flood")
        sub = await self.session("json")
        pub = await self.session("msgpack")
        n_events = [0]
        await h.step(sub.subscribe(lambda *a: n_events.__setitem__(0, n_events[0] + 1), topic))
        before = (await self.api("get_trace", FR))["next_seq"]
        # 3 records per acknowledged publication (PUBLISH, PUBLISHED, EVENT): 3600 publications
        # make 10800 records, more than the limit.
        n = 3600
        opts = PublishOptions(acknowledge=True)
        for start in range(0, n, 200):
            await h.step(asyncio.gather(*[pub.publish(topic, i, options=opts)
                                          for i in range(start, min(n, start + 200))]), 60)
        for _ in range(500):
            if n_events[0] == n:
                break
            await asyncio.sleep(0.01)
        self.assertEqual(n_events[0], n)
        meta = await self.api("get_trace", FR)
        self.assertEqual(meta["status"], "running")
        self.assertGreaterEqual(meta["next_seq"], before + 3 * n)
        self.assertEqual(meta["records"], 10000)
        self.assertGreater(meta["dropped"], 0)
        self.assertGreater(meta["first_seq"], 0)
        self.assertEqual(meta["first_seq"] + meta["records"], meta["next_seq"])
        self.assertEqual(meta["dropped"], meta["first_seq"])
        # Reading from 0 starts at the oldest record still held; the newest are the flood's.
        page = await self.api("get_trace_data", FR, 0, None, 10)
        self.assertEqual(page[0]["seq"], meta["first_seq"])
        recs = await self.records(frm=meta["first_seq"])
        self.assertEqual(len(recs), 10000)
        self.assertEqual([r["seq"] for r in recs],
                         list(range(meta["first_seq"], meta["next_seq"])))
        self.assertEqual(recs[-1]["uri"], topic)
        self.assertTrue(all(len(r["msg"]) <= 4 for r in recs if r["msg_type"] == "Publish"))

    async def test_mark_trace_stop_delete_restart_and_max_traces(self):
        seq = await self.api("mark_trace", FR, "incident", {"ticket": 42})
        recs = await self.records()
        marker = [r for r in recs if r["msg_type"] == "Marker"]
        self.assertEqual(len(marker), 1)
        self.assertEqual((marker[0]["seq"], marker[0]["uri"], marker[0]["msg"]),
                         (seq if isinstance(seq, int) else seq[0], "incident", {"ticket": 42}))
        # null trace_id marks every running trace: the flight recorder and one of the user's.
        user = await self.api("start_trace", "mine", None)
        self.assertEqual(user["options"]["limit"], 100000)  # the normal defaults
        await self.api("mark_trace", None, "everywhere")
        for t in (FR, "mine"):
            names = [r["uri"] for r in await self.records(t) if r["msg_type"] == "Marker"]
            self.assertIn("everywhere", names, t)
        # Stop: stays listed and readable; restart after delete with its configured options.
        stopped = await self.api("stop_trace", FR)
        self.assertEqual((stopped["status"], stopped["stop_reason"]), ("stopped", "stopped"))
        self.assertEqual(await self.api("list_traces", include_stopped=False), ["mine"])
        self.assertIn("incident", [r["uri"] for r in await self.records()])
        with self.assertRaises(ApplicationError) as cm:
            await self.api("start_trace", FR, None)
        self.assertEqual(cm.exception.error, "crossbar.error.already_exists")
        self.assertIsNone(await self.api("delete_trace", FR))
        self.assertEqual(await self.api("list_traces"), ["mine"])
        again = await self.api("start_trace", FR, None)
        self.assertEqual(again["status"], "running")
        self.assertEqual((again["options"]["limit"], again["options"]["trace_app_payload"]),
                         (10000, False))
        self.assertEqual(again["first_seq"], 0)
        self.assertEqual(sorted(await self.api("list_traces")), sorted([FR, "mine"]))
        # wampscope-ctl start without option flags sends null options: the same restart (an
        # empty object would give the plain trace defaults, payload kept).
        await self.api("stop_trace", FR)
        self.assertIsNone(await self.api("delete_trace", FR))
        proc = await asyncio.create_subprocess_exec(
            os.environ["RT_CTL_BIN"], "--url", self.router.url, "start", FR,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        out, err = await h.step(proc.communicate())
        self.assertEqual(proc.returncode, 0, err.decode(errors="replace"))
        again = await self.api("get_trace", FR)
        self.assertEqual((again["status"], again["options"]["limit"],
                          again["options"]["trace_app_payload"]), ("running", 10000, False))


class TestMaxTracesOne(FlightTestCase):
    def make_config(self):
        return write_config(self.tmp, {"max_traces": 1})

    async def test_flight_recorder_does_not_count(self):
        self.assertEqual(await self.api("list_traces"), [FR])
        t = await self.api("start_trace", None, None)
        self.assertEqual(t["id"], "trace1")
        with self.assertRaises(ApplicationError) as cm:
            await self.api("start_trace", "second", None)
        self.assertEqual(cm.exception.error, "crossbar.error.resource_limit")
        self.assertEqual(await self.api("list_traces"), [FR, "trace1"])


class TestOff(FlightTestCase):
    def make_config(self):
        return write_config(self.tmp, {"flight_recorder": False})

    async def test_absent_when_off(self):
        self.assertEqual(await self.api("list_traces"), [])
        with self.assertRaises(ApplicationError) as cm:
            await self.api("get_trace", FR)
        self.assertEqual(cm.exception.error, "crossbar.error.no_such_object")
        self.assertNotIn("flight recorder running", self.router.stderr_text())
        # Nothing records: traffic leaves no trace at all.
        pub = await self.session("json")
        await h.step(pub.publish(h.uri(self, "t"), 1, options=PublishOptions(acknowledge=True)))
        self.assertEqual(await self.api("list_traces"), [])


class TestPersistedAcrossRestart(FlightTestCase):
    def make_config(self):
        self.data = os.path.join(self.tmp, "data")
        return write_config(self.tmp, {"data_dir": self.data, "flight_recorder": {
            "enabled": True, "options": {"persist": True, "limit": 500}}})

    async def test_earlier_run_listed_next_to_the_new_one(self):
        topic = h.uri(self, "before")
        pub = await self.session("json")
        for i in range(5):
            await h.step(pub.publish(topic, i, options=PublishOptions(acknowledge=True)))
        meta = await self.api("get_trace", FR)
        self.assertTrue(meta["options"]["persist"])
        pid = meta["persistent_id"]
        self.assertTrue(pid)
        old = [r for r in await self.records() if r["uri"] == topic]
        self.assertEqual([r["msg_type"] for r in old], ["Publish", "Published"] * 5)
        await self.close_sessions()
        self.router.stop()
        self.router = h.RouterProc(self.make_config()).start()
        renamed = FR + "." + pid
        traces = await self.api("list_traces")
        self.assertEqual(sorted(traces), sorted([renamed, FR]))
        meta_old = await self.api("get_trace", renamed)
        self.assertEqual((meta_old["status"], meta_old["stop_reason"]), ("stopped", "shutdown"))
        self.assertEqual([(r["seq"], r["msg_type"]) for r in await self.records(renamed)
                          if r["uri"] == topic], [(r["seq"], r["msg_type"]) for r in old])
        meta_new = await self.api("get_trace", FR)
        self.assertEqual(meta_new["status"], "running")
        self.assertNotEqual(meta_new["persistent_id"], pid)
        self.assertEqual(await self.records(), [])


if __name__ == "__main__":
    h.main()
