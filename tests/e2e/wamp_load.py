"""A load client: many light WAMP sessions in one asyncio process, kept busy.

autobahn sessions cost too much Python per message to keep 1,000 of them busy from one process
next to the router, so these speak just enough WAMP themselves: WebSocket (wamp.2.json /
wamp.2.msgpack, client frames masked with a zero key, which RFC 6455 allows and which costs no
XOR) or RawSocket (TCP, JSON or MessagePack). Each session subscribes to its own topic, one in
CALLEE_EVERY registers a procedure, and once every session is ready each keeps `window`
requests in flight: PUBLISH with acknowledge to another session's topic, or CALL of another
session's procedure, answering every INVOCATION with YIELD. A GOODBYE from the router is
answered at once (wamp.close.goodbye_and_out) and stops the session's requests; the time and
reason of the GOODBYE and of the connection's end are kept per session.

Used by tests/e2e/test_shutdown_load.py, and by hand against a running router:
    /usr/bin/python3 tests/e2e/wamp_load.py --ws ws://127.0.0.1:8080/ws --realm realm1 \
        --sessions 1000 --seconds 10
prints the request rate (a figure for a machine, never a pass/fail on time).
"""

import argparse
import asyncio
import json
import os
import random
import struct
import time
from urllib.parse import urlparse

import msgpack

CALLEE_EVERY = 10  # one session in CALLEE_EVERY registers a procedure
ROLES = {"roles": {"publisher": {}, "subscriber": {}, "caller": {}, "callee": {}}}
HELLO, WELCOME, ABORT, GOODBYE, ERROR = 1, 2, 3, 6, 8
PUBLISH, PUBLISHED, SUBSCRIBE, SUBSCRIBED, EVENT = 16, 17, 32, 33, 36
CALL, RESULT, REGISTER, REGISTERED, INVOCATION, YIELD = 48, 50, 64, 65, 68, 70


def _encode_json(msg):
    return json.dumps(msg, separators=(",", ":")).encode()


def _decode_json(data):
    return json.loads(data)


def _encode_msgpack(msg):
    return msgpack.packb(msg, use_bin_type=True)


def _decode_msgpack(data):
    return msgpack.unpackb(data, raw=False)


CODECS = {"json": (_encode_json, _decode_json), "msgpack": (_encode_msgpack, _decode_msgpack)}


class Stats:
    def __init__(self):
        self.published = 0  # PUBLISHED received
        self.results = 0  # RESULT received
        self.events = 0
        self.invocations = 0  # INVOCATIONs answered
        self.errors = 0  # ERROR answers (a request refused)
        self.error_uris = {}


class LoadSession(asyncio.Protocol):
    """One connection and its WAMP session. kind: "ws" or "rs"; ser: "json" or "msgpack"."""

    def __init__(self, load, index, kind, ser, host, port, path):
        self.load = load
        self.index = index
        self.kind = kind
        self.ser = ser
        self.encode, self.decode = CODECS[ser]
        self.host, self.port, self.path = host, port, path
        self.transport = None
        self.buf = bytearray()
        self.frag = []  # WebSocket fragments of the message being received
        self.handshaken = False
        self.next_req = 1
        self.pending = {}  # request id -> kind of request
        self.session_id = None
        self.joined = asyncio.get_running_loop().create_future()
        self.ready = asyncio.get_running_loop().create_future()  # subscribed (+ registered)
        self.lost = asyncio.get_running_loop().create_future()
        self.busy = False
        self.goodbye_reason = None
        self.goodbye_at = None
        self.lost_at = None
        self.close_code = None
        self.topic = load.topic(index)
        self.procedure = load.procedure(index) if index % CALLEE_EVERY == 0 else None
        self.setup_left = 0
        # A deaf session never answers the router's GOODBYE (nor closes): only the end of the
        # router's grace period ends it.
        self.deaf = load.deaf_every > 0 and index % load.deaf_every == load.deaf_every - 1

    # --- transport ---------------------------------------------------------------------------

    def connection_made(self, transport):
        self.transport = transport
        if self.kind == "ws":
            key = "dGhlIHNhbXBsZSBub25jZQ=="  # any 16-byte base64 value will do
            req = ("GET %s HTTP/1.1\r\nHost: %s:%d\r\nUpgrade: websocket\r\n"
                   "Connection: Upgrade\r\nSec-WebSocket-Key: %s\r\nSec-WebSocket-Version: 13\r\n"
                   "Sec-WebSocket-Protocol: wamp.2.%s\r\n\r\n"
                   % (self.path, self.host, self.port, key, self.ser))
            transport.write(req.encode())
        else:
            # RawSocket handshake: magic, max length 2^(9+15) = 16 MiB, serializer 1 / 2.
            transport.write(bytes([0x7F, 0xF0 | (1 if self.ser == "json" else 2), 0, 0]))

    def connection_lost(self, exc):
        self.lost_at = time.monotonic()
        if not self.lost.done():
            self.lost.set_result(True)
        for f in (self.joined, self.ready):
            if not f.done():
                f.set_exception(ConnectionError("connection lost during set-up"))
                f.exception()

    def data_received(self, data):
        self.buf += data
        if not self.handshaken:
            if not self._handshake():
                return
        if self.kind == "ws":
            self._ws_frames()
        else:
            self._rs_frames()

    def _handshake(self):
        if self.kind == "ws":
            end = self.buf.find(b"\r\n\r\n")
            if end < 0:
                return False
            status = bytes(self.buf[:12])
            if b" 101" not in status:
                self.transport.abort()
                return False
            del self.buf[:end + 4]
        else:
            if len(self.buf) < 4:
                return False
            if self.buf[0] != 0x7F or self.buf[1] & 0x0F == 0:
                self.transport.abort()
                return False
            del self.buf[:4]
        self.handshaken = True
        self.send([HELLO, self.load.realm, ROLES])
        return True

    def _ws_frames(self):
        buf = self.buf
        pos = 0
        n_buf = len(buf)
        while n_buf - pos >= 2:
            b0, b1 = buf[pos], buf[pos + 1]
            n = b1 & 0x7F
            hdr = 2
            if n == 126:
                if n_buf - pos < 4:
                    break
                n = (buf[pos + 2] << 8) | buf[pos + 3]
                hdr = 4
            elif n == 127:
                if n_buf - pos < 10:
                    break
                (n,) = struct.unpack_from("!Q", buf, pos + 2)
                hdr = 10
            if n_buf - pos < hdr + n:
                break
            payload = bytes(buf[pos + hdr:pos + hdr + n])  # the router never masks
            pos += hdr + n
            op = b0 & 0x0F
            if op == 8:  # close: answer with the same code, as RFC 6455 asks
                self.close_code = (payload[0] << 8 | payload[1]) if len(payload) >= 2 else None
                self._ws_send(8, payload[:2])
                continue
            if op == 9:
                self._ws_send(10, payload)
                continue
            if op == 10:
                continue
            self.frag.append(payload)
            if b0 & 0x80:
                data = self.frag[0] if len(self.frag) == 1 else b"".join(self.frag)
                self.frag = []
                self.on_message(data)
        del buf[:pos]

    def _rs_frames(self):
        buf = self.buf
        pos = 0
        n_buf = len(buf)
        while n_buf - pos >= 4:
            kind = buf[pos] & 0x07
            n = (buf[pos + 1] << 16) | (buf[pos + 2] << 8) | buf[pos + 3]
            if n_buf - pos < 4 + n:
                break
            payload = bytes(buf[pos + 4:pos + 4 + n])
            pos += 4 + n
            if kind == 0:
                self.on_message(payload)
            elif kind == 1:  # PING: PONG with the same payload
                self.transport.write(bytes([2]) + n.to_bytes(3, "big") + payload)
        del buf[:pos]

    def _ws_send(self, opcode, payload):
        n = len(payload)
        if n < 126:
            hdr = bytes([0x80 | opcode, 0x80 | n])
        elif n < 65536:
            hdr = bytes([0x80 | opcode, 0x80 | 126]) + struct.pack("!H", n)
        else:
            hdr = bytes([0x80 | opcode, 0x80 | 127]) + struct.pack("!Q", n)
        if self.transport and not self.transport.is_closing():
            self.transport.write(hdr + b"\0\0\0\0" + payload)  # zero mask: XOR is identity

    def send(self, msg):
        data = self.encode(msg)
        if self.kind == "ws":
            self._ws_send(1 if self.ser == "json" else 2, data)
        elif self.transport and not self.transport.is_closing():
            self.transport.write(b"\0" + len(data).to_bytes(3, "big") + data)

    # --- WAMP --------------------------------------------------------------------------------

    def request(self, kind):
        r = self.next_req
        self.next_req += 1
        self.pending[r] = kind
        return r

    def on_message(self, data):
        msg = self.decode(data)
        t = msg[0]
        stats = self.load.stats
        if t == EVENT:
            stats.events += 1
        elif t == PUBLISHED:
            self.pending.pop(msg[1], None)
            stats.published += 1
            self.next_op()
        elif t == RESULT:
            self.pending.pop(msg[1], None)
            stats.results += 1
            self.next_op()
        elif t == INVOCATION:
            stats.invocations += 1
            if self.goodbye_reason is None:
                self.send([YIELD, msg[1], {}, [self.index]])
        elif t == ERROR:
            kind = self.pending.pop(msg[2], None)
            stats.errors += 1
            stats.error_uris[msg[4]] = stats.error_uris.get(msg[4], 0) + 1
            if kind in ("subscribe", "register") and not self.ready.done():
                self.ready.set_exception(AssertionError("%s refused: %s" % (kind, msg[4])))
                self.ready.exception()
            else:
                self.next_op()
        elif t == WELCOME:
            self.session_id = msg[1]
            self.joined.set_result(msg[1])
            self.setup_left = 2 if self.procedure else 1
            self.send([SUBSCRIBE, self.request("subscribe"), {}, self.topic])
            if self.procedure:
                self.send([REGISTER, self.request("register"), {}, self.procedure])
        elif t in (SUBSCRIBED, REGISTERED):
            self.pending.pop(msg[1], None)
            self.setup_left -= 1
            if self.setup_left == 0 and not self.ready.done():
                self.ready.set_result(True)
        elif t == GOODBYE:
            self.goodbye_reason = msg[2]
            self.goodbye_at = time.monotonic()
            self.busy = False
            if not self.deaf:
                self.send([GOODBYE, {}, "wamp.close.goodbye_and_out"])
        elif t == ABORT:
            if not self.joined.done():
                self.joined.set_exception(AssertionError("ABORT: %s" % msg[2]))
                self.joined.exception()

    def start(self, window):
        self.busy = True
        for _ in range(window):
            self.next_op()

    def next_op(self):
        if not self.busy or self.goodbye_reason is not None:
            return
        load = self.load
        if load.rng.random() < 0.5 or not load.callees:
            peer = load.rng.randrange(load.n_peers)
            self.send([PUBLISH, self.request("publish"), {"acknowledge": True}, load.topic(peer),
                       [self.index, self.next_req, "load"]])
        else:
            proc = load.procedure(load.rng.choice(load.callees))
            self.send([CALL, self.request("call"), {}, proc, [self.index, self.next_req]])


class Load:
    """n_sessions LoadSessions spread round-robin over targets: (kind, ser, host, port, path)."""

    def __init__(self, targets, realm, n_sessions, prefix="com.wampscope.load", seed=1,
                 extra_peers=0, deaf_every=0):
        """extra_peers: sessions n_sessions .. n_sessions + extra_peers - 1 are clients of the
        caller's (autobahn ones, say) that serve topic(i) and, if i % CALLEE_EVERY == 0,
        procedure(i) like the others: requests go to them too. deaf_every: one session in
        deaf_every (none if 0) ignores the router's GOODBYE."""
        self.deaf_every = deaf_every
        self.targets = targets
        self.realm = realm
        self.n_sessions = n_sessions
        self.n_peers = n_sessions + extra_peers
        self.prefix = prefix
        self.rng = random.Random(seed)
        self.stats = Stats()
        self.sessions = []
        self.callees = [i for i in range(self.n_peers) if i % CALLEE_EVERY == 0]

    def topic(self, i):
        return "%s.t%d" % (self.prefix, i)

    def procedure(self, i):
        return "%s.p%d" % (self.prefix, i)

    async def connect(self, concurrency=50, timeout=60.0):
        """Opens every session, joined, subscribed and registered. Raises on any failure."""
        loop = asyncio.get_running_loop()
        sem = asyncio.Semaphore(concurrency)

        async def one(i):
            kind, ser, host, port, path = self.targets[i % len(self.targets)]
            async with sem:
                _, s = await loop.create_connection(
                    lambda: LoadSession(self, i, kind, ser, host, port, path), host, port)
                await s.ready
            return s

        tasks = [one(i) for i in range(self.n_sessions)]
        self.sessions = await asyncio.wait_for(asyncio.gather(*tasks), timeout)

    def start(self, window=2):
        for s in self.sessions:
            s.start(window)

    def ended(self):
        return all(s.lost.done() for s in self.sessions)

    async def wait_ended(self, timeout):
        await asyncio.wait_for(asyncio.gather(*(s.lost for s in self.sessions)), timeout)

    def abort_all(self):
        for s in self.sessions:
            if s.transport is not None:
                s.transport.abort()


def parse_target(url, ser):
    u = urlparse(url)
    kind = "ws" if u.scheme == "ws" else "rs"
    return (kind, ser, u.hostname, u.port, u.path or "/")


async def _main(args):
    targets = []
    for url in args.ws + args.rs:
        for ser in ("json", "msgpack"):
            targets.append(parse_target(url, ser))
    if not targets:
        raise SystemExit("give at least one --ws or --rs URL")
    load = Load(targets, args.realm, args.sessions, seed=os.getpid())
    t0 = time.monotonic()
    await load.connect()
    print("%d sessions ready in %.2f s" % (args.sessions, time.monotonic() - t0), flush=True)
    load.start(args.window)
    t0 = time.monotonic()
    s = load.stats
    p0 = s.published + s.results
    while time.monotonic() - t0 < args.seconds:
        await asyncio.sleep(1.0)
        p1 = s.published + s.results
        print("%.0f requests/s (published %d, results %d, events %d, errors %d)"
              % (p1 - p0, s.published, s.results, s.events, s.errors), flush=True)
        p0 = p1
        if load.ended():
            break
    load.abort_all()


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    ap.add_argument("--ws", action="append", default=[], help="ws:// URL (repeatable)")
    ap.add_argument("--rs", action="append", default=[], help="rs:// URL (repeatable)")
    ap.add_argument("--realm", default="realm1")
    ap.add_argument("--sessions", type=int, default=1000)
    ap.add_argument("--window", type=int, default=2, help="requests in flight per session")
    ap.add_argument("--seconds", type=float, default=10.0)
    asyncio.run(_main(ap.parse_args()))


if __name__ == "__main__":
    main()
