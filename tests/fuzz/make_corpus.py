#!/usr/bin/python3
"""make_corpus.py: the seed corpus of tests/fuzz, made from real traffic through the router.

Starts wampscope (configs/test-e2e-mgmt.json) with two traces capturing everything (one on the
application realm, one naming the management realm), drives python autobahn clients (JSON and
MessagePack) through sessions, pub/sub with options and patterns, RPC with progressive results,
errors, binary payloads and the management API, then reads every record back with
get_trace_data and writes, per fuzz target, the messages the router *received* as seeds:

  corpus/fuzz_json/      each distinct message as JSON text
  corpus/fuzz_msgpack/   each distinct message as MessagePack
  corpus/fuzz_rawsock/   per session: RawSocket handshake + its messages as frames (+ a PING)
  corpus/fuzz_session/   per group of up to three sessions: their messages in arrival order in
                         fuzz_session.c's record format (connection 0 JSON, 1 MessagePack, 2 per
                         the header byte)

Files are named by the SHA-1 of their content (libFuzzer's convention), so re-running adds only
new seeds. Run by hand when the protocol surface grows (the corpus is committed):
  RT_ROUTER_BIN=build-test/router/wampscope RT_SOURCE_DIR=. /usr/bin/python3 tests/fuzz/make_corpus.py
"""

import asyncio
import base64
import hashlib
import json
import os
import struct
import sys

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))

import rt_harness  # noqa: E402
from autobahn.wamp.exception import ApplicationError  # noqa: E402
from autobahn.wamp.types import CallOptions, PublishOptions, RegisterOptions, SubscribeOptions  # noqa: E402

MGMT = "crossbarfabriccenter."
CORPUS = os.path.join(HERE, "corpus")


def write_seed(target, blob):
    d = os.path.join(CORPUS, target)
    os.makedirs(d, exist_ok=True)
    path = os.path.join(d, hashlib.sha1(blob).hexdigest())
    if not os.path.exists(path):
        with open(path, "wb") as f:
            f.write(blob)
        return 1
    return 0


def to_json_value(v):
    """Values as the msgpack management session received them -> the JSON binary convention."""
    if isinstance(v, bytes):
        return "\0" + base64.b64encode(v).decode()
    if isinstance(v, list):
        return [to_json_value(x) for x in v]
    if isinstance(v, dict):
        return {k: to_json_value(x) for k, x in v.items()}
    return v


def encode(ser, msg):
    if ser == "json":
        return json.dumps(to_json_value(msg), separators=(",", ":"), ensure_ascii=False).encode()
    return msgpack.packb(msg, use_bin_type=True)


async def traffic(router):
    sessions = []

    async def open_(realm, ser):
        s = await rt_harness.open_session(router, realm, ser)
        sessions.append(s)
        return s

    for ser in ("json", "msgpack"):
        other = "msgpack" if ser == "json" else "json"
        sub = await open_("realm1", ser)
        pub = await open_("realm1", other)
        got = asyncio.Event()
        await sub.subscribe(lambda *a, **k: got.set(), "com.fuzz.topic")
        await sub.subscribe(lambda *a, **k: None, "com.fuzz.",
                            options=SubscribeOptions(match="prefix"))
        await sub.subscribe(lambda *a, **k: None, "com..topic",
                            options=SubscribeOptions(match="wildcard", get_retained=True))
        await pub.publish("com.fuzz.topic", 1, "two", {"three": [3.5, None, True]},
                          b"\x00\x01binary", kw={"k": "v"},
                          options=PublishOptions(acknowledge=True, exclude_me=False,
                                                 retain=True, eligible_authrole=["anonymous"]))
        pub.publish("com.fuzz.topic", options=PublishOptions(exclude=[sub._session_id]))
        await asyncio.wait_for(got.wait(), 10)

        async def progressive(n, details=None):  # noqa: E306
            if details and details.progress:
                for i in range(n):
                    details.progress(i)
            return n

        def fails():
            raise ApplicationError("com.fuzz.error.oops", "bad", code=7)

        p = "com.rpc." + ser + "."
        await sub.register(progressive, p + "progressive")
        await sub.register(fails, p + "fails")
        await sub.register(lambda x: x, p, options=RegisterOptions(match="prefix"))
        await pub.call(p + "progressive", 3, options=CallOptions(on_progress=lambda i: None))
        try:
            await pub.call(p + "fails")
        except ApplicationError:
            pass
        await pub.call(p + "echo", [1, {"a": b"\xff"}], options=CallOptions(timeout=5000))
        try:
            await pub.call("com.nobody." + ser, options=CallOptions(timeout=100))
        except ApplicationError:
            pass
    return sessions


async def main():
    router = rt_harness.RouterProc(config="configs/test-e2e-mgmt.json")
    router.start()
    try:
        mgmt = await rt_harness.open_session(router, "mgmt", "msgpack")
        node = (await mgmt.call(MGMT + "list_nodes"))[0]
        worker = (await mgmt.call(MGMT + "list_workers", node))[0]
        await mgmt.call(MGMT + "start_trace", node, worker, "app", {})
        await mgmt.call(MGMT + "start_trace", node, worker, "mg", {"realms": ["mgmt"]})
        sessions = await traffic(router)
        for s in sessions:
            s.leave()
        await asyncio.sleep(0.3)
        # Management traffic of its own (captured by trace "mg").
        await mgmt.call(MGMT + "get_trace", node, worker, "app")
        await mgmt.call(MGMT + "list_traces", node, worker)
        await mgmt.call(MGMT + "mark_trace", node, worker, None, "seed", {"by": "make_corpus"})
        await mgmt.call(MGMT + "get_trace_data", node, worker, "app", 0, 3, 2)
        records = []
        for tid in ("app", "mg"):
            await mgmt.call(MGMT + "stop_trace", node, worker, tid)
            seq = 0
            while True:
                page = await mgmt.call(MGMT + "get_trace_data", node, worker, tid, seq, None, 1000)
                if not page:
                    break
                records.extend(page)
                seq = page[-1]["seq"] + 1
        mgmt.leave()
        await asyncio.sleep(0.2)
    finally:
        router.stop()
        router.cleanup()
    rx = [r for r in records if r["direction"] == "rx" and isinstance(r.get("msg"), list)]
    counts = {"fuzz_json": 0, "fuzz_msgpack": 0, "fuzz_rawsock": 0, "fuzz_session": 0}
    for r in rx:
        counts["fuzz_json"] += write_seed("fuzz_json", encode("json", r["msg"]))
        counts["fuzz_msgpack"] += write_seed("fuzz_msgpack", encode("msgpack", r["msg"]))
    by_session = {}
    for r in rx:
        by_session.setdefault(r["session_id"], []).append(r)
    for sid, recs in by_session.items():
        for ser_code, ser in ((1, "json"), (2, "msgpack")):
            blob = bytes([0x7F, 0xF0 | ser_code, 0, 0])  # LENGTH 15: 16 MiB
            for r in recs:
                body = encode(ser, r["msg"])
                blob += struct.pack(">I", len(body)) + body
            blob += struct.pack(">I", (1 << 24) | 4) + b"ping"  # type 1 = PING
            # fuzz_rawsock's header: byte 0 offers both serializers and 64 KiB, byte 1 slicing.
            counts["fuzz_rawsock"] += write_seed("fuzz_rawsock", bytes([0x1F, 0x05]) + blob)
    sids = list(by_session)
    for g in range(0, len(sids), 3):
        group = sids[g:g + 3]
        conn = {sid: i for i, sid in enumerate(group)}
        blob = bytes([0x04])  # connection 2 speaks JSON; a trace runs from the start
        for r in rx:
            if r["session_id"] not in conn:
                continue
            i = conn[r["session_id"]]
            body = encode("msgpack" if i == 1 else "json", r["msg"])
            blob += struct.pack("<BH", i | 4, len(body)) + body
        blob += struct.pack("<BH", 3, 1500)  # 1.5 s pass: timeouts and trace batches
        counts["fuzz_session"] += write_seed("fuzz_session", blob)
    print("records read: %d (%d received messages); new seeds: %s" % (len(records), len(rx), counts))


if __name__ == "__main__":
    asyncio.run(main())
