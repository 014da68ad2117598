"""Overload and limits against the real router, with python3-autobahn clients (WebSocket and
RawSocket) and raw sockets for what no library does (a subscriber that stops reading, a
RawSocket client announcing 512 bytes, exact handshake replies):

* limits.slow_consumer "drop_oldest_events": a subscriber that stops reading under an EVENT
  flood stays connected, stats.events_dropped grows, a running trace shows the dropped EVENTs
  as tx records with "dropped": "slow_consumer", and it gets the newest EVENTs once it reads
  again; with the default policy ("disconnect") the same subscriber is disconnected.
* A RawSocket client announcing 512 bytes, whose WELCOME would be longer: ABORT
  wamp.error.payload_size_exceeded and close, not a hang.
* options.max_connections: the cap+1-th RawSocket connection gets handshake error 4, the
  cap+1-th WebSocket upgrade gets HTTP 503; after one closes, a new one is accepted.

Each router gets its own config: configs/test-e2e-hostile.json with a small outgoing queue (200
messages), the policy under test, and two capped listeners (max_connections 2).
"""

import asyncio
import json
import os
import shutil
import socket
import tempfile
import time
from urllib.parse import urlparse

import rt_harness as h
import test_rawsocket as trs
from autobahn.wamp.types import PublishOptions

MGMT = "crossbarfabriccenter."
NODE, WORKER = "e2e_node", "router1"
QUEUE_MESSAGES = 200
CAP = 2


def write_config(tmp, policy, min_length=None):
    with open(os.path.join(os.environ["RT_SOURCE_DIR"], "configs/test-e2e-hostile.json"),
              encoding="utf-8") as f:
        cfg = json.load(f)
    worker = cfg["workers"][0]
    limits = worker["wampscope"]["limits"]
    limits["max_queue_messages"] = QUEUE_MESSAGES
    if policy:
        limits["slow_consumer"] = policy
    if min_length:
        limits["rawsocket_min_length"] = min_length
    tcp = {"type": "tcp", "interface": "127.0.0.1", "port": 0}
    worker["transports"] += [
        {"type": "rawsocket", "id": "rs_plain", "endpoint": tcp, "serializers": ["json"]},
        {"type": "rawsocket", "id": "rs_capped", "endpoint": tcp,
         "options": {"max_connections": CAP}},
        {"type": "websocket", "id": "ws_capped", "endpoint": tcp,
         "serializers": ["json", "msgpack"], "options": {"max_connections": CAP}},
    ]
    path = os.path.join(tmp, "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


class OverloadTestCase(h.AsyncTestCase):
    POLICY = None
    MIN_LENGTH = None

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-overload-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        self.router = h.RouterProc(config=write_config(self.tmp, self.POLICY, self.MIN_LENGTH)).start()
        self.addCleanup(self.router.stop)
        rs = [u for u in self.router.urls if u.startswith("rs://")]
        ws = [u for u in self.router.urls if u.startswith("ws://")]
        self.assertEqual((len(rs), len(ws)), (2, 2), self.router.urls)
        self.rs_plain, self.rs_capped = trs.tcp_port(rs[0]), trs.tcp_port(rs[1])
        self.ws_capped_url = ws[1]
        self.ws_capped_port = urlparse(ws[1]).port
        self.ws_capped_path = urlparse(ws[1]).path or "/"
        self.mgmt = await h.open_session(self.router, "mgmt", "json")
        self.addAsyncCleanup(self.mgmt.close)
        self.baseline = await self.stats()

    async def stats(self):
        w = await h.step(self.mgmt.call(MGMT + "get_worker", NODE, WORKER))
        return w["stats"]

    async def run_blocking(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    def log(self):
        return self.router.stdout_text() + self.router.stderr_text()

    async def assert_serves(self):
        """A normal client still does pub/sub through the router."""
        a = await h.open_session(self.router, "realm1", "json")
        b = await h.open_session(self.router, "realm1", "msgpack")
        topic = h.uri(self, "after")
        got = asyncio.get_running_loop().create_future()
        await h.step(a.subscribe(lambda x: got.done() or got.set_result(x), topic))
        await h.step(b.publish(topic, "ok", options=PublishOptions(acknowledge=True)))
        self.assertEqual(await h.step(got), "ok")
        await h.step(a.close())
        await h.step(b.close())

    async def stalled_subscriber(self):
        """A raw WebSocket subscriber (small receive buffer) that will stop reading. Returns
        (ws, session id, topic)."""
        topic = h.uri(self, "flood")
        sub = h.RawWs(self.router.host, self.router.port, self.router.path)
        self.addCleanup(sub.close)
        self.assertTrue(sub.upgraded)
        sub.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        welcome = sub.hello("realm1")
        self.assertEqual(welcome[0], 2, welcome)
        sub.send_json([32, 1, {}, topic])
        self.assertEqual((await self.run_blocking(sub.recv_wamp))[0], 33)
        return sub, welcome[1], topic

    async def slow_consumer_drops(self, trace_id):
        """The records of trace_id that say a message was dropped for a slow consumer."""
        drops, seq = [], 0
        while True:  # pages that fit the management transport's 1 MiB messages
            recs = await h.step(self.mgmt.call(MGMT + "get_trace_data", NODE, WORKER, trace_id,
                                               seq, None, 100))
            if not recs:
                return drops
            drops += [r for r in recs if r.get("dropped") == "slow_consumer"]
            seq = recs[-1]["seq"] + 1

    async def flood(self, topic, until):
        """An autobahn publisher floods topic until until(stats) is true (60 s at most).
        Returns (publisher, stats, EVENTs published)."""
        pub = await h.open_session(self.router, "realm1", "msgpack")
        self.addAsyncCleanup(pub.close)
        payload = "e" * 2048
        deadline = time.monotonic() + 60
        n = 0
        while True:
            stats = await self.stats()
            if until(stats) or time.monotonic() > deadline:
                return pub, stats, n
            for _ in range(50):
                pub.publish(topic, n, payload)
                n += 1
            await h.step(pub.publish(topic, -1, "sync", options=PublishOptions(acknowledge=True)))
            n += 1


class TestDropOldestEvents(OverloadTestCase):
    POLICY = "drop_oldest_events"

    async def test_stalled_subscriber_keeps_its_connection(self):
        def dropped(stats):
            return stats["events_dropped"] >= self.baseline["events_dropped"] + 500

        sub, sid, topic = await self.stalled_subscriber()
        # A trace of the subscriber's messages: the dropped EVENTs must show there.
        trace_id = "drops"
        await h.step(self.mgmt.call(MGMT + "start_trace", NODE, WORKER, trace_id,
                                    {"session_ids": [sid]}))
        pub, stats, published = await self.flood(topic, dropped)
        self.assertTrue(dropped(stats), stats)
        self.assertEqual(stats["slow_consumer_disconnects"],
                         self.baseline["slow_consumer_disconnects"], stats)
        self.assertIn("dropping its oldest queued EVENTs", self.log())
        # Rate-limited: one first line, then summaries, never a line per EVENT.
        self.assertLess(self.log().count("EVENTs dropped"), 20)
        # The trace shows the dropped EVENTs of this subscriber, with the topic.
        drops = await self.slow_consumer_drops(trace_id)
        self.assertGreater(len(drops), 0)
        for r in drops[:50]:
            self.assertEqual((r["direction"], r["msg_type"], r["session_id"], r["uri"]),
                             ("tx", "Event", sid, topic), r)
        # So does the flight recorder, read from the wire capture: a dropped EVENT is noted there
        # instead of the bytes it never wrote (the newest ones: the capture keeps what fits).
        fr_drops = await self.slow_consumer_drops("flight-recorder")
        self.assertGreater(len(fr_drops), 0)
        for r in fr_drops[:50]:
            self.assertEqual((r["direction"], r["msg_type"], r["session_id"], r["uri"],
                              r["correlation"]), ("tx", "Event", sid, topic, None), r)
        # The subscriber reads again: its connection is alive, the newest EVENTs reach it, and
        # it leaves with a normal GOODBYE exchange.
        await h.step(pub.publish(topic, -2, "last", options=PublishOptions(acknowledge=True)))
        # (A 4 KiB receive window makes reading crawl: open it again.)
        sub.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4 * 1024 * 1024)
        sub.send_json([6, {}, "wamp.close.close_realm"])

        def read_until_goodbye():
            got = []
            while True:
                m = sub.recv_wamp()
                if m[0] == 6:
                    return got
                got.append(m)

        events = await self.run_blocking(read_until_goodbye)
        args = [e[4][0] for e in events if e[0] == 36]
        self.assertIn(-2, args)  # the newest EVENT is delivered
        # Every EVENT was either delivered or counted as dropped (this is the only subscriber).
        dropped_total = (await self.stats())["events_dropped"] - self.baseline["events_dropped"]
        self.assertEqual(len(args) + dropped_total, published + 1)
        # Oldest first: what arrived is in order, with gaps.
        flood = [a for a in args if a >= 0]
        self.assertEqual(flood, sorted(flood))
        self.assertLess(len(flood), published)
        await self.assert_serves()


class TestDisconnectPolicy(OverloadTestCase):
    POLICY = None  # the default: "disconnect"

    async def test_stalled_subscriber_is_disconnected(self):
        def disconnected(stats):
            return (stats["slow_consumer_disconnects"] >
                    self.baseline["slow_consumer_disconnects"])

        sub, sid, topic = await self.stalled_subscriber()
        pub, stats, _ = await self.flood(topic, disconnected)
        self.assertEqual(stats["slow_consumer_disconnects"],
                         self.baseline["slow_consumer_disconnects"] + 1, stats)
        self.assertEqual(stats["events_dropped"], self.baseline["events_dropped"])
        await self.assert_serves()


class TestWelcomeTooBig(OverloadTestCase):
    async def test_rawsocket_512_bytes(self):
        # Our own client: exact bytes. LENGTH 0 = 512 bytes, serializer 1 = JSON.
        r = trs.RawRs(port=self.rs_plain)
        self.addCleanup(r.close)
        reply = await self.run_blocking(r.handshake, 0x01)
        self.assertEqual((reply[0], reply[1] & 0x0F, reply[2:]), (0x7F, 1, b"\0\0"), reply)
        abort = await self.run_blocking(r.hello)
        self.assertEqual(abort[0], 3, abort)
        self.assertEqual(abort[2], "wamp.error.payload_size_exceeded", abort)
        self.assertIn("512 bytes", abort[1]["message"])
        self.assertTrue(await self.run_blocking(r.at_eof))
        # python3-autobahn's RawSocket client announcing 512 bytes is told the same.
        with self.assertRaises(h.LeftBeforeJoin) as cm:
            await trs.open_raw_session("realm1", "json", port=self.rs_plain, length_exp=0)
        self.assertEqual(cm.exception.details.reason, "wamp.error.payload_size_exceeded")
        # The ABORTed sessions are gone once the router has seen their connections close: the
        # autobahn client's close may reach the router after the ABORT reached the client.
        deadline = time.monotonic() + 10
        stats = await self.stats()
        while stats["sessions"] != self.baseline["sessions"] and time.monotonic() < deadline:
            await asyncio.sleep(0.05)
            stats = await self.stats()
        self.assertEqual(stats["messages_too_big"], self.baseline["messages_too_big"] + 2)
        self.assertEqual(stats["sessions"], self.baseline["sessions"])
        # 1 KiB is enough.
        s = await trs.open_raw_session("realm1", "json", port=self.rs_plain, length_exp=1)
        await h.step(s.close())


class TestIncomingLimits(OverloadTestCase):
    MIN_LENGTH = 1024

    async def test_incoming_too_big_and_min_length(self):
        # WebSocket: a message over max_message_size (1 MiB) closes with 1009.
        ws = h.RawWs(self.router.host, self.router.port, self.router.path)
        self.addCleanup(ws.close)
        self.assertEqual(ws.hello("realm1")[0], 2)
        ws.send_text('[16, 1, {}, "com.big", ["%s"]]' % ("x" * (1024 * 1024)))

        def close_code():
            while True:
                m = ws.recv_message(reply_close=False)
                if m[0] == "close":
                    return m[1]

        self.assertEqual(await self.run_blocking(close_code), 1009)
        # RawSocket: a length prefix over the announced limit closes the connection.
        r = trs.RawRs(port=self.rs_plain)
        self.addCleanup(r.close)
        await self.run_blocking(r.handshake, 0xF1)
        r.send(bytes([0, 0xFF, 0xFF, 0xFF]))
        self.assertTrue(await self.run_blocking(r.at_eof))
        # limits.rawsocket_min_length (1024 here): LENGTH 0 (512 bytes) gets error 2.
        r2 = trs.RawRs(port=self.rs_plain)
        self.addCleanup(r2.close)
        self.assertEqual(await self.run_blocking(r2.handshake, 0x01), bytes([0x7F, 0x20, 0, 0]))
        self.assertTrue(await self.run_blocking(r2.at_eof))
        stats = await self.stats()
        self.assertEqual(stats["incoming_too_big"], self.baseline["incoming_too_big"] + 2)
        self.assertEqual(stats["connection_refusals"], self.baseline["connection_refusals"] + 1)
        await self.assert_serves()


class TestConnectionCap(OverloadTestCase):
    async def wait_accepted(self, probe):
        """A closed connection frees its place only once the router has seen the close, which
        may come after the client's close returns. probe() opens one connection with a raw
        client that fails fast when refused (an autobahn client refused at the handshake just
        waits) and returns its WAMP reply to HELLO, or None when refused; retried for 5 s."""
        deadline = time.monotonic() + 5
        while True:
            reply = await self.run_blocking(probe)
            if reply is not None:
                return reply
            if time.monotonic() > deadline:
                raise AssertionError("no connection accepted within 5 s after one closed")
            await asyncio.sleep(0.1)

    def probe_rawsocket(self):
        r = trs.RawRs(port=self.rs_capped)
        try:
            reply = r.handshake(0xF1)
            if reply[1] & 0x0F == 0:  # an error reply: 0x7F, error << 4, 0, 0
                self.assertEqual(reply, bytes([0x7F, 0x40, 0, 0]))
                return None
            return r.hello()
        finally:
            r.close()

    def probe_websocket(self):
        ws = h.RawWs("127.0.0.1", self.ws_capped_port, self.ws_capped_path)
        try:
            if ws.status != 101:
                self.assertEqual(ws.status, 503, ws.headers)
                return None
            return ws.hello()
        finally:
            ws.close()

    async def test_rawsocket_cap(self):
        held = [await trs.open_raw_session("realm1", "json", port=self.rs_capped)
                for _ in range(CAP)]
        # The cap+1-th: handshake error 4 ("maximum connection count reached"), then close.
        r = trs.RawRs(port=self.rs_capped)
        self.addCleanup(r.close)
        self.assertEqual(await self.run_blocking(r.handshake, 0xF1), bytes([0x7F, 0x40, 0, 0]))
        self.assertTrue(await self.run_blocking(r.at_eof))
        stats = await self.stats()
        self.assertEqual(stats["connection_refusals"], self.baseline["connection_refusals"] + 1)
        self.assertIn("maximum of 2 connections", self.log())
        # Another listener is not affected.
        other = await trs.open_raw_session("realm1", "json", port=self.rs_plain)
        await h.step(other.close())
        # One closes: a new one is accepted.
        await h.step(held[0].close())
        welcome = await self.wait_accepted(self.probe_rawsocket)
        self.assertEqual(welcome[0], 2, welcome)  # WELCOME
        await h.step(held[1].close())

    async def test_websocket_cap(self):
        async def open_capped(ser="json"):
            return await trs.open_ws(self.ws_capped_url, self.ws_capped_port, "realm1", ser)

        held = [await open_capped() for _ in range(CAP)]
        # The cap+1-th upgrade: HTTP 503 before the upgrade.
        ws = h.RawWs("127.0.0.1", self.ws_capped_port, self.ws_capped_path)
        self.addCleanup(ws.close)
        self.assertEqual(ws.status, 503, ws.headers)
        self.assertIn(b"maximum number of connections reached", ws.buf)
        # autobahn's client fails to open too.
        with self.assertRaises(Exception):
            await asyncio.wait_for(open_capped("msgpack"), 5)
        stats = await self.stats()
        self.assertEqual(stats["connection_refusals"], self.baseline["connection_refusals"] + 2)
        # The main WebSocket listener is not affected.
        await self.assert_serves()
        await h.step(held[0].close())
        welcome = await self.wait_accepted(self.probe_websocket)
        self.assertEqual(welcome[0], 2, welcome)  # WELCOME
        await h.step(held[1].close())


if __name__ == "__main__":
    h.main()
