"""The router's own HTTP/1.1 and WebSocket front (rt_lws_front.c, rt_lws_ws.c): the frame rules
of RFC 6455 it enforces, its keepalive, and the limits of its HTTP side, with hand-made frames
and requests.

Checks: an unmasked client frame is answered with CLOSE 1002 and the connection closed, while
another session goes on undisturbed (RFC 6455 5.1); invalid UTF-8 split across the fragments of
a text message closes with 1007; a message whose frame header announces more than the listener's
max_message_size closes with 1009 at once (counted in incoming_too_big); a HELLO in three
fragments with a PING between them gets its PONG and then WELCOME; large frames (read straight
from the socket past lws' service buffer) mixed with small ones, a PING and fragments in one
write, or arriving in pieces, come out whole and in order, and invalid UTF-8 deep inside one
closes with 1007; a backlog of large and small events to a subscriber that reads nothing for a
while (written several frames per sendmsg()) arrives whole and in order, also when every write
is cut short inside a frame (an LD_PRELOAD shim, short_sendmsg.c); with auto_ping a PING
comes every interval and a client that stops answering is dropped after auto_ping_timeout; a client
that floods PINGs and never reads their PONGs, and one that sends its CLOSE with its socket full
and reads no more, are dropped within limits.close_timeout; a request
head not complete within wampscope.limits.http_head_timeout (slowloris) and a keep-alive
connection idle for http_idle_timeout are closed without an answer; pipelined HTTP requests are
answered in order on one connection, and one whose client stops reading the answers is dropped
after http_idle_timeout; a head over http_max_head gets 431.
"""

import asyncio
import json
import os
import socket
import struct
import tempfile
import time

from autobahn.wamp.types import PublishOptions

import rt_harness as h

P = "crossbarfabriccenter."
E2E_CONFIG = "configs/test-e2e.json"
HEAD_TIMEOUT_MS = 600
IDLE_TIMEOUT_MS = 800
PING_MS = 1000
CLOSE_TIMEOUT_MS = 1000


def front_config(tmp):
    """test-e2e.json with short HTTP timeouts, the trace viewer on the web transport, and a
    second listener (a websocket transport) with auto_ping."""
    with open(os.path.join(os.environ["RT_SOURCE_DIR"], E2E_CONFIG), encoding="utf-8") as f:
        cfg = json.load(f)
    w = cfg["workers"][0]
    w["wampscope"].setdefault("limits", {}).update(
        {"http_head_timeout": HEAD_TIMEOUT_MS, "http_idle_timeout": IDLE_TIMEOUT_MS,
         "http_max_head": 2048, "close_timeout": CLOSE_TIMEOUT_MS})
    w["transports"][0]["paths"]["trace"] = {"type": "wampscope-trace-viewer"}
    w["transports"].append(
        {"type": "websocket", "id": "ws_ping",
         "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": 0},
         "options": {"auto_ping_interval": PING_MS, "auto_ping_timeout": PING_MS}})
    path = os.path.join(tmp, "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


def unmasked_frame(opcode, payload, fin=True):
    header = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126:
        header += bytes([n])
    else:
        header += bytes([126]) + struct.pack("!H", n)
    return header + payload


def wait_eof(sock, timeout):
    """Seconds until the peer closed sock (reading and dropping what comes), or None."""
    t0 = time.monotonic()
    sock.settimeout(timeout)
    try:
        while sock.recv(65536):
            pass
    except ConnectionResetError:
        pass
    except socket.timeout:
        return None
    return time.monotonic() - t0


def read_responses(sock, n, timeout=5.0, heads=()):
    """n HTTP responses (status, headers, body) read from sock (Content-Length bodies; none for
    the answers whose index is in heads, which answer HEAD requests)."""
    sock.settimeout(timeout)
    buf, out = b"", []
    while len(out) < n:
        while b"\r\n\r\n" not in buf:
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError("closed after %d responses: %r" % (len(out), buf))
            buf += chunk
        head, buf = buf.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        headers = {}
        for line in lines[1:]:
            name, _, value = line.partition(":")
            headers[name.strip().lower()] = value.strip()
        length = 0 if len(out) in heads else int(headers.get("content-length", "0"))
        while len(buf) < length:
            chunk = sock.recv(65536)
            if not chunk:
                raise AssertionError("body cut short")
            buf += chunk
        out.append((int(lines[0].split(" ")[1]), headers, buf[:length]))
        buf = buf[length:]
    return out


class FrontTest(h.AsyncTestCase):
    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-front-")
        self.router = h.RouterProc(front_config(self.tmp)).start()
        ping = [u for u in self.router.urls if u.startswith("ws://")][1]
        self.ping_port = int(ping.split(":")[2].split("/")[0])
        self._socks = []
        self._sessions = []

    async def asyncTearDown(self):
        await h.stop_router(self.router, self.tmp, self._sessions, self._socks)

    def ws(self, port=None, protocols=("wamp.2.json",)):
        w = h.RawWs(self.router.host, port or self.router.port, self.router.path, protocols)
        self._socks.append(w)
        self.assertTrue(w.upgraded, w.status)
        return w

    def subscribed_pair(self, name, sub_rcvbuf=None):
        """A joined subscriber of topic name (its receive buffer set first, when given) and a
        joined publisher, as raw WebSockets: (sub, pub, topic)."""
        sub = self.ws()
        if sub_rcvbuf:
            sub.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, sub_rcvbuf)
        self.assertEqual(sub.hello()[0], 2)
        topic = h.uri(self, name)
        sub.send_json([32, 1, {}, topic])
        self.assertEqual(sub.recv_wamp()[0], 33)
        pub = self.ws()
        self.assertEqual(pub.hello()[0], 2)
        return sub, pub, topic

    def expect_events(self, sub, payloads):
        """sub receives an EVENT per payload, in order, each with that payload as its one
        argument."""
        got = []
        for _ in payloads:
            m = sub.recv_wamp()
            self.assertEqual(m[0], 36, m)
            got.append(m[4][0])
        self.assertEqual(got, payloads)

    def recv_messages(self, w, n):
        """Reads n JSON messages from w, reassembled from their frames, and the PONGs received
        between them (no other opcode may come): (messages, pong payloads)."""
        msgs, pongs, parts = [], [], []
        while len(msgs) < n:
            fin, op, payload = w.recv_frame()
            self.assertIn(op, (h.OP_CONT, h.OP_TEXT, h.OP_PONG), (op, payload[:40]))
            if op == h.OP_PONG:
                pongs.append(payload)
                continue
            parts.append(payload)
            if fin:
                msgs.append(json.loads(b"".join(parts).decode("utf-8")))
                parts = []
        return msgs, pongs

    def connect(self, port=None):
        s = socket.create_connection((self.router.host, port or self.router.port), timeout=5)
        self._socks.append(s)
        return s

    async def stats(self):
        m = await h.open_session(self.router, "mgmt", "json")
        self._sessions.append(m)
        node = (await h.step(m.call(P + "list_nodes")))[0]
        worker = (await h.step(m.call(P + "list_workers", node)))[0]
        return (await h.step(m.call(P + "get_worker", node, worker)))["stats"]

    # --- frame rules --------------------------------------------------------------------------

    async def test_unmasked_frame_closes_1002_others_undisturbed(self):
        other = await h.open_session(self.router, "realm1", "json")
        self._sessions.append(other)
        w = self.ws()
        self.assertEqual(w.hello()[0], 2)
        w.sock.sendall(unmasked_frame(h.OP_TEXT, b'[32,1,{},"com.example.topic"]'))
        close = w.recv_message()
        self.assertEqual(close[:2], ("close", 1002), close)
        self.assertIsNotNone(wait_eof(w.sock, 5))
        # The other session still works.
        topic = h.uri(self, "t")
        got = []
        await h.step(other.subscribe(got.append, topic))
        await h.step(other.publish(topic, 7, options=PublishOptions(exclude_me=False,
                                                                     acknowledge=True)))
        for _ in range(100):
            if got:
                break
            await asyncio.sleep(0.01)
        self.assertEqual(got, [7])
        log = self.router.stderr_text() + self.router.stdout_text()
        self.assertIn("closing with 1002", log)

    async def test_invalid_utf8_across_fragments_closes_1007(self):
        w = self.ws()
        # U+20AC is E2 82 AC: the first fragment ends inside it, the second breaks it.
        w.send_frame(h.OP_TEXT, b'[1,"realm1",{"x":"\xe2\x82', fin=False)
        w.send_frame(h.OP_CONT, b'A"}]')
        self.assertEqual(w.recv_message()[:2], ("close", 1007))

    async def test_oversize_header_closes_1009(self):
        before = (await self.stats())["incoming_too_big"]
        w = self.ws()
        # A header announcing 5 MiB (max_message_size is 4 MiB), no payload sent.
        w.sock.sendall(bytes([0x81, 0x80 | 127]) + struct.pack("!Q", 5 * 1024 * 1024) + b"mask")
        self.assertEqual(w.recv_message()[:2], ("close", 1009))
        self.assertEqual((await self.stats())["incoming_too_big"], before + 1)

    async def test_fragmented_hello_with_interleaved_ping(self):
        w = self.ws()
        hello = json.dumps([1, "realm1", {"roles": {"caller": {}}}]).encode()
        w.send_frame(h.OP_TEXT, hello[:5], fin=False)
        w.send_frame(h.OP_PING, b"ping!")
        w.send_frame(h.OP_CONT, hello[5:12], fin=False)
        w.send_frame(h.OP_CONT, hello[12:])
        fin, op, payload = w.recv_frame()
        self.assertEqual((fin, op, payload), (True, h.OP_PONG, b"ping!"))
        self.assertEqual(w.recv_wamp()[0], 2)

    async def test_large_events_to_a_stalled_reader_with_ping_inside_a_frame(self):
        # Messages over 16 KiB are written straight from their (shared) buffer in frames of
        # 64 KiB, the rest of a frame the socket did not take on a later WRITEABLE; a PONG
        # queued while the socket is full goes out between frames, never inside one.
        sub, pub, topic = self.subscribed_pair("big", sub_rcvbuf=65536)
        payloads = ["%d:" % i + "\u00e9x" * 100000 for i in range(3)]  # 5 frames each
        for p in payloads:
            pub.send_frame(h.OP_TEXT, json.dumps([16, 1, {}, topic, [p]],
                                                 ensure_ascii=False).encode("utf-8"))
        time.sleep(0.5)
        sub.send_frame(h.OP_PING, b"inside")
        events, pongs = self.recv_messages(sub, len(payloads))
        self.assertEqual([e[0] for e in events], [36] * len(payloads))
        self.assertEqual([e[4] for e in events], [[p] for p in payloads])
        if not pongs:
            fin, op, payload = sub.recv_frame()
            pongs.append(payload)
        self.assertEqual(pongs, [b"inside"])

    async def test_large_frames_read_past_the_service_buffer(self):
        # A frame with more than 8 KiB of it still to come is read straight into the message
        # buffer, 64 KiB per read at most, with the start of what follows: big and small
        # frames, a PING and a fragmented message in one write, then a frame over 64 KiB whose
        # rest arrives in pieces, all come out whole and in order.
        sub, pub, topic = self.subscribed_pair("big")
        sizes = (50000, 10, 30000, 70000)
        payloads = ["%d:" % i + "\u00e9x" * n for i, n in enumerate(sizes)]
        msgs = [json.dumps([16, i + 1, {"acknowledge": True}, topic, [p]],
                           ensure_ascii=False).encode("utf-8") for i, p in enumerate(payloads)]
        third = len(msgs[2]) // 3
        stream = (h.masked_frame(h.OP_TEXT, msgs[0]) + h.masked_frame(h.OP_PING, b"p1") +
                  h.masked_frame(h.OP_TEXT, msgs[1]) +
                  h.masked_frame(h.OP_TEXT, msgs[2][:third], fin=False) +
                  h.masked_frame(h.OP_CONT, msgs[2][third:2 * third], fin=False) +
                  h.masked_frame(h.OP_CONT, msgs[2][2 * third:]))
        last = h.masked_frame(h.OP_TEXT, msgs[3])
        pub.sock.sendall(stream + last[:5000])
        for piece in (last[5000:20000], last[20000:90000], last[90000:]):
            time.sleep(0.1)
            pub.sock.sendall(piece)
        self.expect_events(sub, payloads)
        fin, op, payload = pub.recv_frame()
        self.assertEqual((op, payload), (h.OP_PONG, b"p1"))
        self.assertEqual([pub.recv_wamp()[:2] for _ in payloads],
                         [[17, i + 1] for i in range(len(payloads))])

    async def test_backlog_of_mixed_sizes_to_a_stalled_reader(self):
        # Large messages queued for one connection go out several per sendmsg() straight from
        # their buffers (those over 64 KiB in several frames), small ones between them framed
        # together: a subscriber that reads nothing for a while, then everything, gets every
        # event whole and in order.
        sub, pub, topic = self.subscribed_pair("mix")
        sizes = (20000, 100, 70000, 17000, 17000, 5, 150000, 30000, 16000, 16500) * 3
        payloads = ["%d:" % i + "y" * n for i, n in enumerate(sizes)]
        pub.sock.sendall(b"".join(
            h.masked_frame(h.OP_TEXT, json.dumps([16, i + 1, {}, topic, [p]]).encode())
            for i, p in enumerate(payloads)))
        time.sleep(0.5)
        self.expect_events(sub, payloads)

    async def test_frames_taken_in_part_by_the_socket(self):
        # With every sendmsg() of the router cut to 7,000 octets (short_sendmsg.c), as a nearly
        # full socket would take them, each gathered write ends inside a frame, header or
        # payload, and is finished from the same buffers first: large events (one over 64 KiB,
        # in two frames) and small ones between them arrive whole and in order, and a PING sent
        # meanwhile is answered between frames, never inside one.
        await h.stop_router(self.router, self.tmp, self._sessions, self._socks)
        self.tmp = tempfile.mkdtemp(prefix="wampscope-front-")
        self._socks, self._sessions = [], []
        asan = os.environ.get("ASAN_OPTIONS", "")
        env = {"LD_PRELOAD": os.environ["RT_SHORT_SENDMSG_LIB"], "RT_SHORT_SENDMSG": "7000",
               "ASAN_OPTIONS": (asan + ":" if asan else "") + "verify_asan_link_order=0"}
        self.router = h.RouterProc(front_config(self.tmp), env=env).start()
        sub, pub, topic = self.subscribed_pair("part")
        sizes = (20000, 3, 17000, 70000, 5, 16500, 30000) * 2
        payloads = ["%d:" % i + "z" * n for i, n in enumerate(sizes)]
        pub.sock.sendall(b"".join(
            h.masked_frame(h.OP_TEXT, json.dumps([16, i + 1, {}, topic, [p]]).encode())
            for i, p in enumerate(payloads)))
        sub.send_frame(h.OP_PING, b"between")
        msgs, pongs = self.recv_messages(sub, len(payloads))
        for m in msgs:
            self.assertEqual(m[0], 36, m[:4])
        self.assertEqual([m[4][0] for m in msgs], payloads)
        if not pongs:
            pongs.append(sub.recv_frame()[2])
        self.assertEqual(pongs, [b"between"])

    async def test_invalid_utf8_deep_in_a_large_frame_closes_1007(self):
        w = self.ws()
        self.assertEqual(w.hello()[0], 2)
        text = b'[16,1,{},"a.b",["' + b"x" * 100000 + b'"]]'
        bad = text[:60000] + b"\xc0" + text[60001:]  # an overlong lead: never valid
        frame = h.masked_frame(h.OP_TEXT, bad)
        w.sock.sendall(frame[:4000])
        time.sleep(0.1)
        w.sock.sendall(frame[4000:])
        self.assertEqual(w.recv_message()[:2], ("close", 1007))

    # --- keepalive ----------------------------------------------------------------------------

    async def test_auto_ping_and_timeout(self):
        w = self.ws(port=self.ping_port)
        self.assertEqual(w.hello()[0], 2)
        w.sock.settimeout(3 * PING_MS / 1000)
        for _ in range(2):
            t0 = time.monotonic()
            fin, op, payload = w.recv_frame()
            self.assertEqual(op, h.OP_PING)
            self.assertLess(time.monotonic() - t0, 2 * PING_MS / 1000)
            w.send_frame(h.OP_PONG, payload)
        # The next PING is not answered: dropped within the timeout (plus a tick).
        fin, op, _ = w.recv_frame()
        self.assertEqual(op, h.OP_PING)
        secs = wait_eof(w.sock, 5)
        self.assertIsNotNone(secs)
        self.assertLess(secs, 2 * PING_MS / 1000 + 0.5)

    async def test_ping_flood_from_a_client_that_never_reads_is_dropped(self):
        # PINGs sent by a client that never reads their PONGs fill the connection's control
        # output; the router then closes it, and limits.close_timeout bounds the close like any
        # other: the connection must be gone before the client reads anything. (Whether the
        # router goes on reading while its socket is full depends on how its last write was
        # cut, so a connection whose flood stalls first is left and another one tried.)
        pid = self.router.proc.pid
        pings = h.masked_frame(h.OP_PING, b"p" * 125) * 100
        for _ in range(8):
            fds = len(os.listdir("/proc/%d/fd" % pid))
            refused = self.router.stderr_text().count("cannot queue")
            w = self.ws()
            w.sock.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
            self.assertEqual(w.hello()[0], 2)
            w.sock.settimeout(0.2)
            left = b""
            deadline = time.monotonic() + 4
            while (self.router.stderr_text().count("cannot queue") == refused and
                   time.monotonic() < deadline):
                left = left or pings
                try:
                    left = left[w.sock.send(left):]  # whole frames only, in order
                except socket.timeout:
                    pass
            if self.router.stderr_text().count("cannot queue") > refused:
                break
        else:
            self.fail("the control output never filled")
        deadline = time.monotonic() + CLOSE_TIMEOUT_MS / 1000 + 3
        while len(os.listdir("/proc/%d/fd" % pid)) > fds:
            self.assertLess(time.monotonic(), deadline, "the connection was never dropped")
            await asyncio.sleep(0.1)

    async def test_close_from_a_client_that_never_reads_is_bounded(self):
        # A subscriber whose socket is full sends its CLOSE and reads nothing more: the echo of
        # its CLOSE cannot go out, and limits.close_timeout bounds that close as any other.
        pid = self.router.proc.pid
        fds = len(os.listdir("/proc/%d/fd" % pid))
        sub, pub, topic = self.subscribed_pair("never_reads", sub_rcvbuf=4096)
        for i in range(100):
            pub.send_json([16, i + 1, {}, topic, ["x" * 100000]])
        time.sleep(0.5)
        sub.send_frame(h.OP_CLOSE, struct.pack("!H", 1000))
        pub.sock.close()
        self._socks.remove(pub)
        deadline = time.monotonic() + CLOSE_TIMEOUT_MS / 1000 + 3
        while len(os.listdir("/proc/%d/fd" % pid)) > fds:
            self.assertLess(time.monotonic(), deadline, "the connection was never dropped")
            await asyncio.sleep(0.1)

    # --- HTTP limits --------------------------------------------------------------------------

    async def test_slow_head_closed_after_timeout(self):
        s = self.connect()
        s.sendall(b"GET /trace/ HTTP/1.1\r\nHost: x\r\n")
        secs = wait_eof(s, 5)
        self.assertIsNotNone(secs)
        self.assertGreater(secs, HEAD_TIMEOUT_MS / 1000 - 0.2)
        self.assertLess(secs, HEAD_TIMEOUT_MS / 1000 + 1.0)
        # Silence from the start is the same.
        s = self.connect()
        self.assertLess(wait_eof(s, 5), HEAD_TIMEOUT_MS / 1000 + 1.0)

    async def test_pipelined_requests_then_idle_close(self):
        s = self.connect()
        req = b"GET /trace/ HTTP/1.1\r\nHost: x\r\n\r\n"
        head = b"HEAD /trace/ HTTP/1.1\r\nHost: x\r\n\r\n"
        s.sendall(req + head + b"GET /nothing-here HTTP/1.1\r\nHost: x\r\n\r\n" + req)
        answers = read_responses(s, 4, heads=(1,))
        self.assertEqual([a[0] for a in answers], [200, 200, 404, 200])
        self.assertGreater(len(answers[0][2]), 0)
        self.assertEqual(answers[1][1]["content-length"], answers[0][1]["content-length"])
        self.assertEqual(answers[1][2], b"")
        self.assertEqual(answers[3][2], answers[0][2])
        # Then idle: closed after http_idle_timeout.
        secs = wait_eof(s, 5)
        self.assertIsNotNone(secs)
        self.assertLess(secs, IDLE_TIMEOUT_MS / 1000 + 1.0)

    async def test_stalled_reader_dropped_after_idle_timeout(self):
        s = socket.socket()
        s.setsockopt(socket.SOL_SOCKET, socket.SO_RCVBUF, 4096)
        s.connect((self.router.host, self.router.port))
        self._socks.append(s)
        n = 200
        s.sendall(b"GET /trace/screenshot.png HTTP/1.1\r\nHost: x\r\n\r\n" * n)
        # The answers (n times the file) are far more than the socket buffers hold; nothing is
        # read for longer than http_idle_timeout: the router drops the connection.
        time.sleep(IDLE_TIMEOUT_MS / 1000 + 1.5)
        got, t0 = 0, time.monotonic()
        s.settimeout(5)
        try:
            while True:
                chunk = s.recv(65536)
                if not chunk:
                    break
                got += len(chunk)
        except ConnectionResetError:
            pass
        self.assertLess(time.monotonic() - t0, 4)
        c = self.connect()
        c.sendall(b"GET /trace/screenshot.png HTTP/1.1\r\nHost: x\r\n\r\n")
        first = read_responses(c, 1)[0]
        self.assertEqual(first[0], 200)
        self.assertLess(got, n * len(first[2]) // 2)

    async def test_head_too_large_431(self):
        s = self.connect()
        s.sendall(b"GET /trace/ HTTP/1.1\r\nHost: x\r\nX-Big: " + b"a" * 4096 + b"\r\n\r\n")
        answers = read_responses(s, 1)
        self.assertEqual(answers[0][0], 431)
        self.assertEqual(answers[0][1].get("connection"), "close")
        self.assertRegex(answers[0][1].get("date", ""), r"^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} "
                                                         r"\d{4} \d{2}:\d{2}:\d{2} GMT$")
        self.assertIsNotNone(wait_eof(s, 5))
        # The router goes on serving.
        self.assertEqual(self.ws().hello()[0], 2)


if __name__ == "__main__":
    h.main()
