"""SIGTERM: every joined session gets GOODBYE(wamp.close.system_shutdown) and the router exits 0;
a second signal ends the grace period at once. (Under load: test_shutdown_load.py.)

What "at once" means is told apart from "after the grace period" by the grace period itself:
the tests of an exit that must not wait run the router with a grace period of LONG_GRACE_S and
allow half of it, so that a slow machine (sanitizers, two test jobs on two cores) cannot make them
fail, and a router that waits does. Only the test of a client that never answers waits the grace
period out, the test configuration's 2 s."""

import asyncio
import json
import os
import shutil
import signal
import tempfile
import time

import rt_harness as h

MGMT = "crossbarfabriccenter."
NODE, WORKER = "e2e_node", "router1"  # configs/test-e2e.json
LONG_GRACE_S = 30
IN_TIME_S = LONG_GRACE_S / 2


def long_grace_config(tmp):
    """configs/test-e2e.json with limits.shutdown_grace LONG_GRACE_S, written into tmp."""
    src = os.path.join(os.environ["RT_SOURCE_DIR"], "configs/test-e2e.json")
    with open(src) as f:
        cfg = json.load(f)
    cfg["workers"][0]["wampscope"]["limits"]["shutdown_grace"] = LONG_GRACE_S * 1000
    path = os.path.join(tmp, "long-grace.json")
    with open(path, "w") as f:
        json.dump(cfg, f)
    return path


class TestShutdown(h.AsyncTestCase):
    # The tests that wait the grace period out (test_unresponsive_client_does_not_block_exit).
    SHORT_GRACE = ("test_unresponsive_client_does_not_block_exit",)

    async def asyncSetUp(self):
        await super().asyncSetUp()
        config = "configs/test-e2e.json"
        if self._testMethodName not in self.SHORT_GRACE:
            cfg_dir = tempfile.mkdtemp(prefix="wampscope-e2e-cfg-")
            self.addCleanup(shutil.rmtree, cfg_dir, True)
            config = long_grace_config(cfg_dir)
        self.router = h.RouterProc(config=config).start()
        self.addCleanup(self.router.cleanup)

    async def _sigterm_and_wait(self):
        sent = self.router.terminate()
        loop = asyncio.get_running_loop()
        # Wait in a thread: the clients' event loop must keep running to answer GOODBYE.
        return await loop.run_in_executor(None, self.router.wait_exit, sent, IN_TIME_S)

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
        self.assertLess(elapsed, IN_TIME_S,
                        "cooperative clients: no need to wait for the grace period")

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
        # It waited the grace period (2 s) for the client that never answers, and no longer.
        self.assertGreaterEqual(elapsed, 1.9)
        self.assertLess(elapsed, IN_TIME_S)

    async def test_connected_but_not_joined(self):
        raw = h.RawWs(self.router.host, self.router.port, self.router.path)
        self.addCleanup(raw.close)
        self.assertTrue(raw.upgraded)
        t0 = time.monotonic()
        await self._sigterm_and_wait()
        self.assertTrue(raw.read_until_eof(IN_TIME_S))
        self.assertLess(time.monotonic() - t0, IN_TIME_S)

    async def test_second_signal_stops_at_once(self):
        m = await h.open_session(self.router, "mgmt", "json")
        await h.step(m.call(MGMT + "start_trace", NODE, WORKER, "kept", {"persist": True}))
        raw = h.RawWs(self.router.host, self.router.port, self.router.path)
        self.addCleanup(raw.close)
        self.assertEqual(raw.hello("realm1")[0], 2)  # WELCOME; this client never says GOODBYE
        sent = self.router.terminate()
        msg = raw.recv_wamp()  # the first signal is being handled
        self.assertEqual(msg[0], 6, msg)
        self.router.proc.send_signal(signal.SIGINT)  # no waiting for the grace period now
        elapsed = await asyncio.get_running_loop().run_in_executor(None, self.router.wait_exit,
                                                                   sent, IN_TIME_S)
        self.assertLess(elapsed, IN_TIME_S)
        self.assertTrue(raw.read_until_eof(5.0))
        err = self.router.stderr_text()
        self.assertIn("SIGINT received again: stopping now", err)
        self.assertIn("stopped", err.splitlines()[-1])
        # Even so, the persisted trace was written out and stopped: a restart (same working
        # directory, so the same ./wampscope-data) lists it with the session's GOODBYE.
        again = h.RouterProc(config=self.router.config, workdir=self.router.tmp, run=2)
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
        again.wait_exit(again.terminate(), IN_TIME_S)

    async def test_idle_router(self):
        elapsed = await self._sigterm_and_wait()
        self.assertLess(elapsed, IN_TIME_S)
        self.assertIn("listening on " + self.router.url, self.router.stdout_text())


if __name__ == "__main__":
    h.main()
