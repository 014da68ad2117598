"""The script a management client author would write for Crossbar runs unchanged here.

CLIENT_SCRIPT below is a plain, self-contained autobahn program (ApplicationRunner +
ApplicationSession, as in autobahn's examples) that walks the management API the way a dashboard
does: list_nodes -> list_workers of each node -> get_worker of each, keeping routers ->
list_traces -> get_trace of each. The test runs it as its own process with /usr/bin/python3, once
per serializer, against a router with no traces and against one with two traces (one stopped),
and checks what it collected against the router's state.
"""

import asyncio
import datetime
import json
import os
import re
import time

from autobahn.wamp.types import PublishOptions

import rt_harness as h

CLIENT_SCRIPT = r'''
import asyncio
import json
import sys

from autobahn.asyncio.wamp import ApplicationRunner, ApplicationSession
from autobahn.wamp.serializer import JsonSerializer, MsgPackSerializer

failures = []


class TraceInventory(ApplicationSession):
    """Collects every router worker of every node, with its traces."""

    async def onJoin(self, details):
        inventory = {}
        try:
            for node_id in await self.call("crossbarfabriccenter.list_nodes"):
                routers = inventory[node_id] = {}
                for worker_id in await self.call("crossbarfabriccenter.list_workers", node_id):
                    worker = await self.call("crossbarfabriccenter.get_worker", node_id, worker_id)
                    if worker["type"] != "router":
                        continue
                    traces = []
                    for trace_id in await self.call("crossbarfabriccenter.list_traces",
                                                    node_id, worker_id):
                        traces.append(await self.call("crossbarfabriccenter.get_trace",
                                                      node_id, worker_id, trace_id))
                    routers[worker_id] = {"worker": worker, "traces": traces}
            print("INVENTORY " + json.dumps(inventory), flush=True)
        except Exception as e:
            failures.append(e)
            print("failed: %r" % (e,), file=sys.stderr, flush=True)
        self.leave()

    def onDisconnect(self):
        asyncio.get_event_loop().stop()


if __name__ == "__main__":
    url, serializer, realm = sys.argv[1:4]
    serializers = [JsonSerializer() if serializer == "json" else MsgPackSerializer()]
    runner = ApplicationRunner(url, realm, serializers=serializers)
    runner.run(TraceInventory)
    sys.exit(1 if failures else 0)
'''

ISO_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
SCRIPT_TIMEOUT = 30.0


def e2e_config():
    with open(os.path.join(os.environ["RT_SOURCE_DIR"], "configs/test-e2e.json"),
              encoding="utf-8") as f:
        cfg = json.load(f)
    worker = cfg["workers"][0]
    return {"node_id": cfg.get("controller", {}).get("id"),
            "worker_id": worker.get("id", "router1"),
            "realms": [r["name"] for r in worker.get("realms", [])],
            "mgmt_realm": worker.get("wampscope", {}).get("management", {}).get("realm", "mgmt")}


class TestMgmtClientScript(h.RouterTestCase):

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.cfg = e2e_config()
        self.node, self.worker = self.cfg["node_id"], self.cfg["worker_id"]

    async def run_script(self, serializer):
        """Runs CLIENT_SCRIPT as a process; returns the inventory it printed."""
        proc = await asyncio.create_subprocess_exec(
            "/usr/bin/python3", "-c", CLIENT_SCRIPT, self.router.url, serializer,
            self.cfg["mgmt_realm"], stdin=asyncio.subprocess.DEVNULL,
            stdout=asyncio.subprocess.PIPE, stderr=asyncio.subprocess.PIPE)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), SCRIPT_TIMEOUT)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            raise AssertionError("the client script did not finish within %.0f s"
                                 % SCRIPT_TIMEOUT)
        out, err = out.decode("utf-8", "replace"), err.decode("utf-8", "replace")
        self.assertEqual(proc.returncode, 0, "script failed\n--- stdout\n%s\n--- stderr\n%s"
                         % (out, err))
        lines = [ln for ln in out.splitlines() if ln.startswith("INVENTORY ")]
        self.assertEqual(len(lines), 1, out + err)
        return json.loads(lines[0][len("INVENTORY "):])

    def check_worker(self, worker):
        self.assertEqual(set(worker), {"id", "type", "status", "pid", "created", "started",
                                       "uptime", "realms", "stats"})
        self.assertGreaterEqual(worker["stats"]["sessions"], 1)  # the script's own session
        self.assertEqual(worker["id"], self.worker)
        self.assertEqual(worker["type"], "router")
        self.assertEqual(worker["status"], "running")
        self.assertEqual(worker["pid"], self.router.proc.pid)
        for k in ("created", "started"):
            self.assertRegex(worker[k], ISO_RE)
            t = datetime.datetime.strptime(worker[k], "%Y-%m-%dT%H:%M:%S.%fZ").replace(
                tzinfo=datetime.timezone.utc).timestamp()
            self.assertLess(abs(t - time.time()), 60.0)
        self.assertIsInstance(worker["uptime"], (int, float))
        self.assertGreaterEqual(worker["uptime"], 0)
        self.assertLess(worker["uptime"], 60)
        self.assertIsInstance(worker["realms"], list)
        self.assertLessEqual(set(self.cfg["realms"]), set(worker["realms"]))

    async def test_no_traces(self):
        for ser in h.SERIALIZERS:
            with self.subTest(serializer=ser):
                inv = await self.run_script(ser)
                self.assertEqual(list(inv), [self.node])
                self.assertEqual(list(inv[self.node]), [self.worker])
                router = inv[self.node][self.worker]
                self.check_worker(router["worker"])
                self.assertEqual(router["traces"], [])

    async def test_two_traces_one_stopped(self):
        mgmt = await self.session("json", realm=self.cfg["mgmt_realm"])
        prefix = "crossbarfabriccenter."

        async def call(proc, *args):
            return await h.step(mgmt.call(prefix + proc, *args))

        await call("start_trace", self.node, self.worker, "old",
                   {"uris": [{"uri": "com.example.", "match": "prefix"}]})
        await call("start_trace", self.node, self.worker, None, {"realms": ["realm2"]})
        app = await self.session("msgpack")
        for i in range(3):
            await h.step(app.publish("com.example.tick", i,
                                     options=PublishOptions(acknowledge=True)))
        old = await call("stop_trace", self.node, self.worker, "old")
        self.assertEqual(old["records"], 6)
        for ser in h.SERIALIZERS:
            with self.subTest(serializer=ser):
                inv = await self.run_script(ser)
                self.assertEqual(list(inv), [self.node])
                self.assertEqual(list(inv[self.node]), [self.worker])
                router = inv[self.node][self.worker]
                self.check_worker(router["worker"])
                traces = router["traces"]
                self.assertEqual([t["id"] for t in traces], ["old", "trace1"])  # oldest first
                self.assertEqual(traces[0], old)  # a stopped trace does not change
                live = await call("get_trace", self.node, self.worker, "trace1")
                self.assertEqual(traces[1]["status"], "running")
                self.assertIsNone(traces[1]["stop_reason"])
                self.assertEqual(traces[1]["options"]["realms"], ["realm2"])
                # Nothing happened in realm2, and the script's own session (management realm)
                # is not traced.
                self.assertEqual((traces[1]["records"], traces[1]["next_seq"]), (0, 0))
                self.assertLessEqual(traces[1]["runtime"], live["runtime"])
                for k in live:
                    if k != "runtime":
                        self.assertEqual(traces[1][k], live[k], k)


if __name__ == "__main__":
    h.main()
