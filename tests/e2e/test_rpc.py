"""Remote procedure calls through wampscope with python3-autobahn, for json and msgpack."""

import asyncio
import random
import string

from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import CallResult

import rt_harness as h

ARGS, KWARGS = h.ARGS, h.KWARGS


def echo(*args, **kwargs):
    return CallResult(*args, **kwargs)


class RpcBase:
    SER = None
    CALLER_SER = None  # None: same as SER

    async def _pair(self):
        callee = await self.session(self.SER)
        caller = await self.session(self.CALLER_SER or self.SER)
        return callee, caller

    async def test_args_and_kwargs_round_trip(self):
        proc = h.uri(self, "echo")
        callee, caller = await self._pair()
        seen = []

        def record(*args, **kwargs):
            seen.append((list(args), kwargs))
            return echo(*args, **kwargs)

        await h.step(callee.register(record, proc))
        res = await h.step(caller.call(proc, *ARGS, **KWARGS))
        self.assertIsInstance(res, CallResult)
        self.assertEqual(list(res.results), ARGS)
        self.assertEqual(res.kwresults, KWARGS)
        self.assertEqual(seen, [(ARGS, KWARGS)])  # the INVOCATION carried the exact values too
        # A single positional result comes back as the bare value; no args at all as None.
        await h.step(callee.register(lambda x: x * 2, h.uri(self, "double")))
        self.assertEqual(await h.step(caller.call(h.uri(self, "double"), 21)), 42)
        await h.step(callee.register(lambda: None, h.uri(self, "nothing")))
        self.assertIsNone(await h.step(caller.call(h.uri(self, "nothing"))))

    async def test_binary_round_trip(self):
        proc = h.uri(self, "echo")
        callee, caller = await self._pair()
        await h.step(callee.register(echo, proc))
        blob = bytes(range(256)) * 3
        res = await h.step(caller.call(proc, blob, b"", k=b"\x00\x01"))
        self.assertEqual(list(res.results), [blob, b""])
        self.assertEqual(res.kwresults, {"k": b"\x00\x01"})

    async def test_application_error_reaches_caller_intact(self):
        proc = h.uri(self, "fail")
        err_uri = "com.wampscope.e2e.error.custom_failure"
        callee, caller = await self._pair()

        def fail(*args, **kwargs):
            raise ApplicationError(err_uri, "first", 2, {"three": [3]}, "ünïcode",
                                   reason="because", detail={"n": [1, 2]}, flag=False)

        await h.step(callee.register(fail, proc))
        with self.assertRaises(ApplicationError) as cm:
            await h.step(caller.call(proc, "x"))
        e = cm.exception
        self.assertEqual(e.error, err_uri)
        self.assertEqual(list(e.args), ["first", 2, {"three": [3]}, "ünïcode"])
        self.assertEqual(e.kwargs, {"reason": "because", "detail": {"n": [1, 2]}, "flag": False})
        # The callee stays registered and usable after an error.
        with self.assertRaises(ApplicationError):
            await h.step(caller.call(proc))

    async def test_no_such_procedure(self):
        callee, caller = await self._pair()
        with self.assertRaises(ApplicationError) as cm:
            await h.step(caller.call(h.uri(self, "missing")))
        self.assertEqual(cm.exception.error, "wamp.error.no_such_procedure")
        # After unregistering, the procedure is gone again.
        proc = h.uri(self, "temp")
        reg = await h.step(callee.register(lambda: "ok", proc))
        self.assertEqual(await h.step(caller.call(proc)), "ok")
        await h.step(reg.unregister())
        with self.assertRaises(ApplicationError) as cm:
            await h.step(caller.call(proc))
        self.assertEqual(cm.exception.error, "wamp.error.no_such_procedure")

    async def test_one_mib_round_trip(self):
        proc = h.uri(self, "echo")
        callee, caller = await self._pair()
        await h.step(callee.register(echo, proc))
        payload = "".join(random.choices(string.ascii_letters + string.digits, k=1 << 20))
        res = await h.step(caller.call(proc, payload, size=1 << 20))
        self.assertEqual(len(res.results[0]), 1 << 20)
        self.assertEqual(res.results[0], payload)
        self.assertEqual(res.kwresults, {"size": 1 << 20})

    async def test_concurrent_calls_are_matched(self):
        proc = h.uri(self, "slow_echo")
        callee, caller = await self._pair()

        async def slow_echo(i):
            await asyncio.sleep(random.random() * 0.05)
            return i

        await h.step(callee.register(slow_echo, proc))
        results = await h.step(asyncio.gather(*[caller.call(proc, i) for i in range(50)]))
        self.assertEqual(results, list(range(50)))

    async def _callee_disconnects_mid_call(self, how):
        proc = h.uri(self, "hang")
        callee, caller = await self._pair()
        invoked = asyncio.get_running_loop().create_future()

        async def hang():
            invoked.set_result(True)
            await h.hang_forever()

        await h.step(callee.register(hang, proc))
        call = asyncio.ensure_future(caller.call(proc))
        await h.step(invoked)
        if how == "abort":
            callee.abort_transport()
        else:
            await h.step(callee.close())
        with self.assertRaises(ApplicationError) as cm:
            await h.step(call)
        self.assertEqual(cm.exception.error, "wamp.error.canceled")
        # The registration went with the callee.
        with self.assertRaises(ApplicationError) as cm:
            await h.step(caller.call(proc))
        self.assertEqual(cm.exception.error, "wamp.error.no_such_procedure")

    async def test_callee_connection_drop_mid_call(self):
        await self._callee_disconnects_mid_call("abort")

    async def test_callee_goodbye_mid_call(self):
        await self._callee_disconnects_mid_call("goodbye")


class TestRpcJson(RpcBase, h.RouterTestCase):
    SER = "json"


class TestRpcMsgpack(RpcBase, h.RouterTestCase):
    SER = "msgpack"


class TestRpcJsonCalleeMsgpackCaller(RpcBase, h.RouterTestCase):
    SER = "json"
    CALLER_SER = "msgpack"


class TestRpcMsgpackCalleeJsonCaller(RpcBase, h.RouterTestCase):
    SER = "msgpack"
    CALLER_SER = "json"


if __name__ == "__main__":
    h.main()
