"""Session establishment and misbehaving peers: realms, subprotocol negotiation, garbage, limits."""

import asyncio
import json
import threading

from autobahn.wamp.exception import ApplicationError

import rt_harness as h


class TestJoin(h.RouterTestCase):
    async def test_join_each_realm_with_each_serializer(self):
        for ser in h.SERIALIZERS:
            for realm in ("realm1", "realm2", "realm3"):
                s = await self.session(ser, realm=realm)
                details = await h.step(s.joined)
                self.assertEqual(details.realm, realm)
                self.assertIsInstance(details.session, int)
                self.assertTrue(1 <= details.session <= 2**53)

    async def test_realms_are_isolated(self):
        proc = h.uri(self, "p")
        a = await self.session("json", realm="realm2")
        b = await self.session("json", realm="realm3")
        await h.step(a.register(lambda: "realm2", proc))
        with self.assertRaises(ApplicationError) as cm:
            await h.step(b.call(proc))
        self.assertEqual(cm.exception.error, "wamp.error.no_such_procedure")
        c = await self.session("msgpack", realm="realm2")
        self.assertEqual(await h.step(c.call(proc)), "realm2")

    async def test_unknown_realm_is_aborted(self):
        for ser in h.SERIALIZERS:
            with self.subTest(serializer=ser):
                s = await h.open_session(self.router, "no.such.realm", ser, wait_join=False)
                try:
                    with self.assertRaises(h.LeftBeforeJoin) as cm:
                        await h.step(s.joined)
                    self.assertEqual(cm.exception.details.reason, "wamp.error.no_such_realm")
                    await h.step(s.lost)  # the router closes the connection after ABORT
                finally:
                    s.abort_transport()

    async def test_unknown_realm_raw(self):
        ws = h.RawWs(self.router.host, self.router.port, self.router.path)
        try:
            self.assertTrue(ws.upgraded)
            msg = ws.hello("no.such.realm")
            self.assertEqual(msg[0], 3, msg)  # ABORT
            self.assertEqual(msg[2], "wamp.error.no_such_realm")
            self.assertEqual(ws.recv_wamp()[0], "close")
            self.assertTrue(ws.read_until_eof())
        finally:
            ws.close()


    async def test_join_again_on_one_connection(self):
        """GOODBYE, then HELLO again over the same WebSocket: a new session, with an id of its
        own; the one before is gone."""
        watcher2 = await self.session("json", realm="realm2")
        watcher3 = await self.session("json", realm="realm3")
        ws = h.RawWs(self.router.host, self.router.port, self.router.path)
        try:
            first = ws.hello("realm2")
            self.assertEqual(first[0], 2, first)
            info = await h.step(watcher2.call("wamp.session.get", first[1]))
            self.assertEqual(info["session"], first[1])
            ws.send_json([6, {}, "wamp.close.normal"])
            self.assertEqual(ws.recv_wamp()[:3], [6, {}, "wamp.close.goodbye_and_out"])
            second = ws.hello("realm3")
            self.assertEqual(second[0], 2, second)
            self.assertNotEqual(second[1], first[1])
            self.assertTrue(1 <= second[1] <= 2**53)
            with self.assertRaises(ApplicationError) as cm:
                await h.step(watcher2.call("wamp.session.get", first[1]))
            self.assertEqual(cm.exception.error, "wamp.error.no_such_session")
            info = await h.step(watcher3.call("wamp.session.get", second[1]))
            self.assertEqual(info["session"], second[1])
            ws.send_json([48, 1, {}, "wamp.session.count"])
            self.assertEqual(ws.recv_wamp(), [50, 1, {}, [2]])
        finally:
            ws.close()


class TestHandshake(h.RouterTestCase):
    def _handshake(self, protocols):
        ws = h.RawWs(self.router.host, self.router.port, self.router.path, protocols=protocols)
        ws.close()
        return ws

    async def test_subprotocols_negotiated(self):
        for proto in ("wamp.2.json", "wamp.2.msgpack", "wamp.2.cbor"):
            ws = self._handshake((proto,))
            self.assertEqual(ws.status, 101)
            self.assertEqual(ws.headers.get("sec-websocket-protocol"), proto)
        # Several offered, unknown ones skipped.
        ws = self._handshake(("wamp.2.ubjson", "wamp.2.msgpack", "wamp.2.json"))
        self.assertEqual(ws.status, 101)
        self.assertIn(ws.headers.get("sec-websocket-protocol"), ("wamp.2.msgpack", "wamp.2.json"))

    async def test_no_subprotocol_is_refused(self):
        ws = self._handshake(())
        self.assertNotEqual(ws.status, 101, ws.headers)

    async def test_non_wamp_subprotocol_is_refused(self):
        for protos in (("chat",), ("wamp.2.flatbuffers",), ("wamp.2.ubjson", "mqtt")):
            with self.subTest(protocols=protos):
                ws = self._handshake(protos)
                self.assertNotEqual(ws.status, 101, ws.headers)

    async def test_router_still_serves_after_refusals(self):
        for _ in range(3):
            self._handshake(())
        s = await self.session("json")
        await h.step(s.register(lambda: 7, h.uri(self, "p")))
        self.assertEqual(await h.step(s.call(h.uri(self, "p"))), 7)


class TestMisbehavingPeers(h.RouterTestCase):
    """Raw clients break the protocol; an autobahn session connected meanwhile keeps working."""

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.good = await self.session("msgpack")
        self.proc = h.uri(self, "still_alive")
        self.calls = 0

        def alive():
            self.calls += 1
            return self.calls

        await h.step(self.good.register(alive, self.proc))

    async def _assert_good_session_works(self):
        n = self.calls
        self.assertEqual(await h.step(self.good.call(self.proc)), n + 1)

    def _raw(self):
        ws = h.RawWs(self.router.host, self.router.port, self.router.path)
        self.assertTrue(ws.upgraded)
        self.addCleanup(ws.close)
        return ws

    def _assert_protocol_violation(self, ws):
        msg = ws.recv_wamp()
        self.assertNotEqual(msg[0], "close", "expected ABORT before the close frame, got %r" % (msg,))
        self.assertEqual(msg[0], 3, msg)  # ABORT
        self.assertEqual(msg[2], "wamp.error.protocol_violation", msg)
        close = ws.recv_wamp()
        self.assertEqual(close[0], "close", close)
        self.assertEqual(close[1], 1002, close)
        self.assertTrue(ws.read_until_eof(), "the router did not close the TCP connection")

    async def _run(self, fn, *args):
        return await asyncio.get_running_loop().run_in_executor(None, fn, *args)

    async def test_garbage_before_hello(self):
        ws = self._raw()
        ws.send_text("not json")
        await self._run(self._assert_protocol_violation, ws)
        await self._assert_good_session_works()

    async def test_truncated_hello(self):
        ws = self._raw()
        ws.send_text("[1]")
        await self._run(self._assert_protocol_violation, ws)
        await self._assert_good_session_works()

    async def test_garbage_after_join(self):
        for garbage in ("not json", "[1]", "{}", '["x"]', "[16, 1]", "[1, \"realm1\", {}]"):
            with self.subTest(garbage=garbage):
                ws = self._raw()
                msg = ws.hello("realm1")
                self.assertEqual(msg[0], 2, msg)  # WELCOME
                ws.send_text(garbage)
                await self._run(self._assert_protocol_violation, ws)
        await self._assert_good_session_works()

    async def test_binary_frame_on_json_session(self):
        ws = self._raw()
        ws.send_frame(h.OP_BINARY, b"\x93\x01\xa6realm1\x80")  # msgpack HELLO on a json transport
        await self._run(self._assert_protocol_violation_or_close, ws)
        await self._assert_good_session_works()

    def _assert_protocol_violation_or_close(self, ws):
        # A binary frame on a text subprotocol may be refused as a WAMP protocol violation (ABORT)
        # or at the WebSocket level (close 1003/1002); either way the connection must end.
        msg = ws.recv_wamp()
        if msg[0] != "close":
            self.assertEqual(msg[:3:2], [3, "wamp.error.protocol_violation"], msg)
            msg = ws.recv_wamp()
        self.assertEqual(msg[0], "close", msg)
        self.assertIn(msg[1], (1002, 1003, 1007), msg)
        self.assertTrue(ws.read_until_eof())

    def _send_oversize_and_expect_1009(self, ws, size):
        payload = json.dumps(["x" * size]).encode()
        self.assertGreater(len(payload), h.MAX_MESSAGE_SIZE)

        def sender():
            try:
                ws.send_frame(h.OP_TEXT, payload)
            except OSError:  # the router may stop reading once the limit is passed
                pass

        t = threading.Thread(target=sender, daemon=True)
        t.start()
        try:
            msg = ws.recv_message(reply_close=False)
        finally:
            t.join(15)
        self.assertEqual(msg[0], "close", "expected only a close frame, got %r" % (msg[:2],))
        self.assertEqual(msg[1], 1009, msg)
        ws.reply_close(1009)  # now that our frame is complete
        self.assertTrue(ws.read_until_eof())

    async def test_oversize_message_closes_1009(self):
        ws = self._raw()
        msg = ws.hello("realm1")
        self.assertEqual(msg[0], 2, msg)
        await self._run(self._send_oversize_and_expect_1009, ws, h.MAX_MESSAGE_SIZE + 1)
        await self._assert_good_session_works()

    async def test_oversize_fragmented_message_closes_1009(self):
        ws = self._raw()
        msg = ws.hello("realm1")
        self.assertEqual(msg[0], 2, msg)

        def fragments():
            chunk = b"x" * (1 << 20)
            try:
                ws.send_frame(h.OP_TEXT, b'["' + chunk, fin=False)
                for _ in range(4):
                    ws.send_frame(h.OP_CONT, chunk, fin=False)
                ws.send_frame(h.OP_CONT, b'"]', fin=True)
            except OSError:
                pass
            msg = ws.recv_message()
            self.assertEqual(msg[0], "close", msg[:2])
            self.assertEqual(msg[1], 1009, msg)
            self.assertTrue(ws.read_until_eof())

        await self._run(fragments)
        await self._assert_good_session_works()

    async def test_message_just_under_limit_is_accepted(self):
        # A PUBLISH a little under max_message_size goes through and is delivered.
        sub_topic = h.uri(self, "big")
        got = asyncio.get_running_loop().create_future()
        await h.step(self.good.subscribe(lambda x: got.set_result(len(x)), sub_topic))
        ws = self._raw()
        msg = ws.hello("realm1")
        self.assertEqual(msg[0], 2, msg)
        size = h.MAX_MESSAGE_SIZE - 64 * 1024
        await self._run(ws.send_json, [16, 1, {"acknowledge": True}, sub_topic, ["y" * size]])
        published = await self._run(ws.recv_wamp)
        self.assertEqual(published[:2], [17, 1], published[:2])
        self.assertEqual(await h.step(got), size)
        await self._assert_good_session_works()


if __name__ == "__main__":
    h.main()
