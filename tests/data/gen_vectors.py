#!/usr/bin/python3
"""Generates the golden codec vectors in this directory.

For each vector NAME this writes NAME.mpk (MessagePack, from python3-msgpack, an encoder
independent of ours) and NAME.json (the same value in the WAMP JSON convention, binary values as
"\\u0000" + base64), plus vectors.txt, one line per vector:

    NAME MPK_CANONICAL JSON_CANONICAL

MPK_CANONICAL is 1 when our encoder must reproduce NAME.mpk byte for byte (python-msgpack and
msgpack-c both pick the shortest form for every value), 0 for hand-made non-shortest encodings
that must only decode to the same value. JSON_CANONICAL is 1 when our compact jansson output must
equal NAME.json byte for byte (no reals that print differently, no control characters other
than NUL, which both escape as \\u0000).

Run with Debian's interpreter, which has python3-msgpack:  /usr/bin/python3 gen_vectors.py
The outputs are committed; rerunning must reproduce them exactly.
"""

import base64
import json
import os
import struct

import msgpack

HERE = os.path.dirname(os.path.abspath(__file__))


def to_json_model(v):
    """bytes -> "\\0" + base64 (WAMP JSON binary convention), recursively."""
    if isinstance(v, (bytes, bytearray)):
        return "\x00" + base64.b64encode(bytes(v)).decode("ascii")
    if isinstance(v, list):
        return [to_json_model(x) for x in v]
    if isinstance(v, dict):
        return {k: to_json_model(x) for k, x in v.items()}
    return v


def json_bytes(v):
    return json.dumps(to_json_model(v), ensure_ascii=False, separators=(",", ":"),
                      allow_nan=False).encode("utf-8")


# (name, value, json_canonical). All are packed by python-msgpack and are canonical MessagePack.
VECTORS = [
    ("hello", [1, "realm1", {
        "roles": {
            "caller": {"features": {"progressive_call_results": True, "call_canceling": True}},
            "callee": {}, "publisher": {}, "subscriber": {}},
        "authmethods": ["anonymous", "ticket"],
        "authid": "joe"}], True),
    ("welcome", [2, 9007199254740992, {
        "roles": {"broker": {"features": {}}, "dealer": {}},
        "authid": "joe", "authrole": "user", "authmethod": "anonymous"}], True),
    ("abort", [3, {"message": "The realm does not exist."}, "wamp.error.no_such_realm"], True),
    ("challenge", [4, "wampcra", {
        "challenge": '{"nonce": "LHRTC9zeOIrt_9U3", "authprovider": "userdb", "authid": "peter"}',
        "salt": "salt123", "iterations": 1000, "keylen": 32}], True),
    ("authenticate", [5, "gir1mSx+deCDUV7wRM5SGIn/+R/ClqLZuH4m7FJeBVI=", {}], True),
    ("goodbye", [6, {}, "wamp.close.system_shutdown"], True),
    ("error", [8, 48, 7814135, {}, "wamp.error.no_such_procedure",
               ["no callee registered for procedure 'com.myapp.add2'"],
               {"procedure": "com.myapp.add2"}], True),
    ("publish", [16, 239714735, {"acknowledge": True, "exclude_me": False},
                 "com.myapp.mytopic1",
                 ["Hello, world!", 42, -17, 1.5, None, True, False],
                 {"color": "orange", "sizes": [23, 42, 7],
                  "\u00fcn\u00efc\u00f6d\u00e9": "\u65e5\u672c\u8a9e \U0001F389 \u00e9"}], True),
    ("published", [17, 239714735, 4429313566], True),
    ("subscribe", [32, 713845233, {"match": "wildcard"}, "com.myapp..update"], True),
    ("unsubscribed", [35, 85346237], True),
    ("event_binary", [36, 5512315355, 4429313566, {"publisher": 3335656},
                      [b"\x00\x01\x02\xff", b"", b"\x00"], {"blob": bytes(range(256))}], True),
    ("call", [48, 7814135, {"timeout": 5000, "receive_progress": True}, "com.myapp.add2",
              [23, 7]], True),
    ("result_ints", [50, 7814135, {}, [
        0, 1, 127, 128, 255, 256, 65535, 65536, 4294967295, 4294967296, 9223372036854775807,
        -1, -32, -33, -128, -129, -32768, -32769, -2147483648, -2147483649,
        -9223372036854775808]], True),
    # jansson prints 17 significant digits (0.1 -> 0.10000000000000001): same value, other text.
    ("result_reals", [50, 1, {}, [0.1, -2.5e-300, 1e300, 0.0, -0.0, 3.141592653589793]], False),
    ("register", [64, 25349185, {"match": "prefix", "invoke": "roundrobin"},
                  "com.myapp.myprocedure1"], True),
    ("invocation_nested", [68, 6131533, 9147288, {"caller": 123, "procedure": "com.x"},
                           [[[[{"a": [[]]}]]],
                            {"deep": {"deeper": {"deepest": [1, {"x": None}]}}}],
                           {"k": [True, False, None]}], True),
    # Size class boundaries: fixstr/str8/str16, fixarray/array16, fixmap/map16, bin8/bin16.
    # The 32-bit forms take 64 KiB each; check_wamp_codec.c tests them without files.
    ("yield_sizes", [70, 6131533, {}, [
        "x" * 31, "y" * 32, "z" * 255, "w" * 256,
        list(range(15)), list(range(16)),
        {"k%02d" % i: i for i in range(15)}, {"k%02d" % i: i for i in range(16)},
        b"\xaa" * 255, b"\xbb" * 256]], True),
]


def noncanonical_call():
    """A valid CALL in the widest encodings: the decoder must accept every format width."""
    out = bytearray()
    out += b"\xdd" + struct.pack(">I", 5)                  # array32, 5 elements
    out += b"\xcf" + struct.pack(">Q", 48)                 # uint64 48 (CALL)
    out += b"\xd3" + struct.pack(">q", 7814135)            # int64 request id
    out += b"\xdf" + struct.pack(">I", 1)                  # map32, 1 entry
    out += b"\xdb" + struct.pack(">I", 7) + b"timeout"     # str32 key
    out += b"\xce" + struct.pack(">I", 100)                # uint32 100
    out += b"\xda" + struct.pack(">H", 5) + b"com.x"       # str16 procedure
    out += b"\xdc" + struct.pack(">H", 6)                  # array16 arguments
    out += b"\xca" + struct.pack(">f", 1.5)                # float32 1.5
    out += b"\xd0" + struct.pack(">b", -1)                 # int8 -1
    out += b"\xd1" + struct.pack(">h", 5)                  # int16 5
    out += b"\xd9" + struct.pack(">B", 2) + b"\xc3\xa9"    # str8 "é"
    out += b"\xc6" + struct.pack(">I", 2) + b"\x01\x02"    # bin32
    out += b"\xde" + struct.pack(">H", 0)                  # map16, empty
    value = [48, 7814135, {"timeout": 100}, "com.x", [1.5, -1, 5, "\u00e9", b"\x01\x02", {}]]
    return bytes(out), value


def write(name, mpk, json_text):
    with open(os.path.join(HERE, name + ".mpk"), "wb") as f:
        f.write(mpk)
    with open(os.path.join(HERE, name + ".json"), "wb") as f:
        f.write(json_text)


def main():
    lines = []
    for name, value, json_canonical in VECTORS:
        mpk = msgpack.packb(value, use_bin_type=True)
        assert msgpack.unpackb(mpk, raw=False, strict_map_key=True) == value
        write(name, mpk, json_bytes(value))
        lines.append("%s 1 %d" % (name, 1 if json_canonical else 0))
    mpk, value = noncanonical_call()
    assert msgpack.unpackb(mpk, raw=False) == value
    write("call_wide_formats", mpk, json_bytes(value))
    lines.append("call_wide_formats 0 1")
    with open(os.path.join(HERE, "vectors.txt"), "w") as f:
        f.write("\n".join(lines) + "\n")


if __name__ == "__main__":
    main()
