"""SIGTERM: every joined session gets GOODBYE(wamp.close.system_shutdown) and the router exits 0;
a second signal ends the grace period at once. (Under load: test_shutdown_load.py.)"""

import asyncio
import signal
import time

import rt_harness as h

MGMT = "crossbarfabriccenter."
NODE, WORKER = "e2e_node", "router1"  # configs/test-e2e.json


class TestShutdown(h.AsyncTestCase):
    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.router = h.RouterProc().start()
        self.addCleanup(self.router.cleanup)

    async def _sigterm_and_wait(self):
        sent = self.router.terminate()
        loop = asyncio.get_running_loop()
        # Wait in a thread: the clients' event loop must keep running to answer GOODBYE.
        return await loop.run_in_executor(None, self.router.wait_exit, sent)

    async def test_two_joined_clients_get_system_shutdown(self):
        a = await h.open_session(self.router, "realm1", "json")
        b = await h.open_session(self.router, "realm2", "msgpack")
        # Some state in the router at shutdown: a registration, a subscription, a pending call.
        await h.step(a.register(h.hang_forever, h.uri(self, "hang")))
        await h.step(b.subscribe(lambda *a: None, h.uri(self, "t")))
        c = await h.open_session(self.router, "realm1", "msgpack")
        pending = asyncio.ensure_future(c.call(h.uri(self, "hang")))
        await asyncio.sleep(0.1)

        elapsed = await self._sigterm_and_wait()
        for s in (a, b, c):
            details = await h.step(s.left)
            self.assertEqual(details.reason, "wamp.close.system_shutdown")
            await h.step(s.lost)
        # The outstanding call fails (autobahn errbacks it when the session leaves).
        with self.assertRaises(Exception):
            await h.step(pending)
        self.assertLess(elapsed, 3.0, "cooperative clients: no need to wait for the grace period")

    async def test_unresponsive_client_does_not_block_exit(self):
        good = await h.open_session(self.router, "realm1", "json")
        raw = h.RawWs(self.router.host, self.router.port, self.router.path)
        self.addCleanup(raw.close)
        self.assertEqual(raw.hello("realm3")[0], 2)  # WELCOME; this client never says GOODBYE
        elapsed = await self._sigterm_and_wait()
        self.assertEqual((await h.step(good.left)).reason, "wamp.close.system_shutdown")
        msg = raw.recv_wamp()
        self.assertEqual(msg[0], 6, msg)  # GOODBYE
        self.assertEqual(msg[2], "wamp.close.system_shutdown")
        self.assertTrue(raw.read_until_eof(5.0))
        self.assertLess(elapsed, 5.0)

    async def test_connected_but_not_joined(self):
        raw = h.RawWs(self.router.host, self.router.port, self.router.path)
        self.addCleanup(raw.close)
        self.assertTrue(raw.upgraded)
        t0 = time.monotonic()
        await self._sigterm_and_wait()
        self.assertTrue(raw.read_until_eof(5.0))
        self.assertLess(time.monotonic() - t0, 5.0)

    async def test_second_signal_stops_at_once(self):
        m = await h.open_session(self.router, "mgmt", "json")
        await h.step(m.call(MGMT + "start_trace", NODE, WORKER, "kept", {"persist": True}))
        raw = h.RawWs(self.router.host, self.router.port, self.router.path)
        self.addCleanup(raw.close)
        self.assertEqual(raw.hello("realm1")[0], 2)  # WELCOME; this client never says GOODBYE
        sent = self.router.terminate()
        msg = raw.recv_wamp()  # the first signal is being handled
        self.assertEqual(msg[0], 6, msg)
        self.router.proc.send_signal(signal.SIGINT)  # no waiting for the 2 s grace period now
        elapsed = await asyncio.get_running_loop().run_in_executor(None, self.router.wait_exit,
                                                                   sent)
        self.assertLess(elapsed, 1.5)
        self.assertTrue(raw.read_until_eof(5.0))
        err = self.router.stderr_text()
        self.assertIn("SIGINT received again: stopping now", err)
        self.assertIn("stopped", err.splitlines()[-1])
        # Even so, the persisted trace was written out and stopped: a restart (same working
        # directory, so the same ./wampscope-data) lists it with the session's GOODBYE.
        again = h.RouterProc(workdir=self.router.tmp, run=2)
        again.start()
        self.addCleanup(again.kill)
        m = await h.open_session(again, "mgmt", "json")
        meta = await h.step(m.call(MGMT + "get_trace", NODE, WORKER, "kept"))
        self.assertEqual((meta["status"], meta["stop_reason"]), ("stopped", "shutdown"))
        recs = await h.step(m.call(MGMT + "get_trace_data", NODE, WORKER, "kept", 0, None, 100))
        self.assertEqual([r["seq"] for r in recs], list(range(meta["next_seq"])))
        self.assertIn(("rx", "Hello"), [(r["direction"], r["msg_type"]) for r in recs])
        self.assertEqual(recs[-1]["msg_type"], "Goodbye")
        self.assertEqual(recs[-1]["msg"][2], "wamp.close.system_shutdown")
        await m.close()
        again.wait_exit(again.terminate())

    async def test_idle_router(self):
        elapsed = await self._sigterm_and_wait()
        self.assertLess(elapsed, 2.0)
        self.assertIn("listening on " + self.router.url, self.router.stdout_text())


if __name__ == "__main__":
    h.main()
