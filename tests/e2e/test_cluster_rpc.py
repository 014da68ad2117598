"""RPC across wampscope nodes linked by a real nats-server (JetStream, ephemeral port, temp store),
with python3-autobahn clients on different nodes and mixed serializers: a call crossing nodes
(payload transcoded, caller disclosed), procedure_already_exists across nodes, a shared
roundrobin registration spanning nodes, progressive results, cancel, call timeouts, the callee
leaving, kill -9 of the callee's node (answered wamp.error.canceled within node_ttl + 3
heartbeats), a stopped nats-server (calls in flight answered wamp.error.network_failure, local
calls going on, cross-node calls again once it is back), payload passthru mode (ppt_*) across
nodes, and a shared "first" registration going by one clock while one node's wall clock is 5 s
behind (libfaketime). The harness (nats-server, configs, log waits) is cluster_harness.py's."""

import asyncio
import json
import re
import time
import types

from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import CallOptions, RegisterOptions

import cluster_harness as ch
import rt_harness as h
import test_payload_fidelity as fid


class TestClusterRpc(ch.ClusterCase):
    PREFIX = "r_"
    TMP_PREFIX = "wampscope-crpc-"

    async def call_when_known(self, caller, proc, *args, **kw):
        """Calls proc until the caller's node knows the registration (the table's delta crossed
        NATS); returns the first result."""
        deadline = time.monotonic() + 10
        while True:
            try:
                return await h.step(caller.call(proc, *args, **kw))
            except ApplicationError as e:
                if e.error != "wamp.error.no_such_procedure" or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)

    async def test_call_across_nodes(self):
        a, b, c = self.nodes("node_a", "node_b", "node_c")
        proc = h.uri(self, "add")
        callee = await self.session(a, "json")

        def add(x, y, blob=None, details=None):
            return {"sum": x + y, "blob": blob, "caller": details.caller,
                    "authrole": details.caller_authrole}

        await h.step(callee.register(add, proc, options=RegisterOptions(details_arg="details")))
        for node, ser in ((b, "msgpack"), (c, "cbor"), (b, "json")):
            caller = await self.session(node, ser)
            res = await self.call_when_known(caller, proc, 2, 3, blob=b"\x00\x01bin")
            self.assertEqual(res["sum"], 5)
            self.assertEqual(res["blob"], b"\x00\x01bin")
            self.assertIsNone(res["caller"])  # not disclosed unless asked
        # python autobahn has no disclose_me: a raw JSON caller on c asks for it (in a thread,
        # while the callee answers on this loop).
        def raw_call():
            raw = h.RawWs(c.host, c.port, c.path)
            try:
                welcome = raw.hello()
                raw.send_json([48, 1, {"disclose_me": True}, proc, [4, 5]])
                return welcome, raw.recv_wamp()
            finally:
                raw.close()

        welcome, result = await h.step(asyncio.get_running_loop().run_in_executor(None, raw_call))
        self.assertEqual(result[0], 50)
        self.assertEqual(result[3][0]["sum"], 9)
        self.assertEqual(result[3][0]["caller"], welcome[1])
        self.assertEqual(result[3][0]["authrole"], "anonymous")
        with self.assertRaises(ApplicationError) as cm:
            await h.step(caller.call(h.uri(self, "none")))
        self.assertEqual(cm.exception.error, "wamp.error.no_such_procedure")

    async def test_first_goes_by_one_clock(self):
        """node_a's wall clock is 5 s behind node_b's (libfaketime). A shared registration with
        invoke "first": node_b's callee registers, then node_a's. By node_a's clock its callee
        came first; each node puts the other's registration times on its own clock with the
        offset it measured from the heartbeats, so a CALL on either node goes to node_b's."""
        a, b = self.nodes("node_a", "node_b", envs={"node_a": ch.faked_clock("-5s")})
        await asyncio.sleep(1.5)  # a few heartbeats: each node measures the other's clock
        proc = h.uri(self, "first")
        first = RegisterOptions(invoke="first")
        sb = await self.session(b, "json")
        await h.step(sb.register(lambda: "b", proc, options=first))
        await asyncio.sleep(0.5)
        sa = await self.session(a, "json")
        await h.step(sa.register(lambda: "a", proc, options=first))
        for node in (a, b):
            caller = await self.session(node, "msgpack")
            deadline = time.monotonic() + 10
            # (Until the node knows both registrations: the table's deltas cross NATS.)
            while True:
                got = await self.call_when_known(caller, proc)
                if got == "b" or time.monotonic() > deadline:
                    break
                await asyncio.sleep(0.1)
            self.assertEqual(got, "b")
            for _ in range(5):
                self.assertEqual(await h.step(caller.call(proc)), "b")

    async def test_already_exists_across_nodes(self):
        a, b = self.nodes("node_a", "node_b")
        proc = h.uri(self, "one")
        sa, sb = await self.session(a, "json"), await self.session(b, "msgpack")
        reg = await h.step(sa.register(lambda: "a", proc))
        with self.assertRaises(ApplicationError) as cm:
            await h.step(sb.register(lambda: "b", proc))
        self.assertEqual(cm.exception.error, "wamp.error.procedure_already_exists")
        with self.assertRaises(ApplicationError) as cm:
            await h.step(sb.register(lambda: "b", proc,
                                     options=RegisterOptions(invoke="roundrobin")))
        self.assertEqual(cm.exception.error, "wamp.error.procedure_already_exists")
        await h.step(reg.unregister())
        # The URI is free on b once a's claim is deleted and its table delta crossed NATS
        # (documented: a REGISTER elsewhere in between still gets procedure_already_exists).
        deadline = time.monotonic() + 10
        while True:
            try:
                await h.step(sb.register(lambda: "b", proc))
                break
            except ApplicationError as e:
                if e.error != "wamp.error.procedure_already_exists" or time.monotonic() > deadline:
                    raise
                await asyncio.sleep(0.05)
        self.assertEqual(await self.call_when_known(sa, proc), "b")

    async def test_shared_roundrobin_across_nodes(self):
        a, b = self.nodes("node_a", "node_b")
        proc = h.uri(self, "rr")
        rr = RegisterOptions(invoke="roundrobin")
        for node, tag in ((a, "a1"), (a, "a2"), (b, "b1")):
            s = await self.session(node, "json")
            await h.step(s.register(lambda tag=tag: tag, proc, options=rr))
        caller = await self.session(b, "msgpack")
        # Wait until b knows a's two callees: then a cycle of three calls reaches all three.
        deadline = time.monotonic() + 10
        while True:
            got = [await h.step(caller.call(proc)) for _ in range(3)]
            if sorted(got) == ["a1", "a2", "b1"]:
                break
            self.assertLess(time.monotonic(), deadline, "b never used a's callees: %r" % got)
            await asyncio.sleep(0.1)
        got = [await h.step(caller.call(proc)) for _ in range(30)]
        self.assertEqual({t: got.count(t) for t in set(got)}, {"a1": 10, "a2": 10, "b1": 10})

    async def test_progress_cancel_timeout(self):
        a, b = self.nodes("node_a", "node_b")
        callee = await self.session(a, "msgpack")
        interrupted = asyncio.get_running_loop().create_future()

        async def count(n, details=None):
            for i in range(n):
                details.progress(i)
            return "done"

        async def slow():
            try:
                await asyncio.sleep(30)
            except asyncio.CancelledError:
                if not interrupted.done():
                    interrupted.set_result(True)
                return None

        await h.step(callee.register(count, h.uri(self, "count"),
                                     options=RegisterOptions(details_arg="details")))
        await h.step(callee.register(slow, h.uri(self, "slow")))
        caller = await self.session(b, "json")
        seen = []
        res = await self.call_when_known(caller, h.uri(self, "count"), 3,
                                         options=CallOptions(on_progress=seen.append))
        self.assertEqual(res, "done")
        self.assertEqual(seen, [0, 1, 2])
        # Cancel (autobahn sends CANCEL without a mode: killnowait): the caller is answered at
        # once and the callee on the other node is interrupted.
        fut = asyncio.ensure_future(caller.call(h.uri(self, "slow")))
        await asyncio.sleep(0.3)
        fut.cancel()
        with self.assertRaises((asyncio.CancelledError, ApplicationError)):
            await h.step(fut)
        await h.step(interrupted)
        # A call timeout is enforced by the caller's node.
        t0 = time.monotonic()
        with self.assertRaises(ApplicationError) as cm:
            await h.step(caller.call(h.uri(self, "slow"), options=CallOptions(timeout=300)))
        self.assertEqual(cm.exception.error, "wamp.error.timeout")
        self.assertLess(time.monotonic() - t0, 5)

    async def test_callee_leaves(self):
        a, b = self.nodes("node_a", "node_b")
        callee = await self.session(a, "json")
        await h.step(callee.register(h.hang_forever, h.uri(self, "hang")))
        caller = await self.session(b, "msgpack")
        await self.call_when_known(caller, "wamp.session.count")  # b is up
        fut = asyncio.ensure_future(self.call_when_known(caller, h.uri(self, "hang")))
        await asyncio.sleep(0.5)
        self.sessions.remove(callee)
        await h.step(callee.close())
        with self.assertRaises(ApplicationError) as cm:
            await h.step(fut)
        self.assertEqual(cm.exception.error, "wamp.error.canceled")

    async def test_callee_node_killed(self):
        a, b = self.nodes("node_a", "node_b")
        callee = await self.session(a, "json")
        await h.step(callee.register(h.hang_forever, h.uri(self, "hang")))
        caller = await self.session(b, "json")
        fut = asyncio.ensure_future(self.call_when_known(caller, h.uri(self, "hang")))
        await asyncio.sleep(0.5)
        self.assertFalse(fut.done())
        self.sessions.remove(callee)
        killed_at = time.monotonic()
        a.kill()
        with self.assertRaises(ApplicationError) as cm:
            await h.step(fut, ch.KILL_BOUND_S + 10)
        self.assertEqual(cm.exception.error, "wamp.error.canceled")
        self.assertLess(time.monotonic() - killed_at, ch.KILL_BOUND_S + ch.SLACK_S)
        # a's registration is gone from b's view: b may register it itself.
        await h.step(caller.register(lambda: "b", h.uri(self, "hang")))
        self.assertEqual(await h.step(caller.call(h.uri(self, "hang"))), "b")

    async def test_nats_stopped_and_restarted(self):
        a, b = self.nodes("node_a", "node_b")
        callee = await self.session(a, "json")
        await h.step(callee.register(h.hang_forever, h.uri(self, "hang")))
        await h.step(callee.register(lambda: "a", h.uri(self, "ping")))
        local = await self.session(b, "json")
        await h.step(local.register(lambda: "local", h.uri(self, "local")))
        caller = await self.session(b, "msgpack")
        self.assertEqual(await self.call_when_known(caller, h.uri(self, "ping")), "a")
        fut = asyncio.ensure_future(caller.call(h.uri(self, "hang")))
        await asyncio.sleep(0.3)
        self.nats.stop()
        with self.assertRaises(ApplicationError) as cm:
            await h.step(fut)
        self.assertEqual(cm.exception.error, "wamp.error.network_failure")
        # Local routing never stops.
        self.assertEqual(await h.step(caller.call(h.uri(self, "local"))), "local")
        self.nats = ch.NatsServer(self.tmp, port=self.nats.port)
        self.addCleanup(self.nats.stop)
        self.nats.start()
        for r, me in ((a, "node_a"), (b, "node_b")):
            ch.wait_log(r, re.escape("cluster %s: joined as node %s" % (self.name, me)), count=2)
        # The cluster has formed again once each node lists both again (the list shrank to the
        # node itself while the link was down). Until then a call routed by a registration that
        # came back before its node did is answered "the callee's node left the cluster".
        for r in (a, b):
            ch.wait_log(r, ch.nodes_line(self.name, "node_a", "node_b"), count=2)
        self.assertEqual(await self.call_when_known(caller, h.uri(self, "ping")), "a")

    async def test_payload_passthru_across_nodes(self):
        """A CALL's ppt_* options reach the callee on another node with the payload exact (cbor
        caller, msgpack callee), the YIELD's and the ERROR's ppt_* come back; an autobahn callee
        (it does not announce payload_passthru_mode) gets no INVOCATION and the caller
        wamp.error.feature_not_supported. The ppt clients are raw (test_payload_fidelity.py's:
        autobahn 22.7 speaks the older enc_algo dialect, not ppt_*)."""
        a, b = self.nodes("node_a", "node_b")
        proc, plain_proc = h.uri(self, "ppt"), h.uri(self, "plain")
        loop = asyncio.get_running_loop()
        invoked = []
        plain = await self.session(a, "json")
        await h.step(plain.register(lambda *args, **kw: invoked.append(args), plain_proc))
        callee = await h.step(loop.run_in_executor(None, fid.RawSession, a, "msgpack"))
        self.addCleanup(callee.close)
        callee.send([64, 1, {}, proc])
        self.assertEqual(callee.recv()[0], 65)
        reply = dict(fid.PPT, ppt_keyid="0x5678")
        got = []

        def serve():
            for fail in (False, True):
                inv = callee.recv()
                got.append(inv)
                if fail:
                    callee.send([8, 68, inv[1], reply, "com.example.e2e.failed", [b"\x01"]])
                else:
                    callee.send([70, inv[1], reply, [fid.BLOB[::-1]]])

        served = loop.run_in_executor(None, serve)
        caller = await h.step(loop.run_in_executor(None, fid.RawSession, b, "cbor"))
        self.addCleanup(caller.close)

        def call(req, uri):
            """CALL req of uri with ppt options until b knows the registration; the answer."""
            deadline = time.monotonic() + 10
            while True:
                caller.send([48, req, fid.PPT, uri, [fid.BLOB]])
                ans = caller.recv()
                if ans[:1] != [8] or ans[4] != "wamp.error.no_such_procedure" or \
                        time.monotonic() > deadline:
                    return ans
                time.sleep(0.05)

        res = await h.step(loop.run_in_executor(None, call, 2, proc))
        self.assertEqual(res, [50, 2, reply, [fid.BLOB[::-1]]])
        err = await h.step(loop.run_in_executor(None, call, 3, proc))
        self.assertEqual(err, [8, 48, 3, reply, "com.example.e2e.failed", [b"\x01"]])
        await h.step(served)
        self.assertEqual([inv[0] for inv in got], [68, 68])
        self.assertEqual(got[0][3], fid.PPT)
        self.assertEqual(got[0][4], [fid.BLOB])
        err = await h.step(loop.run_in_executor(None, call, 4, plain_proc))
        self.assertEqual(err[:5], [8, 48, 4, {}, "wamp.error.feature_not_supported"])
        self.assertEqual(invoked, [])

    async def test_two_nodes_share_one_port(self):
        """endpoint.shared (SO_REUSEPORT): two nodes listen on one port, the kernel spreads the
        connections over both, and a call made through the port reaches a callee registered
        through it whichever node each landed on. Each node has a second shared transport on
        another port (several shared sockets in one router), where the callee connects."""
        self.nats.start()
        port, port2 = ch.free_port(), ch.free_port()
        while port2 == port:
            port2 = ch.free_port()
        routers = []
        for node_id in ("node_a", "node_b"):
            path = ch.write_config(self.tmp, node_id, self.nats.port, self.name)
            with open(path, encoding="utf-8") as f:
                cfg = json.load(f)
            transports = cfg["workers"][0]["transports"]
            transports[0]["endpoint"]["shared"] = True
            transports.append({"type": "websocket", "endpoint": dict(
                transports[0]["endpoint"], port=port2)})
            with open(path, "w", encoding="utf-8") as f:
                json.dump(cfg, f)
            r = h.RouterProc(config=path, args=("--port", str(port)))
            self.addCleanup(r.cleanup)
            routers.append(r.start())
            self.assertIn(":%d/" % port, routers[-1].url)
            self.assertTrue(any(":%d/" % port2 in u for u in routers[-1].urls), routers[-1].urls)
        for r in routers:
            ch.wait_log(r, ch.nodes_line(self.name, "node_a", "node_b"))
        second = types.SimpleNamespace(url=routers[0].url.replace(":%d/" % port, ":%d/" % port2),
                                       host=routers[0].host, port=port2)
        callee = await self.session(second, "json")
        await h.step(callee.register(lambda: "answered", h.uri(self, "p")))
        callers = [await self.session(routers[0], "msgpack") for _ in range(16)]
        for c in callers:
            self.assertEqual(await self.call_when_known(c, h.uri(self, "p")), "answered")
        joined = [len(re.findall("joined realm realm1", r.stderr_text())) for r in routers]
        self.assertEqual(sum(joined), 17, joined)
        self.assertTrue(all(n > 0 for n in joined), "one node got every connection: %r" % joined)


if __name__ == "__main__":
    h.main()
