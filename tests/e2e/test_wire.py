"""The wire capture (wampscope.tracing.wire_capture) end to end: the real router with the default
configuration plus a wire capture and a RawSocket listener, python3-autobahn clients (a default
ApplicationRunner, which negotiates MessagePack, and sessions of each serializer over WebSocket
and RawSocket) for the traffic, and get_wire_data on the management realm for reading it back.

Checks: every message of every realm1 session comes back as a record, byte for byte the same
message as the flight recorder kept of it (msg_type, direction, session, payload), in the order
each connection read and wrote them; seqs run without a hole from 0; the management client's
own connection is not captured past its HELLO; a ring smaller than the traffic reports what it
let go as dropped (first_seq) and what it holds only in part as gaps, never a broken message;
without wampscope.tracing.wire_capture get_wire_data answers not_running.
"""

import asyncio
import json
import os
import shutil
import tempfile

from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import PublishOptions

import rt_harness as h
from test_client_defaults import run_default_client
from test_rawsocket import open_raw_session, rs_urls, tcp_port

P = "crossbarfabriccenter."
FR = "flight-recorder"


def wire_config(wire_capture, flight_recorder):
    """configs/default.json with wampscope.tracing.wire_capture (None: absent), flight_recorder
    and a RawSocket listener, as a dict."""
    with open(os.path.join(os.environ["RT_SOURCE_DIR"], "configs/default.json"),
              encoding="utf-8") as f:
        cfg = json.load(f)
    tracing = cfg["workers"][0]["wampscope"].setdefault("tracing", {})
    if wire_capture is not None:
        tracing["wire_capture"] = wire_capture
    tracing["flight_recorder"] = flight_recorder
    cfg["workers"][0]["transports"].append(
        {"type": "rawsocket", "id": "rs_tcp", "serializers": ["json", "msgpack"],
         "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": 0}})
    return cfg


def save_config(tmp, cfg):
    path = os.path.join(tmp, "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


class WireTestCase(h.AsyncTestCase):
    wire_capture = 1 << 20

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-wire-")
        self._sessions = []
        self._mgmt = None
        self.router = h.RouterProc(self.make_config()).start()

    def make_config(self):
        # The flight recorder records each message as it goes (not from the wire capture: the
        # comparisons below are of two recorders) and keeps the payload: they are of whole
        # messages.
        return save_config(self.tmp, wire_config(self.wire_capture, {
            "from_wire": False, "options": {"trace_app_payload": True}}))

    async def asyncTearDown(self):
        try:
            for s in reversed(self._sessions):
                try:
                    await s.close()
                except Exception:  # a broken client must not hide the router's status
                    s.abort_transport()
        finally:
            try:
                self.router.stop()
            finally:
                shutil.rmtree(self.tmp, ignore_errors=True)

    async def session(self, serializer, realm="realm1", rawsocket=False):
        if rawsocket:
            port = tcp_port(rs_urls(self.router)[0])
            s = await open_raw_session(realm, serializer, port=port)
        else:
            s = await h.open_session(self.router, realm, serializer)
        self._sessions.append(s)
        return s

    async def api(self, proc, *args, **kw):
        if not self._mgmt:
            self._mgmt = await self.session("json", realm="mgmt")
            self.node = (await h.step(self._mgmt.call(P + "list_nodes")))[0]
            self.worker = (await h.step(self._mgmt.call(P + "list_workers", self.node)))[0]
        return await h.step(self._mgmt.call(P + proc, self.node, self.worker, *args, **kw))

    async def wire(self, frm=0, limit=10000):
        """Every record of the wire capture from seq frm on, through get_wire_data pages, and the
        last page's counts."""
        out = []
        while True:
            page = await self.api("get_wire_data", frm, limit)
            if not page["records"]:
                return out, page
            out += page["records"]
            frm = page["records"][-1]["seq"] + 1

    async def records(self, trace_id=FR):
        """Every record of the trace, through get_trace_data pages."""
        out, frm = [], 0
        while True:
            page = await self.api("get_trace_data", trace_id, frm, None, 10000)
            if not page:
                return out
            out += page
            frm = page[-1]["seq"] + 1


# Messages of a session's opening and closing, which the wire capture correlates with nothing.
SESSION_LEVEL = ("Hello", "Welcome", "Goodbye", "Abort", "Challenge", "Authenticate")
# Answers whose correlation_is_last the two must agree on (an EVENT's is the flight recorder's
# knowledge of the last receiver, which the wire does not tell).
ANSWERS = ("Result", "Error", "Published", "Subscribed", "Registered", "Unsubscribed",
           "Unregistered", "Call", "Invocation", "Yield", "Publish")


def by_session(records):
    """(session_id, direction) -> [(msg_type, msg)] in seq order, messages of joined sessions."""
    out = {}
    for r in records:
        if r.get("kind") == "gap" or r["session_id"] is None or r["msg_type"] == "Marker":
            continue
        out.setdefault((r["session_id"], r["direction"]), []).append((r["msg_type"], r["msg"]))
    return out


class TestWireCapture(WireTestCase):
    async def traffic(self):
        """RPC and pub/sub between sessions of each serializer, two of them over RawSocket;
        returns the sessions."""
        callee = await self.session("msgpack", rawsocket=True)
        caller = await self.session("json")
        sub = await self.session("cbor")
        pub = await self.session("json", rawsocket=True)
        await h.step(callee.register(lambda a, b: a + b, "com.example.wire.add"))
        events = h.Events()
        await h.step(sub.subscribe(events, "com.example.wire.topic"))
        for i in range(20):
            self.assertEqual(await h.step(caller.call("com.example.wire.add", i, 1)), i + 1)
            await h.step(pub.publish("com.example.wire.topic", i, {"k": "é" * i},
                                     options=PublishOptions(acknowledge=True)))
        await events.wait_for(20)
        return callee, caller, sub, pub

    async def test_every_message_as_the_flight_recorder_kept_it(self):
        sessions = await self.traffic()
        wire, page = await self.wire()
        self.assertEqual(page["first_seq"], 0)
        self.assertEqual(page["dropped"], 0)
        self.assertEqual([r["seq"] for r in wire], list(range(page["next_seq"])))
        self.assertFalse([r for r in wire if r.get("kind") == "gap"])
        got = by_session(wire)
        want = by_session(await self.records())
        for s in sessions:
            for d in ("rx", "tx"):
                with self.subTest(session=s._session_id, direction=d):
                    self.assertTrue(want.get((s._session_id, d)))
                    # The flight recorder also keeps what came before WELCOME (HELLO and the
                    # WELCOME itself) under the session; the wire view has its session from the
                    # join on: compare from the first message after WELCOME.
                    w = [m for m in want[(s._session_id, d)] if m[0] not in ("Hello", "Welcome")]
                    g = [m for m in got[(s._session_id, d)] if m[0] not in ("Hello", "Welcome")]
                    self.assertEqual(g, w)
        self.check_correlation(wire, await self.records(), sessions)
        # A page from the middle: the same records, correlation included (the actions of what
        # came before it are read too).
        mid = len(wire) // 2
        tail, _ = await self.wire(mid)
        self.assertEqual(tail[:len(wire) - mid], wire[mid:])
        calls = [r for r in wire if r["msg_type"] == "Call"]
        self.assertEqual(len(calls), 20)
        self.assertEqual(calls[3]["msg"][4], [3, 1])
        self.assertEqual(calls[3]["uri"], "com.example.wire.add")
        self.assertEqual(calls[3]["serializations"], {"json": calls[3]["serializations"]["json"]})
        self.assertGreater(calls[3]["serializations"]["json"], 0)

    def check_correlation(self, wire, flight, sessions):
        """The wire capture's correlation groups the messages of each session as the flight
        recorder's does (its UUIDs are its own): the same anchors, the same last messages of
        calls and acknowledged requests, and one action for one action."""
        def aligned(records):
            out = {}
            for r in records:
                if r.get("kind") == "gap" or r["msg_type"] in SESSION_LEVEL:
                    continue
                out.setdefault((r["session_id"], r["direction"]), []).append(r)
            return out
        got, want = aligned(wire), aligned(flight)
        to_wire, to_flight = {}, {}
        pairs = 0
        for s in sessions:
            for d in ("rx", "tx"):
                g, w = got[(s._session_id, d)], want[(s._session_id, d)]
                self.assertEqual([r["msg_type"] for r in g], [r["msg_type"] for r in w])
                for a, b in zip(g, w):
                    with self.subTest(seq=a["seq"], msg_type=a["msg_type"]):
                        self.assertIsNotNone(a["correlation"])
                        self.assertEqual(to_wire.setdefault(b["correlation"], a["correlation"]),
                                         a["correlation"])
                        self.assertEqual(to_flight.setdefault(a["correlation"], b["correlation"]),
                                         b["correlation"])
                        self.assertEqual(a["correlation_is_anchor"], b["correlation_is_anchor"])
                        if a["msg_type"] in ANSWERS:
                            self.assertEqual(a["correlation_is_last"], b["correlation_is_last"])
                        pairs += 1
        self.assertEqual(pairs, 144)  # every message of the four sessions after their WELCOME
        # 20 calls and 20 publications, a registration and a subscription: 42 actions.
        self.assertEqual(len(to_wire), 42)

    async def test_management_connection_not_captured(self):
        await self.traffic()
        wire, _ = await self.wire()
        await self.wire()  # the reads themselves go out on the management connection
        again, _ = await self.wire()
        mgmt = [r for r in again if r["msg_type"] == "Hello" and r["msg"][1] == "mgmt"]
        self.assertEqual(len(mgmt), 1)
        # Its HELLO is named after the session it opened, the only record of that realm.
        self.assertEqual([r for r in again if r.get("realm") == "mgmt"], mgmt)
        self.assertFalse([r for r in again if r["seq"] > mgmt[0]["seq"]])
        self.assertEqual(len(again), len(wire))  # nothing came in since, reads included

    async def test_default_client(self):
        # A default ApplicationRunner (MessagePack, its session gone once it left).
        url = self.router.url
        result, event, ser, _ = await asyncio.get_running_loop().run_in_executor(
            None, run_default_client, url)
        await asyncio.sleep(0.2)  # its GOODBYE's answer written, its connection closed
        self.assertEqual((result, event, ser), (5, "hi", "msgpack"))
        wire, _ = await self.wire()
        types = [(r["direction"], r["msg_type"]) for r in wire]
        for t in [("rx", "Hello"), ("tx", "Welcome"), ("rx", "Register"), ("tx", "Registered"),
                  ("rx", "Call"), ("tx", "Invocation"), ("rx", "Yield"), ("tx", "Result"),
                  ("rx", "Publish"), ("tx", "Event"), ("tx", "Published"), ("rx", "Goodbye"),
                  ("tx", "Goodbye")]:
            self.assertIn(t, types)
        call = next(r for r in wire if r["msg_type"] == "Call")
        self.assertEqual(call["msg"][3:5], ["com.example.add2", [2, 3]])
        self.assertEqual(list(call["serializations"]), ["msgpack"])
        # It left, and its session is still known: the join noted with the traffic, which also
        # names the session of what its connection carried before it joined.
        welcome = next(r for r in wire if r["msg_type"] == "Welcome")
        hello = next(r for r in wire if r["msg_type"] == "Hello" and r["msg"][1] == "realm1")
        for r in (call, welcome, hello):
            self.assertEqual((r["session_id"], r["realm"], r["authrole"]),
                             (welcome["msg"][1], "realm1", "anonymous"))
        probe = await self.session("json")
        with self.assertRaises(ApplicationError) as cm:  # gone indeed: the fact told
            await h.step(probe.call("wamp.session.get", welcome["msg"][1]))
        self.assertEqual(cm.exception.error, "wamp.error.no_such_session")


    async def test_secrets_redacted(self):
        # An AUTHENTICATE nobody asked for (and one of the wrong length): the router refuses
        # them, the capture holds their bytes, and reading it never shows the secret.
        for msg in ([5, "s3cret-signature", {}], [5, "s3cret-signature", {}, "s3cret-more"]):
            ws = h.RawWs(self.router.host, self.router.port, self.router.path)
            try:
                ws.send_json([1, "realm1", {"roles": {"caller": {}}}])
                self.assertEqual(ws.recv_wamp()[0], 2)  # WELCOME
                ws.send_json(msg)
                self.assertEqual(ws.recv_wamp()[0], 3)  # ABORT
            finally:
                ws.close()
        wire, _ = await self.wire()
        self.assertNotIn("s3cret", json.dumps(wire))
        auth = [r for r in wire if r["direction"] == "rx" and r["msg"] and r["msg"][0] == 5]
        self.assertEqual([r["msg"] for r in auth],
                         [[5, "***", {}], [5, "***", "***", "***"]])


    async def ctl(self, *args):
        """wampscope-ctl --url <router> args...: (status, stdout, stderr)."""
        proc = await asyncio.create_subprocess_exec(
            h.ctl_bin(), "--url", self.router.url, *args, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        return proc.returncode, out.decode(), err.decode()

    async def test_ctl_wire(self):
        await self.traffic()
        wire, _ = await self.wire()
        rc, out, err = await self.ctl("wire", "--json", "--limit", "100000")
        self.assertEqual(rc, 0, err)
        got = json.loads(out)
        # The management client's HELLO came in after the API's read above: the rest is equal.
        self.assertEqual(got[:len(wire)], wire)
        rc, out, err = await self.ctl("wire", "--json", "--type", "Call", "--from", "10")
        self.assertEqual(rc, 0, err)
        calls = json.loads(out)
        self.assertEqual([r["seq"] for r in calls],
                         [r["seq"] for r in wire if r["msg_type"] == "Call" and r["seq"] >= 10])
        rc, out, err = await self.ctl("wire", "--type", "Call", "--limit", "3", "--width", "0")
        self.assertEqual(rc, 0, err)
        lines = out.splitlines()
        self.assertEqual(len(lines), 4)  # a header and three rows
        self.assertIn("com.example.wire.add", lines[1])


class TestSmallRing(WireTestCase):
    wire_capture = 4096

    async def test_dropped_and_lost_reported(self):
        callee = await self.session("json")
        caller = await self.session("msgpack")
        await h.step(callee.register(lambda s: s, "com.example.wire.echo"))
        for i in range(200):
            await h.step(caller.call("com.example.wire.echo", "x" * (i % 300)))
        wire, page = await self.wire()
        self.assertGreater(page["first_seq"], 0)
        self.assertEqual(page["dropped"], page["first_seq"])
        self.assertEqual([r["seq"] for r in wire], list(range(page["first_seq"], page["next_seq"])))
        whole = [r for r in wire if r.get("kind") != "gap"]
        self.assertTrue(whole)
        for r in whole:
            # (and the management client's HELLO, the last of its connection captured)
            self.assertIn(r["msg_type"], ("Call", "Invocation", "Yield", "Result", "Hello"))
        for r in wire:
            if r.get("kind") == "gap":
                self.assertEqual((r["from_seq"], r["to_seq"], r["reason"]),
                                 (r["seq"], r["seq"], "lost"))
        # A page from the middle gives the same records from there.
        mid = wire[len(wire) // 2]["seq"]
        tail, _ = await self.wire(mid)
        self.assertEqual(tail, [r for r in wire if r["seq"] >= mid][:len(tail)])


class TestNoWireCapture(WireTestCase):
    wire_capture = None

    async def test_not_running(self):
        with self.assertRaises(ApplicationError) as cm:
            await self.api("get_wire_data")
        self.assertEqual(cm.exception.error, "crossbar.error.not_running")
        proc = await asyncio.create_subprocess_exec(
            h.ctl_bin(), "--url", self.router.url, "wire", stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        self.assertEqual(proc.returncode, 6)  # the router refused the request
        self.assertIn("no wire capture runs", err.decode())


if __name__ == "__main__":
    h.main()
