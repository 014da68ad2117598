"""WAMP-over-RawSocket against the real router: python3-autobahn's RawSocket client over TCP and a
Unix socket (JSON and MessagePack), talking to WebSocket clients through the router; our own
RawSocket client for what no library sends: the handshake and frames one byte at a time, PING,
every handshake error reply, bad magic, reserved bits, an oversize frame; the router's sends
held to the length the client announced; a trace record of a RawSocket session. TLS: wss and
rss with autobahn, a universal TLS port, plain clients on TLS ports, two routers sharing one wss
port (endpoint.shared).

Each test writes its own config (configs/test-e2e.json plus RawSocket listeners) into a temporary
directory, because the Unix socket path lives there.
"""

import asyncio
import json
import os
import re
import shutil
import socket
import ssl
import stat
import struct
import subprocess
import tempfile
import time
import unittest

import msgpack
from autobahn.asyncio.rawsocket import WampRawSocketClientFactory, WampRawSocketClientProtocol
from autobahn.asyncio.websocket import WampWebSocketClientFactory
from autobahn.exception import PayloadExceededError
from autobahn.wamp.types import ComponentConfig, PublishOptions

import rt_harness as h

# Debian's python3-autobahn 22.7: autobahn/wamp/protocol.py reads transport.transport_details on
# WELCOME, which the asyncio RawSocket protocol keeps as _transport_details only (the WebSocket
# one has both). Without this every RawSocket session fails right after WELCOME on the client.
if not hasattr(WampRawSocketClientProtocol, "transport_details"):
    WampRawSocketClientProtocol.transport_details = property(lambda self: self._transport_details)

RAW_MAX = 65536  # options.max_message_size of the RawSocket listeners below: LENGTH 7
MAGIC = 0x7F
SER_ID = {"json": 1, "msgpack": 2}
MSG, PING, PONG = 0, 1, 2


def write_config(tmp, extra_transports=()):
    """configs/test-e2e.json with a json+msgpack TCP listener, a json-only TCP listener and a
    Unix socket listener added; returns (config path, Unix socket path)."""
    with open(os.path.join(os.environ["RT_SOURCE_DIR"], "configs/test-e2e.json"),
              encoding="utf-8") as f:
        cfg = json.load(f)
    sock = os.path.join(tmp, "rs.sock")
    worker = cfg["workers"][0]
    # Clients announcing less than 1 KiB are refused (handshake error 2).
    worker["wampscope"]["limits"]["rawsocket_min_length"] = 1024
    worker["transports"] += [
        {"type": "rawsocket", "id": "rs_tcp",
         "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": 0},
         "serializers": ["json", "msgpack"], "options": {"max_message_size": RAW_MAX}},
        {"type": "rawsocket", "id": "rs_json",
         "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": 0},
         "serializers": ["json"]},
        {"type": "rawsocket", "id": "rs_unix", "endpoint": {"type": "unix", "path": sock},
         "options": {"max_message_size": RAW_MAX}},
    ] + list(extra_transports)
    path = os.path.join(tmp, "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path, sock


def rs_urls(router):
    """The router's rs:// URLs in config order: TCP json+msgpack, TCP json only, Unix."""
    return [u for u in router.urls if u.startswith("rs://")]


def tcp_port(url):
    return int(url.rsplit(":", 1)[1])


class LimitedRawSocketProtocol(WampRawSocketClientProtocol):
    """Announces a receive limit of 2^(9+LENGTH_EXP) bytes in its handshake."""
    LENGTH_EXP = 15

    def __init__(self):
        super().__init__()
        self._length_exp = self.LENGTH_EXP
        self.max_length = 2 ** (9 + self.LENGTH_EXP)


async def open_raw_session(realm, serializer, port=None, unix=None, length_exp=15,
                           cls=h.Client, ssl_ctx=None):
    """An autobahn RawSocket session on 127.0.0.1:port or the Unix socket; waits for WELCOME."""
    loop = asyncio.get_running_loop()
    holder = {}

    def session_factory():
        s = cls(ComponentConfig(realm=realm))
        holder["session"] = s
        return s

    factory = WampRawSocketClientFactory(session_factory,
                                         serializer=h.make_serializer(serializer))
    factory.protocol = type("Proto%d" % length_exp, (LimitedRawSocketProtocol,),
                            {"LENGTH_EXP": length_exp})
    if unix:
        conn = loop.create_unix_connection(factory, unix)
    else:
        conn = loop.create_connection(factory, "127.0.0.1", port, ssl=ssl_ctx,
                                      server_hostname="localhost" if ssl_ctx else None)
    _, proto = await h.step(conn)
    deadline = loop.time() + h.STEP_TIMEOUT
    while "session" not in holder:
        if loop.time() > deadline:
            raise AssertionError("RawSocket handshake did not complete")
        await asyncio.sleep(0.005)
    s = holder["session"]
    s.ws = proto  # Client.abort_transport() uses .ws.transport
    await h.step(asyncio.shield(s.joined))
    return s


async def open_ws(url, port, realm, ser, ssl_ctx=None):
    """An autobahn WebSocket session to url (connecting to 127.0.0.1:port); waits for WELCOME."""
    loop = asyncio.get_running_loop()
    holder = {}

    def session_factory():
        holder["s"] = h.Client(ComponentConfig(realm=realm))
        return holder["s"]

    factory = WampWebSocketClientFactory(session_factory, url=url,
                                         serializers=[h.make_serializer(ser)])
    _, proto = await h.step(loop.create_connection(
        factory, "127.0.0.1", port, ssl=ssl_ctx,
        server_hostname="localhost" if ssl_ctx else None))
    deadline = loop.time() + h.STEP_TIMEOUT
    while "s" not in holder:
        if loop.time() > deadline:
            raise AssertionError("WebSocket opening handshake did not complete")
        await asyncio.sleep(0.005)
    s = holder["s"]
    s.ws = proto
    await h.step(asyncio.shield(s.joined))
    return s


class RawRs:
    """A blocking RawSocket client written here, to send what no library would."""

    def __init__(self, port=None, unix=None, timeout=10.0):
        if unix:
            self.sock = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
            self.sock.settimeout(timeout)
            self.sock.connect(unix)
        else:
            self.sock = socket.create_connection(("127.0.0.1", port), timeout=timeout)
            self.sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
        self.buf = b""

    def send(self, data, byte_by_byte=False):
        if not byte_by_byte:
            self.sock.sendall(data)
            return
        for i in range(len(data)):
            self.sock.sendall(data[i:i + 1])
            time.sleep(0.001)  # separate segments, so the router sees separate reads

    def read_exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(65536)
            if not chunk:
                raise ConnectionError("closed by the router after %r" % self.buf)
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def handshake(self, octet2, byte_by_byte=False, reserved=b"\0\0"):
        self.send(bytes([MAGIC, octet2]) + reserved, byte_by_byte)
        return self.read_exact(4)

    def send_frame(self, ftype, payload, byte_by_byte=False):
        self.send(struct.pack("!I", (ftype << 24) | len(payload)) + payload, byte_by_byte)

    def recv_frame(self):
        (head,) = struct.unpack("!I", self.read_exact(4))
        ftype, n = head >> 24, head & 0xFFFFFF
        return ftype, self.read_exact(n)

    def send_json(self, msg, byte_by_byte=False):
        data = json.dumps(msg).encode()
        self.send_frame(MSG, data, byte_by_byte)
        return data

    def recv_json(self):
        ftype, data = self.recv_frame()
        assert ftype == MSG, "frame type %d" % ftype
        return json.loads(data.decode())

    def hello(self, realm="realm1"):
        self.send_json([1, realm, {"roles": {"publisher": {}, "subscriber": {}, "caller": {},
                                             "callee": {}}}])
        return self.recv_json()

    def at_eof(self, timeout=10.0):
        """True when the router closes the connection (in time) without sending more."""
        self.sock.settimeout(timeout)
        try:
            extra = self.sock.recv(65536)
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False
        if extra:
            raise AssertionError("unexpected bytes %r" % extra[:64])
        return True

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


class RawSocketTestCase(h.AsyncTestCase):
    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-rs-")
        self.config, self.sock_path = write_config(self.tmp)
        self.router = h.RouterProc(config=self.config).start()
        urls = rs_urls(self.router)
        self.assertEqual(len(urls), 3, self.router.urls)
        self.port, self.json_port = tcp_port(urls[0]), tcp_port(urls[1])
        self.assertEqual(urls[2], "rs://unix:" + self.sock_path)
        self._sessions = []
        self._raws = []

    async def asyncTearDown(self):
        await h.stop_router(self.router, self.tmp, self._sessions, self._raws)

    async def ws(self, ser, realm="realm1"):
        s = await h.open_session(self.router, realm, ser)
        self._sessions.append(s)
        return s

    async def rs(self, ser, realm="realm1", **kw):
        if "port" not in kw and "unix" not in kw:
            kw["port"] = self.port
        s = await open_raw_session(realm, ser, **kw)
        self._sessions.append(s)
        return s

    def raw(self, **kw):
        if "port" not in kw and "unix" not in kw:
            kw["port"] = self.port
        r = RawRs(**kw)
        self._raws.append(r)
        return r

    def log(self):
        return self.router.stdout_text() + self.router.stderr_text()

    async def assert_serves(self):
        """A normal RawSocket client still gets an RPC answered."""
        a = await self.rs("json")
        await h.step(a.register(lambda: "ok", h.uri(self, "alive")))
        self.assertEqual(await h.step(a.call(h.uri(self, "alive"))), "ok")
        await a.close()
        self._sessions.remove(a)

    # -- third-party client: RawSocket <-> WebSocket through the router

    async def check_pubsub_rpc(self, ser, other_ser, **where):
        rs = await self.rs(ser, **where)
        ws = await self.ws(other_ser)
        self.assertEqual(rs.joined.result().realm, "realm1")
        proc = h.uri(self, "echo_%s_%s" % (ser, other_ser))

        def echo(*args, **kwargs):
            return {"args": list(args), "kwargs": kwargs}

        # RPC both ways.
        await h.step(rs.register(echo, proc + ".rs"))
        await h.step(ws.register(echo, proc + ".ws"))
        for caller, callee in ((ws, "rs"), (rs, "ws")):
            res = await h.step(caller.call(proc + "." + callee, *h.ARGS, **h.KWARGS))
            self.assertEqual(res, {"args": h.ARGS, "kwargs": h.KWARGS})
        # Pub/sub both ways, with acknowledgement.
        topic = h.uri(self, "topic_%s_%s" % (ser, other_ser))
        got = {"rs": asyncio.get_running_loop().create_future(),
               "ws": asyncio.get_running_loop().create_future()}
        await h.step(rs.subscribe(lambda *a, **k: got["rs"].set_result((list(a), k)), topic))
        await h.step(ws.subscribe(lambda *a, **k: got["ws"].set_result((list(a), k)), topic))
        await h.step(ws.publish(topic, *h.ARGS, options=PublishOptions(acknowledge=True),
                                **h.KWARGS))
        self.assertEqual(await h.step(got["rs"]), (h.ARGS, h.KWARGS))
        self.assertFalse(got["ws"].done())  # publisher excluded by default
        await h.step(rs.publish(topic, "from-rs", options=PublishOptions(acknowledge=True)))
        self.assertEqual(await h.step(got["ws"]), (["from-rs"], {}))

    async def test_tcp_json_and_msgpack_with_websocket_peers(self):
        for ser, other in (("json", "msgpack"), ("msgpack", "json"), ("msgpack", "msgpack")):
            with self.subTest(rawsocket=ser, websocket=other):
                await self.check_pubsub_rpc(ser, other)

    async def test_unix_socket(self):
        st = os.stat(self.sock_path)
        self.assertTrue(stat.S_ISSOCK(st.st_mode))
        self.assertEqual(stat.S_IMODE(st.st_mode), 0o660)
        for ser in ("json", "msgpack"):
            with self.subTest(ser=ser):
                await self.check_pubsub_rpc(ser, "json", unix=self.sock_path)
        # Removed when the router stops.
        for s in reversed(self._sessions):
            await s.close()
        self._sessions = []
        self.router.stop()
        self.assertFalse(os.path.exists(self.sock_path), "socket file left behind")
        # A stale socket file (its listener is gone) is replaced at the next start.
        stale = socket.socket(socket.AF_UNIX, socket.SOCK_STREAM)
        stale.bind(self.sock_path)
        stale.close()
        self.assertTrue(stat.S_ISSOCK(os.stat(self.sock_path).st_mode))
        self.router = h.RouterProc(config=self.config).start()
        self.assertIn("replacing stale Unix socket file " + self.sock_path, self.log())
        a = await self.rs("msgpack", unix=self.sock_path)
        await h.step(a.register(lambda: 7, h.uri(self, "seven")))
        self.assertEqual(await h.step(a.call(h.uri(self, "seven"))), 7)

    async def test_unix_path_in_use_or_not_a_socket_is_refused(self):
        # The running router holds the socket: a second one must not steal it.
        other = h.RouterProc(config=self.config)
        with self.assertRaises(AssertionError) as cm:
            other.start()
        self.assertIn(self.sock_path, str(cm.exception))
        self.assertIn("another process is listening on it", str(cm.exception))
        await self.assert_serves_unix()
        # A file that is not a socket is never deleted.
        tmp2 = tempfile.mkdtemp(prefix="wampscope-rs-")
        try:
            cfg2, sock2 = write_config(tmp2)
            with open(sock2, "w", encoding="utf-8") as f:
                f.write("precious")
            third = h.RouterProc(config=cfg2)
            with self.assertRaises(AssertionError) as cm:
                third.start()
            self.assertIn(sock2 + " (listener rs_unix): the file exists and is not a socket",
                          str(cm.exception))
            with open(sock2, encoding="utf-8") as f:
                self.assertEqual(f.read(), "precious")
        finally:
            shutil.rmtree(tmp2, ignore_errors=True)

    async def assert_serves_unix(self):
        a = await self.rs("json", unix=self.sock_path)
        await h.step(a.register(lambda: "ok", h.uri(self, "alive_unix")))
        self.assertEqual(await h.step(a.call(h.uri(self, "alive_unix"))), "ok")

    # -- our own client: byte by byte, PING/PONG

    async def test_byte_by_byte_handshake_frames_and_ping(self):
        for where in ({"port": self.port}, {"unix": self.sock_path}):
            with self.subTest(**where):
                r = self.raw(**where)
                # Client LENGTH 15, JSON; the router announces 2^16 = options.max_message_size.
                self.assertEqual(r.handshake(0xF1, byte_by_byte=True), bytes([MAGIC, 0x71, 0, 0]))
                r.send_json([1, "realm1", {"roles": {"caller": {}}}], byte_by_byte=True)
                welcome = r.recv_json()
                self.assertEqual(welcome[0], 2, welcome)
                r.send_frame(PING, b"ping payload \x00\xff", byte_by_byte=True)
                self.assertEqual(r.recv_frame(), (PONG, b"ping payload \x00\xff"))
                r.send_frame(PING, b"")
                self.assertEqual(r.recv_frame(), (PONG, b""))
                # An unsolicited PONG is ignored; the session goes on.
                r.send_frame(PONG, b"whatever")
                r.send_json([48, 1, {}, "wamp.no_such_proc"])
                err = r.recv_json()
                self.assertEqual(err[:2], [8, 48])
                self.assertEqual(err[4], "wamp.error.no_such_procedure")
                r.send_json([6, {}, "wamp.close.close_realm"], byte_by_byte=True)
                self.assertEqual(r.recv_json()[0], 6)
                self.assertTrue(r.at_eof())

    async def test_ping_as_long_as_a_message_gets_its_pong(self):
        # The json-only listener accepts frames up to limits.max_message_size (4 MiB, LENGTH 13):
        # a PING of 2 MiB is within it, and the spec asks for exactly one PONG echoing it.
        r = self.raw(port=self.json_port)
        self.assertEqual(r.handshake(0xF1), bytes([MAGIC, 0xD1, 0, 0]))
        self.assertEqual(r.hello()[0], 2)
        payload = os.urandom(2 * 1024 * 1024)
        r.send_frame(PING, payload)
        self.assertEqual(r.recv_frame(), (PONG, payload))
        r.send_json([48, 1, {}, "wamp.no_such_proc"])
        self.assertEqual(r.recv_json()[:2], [8, 48])

    async def test_two_frames_in_one_write_and_msgpack(self):
        r = self.raw()
        # Client LENGTH 1 (1 KiB): WELCOME with its feature list is over LENGTH 0's 512 bytes.
        self.assertEqual(r.handshake(0x12), bytes([MAGIC, 0x72, 0, 0]))
        hello = msgpack.packb([1, "realm1", {"roles": {"caller": {}}}])
        call = msgpack.packb([48, 7, {}, "wamp.no_such_proc"])
        r.send(b"".join(struct.pack("!I", len(m)) + m for m in (hello, call)))
        ftype, data = r.recv_frame()
        self.assertEqual(msgpack.unpackb(data)[0], 2)
        ftype, data = r.recv_frame()
        self.assertEqual(msgpack.unpackb(data)[:2], [8, 48])

    # -- handshake errors and broken framing

    async def test_handshake_errors(self):
        cases = [
            # (port, octet2, reserved, reply octet2, log text)
            (self.json_port, 0xF2, b"\0\0", 0x10, "serializer unsupported"),  # msgpack off
            (self.port, 0xF3, b"\0\0", 0x10, "serializer unsupported"),  # CBOR
            (self.port, 0xF0, b"\0\0", 0x10, "serializer unsupported"),  # illegal 0
            (self.port, 0xF1, b"\x01\0", 0x30, "use of reserved bits"),
            (self.port, 0xF1, b"\0\x80", 0x30, "use of reserved bits"),
            # LENGTH 0: 512 bytes, below limits.rawsocket_min_length (1024).
            (self.port, 0x01, b"\0\0", 0x20, "maximum message length unacceptable"),
        ]
        for port, octet2, reserved, reply, text in cases:
            with self.subTest(octet2=octet2, reserved=reserved):
                r = self.raw(port=port)
                self.assertEqual(r.handshake(octet2, byte_by_byte=True, reserved=reserved),
                                 bytes([MAGIC, reply, 0, 0]))
                self.assertTrue(r.at_eof(), "not closed after the error reply")
                self.assertIn("RawSocket handshake from 127.0.0.1:", self.log())
                self.assertIn("refused: " + text, self.log())
        # Not RawSocket at all: closed without a reply.
        r = self.raw()
        r.send(b"GET / HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertTrue(r.at_eof())
        self.assertIn("not a RawSocket handshake", self.log())
        await self.assert_serves()

    async def test_handshake_refused_while_shutting_down(self):
        """Error 4 (maximum connection count reached) when the router refuses new sessions:
        here during the shutdown grace period, which a session that ignores GOODBYE keeps
        open."""
        stay = self.raw()
        stay.handshake(0xF1)
        self.assertEqual(stay.hello()[0], 2)
        sent_at = self.router.terminate()
        self.assertEqual(stay.recv_json()[:3], [6, {}, "wamp.close.system_shutdown"])
        late = self.raw()
        self.assertEqual(late.handshake(0xF1), bytes([MAGIC, 0x40, 0, 0]))
        self.assertTrue(late.at_eof())
        self.router.wait_exit(sent_at)
        self.assertIn("RawSocket connection from 127.0.0.1:", self.log())
        self.assertIn("refused (shutting down or out of memory)", self.log())

    async def test_oversize_and_reserved_frames_close(self):
        r = self.raw()
        self.assertEqual(r.handshake(0xF1), bytes([MAGIC, 0x71, 0, 0]))
        self.assertEqual(r.hello()[0], 2)
        # One octet over the announced 65536: closed as soon as the prefix is in.
        r.send(struct.pack("!I", RAW_MAX + 1))
        self.assertTrue(r.at_eof())
        self.assertIn("announced a message of 65537 bytes, over the limit of 65536 bytes; closing",
                      self.log())
        # Exactly the limit is fine (a JSON string of 65536 bytes in total).
        r = self.raw()
        r.handshake(0xF1)
        self.assertEqual(r.hello()[0], 2)
        topic = h.uri(self, "big")
        body = json.dumps([16, 1, {"acknowledge": True}, topic, ["x"]])
        msg = json.dumps([16, 1, {"acknowledge": True}, topic,
                          ["x" * (RAW_MAX - len(body) + 1)]]).encode()
        self.assertEqual(len(msg), RAW_MAX)
        r.send_frame(MSG, msg)
        self.assertEqual(r.recv_json()[:2], [17, 1])
        # Reserved prefix bits and reserved frame types close the connection too.
        for head in (0x10 << 24 | 2, 3 << 24 | 2, 0x08 << 24 | 2):
            with self.subTest(prefix=hex(head)):
                r = self.raw()
                r.handshake(0xF1)
                r.send(struct.pack("!I", head) + b"[]")
                self.assertTrue(r.at_eof())
        await self.assert_serves()

    async def test_silent_connections_are_closed(self):
        """No handshake, half a handshake, or a handshake but no HELLO: each connection is
        closed after wampscope.limits.hello_timeout (5 s in test-e2e.json)."""
        quiet = self.raw()
        half = self.raw()
        half.send(bytes([MAGIC, 0xF1]))
        mute = self.raw(unix=self.sock_path)
        self.assertEqual(mute.handshake(0xF1), bytes([MAGIC, 0x71, 0, 0]))
        started = time.monotonic()
        for r in (quiet, half, mute):
            self.assertTrue(r.at_eof(timeout=15), "still open after %.1f s"
                            % (time.monotonic() - started))
        self.assertGreater(time.monotonic() - started, 3.0)
        await self.assert_serves()

    # -- the router's sends respect the client's announced length

    async def test_send_respects_client_max_length(self):
        # LENGTH 1: the client takes messages up to 1024 bytes.
        small = await self.rs("json", length_exp=1)
        ws = await self.ws("json")
        topic = h.uri(self, "limited")
        got = []
        await h.step(small.subscribe(lambda s: got.append(s), topic))
        for payload in ("a", "b" * 2000, "c"):
            await h.step(ws.publish(topic, payload, options=PublishOptions(acknowledge=True)))
        for _ in range(200):
            if len(got) >= 2:
                break
            await asyncio.sleep(0.01)
        await asyncio.sleep(0.1)
        self.assertEqual(got, ["a", "c"])
        self.assertIn("exceeds the transport limit of 1024 bytes", self.log())
        # A result too big for the caller becomes an ERROR, and the session goes on.
        proc = h.uri(self, "big_result")
        await h.step(ws.register(lambda: "r" * 2000, proc))
        # (autobahn raises ERROR wamp.error.payload_size_exceeded as its PayloadExceededError.)
        with self.assertRaises(PayloadExceededError) as cm:
            await h.step(small.call(proc))
        self.assertIn("exceeds the caller's message size limit", str(cm.exception))
        await h.step(ws.register(lambda: "fits", proc + "2"))
        self.assertEqual(await h.step(small.call(proc + "2")), "fits")

    # -- tracing sees RawSocket sessions like WebSocket ones

    async def test_trace_records_rawsocket_messages(self):
        mg = await self.ws("json", realm="mgmt")
        node, worker = "e2e_node", "router1"
        pre = "crossbarfabriccenter."
        trace = await h.step(mg.call(pre + "start_trace", node, worker, "rs_trace",
                                     {"realms": ["realm1"]}))
        self.assertEqual(trace["id"], "rs_trace")
        r = self.raw()
        r.handshake(0xF1)
        welcome = r.hello()
        sid = welcome[1]
        topic = h.uri(self, "traced")
        sent = r.send_json([16, 5, {"acknowledge": True}, topic, [1, 2, 3]])
        self.assertEqual(r.recv_json()[:2], [17, 5])
        m = await self.rs("msgpack")
        await h.step(m.publish(topic, "mp", options=PublishOptions(acknowledge=True)))
        await h.step(mg.call(pre + "stop_trace", node, worker, "rs_trace"))
        recs = await h.step(mg.call(pre + "get_trace_data", node, worker, "rs_trace", 0, None,
                                    1000))
        pub = [x for x in recs if x["msg_type"] == "Publish" and x["session_id"] == sid]
        self.assertEqual(len(pub), 1, recs)
        self.assertEqual(pub[0]["direction"], "rx")
        self.assertEqual(pub[0]["serializations"], {"json": len(sent)})
        self.assertEqual(pub[0]["uri"], topic)
        msid = m.joined.result().session
        mp = [x for x in recs if x["msg_type"] == "Publish" and x["session_id"] == msid]
        self.assertEqual(len(mp), 1, recs)
        self.assertEqual(list(mp[0]["serializations"]), ["msgpack"])
        self.assertGreater(mp[0]["serializations"]["msgpack"], 0)
        acks = [x for x in recs if x["msg_type"] == "Published" and x["session_id"] == sid]
        self.assertEqual(len(acks), 1)
        self.assertEqual(acks[0]["direction"], "tx")


# --- TLS ------------------------------------------------------------------------------------------

def make_cert(tmp):
    """A self-signed certificate for localhost / 127.0.0.1, made with the openssl CLI."""
    key, cert = os.path.join(tmp, "key.pem"), os.path.join(tmp, "cert.pem")
    subprocess.run(["openssl", "req", "-x509", "-newkey", "rsa:2048", "-nodes", "-days", "2",
                    "-keyout", key, "-out", cert, "-subj", "/CN=localhost",
                    "-addext", "subjectAltName=DNS:localhost,IP:127.0.0.1"],
                   check=True, stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    return key, cert


def write_tls_config(tmp, key, cert):
    """configs/test-e2e.json plus a WebSocket and a RawSocket listener with TLS."""
    with open(os.path.join(os.environ["RT_SOURCE_DIR"], "configs/test-e2e.json"),
              encoding="utf-8") as f:
        cfg = json.load(f)
    tls = {"key": key, "certificate": cert}
    cfg["workers"][0]["transports"] += [
        {"type": "websocket", "id": "wss_e2e", "url": "wss://localhost/secure",
         "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": 0, "tls": tls}},
        {"type": "rawsocket", "id": "rss_e2e",
         "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": 0, "tls": tls}},
        {"type": "universal", "id": "uni_tls",
         "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": 0, "tls": tls},
         "rawsocket": {}, "websocket": {"uni": {"type": "websocket"}}},
    ]
    path = os.path.join(tmp, "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


def read_to_eof(sock, timeout=10.0):
    """Everything the peer sends until it closes (None if it does not close in time)."""
    sock.settimeout(timeout)
    data = b""
    try:
        while True:
            chunk = sock.recv(65536)
            if not chunk:
                return data
            data += chunk
    except ConnectionResetError:
        return data
    except socket.timeout:
        return None


class TlsTestCase(h.AsyncTestCase):
    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-tls-")
        self.key, self.cert = make_cert(self.tmp)
        self.router = h.RouterProc(config=write_tls_config(self.tmp, self.key, self.cert))
        self.router.start()
        wss = [u for u in self.router.urls if u.startswith("wss://")]
        rss = [u for u in self.router.urls if u.startswith("rss://")]
        self.assertEqual(len(wss), 2, self.router.urls)
        self.assertEqual(len(rss), 2, self.router.urls)
        self.uni_port = tcp_port(rss[1])
        self.assertEqual(wss[1], "wss://127.0.0.1:%d/uni" % self.uni_port)
        self.wss_url = wss[0]
        self.assertTrue(self.wss_url.endswith("/secure"), self.wss_url)
        self.wss_port = int(self.wss_url.split(":")[2].split("/")[0])
        self.rss_port = tcp_port(rss[0])
        self.ctx = ssl.create_default_context(cafile=self.cert)
        self._sessions = []

    async def asyncTearDown(self):
        await h.stop_router(self.router, self.tmp, self._sessions)

    async def wss(self, ser, port=None, path="/secure"):
        port = port or self.wss_port
        s = await open_ws("wss://localhost:%d%s" % (port, path), port, "realm1", ser,
                          ssl_ctx=self.ctx)
        self._sessions.append(s)
        self.assertTrue(s.ws.transport.get_extra_info("ssl_object") is not None)
        return s

    async def rss(self, ser, port=None):
        s = await open_raw_session("realm1", ser, port=port or self.rss_port, ssl_ctx=self.ctx)
        self._sessions.append(s)
        self.assertTrue(s.ws.transport.get_extra_info("ssl_object") is not None)
        return s

    async def rpc_between_tls_clients(self, tag):
        a = await self.wss("json")
        b = await self.rss("msgpack")
        proc = h.uri(self, "tls_" + tag)
        await h.step(b.register(lambda *x, **k: {"a": list(x), "k": k}, proc))
        self.assertEqual(await h.step(a.call(proc, *h.ARGS, **h.KWARGS)),
                         {"a": h.ARGS, "k": h.KWARGS})
        topic = h.uri(self, "tls_topic_" + tag)
        got = asyncio.get_running_loop().create_future()
        await h.step(a.subscribe(lambda v: got.set_result(v), topic))
        await h.step(b.publish(topic, "over rss", options=PublishOptions(acknowledge=True)))
        self.assertEqual(await h.step(got), "over rss")
        # A large message crosses TLS in pieces.
        big = "y" * (1024 * 1024)
        self.assertEqual(await h.step(a.call(proc, big)), {"a": [big], "k": {}})

    async def test_wss_and_rss_with_autobahn(self):
        await self.rpc_between_tls_clients("first")

    async def test_universal_port_with_tls(self):
        a = await self.wss("msgpack", port=self.uni_port, path="/uni")
        b = await self.rss("json", port=self.uni_port)
        proc = h.uri(self, "uni_tls")
        await h.step(a.register(lambda x: x + 1, proc))
        self.assertEqual(await h.step(b.call(proc, 41)), 42)

    async def test_plain_clients_on_tls_ports_fail_cleanly(self):
        # A RawSocket handshake in clear text on the rss port.
        sock = socket.create_connection(("127.0.0.1", self.rss_port), timeout=10)
        sock.sendall(bytes([MAGIC, 0xF1, 0, 0]))
        data = read_to_eof(sock)
        sock.close()
        self.assertIsNotNone(data, "the router did not close a plain connection")
        self.assertFalse(data.startswith(bytes([MAGIC])), "answered in clear text: %r" % data)
        # A plain WebSocket upgrade on the wss port.
        sock = socket.create_connection(("127.0.0.1", self.wss_port), timeout=10)
        sock.sendall(b"GET /secure HTTP/1.1\r\nHost: localhost\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\nSec-WebSocket-Key: dGhlIHNhbXBsZSBub25jZQ==\r\n"
                     b"Sec-WebSocket-Version: 13\r\nSec-WebSocket-Protocol: wamp.2.json\r\n\r\n")
        data = read_to_eof(sock)
        sock.close()
        self.assertIsNotNone(data, "the router did not close a plain connection")
        self.assertNotIn(b"101", data[:20])
        # A TLS client that does not trust the certificate is refused by its own side; the
        # router goes on serving.
        with self.assertRaises(ssl.SSLError):
            bad = ssl.create_default_context()
            with socket.create_connection(("127.0.0.1", self.rss_port), timeout=10) as raw:
                with bad.wrap_socket(raw, server_hostname="localhost"):
                    pass
        await self.rpc_between_tls_clients("after")
        # Failed TLS handshakes are counted per listener kind alike (reason "tls"): the plain
        # upgrade ("http request") and the client that refused the certificate (its alert).
        # The 4 clear-text bytes make no TLS record: the router times that connection out, and
        # nothing says it failed.
        mgmt = await h.open_session(self.router, "mgmt", "json")
        self._sessions.append(mgmt)
        node = (await h.step(mgmt.call("crossbarfabriccenter.list_nodes")))[0]
        worker = (await h.step(mgmt.call("crossbarfabriccenter.list_workers", node)))[0]
        stats = (await h.step(mgmt.call("crossbarfabriccenter.get_worker", node, worker)))["stats"]
        self.assertEqual(stats["handshakes_refused_tls"], 2, stats)
        log = self.router.stderr_text() + self.router.stdout_text()
        self.assertRegex(log, r"TLS handshake from 127\.0\.0\.1:\d+ failed on listener wss_e2e: "
                              r"http request")
        # That client closes right after its alert: its address may be gone by then ("?").
        self.assertRegex(log, r"TLS handshake from (127\.0\.0\.1:\d+|\?) failed on listener "
                              r"rss_e2e: \S.*alert")


class TlsSharedPortTestCase(h.AsyncTestCase):
    """endpoint.shared with TLS: two routers listen on one wss port (SO_REUSEPORT), each
    connection's TLS handshake and WebSocket opening are done by whichever process the kernel
    gave it, and every session joins and calls through it."""

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-tls-shared-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        key, cert = make_cert(self.tmp)
        with open(os.path.join(os.environ["RT_SOURCE_DIR"], "configs/test-e2e.json"),
                  encoding="utf-8") as f:
            cfg = json.load(f)
        with socket.socket() as probe:
            probe.bind(("127.0.0.1", 0))
            self.port = probe.getsockname()[1]
        cfg["workers"][0]["transports"].append(
            {"type": "websocket", "id": "wss_shared", "url": "wss://localhost/shared",
             "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": self.port,
                          "shared": True, "tls": {"key": key, "certificate": cert}}})
        path = os.path.join(self.tmp, "config.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        self.routers = []
        for _ in range(2):
            r = h.RouterProc(config=path)
            self.addCleanup(r.cleanup)
            self.routers.append(r.start())
            self.assertIn("wss://127.0.0.1:%d/shared" % self.port, r.urls)
        self.ctx = ssl.create_default_context(cafile=cert)
        self._sessions = []

    async def asyncTearDown(self):
        await h.close_sessions(self._sessions)
        for r in self.routers:
            r.stop()

    async def test_two_routers_share_a_tls_port(self):
        for i in range(12):
            s = await open_ws("wss://localhost:%d/shared" % self.port, self.port, "realm1",
                              ("json", "msgpack")[i % 2], ssl_ctx=self.ctx)
            self._sessions.append(s)
            self.assertIsNotNone(s.ws.transport.get_extra_info("ssl_object"))
            # Each session is served by its own router: it reaches its own registration.
            proc = h.uri(self, "p%d" % i)
            await h.step(s.register(lambda x, i=i: [i, x], proc))
            self.assertEqual(await h.step(s.call(proc, "tls")), [i, "tls"])
        joined = [len(re.findall("joined realm realm1", r.stderr_text())) for r in self.routers]
        self.assertEqual(sum(joined), 12, joined)
        self.assertTrue(all(n > 0 for n in joined), "one router got every connection: %r" % joined)


class TlsConfigTestCase(unittest.TestCase):
    def test_unreadable_tls_files_refused_at_start(self):
        tmp = tempfile.mkdtemp(prefix="wampscope-tls-")
        try:
            key, cert = make_cert(tmp)
            missing = os.path.join(tmp, "missing-key.pem")
            r = h.RouterProc(config=write_tls_config(tmp, missing, cert))
            self.addCleanup(r.cleanup)  # stops it should it start after all
            with self.assertRaises(AssertionError) as cm:
                r.start()
            self.assertIn("endpoint.tls.key: cannot read \"%s\": No such file or directory"
                          % missing, str(cm.exception))
            # A readable file that is not a certificate: lws refuses it when listening.
            junk = os.path.join(tmp, "junk.pem")
            with open(junk, "w", encoding="utf-8") as f:
                f.write("not a certificate\n")
            r = h.RouterProc(config=write_tls_config(tmp, key, junk))
            self.addCleanup(r.cleanup)
            with self.assertRaises(AssertionError) as cm:
                r.start()
            self.assertIn("cannot listen on 127.0.0.1:0 (listener wss_e2e)", str(cm.exception))
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


# --- universal transport: RawSocket and WebSocket on one port -------------------------------------

def write_universal_config(tmp):
    with open(os.path.join(os.environ["RT_SOURCE_DIR"], "configs/test-e2e.json"),
              encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["workers"][0]["transports"].append(
        {"type": "universal", "id": "uni",
         "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": 0},
         "rawsocket": {"serializers": ["json", "msgpack"],
                       "options": {"max_message_size": RAW_MAX}},
         "websocket": {"uni": {"type": "websocket", "serializers": ["json", "msgpack"]}}})
    path = os.path.join(tmp, "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


class UniversalTestCase(h.AsyncTestCase):
    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-uni-")
        self.router = h.RouterProc(config=write_universal_config(self.tmp)).start()
        rs = rs_urls(self.router)
        self.assertEqual(len(rs), 1, self.router.urls)
        self.port = tcp_port(rs[0])
        self.ws_url = "ws://127.0.0.1:%d/uni" % self.port
        self.assertIn(self.ws_url, self.router.urls)
        self._sessions = []
        self._raws = []

    async def asyncTearDown(self):
        await h.stop_router(self.router, self.tmp, self._sessions, self._raws)

    async def test_autobahn_rawsocket_and_websocket_on_one_port(self):
        for rser, wser in (("json", "msgpack"), ("msgpack", "json")):
            with self.subTest(rawsocket=rser, websocket=wser):
                rs = await open_raw_session("realm1", rser, port=self.port)
                self._sessions.append(rs)
                ws = await open_ws(self.ws_url, self.port, "realm1", wser)
                self._sessions.append(ws)
                proc = h.uri(self, "uni_" + rser)
                await h.step(rs.register(lambda *a, **k: [list(a), k], proc))
                self.assertEqual(await h.step(ws.call(proc, *h.ARGS, **h.KWARGS)),
                                 [h.ARGS, h.KWARGS])
                topic = h.uri(self, "uni_topic_" + rser)
                got = asyncio.get_running_loop().create_future()
                await h.step(ws.subscribe(lambda v: got.set_result(v), topic))
                await h.step(rs.publish(topic, "shared port",
                                        options=PublishOptions(acknowledge=True)))
                self.assertEqual(await h.step(got), "shared port")

    async def test_byte_by_byte_and_errors_on_the_shared_port(self):
        r = RawRs(port=self.port)
        self._raws.append(r)
        self.assertEqual(r.handshake(0xF2, byte_by_byte=True), bytes([MAGIC, 0x72, 0, 0]))
        hello = msgpack.packb([1, "realm1", {"roles": {"caller": {}}}])
        r.send_frame(MSG, hello, byte_by_byte=True)
        ftype, data = r.recv_frame()
        self.assertEqual((ftype, msgpack.unpackb(data)[0]), (MSG, 2))
        r.send_frame(PING, b"shared", byte_by_byte=True)
        self.assertEqual(r.recv_frame(), (PONG, b"shared"))
        # Handshake errors and oversize frames behave as on a RawSocket port.
        e = RawRs(port=self.port)
        self._raws.append(e)
        self.assertEqual(e.handshake(0xF3), bytes([MAGIC, 0x10, 0, 0]))
        self.assertTrue(e.at_eof())
        o = RawRs(port=self.port)
        self._raws.append(o)
        o.handshake(0xF1)
        o.send(struct.pack("!I", RAW_MAX + 1))
        self.assertTrue(o.at_eof())
        # HTTP is still HTTP on that port.
        w = h.RawWs("127.0.0.1", self.port, path="/uni")
        self.assertTrue(w.upgraded)
        w.close()
        p = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        p.sendall(b"GET /nothing HTTP/1.1\r\nHost: x\r\n\r\n")
        self.assertTrue(p.recv(64).startswith(b"HTTP/1.1 404"))
        p.close()


if __name__ == "__main__":
    h.main()
