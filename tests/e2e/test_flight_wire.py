"""The flight recorder read from the wire capture (wampscope.tracing.flight_recorder.from_wire) end
to end: the real router, python3-autobahn clients of every serializer over WebSocket and RawSocket
plus a default ApplicationRunner, and, next to the flight recorder, a trace of everything started
through the management API, which records each message as it goes.

Checks: the flight recorder holds the very records the per-message trace holds (type, direction,
session, action URI, the message with its payload stripped as the flight recorder's options say,
correlation as a one-to-one mapping of actions with the same anchors and last answers), in seq
order without a hole; a marker lands after the messages before it; a stopped flight recorder takes
nothing more; a wire capture too small for the traffic between two reads counts what it let go in
get_trace's "lost", records what it held without a hole in the seqs, never a broken record; the
metrics agree with get_trace.
"""

import asyncio
import json
import urllib.request

from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import PublishOptions

import rt_harness as h
import test_wire as tw
from test_client_defaults import run_default_client

P = "crossbarfabriccenter."
FR = "flight-recorder"
ALL = "all-per-message"
# The fields of a record that do not depend on how it was recorded (not seq, clocks, the
# correlation's UUID, or the sizes of the encodings the router made for other serializers).
SAME = ("direction", "msg_type", "session_id", "realm", "authid", "authrole", "uri", "msg",
        "correlation_is_anchor", "correlation_is_last")


def flight_config(wire_capture):
    """test_wire's configuration with the flight recorder read from the wire, the HTTP bridge's
    caller and publisher paths (their requests' sessions have no frames: their messages go in
    whole) and the metrics listener."""
    cfg = tw.wire_config(wire_capture, {"from_wire": True})
    w = cfg["workers"][0]
    w["transports"][0]["paths"]["call"] = {"type": "caller", "realm": "realm1",
                                           "role": "anonymous"}
    w["transports"][0]["paths"]["publish"] = {"type": "publisher", "realm": "realm1",
                                              "role": "anonymous"}
    w["wampscope"]["metrics"] = {"endpoint": {"type": "tcp", "port": 0, "interface": "127.0.0.1"},
                                 "path": "/metrics"}
    return cfg


class FlightWireCase(tw.WireTestCase):
    wire_capture = None

    def make_config(self):
        return tw.save_config(self.tmp, flight_config(self.wire_capture))

    async def post(self, path, body):
        """(status, JSON answer) of a POST to the router's web transport, off the event loop."""
        def run():
            req = urllib.request.Request("http://%s:%d%s" % (self.router.host, self.router.port,
                                                             path),
                                         data=json.dumps(body).encode(), method="POST")
            req.add_header("Content-Type", "application/json")
            with urllib.request.urlopen(req, timeout=10) as r:
                return r.status, json.loads(r.read())
        return await h.step(asyncio.get_running_loop().run_in_executor(None, run))


def by_session(records):
    out = {}
    for r in records:
        if r.get("kind") == "gap" or r["msg_type"] == "Marker" or r["session_id"] is None:
            continue
        out.setdefault((r["session_id"], r["direction"]), []).append(r)
    return out


class TestFlightFromWire(FlightWireCase):
    async def traffic(self):
        callee = await self.session("msgpack", rawsocket=True)
        caller = await self.session("json")
        sub = await self.session("cbor")
        pub = await self.session("json", rawsocket=True)
        await h.step(callee.register(lambda a, b: a + b, "com.example.fw.add"))

        def fail():
            raise ApplicationError("com.example.fw.failed", "on purpose")
        await h.step(callee.register(fail, "com.example.fw.fail"))
        events = h.Events()
        await h.step(sub.subscribe(events, "com.example.fw.topic"))
        for i in range(20):
            self.assertEqual(await h.step(caller.call("com.example.fw.add", i, 1)), i + 1)
            # Some payloads over 2 KiB: the flight recorder keeps their envelopes alone.
            await h.step(pub.publish("com.example.fw.topic", i, {"k": "é" * (i * 200)},
                                     options=PublishOptions(acknowledge=True)))
        with self.assertRaises(ApplicationError):
            await h.step(caller.call("com.example.fw.fail"))
        await events.wait_for(20)
        # Over the HTTP bridge: a call and a publication.
        status, answer = await self.post("/call", {"procedure": "com.example.fw.add",
                                                   "args": [40, 2]})
        self.assertEqual((status, answer["args"]), (200, [42]))
        status, _ = await self.post("/publish", {"topic": "com.example.fw.topic", "args": [99]})
        self.assertEqual(status, 200)
        await events.wait_for(21)
        return [callee, caller, sub, pub]

    async def test_same_records_as_a_per_message_trace(self):
        await self.api("start_trace", ALL, {"trace_app_payload": False})
        sessions = await self.traffic()
        result, event, ser, _ = await asyncio.get_running_loop().run_in_executor(
            None, run_default_client, self.router.url)
        self.assertEqual((result, event, ser), (5, "hi", "msgpack"))
        await h.step(self.api("stop_trace", ALL))
        fr = await self.records(FR)
        per = await self.records(ALL)
        meta = await self.api("get_trace", FR)
        self.assertEqual(meta["status"], "running")
        self.assertEqual((meta["first_seq"], meta["dropped"]), (0, 0))
        self.assertEqual([r["seq"] for r in fr], list(range(meta["next_seq"])))
        self.assertEqual(meta["records"], len(fr))
        got, want = by_session(fr), by_session(per)
        self.assertEqual(set(got), set(want))
        self.assertGreaterEqual(len(got), 2 * (len(sessions) + 1))
        to_fr, to_per = {}, {}
        stripped = 0
        for key in want:
            g, w = got[key], want[key]
            self.assertEqual([r["msg_type"] for r in g], [r["msg_type"] for r in w], key)
            for a, b in zip(g, w):
                with self.subTest(session=key, seq=a["seq"], msg_type=a["msg_type"]):
                    self.assertEqual({k: a.get(k) for k in SAME}, {k: b.get(k) for k in SAME})
                    ca, cb = a["correlation"], b["correlation"]
                    self.assertEqual(ca is None, cb is None)
                    if ca:
                        self.assertEqual(to_fr.setdefault(cb, ca), ca)
                        self.assertEqual(to_per.setdefault(ca, cb), cb)
                    stripped += a["msg_type"] == "Publish" and len(a["msg"]) < 5
        # 22 calls (one failing, one over the bridge), 21 publications (one over the bridge), two
        # registrations, a subscription, and the default client's registration, call,
        # subscription and publication.
        self.assertGreaterEqual(len(to_fr), 46)
        bridge = [r for r in fr if (r["authid"] or "").startswith("http-bridge:")]
        self.assertLessEqual({("rx", "Call"), ("tx", "Result"), ("rx", "Publish")},
                             {(r["direction"], r["msg_type"]) for r in bridge})
        self.assertEqual(len(bridge), len([r for r in per if (r["authid"] or "").startswith(
            "http-bridge:")]))
        self.assertGreater(stripped, 0)
        errors = [r for r in fr if r["msg_type"] == "Error" and r["direction"] == "tx"]
        self.assertEqual([r["uri"] for r in errors], ["com.example.fw.fail"])
        self.assertEqual(errors[0]["msg"][4], "com.example.fw.failed")

    async def test_joining_again_on_one_connection(self):
        """A client that leaves and joins again over the same WebSocket: each HELLO named as the
        per-message trace names it (the second after the second session, not the first)."""
        await self.api("start_trace", ALL, {"trace_app_payload": False})

        def client():
            ws = h.RawWs(self.router.host, self.router.port)
            try:
                ids = []
                for _ in range(2):
                    welcome = ws.hello("realm1")
                    ids.append(welcome[1])
                    ws.send_json([48, 1, {}, "wamp.session.count"])
                    self.assertEqual(ws.recv_wamp()[0], 50)
                    ws.send_json([6, {}, "wamp.close.normal"])
                    self.assertEqual(ws.recv_wamp()[0], 6)
                return ids
            finally:
                ws.close()
        ids = await h.step(asyncio.get_running_loop().run_in_executor(None, client))
        self.assertNotEqual(ids[0], ids[1])
        await h.step(self.api("stop_trace", ALL))

        def hellos(records):
            return [(r["session_id"], r["realm"], r["correlation"] is not None) for r in records
                    if r["msg_type"] in ("Hello", "Welcome") and r["realm"] == "realm1"]
        fr, per = hellos(await self.records(FR)), hellos(await self.records(ALL))
        self.assertEqual(fr, per)
        self.assertEqual([x[0] for x in fr], [ids[0], ids[0], ids[1], ids[1]])
        got = [(r["session_id"], r["direction"], r["msg_type"], r["correlation_is_anchor"],
                r["correlation_is_last"]) for r in await self.records(FR)
               if r["session_id"] in ids]
        want = [(r["session_id"], r["direction"], r["msg_type"], r["correlation_is_anchor"],
                 r["correlation_is_last"]) for r in await self.records(ALL)
                if r["session_id"] in ids]
        self.assertEqual(got, want)

    async def test_marker_in_order_and_stop(self):
        caller = await self.session("json")
        await h.step(caller.call("wamp.session.count"))
        seq = await self.api("mark_trace", FR, "here")
        fr = await self.records(FR)
        self.assertEqual(fr[-1]["seq"], seq)
        self.assertEqual(fr[-1]["msg_type"], "Marker")
        self.assertIn("Result", [r["msg_type"] for r in fr[:-1]])
        await self.api("stop_trace", FR)
        n = (await self.api("get_trace", FR))["next_seq"]
        await h.step(caller.call("wamp.session.count"))
        meta = await self.api("get_trace", FR)
        self.assertEqual((meta["status"], meta["next_seq"]), ("stopped", n))

    async def test_metrics_agree(self):
        caller = await self.session("msgpack")
        for _ in range(5):
            await h.step(caller.call("wamp.session.count"))
        url = next(u for u in self.router.urls if u.startswith("http://"))
        with urllib.request.urlopen(url, timeout=10) as resp:
            text = resp.read().decode()
        line = next(x for x in text.splitlines()
                    if x.startswith('wampscope_trace_records{trace="%s"}' % FR))
        scraped = int(float(line.split()[-1]))
        lost = next(x for x in text.splitlines()
                    if x.startswith('wampscope_trace_lost_messages_total{trace="%s"}' % FR))
        self.assertEqual(lost.split()[-1], "0")
        meta = await self.api("get_trace", FR)
        self.assertGreaterEqual(scraped, 12)  # HELLO, WELCOME, five calls and their results
        # The API's read comes later and may hold the management client's own HELLO besides.
        self.assertIn(meta["records"] - scraped, (0, 1))


class TestSmallCapture(FlightWireCase):
    wire_capture = 4096

    async def test_lost_reported(self):
        callee = await self.session("json")
        caller = await self.session("msgpack")
        await h.step(callee.register(lambda s: s, "com.example.fw.echo"))
        first = await self.records(FR)
        lost0 = (await self.api("get_trace", FR))["lost"]  # (4 KiB: the joins alone fill it)
        for i in range(200):
            await h.step(caller.call("com.example.fw.echo", "x" * (i % 300)))
        fr = await self.records(FR)
        meta = await self.api("get_trace", FR)
        # The capture let most of them go before this read: lost, and said so; what it held is
        # recorded, from the seq after the last one read before.
        self.assertGreater(meta["lost"], lost0 + 400)
        self.assertEqual((meta["first_seq"], meta["dropped"]), (0, 0))
        self.assertEqual(meta["records"], meta["next_seq"])
        self.assertEqual([r["seq"] for r in fr], list(range(meta["next_seq"])))
        self.assertEqual(fr[:len(first)], first)
        self.assertGreater(len(fr), len(first))
        for r in fr[len(first):]:
            self.assertIn(r["msg_type"], ("Call", "Invocation", "Yield", "Result", "Hello"))
            if r["msg_type"] == "Call":
                self.assertEqual(r["uri"], "com.example.fw.echo")
        # Publications without subscribers leave the router's notes of them waiting to go into
        # the capture, which the next read appends first, letting the oldest chunks go: those
        # count as lost too. (Forty of them in one read: their notes make a large fact.) Every
        # message the capture took is a record or counted lost, but the management client's
        # HELLO, which the flight recorder does not keep.
        ws = await h.step(asyncio.get_running_loop().run_in_executor(
            None, h.RawWs, self.router.host, self.router.port))
        try:
            self.assertEqual((await h.step(asyncio.get_running_loop().run_in_executor(
                None, ws.hello)))[0], 2)
            rx0 = (await self.api("get_worker"))["stats"]["messages_rx"]
            ws.sock.sendall(b"".join(h.masked_frame(h.OP_TEXT, json.dumps(
                [16, i + 1, {}, "com.example.fw.nobody", [i]]).encode()) for i in range(40)))
            # They are the last thing the router took for the capture once it counts them
            # received (each get_worker is one message received more; no procedure on a trace,
            # which would read the capture, yet).
            for polls in range(1, 500):
                if (await self.api("get_worker"))["stats"]["messages_rx"] - rx0 - polls >= 40:
                    break
                await asyncio.sleep(0.01)
            else:
                self.fail("the publications never came in")
            meta = await self.api("get_trace", FR)
            _, page = await self.wire(10 ** 9)
        finally:
            ws.close()
        self.assertEqual(meta["next_seq"] + meta["lost"] + 1, page["next_seq"])


if __name__ == "__main__":
    h.main()
