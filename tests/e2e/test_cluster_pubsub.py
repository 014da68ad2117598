"""Publish/subscribe across wampscope nodes linked by a real nats-server (JetStream, ephemeral
port, temp store), with python3-autobahn clients on different nodes and mixed serializers:
exact, prefix and wildcard subscriptions receive each event exactly once with one publication
id; the PUBLISH options (exclude/eligible by session, authid and authrole, disclose_me,
acknowledge) hold across nodes; retained events are served from the node that holds them, one
per topic in the cluster also while one node's wall clock is 5 s behind (libfaketime) and after
the nodes retained one each while they could not hear each other; a node
killed with kill -9 has its interest dropped (documented bound: node_ttl + 3 heartbeats); and a
stopped nats-server leaves local routing going, then cross-node events flow again once it is
back. The harness (nats-server, configs, log waits) is cluster_harness.py's."""

import asyncio
import re
import time

from autobahn.wamp.types import PublishOptions, SubscribeOptions

import cluster_harness as ch
import rt_harness as h

ACK = PublishOptions(acknowledge=True)


class Events(h.Events):
    """h.Events, and which events are not probes."""

    def real(self):
        """The events that are not probes."""
        return [e for e in self.events if e[0][:1] != ["probe"]]


def opts(match=None, **kw):
    return SubscribeOptions(match=match, details=True, **kw)


class TestClusterPubSub(ch.ClusterCase):
    PREFIX = "p_"
    TMP_PREFIX = "wampscope-cpubsub-"

    async def until_delivered(self, pub, topic, *handlers):
        """Publishes probes on topic until every handler got one: the other nodes know the
        subscriptions (the table's deltas crossed NATS). Probes are left out of real()."""
        deadline = time.monotonic() + 10
        n = 0
        while not all(any(e[0][:1] == ["probe"] for e in hd.events) for hd in handlers):
            self.assertLess(time.monotonic(), deadline, "subscriptions never reached %s" % topic)
            n += 1
            await h.step(pub.publish(topic, "probe", n, options=ACK))
            await asyncio.sleep(0.05)

    async def test_events_cross_nodes_exactly_once(self):
        a, b, c = self.nodes("node_a", "node_b", "node_c")
        base = h.uri(self, "t")
        pub = await self.session(a, "json")
        sa, sb, sb2, sc = (await self.session(a, "json"), await self.session(b, "msgpack"),
                           await self.session(b, "json"), await self.session(c, "cbor"))
        ea, eb, ebp, ec = Events(), Events(), Events(), Events()
        await h.step(sa.subscribe(ea, base + ".x", options=opts("exact")))
        await h.step(sb.subscribe(eb, base + ".x", options=opts("exact")))
        await h.step(sb2.subscribe(ebp, base, options=opts("prefix")))
        await h.step(sc.subscribe(ec, base + ".", options=opts("wildcard")))
        await self.until_delivered(pub, base + ".x", ea, eb, ebp, ec)
        pubs = []
        for i in range(20):
            p = await h.step(pub.publish(base + ".x", i, b"\x00\x01bin", k={"n": i},
                                         options=ACK))
            pubs.append(p.id)
        # A publisher on another node (msgpack), to subscribers of every serializer.
        pub_c = await self.session(c, "msgpack")
        await h.step(pub_c.publish(base + ".x", 100, options=ACK))
        for hd in (ea, eb, ebp, ec):
            await hd.wait_for(lambda ev: any(e[0][:1] == [100] for e in ev))
        await asyncio.sleep(0.3)  # nothing more arrives
        for hd, pattern in ((ea, False), (eb, False), (ebp, True), (ec, True)):
            real = hd.real()
            # Each publisher's events in its order, each once; WAMP orders the events of one
            # publisher only, so c's may come anywhere among a's (they cross NATS from c).
            values = [e[0][0] for e in real]
            self.assertEqual(values.count(100), 1, values)
            from_a = [e for e in real if e[0][0] != 100]
            self.assertEqual([e[0][0] for e in from_a], list(range(20)))
            for i, (args, kwargs, details) in enumerate(from_a):
                self.assertEqual(args, [i, b"\x00\x01bin"])
                self.assertEqual(kwargs, {"k": {"n": i}})
                self.assertEqual(details.publication, pubs[i], "one publication id")
                if pattern:
                    self.assertEqual(details.topic, base + ".x")

    async def test_options_across_nodes(self):
        a, b = self.nodes("node_a", "node_b")
        topic = h.uri(self, "o")
        pub = await self.session(a, "json")
        s1, s2 = await self.session(b, "json"), await self.session(b, "msgpack")
        e1, e2 = Events(), Events()
        await h.step(s1.subscribe(e1, topic, options=opts()))
        await h.step(s2.subscribe(e2, topic, options=opts()))
        await self.until_delivered(pub, topic, e1, e2)
        id1, auth1 = s1._session_id, s1._authid
        cases = [
            (dict(exclude=[id1]), "exclude", (False, True)),
            (dict(eligible=[id1]), "eligible", (True, False)),
            (dict(exclude_authid=[auth1]), "exclude_authid", (False, True)),
            (dict(eligible_authid=[auth1]), "eligible_authid", (True, False)),
            (dict(exclude_authrole=["anonymous"]), "exclude_authrole", (False, False)),
            (dict(eligible_authrole=["anonymous"]), "eligible_authrole", (True, True)),
        ]
        for kw, tag, _ in cases:
            await h.step(pub.publish(topic, tag, options=PublishOptions(acknowledge=True, **kw)))
        # python autobahn has no disclose_me option: a raw publisher on A asks for it.
        raw = h.RawWs(a.host, a.port, a.path)
        try:
            welcome = raw.hello()
            raw.send_json([16, 1, {"acknowledge": True, "disclose_me": True}, topic,
                           ["disclosed"]])
            self.assertEqual(raw.recv_wamp()[0], 17)
        finally:
            raw.close()
        await h.step(pub.publish(topic, "end", options=ACK))
        for hd in (e1, e2):
            await hd.wait_for(lambda ev: any(e[0][:1] == ["end"] for e in ev))
        got1 = [e[0][0] for e in e1.real()]
        got2 = [e[0][0] for e in e2.real()]
        for _, tag, (want1, want2) in cases:
            self.assertEqual(tag in got1, want1, tag)
            self.assertEqual(tag in got2, want2, tag)
        disclosed = [e for e in e1.real() if e[0][0] == "disclosed"][0][2]
        self.assertEqual(disclosed.publisher, welcome[1])
        self.assertEqual(disclosed.publisher_authid, welcome[2]["authid"])
        self.assertEqual(disclosed.publisher_authrole, "anonymous")
        plain = [e for e in e1.real() if e[0][0] == "end"][0][2]
        self.assertIsNone(plain.publisher)

    async def test_retained_event_from_another_node(self):
        a, b = self.nodes("node_a", "node_b")
        topic = h.uri(self, "r")
        pub = await self.session(a, "json")
        await h.step(pub.publish(topic, "kept", options=PublishOptions(acknowledge=True,
                                                                       retain=True)))
        s = await self.session(b, "msgpack")
        ev = Events()
        await h.step(s.subscribe(ev, topic, options=opts(get_retained=True)))
        events = await ev.wait_for(lambda e: len(e) >= 1)
        self.assertEqual(events[0][0], ["kept"])
        self.assertTrue(events[0][2].retained)

    async def test_one_retained_event_when_clocks_differ(self):
        """node_a's wall clock is 5 s behind node_b's (libfaketime): node_b retains an event, then
        node_a one on the same topic, which its clock dates before node_b's. The topic keeps one
        retained event in the cluster, the one retained last by the nodes' wall clocks, and a
        subscriber on either node gets that one alone."""
        a, b = self.nodes("node_a", "node_b", envs={"node_a": ch.faked_clock("-5s")})
        topic = h.uri(self, "r")
        retain = PublishOptions(acknowledge=True, retain=True)
        await h.step((await self.session(b, "json")).publish(topic, "from b", options=retain))
        await asyncio.sleep(0.3)  # node_b's notice reaches node_a before node_a retains
        await h.step((await self.session(a, "json")).publish(topic, "from a", options=retain))
        for node in (a, b, a, b):
            s = await self.session(node, "msgpack")
            ev = Events()
            await h.step(s.subscribe(ev, topic, options=opts(get_retained=True)))
            await ev.wait_for(lambda e: len(e) >= 1)
            await asyncio.sleep(0.5)  # any other node's retained event would have come by now
            self.assertEqual([e[0] for e in ev.events], [["from b"]])
            self.assertTrue(ev.events[0][2].retained)

    async def test_killed_node_interest_dropped(self):
        a, b, c = self.nodes("node_a", "node_b", "node_c")
        topic = h.uri(self, "k")
        pub = await self.session(a, "json")
        sb, sc = await self.session(b, "json"), await self.session(c, "json")
        eb, ec = Events(), Events()
        await h.step(sb.subscribe(eb, topic, options=opts()))
        await h.step(sc.subscribe(ec, topic, options=opts()))
        await self.until_delivered(pub, topic, eb, ec)
        self.sessions.remove(sb)
        killed_at = time.monotonic()
        b.kill()
        dropped = ch.wait_log(a, re.escape("cluster table subs: dropped the 1 entries of node "
                                             "node_b"), timeout=ch.KILL_BOUND_S + 5)
        self.assertLess(dropped - killed_at, ch.KILL_BOUND_S + ch.SLACK_S)
        await h.step(pub.publish(topic, "after", options=ACK))
        await ec.wait_for(lambda ev: any(e[0] == ["after"] for e in ev))
        self.assertNotIn("event of", a.stderr_text())  # nothing was sent to the dead node

    async def test_nats_stopped_and_restarted(self):
        a, b = self.nodes("node_a", "node_b")
        topic = h.uri(self, "n")
        pub = await self.session(a, "json")
        sa, sb = await self.session(a, "msgpack"), await self.session(b, "json")
        ea, eb = Events(), Events()
        await h.step(sa.subscribe(ea, topic, options=opts()))
        await h.step(sb.subscribe(eb, topic, options=opts()))
        await self.until_delivered(pub, topic, ea, eb)
        self.nats.stop()
        ch.wait_log(a, re.escape("cluster %s: link down; routing locally" % self.name))
        # Local routing never stops; B's event is dropped (counted, logged).
        await h.step(pub.publish(topic, "local", options=ACK))
        await ea.wait_for(lambda ev: any(e[0] == ["local"] for e in ev))
        # An event retained on each node while they cannot hear each other: once they are
        # back, the topic keeps one in the cluster, the later.
        retain = PublishOptions(acknowledge=True, retain=True)
        await h.step(pub.publish(topic + ".r", "from a", options=retain))
        await h.step(sb.publish(topic + ".r", "from b", options=retain))
        self.nats = ch.NatsServer(self.tmp, port=self.nats.port)
        self.addCleanup(self.nats.stop)
        self.nats.start()
        for r, me in ((a, "node_a"), (b, "node_b")):
            ch.wait_log(r, re.escape("cluster %s: joined as node %s" % (self.name, me)), count=2)
        eb.events.clear()
        await self.until_delivered(pub, topic, eb)
        await h.step(pub.publish(topic, "again", options=ACK))
        await eb.wait_for(lambda ev: any(e[0] == ["again"] for e in ev))
        self.assertNotIn(["local"], [e[0] for e in eb.events])
        for node in (a, b):
            s = await self.session(node, "json")
            er = Events()
            await h.step(s.subscribe(er, topic + ".r", options=opts(get_retained=True)))
            await er.wait_for(lambda e: len(e) >= 1)
            await asyncio.sleep(0.5)  # any other node's retained event would have come by now
            self.assertEqual([e[0] for e in er.events], [["from b"]])


if __name__ == "__main__":
    h.main()
