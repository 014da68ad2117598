"""Persisted traces (trace option persist: true) against the real router: restarts and failures.

Each test runs the router in one working directory across restarts, so the default data
directory (./wampscope-data) is the same for every run. Traffic comes from python3-autobahn
clients; the management API is called by an autobahn session on the management realm.
- SIGTERM restart: the trace is listed again as stopped / "shutdown", with its options, and
  paging with get_trace_data returns exactly the records read before the restart.
- kill -9 in the middle of traffic: stopped / "crash"; every record that was flushed before the
  kill (read back before the kill) is there again, identical, with gap-free seqs; a torn tail
  made by hand (truncation in the middle of a record, garbage appended) is cut, never returned.
- delete_trace removes the trace's directory; the id of a reloaded trace stays taken until then.
- io_error: a file-size limit (RLIMIT_FSIZE, like a full disk) stops the persisted trace with
  stop_reason "io_error" and one log line, while an in-memory trace and routing go on.
- Rotation and retention by bytes: small segments (a config written by the test) are deleted
  oldest first, and get_trace_data starts at the oldest record still held (first_seq).
"""

import asyncio
import glob
import json
import os
import resource
import shutil
import tempfile
import time
import unittest

from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import PublishOptions

import rt_harness as h

PREFIX = "crossbarfabriccenter."
NODE, WORKER = "e2e_node", "router1"  # configs/test-e2e.json


def write_config(tmp, tracing_extra):
    """configs/test-e2e.json with extra wampscope.tracing keys, written into tmp."""
    with open(os.path.join(os.environ["RT_SOURCE_DIR"], "configs/test-e2e.json"),
              encoding="utf-8") as f:
        cfg = json.load(f)
    cfg["workers"][0]["wampscope"]["tracing"].update(tracing_extra)
    path = os.path.join(tmp, "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


class PersistTestCase(h.AsyncTestCase):
    """Runs routers in one working directory (self.work) that survives restarts."""

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.work = tempfile.mkdtemp(prefix="wampscope-persist-")
        self.router = None
        self.sessions = []
        self.config = "configs/test-e2e.json"

    async def asyncTearDown(self):
        try:
            await self.close_sessions()
            if self.router and self.router.proc and self.router.proc.poll() is None:
                self.router.wait_exit(self.router.terminate())
        finally:
            if self.router:
                self.router.kill()
            if not os.environ.get("RT_E2E_KEEP"):
                shutil.rmtree(self.work, ignore_errors=True)

    def start_router(self, fsize_limit=None):
        r = h.RouterProc(self.config, workdir=self.work)
        old = resource.getrlimit(resource.RLIMIT_FSIZE)
        if fsize_limit:
            # Inherited by the router (fork); restored here at once.
            resource.setrlimit(resource.RLIMIT_FSIZE, (fsize_limit, old[1]))
        try:
            r._start()
        finally:
            resource.setrlimit(resource.RLIMIT_FSIZE, old)
        self.router = r
        return r

    async def close_sessions(self):
        for s in reversed(self.sessions):
            try:
                await s.close()
            except Exception:
                s.abort_transport()
        self.sessions = []

    async def stop_router(self):
        """SIGTERM: clients get GOODBYE, the router exits 0 (checked), the files stay."""
        await self.close_sessions()
        self.router.wait_exit(self.router.terminate())

    async def kill_router(self):
        for s in self.sessions:
            s.abort_transport()
        self.sessions = []
        self.router.kill()  # SIGKILL

    async def session(self, realm="realm1", ser="json"):
        s = await h.open_session(self.router, realm, ser)
        self.sessions.append(s)
        return s

    async def mgmt(self):
        return await self.session("mgmt", "msgpack")

    async def call(self, m, proc, *args):
        return await h.step(m.call(PREFIX + proc, NODE, WORKER, *args))

    async def all_records(self, m, trace_id, limit=100):
        """Pages through the whole trace as mgmt/README.md says a client does."""
        out, nxt = [], 0
        while True:
            page = await self.call(m, "get_trace_data", trace_id, nxt, None, limit)
            if not page:
                return out
            self.assertLessEqual(len(page), limit)
            out.extend(page)
            nxt = page[-1]["seq"] + 1

    def assert_gap_free(self, records, first=0):
        self.assertEqual([r["seq"] for r in records], list(range(first, first + len(records))))

    def trace_dir(self, persistent_id):
        return os.path.join(self.work, "wampscope-data", persistent_id)

    async def traffic(self, n, topic, payload=b"x" * 100):
        """n acknowledged publications seen by a subscriber (so tx EVENT records exist too)."""
        pub = await self.session(ser="msgpack")
        sub = await self.session()
        got = []
        await h.step(sub.subscribe(lambda *a: got.append(a), topic))
        for i in range(n):
            await h.step(pub.publish(topic, i, payload.decode(),
                                     options=PublishOptions(acknowledge=True)))
        deadline = time.monotonic() + 10
        while len(got) < n and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self.assertEqual(len(got), n)

    # --- tests -------------------------------------------------------------------------------

    async def test_sigterm_restart_lists_shutdown_and_pages_everything(self):
        self.start_router()
        m = await self.mgmt()
        meta = await self.call(m, "start_trace", "keep", {"persist": True, "limit": 50})
        pid = meta["persistent_id"]
        self.assertIsInstance(pid, str)
        self.assertTrue(meta["options"]["persist"])
        self.assertTrue(os.path.isfile(os.path.join(self.trace_dir(pid), "meta.json")))
        await self.traffic(200, "com.persist.sigterm")
        before = await self.all_records(m, "keep", limit=77)
        self.assertGreaterEqual(len(before), 600)  # PUBLISH, PUBLISHED and EVENT per message
        self.assert_gap_free(before)
        meta = await self.call(m, "get_trace", "keep")
        self.assertEqual(meta["records"], len(before))  # all in the files ("limit" is for memory)
        await self.stop_router()

        self.start_router()
        m = await self.mgmt()
        self.assertIn("keep", await self.call(m, "list_traces"))
        meta = await self.call(m, "get_trace", "keep")
        self.assertEqual(meta["status"], "stopped")
        self.assertEqual(meta["stop_reason"], "shutdown")
        self.assertEqual(meta["persistent_id"], pid)
        self.assertEqual(meta["options"]["limit"], 50)
        self.assertTrue(meta["options"]["persist"])
        self.assertIsNotNone(meta["ended"])
        self.assertEqual(meta["first_seq"], 0)
        self.assertGreaterEqual(meta["next_seq"], len(before))
        after = await self.all_records(m, "keep", limit=100)
        self.assert_gap_free(after)
        self.assertEqual(after[:len(before)], before)
        self.assertIn('persisted trace "keep" reloaded', self.router.stderr_text())
        # The id stays taken; delete_trace removes the files.
        with self.assertRaises(ApplicationError) as e:
            await self.call(m, "start_trace", "keep", None)
        self.assertEqual(e.exception.error, "crossbar.error.already_exists")
        self.assertIsNone(await self.call(m, "delete_trace", "keep"))
        self.assertFalse(os.path.exists(self.trace_dir(pid)))
        self.assertNotIn("keep", await self.call(m, "list_traces"))
        await self.stop_router()
        self.start_router()
        m = await self.mgmt()
        self.assertNotIn("keep", await self.call(m, "list_traces"))

    async def test_kill9_during_traffic_crash_and_torn_tail(self):
        self.start_router()
        m = await self.mgmt()
        meta = await self.call(m, "start_trace", "crashy", {"persist": True, "limit": 100})
        pid = meta["persistent_id"]
        # Heavy traffic in the background while the trace is read and the router killed.
        pub = await self.session(ser="msgpack")
        sub = await self.session()
        await h.step(sub.subscribe(lambda *a: None, "com.persist.kill"))
        stop = asyncio.Event()

        async def pump():
            i = 0
            while not stop.is_set():
                try:
                    pub.publish("com.persist.kill", i, "y" * 200)
                except Exception:
                    return
                i += 1
                if i % 50 == 0:
                    await asyncio.sleep(0)

        task = asyncio.ensure_future(pump())
        # Records captured so far (at least 500); the router writes them out within a tick.
        deadline = time.monotonic() + 20
        flushed = 0
        while flushed <= 500 and time.monotonic() < deadline:
            await asyncio.sleep(0.2)
            flushed = (await self.call(m, "get_trace", "crashy"))["next_seq"]
        before = []
        nxt = 0
        while nxt < flushed:
            page = await self.call(m, "get_trace_data", "crashy", nxt, flushed - 1, 1000)
            before.extend(page)
            nxt = page[-1]["seq"] + 1
        self.assertGreater(flushed, 500)
        await asyncio.sleep(0.5)  # > several ticks: everything above is written
        await self.kill_router()  # in the middle of the traffic
        stop.set()
        task.cancel()

        self.start_router()
        m = await self.mgmt()
        meta = await self.call(m, "get_trace", "crashy")
        self.assertEqual(meta["status"], "stopped")
        self.assertEqual(meta["stop_reason"], "crash")
        self.assertGreaterEqual(meta["next_seq"], flushed)
        after = await self.all_records(m, "crashy", limit=1000)
        self.assert_gap_free(after)
        self.assertEqual(after[:flushed], before)
        total = len(after)
        await self.stop_router()

        # A torn last frame (truncated in its middle), then garbage after the last one. The frame
        # is a record, or a pack of a block's records written together (at most 256 of them:
        # tracing/PERSIST_FORMAT.md), cut whole.
        segs = sorted(glob.glob(os.path.join(self.trace_dir(pid), "*.seg")))
        self.assertTrue(segs)
        last = segs[-1]
        os.truncate(last, os.path.getsize(last) - 5)
        self.start_router()
        m = await self.mgmt()
        cut = await self.all_records(m, "crashy", limit=1000)
        self.assertLess(len(cut), total)
        self.assertGreaterEqual(len(cut), total - 256)
        self.assertEqual(cut, after[:len(cut)])
        self.assertIn("torn or corrupt", self.router.stderr_text())
        await self.stop_router()
        with open(last, "ab") as f:
            f.write(b"\x40\x00\x00\x00\xde\xad\xbe\xef" + b"garbage" * 20)
        self.start_router()
        m = await self.mgmt()
        again = await self.all_records(m, "crashy", limit=333)
        self.assertEqual(again, cut)
        self.assertEqual((await self.call(m, "get_trace", "crashy"))["stop_reason"], "crash")

    async def test_io_error_stops_only_that_trace(self):
        # 1 MiB per file: logs and meta.json stay far below; the segment reaches it.
        self.config = write_config(self.work, {"segment_bytes": 64 * 1024 * 1024})
        self.start_router(fsize_limit=1024 * 1024)
        m = await self.mgmt()
        await self.call(m, "start_trace", "disk", {"persist": True, "limit": 1000})
        await self.call(m, "start_trace", "memory", {"limit": 1000})
        pub = await self.session(ser="msgpack")
        sub = await self.session()
        got = []
        await h.step(sub.subscribe(lambda *a: got.append(a), "com.persist.io"))
        big = "z" * 4000
        sent = 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for _ in range(50):
                await h.step(pub.publish("com.persist.io", sent, big,
                                         options=PublishOptions(acknowledge=True)))
                sent += 1
            if (await self.call(m, "get_trace", "disk"))["status"] == "stopped":
                break
        meta = await self.call(m, "get_trace", "disk")
        self.assertEqual(meta["status"], "stopped")
        self.assertEqual(meta["stop_reason"], "io_error")
        # Routing goes on, and so does the in-memory trace.
        for i in range(20):
            await h.step(pub.publish("com.persist.io", sent + i, "after",
                                     options=PublishOptions(acknowledge=True)))
        deadline = time.monotonic() + 10
        while len(got) < sent + 20 and time.monotonic() < deadline:
            await asyncio.sleep(0.01)
        self.assertEqual(len(got), sent + 20)
        mem = await self.call(m, "get_trace", "memory")
        self.assertEqual(mem["status"], "running")
        tail = await self.call(m, "get_trace_data", "memory", max(0, mem["next_seq"] - 100), None,
                               100)
        self.assertTrue(any(r["msg_type"] == "Publish" and r["msg"][4][1] == "after"
                            for r in tail))
        # What was written before the error is readable.
        recs = await self.call(m, "get_trace_data", "disk", 0, None, 10)
        self.assert_gap_free(recs)
        await asyncio.sleep(0.3)  # the tick logs it
        err = self.router.stderr_text()
        self.assertEqual(err.count('trace "disk" stopped (io_error)'), 1, err[-3000:])
        self.assertIn("too large", err)

    async def all_items(self, m, trace_id, limit=100):
        """Pages through the whole trace: records and gap items, as a client pages."""
        return await self.all_records(m, trace_id, limit)

    def assert_accounted(self, meta, items):
        """Every seq from first_seq to next_seq - 1 is a record returned or in one gap."""
        recs = [r for r in items if r.get("kind") != "gap"]
        gaps = [r for r in items if r.get("kind") == "gap"]
        self.assertEqual(meta["records"], len(recs))
        self.assertEqual([{"from_seq": g["from_seq"], "to_seq": g["to_seq"],
                           "reason": g["reason"]} for g in gaps], meta["gaps"])
        seqs = [r["seq"] for r in recs]
        self.assertEqual(seqs, sorted(set(seqs)))
        covered = set(seqs)
        for g in gaps:
            span = set(range(g["from_seq"], g["to_seq"] + 1))
            self.assertFalse(span & covered)
            covered |= span
        self.assertEqual(covered, set(range(meta["first_seq"], meta["next_seq"])))
        self.assertEqual(meta["dropped"], meta["next_seq"] - meta["records"])

    async def test_damaged_segments_are_gaps(self):
        # Issue 23, 1: bytes flipped in the middle of a stopped trace's segment, a middle segment
        # deleted, a segment truncated: get_trace counted records get_trace_data did not return,
        # paging jumped over the lost seqs, the log said nothing (or named the .idx). Now each is
        # a gap: in the metadata (counted in dropped), in the pages, and in the log, naming the
        # damaged .seg.
        self.config = write_config(self.work, {"segment_bytes": 16384})
        self.start_router()
        m = await self.mgmt()
        meta = await self.call(m, "start_trace", "dmg", {"persist": True})
        pid = meta["persistent_id"]
        await self.traffic(300, "com.persist.damage", payload=b"d" * 60)
        await self.call(m, "stop_trace", "dmg")
        clean = await self.all_records(m, "dmg", limit=500)
        self.assert_gap_free(clean)
        await self.stop_router()
        segs = sorted(glob.glob(os.path.join(self.trace_dir(pid), "*.seg")))
        self.assertGreaterEqual(len(segs), 5)
        # Flip bytes in the middle of the second segment, delete the fourth, truncate the last.
        with open(segs[1], "r+b") as f:
            size = os.path.getsize(segs[1])
            f.seek(size // 2)
            chunk = f.read(16)
            f.seek(size // 2)
            f.write(bytes(b ^ 0x5a for b in chunk))
        os.remove(segs[3])
        os.truncate(segs[-1], os.path.getsize(segs[-1]) * 2 // 3)
        self.start_router()
        m = await self.mgmt()
        meta = await self.call(m, "get_trace", "dmg")
        self.assertEqual(meta["next_seq"], len(clean))  # sealed at stop: the end is known
        items = await self.all_items(m, "dmg", limit=97)
        self.assert_accounted(meta, items)
        reasons = sorted({g["reason"] for g in meta["gaps"]})
        self.assertIn("corrupt", reasons)
        self.assertIn("missing", reasons)
        self.assertGreater(meta["dropped"], 0)
        # What is returned is what was there before.
        by_seq = {r["seq"]: r for r in clean}
        for r in items:
            if r.get("kind") != "gap":
                self.assertEqual(r, by_seq[r["seq"]])
        err = self.router.stderr_text()
        self.assertIn(os.path.basename(segs[1]), err)
        self.assertIn("are a gap (corrupt)", err)
        self.assertIn("are a gap (missing)", err)
        self.assertNotIn(".idx", err)

    async def test_io_error_restart_returns_what_was_served(self):
        # Issue 23, 2: on a full disk the trace stopped with io_error and served records still in
        # its write buffer; after a restart they were gone and nothing said so. Now only records
        # in the files are served, the rest is an io_error gap, durable_to_seq says where the
        # files end, and a restart finds exactly that.
        self.config = write_config(self.work, {"segment_bytes": 64 * 1024 * 1024})
        self.start_router(fsize_limit=512 * 1024)
        m = await self.mgmt()
        await self.call(m, "start_trace", "full", {"persist": True})
        pub = await self.session(ser="msgpack")
        big = "q" * 3000
        sent = 0
        deadline = time.monotonic() + 60
        while time.monotonic() < deadline:
            for _ in range(40):
                pub.publish("com.persist.full", sent, big)
                sent += 1
            await asyncio.sleep(0)
            if (await self.call(m, "get_trace", "full"))["status"] == "stopped":
                break
        await asyncio.sleep(0.3)
        meta = await self.call(m, "get_trace", "full")
        self.assertEqual(meta["stop_reason"], "io_error")
        items = await self.all_items(m, "full", limit=1000)
        self.assert_accounted(meta, items)
        self.assertEqual(len(meta["gaps"]), 1)
        gap = meta["gaps"][0]
        self.assertEqual(gap["reason"], "io_error")
        self.assertEqual(gap["to_seq"], meta["next_seq"] - 1)
        self.assertEqual(meta["durable_to_seq"], gap["from_seq"] - 1)
        served = [r for r in items if r.get("kind") != "gap"]
        self.assertEqual(served[-1]["seq"], meta["durable_to_seq"])
        await self.stop_router()

        self.start_router()
        m = await self.mgmt()
        after = await self.call(m, "get_trace", "full")
        self.assertEqual(after["stop_reason"], "io_error")
        for key in ("records", "next_seq", "gaps", "dropped", "durable_to_seq"):
            self.assertEqual(after[key], meta[key], key)
        again = await self.all_items(m, "full", limit=1000)
        self.assertEqual(again, items)
        self.assertIn("are a gap (io_error)", self.router.stderr_text())

    async def test_second_router_on_the_data_dir_refused(self):
        # Issue 23, 3: a second router on the same data_dir listed the first one's running trace
        # as stopped / "crash" and could delete it. Now it refuses to start, naming the
        # directory and the first router's pid, and the first one's trace is untouched.
        first = self.start_router()
        m = await self.mgmt()
        meta = await self.call(m, "start_trace", "mine", {"persist": True})
        await self.traffic(20, "com.persist.lock")
        second = h.RouterProc(self.config, workdir=self.work, run=2)
        with self.assertRaises(AssertionError) as e:
            second._start()
        self.assertNotEqual(second.proc.returncode, 0)
        err = second.stderr_text()
        self.assertIn("wampscope-data is in use by another router", err)
        self.assertIn("(pid %d)" % first.proc.pid, err)
        self.assertIn("exited early", str(e.exception))
        with open(os.path.join(self.trace_dir(meta["persistent_id"]), "meta.json"),
                  encoding="utf-8") as f:
            self.assertEqual(json.load(f)["status"], "running")
        meta = await self.call(m, "get_trace", "mine")
        self.assertEqual(meta["status"], "running")
        await self.stop_router()
        # Once the first one is gone, the directory is free again (the lock went with it).
        self.start_router()
        m = await self.mgmt()
        meta = await self.call(m, "get_trace", "mine")
        self.assertEqual((meta["status"], meta["stop_reason"]), ("stopped", "shutdown"))

    async def test_data_dir_created_with_parents(self):
        # Issue 23, 4: a data_dir whose parent did not exist made every persisted start fail
        # (a single mkdir). Now it is created with its parents, mode 0700, at start.
        self.config = write_config(self.work, {"data_dir": "deep/er/data"})
        self.start_router()
        data = os.path.join(self.work, "deep/er/data")
        self.assertTrue(os.path.isdir(data))  # at start, before any trace
        self.assertEqual(os.stat(data).st_mode & 0o777, 0o700)
        m = await self.mgmt()
        meta = await self.call(m, "start_trace", "deep", {"persist": True})
        self.assertTrue(os.path.isfile(os.path.join(data, meta["persistent_id"], "meta.json")))
        await self.traffic(5, "com.persist.deep")
        self.assertGreater((await self.call(m, "get_trace", "deep"))["records"], 0)

    async def test_unusable_data_dir_fails_at_start(self):
        # A data_dir that cannot be created is a clear error at start, not at the first trace.
        with open(os.path.join(self.work, "afile"), "w", encoding="utf-8") as f:
            f.write("x")
        self.config = write_config(self.work, {"data_dir": "afile/data"})
        r = h.RouterProc(self.config, workdir=self.work)
        with self.assertRaises(AssertionError):
            r._start()
        self.assertNotEqual(r.proc.returncode, 0)
        self.assertIn("cannot create data_dir afile/data", r.stderr_text())

    async def test_rotation_and_retention_by_bytes(self):
        self.config = write_config(self.work, {"segment_bytes": 8192})
        self.start_router()
        m = await self.mgmt()
        meta = await self.call(m, "start_trace", "ret",
                               {"persist": True, "limit": 10, "persist_max_bytes": 65536})
        self.assertEqual(meta["options"]["persist_max_bytes"], 65536)
        await self.traffic(300, "com.persist.retention")
        await asyncio.sleep(0.3)
        meta = await self.call(m, "get_trace", "ret")
        segs = glob.glob(os.path.join(self.trace_dir(meta["persistent_id"]), "*.seg"))
        self.assertGreater(len(segs), 2)
        on_disk = sum(os.path.getsize(s) for s in segs)
        self.assertLessEqual(on_disk, 65536 + 8192 + 4096)
        self.assertGreater(meta["first_seq"], 0)
        self.assertEqual(meta["dropped"], meta["first_seq"])
        recs = await self.all_records(m, "ret", limit=100)
        self.assertEqual(recs[0]["seq"], meta["first_seq"])
        self.assert_gap_free(recs, meta["first_seq"])
        self.assertEqual(recs[-1]["seq"], meta["next_seq"] - 1)


if __name__ == "__main__":
    h.main()
