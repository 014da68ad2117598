"""Graceful shutdown under load: SIGTERM while 1,000 sessions are busy.

The router (as CTest runs it: the ASan build) gets a persisted trace capturing everything and a
second, in-memory trace. 1,000 sessions on realm1 publish to each other's topics and call each
other's procedures without pause: 980 light sessions of wamp_load.py (WebSocket and RawSocket,
JSON and MessagePack) and 20 python3-autobahn sessions (WebSocket, both serializers). SIGTERM
comes while the traffic flows. Then:
- the router exits with status 0 (and a clean sanitizer report) within limits.shutdown_grace
  plus a small margin, measured from the signal;
- every session ended: each got GOODBYE wamp.close.system_shutdown, and every connection closed;
- after a restart on the same data directory the persisted trace is listed stopped with
  stop_reason "shutdown", records == next_seq - first_seq, and get_trace_data pages through the
  whole range with contiguous seqs and whole records; it holds at least the records get_trace
  counted just before SIGTERM, a tx PUBLISHED/RESULT record for every one the clients received
  (so the last moments before the signal are on disk), and the GOODBYE the router sent to each
  of the 1,000 sessions at shutdown.
The same with one light session in ten deaf to GOODBYE: the router waits for the grace period,
and no longer. And a subscriber that stopped reading: what is still queued for it when the grace
period ends is in the persisted trace as dropped "session_closed", GOODBYE included.
The figures (seconds from SIGTERM to exit, records flushed) are printed; RT_ROUTER_BIN pointing
at a Release build measures that build.
"""

import asyncio
import json
import os
import random
import re
import resource
import shutil
import sys
import tempfile
import time

from autobahn.wamp.types import PublishOptions

import rt_harness as h
import wamp_load

PREFIX = "crossbarfabriccenter."
NODE, WORKER = "e2e_node", "router1"  # configs/test-e2e.json
N_SESSIONS = 1000
N_AUTOBAHN = 20  # of the N_SESSIONS
GRACE_S = 2.0  # limits.shutdown_grace of configs/test-e2e.json
EXIT_MARGIN_S = 2.0  # process exit after the grace period: teardown, final flush, LSan
LOAD_SECONDS = 2.0  # traffic before SIGTERM (at ~100,000 records/s under ASan)
PAGE = 10000  # get_trace_data's largest page

# msg_type name -> WAMP message code, for the records' wholeness check.
CODES = {"Hello": 1, "Welcome": 2, "Abort": 3, "Goodbye": 6, "Error": 8, "Publish": 16,
         "Published": 17, "Subscribe": 32, "Subscribed": 33, "Unsubscribe": 34,
         "Unsubscribed": 35, "Event": 36, "Call": 48, "Cancel": 49, "Result": 50, "Register": 64,
         "Registered": 65, "Unregister": 66, "Unregistered": 67, "Invocation": 68,
         "Interrupt": 69, "Yield": 70}


def write_config(work):
    """configs/test-e2e.json plus a RawSocket listener (JSON and MessagePack)."""
    with open(os.path.join(os.environ["RT_SOURCE_DIR"], "configs/test-e2e.json"),
              encoding="utf-8") as f:
        cfg = json.load(f)
    worker = cfg["workers"][0]
    assert worker["wampscope"]["limits"]["shutdown_grace"] == GRACE_S * 1000
    worker["transports"].append(
        {"type": "rawsocket", "id": "rs_load",
         "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": 0},
         "serializers": ["json", "msgpack"]})
    path = os.path.join(work, "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


def raise_nofile(need):
    """Both ends of every connection live on this machine: the router and this process each
    need a descriptor per session. The router inherits the limit."""
    soft, hard = resource.getrlimit(resource.RLIMIT_NOFILE)
    if soft != resource.RLIM_INFINITY and soft < need:
        if hard != resource.RLIM_INFINITY and hard < need:
            raise AssertionError("RLIMIT_NOFILE hard limit %d < %d" % (hard, need))
        resource.setrlimit(resource.RLIMIT_NOFILE, (need, hard))


def err_lines(text):
    return [line for line in text.splitlines() if line.strip()]


class AutobahnPeer(h.Client):
    """A python3-autobahn session in the load: subscribes to its topic, registers its
    procedure (when its index says so), then publishes and calls like the light ones."""

    index = None
    load = None
    acks = 0
    results = 0

    async def busy(self, stop):
        load = self.load
        rng = random.Random(self.index)
        while not stop.is_set() and self.is_attached():
            try:
                await self.publish(load.topic(rng.randrange(load.n_peers)), self.index, "ab",
                                   options=PublishOptions(acknowledge=True))
                self.acks += 1
                await self.call(load.procedure(rng.choice(load.callees)), self.index)
                self.results += 1
            except Exception:
                return  # the router said GOODBYE: requests in flight fail


class TestShutdownUnderLoad(h.AsyncTestCase):
    async def asyncSetUp(self):
        await super().asyncSetUp()
        raise_nofile(4 * N_SESSIONS + 1024)
        self.work = tempfile.mkdtemp(prefix="wampscope-shutdown-load-")
        self.config = write_config(self.work)
        self.router = None
        self.load = None
        self.runs = 0

    async def asyncTearDown(self):
        try:
            if self.load:
                self.load.abort_all()
            if self.router and self.router.proc and self.router.proc.poll() is None:
                self.router.wait_exit(self.router.terminate())
        finally:
            if self.router:
                self.router.kill()
            if not os.environ.get("RT_E2E_KEEP"):
                shutil.rmtree(self.work, ignore_errors=True)

    def start_router(self):
        """A router whose working directory (so ./wampscope-data) is self.work across runs."""
        self.runs += 1
        r = h.RouterProc(self.config, workdir=self.work, run=self.runs)
        r._start()
        self.router = r
        return r

    async def call(self, m, proc, *args):
        return await h.step(m.call(PREFIX + proc, NODE, WORKER, *args), 60)

    async def test_sigterm_with_1000_busy_sessions(self):
        """Every client answers GOODBYE: the router exits as soon as all have gone."""
        await self.shutdown_under_load(deaf_every=0)

    async def test_sigterm_with_busy_and_deaf_sessions(self):
        """One light session in ten never answers GOODBYE: the grace period ends them."""
        await self.shutdown_under_load(deaf_every=10)

    async def test_sigterm_with_a_stalled_reader(self):
        """A subscriber that stopped reading holds queued EVENTs (and then its GOODBYE) when the
        grace period ends: each message never written is in the persisted trace as a tx record
        with dropped "session_closed", as many as the router's log line counts."""
        router = self.start_router()
        m = await h.open_session(router, "mgmt", "msgpack")
        await self.call(m, "start_trace", "disk", {"persist": True})
        topic = "com.wampscope.e2e.stalled.t"
        raw = h.RawWs(router.host, router.port, router.path)
        self.addCleanup(raw.close)
        welcome = raw.hello("realm1")
        self.assertEqual(welcome[0], 2, welcome)
        stalled = welcome[1]
        raw.send_json([32, 1, {}, topic])
        self.assertEqual(raw.recv_wamp()[0], 33)
        pub = await h.open_session(router, "realm1", "msgpack")
        blob = "s" * 10000
        for i in range(2000):  # 20 MB: far more than the socket buffers hold, not the queue cap
            await h.step(pub.publish(topic, i, blob, options=PublishOptions(acknowledge=True)))
        elapsed = await asyncio.get_running_loop().run_in_executor(
            None, router.wait_exit, router.terminate(), GRACE_S + EXIT_MARGIN_S)
        self.assertGreaterEqual(elapsed, GRACE_S - 0.2)  # it waited for the stalled reader
        found = re.findall(r"\[session %d\] (\d+) queued messages \(\d+ bytes\) not written"
                           % stalled, router.stderr_text())
        self.assertEqual(len(found), 1, router.stderr_text()[-3000:])
        unwritten = int(found[0])

        router = self.start_router()
        m = await h.open_session(router, "mgmt", "msgpack")
        meta = await self.call(m, "get_trace", "disk")
        self.assertEqual(meta["stop_reason"], "shutdown")
        mine = []
        nxt = 0
        while nxt < meta["next_seq"]:
            page = await self.call(m, "get_trace_data", "disk", nxt, None, 200)  # 10 kB each
            self.assertEqual(page[0]["seq"], nxt)
            nxt = page[-1]["seq"] + 1
            mine += [r for r in page if r["session_id"] == stalled and r["direction"] == "tx"]
        queued = [r for r in mine if "dropped" not in r]
        dropped = [r for r in mine if "dropped" in r]
        self.assertEqual(sum(1 for r in queued if r["msg_type"] == "Event"), 2000)
        self.assertEqual(queued[-1]["msg_type"], "Goodbye")
        self.assertEqual(len(dropped), unwritten)
        self.assertGreater(unwritten, 100)
        self.assertEqual({r["dropped"] for r in dropped}, {"session_closed"})
        self.assertEqual(dropped[-1]["msg_type"], "Goodbye")
        self.assertEqual({r["msg_type"] for r in dropped[:-1]}, {"Event"})
        # The EVENTs lost are the newest ones, in order.
        self.assertEqual([r["msg"][4][0] for r in dropped[:-1]],
                         list(range(2000 - (unwritten - 1), 2000)))
        await h.step(m.close())
        router.wait_exit(router.terminate())

    async def shutdown_under_load(self, deaf_every):
        router = self.start_router()
        m = await h.open_session(router, "mgmt", "msgpack")
        meta = await self.call(m, "start_trace", "disk", {"persist": True})
        self.assertIsInstance(meta["persistent_id"], str)
        await self.call(m, "start_trace", "memory", {"limit": 20000})

        rs = [u for u in router.urls if u.startswith("rs://")]
        self.assertEqual(len(rs), 1, router.urls)
        targets = [wamp_load.parse_target(u, ser) for u in (router.url, rs[0])
                   for ser in ("json", "msgpack")]
        n_light = N_SESSIONS - N_AUTOBAHN
        load = wamp_load.Load(targets, "realm1", n_light, extra_peers=N_AUTOBAHN,
                              deaf_every=deaf_every)
        self.load = load
        await load.connect()
        peers = []
        for k in range(N_AUTOBAHN):
            i = n_light + k
            s = await h.open_session(router, "realm1", ("json", "msgpack")[k % 2],
                                     cls=AutobahnPeer)
            s.index, s.load = i, load
            await h.step(s.subscribe(lambda *a: None, load.topic(i)))
            if i % wamp_load.CALLEE_EVERY == 0:
                await h.step(s.register(lambda *a, i=i: i, load.procedure(i)))
            peers.append(s)

        # Traffic: every session busy, until the router says GOODBYE.
        stop = asyncio.Event()
        load.start(window=2)
        tasks = [asyncio.ensure_future(s.busy(stop)) for s in peers]
        await asyncio.sleep(LOAD_SECONDS)
        self.assertEqual(load.stats.errors, 0, load.stats.error_uris)
        disk_before = await self.call(m, "get_trace", "disk")
        mem_before = await self.call(m, "get_trace", "memory")
        self.assertEqual(disk_before["status"], "running")
        self.assertEqual(mem_before["status"], "running")
        self.assertGreater(mem_before["records"], 0)
        self.assertGreater(load.stats.published, 0)
        self.assertGreater(load.stats.results, 0)
        self.assertGreater(sum(p.acks for p in peers), 0)

        # SIGTERM while the traffic flows (the clients' loop keeps running meanwhile).
        sent = router.terminate()
        sent_wall = time.time()
        elapsed = await asyncio.get_running_loop().run_in_executor(
            None, router.wait_exit, sent, GRACE_S + EXIT_MARGIN_S)
        stop.set()
        # Every connection ends with the process; each session got its GOODBYE first.
        await load.wait_ended(5.0)
        for p in peers:
            self.assertEqual((await h.step(p.left, 5)).reason, "wamp.close.system_shutdown")
            await h.step(p.lost, 5)
        await asyncio.gather(*tasks)
        reasons = {}
        for s in load.sessions:
            reasons[s.goodbye_reason] = reasons.get(s.goodbye_reason, 0) + 1
        self.assertEqual(reasons, {"wamp.close.system_shutdown": n_light})
        n_deaf = sum(1 for s in load.sessions if s.deaf)
        self.assertEqual(n_deaf, n_light // deaf_every if deaf_every else 0)
        if n_deaf:
            # The router waited for them until the grace period was over, and no longer.
            self.assertGreaterEqual(elapsed, GRACE_S - 0.2)
            self.assertIn("stopped", err_lines(router.stderr_text())[-1])
        published = load.stats.published + sum(p.acks for p in peers)
        results = load.stats.results + sum(p.results for p in peers)
        last_goodbye = max(s.goodbye_at for s in load.sessions) - sent
        err = router.stderr_text()
        self.assertIn("shutting down: %d session(s) to close" % (N_SESSIONS + 1), err)

        # Restart on the same data directory: the persisted trace is there, whole.
        t0 = time.monotonic()
        router = self.start_router()
        m = await h.open_session(router, "mgmt", "msgpack")
        self.assertIn("disk", await self.call(m, "list_traces"))
        self.assertNotIn("memory", await self.call(m, "list_traces"))
        meta = await self.call(m, "get_trace", "disk")
        self.assertEqual(meta["status"], "stopped")
        self.assertEqual(meta["stop_reason"], "shutdown")
        self.assertEqual(meta["first_seq"], 0)
        self.assertEqual(meta["records"], meta["next_seq"] - meta["first_seq"])
        self.assertGreaterEqual(meta["records"], disk_before["records"])

        counts = {}
        shutdown_goodbyes = set()
        nxt = meta["first_seq"]
        last_rx = 0.0
        while nxt < meta["next_seq"]:
            page = await self.call(m, "get_trace_data", "disk", nxt, None, PAGE)
            self.assertTrue(page, "no records from seq %d (next_seq %d)" % (nxt, meta["next_seq"]))
            for r in page:
                self.assertEqual(r["seq"], nxt)  # contiguous: no gap, no repeat
                nxt += 1
                msg = r["msg"]
                self.assertIsInstance(msg, list, r)  # whole: it decodes to a WAMP message
                self.assertEqual(msg[0], CODES[r["msg_type"]], r)
                self.assertNotIn("dropped", r)
                key = (r["direction"], r["msg_type"])
                counts[key] = counts.get(key, 0) + 1
                if key == ("tx", "Goodbye") and msg[2] == "wamp.close.system_shutdown":
                    self.assertEqual(r["realm"], "realm1")
                    self.assertNotIn(r["session_id"], shutdown_goodbyes)
                    shutdown_goodbyes.add(r["session_id"])
                if r["direction"] == "rx" and r["msg_type"] in ("Publish", "Call"):
                    last_rx = max(last_rx, r["ts"])
        self.assertEqual(nxt, meta["next_seq"])
        self.assertEqual(await self.call(m, "get_trace_data", "disk", nxt, None, 10), [])
        page_s = time.monotonic() - t0
        # Everything the clients were answered is on disk, up to the signal and beyond it.
        self.assertGreaterEqual(counts[("tx", "Published")], published)
        self.assertGreaterEqual(counts[("tx", "Result")], results)
        self.assertEqual(len(shutdown_goodbyes), N_SESSIONS)
        self.assertGreater(counts.get(("rx", "Goodbye"), 0), 0)
        self.assertLessEqual(counts.get(("rx", "Goodbye"), 0), N_SESSIONS - n_deaf)
        self.assertGreater(last_rx, sent_wall - 1.0)
        await h.step(m.close())
        router.wait_exit(router.terminate())

        print("\nshutdown under load: %d sessions (%d deaf), %.1f s of traffic (%d PUBLISHED, %d RESULT "
              "received); SIGTERM -> exit %.2f s (last GOODBYE read %.2f s after SIGTERM); "
              "records flushed %d (%d at SIGTERM); restart + paging %.1f s"
              % (N_SESSIONS, n_deaf, LOAD_SECONDS, published, results, elapsed, last_goodbye,
                 meta["records"], disk_before["records"], page_s), file=sys.stderr)


if __name__ == "__main__":
    h.main()
