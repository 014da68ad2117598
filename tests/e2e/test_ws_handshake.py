"""The WebSocket handshake and frame rules, with hand-made requests and frames (rt_harness.RawWs
and raw sockets), against the router with the DEFAULT configuration (configs/default.json on an
ephemeral port: a web transport serving WAMP on /ws, the flight recorder on).

Checks: a 4 KiB Sec-WebSocket-Protocol offer is answered 101 with the subprotocol the router
prefers (wamp.2.msgpack before wamp.2.json, whatever the client's order; repeated header lines
and whitespace are one list), and the session works; an offer with nothing supported, or no
offer, is answered 400 with the supported subprotocols in the body, and a wrong path 404; each
refusal is counted in get_worker's stats per reason and the flight recorder holds a connection
record for it (event, reason, transport, peer). A binary frame on a wamp.2.json session and a
text frame on a wamp.2.msgpack session are protocol violations (ABORT
wamp.error.protocol_violation, then close 1002); a text frame that is not valid UTF-8 closes the
connection with 1007 before any WAMP decoding. A request head over wampscope.limits.http_max_head
is answered 431 and the connection closed. On a TLS listener the negotiation is the same: a short
offer gets the router's choice, and an offer of several KiB is answered 101; large events (several
frames each, written by lws) reach a subscriber whole.
"""

import base64
import json
import os
import shutil
import socket
import ssl
import tempfile

import msgpack

import rt_harness as h
from test_rawsocket import make_cert

P = "crossbarfabriccenter."
FR = "flight-recorder"
DEFAULT_CONFIG = "configs/default.json"


def raw_upgrade(host, port, path, protocol_lines, ssl_ctx=None, drop=(), extra=()):
    """Sends an upgrade request with one Sec-WebSocket-Protocol line per entry of
    protocol_lines (over TLS with ssl_ctx; without the header lines whose names are in drop,
    with the lines of extra); returns (status, headers, body, socket). The socket stays open."""
    sock = socket.create_connection((host, port), timeout=10)
    if ssl_ctx:
        sock = ssl_ctx.wrap_socket(sock, server_hostname="localhost")
    key = base64.b64encode(os.urandom(16)).decode()
    lines = ["GET %s HTTP/1.1" % path, "Host: %s:%d" % (host, port), "Upgrade: websocket",
             "Connection: Upgrade", "Sec-WebSocket-Key: " + key, "Sec-WebSocket-Version: 13"]
    lines += ["Sec-WebSocket-Protocol: " + p for p in protocol_lines]
    lines = [x for x in lines if x.split(":")[0] not in drop] + list(extra)
    sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
    buf = b""
    while b"\r\n\r\n" not in buf:
        chunk = sock.recv(65536)
        if not chunk:
            raise AssertionError("connection closed without an answer: %r" % buf)
        buf += chunk
    head, rest = buf.split(b"\r\n\r\n", 1)
    head_lines = head.decode("latin-1").split("\r\n")
    status = int(head_lines[0].split(" ")[1])
    headers = {}
    for line in head_lines[1:]:
        name, _, value = line.partition(":")
        headers[name.strip().lower()] = value.strip()
    n = int(headers.get("content-length", "0"))
    while len(rest) < n:
        chunk = sock.recv(65536)
        if not chunk:
            break
        rest += chunk
    return status, headers, rest.decode("utf-8", "replace"), sock


def long_offer(tail, size=4096):
    """About size bytes of subprotocols nobody supports, then tail."""
    names, n, i = [], 0, 0
    while n < size:
        names.append("x-vendor.protocol-%04d" % i)
        n += len(names[-1]) + 2
        i += 1
    return ", ".join(names + list(tail))


class HandshakeTest(h.AsyncTestCase):
    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.router = h.RouterProc(DEFAULT_CONFIG).start()
        self._mgmt = None
        self._socks = []

    async def asyncTearDown(self):
        try:
            for s in self._socks:
                s.close()
            if self._mgmt:
                await self._mgmt.close()
        finally:
            self.router.stop()

    def upgrade(self, protocol_lines, path=None, drop=(), extra=()):
        status, headers, body, sock = raw_upgrade(self.router.host, self.router.port,
                                                  path or self.router.path, protocol_lines,
                                                  drop=drop, extra=extra)
        self._socks.append(sock)
        return status, headers, body

    def ws(self, protocols):
        w = h.RawWs(self.router.host, self.router.port, self.router.path, protocols)
        self._socks.append(w)
        self.assertTrue(w.upgraded, w.status)
        return w

    async def api(self, proc, *args):
        if not self._mgmt:
            self._mgmt = await h.open_session(self.router, "mgmt", "json")
            self.node = (await h.step(self._mgmt.call(P + "list_nodes")))[0]
            self.worker = (await h.step(self._mgmt.call(P + "list_workers", self.node)))[0]
        return await h.step(self._mgmt.call(P + proc, self.node, self.worker, *args))

    async def connection_records(self):
        page = await self.api("get_trace_data", FR, 0, None, 10000)
        return [r for r in page if r["msg_type"] == "Connection"]

    async def stats(self):
        return (await self.api("get_worker"))["stats"]

    # --- negotiation --------------------------------------------------------------------------

    async def test_long_offer_chooses_router_order(self):
        offer = long_offer(["wamp.2.json", "wamp.2.msgpack"])
        self.assertGreater(len(offer), 4096)
        status, headers, _ = self.upgrade([offer])
        self.assertEqual(status, 101)
        self.assertEqual(headers.get("sec-websocket-protocol"), "wamp.2.msgpack")

    async def test_long_offer_session_works(self):
        w = self.ws([long_offer(["wamp.2.json"])])
        self.assertEqual(w.headers.get("sec-websocket-protocol"), "wamp.2.json")
        welcome = w.hello()
        self.assertEqual(welcome[0], 2, welcome)

    async def test_short_offer_router_order(self):
        status, headers, _ = self.upgrade(["wamp.2.json, wamp.2.msgpack"])
        self.assertEqual(status, 101)
        self.assertEqual(headers.get("sec-websocket-protocol"), "wamp.2.msgpack")
        status, headers, _ = self.upgrade(["wamp.2.ubjson", "  wamp.2.json.batched ,wamp.2.json"])
        self.assertEqual(status, 101)
        self.assertEqual(headers.get("sec-websocket-protocol"), "wamp.2.json")

    async def test_refusals_answered_counted_and_recorded(self):
        before = await self.stats()
        self.assertEqual(before["handshakes_refused_subprotocol"], 0)
        status, _, body = self.upgrade(["wamp.2.ubjson, wamp.2.json.batched, WAMP.2.JSON"])
        self.assertEqual(status, 400)
        self.assertIn("wamp.2.msgpack, wamp.2.cbor, wamp.2.json", body)
        status, _, body = self.upgrade([])
        self.assertEqual(status, 400)
        self.assertIn("wamp.2.msgpack, wamp.2.cbor, wamp.2.json", body)
        status, _, body = self.upgrade(["wamp.2.json"], path="/not-wamp")
        self.assertEqual(status, 404)
        # lws would hang up on these without a word.
        status, _, body = self.upgrade(["wamp.2.json"], drop=("Sec-WebSocket-Key",))
        self.assertEqual(status, 400)
        self.assertIn("Sec-WebSocket-Key", body)
        status, _, body = self.upgrade(["wamp.2.json"], drop=("Connection",))
        self.assertEqual(status, 400)
        self.assertIn("Connection: Upgrade", body)
        after = await self.stats()
        self.assertEqual(after["handshakes_refused_subprotocol"], 2)
        self.assertEqual(after["handshakes_refused_path"], 1)
        self.assertEqual(after["handshakes_refused_request"], 2)
        recs = await self.connection_records()
        self.assertEqual(len(recs), 5, recs)
        msgs = [r["msg"] for r in recs]
        for r in recs:
            self.assertIsNone(r["session_id"])
            self.assertIsNone(r["direction"])
            self.assertIsNone(r["realm"])
            self.assertIsNone(r["uri"])
            self.assertEqual(r["serializations"], {})
        self.assertEqual([m["event"] for m in msgs], ["refused"] * 5)
        self.assertEqual([m["reason"] for m in msgs],
                         ["subprotocol", "subprotocol", "path", "request", "request"])
        for m in msgs:
            self.assertEqual(m["transport"], "transport1")
            self.assertRegex(m["peer"], r"^127\.0\.0\.1:\d+$")
        self.assertIn("wamp.2.ubjson", msgs[0]["detail"])
        self.assertIn("no Sec-WebSocket-Protocol", msgs[1]["detail"])
        self.assertIn("/not-wamp", msgs[2]["detail"])
        log = self.router.stderr_text() + self.router.stdout_text()
        self.assertIn("refused by listener transport1 (subprotocol)", log)

    async def test_management_realm_refuses_other_origins(self):
        """Protected mode: a web page of another origin is refused the management realm even
        from loopback (any page a browser on this host opens could drive the router); a page of
        the router's own origin, and a client that sends no Origin, are admitted."""
        host, port, path = self.router.host, self.router.port, self.router.path

        def hello(origin):
            headers = ("Origin: " + origin,) if origin else ()
            ws = h.RawWs(host, port, path, headers=headers)
            try:
                return ws.hello("mgmt")
            finally:
                ws.close()
        refused = hello("http://evil.example:8917")
        self.assertEqual(refused[0], 3, refused)  # ABORT
        self.assertEqual(refused[2], "wamp.error.not_authorized")
        self.assertEqual(hello("null")[0], 3)  # (a sandboxed page, a file)
        self.assertEqual(hello("http://127.0.0.1:%d" % (port + 1))[0], 3)
        self.assertEqual(hello("http://%s:%d" % (host, port))[0], 2)  # WELCOME: its own
        self.assertEqual(hello(None)[0], 2)
        # Other realms take pages of any origin, as before.
        ws = h.RawWs(host, port, path, headers=("Origin: http://evil.example:8917",))
        try:
            self.assertEqual(ws.hello("realm1")[0], 2)
        finally:
            ws.close()
        log = self.router.stderr_text() + self.router.stdout_text()
        self.assertIn("a web page of another origin", log)

    async def test_upgrade_to_another_protocol_is_ignored(self):
        """RFC 7230 6.7: an Upgrade the server does not take (curl --http2 asks for h2c on every
        http:// request) is ignored: the request is answered as without it."""
        h2c = ("Connection: Upgrade, HTTP2-Settings", "Upgrade: h2c",
               "HTTP2-Settings: AAMAAABkAARAAAAAAAIAAAAA")
        drop = ("Upgrade", "Connection", "Sec-WebSocket-Key", "Sec-WebSocket-Version")
        status, headers, body = self.upgrade([], path="/trace/", drop=drop, extra=h2c)
        self.assertEqual(status, 200, body)
        self.assertIn("text/html", headers.get("content-type", ""))
        status, _, _ = self.upgrade([], path="/no-such-file", drop=drop, extra=h2c)
        self.assertEqual(status, 404)
        # An upgrade to websocket that is not valid is still refused as one.
        status, _, body = self.upgrade(["wamp.2.json"], drop=("Sec-WebSocket-Key",))
        self.assertEqual(status, 400)

    async def test_wrong_version_names_the_one_spoken(self):
        """RFC 6455 4.2.2: a refused version gets the versions the router speaks."""
        status, headers, body = self.upgrade(["wamp.2.json"], drop=("Sec-WebSocket-Version",),
                                             extra=("Sec-WebSocket-Version: 8",))
        self.assertEqual(status, 400)
        self.assertEqual(headers.get("sec-websocket-version"), "13")
        self.assertIn("Sec-WebSocket-Version", body)
        status, headers, _ = self.upgrade(["wamp.2.json"], drop=("Sec-WebSocket-Key",))
        self.assertEqual(status, 400)
        self.assertNotIn("sec-websocket-version", headers)  # (another refusal: not named)

    async def test_headers_too_long_answered_431_and_logged_at_info(self):
        # Over the 16 KiB of a request head (wampscope.limits.http_max_head): 431, then close.
        before = await self.stats()
        for _ in range(3):
            s = socket.create_connection((self.router.host, self.router.port), timeout=5)
            self._socks.append(s)
            s.sendall(b"GET " + self.router.path.encode() + b" HTTP/1.1\r\nHost: localhost\r\n"
                      b"X-Big: " + b"a" * 20000 + b"\r\n\r\n")
            got = b""
            try:
                while True:
                    chunk = s.recv(4096)
                    if not chunk:
                        break
                    got += chunk
            except ConnectionResetError:
                pass
            self.assertTrue(got.startswith(b"HTTP/1.1 431 "), got[:80])
        after = await self.stats()
        for k in ("handshakes_refused_request", "handshakes_refused_path"):
            self.assertEqual(after[k], before[k])
        self.assertEqual(after["http_responses_4xx"], before["http_responses_4xx"] + 3)
        log = self.router.stderr_text() + self.router.stdout_text()
        self.assertEqual(log.count("on listener transport1: 431"), 3, log)
        # The router goes on serving.
        w = self.ws(["wamp.2.json"])
        self.assertEqual(w.hello()[0], 2)

    # --- frames -------------------------------------------------------------------------------

    async def test_binary_frame_on_json_is_protocol_violation(self):
        w = self.ws(["wamp.2.json"])
        self.assertEqual(w.hello()[0], 2)
        w.send_frame(h.OP_BINARY, b'[32,1,{},"com.example.x"]')
        abort = w.recv_wamp()
        self.assertEqual(abort[0], 3, abort)
        self.assertEqual(abort[2], "wamp.error.protocol_violation")
        self.assertIn("binary WebSocket message", abort[1]["message"])
        close = w.recv_message()
        self.assertEqual(close[:2], ("close", 1002))
        self.assertEqual((await self.stats())["protocol_violations"], 1)

    async def test_text_frame_on_msgpack_is_protocol_violation(self):
        w = self.ws(["wamp.2.msgpack"])
        w.send_frame(h.OP_BINARY, msgpack.packb([1, "realm1", {"roles": {"caller": {}}}]))
        op, data = w.recv_message()
        self.assertEqual(op, h.OP_BINARY)
        self.assertEqual(msgpack.unpackb(data)[0], 2)
        w.send_frame(h.OP_TEXT, b'[32,1,{},"com.example.x"]')
        op, data = w.recv_message()
        self.assertEqual(op, h.OP_BINARY)
        abort = msgpack.unpackb(data)
        self.assertEqual(abort[0], 3, abort)
        self.assertEqual(abort[2], "wamp.error.protocol_violation")
        # Judged by the frame type (the bytes would not decode either: no UTF-8 text is a
        # MessagePack array).
        self.assertIn("text WebSocket message", abort[1]["message"])
        self.assertEqual(w.recv_message()[:2], ("close", 1002))

    async def test_invalid_utf8_closes_1007(self):
        for payload in (b'[1,"realm1",{"x":"\xc0\xaf"}]',  # overlong '/'
                        b'[1,"realm1",{"x":"\xed\xa0\x80"}]',  # a UTF-16 surrogate
                        b'[1,"realm1",{"x":"\xe2\x82"}]'):  # cut short
            with self.subTest(payload=payload):
                w = self.ws(["wamp.2.json"])
                w.send_frame(h.OP_TEXT, payload)
                self.assertEqual(w.recv_message()[:2], ("close", 1007))


class TlsHandshakeTest(h.AsyncTestCase):
    """On a TLS listener the negotiation is the router's, as on a plain one: its own order, and
    offers of any length; large messages go through lws' reads and writes."""

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-wss-")
        key, cert = make_cert(self.tmp)
        with open(os.path.join(os.environ["RT_SOURCE_DIR"], DEFAULT_CONFIG),
                  encoding="utf-8") as f:
            cfg = json.load(f)
        cfg["workers"][0]["transports"].append(
            {"type": "websocket", "id": "wss_one", "url": "wss://localhost/ws",
             "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": 0,
                          "tls": {"key": key, "certificate": cert}}})
        path = os.path.join(self.tmp, "config.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        self.router = h.RouterProc(path)
        self.router.start()
        wss = [u for u in self.router.urls if u.startswith("wss://")]
        self.port = int(wss[0].split(":")[2].split("/")[0])
        self.ctx = ssl.create_default_context(cafile=cert)
        self._socks = []
        self._mgmt = None

    async def asyncTearDown(self):
        try:
            for s in self._socks:
                s.close()
            if self._mgmt:
                await self._mgmt.close()
        finally:
            try:
                self.router.stop()
            finally:
                shutil.rmtree(self.tmp, ignore_errors=True)

    def upgrade(self, protocol_lines):
        status, headers, body, sock = raw_upgrade("127.0.0.1", self.port, "/any", protocol_lines,
                                                  self.ctx)
        self._socks.append(sock)
        return status, headers, body

    async def test_short_offer_router_order(self):
        status, headers, _ = self.upgrade(["wamp.2.json, wamp.2.msgpack"])
        self.assertEqual(status, 101)
        self.assertEqual(headers.get("sec-websocket-protocol"), "wamp.2.msgpack")

    async def test_large_messages_over_tls(self):
        # Over TLS the router leaves reads and writes to lws (no direct reads; one lws_write()
        # per frame, its header in front of the payload): events of 300 KB (five frames: each
        # "\u00e9" is six octets of JSON), 60 KB and a few octets reach a subscriber whole and
        # in order.
        def ws():
            status, _, _ = self.upgrade(["wamp.2.json"])
            self.assertEqual(status, 101)
            w = object.__new__(h.RawWs)  # the raw client's frames over this TLS socket
            w.sock, w.buf = self._socks[-1], b""
            self.assertEqual(w.hello()[0], 2)
            return w

        sub = ws()
        topic = h.uri(self, "big")
        sub.send_json([32, 1, {}, topic])
        self.assertEqual(sub.recv_wamp()[0], 33)
        pub = ws()
        payloads = ["a%d" % i + "\u00e9" * n for i, n in enumerate((50000, 10000, 2, 50000))]
        for i, p in enumerate(payloads):
            pub.send_json([16, i + 1, {}, topic, [p]])
        got = [sub.recv_wamp() for _ in payloads]
        self.assertEqual([m[0] for m in got], [36] * len(payloads))
        self.assertEqual([m[4][0] for m in got], payloads)

    async def mgmt_api(self, proc, *args):
        if not self._mgmt:
            self._mgmt = await h.open_session(self.router, "mgmt", "json")
            self.node = (await h.step(self._mgmt.call(P + "list_nodes")))[0]
            self.worker = (await h.step(self._mgmt.call(P + "list_workers", self.node)))[0]
        return await h.step(self._mgmt.call(P + proc, self.node, self.worker, *args))

    def send_then_eof(self, data):
        """Connects to the TLS port, sends data (if any), and waits until the router hangs up;
        returns what it answered."""
        s = socket.create_connection(("127.0.0.1", self.port), timeout=5)
        self._socks.append(s)
        if data:
            s.sendall(data)
        else:
            s.shutdown(socket.SHUT_WR)
        got = b""
        while True:
            try:
                chunk = s.recv(4096)
            except ConnectionResetError:  # it closed with our bytes unread
                return got
            if not chunk:
                return got
            got += chunk

    async def test_failed_tls_handshakes_counted_logged_recorded(self):
        before = (await self.mgmt_api("get_worker"))["stats"]
        self.assertEqual(before["handshakes_refused_tls"], 0)
        # Plain HTTP, and a RawSocket handshake with a first frame, on the TLS port: dropped
        # without an answer.
        self.assertEqual(self.send_then_eof(b"GET /ws HTTP/1.1\r\nHost: localhost\r\n\r\n"), b"")
        self.assertEqual(self.send_then_eof(b"\x7f\xf1\x00\x00\x00\x00\x00\x10[1,\"realm1\",{}]"),
                         b"")
        # A client that connects and goes without a word is no failed handshake.
        self.send_then_eof(b"")
        # A real TLS client still gets through.
        status, _, _ = self.upgrade(["wamp.2.json"])
        self.assertEqual(status, 101)
        after = (await self.mgmt_api("get_worker"))["stats"]
        self.assertEqual(after["handshakes_refused_tls"], 2)
        self.assertEqual(after["handshakes_refused_request"], 0)
        page = await self.mgmt_api("get_trace_data", FR, 0, None, 10000)
        msgs = [r["msg"] for r in page if r["msg_type"] == "Connection"]
        self.assertEqual([(m["event"], m["reason"]) for m in msgs], [("refused", "tls")] * 2)
        self.assertEqual(msgs[0]["detail"], "http request")
        self.assertEqual(msgs[1]["detail"], "wrong version number")
        for m in msgs:
            self.assertEqual(m["transport"], "wss_one")
            self.assertRegex(m["peer"], r"^127\.0\.0\.1:\d+$")
        log = self.router.stderr_text() + self.router.stdout_text()
        self.assertRegex(log, r"TLS handshake from 127\.0\.0\.1:\d+ failed on listener wss_one: "
                              r"http request")

    async def test_long_offer_accepted(self):
        # Several KiB of offer (libwebsockets alone took at most 126 bytes on TLS).
        status, headers, _ = self.upgrade([long_offer(["wamp.2.json"], 6000),
                                           "wamp.2.cbor"])
        self.assertEqual(status, 101)
        self.assertEqual(headers.get("sec-websocket-protocol"), "wamp.2.cbor")

if __name__ == "__main__":
    h.main()
