"""Publish/subscribe through wampscope with python3-autobahn, for the json and msgpack serializers."""

import asyncio
import random
import string

from autobahn.wamp.request import Publication
from autobahn.wamp.types import PublishOptions

import rt_harness as h

ARGS, KWARGS = h.ARGS, h.KWARGS


class Collector:
    """A subscription handler that records (args, kwargs) and wakes waiters."""

    def __init__(self):
        self.events = []
        self._cond = asyncio.Condition()

    async def __call__(self, *args, **kwargs):
        async with self._cond:
            self.events.append((list(args), kwargs))
            self._cond.notify_all()

    async def wait_for(self, n):
        async def _wait():
            async with self._cond:
                await self._cond.wait_for(lambda: len(self.events) >= n)
        await h.step(_wait())
        return self.events


class PubSubBase:
    SER = None

    async def test_three_subscribers_all_receive(self):
        topic = h.uri(self, "t")
        subs = [await self.session(self.SER) for _ in range(3)]
        pub = await self.session(self.SER)
        handlers = [Collector() for _ in subs]
        for s, c in zip(subs, handlers):
            await h.step(s.subscribe(c, topic))
        await h.step(pub.publish(topic, *ARGS, options=PublishOptions(acknowledge=True), **KWARGS))
        for c in handlers:
            events = await c.wait_for(1)
            self.assertEqual(events[0], (ARGS, KWARGS))
        # A second publication arrives in order after the first.
        await h.step(pub.publish(topic, "second", options=PublishOptions(acknowledge=True)))
        for c in handlers:
            events = await c.wait_for(2)
            self.assertEqual(events[1], (["second"], {}))

    async def test_exclude_me_default_true(self):
        topic = h.uri(self, "t")
        pub = await self.session(self.SER)
        other = await self.session(self.SER)
        mine, theirs = Collector(), Collector()
        await h.step(pub.subscribe(mine, topic))
        await h.step(other.subscribe(theirs, topic))
        await h.step(pub.publish(topic, "excluded", options=PublishOptions(acknowledge=True)))
        await h.step(pub.publish(topic, "included",
                                 options=PublishOptions(acknowledge=True, exclude_me=False)))
        # Events from one publisher reach one subscriber in order, so once "included" has arrived
        # the publisher would already have seen "excluded" had the router sent it.
        events = await mine.wait_for(1)
        self.assertEqual([e[0] for e in events], [["included"]])
        events = await theirs.wait_for(2)
        self.assertEqual([e[0] for e in events], [["excluded"], ["included"]])

    async def test_exclude_me_false_publisher_receives(self):
        topic = h.uri(self, "t")
        pub = await self.session(self.SER)
        mine = Collector()
        await h.step(pub.subscribe(mine, topic))
        self.assertIsNone(pub.publish(topic, 1, 2, options=PublishOptions(exclude_me=False), k="v"))
        events = await mine.wait_for(1)
        self.assertEqual(events[0], ([1, 2], {"k": "v"}))

    async def test_acknowledged_publish_returns_publication(self):
        topic = h.uri(self, "t")
        pub = await self.session(self.SER)
        p1 = await h.step(pub.publish(topic, options=PublishOptions(acknowledge=True)))
        p2 = await h.step(pub.publish(topic, "x", options=PublishOptions(acknowledge=True)))
        for p in (p1, p2):
            self.assertIsInstance(p, Publication)
            self.assertIsInstance(p.id, int)
            self.assertTrue(1 <= p.id <= 2**53, p.id)
        self.assertNotEqual(p1.id, p2.id)
        # Without acknowledge there is no PUBLISHED and autobahn returns None.
        self.assertIsNone(pub.publish(topic, "fire and forget"))
        # ...and the session still works afterwards.
        p3 = await h.step(pub.publish(topic, options=PublishOptions(acknowledge=True)))
        self.assertIsInstance(p3, Publication)

    async def test_one_mib_event(self):
        topic = h.uri(self, "t")
        sub = await self.session(self.SER)
        pub = await self.session(self.SER)
        c = Collector()
        await h.step(sub.subscribe(c, topic))
        payload = "".join(random.choices(string.ascii_letters + string.digits, k=1 << 20))
        await h.step(pub.publish(topic, payload, options=PublishOptions(acknowledge=True),
                                 tail="ü"))
        events = await c.wait_for(1)
        self.assertEqual(len(events[0][0][0]), 1 << 20)
        self.assertEqual(events[0], ([payload], {"tail": "ü"}))


class TestPubSubJson(PubSubBase, h.RouterTestCase):
    SER = "json"


class TestPubSubMsgpack(PubSubBase, h.RouterTestCase):
    SER = "msgpack"


class TestPubSubMixed(h.RouterTestCase):
    """One event fanned out to a json and a msgpack subscriber (the router transcodes)."""

    async def test_json_publisher_msgpack_and_json_subscribers(self):
        await self._mixed("json")

    async def test_msgpack_publisher_msgpack_and_json_subscribers(self):
        await self._mixed("msgpack")

    async def _mixed(self, pub_ser):
        topic = h.uri(self, "t")
        subs = {ser: await self.session(ser) for ser in h.SERIALIZERS}
        handlers = {ser: Collector() for ser in h.SERIALIZERS}
        for ser, s in subs.items():
            await h.step(s.subscribe(handlers[ser], topic))
        pub = await self.session(pub_ser)
        blob = bytes(range(256)) * 4
        await h.step(pub.publish(topic, *ARGS, blob, options=PublishOptions(acknowledge=True),
                                 **KWARGS))
        for ser, c in handlers.items():
            events = await c.wait_for(1)
            with self.subTest(subscriber=ser):
                self.assertEqual(events[0], (ARGS + [blob], KWARGS))


if __name__ == "__main__":
    h.main()
