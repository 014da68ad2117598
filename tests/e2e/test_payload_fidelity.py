"""Every payload arrives intact, between every pair of serializers (json, msgpack, cbor), over
pub/sub and RPC, with python3-autobahn clients: strings with NUL in values and keys, the integer
edges from -2^63 to 2^64-1, reals that stay reals (1.0 on msgpack/cbor is a float), 1e300 and
5e-324, binary; and payload passthru mode (ppt_* options) forwarded untouched with its keys, with
raw clients of each serializer (autobahn 22.7 knows only the older enc_algo dialect)."""

import asyncio
import base64
import json
import math

import cbor
import msgpack

from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import CallResult, PublishOptions, SubscribeOptions

import rt_harness as h

SERS = ("json", "msgpack", "cbor")

INTS = [-2**63, -2**32 - 1, -1, 0, 2**53, 2**63 - 1, 2**63, 2**64 - 1]
REALS = [1e300, 5e-324, 1.0, -0.0, 0.1]
# (A string starting with NUL that is not "\0" + base64 stays a string in the router, but
# autobahn's JSON decoder takes every such string for binary: not sent here.)
ARGS = ["a\x00b", *INTS, *REALS, b"\x00\x01\xfe\xff", b"",
        {"k\x00ey": "v\x00", "": None, "nested": [{"\x00": [2**64 - 1, b"\x00"]}]}, True, None]
KWARGS = {"n\x00ul": "x\x00y", "big": 2**64 - 1, "small": -2**63, "one": 1.0, "bin": b"\xff",
          "list": [1, 1.0, "1"]}


def same(test, got, want, where):
    """Equal values of equal types (1 and 1.0 differ, -0.0 keeps its sign)."""
    test.assertIs(type(got), type(want), "%s: %r vs %r" % (where, got, want))
    if isinstance(want, dict):
        test.assertEqual(sorted(got), sorted(want), where)
        for k in want:
            same(test, got[k], want[k], "%s[%r]" % (where, k))
    elif isinstance(want, (list, tuple)):
        test.assertEqual(len(got), len(want), where)
        for i, (g, w) in enumerate(zip(got, want)):
            same(test, g, w, "%s[%d]" % (where, i))
    elif isinstance(want, float):
        test.assertEqual(got, want, where)
        test.assertEqual(math.copysign(1, got), math.copysign(1, want), where)
    else:
        test.assertEqual(got, want, where)


class TestPayloadFidelity(h.RouterTestCase):

    async def test_pubsub_every_pair(self):
        for src in SERS:
            for dst in SERS:
                with self.subTest(publisher=src, subscriber=dst):
                    topic = h.uri(self, "t.%s.%s" % (src, dst))
                    pub = await self.session(src)
                    sub = await self.session(dst)
                    got = asyncio.get_running_loop().create_future()
                    await h.step(sub.subscribe(lambda *a, **kw: got.set_result((a, kw)), topic))
                    await h.step(pub.publish(topic, *ARGS, options=PublishOptions(acknowledge=True),
                                             **KWARGS))
                    args, kwargs = await h.step(got)
                    same(self, list(args), ARGS, "args")
                    same(self, kwargs, KWARGS, "kwargs")
                    await pub.close()
                    await sub.close()

    async def test_rpc_every_pair(self):
        for src in SERS:
            for dst in SERS:
                with self.subTest(caller=src, callee=dst):
                    proc = h.uri(self, "p.%s.%s" % (src, dst))
                    callee = await self.session(dst)
                    caller = await self.session(src)
                    seen = []

                    def echo(*args, **kwargs):
                        seen.append((list(args), kwargs))
                        return CallResult(*args, **kwargs)

                    await h.step(callee.register(echo, proc))
                    res = await h.step(caller.call(proc, *ARGS, **KWARGS))
                    same(self, seen[0][0], ARGS, "invocation args")
                    same(self, seen[0][1], KWARGS, "invocation kwargs")
                    same(self, list(res.results), ARGS, "result args")
                    same(self, res.kwresults, KWARGS, "result kwargs")
                    await caller.close()
                    await callee.close()

    async def test_retained_event_keeps_payload(self):
        topic = h.uri(self, "retained")
        pub = await self.session("cbor")
        await h.step(pub.publish(topic, *ARGS, options=PublishOptions(retain=True,
                                                                       acknowledge=True),
                                 **KWARGS))
        for dst in SERS:
            sub = await self.session(dst)
            got = asyncio.get_running_loop().create_future()
            await h.step(sub.subscribe(lambda *a, **kw: got.set_result((a, kw)), topic,
                                       options=SubscribeOptions(get_retained=True)))
            args, kwargs = await h.step(got)
            same(self, list(args), ARGS, "retained args to " + dst)
            same(self, kwargs, KWARGS, "retained kwargs to " + dst)
            await sub.close()

    async def test_meta_procedure_refuses_unrepresentable_argument(self):
        # A router-local procedure cannot hold 2^64-1: wamp.error.invalid_argument, session fine.
        s = await self.session("msgpack")
        with self.assertRaises(ApplicationError) as cm:
            await h.step(s.call("wamp.session.get", 2**64 - 1))
        self.assertEqual(cm.exception.error, "wamp.error.invalid_argument")
        self.assertIn("18446744073709551615", str(cm.exception.args))
        self.assertIsInstance(await h.step(s.call("wamp.session.count")), int)


# --- Payload passthru mode (raw clients: autobahn 22.7 speaks the older enc_algo dialect) ------

ROLES_PPT = {r: {"features": {"payload_passthru_mode": True}}
             for r in ("caller", "callee", "publisher", "subscriber")}
CODECS = {
    "json": (lambda m: json.dumps(m).encode(), lambda b: json.loads(b.decode())),
    "msgpack": (lambda m: msgpack.packb(m, use_bin_type=True), lambda b: msgpack.unpackb(b)),
    "cbor": (cbor.dumps, cbor.loads),
}


class RawSession:
    """A WAMP session over h.RawWs in any serializer; binary values are bytes (JSON: "\0" +
    base64 on the wire)."""

    def __init__(self, router, ser, roles=ROLES_PPT):
        self.ser = ser
        self.ws = h.RawWs(router.host, router.port, router.path, protocols=("wamp.2." + ser,))
        self.send([1, "realm1", {"roles": roles}])
        welcome = self.recv()
        assert welcome[0] == 2, welcome
        self.welcome = welcome

    def send(self, msg):
        if self.ser == "json":
            msg = _bin_to_json(msg)
        data = CODECS[self.ser][0](msg)
        self.ws.send_frame(h.OP_TEXT if self.ser == "json" else h.OP_BINARY, data)

    def recv(self):
        m = self.ws.recv_message()
        if m[0] == "close":
            return m
        msg = CODECS[self.ser][1](m[1])
        return _json_to_bin(msg) if self.ser == "json" else msg

    def close(self):
        self.ws.close()


def _bin_to_json(v):
    if isinstance(v, bytes):
        return "\x00" + base64.b64encode(v).decode()
    if isinstance(v, list):
        return [_bin_to_json(x) for x in v]
    if isinstance(v, dict):
        return {k: _bin_to_json(x) for k, x in v.items()}
    return v


def _json_to_bin(v):
    if isinstance(v, str) and v.startswith("\x00"):
        return base64.b64decode(v[1:])
    if isinstance(v, list):
        return [_json_to_bin(x) for x in v]
    if isinstance(v, dict):
        return {k: _json_to_bin(x) for k, x in v.items()}
    return v


PPT = {"ppt_scheme": "x_e2e", "ppt_serializer": "cbor", "ppt_cipher": "xsalsa20poly1305",
       "ppt_keyid": "0x1234"}
BLOB = bytes(range(256)) + b"\x00" * 3


class TestPayloadPassthru(h.RouterTestCase):

    def test_welcome_announces_passthru(self):
        s = RawSession(self.router, "json")
        roles = s.welcome[2]["roles"]
        self.assertIs(roles["broker"]["features"]["payload_passthru_mode"], True)
        self.assertIs(roles["dealer"]["features"]["payload_passthru_mode"], True)
        s.close()

    def test_publish_every_pair(self):
        for src in SERS:
            for dst in SERS:
                with self.subTest(publisher=src, subscriber=dst):
                    topic = h.uri(self, "ppt.%s.%s" % (src, dst))
                    sub = RawSession(self.router, dst)
                    sub.send([32, 1, {}, topic])
                    subscribed = sub.recv()
                    self.assertEqual(subscribed[0], 33)
                    pub = RawSession(self.router, src)
                    pub.send([16, 2, dict(PPT, acknowledge=True), topic, [BLOB]])
                    self.assertEqual(pub.recv()[0], 17)
                    ev = sub.recv()
                    self.assertEqual(ev[0], 36)
                    self.assertEqual(ev[3], PPT)
                    self.assertEqual(ev[4], [BLOB])
                    self.assertEqual(len(ev), 5)
                    pub.close()
                    sub.close()

    def test_call_every_pair(self):
        for src in SERS:
            for dst in SERS:
                with self.subTest(caller=src, callee=dst):
                    proc = h.uri(self, "ppt.%s.%s" % (src, dst))
                    callee = RawSession(self.router, dst)
                    callee.send([64, 1, {}, proc])
                    self.assertEqual(callee.recv()[0], 65)
                    caller = RawSession(self.router, src)
                    caller.send([48, 2, PPT, proc, [BLOB]])
                    inv = callee.recv()
                    self.assertEqual(inv[0], 68)
                    self.assertEqual(inv[3], PPT)
                    self.assertEqual(inv[4], [BLOB])
                    reply = dict(PPT, ppt_keyid="0x5678")
                    callee.send([70, inv[1], reply, [BLOB[::-1]]])
                    res = caller.recv()
                    self.assertEqual(res, [50, 2, reply, [BLOB[::-1]]])
                    # An application error with passthru details goes back as it came.
                    caller.send([48, 3, PPT, proc, [BLOB]])
                    inv = callee.recv()
                    callee.send([8, 68, inv[1], reply, "com.example.e2e.failed", [b"\x01"]])
                    self.assertEqual(caller.recv(), [8, 48, 3, reply, "com.example.e2e.failed",
                                                     [b"\x01"]])
                    caller.close()
                    callee.close()

    def test_unannounced_and_unsupported(self):
        proc = h.uri(self, "ppt.plain")
        plain = RawSession(self.router, "json", roles={"caller": {}, "callee": {}})
        plain.send([64, 1, {}, proc])
        self.assertEqual(plain.recv()[0], 65)
        caller = RawSession(self.router, "cbor")
        caller.send([48, 2, PPT, proc, [BLOB]])
        err = caller.recv()
        self.assertEqual(err[:5], [8, 48, 2, {}, "wamp.error.feature_not_supported"])
        caller.send([48, 3, {"ppt_serializer": "cbor"}, proc, [BLOB]])
        self.assertEqual(caller.recv()[4], "wamp.error.invalid_argument")
        plain.send([48, 4, PPT, proc, [BLOB]])
        abort = plain.recv()
        self.assertEqual(abort[0], 3)
        self.assertEqual(abort[2], "wamp.error.protocol_violation")
        caller.close()
        plain.close()


if __name__ == "__main__":
    h.main()
