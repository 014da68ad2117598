#!/usr/bin/python3
"""soak_churn.py: sessions that come and go, for run_soak.sh.

Until --until (a Unix time), repeatedly: join realm1 (serializers alternating), register a
procedure, subscribe to a topic (URIs under --prefix), call the procedure, publish with acknowledge and wait for the
event, unregister, leave. Checks every result; prints `CHURN cycles=N errors=M seconds=S` at the
end (errors = failed or wrong steps, with the first few on stderr). Exit status 0.
"""

import argparse
import asyncio
import sys
import time
import warnings

import txaio

txaio.use_asyncio()
txaio.set_global_log_level("critical")
warnings.filterwarnings("ignore", category=DeprecationWarning)

from autobahn.asyncio.wamp import ApplicationSession  # noqa: E402
from autobahn.asyncio.websocket import WampWebSocketClientFactory  # noqa: E402
from autobahn.wamp.serializer import JsonSerializer, MsgPackSerializer  # noqa: E402
from autobahn.wamp.types import ComponentConfig, PublishOptions  # noqa: E402
from urllib.parse import urlparse  # noqa: E402


class Churner(ApplicationSession):
    async def onJoin(self, details):
        self.config.extra["joined"].set_result(self)

    def onDisconnect(self):
        done = self.config.extra["gone"]
        if not done.done():
            done.set_result(True)


async def cycle(url, ser, i, prefix):
    loop = asyncio.get_running_loop()
    joined, gone = loop.create_future(), loop.create_future()
    factory = WampWebSocketClientFactory(
        lambda: Churner(ComponentConfig(realm="realm1", extra={"joined": joined, "gone": gone})),
        url=url, serializers=[ser])
    u = urlparse(url)
    transport, _ = await loop.create_connection(factory, u.hostname, u.port)
    try:
        s = await asyncio.wait_for(joined, 10)
        proc, topic = "%s.p%d" % (prefix, i), "%s.t%d" % (prefix, i)
        reg = await s.register(lambda x: x + 1, proc)
        got = loop.create_future()
        await s.subscribe(lambda x: got.done() or got.set_result(x), topic)
        if await asyncio.wait_for(s.call(proc, i), 10) != i + 1:
            raise AssertionError("wrong call result")
        await s.publish(topic, i, options=PublishOptions(acknowledge=True, exclude_me=False))
        if await asyncio.wait_for(got, 10) != i:
            raise AssertionError("wrong event")
        await reg.unregister()
        s.leave()
        await asyncio.wait_for(gone, 10)
    finally:
        transport.close()


async def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--url", required=True)
    ap.add_argument("--until", type=float, required=True)
    ap.add_argument("--prefix", default="soak.churn",
                    help="of the URIs (procedure PREFIX.pN, topic PREFIX.tN)")
    args = ap.parse_args()
    cycles = errors = 0
    t0 = time.time()
    sers = [JsonSerializer(), MsgPackSerializer()]
    while time.time() < args.until:
        try:
            await cycle(args.url, sers[cycles % 2], cycles, args.prefix)
        except Exception as e:  # counted, reported, and the churn goes on
            errors += 1
            if errors <= 5:
                print("churn error in cycle %d: %r" % (cycles, e), file=sys.stderr)
        cycles += 1
        await asyncio.sleep(0.05)
    print("CHURN cycles=%d errors=%d seconds=%.0f" % (cycles, errors, time.time() - t0))


if __name__ == "__main__":
    asyncio.run(main())
