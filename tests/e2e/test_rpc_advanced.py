"""Advanced Profile RPC through wampscope with python3-autobahn, for json and msgpack:
pattern-based and shared registrations, progressive call results, call canceling (the three
modes), router-enforced call timeouts and caller identification."""

import asyncio
import time

from autobahn.wamp import message
from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import CallOptions, RegisterOptions

import rt_harness as h
from test_tracing import Mgmt, e2e_config


def send_cancel(session, call_future, mode):
    """CANCEL with an explicit mode. autobahn-python 22.7's API cancels only through
    future.cancel(), which sends CANCEL without a mode; the message itself is autobahn's."""
    reqs = [r for r, cr in session._call_reqs.items() if cr.on_reply is call_future]
    assert len(reqs) == 1, "the call is not pending"
    session._transport.send(message.Cancel(reqs[0], mode=mode))


class AdvancedRpcBase:
    SER = None
    CALLER_SER = None  # None: same as SER

    async def _pair(self, realm="realm1"):
        callee = await self.session(self.SER, realm=realm)
        caller = await self.session(self.CALLER_SER or self.SER, realm=realm)
        return callee, caller

    async def test_dealer_features_announced(self):
        s = await self.session(self.SER)
        features = s._router_roles["dealer"]
        for name in ("pattern_based_registration", "shared_registration",
                     "progressive_call_results", "call_canceling", "call_timeout",
                     "caller_identification"):
            self.assertTrue(getattr(features, name), name)

    async def test_pattern_based_registration(self):
        base = h.uri(self, "p")
        callee, caller = await self._pair()
        seen = []

        def handler(name):
            def fn(*args, details=None):
                seen.append((name, details.procedure))
                return name
            return fn

        await h.step(callee.register(handler("exact"), base + ".obj.get",
                                     options=RegisterOptions(details_arg="details")))
        await h.step(callee.register(handler("short"), base + ".obj",
                                     options=RegisterOptions(match="prefix",
                                                             details_arg="details")))
        await h.step(callee.register(handler("long"), base + ".obj.sub",
                                     options=RegisterOptions(match="prefix",
                                                             details_arg="details")))
        await h.step(callee.register(handler("wild"), base + "..get",
                                     options=RegisterOptions(match="wildcard",
                                                             details_arg="details")))
        await h.step(callee.register(handler("wild2"), base + ".x..get",
                                     options=RegisterOptions(match="wildcard",
                                                             details_arg="details")))
        cases = [
            (".obj.get", "exact", base + ".obj.get"),  # exact beats everything
            (".obj.set", "short", base + ".obj.set"),
            (".obj.sub.get", "long", base + ".obj.sub.get"),  # longest prefix
            (".objx", "short", base + ".objx"),  # a prefix is a plain string prefix
            (".other.get", "wild", base + ".other.get"),
            (".x.y.get", "wild2", base + ".x.y.get"),  # the longer first portion wins
        ]
        for suffix, expect, _ in cases:
            self.assertEqual(await h.step(caller.call(base + suffix)), expect, suffix)
        # Details.procedure is the called URI (autobahn fills in the registered URI for exact ones).
        self.assertEqual(seen, [(e, p) for _, e, p in cases])
        with self.assertRaises(ApplicationError) as cm:
            await h.step(caller.call(base + ".other.put"))
        self.assertEqual(cm.exception.error, "wamp.error.no_such_procedure")

    async def test_roundrobin_over_three_callees(self):
        proc = h.uri(self, "rr")
        callees = [await self.session(self.SER) for _ in range(3)]
        caller = await self.session(self.SER)
        regs = []
        for i, c in enumerate(callees):
            regs.append(await h.step(c.register(lambda i=i: i, proc,
                                                options=RegisterOptions(invoke="roundrobin"))))
        self.assertEqual(len({r.id for r in regs}), 1)  # one shared registration
        got = [await h.step(caller.call(proc)) for _ in range(30)]
        self.assertEqual([got.count(i) for i in range(3)], [10, 10, 10])
        self.assertEqual(got, [0, 1, 2] * 10)
        # A different policy, or a single registration, is refused.
        other = await self.session(self.SER)
        for invoke in ("single", "random", "first", "last"):
            with self.assertRaises(ApplicationError) as cm:
                await h.step(other.register(lambda: None, proc,
                                            options=RegisterOptions(invoke=invoke)))
            self.assertEqual(cm.exception.error, "wamp.error.procedure_already_exists")
        # One callee leaving: the other two share the calls.
        await h.step(callees[1].close())
        got = [await h.step(caller.call(proc)) for _ in range(10)]
        self.assertEqual([got.count(i) for i in range(3)], [5, 0, 5])

    async def test_first_last_random(self):
        callees = [await self.session(self.SER) for _ in range(3)]
        caller = await self.session(self.SER)
        for invoke in ("first", "last", "random"):
            for i, c in enumerate(callees):
                await h.step(c.register(lambda i=i: i, h.uri(self, invoke),
                                        options=RegisterOptions(invoke=invoke)))
        first = [await h.step(caller.call(h.uri(self, "first"))) for _ in range(5)]
        last = [await h.step(caller.call(h.uri(self, "last"))) for _ in range(5)]
        rnd = [await h.step(caller.call(h.uri(self, "random"))) for _ in range(60)]
        self.assertEqual(first, [0] * 5)
        self.assertEqual(last, [2] * 5)
        self.assertEqual(set(rnd), {0, 1, 2})  # P(some callee never drawn) < 1e-9

    async def test_progressive_call_results(self):
        proc = h.uri(self, "countdown")
        callee, caller = await self._pair()

        async def countdown(n, details=None):
            for i in range(n, 0, -1):
                if details.progress:
                    details.progress(i, left=i)
                await asyncio.sleep(0.01)
            return "liftoff"

        await h.step(callee.register(countdown, proc,
                                     options=RegisterOptions(details_arg="details")))
        progress = []
        res = await h.step(caller.call(
            proc, 3, options=CallOptions(on_progress=lambda i, left: progress.append((i, left)))))
        self.assertEqual(res, "liftoff")
        self.assertEqual(progress, [(3, 3), (2, 2), (1, 1)])
        # Without on_progress (no receive_progress) only the final result arrives.
        self.assertEqual(await h.step(caller.call(proc, 2)), "liftoff")

    async def _hanging_callee(self, callee, proc):
        """Registers proc; returns (invoked, interrupted, release) futures/events."""
        loop = asyncio.get_running_loop()
        state = {"invoked": loop.create_future(), "interrupted": loop.create_future(),
                 "release": asyncio.Event(), "finished": loop.create_future()}

        async def hang():
            state["invoked"].set_result(True)
            try:
                await state["release"].wait()
            except asyncio.CancelledError:
                # autobahn cancels the handler's task on INTERRUPT. Answer with the error the
                # spec names (a bare CancelledError escapes txaio's callbacks on Python >= 3.8,
                # and the callee would never answer).
                state["interrupted"].set_result(True)
                raise ApplicationError(ApplicationError.CANCELED, "interrupted")
            state["finished"].set_result(True)
            return "too late"

        await h.step(callee.register(hang, proc))
        return state

    async def test_cancel_default_mode_killnowait(self):
        proc = h.uri(self, "hang")
        callee, caller = await self._pair()
        st = await self._hanging_callee(callee, proc)
        call = caller.call(proc)
        await h.step(st["invoked"])
        call.cancel()  # autobahn's own cancel: CANCEL without a mode
        await h.step(st["interrupted"])  # the callee got INTERRUPT
        with self.assertRaises(asyncio.CancelledError):
            await call
        # The router stays usable for both.
        await h.step(callee.register(lambda: "ok", proc + ".after"))
        self.assertEqual(await h.step(caller.call(proc + ".after")), "ok")

    async def test_cancel_kill_waits_for_callee(self):
        proc = h.uri(self, "hang")
        callee, caller = await self._pair()
        st = await self._hanging_callee(callee, proc)
        call = caller.call(proc)
        await h.step(st["invoked"])
        send_cancel(caller, call, "kill")
        await h.step(st["interrupted"])
        # The caller's ERROR is the callee's answer to the INTERRUPT.
        with self.assertRaises(ApplicationError) as cm:
            await h.step(call)
        self.assertEqual(cm.exception.error, "wamp.error.canceled")

    async def test_cancel_skip_leaves_callee_alone(self):
        proc = h.uri(self, "hang")
        callee, caller = await self._pair()
        st = await self._hanging_callee(callee, proc)
        call = caller.call(proc)
        await h.step(st["invoked"])
        send_cancel(caller, call, "skip")
        with self.assertRaises(ApplicationError) as cm:
            await h.step(call)
        self.assertEqual(cm.exception.error, "wamp.error.canceled")
        # No INTERRUPT: the callee finishes, and its late result is dropped by the router.
        st["release"].set()
        await h.step(st["finished"])
        self.assertFalse(st["interrupted"].done())
        await h.step(callee.register(lambda: "ok", proc + ".after"))
        self.assertEqual(await h.step(caller.call(proc + ".after")), "ok")

    async def test_cancel_killnowait(self):
        proc = h.uri(self, "hang")
        callee, caller = await self._pair()
        st = await self._hanging_callee(callee, proc)
        call = caller.call(proc)
        await h.step(st["invoked"])
        send_cancel(caller, call, "killnowait")
        with self.assertRaises(ApplicationError) as cm:
            await h.step(call)
        self.assertEqual(cm.exception.error, "wamp.error.canceled")
        await h.step(st["interrupted"])

    async def test_caller_leaving_interrupts_callee(self):
        proc = h.uri(self, "hang")
        callee, caller = await self._pair()
        st = await self._hanging_callee(callee, proc)
        call = caller.call(proc)
        await h.step(st["invoked"])
        caller.abort_transport()  # the caller drops its connection mid-call
        await h.step(st["interrupted"])  # INTERRUPT (killnowait) reached the callee
        with self.assertRaises(Exception):
            await h.step(call)
        other = await self.session(self.SER)
        await h.step(callee.register(lambda: "ok", proc + ".after"))
        self.assertEqual(await h.step(other.call(proc + ".after")), "ok")

    async def test_call_timeout(self):
        proc = h.uri(self, "hang")
        callee, caller = await self._pair()
        st = await self._hanging_callee(callee, proc)
        t0 = time.monotonic()
        with self.assertRaises(ApplicationError) as cm:
            await h.step(caller.call(proc, options=CallOptions(timeout=300)))
        elapsed = time.monotonic() - t0
        self.assertEqual(cm.exception.error, "wamp.error.timeout")
        self.assertGreaterEqual(elapsed, 0.3)
        self.assertLess(elapsed, 5.0)
        await h.step(st["interrupted"])  # the callee announced call_canceling: INTERRUPT
        # A call finishing in time is unaffected by its timeout.
        await h.step(callee.register(lambda: "fast", proc + ".fast"))
        self.assertEqual(await h.step(caller.call(proc + ".fast",
                                                  options=CallOptions(timeout=5000))), "fast")

    async def test_traced_call_chains(self):
        """Through the management API: every record of a progressive, a canceled and a timed-out
        call carries the call's correlation and URI; the message completing each is the last."""
        cfg = e2e_config()
        mgmt = Mgmt(type("P", (), {"s": await self.session("json", realm=cfg["mgmt_realm"])}),
                    cfg)
        base = h.uri(self, "t")
        callee, caller = await self._pair()

        async def countdown(n, details=None):
            for i in range(n, 0, -1):
                details.progress(i)
            return 0

        await h.step(callee.register(countdown, base + ".prog",
                                     options=RegisterOptions(details_arg="details")))
        st = await self._hanging_callee(callee, base + ".hang")
        st2 = await self._hanging_callee(callee, base + ".slow")
        await h.step(callee.register(lambda: None, base + ".sync"))
        await mgmt.start("dealer")
        await h.step(caller.call(base + ".prog", 2, options=CallOptions(on_progress=lambda i: i)))
        call = caller.call(base + ".hang")
        await h.step(st["invoked"])
        send_cancel(caller, call, "killnowait")
        with self.assertRaises(ApplicationError):
            await h.step(call)
        await h.step(st["interrupted"])
        with self.assertRaises(ApplicationError) as cm:
            await h.step(caller.call(base + ".slow", options=CallOptions(timeout=200)))
        self.assertEqual(cm.exception.error, "wamp.error.timeout")
        await h.step(st2["interrupted"])
        await h.step(caller.call(base + ".sync"))  # the callee's late ERRORs have arrived by now
        await mgmt.stop("dealer")
        records = await mgmt.data("dealer", 0, None, 1000)
        chains = {}
        for r in records:
            if r["uri"] and r["uri"].startswith(base):
                chains.setdefault(r["correlation"], []).append(r)

        def shape(g):
            return [(r["direction"], r["msg_type"], r["correlation_is_last"]) for r in g]

        self.maxDiff = None
        got = sorted((g[0]["uri"], shape(g)) for g in chains.values())
        self.assertEqual(got, sorted([
            (base + ".hang", [("rx", "Call", False), ("tx", "Invocation", False),
                              ("rx", "Cancel", False), ("tx", "Interrupt", False),
                              ("tx", "Error", True), ("rx", "Error", False)]),
            (base + ".slow", [("rx", "Call", False), ("tx", "Invocation", False),
                              ("tx", "Interrupt", False), ("tx", "Error", True),
                              ("rx", "Error", False)]),
            (base + ".prog", [("rx", "Call", False), ("tx", "Invocation", False),
                              ("rx", "Yield", False), ("tx", "Result", False),
                              ("rx", "Yield", False), ("tx", "Result", False),
                              ("rx", "Yield", False), ("tx", "Result", True)]),
            (base + ".sync", [("rx", "Call", False), ("tx", "Invocation", False),
                              ("rx", "Yield", False), ("tx", "Result", True)]),
        ]))
        for g in chains.values():
            self.assertTrue(g[0]["correlation_is_anchor"])
            self.assertEqual({r["uri"] for r in g}, {g[0]["uri"]})
        timeout_err = [g for g in chains.values() if len(g) == 5][0][3]
        self.assertEqual(timeout_err["msg"][4], "wamp.error.timeout")

    async def test_caller_identification_by_permission(self):
        callee, caller = await self._pair(realm="realm3")
        seen = []

        def who(details=None):
            seen.append((details.caller, details.caller_authid, details.caller_authrole))

        opts = RegisterOptions(details_arg="details")
        await h.step(callee.register(who, "com.wampscope.e2e.disclosed.%s" % self.SER,
                                     options=opts))
        await h.step(callee.register(who, h.uri(self, "hidden"), options=opts))
        await h.step(caller.call("com.wampscope.e2e.disclosed.%s" % self.SER))
        await h.step(caller.call(h.uri(self, "hidden")))
        self.assertEqual(seen, [(caller.session_id, caller._authid, "anonymous"),
                                (None, None, None)])


class TestAdvancedRpcJson(AdvancedRpcBase, h.RouterTestCase):
    SER = "json"


class TestAdvancedRpcMsgpack(AdvancedRpcBase, h.RouterTestCase):
    SER = "msgpack"


class TestAdvancedRpcJsonCalleeMsgpackCaller(AdvancedRpcBase, h.RouterTestCase):
    SER = "json"
    CALLER_SER = "msgpack"


if __name__ == "__main__":
    h.main()
