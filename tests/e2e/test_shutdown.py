"""SIGTERM: every joined session gets GOODBYE(wamp.close.system_shutdown) and the router exits 0."""

import asyncio
import time

import rt_harness as h


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

    async def test_idle_router(self):
        elapsed = await self._sigterm_and_wait()
        self.assertLess(elapsed, 2.0)
        self.assertIn("listening on " + self.router.url, self.router.stdout_text())


if __name__ == "__main__":
    h.main()
