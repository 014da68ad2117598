"""Clients connect with their library's defaults: Debian's python3-autobahn ApplicationRunner
without a serializers argument offers every serializer it has (cbor, msgpack, ubjson, json,
flatbuffers, each batched and unbatched: a Sec-WebSocket-Protocol header of 137 bytes, more than
libwebsockets 4.1 accepts by itself). The router negotiates MessagePack, its first choice.

Checks: with the default configuration (configs/default.json, a web transport serving /ws), a
default ApplicationRunner joins, registers, calls, subscribes and publishes within a second; with
that configuration's transport as a plain "websocket" transport, the same on /ws and on any other
path (Crossbar serves WAMP on every path of a websocket transport); and the same over wss:// on
a TLS listener.
"""

import json
import os
import subprocess
import sys
import tempfile
import shutil
import unittest

import rt_harness as h
from test_rawsocket import make_cert

DEFAULT_CONFIG = "configs/default.json"

# Run in a process of its own: ApplicationRunner.run() owns its event loop until the session
# leaves. Prints "OK <result> <event> <serializer> <seconds from start to the event>".
CLIENT = r'''
import asyncio, ssl, sys, time
from autobahn.asyncio.wamp import ApplicationRunner, ApplicationSession
from autobahn.wamp.types import PublishOptions
t0 = time.monotonic()

class Session(ApplicationSession):
    async def onJoin(self, details):
        got = asyncio.get_running_loop().create_future()
        await self.register(lambda a, b: a + b, "com.example.add2")
        await self.subscribe(lambda x: got.done() or got.set_result(x), "com.example.hello")
        result = await self.call("com.example.add2", 2, 3)
        await self.publish("com.example.hello", "hi",
                           options=PublishOptions(exclude_me=False, acknowledge=True))
        event = await asyncio.wait_for(got, 5)
        print("OK", result, event, self._transport._serializer.SERIALIZER_ID,
              "%.3f" % (time.monotonic() - t0), flush=True)
        self.leave()

    def onDisconnect(self):
        asyncio.get_event_loop().stop()

ctx = ssl.create_default_context(cafile=sys.argv[2]) if len(sys.argv) > 2 else None
ApplicationRunner(sys.argv[1], "realm1", ssl=ctx).run(Session, log_level="critical")
'''


def run_default_client(url, cafile=None):
    """Runs CLIENT against url (wss:// trusting cafile); returns (result, event, serializer,
    seconds)."""
    proc = subprocess.run([sys.executable, "-c", CLIENT, url] + ([cafile] if cafile else []),
                          capture_output=True, text=True, timeout=20)
    line = proc.stdout.strip()
    if proc.returncode != 0 or not line.startswith("OK "):
        raise AssertionError("default client on %s failed (status %s): %r %r"
                             % (url, proc.returncode, line, proc.stderr[-2000:]))
    _, result, event, ser, secs = line.split()
    return int(result), event, ser, float(secs)


def websocket_transport_config(tmp):
    """configs/default.json with its web transport turned into a plain websocket transport."""
    with open(os.path.join(os.environ["RT_SOURCE_DIR"], DEFAULT_CONFIG), encoding="utf-8") as f:
        cfg = json.load(f)
    web = cfg["workers"][0]["transports"][0]
    cfg["workers"][0]["transports"][0] = {
        "type": "websocket",
        "endpoint": web["endpoint"],
        "url": "ws://127.0.0.1:8080/ws",
        "serializers": web["paths"]["ws"]["serializers"],
    }
    path = os.path.join(tmp, "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


class ClientDefaultsTest(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="wampscope-defaults-")
        self.router = None

    def tearDown(self):
        try:
            if self.router:
                self.router.stop()
        finally:
            shutil.rmtree(self.tmp, ignore_errors=True)

    def check(self, url, cafile=None):
        result, event, ser, secs = run_default_client(url, cafile)
        self.assertEqual(result, 5)
        self.assertEqual(event, "hi")
        self.assertEqual(ser, "msgpack")  # the router's first choice, not the client's (cbor)
        self.assertLess(secs, 1.0)

    def test_default_config_ws_path(self):
        self.router = h.RouterProc(DEFAULT_CONFIG).start()
        self.assertEqual(self.router.path, "/ws")
        self.check(self.router.url)
        self.assertNotIn("protocol list too long", self.router.stderr_text())

    def test_websocket_transport_any_path(self):
        self.router = h.RouterProc(websocket_transport_config(self.tmp)).start()
        base = "ws://%s:%d" % (self.router.host, self.router.port)
        for path in ("/ws", "/", "/some/other/path"):
            with self.subTest(path=path):
                self.check(base + path)

    def test_wss_default_serializers(self):
        # Over TLS libwebsockets alone refused the 137-byte default offer.
        key, cert = make_cert(self.tmp)
        with open(websocket_transport_config(self.tmp), encoding="utf-8") as f:
            cfg = json.load(f)
        cfg["workers"][0]["transports"].append(
            {"type": "websocket", "id": "wss_default",
             "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": 0,
                          "tls": {"key": key, "certificate": cert}}})
        path = os.path.join(self.tmp, "tls.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        self.router = h.RouterProc(path).start()
        wss = [u for u in self.router.urls if u.startswith("wss://")]
        port = int(wss[0].split(":")[2].split("/")[0])
        self.check("wss://localhost:%d/ws" % port, cert)


if __name__ == "__main__":
    h.main()
