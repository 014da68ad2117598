"""Advanced Profile pub/sub through wampscope with python3-autobahn (json and msgpack):
pattern-based subscriptions, subscriber black/white listing, publisher identification, event
retention.

The router runs configs/test-e2e-broker.json: realm1 has roles "anonymous" and "guest" (publications
of "guest" under com.forced. are disclosed by permission); the first transport admits anonymous
sessions as "anonymous", the second one as "guest".
"""

import asyncio
import types
from urllib.parse import urlparse

from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import PublishOptions, SubscribeOptions

import rt_harness as h

CONFIG = "configs/test-e2e-broker.json"


def opts(match=None):
    return SubscribeOptions(match=match, details=True)


class AdvancedBase:
    """Mixed into a RouterTestCase per serializer."""

    SER = None

    async def asyncSetUp(self):
        await h.AsyncTestCase.asyncSetUp(self)
        self.router = h.RouterProc(CONFIG).start()
        self._sessions = []
        guest_url = [u for u in self.router.urls if u.startswith("ws://")][1]
        p = urlparse(guest_url)
        self.guest_router = types.SimpleNamespace(url=guest_url, host=p.hostname, port=p.port)

    async def guest(self):
        """A session joined through the second transport, as role "guest"."""
        s = await h.open_session(self.guest_router, "realm1", self.SER)
        self._sessions.append(s)
        return s

    async def joined(self, s):
        return await h.step(asyncio.shield(s.joined))

    # --- pattern_based_subscription --------------------------------------------------------

    async def test_prefix_subscription_gets_concrete_topic(self):
        base = h.uri(self, "p")
        sub = await self.session(self.SER)
        pub = await self.session(self.SER)
        ev = h.Events()
        s = await h.step(sub.subscribe(ev, base, options=opts("prefix")))
        ack = PublishOptions(acknowledge=True)
        await h.step(pub.publish(base + ".a", "one", options=ack))
        await h.step(pub.publish(base + "x.b.c", "two", options=ack))  # plain string prefix
        await h.step(pub.publish("com.other." + base, "not mine", options=ack))
        await h.step(pub.publish(base, "three", k=1, options=ack))
        events = await ev.wait_arg("three")
        self.assertEqual([e[0][0] for e in events], ["one", "two", "three"])
        self.assertEqual([e[2].topic for e in events], [base + ".a", base + "x.b.c", base])
        self.assertEqual(events[2][1], {"k": 1})
        for e in events:
            self.assertEqual(e[2].subscription.id, s.id)

    async def test_wildcard_subscription_gets_concrete_topic(self):
        base = h.uri(self, "w")
        sub = await self.session(self.SER)
        pub = await self.session(self.SER)
        ev = h.Events()
        await h.step(sub.subscribe(ev, base + "..status", options=opts("wildcard")))
        ack = PublishOptions(acknowledge=True)
        await h.step(pub.publish(base + ".dev1.status", "dev1", options=ack))
        await h.step(pub.publish(base + ".dev1.other", "no", options=ack))
        await h.step(pub.publish(base + ".dev1.status.x", "no", options=ack))
        await h.step(pub.publish(base + ".dev2.status", "dev2", options=ack))
        events = await ev.wait_arg("dev2")
        self.assertEqual(ev.args0(), ["dev1", "dev2"])
        self.assertEqual([e[2].topic for e in events],
                         [base + ".dev1.status", base + ".dev2.status"])

    async def test_subscription_ids_shared_and_one_event_per_subscription(self):
        base = h.uri(self, "s")
        a = await self.session(self.SER)
        b = await self.session(self.SER)
        pub = await self.session(self.SER)
        ea, eb = h.Events(), h.Events()
        sa = await h.step(a.subscribe(ea, base, options=opts("prefix")))
        sb = await h.step(b.subscribe(eb, base, options=opts("prefix")))
        self.assertEqual(sa.id, sb.id)  # one subscription per (uri, match)
        ex = await h.step(a.subscribe(ea, base + ".t", options=opts("exact")))
        wc = await h.step(a.subscribe(ea, base + ".", options=opts("wildcard")))
        self.assertEqual(len({sa.id, ex.id, wc.id}), 3)
        p = await h.step(pub.publish(base + ".t", "x", options=PublishOptions(acknowledge=True)))
        events = await ea.wait_for(3)
        await asyncio.sleep(0.1)
        self.assertEqual(len(ea.events), 3)  # one EVENT per matching subscription
        self.assertEqual(sorted(e[2].subscription.id for e in events),
                         sorted([sa.id, ex.id, wc.id]))
        self.assertEqual({e[2].publication for e in events}, {p.id})
        by_sub = {e[2].subscription.id: e[2].topic for e in events}
        # (autobahn fills details.topic in from the subscription for an exact one)
        self.assertEqual(by_sub[ex.id], base + ".t")
        self.assertEqual(by_sub[sa.id], base + ".t")
        self.assertEqual(by_sub[wc.id], base + ".t")
        events = await eb.wait_for(1)
        self.assertEqual(events[0][2].topic, base + ".t")
        # After unsubscribing, the prefix subscription still serves b; a gets two EVENTs.
        await h.step(sa.unsubscribe())
        await h.step(pub.publish(base + ".t", "y", options=PublishOptions(acknowledge=True)))
        await eb.wait_for(2)
        await ea.wait_for(5)
        await asyncio.sleep(0.1)
        self.assertEqual(len(ea.events), 5)

    async def test_invalid_pattern_is_invalid_uri(self):
        # autobahn checks URIs before sending, so the bad ones go out as raw JSON.
        raw = h.RawWs(self.router.host, self.router.port, self.router.path)
        try:
            self.assertEqual(raw.hello()[0], 2)
            cases = [("prefix", "com..x"), ("wildcard", "com.a b"), ("exact", "com.x."),
                     ("prefix", ".com")]
            for i, (match, topic) in enumerate(cases, 1):
                raw.send_json([32, i, {"match": match}, topic])
                m = raw.recv_wamp()
                self.assertEqual(m[:3], [8, 32, i], (match, topic))
                self.assertEqual(m[4], "wamp.error.invalid_uri", (match, topic))
            raw.send_json([32, 9, {"match": "regex"}, "com.x"])
            m = raw.recv_wamp()
            self.assertEqual(m[4], "wamp.error.invalid_argument")
            raw.send_json([32, 10, {"match": "prefix"}, "com.x."])
            self.assertEqual(raw.recv_wamp()[0], 33)  # a trailing empty component is fine
        finally:
            raw.close()

    # --- subscriber_blackwhite_listing -----------------------------------------------------

    async def test_black_and_white_listing_by_session_authid_authrole(self):
        topic = h.uri(self, "l")
        anon = [await self.session(self.SER) for _ in range(2)]
        guests = [await self.guest() for _ in range(2)]
        subs = anon + guests
        pub = await self.session(self.SER)
        details = [await self.joined(s) for s in subs]
        self.assertEqual([d.authrole for d in details],
                         ["anonymous", "anonymous", "guest", "guest"])
        ids = [d.session for d in details]
        authids = [d.authid for d in details]
        evs = [h.Events() for _ in subs]
        for s, e in zip(subs, evs):
            await h.step(s.subscribe(e, topic, options=opts()))
        cases = [
            (dict(exclude=[ids[0]]), {1, 2, 3}),
            (dict(eligible=[ids[1], ids[3]]), {1, 3}),
            (dict(eligible=[ids[0], ids[1], ids[2]], exclude=[ids[1]]), {0, 2}),
            (dict(exclude_authid=[authids[2], authids[0]]), {1, 3}),
            (dict(eligible_authid=[authids[3]]), {3}),
            (dict(exclude_authrole=["guest"]), {0, 1}),
            (dict(eligible_authrole=["guest"]), {2, 3}),
            (dict(eligible_authrole=["guest"], exclude=[ids[2]]), {3}),
            (dict(eligible_authrole=["guest"], eligible=[ids[0], ids[2]]), {2}),
            (dict(eligible_authid=[authids[0]], exclude_authrole=["anonymous"]), set()),
        ]
        for n, (kw, _) in enumerate(cases):
            await h.step(pub.publish(topic, n, options=PublishOptions(acknowledge=True, **kw)))
        await h.step(pub.publish(topic, "end", options=PublishOptions(acknowledge=True)))
        for e in evs:
            await e.wait_arg("end")
        for n, (kw, expect) in enumerate(cases):
            got = {i for i, e in enumerate(evs) if n in e.args0()}
            self.assertEqual(got, expect, kw)

    # --- publisher_identification ----------------------------------------------------------

    async def test_publisher_disclosed_by_permission(self):
        topic = "com.forced." + h.uri(self, "d")
        sub = await self.session(self.SER)
        anon = await self.session(self.SER)
        g = await self.guest()
        gd = await self.joined(g)
        ev = h.Events()
        await h.step(sub.subscribe(ev, topic, options=opts()))
        await h.step(anon.publish(topic, "anon", options=PublishOptions(acknowledge=True)))
        await h.step(g.publish(topic, "guest", options=PublishOptions(acknowledge=True)))
        events = await ev.wait_for(2)
        self.assertEqual(ev.args0(), ["anon", "guest"])
        d0, d1 = events[0][2], events[1][2]
        self.assertIsNone(d0.publisher)  # the anonymous role is not disclosed
        self.assertIsNone(d0.publisher_authid)
        self.assertEqual(d1.publisher, gd.session)
        self.assertEqual(d1.publisher_authid, gd.authid)
        self.assertEqual(d1.publisher_authrole, "guest")
        # The same role elsewhere is not disclosed.
        other = h.uri(self, "o")
        await h.step(sub.subscribe(ev, other, options=opts()))
        await h.step(g.publish(other, "elsewhere", options=PublishOptions(acknowledge=True)))
        events = await ev.wait_for(3)
        self.assertIsNone(events[2][2].publisher)

    async def test_publisher_disclosed_on_request(self):
        # python autobahn has no disclose_me option: the publisher speaks raw JSON.
        topic = h.uri(self, "r")
        sub = await self.session(self.SER)
        ev = h.Events()
        await h.step(sub.subscribe(ev, topic, options=opts("prefix")))
        raw = h.RawWs(self.router.host, self.router.port, self.router.path)
        try:
            welcome = raw.hello()
            self.assertEqual(welcome[0], 2)
            feats = welcome[2]["roles"]["broker"]["features"]
            for f in ("pattern_based_subscription", "subscriber_blackwhite_listing",
                      "publisher_identification", "publisher_exclusion", "event_retention"):
                self.assertIs(feats.get(f), True, f)
            raw.send_json([16, 1, {"acknowledge": True}, topic, ["hidden"]])
            self.assertEqual(raw.recv_wamp()[0], 17)
            raw.send_json([16, 2, {"acknowledge": True, "disclose_me": True}, topic + ".x",
                           ["shown"]])
            self.assertEqual(raw.recv_wamp()[0], 17)
            raw.send_json([16, 3, {"acknowledge": True, "disclose_me": "yes"}, topic, ["bad"]])
            m = raw.recv_wamp()
            self.assertEqual(m[:3], [8, 16, 3])
            self.assertEqual(m[4], "wamp.error.invalid_argument")
            events = await ev.wait_for(2)
            self.assertEqual(ev.args0(), ["hidden", "shown"])
            self.assertIsNone(events[0][2].publisher)
            d = events[1][2]
            self.assertEqual(d.publisher, welcome[1])
            self.assertEqual(d.publisher_authid, welcome[2]["authid"])
            self.assertEqual(d.publisher_authrole, "anonymous")
            self.assertEqual(d.topic, topic + ".x")
        finally:
            raw.close()

    # --- event_retention -------------------------------------------------------------------

    async def test_retained_event_on_get_retained(self):
        topic = h.uri(self, "r")
        pub = await self.session(self.SER)
        ack = PublishOptions(acknowledge=True, retain=True)
        await h.step(pub.publish(topic, "old", options=ack))
        blob = bytes(range(256))  # binary survives retention in both serializers
        await h.step(pub.publish(topic, *h.ARGS, blob, options=ack, **h.KWARGS))
        await h.step(pub.publish(topic + ".other", "other", options=ack))
        await pub.close()  # retained events outlive their publisher
        # The late subscriber speaks the other serializer: the retained payload is transcoded.
        late = await self.session("msgpack" if self.SER == "json" else "json")
        ev = h.Events()
        s = await h.step(late.subscribe(ev, topic, options=SubscribeOptions(
            details=True, get_retained=True)))
        events = await ev.wait_for(1)
        self.assertEqual(events[0][0], h.ARGS + [blob])
        self.assertEqual(events[0][1], h.KWARGS)
        self.assertIs(events[0][2].retained, True)
        self.assertEqual(events[0][2].subscription.id, s.id)
        # Without get_retained nothing is replayed; live events are not marked retained.
        plain = await self.session(self.SER)
        ev2 = h.Events()
        await h.step(plain.subscribe(ev2, topic, options=opts()))
        pub2 = await self.session(self.SER)
        await h.step(pub2.publish(topic, "live", options=PublishOptions(acknowledge=True)))
        events = await ev2.wait_for(1)
        self.assertEqual(ev2.args0(), ["live"])
        self.assertFalse(events[0][2].retained)
        await ev.wait_for(2)
        self.assertEqual(len(ev.events), 2)

    async def test_retained_events_for_a_prefix_subscription(self):
        base = h.uri(self, "rp")
        pub = await self.session(self.SER)
        g = await self.guest()
        gd = await self.joined(g)
        ack = PublishOptions(acknowledge=True, retain=True)
        await h.step(pub.publish(base + ".a", "a", options=ack))
        await h.step(pub.publish(base + ".b", "b", options=ack))
        await h.step(pub.publish(base + ".c", "c",
                                 options=PublishOptions(acknowledge=True, retain=True,
                                                        exclude_authrole=["guest"])))
        await h.step(pub.publish(base + ".d", "d",
                                 options=PublishOptions(acknowledge=True, retain=True,
                                                        eligible=[gd.session])))
        await h.step(pub.publish("com.unrelated." + base, "x", options=ack))
        # The guest sees a, b and d (c excludes its role); an anonymous session a, b and c.
        for who, expect in ((g, {"a", "b", "d"}), (await self.session(self.SER), {"a", "b", "c"})):
            ev = h.Events()
            await h.step(who.subscribe(ev, base, options=SubscribeOptions(
                match="prefix", details=True, get_retained=True)))
            events = await ev.wait_for(3)
            await asyncio.sleep(0.1)
            self.assertEqual(len(ev.events), 3)
            self.assertEqual(set(ev.args0()), expect)
            for e in events:
                self.assertIs(e[2].retained, True)
                self.assertEqual(e[2].topic, base + "." + e[0][0])

    async def test_retained_event_keeps_forced_disclosure(self):
        topic = "com.forced." + h.uri(self, "rd")
        g = await self.guest()
        gd = await self.joined(g)
        await h.step(g.publish(topic, "state",
                               options=PublishOptions(acknowledge=True, retain=True)))
        sub = await self.session(self.SER)
        ev = h.Events()
        await h.step(sub.subscribe(ev, topic, options=SubscribeOptions(details=True,
                                                                        get_retained=True)))
        events = await ev.wait_for(1)
        d = events[0][2]
        self.assertIs(d.retained, True)
        self.assertEqual(d.publisher, gd.session)
        self.assertEqual(d.publisher_authrole, "guest")


class TestPubSubAdvancedJson(AdvancedBase, h.RouterTestCase):
    SER = "json"


class TestPubSubAdvancedMsgpack(AdvancedBase, h.RouterTestCase):
    SER = "msgpack"


if __name__ == "__main__":
    h.main()
