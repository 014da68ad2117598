"""Hostile clients: each test attacks the router with what broken, malicious or merely careless
clients send, then checks that the router still serves a normal client correctly and that what
it holds (sessions, subscriptions, registrations, queued bytes, pending calls: get_worker's
"stats") returns to its baseline. At the end of every test the router is stopped with SIGTERM
and must exit 0 with no sanitizer report (AddressSanitizer's leak check included), so memory the
attack made the router allocate must have been released.

Config: configs/test-e2e-hostile.json (1 MiB messages, 1 MiB outgoing queue per session, 2 s
HELLO timeout).
"""

import asyncio
import concurrent.futures
import json
import re
import resource
import socket
import struct
import sys
import threading
import time

import rt_harness as h
from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import PublishOptions

CONFIG = "configs/test-e2e-hostile.json"
LIMIT = 1024 * 1024  # max_message_size and max_queue_bytes of CONFIG
MGMT = "crossbarfabriccenter."
SETTLE = 10.0  # seconds for the router to notice closed connections


class HostileTestCase(h.AsyncTestCase):
    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.router = h.RouterProc(config=CONFIG).start()
        self.addCleanup(self.router.stop)
        self.mgmt = await h.open_session(self.router, "mgmt", "json")
        self.addAsyncCleanup(self.mgmt.close)
        self.node = (await h.step(self.mgmt.call(MGMT + "list_nodes")))[0]
        self.worker = (await h.step(self.mgmt.call(MGMT + "list_workers", self.node)))[0]
        # A well-behaved application: a callee and a subscriber on realm1, used after each attack.
        self.good = await h.open_session(self.router, "realm1", "msgpack")
        self.addAsyncCleanup(self.good.close)
        self.echo_uri = h.uri(self, "echo")
        await h.step(self.good.register(lambda *a: list(a), self.echo_uri))
        self.baseline = await self.stats()
        self.rss_before = self.rss_kib()

    async def stats(self):
        w = await h.step(self.mgmt.call(MGMT + "get_worker", self.node, self.worker))
        return w["stats"]

    def rss_kib(self):
        with open("/proc/%d/status" % self.router.proc.pid) as f:
            for line in f:
                if line.startswith("VmRSS:"):
                    return int(line.split()[1])
        return 0

    async def assert_recovered(self):
        """A fresh client (JSON) does pub/sub and RPC through the router; then every gauge is
        back at its baseline."""
        client = await h.open_session(self.router, "realm1", "json")
        topic = h.uri(self, "after")
        got = asyncio.get_running_loop().create_future()
        await h.step(client.subscribe(lambda x: got.done() or got.set_result(x), topic))
        await h.step(self.good.publish(topic, "still here",
                                       options=PublishOptions(acknowledge=True)))
        self.assertEqual(await h.step(got), "still here")
        self.assertEqual(await h.step(client.call(self.echo_uri, 1, "two")), [1, "two"])
        await h.step(client.close())
        deadline = time.monotonic() + SETTLE
        keys = ("sessions", "subscriptions", "registrations", "queued_messages", "queued_bytes",
                "pending_calls", "retained_events")
        while True:
            now = await self.stats()
            if all(now[k] == self.baseline[k] for k in keys) or time.monotonic() > deadline:
                break
            await asyncio.sleep(0.1)
        for k in keys:
            self.assertEqual(now[k], self.baseline[k], "stats.%s after the attack: %r" % (k, now))
        # Informational: ASan builds keep freed memory in quarantine, so RSS is not asserted.
        sys.stderr.write("[%s: router RSS %d KiB -> %d KiB] " %
                         (self.id().split(".")[-1], self.rss_before, self.rss_kib()))
        return now

    def raw(self, **kw):
        ws = h.RawWs(self.router.host, self.router.port, self.router.path, **kw)
        self.assertTrue(ws.upgraded)
        self.addCleanup(ws.close)
        return ws

    async def run_blocking(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    def expect_abort_and_close(self, ws, reason="wamp.error.protocol_violation", code=1002):
        msg = ws.recv_wamp()
        self.assertEqual(msg[0], 3, msg)  # ABORT
        self.assertEqual(msg[2], reason, msg)
        close = ws.recv_wamp()
        self.assertEqual(close[:2], ("close", code), close)
        self.assertTrue(ws.read_until_eof())

    def expect_close(self, ws, codes):
        """Reads until the close frame (ABORTs may come first); returns its code."""
        while True:
            try:
                msg = ws.recv_message(reply_close=False)
            except (ConnectionError, OSError):
                return None  # the TCP connection ended without a close frame
            if msg[0] == "close":
                self.assertIn(msg[1], codes, msg)
                ws.reply_close(msg[1])
                return msg[1]


class TestHostileMessages(HostileTestCase):
    async def test_unknown_message_types(self):
        for bad in ([99, 1], [0], [-1, {}], [70000, 1, {}], [3.5], [None], ["HELLO"], [[1]]):
            with self.subTest(bad=bad):
                ws = self.raw()
                self.assertEqual(ws.hello("realm1")[0], 2)
                ws.send_json(bad)
                await self.run_blocking(self.expect_abort_and_close, ws)
        stats = await self.assert_recovered()
        self.assertGreaterEqual(stats["protocol_violations"],
                                self.baseline["protocol_violations"] + 8)

    async def test_huge_and_invalid_ids(self):
        # Ids must be integers in [1, 2^53] (spec "IDs").
        for bad_id in (2**53 + 1, 2**63, 2**64, 10**30, 0, -1, 1.5, "7", None, True):
            with self.subTest(bad_id=bad_id):
                ws = self.raw()
                self.assertEqual(ws.hello("realm1")[0], 2)
                ws.send_text('[48, %s, {}, "%s", []]' % (json.dumps(bad_id), self.echo_uri))
                await self.run_blocking(self.expect_abort_and_close, ws)
        # The largest valid id is fine.
        ws = self.raw()
        self.assertEqual(ws.hello("realm1")[0], 2)
        ws.send_json([48, 2**53, {}, self.echo_uri, ["edge"]])
        result = await self.run_blocking(ws.recv_wamp)
        self.assertEqual(result[:2], [50, 2**53], result)
        self.assertEqual(result[3], [["edge"]])  # the callee returns its args as one list
        ws.send_json([6, {}, "wamp.close.normal"])
        self.assertEqual((await self.run_blocking(ws.recv_wamp))[0], 6)
        await self.assert_recovered()

    async def test_deep_nesting(self):
        sys.setrecursionlimit(max(sys.getrecursionlimit(), 20000))
        # 1,000 levels: within the codecs' limit (2,048): published and delivered intact (raw
        # JSON clients: autobahn's MessagePack packer stops at 512 levels).
        deep = "x"
        for _ in range(1000):
            deep = [deep]
        topic = h.uri(self, "deep")
        sub = self.raw()
        self.assertEqual(sub.hello("realm1")[0], 2)
        sub.send_json([32, 1, {}, topic])
        self.assertEqual((await self.run_blocking(sub.recv_wamp))[0], 33)
        ws = self.raw()
        self.assertEqual(ws.hello("realm1")[0], 2)
        ws.send_json([16, 1, {"acknowledge": True}, topic, [deep]])
        self.assertEqual((await self.run_blocking(ws.recv_wamp))[:2], [17, 1])
        event = await self.run_blocking(sub.recv_wamp)
        self.assertEqual(event[0], 36)
        self.assertEqual(event[4], [deep])
        sub.send_json([6, {}, "wamp.close.normal"])
        self.assertEqual((await self.run_blocking(sub.recv_wamp))[0], 6)
        # 100,000 levels: refused as malformed without exhausting the router's stack; in both
        # serializers.
        ws.send_text("[48, 2, {}, \"%s\", [%sx%s]]" % (self.echo_uri, "[" * 100000, "]" * 100000))
        await self.run_blocking(self.expect_abort_and_close, ws)
        ws = self.raw(protocols=("wamp.2.msgpack",))
        hello = b"\x93\x01\xa6realm1\x81\xa5roles\x81\xa6caller\x80"
        ws.send_frame(h.OP_BINARY, hello)
        self.assertEqual((await self.run_blocking(ws.recv_message))[0], h.OP_BINARY)  # WELCOME
        ws.send_frame(h.OP_BINARY, b"\x94\x30\x02\x80" + b"\x91" * 100000 + b"\x01")
        code = await self.run_blocking(self.expect_close, ws, (1002,))
        self.assertEqual(code, 1002)
        await self.assert_recovered()

    async def test_wrongly_typed_options_and_nul_strings(self):
        # Options of the wrong type are answered like every invalid option (ERROR
        # wamp.error.invalid_argument naming it), also those the router does not act on.
        ws = self.raw()
        self.assertEqual(ws.hello("realm1")[0], 2)
        for req, (msg, name) in enumerate((
                ([48, 0, {"transaction_hash": 123}, self.echo_uri, [1]], "transaction_hash"),
                ([48, 0, {"receive_progress": "yes"}, self.echo_uri], "receive_progress"),
                ([16, 0, {"forward_for": "hello"}, "com.typed", [1]], "forward_for"),
                ([16, 0, {"eligible_authid": ["joe\x00x"]}, "com.typed"], "eligible_authid"),
                ([32, 0, {"match": "prefix\x00x"}, "com."], "match"),
                ([64, 0, {"invoke": "roundrobin\x00"}, "com.typed"], "invoke")), start=1):
            with self.subTest(option=name):
                msg[1] = req
                ws.send_json(msg)
                err = await self.run_blocking(ws.recv_wamp)
                self.assertEqual(err[:3], [8, msg[0], req], err)
                self.assertEqual(err[4], "wamp.error.invalid_argument", err)
                self.assertIn(name, err[5][0])
        ws.send_json([6, {}, "wamp.close.normal"])
        self.assertEqual((await self.run_blocking(ws.recv_wamp))[0], 6)
        # NUL in a management argument is refused, never cut: "a\0b" is not trace "a".
        for args in ((self.node, self.worker, "a\x00b"), (self.node + "\x00x", self.worker)):
            with self.assertRaises(ApplicationError) as cm:
                await h.step(self.mgmt.call(MGMT + "start_trace", *args))
            self.assertEqual(cm.exception.error, "wamp.error.invalid_argument")
        traces = await h.step(self.mgmt.call(MGMT + "list_traces", self.node, self.worker))
        self.assertNotIn("a", traces)
        await self.assert_recovered()

    async def test_invalid_utf8(self):
        # In a text frame before and after joining, and inside a MessagePack str.
        ws = self.raw()
        ws.send_frame(h.OP_TEXT, b'[1, "realm1\xff\xfe", {"roles": {"caller": {}}}]')
        await self.run_blocking(self.expect_close, ws, (1002, 1007))
        ws = self.raw()
        self.assertEqual(ws.hello("realm1")[0], 2)
        ws.send_frame(h.OP_TEXT, b'[16, 1, {}, "com.x", ["\xc3\x28"]]')
        await self.run_blocking(self.expect_close, ws, (1002, 1007))
        ws = self.raw(protocols=("wamp.2.msgpack",))
        ws.send_frame(h.OP_BINARY, b"\x93\x01\xa6realm\xff\x81\xa5roles\x81\xa6caller\x80")
        await self.run_blocking(self.expect_close, ws, (1002,))
        await self.assert_recovered()


class TestHostileFraming(HostileTestCase):
    def _announce_100mb(self, ws):
        # A text frame whose header announces 100 MB, then data as fast as the router takes it.
        header = bytes([0x81, 0x80 | 127]) + struct.pack("!Q", 100 * 1000 * 1000) + b"\0\0\0\0"
        ws.sock.sendall(header + b'["')
        chunk = b"x" * 65536
        sent = 0
        try:
            while sent < 8 * LIMIT:
                ws.sock.sendall(chunk)
                sent += len(chunk)
        except OSError:
            pass  # the router closed the connection

    async def test_100mb_length_prefix(self):
        ws = self.raw()
        self.assertEqual(ws.hello("realm1")[0], 2)
        sender = threading.Thread(target=self._announce_100mb, args=(ws,), daemon=True)
        sender.start()
        code = await self.run_blocking(self.expect_close, ws, (1009,))
        sender.join(20)
        self.assertEqual(code, 1009)
        self.assertLess(self.rss_kib() - self.rss_before, 100 * 1000,
                        "the router allocated for the announced length")
        await self.assert_recovered()

    async def test_never_ending_fragmented_message(self):
        ws = self.raw()
        self.assertEqual(ws.hello("realm1")[0], 2)

        def fragments():
            try:
                ws.send_frame(h.OP_TEXT, b'["', fin=False)
                for _ in range(100000):  # 1 KiB continuation frames, never a FIN
                    ws.send_frame(h.OP_CONT, b"y" * 1024, fin=False)
            except OSError:
                pass

        sender = threading.Thread(target=fragments, daemon=True)
        sender.start()
        code = await self.run_blocking(self.expect_close, ws, (1009,))
        sender.join(30)
        self.assertEqual(code, 1009)
        await self.assert_recovered()

    async def test_client_that_never_reads(self):
        # A subscriber that stops reading: its queue fills, the router disconnects it (close
        # 1008, slow_consumer_disconnects + 1) while the publisher and others go on.
        topic = h.uri(self, "firehose")
        ws = self.raw()
        ws.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        self.assertEqual(ws.hello("realm1")[0], 2)
        ws.send_json([32, 1, {}, topic])
        self.assertEqual((await self.run_blocking(ws.recv_wamp))[0], 33)  # SUBSCRIBED
        pub = await h.open_session(self.router, "realm1", "msgpack")
        payload = "z" * (60 * 1024)
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            stats = await self.stats()
            if stats["slow_consumer_disconnects"] > self.baseline["slow_consumer_disconnects"]:
                break
            for _ in range(20):
                pub.publish(topic, payload)
            await h.step(pub.publish(topic, "sync", options=PublishOptions(acknowledge=True)))
        self.assertEqual(stats["slow_consumer_disconnects"],
                         self.baseline["slow_consumer_disconnects"] + 1, stats)
        await h.step(pub.close())
        await self.assert_recovered()


class TestLimits(HostileTestCase):
    async def test_pending_calls_and_sessions_per_realm(self):
        # max_pending_calls 5: a sixth call while five hang is refused, the others go on.
        slow = h.uri(self, "slow")
        reg = await h.step(self.good.register(h.hang_forever, slow))
        caller = await h.open_session(self.router, "realm1", "json")
        pending = [caller.call(slow) for _ in range(5)]
        with self.assertRaises(ApplicationError) as cm:
            await h.step(caller.call(slow))
        self.assertEqual(cm.exception.error, "wampscope.error.limit_reached")
        self.assertIn("max_pending_calls", cm.exception.args[0])
        # Leaving with calls pending releases them.
        for p in pending:
            p.cancel()
        await h.step(caller.close())
        # max_sessions_per_realm 50: the 51st session on realm1 is aborted.
        sessions = []
        for _ in range(50 - self.baseline["sessions"] + 1):  # mgmt is not on realm1
            sessions.append(await h.open_session(self.router, "realm1", "msgpack"))
        with self.assertRaises(Exception) as cm:
            await h.open_session(self.router, "realm1", "json")
        self.assertIn("wampscope.error.limit_reached", repr(cm.exception))
        for s in sessions:
            await h.step(s.close())
        await h.step(reg.unregister())
        stats = await self.assert_recovered()
        self.assertGreaterEqual(stats["limit_refusals"], self.baseline["limit_refusals"] + 2)


    async def test_orphaned_calls_do_not_pile_up(self):
        # Callers that send CALLs to a callee that never answers and then disconnect: their calls
        # are canceled toward the callee (INTERRUPT killnowait, it announced call_canceling) and
        # freed at once, so reconnecting cannot walk around max_pending_calls (5 a caller).
        slow = h.uri(self, "never")
        callee = self.raw()
        callee.send_json([1, "realm1", {"roles": {"callee": {"features": {
            "call_canceling": True}}}}])
        self.assertEqual((await self.run_blocking(callee.recv_wamp))[0], 2)
        callee.send_json([64, 1, {}, slow])
        self.assertEqual((await self.run_blocking(callee.recv_wamp))[0], 65)

        def recv_n(n, code):
            got = [callee.recv_wamp() for _ in range(n)]
            self.assertEqual([m[0] for m in got], [code] * n, got)
            return got

        for _ in range(5):
            callers = [self.raw() for _ in range(10)]
            for ws in callers:
                self.assertEqual(ws.hello("realm1")[0], 2)
                for k in range(1, 6):
                    ws.send_json([48, k, {}, slow])
            invocations = await self.run_blocking(recv_n, 50, 68)
            stats = await self.stats()
            self.assertEqual(stats["pending_calls"], self.baseline["pending_calls"] + 50, stats)
            for ws in callers:
                ws.close()
            interrupts = await self.run_blocking(recv_n, 50, 69)
            self.assertEqual(sorted(m[1] for m in interrupts), sorted(m[1] for m in invocations))
            self.assertEqual({m[2]["mode"] for m in interrupts}, {"killnowait"})
            self.assertEqual((await self.stats())["pending_calls"], self.baseline["pending_calls"])
        # A late answer finds no call: dropped and counted.
        callee.send_json([70, interrupts[0][1], {}, ["late"]])
        callee.send_json([6, {}, "wamp.close.normal"])
        self.assertEqual((await self.run_blocking(callee.recv_wamp))[0], 6)
        stats = await self.assert_recovered()
        self.assertEqual(stats["answers_dropped"], self.baseline["answers_dropped"] + 1)
        self.assertEqual(stats["limit_refusals"], self.baseline["limit_refusals"])

class TestFloods(HostileTestCase):
    async def test_hello_floods(self):
        # One connection repeating HELLO: the second is a protocol violation.
        ws = self.raw()
        hello = json.dumps([1, "realm1", {"roles": {"caller": {}}}]).encode()
        ws.sock.sendall(b"".join(self._frame(hello) for _ in range(1000)))
        first = await self.run_blocking(ws.recv_wamp)
        self.assertEqual(first[0], 2)  # WELCOME
        await self.run_blocking(self.expect_abort_and_close, ws)

        # 300 connections that say HELLO and vanish without GOODBYE, and 300 that never say it.
        def hello_and_vanish(i):
            c = h.RawWs(self.router.host, self.router.port, self.router.path)
            if i % 2 == 0:
                c.send_frame(h.OP_TEXT, hello)
                c.recv_wamp()
            c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()  # RST

        with concurrent.futures.ThreadPoolExecutor(8) as pool:
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: list(pool.map(hello_and_vanish, range(600))))
        await self.assert_recovered()

    @staticmethod
    def _frame(payload):
        return (bytes([0x81, 0x80 | 126]) + struct.pack("!H", len(payload)) + b"\0\0\0\0" +
                payload)

    async def test_subscription_flood(self):
        ws = self.raw()
        self.assertEqual(ws.hello("realm1")[0], 2)
        n = 10000
        batch = b"".join(self._frame(json.dumps([32, i + 1, {}, "com.flood.t%d" % i]).encode())
                         for i in range(n))

        def subscribe_all():
            ws.sock.sendall(batch)
            got = 0
            while got < n:
                msg = ws.recv_wamp()
                self.assertEqual(msg[0], 33, msg)
                got += 1

        await self.run_blocking(subscribe_all)
        stats = await self.stats()
        self.assertEqual(stats["subscriptions"], self.baseline["subscriptions"] + n)
        ws.close()  # drops everything at once
        await self.assert_recovered()

    async def test_ten_thousand_connections(self):
        opened = [0]
        lock = threading.Lock()

        def open_and_drop(i):
            c = h.RawWs(self.router.host, self.router.port, self.router.path,
                        protocols=("wamp.2.json", "wamp.2.msgpack"))
            ok = c.upgraded
            if i % 3 == 0:  # abortive close (RST) for a third of them
                c.sock.setsockopt(socket.SOL_SOCKET, socket.SO_LINGER, struct.pack("ii", 1, 0))
            c.close()
            if ok:
                with lock:
                    opened[0] += 1

        before = (await self.stats())["sessions_opened"]
        with concurrent.futures.ThreadPoolExecutor(16) as pool:
            await asyncio.get_running_loop().run_in_executor(
                None, lambda: list(pool.map(open_and_drop, range(10000))))
        self.assertEqual(opened[0], 10000)
        stats = await self.assert_recovered()
        self.assertGreaterEqual(stats["sessions_opened"], before + 10000)



class TestLogFlood(h.AsyncTestCase):
    """Lines a peer can cause are rate-limited (configs/README.md, "Logging"): a flood writes
    one line per call site, then a summary with the count every 10 s and at exit."""

    async def test_refused_calls_log_once(self):
        router = h.RouterProc(config=CONFIG).start()
        self.addCleanup(router.stop)
        slow = "com.logflood.slow"
        callee = h.RawWs(router.host, router.port, router.path)
        self.addCleanup(callee.close)
        self.assertEqual(callee.hello("realm1")[0], 2)
        callee.send_json([64, 1, {}, slow])
        self.assertEqual(callee.recv_wamp()[0], 65)
        caller = h.RawWs(router.host, router.port, router.path)
        self.addCleanup(caller.close)
        self.assertEqual(caller.hello("realm1")[0], 2)
        total, batch = 20000, 500

        def flood():
            # Five calls hang (max_pending_calls 5); every further one is refused.
            caller.sock.sendall(b"".join(TestFloods._frame(json.dumps(
                [48, i, {}, slow]).encode()) for i in range(1, 6)))
            refused = 0
            for start in range(6, 6 + total, batch):
                caller.sock.sendall(b"".join(TestFloods._frame(json.dumps(
                    [48, i, {}, slow]).encode()) for i in range(start, start + batch)))
                for _ in range(batch):
                    msg = caller.recv_wamp()
                    self.assertEqual(msg[:2], [8, 48], msg)
                    refused += msg[4] == "wampscope.error.limit_reached"
            return refused

        started = time.monotonic()
        refused = await asyncio.get_running_loop().run_in_executor(None, flood)
        elapsed = time.monotonic() - started
        self.assertEqual(refused, total)
        caller.close()
        callee.close()
        router.wait_exit(router.terminate())
        err = router.stderr_text()
        self.assertEqual(err.count("CALL refused: limit reached"), 1, err[-3000:])
        summaries = [int(n) for n in re.findall(
            r'\(rate-limited\) (\d+) more lines like "request refused by a limit"', err)]
        # The rest in summaries: one per 10 s of flood, and the last at exit.
        self.assertEqual(sum(summaries), total - 1, err[-3000:])
        self.assertLessEqual(len(summaries), 2 + int(elapsed / 10), err[-3000:])
        self.assertLess(len(err.splitlines()), 60, err[-3000:])
        sys.stderr.write("[%d refused CALLs in %.1f s: %d log lines] "
                         % (total, elapsed, len(err.splitlines())))

    async def test_accept_failures_log_once(self):
        # Under file-descriptor exhaustion every accept() fails while connections wait, and
        # libwebsockets logs each failure: rate-limited like every line a peer can cause.
        old = resource.getrlimit(resource.RLIMIT_NOFILE)
        resource.setrlimit(resource.RLIMIT_NOFILE, (48, old[1]))
        try:
            router = h.RouterProc(config=CONFIG).start()
        finally:
            resource.setrlimit(resource.RLIMIT_NOFILE, old)
        self.addCleanup(router.stop)
        socks = []
        try:
            for _ in range(100):
                socks.append(socket.create_connection((router.host, router.port), timeout=5))
            await asyncio.sleep(1.0)
        finally:
            for s in socks:
                s.close()
        await asyncio.sleep(0.5)
        router.wait_exit(router.terminate())
        err = router.stderr_text()
        failures = err.count("lws: accept")
        self.assertGreater(failures, 0, err[-3000:])
        self.assertLessEqual(failures, 20, err[-3000:])  # a connection's burst, then counted
        summaries = [int(n) for n in re.findall(
            r'\(rate-limited\) (\d+) more lines like "libwebsockets"', err)]
        self.assertTrue(summaries, err[-3000:])
        self.assertLess(len(err.splitlines()), 60, err[-3000:])
        sys.stderr.write("[accept() failures: %d lines written, %d summarised] "
                         % (failures, sum(summaries)))

if __name__ == "__main__":
    h.main()
