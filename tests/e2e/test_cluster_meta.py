"""The WAMP meta API across two wampscope nodes linked by a real nats-server (JetStream, ephemeral
port, temp store), with python3-autobahn sessions on both nodes: wamp.session.*,
wamp.subscription.* and wamp.registration.* called on either node see the sessions,
subscriptions, subscribers, registrations and callees of both (merge rules in README.md,
Cluster, "Meta API"); a node that does not answer in time (stopped with SIGSTOP) is left out
and logged. The harness (nats-server, configs, log waits) is cluster_harness.py's."""

import asyncio
import json
import os
import signal
import time

from autobahn.wamp.types import RegisterOptions, SubscribeOptions

import cluster_harness as ch
import rt_harness as h


class TestClusterMeta(ch.ClusterCase):
    PREFIX = "m_"
    TMP_PREFIX = "wampscope-cmeta-"

    async def test_meta_calls_on_each_node_see_both(self):
        a, b = self.nodes("node_a", "node_b")
        sa = await self.session(a, "json")
        sb1 = await self.session(b, "msgpack")
        sb2 = await self.session(b, "cbor")
        ids = {s._session_id for s in (sa, sb1, sb2)}
        topic = h.uri(self, "t")
        proc = h.uri(self, "p")
        sub_a = await h.step(sa.subscribe(lambda *a: None, topic))
        await h.step(sb1.subscribe(lambda *a: None, topic))
        await h.step(sb2.subscribe(lambda *a: None, topic))
        pfx = await h.step(sb1.subscribe(lambda *a: None, topic + ".deep",
                                         options=SubscribeOptions(match="prefix")))
        await h.step(sb2.register(lambda: 1, proc))
        await h.step(sa.register(lambda: 2, proc + ".a", options=RegisterOptions()))

        for s in (sa, sb1):
            self.assertEqual(await h.step(s.call("wamp.session.count")), 3)
            self.assertEqual(await h.step(s.call("wamp.session.count", ["anonymous"])), 3)
            self.assertEqual(await h.step(s.call("wamp.session.count", ["nobody"])), 0)
            self.assertEqual(set(await h.step(s.call("wamp.session.list"))), ids)
            for other in (sa, sb1, sb2):
                d = await h.step(s.call("wamp.session.get", other._session_id))
                self.assertEqual(d["session"], other._session_id)

        # Subscribers of both nodes through node_a's id of the topic.
        self.assertEqual(await h.step(sa.call("wamp.subscription.count_subscribers",
                                              sub_a.id)), 3)
        self.assertEqual(set(await h.step(sa.call("wamp.subscription.list_subscribers",
                                                  sub_a.id))), ids)
        # lookup: this node's id when it has one, else the other node's.
        self.assertEqual(await h.step(sa.call("wamp.subscription.lookup", topic)), sub_a.id)
        b_pfx = await h.step(sa.call("wamp.subscription.lookup", topic + ".deep",
                                     {"match": "prefix"}))
        self.assertIsNotNone(b_pfx)
        matched = await h.step(sb1.call("wamp.subscription.match", topic + ".deep.x"))
        self.assertEqual(matched, [pfx.id])
        listed = await h.step(sa.call("wamp.subscription.list"))
        self.assertEqual(len(listed["exact"]), 2)  # one per node
        self.assertEqual(len(listed["prefix"]), 1)

        # The registration of node_b, seen from node_a.
        reg = await h.step(sa.call("wamp.registration.lookup", proc))
        self.assertIsNotNone(reg)
        self.assertEqual(await h.step(sa.call("wamp.registration.match", proc)), reg)
        self.assertEqual(await h.step(sa.call("wamp.registration.list_callees", reg)),
                         [sb2._session_id])
        self.assertEqual(await h.step(sa.call("wamp.registration.count_callees", reg)), 1)
        listed = await h.step(sb1.call("wamp.registration.list"))
        self.assertEqual(len(listed["exact"]), 2)

    async def test_node_not_answering_is_left_out(self):
        a, b = self.nodes("node_a", "node_b")
        sa = await self.session(a, "json")
        await self.session(b, "json")
        self.assertEqual(await h.step(sa.call("wamp.session.count")), 2)
        os.kill(b.proc.pid, signal.SIGSTOP)
        try:
            t0 = time.monotonic()
            # request_timeout is 1 s in these configs: answered with node_a alone.
            self.assertEqual(await h.step(sa.call("wamp.session.count")), 1)
            self.assertLess(time.monotonic() - t0, 3.0)
        finally:
            os.kill(b.proc.pid, signal.SIGCONT)
        ch.wait_log(a, r"cluster meta: node node_b did not answer wamp\.session\.count")
        self.assertEqual(await h.step(sa.call("wamp.session.count")), 2)

    async def test_replies_count_against_max_pending_bytes(self):
        """Any process on the NATS server may publish on a node's reply subject: a reply over
        cluster.max_pending_bytes is dropped there like any message, not queued whatever its
        size. A raw client answers node_a's meta request for stopped node_b with 100 KB."""
        self.nats.start()
        a = self.node("node_a", start=False)
        with open(a.config, encoding="utf-8") as f:
            cfg = json.load(f)
        cfg["workers"][0]["wampscope"]["cluster"]["max_pending_bytes"] = 65536
        with open(a.config, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        a.start()
        b = self.node("node_b")
        for r in (a, b):
            ch.wait_log(r, ch.nodes_line(self.name, "node_a", "node_b"))
        reader, writer = await asyncio.open_connection("127.0.0.1", self.nats.port)
        self.addCleanup(writer.close)
        await h.step(reader.readline())  # INFO
        writer.write(b'CONNECT {"verbose":false,"pedantic":false}\r\n'
                     b"SUB %s.node.node_b.meta 1\r\nPING\r\n" % self.name.encode())
        while (await h.step(reader.readline())).strip() != b"PONG":
            pass
        sa = await self.session(a, "json")
        os.kill(b.proc.pid, signal.SIGSTOP)
        try:
            call = asyncio.ensure_future(sa.call("wamp.session.count"))
            while True:
                line = (await h.step(reader.readline())).split()
                if line[0] == b"PING":
                    writer.write(b"PONG\r\n")
                elif line[0] == b"MSG":
                    await h.step(reader.readexactly(int(line[-1]) + 2))
                    reply = line[3]
                    break
            forged = b'{"result": 1000}' + b" " * 100000
            writer.write(b"PUB %s %d\r\n%s\r\n" % (reply, len(forged), forged))
            await h.step(writer.drain())
            self.assertEqual(await h.step(call), 1)  # node_a alone: the reply was dropped
        finally:
            os.kill(b.proc.pid, signal.SIGCONT)
        ch.wait_log(a, r"incoming message\(s\) dropped: more than max_pending_bytes")


if __name__ == "__main__":
    h.main()
