"""wampscope-ctl end to end: the real router and the real wampscope-ctl binary (RT_CTL_BIN) as a
subprocess, with traffic and cross-checks from python3-autobahn clients.

Covers every command and its error exits (connection refused, unknown trace, router refusals,
usage), trace filters given as flags, the data table and --json, tail receiving live records
(stopped with SIGINT, and ending by itself when the trace stops), both exports (JSON Lines equal
to get_trace_data; Chrome Trace Event JSON checked structurally), mark_trace into one and all
traces, and the Crossbar alias procedure names called with autobahn.
"""

import asyncio
import base64
import hashlib
import json
import os
import pty
import re
import signal
import socket
import struct
import tempfile
import threading

import rt_harness as h

NODE, WORKER = "e2e_node", "router1"  # configs/test-e2e.json
P = "crossbarfabriccenter."
EX_OK, EX_FAIL, EX_USAGE, EX_CONNECT, EX_AUTH, EX_NOTFOUND, EX_REFUSED = 0, 1, 2, 3, 4, 5, 6
COMMANDS = ("nodes", "workers", "traces", "start", "stop", "delete", "show", "data", "tail",
            "export", "mark")


def as_json(v):
    """A value as it is written in JSON: autobahn's JSON serializer turns the WAMP binary
    convention ("\\u0000" + base64 strings) into bytes; the JSON text keeps the string."""
    if isinstance(v, bytes):
        return "\x00" + base64.b64encode(v).decode()
    if isinstance(v, list):
        return [as_json(x) for x in v]
    if isinstance(v, dict):
        return {k: as_json(x) for k, x in v.items()}
    return v


class Result:
    def __init__(self, rc, out, err):
        self.rc, self.out, self.err = rc, out, err

    def __repr__(self):
        return "<rc=%s out=%r err=%r>" % (self.rc, self.out[-2000:], self.err[-2000:])


class CtlTestCase(h.RouterTestCase):
    async def ctl(self, *args, url=True, env=None, timeout=30.0):
        """Runs wampscope-ctl [--url router] args... without blocking the event loop (the
        autobahn sessions of the test keep working meanwhile)."""
        argv = [h.ctl_bin()] + (["--url", self.router.url] if url else []) + list(args)
        full_env = dict(os.environ)
        full_env.pop("WAMPSCOPE_URL", None)
        full_env.update(env or {})
        proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE, env=full_env)
        try:
            out, err = await asyncio.wait_for(proc.communicate(), timeout)
        except asyncio.TimeoutError:
            proc.kill()
            await proc.wait()
            raise AssertionError("wampscope-ctl %s did not finish in %.0f s" % (args, timeout))
        return Result(proc.returncode, out.decode(), err.decode())

    async def ok(self, *args, **kw):
        r = await self.ctl(*args, **kw)
        self.assertEqual(r.rc, EX_OK, r)
        return r

    def assert_error(self, r, rc, needle):
        """A failing command: its exit status and exactly one line on stderr naming the cause."""
        self.assertEqual(r.rc, rc, r)
        lines = r.err.strip().splitlines()
        self.assertEqual(len(lines), 1, r)
        self.assertIn(needle, lines[0])
        self.assertTrue(lines[0].startswith("wampscope-ctl: "), r)

    async def mgmt(self):
        if not hasattr(self, "_mgmt"):
            self._mgmt = await self.session("json", realm="mgmt")
        return self._mgmt

    async def records(self, trace_id):
        """Every record of the trace through autobahn's get_trace_data (pages of 100)."""
        m = await self.mgmt()
        out, frm = [], 0
        while True:
            page = await h.step(m.call(P + "get_trace_data", NODE, WORKER, trace_id, frm))
            if not page:
                return out
            out += as_json(page)
            frm = page[-1]["seq"] + 1

    async def start_tail(self, *args):
        argv = [h.ctl_bin(), "--url", self.router.url, "tail"] + list(args)
        return await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE)

    async def read_records(self, proc, n, timeout=20.0):
        out = []
        while len(out) < n:
            line = await asyncio.wait_for(proc.stdout.readline(), timeout)
            self.assertTrue(line, "tail ended early")
            out.append(json.loads(line))
        return out

    async def rpc_traffic(self, prefix, n=3, realm="realm1"):
        callee = await self.session("json", realm=realm)
        caller = await self.session("msgpack", realm=realm)
        await h.step(callee.register(lambda a, b: a + b, prefix + "add"))
        for i in range(n):
            self.assertEqual(await h.step(caller.call(prefix + "add", i, 1)), i + 1)
        return callee, caller


class TestCommands(CtlTestCase):
    async def test_help_nodes_workers_and_usage(self):
        r = await self.ok("--help", url=False)
        for c in COMMANDS:
            self.assertIn("  " + c, r.out)
        self.assertIn("Exit status", r.out)
        for c in COMMANDS:
            r = await self.ok(c, "--help", url=False)
            self.assertTrue(r.out.startswith("usage: wampscope-ctl"), (c, r))
            self.assertIn(c, r.out.splitlines()[0])
        r = await self.ok("nodes")
        self.assertEqual(r.out.split(), [NODE])
        r = await self.ok("workers")
        self.assertEqual(r.out.split(), [WORKER])
        r = await self.ok("--node", NODE, "workers", "--json")
        self.assertEqual(json.loads(r.out), [WORKER])
        # The URL from the environment.
        r = await self.ctl("nodes", url=False, env={"WAMPSCOPE_URL": self.router.url})
        self.assertEqual((r.rc, r.out.split()), (EX_OK, [NODE]), r)
        # Usage errors: exit 2, one line.
        self.assert_error(await self.ctl("frobnicate"), EX_USAGE, "unknown command")
        self.assert_error(await self.ctl("show"), EX_USAGE, "trace ID")
        self.assert_error(await self.ctl("data", "x", "--limit", "zero"), EX_USAGE, "--limit")
        self.assert_error(await self.ctl("export", "x"), EX_USAGE, "--format")
        self.assert_error(await self.ctl("--bogus", "nodes"), EX_USAGE, "unknown option")
        # Unknown node / worker chosen explicitly.
        self.assert_error(await self.ctl("--node", "mars", "workers"), EX_NOTFOUND,
                          "crossbar.error.no_such_object")
        self.assert_error(await self.ctl("--worker", "w9", "traces"), EX_NOTFOUND,
                          "crossbar.error.no_such_worker")

    async def test_connection_refused(self):
        s = socket.socket()
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]
        s.close()  # nothing listens there now
        url = "ws://127.0.0.1:%d/ws" % port
        r = await self.ctl("--url", url, "nodes", url=False)
        self.assert_error(r, EX_CONNECT, "cannot connect")
        self.assertIn(url, r.err)
        r = await self.ctl("--url", "http://x", "nodes", url=False)
        self.assert_error(r, EX_USAGE, "bad URL")

    async def test_not_a_management_realm(self):
        # realm1 has no management procedures: the router answers no_such_procedure.
        r = await self.ctl("--realm", "realm1", "nodes")
        self.assert_error(r, EX_REFUSED, "wamp.error.no_such_procedure")
        # A realm that does not exist: the router refuses to join (ABORT).
        r = await self.ctl("--realm", "nosuchrealm", "nodes")
        self.assert_error(r, EX_AUTH, "the router refused the session: wamp.error.no_such_realm")

    async def test_unknown_trace(self):
        for args in (["show", "nope"], ["stop", "nope"], ["delete", "nope"], ["data", "nope"],
                     ["tail", "nope"], ["export", "nope", "--format", "jsonl", "-o", "-"],
                     ["mark", "nope", "m"]):
            r = await self.ctl(*args)
            self.assert_error(r, EX_NOTFOUND, 'crossbar.error.no_such_object: no trace "nope"')

    async def test_lifecycle_filters_and_data(self):
        prefix = h.uri(self, "")
        r = await self.ok("start", "t1", "--realm", "realm1", "--uri", prefix, "--match",
                          "prefix", "--type", "Call,Result", "--type", "Invocation", "--json")
        meta = json.loads(r.out)
        self.assertEqual(meta["status"], "running")
        self.assertEqual(meta["options"]["realms"], ["realm1"])
        self.assertEqual(meta["options"]["uris"], [{"uri": prefix, "match": "prefix"}])
        self.assertEqual(sorted(meta["options"]["msg_types"]), ["Call", "Invocation", "Result"])
        r = await self.ok("start", "--direction", "rx", "--no-payload", "--limit", "50",
                          "--max-bytes", "100000", "--duration", "600", "--max-records", "1000",
                          "--batching-period", "100", "--session", "12345", "--authid", "x",
                          "--authrole", "y", "--json")
        auto = json.loads(r.out)
        self.assertEqual(auto["id"], "trace1")
        o = auto["options"]
        self.assertEqual((o["direction"], o["trace_app_payload"], o["limit"], o["max_bytes"],
                          o["duration"], o["max_records"], o["batching_period"],
                          o["session_ids"], o["authids"], o["authroles"]),
                         ("rx", False, 50, 100000, 600, 1000, 100, [12345], ["x"], ["y"]))
        # Traffic: matching calls on realm1, the same URIs on realm2, other URIs on realm1.
        await self.rpc_traffic(prefix, n=3)
        await self.rpc_traffic(prefix, n=1, realm="realm2")
        await self.rpc_traffic("com.other.", n=1)
        recs = await self.records("t1")
        self.assertEqual([x["msg_type"] for x in recs], ["Call", "Invocation", "Result"] * 3)
        self.assertTrue(all(x["realm"] == "realm1" and x["uri"] == prefix + "add" for x in recs))
        r = await self.ok("data", "t1", "--json")
        self.assertEqual(json.loads(r.out), recs)
        r = await self.ok("data", "t1", "--from", "3", "--to", "5", "--json")
        self.assertEqual([x["seq"] for x in json.loads(r.out)], [3, 4, 5])
        r = await self.ok("data", "t1", "--limit", "2", "--json")
        self.assertEqual([x["seq"] for x in json.loads(r.out)], [0, 1])
        r = await self.ok("data", "t1")
        lines = r.out.splitlines()
        self.assertEqual(lines[0].split()[:4], ["SEQ", "TIME", "DIR", "TYPE"])
        self.assertEqual(len(lines), 1 + len(recs))
        for line, rec in zip(lines[1:], recs):
            cols = line.split()
            self.assertEqual((int(cols[0]), cols[2], cols[3], cols[4], cols[5], cols[6]),
                             (rec["seq"], rec["direction"], rec["msg_type"], "realm1",
                              str(rec["session_id"]), prefix + "add"), line)
        # traces table: both traces with their record counts.
        r = await self.ok("traces")
        rows = {line.split()[0]: line.split() for line in r.out.splitlines()[1:]}
        self.assertEqual(set(rows), {"t1", "trace1"})
        self.assertEqual(rows["t1"][1:4], ["running", "9", "0"])
        r = await self.ok("show", "t1")
        self.assertIn("records        9", r.out)
        # Router refusals: exit 6 with the URI.
        self.assert_error(await self.ctl("delete", "t1"), EX_REFUSED, "crossbar.error.not_stopped")
        self.assert_error(await self.ctl("start", "t1"), EX_REFUSED,
                          "crossbar.error.already_running")
        self.assert_error(await self.ctl("start", "--direction", "sideways"), EX_REFUSED,
                          "crossbar.error.invalid_configuration")
        # --persist passes persist: true; a router without persistence says so.
        r = await self.ctl("start", "p1", "--persist", "--json")
        if r.rc == EX_OK:
            self.assertTrue(json.loads(r.out)["options"]["persist"])
        else:
            self.assert_error(r, EX_REFUSED, "crossbar.error.invalid_configuration: persist")
        r = await self.ok("stop", "t1", "--json")
        self.assertEqual(json.loads(r.out)["status"], "stopped")
        self.assert_error(await self.ctl("start", "t1"), EX_REFUSED,
                          "crossbar.error.already_exists")
        r = await self.ok("traces", "--running")
        self.assertNotIn("t1", r.out)
        r = await self.ok("delete", "t1")
        self.assertEqual(r.out.strip(), "deleted t1")
        m = await self.mgmt()
        self.assertNotIn("t1", await h.step(m.call(P + "list_traces", NODE, WORKER)))


class TestTail(CtlTestCase):
    async def test_tail_live_then_sigint(self):
        prefix = h.uri(self, "")
        await self.ok("start", "live", "--realm", "realm1", "--batching-period", "50")
        pub = await self.session("json")
        sub = await self.session("msgpack")
        got = []
        await h.step(sub.subscribe(lambda *a: got.append(a), prefix + "topic"))
        # Records before tail starts: the last -n of them are printed first.
        before = len(await self.records("live"))
        self.assertGreater(before, 2)
        proc = await self.start_tail("live", "--json", "-n", "2")
        try:
            first = await self.read_records(proc, 2)
            self.assertEqual([r["seq"] for r in first], [before - 2, before - 1])
            # Live: publishes after tail subscribed arrive through on_trace_data.
            from autobahn.wamp.types import PublishOptions
            for i in range(5):
                await h.step(pub.publish(prefix + "topic", i,
                                         options=PublishOptions(acknowledge=True)))
            # Per PUBLISH: Publish, Event, Published = 3 records.
            live = await self.read_records(proc, 15)
            self.assertEqual([r["seq"] for r in live], list(range(before, before + 15)))
            self.assertEqual([r["msg_type"] for r in live[:3]], ["Publish", "Event", "Published"])
            proc.send_signal(signal.SIGINT)
            rc = await asyncio.wait_for(proc.wait(), 10)
            err = (await proc.stderr.read()).decode()
            self.assertEqual((rc, err), (0, ""))
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        # Exactly what get_trace_data returns.
        self.assertEqual(first + live, (await self.records("live"))[before - 2:before + 15])

    async def test_tail_table_ends_when_trace_stops(self):
        prefix = h.uri(self, "")
        await self.ok("start", "s", "--realm", "realm1", "--uri", prefix + "add",
                      "--batching-period", "20")
        proc = await self.start_tail("s", "--width", "0")
        try:
            await asyncio.sleep(0.5)  # tail subscribed (gaps would be filled anyway)
            await self.rpc_traffic(prefix, n=2)
            await self.ok("stop", "s")
            out, err = await asyncio.wait_for(proc.communicate(), 15)
        finally:
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        self.assertEqual(proc.returncode, 0)
        self.assertIn("trace s stopped", err.decode())
        lines = out.decode().splitlines()
        self.assertEqual(lines[0].split()[0], "SEQ")
        recs = await self.records("s")
        # Register, Registered, then 2 x (Call, Invocation, Yield, Result)
        self.assertEqual(len(recs), 10)
        self.assertEqual([int(x.split()[0]) for x in lines[1:]], [r["seq"] for r in recs])
        self.assertEqual([x.split()[3] for x in lines[1:]], [r["msg_type"] for r in recs])


def check_chrome(test, doc, records):
    """Structural validation of a Chrome Trace Event JSON object (the rules chrome://tracing
    and Perfetto's JSON importer apply): every event has ph/ts/pid/tid; X events have a
    non-negative dur and nest properly per thread; every flow start has a matching finish;
    metadata names every process and thread used; one instant per record."""
    events = doc["traceEvents"]
    test.assertEqual(doc["displayTimeUnit"], "ms")
    names = {}
    for e in events:
        for k in ("ph", "ts", "pid", "tid", "name"):
            test.assertIn(k, e, e)
        test.assertIsInstance(e["ts"], (int, float))
        test.assertIsInstance(e["pid"], int)
        test.assertIsInstance(e["tid"], int)
        if e["ph"] == "M":
            test.assertIn(e["name"], ("process_name", "thread_name"))
            names[(e["name"], e["pid"], e["tid"] if e["name"] == "thread_name" else 0)] = \
                e["args"]["name"]
    for e in events:
        if e["ph"] in ("i", "X", "s", "f") and not (e["ph"] == "i" and e.get("s") == "g"):
            test.assertIn(("process_name", e["pid"], 0), names, e)
            test.assertIn(("thread_name", e["pid"], e["tid"]), names, e)
    instants = [e for e in events if e["ph"] == "i"]
    test.assertEqual(len(instants), len(records))
    test.assertEqual(sorted(e["args"]["seq"] for e in instants), [r["seq"] for r in records])
    # X nesting per thread.
    by_thread = {}
    for e in events:
        if e["ph"] == "X":
            test.assertGreaterEqual(e["dur"], 0)
            by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
    for spans in by_thread.values():
        spans.sort(key=lambda s: (s[0], -s[1]))
        stack = []
        for start, end in spans:
            while stack and stack[-1] <= start:
                stack.pop()
            if stack:
                test.assertLessEqual(end, stack[-1], "slices overlap without nesting")
            stack.append(end)
    # Flows: each id has one s, then one f, in the category of the slices; the s lies inside a
    # slice of its thread, the f ("bp": "e") binds to the zero-length slice at its time.
    flows = {}
    for e in events:
        if e["ph"] in ("s", "f"):
            test.assertEqual(e["cat"], "wamp")
            flows.setdefault(e["id"], []).append(e)
    for fid, pair in flows.items():
        test.assertEqual([p["ph"] for p in pair], ["s", "f"], pair)
        s, f = pair
        test.assertEqual(f["bp"], "e")
        test.assertIn((f["ts"], f["ts"]), by_thread[(f["pid"], f["tid"])])
        test.assertEqual(s["name"], f["name"])
        test.assertLess(s["ts"], f["ts"])
        test.assertTrue(any(a <= s["ts"] <= b for a, b in by_thread[(s["pid"], s["tid"])]))
    return flows, by_thread


class TestExportAndMark(CtlTestCase):
    async def test_export_jsonl_and_chrome(self):
        prefix = h.uri(self, "")
        await self.ok("start", "ex", "--realm", "realm1", "--realm", "realm2")
        await self.rpc_traffic(prefix, n=4)
        await self.rpc_traffic(prefix, n=1, realm="realm2")
        pub = await self.session("json")
        subs = [await self.session(s) for s in h.SERIALIZERS]
        for s in subs:
            await h.step(s.subscribe(lambda *a: None, prefix + "topic"))
        from autobahn.wamp.types import PublishOptions
        await h.step(pub.publish(prefix + "topic", 1, options=PublishOptions(acknowledge=True)))
        # Binary payload (msgpack bin; JSON "\u0000" + base64 in records) survives the exports.
        await h.step(subs[1].publish(prefix + "bin", b"\x00\x01\xffbinary",
                                     options=PublishOptions(acknowledge=True)))
        await self.ok("mark", "ex", "checkpoint", "--meta", '{"step": 1}')
        await self.ok("stop", "ex")
        recs = await self.records("ex")
        self.assertGreater(len(recs), 30)
        with tempfile.TemporaryDirectory() as tmp:
            jl = os.path.join(tmp, "ex.jsonl")
            r = await self.ok("export", "ex", "--format", "jsonl", "-o", jl, "--page", "7")
            self.assertIn("exported %d records" % len(recs), r.err)
            with open(jl, encoding="utf-8") as f:
                lines = f.read().splitlines()
            self.assertEqual([json.loads(x) for x in lines], recs)
            binrec = [x for x in recs if x["msg_type"] == "Publish" and x["uri"] == prefix + "bin"]
            self.assertEqual(len(binrec), 1)
            self.assertEqual(binrec[0]["msg"][4][0],
                             "\x00" + base64.b64encode(b"\x00\x01\xffbinary").decode())
            ch = os.path.join(tmp, "ex.json")
            await self.ok("export", "ex", "--format", "chrome", "-o", ch)
            with open(ch, encoding="utf-8") as f:
                doc = json.load(f)
        r = await self.ok("export", "ex", "--format", "jsonl", "-o", "-")
        self.assertEqual([json.loads(x) for x in r.out.splitlines()], recs)
        flows, by_thread = check_chrome(self, doc, recs)
        events = doc["traceEvents"]
        procs = {e["args"]["name"] for e in events if e["name"] == "process_name"}
        self.assertTrue({"realm realm1", "realm realm2"} <= procs)
        threads = [e for e in events if e["name"] == "thread_name"]
        sessions = {r["session_id"] for r in recs if r["msg_type"] != "Marker"}
        self.assertGreaterEqual(len(threads), len(sessions))
        # One slice per correlated action; a CALL's slice spans CALL..RESULT, with flow arrows
        # to INVOCATION, YIELD and RESULT.
        corrs = {}
        for rec in recs:
            if rec["correlation"]:
                corrs.setdefault(rec["correlation"], []).append(rec)
        slices = [e for e in events if e["ph"] == "X" and "correlation" in e["args"]]
        self.assertEqual(len(slices), len(corrs))
        self.assertEqual(len(flows), sum(len(v) - 1 for v in corrs.values()))
        calls = [v for v in corrs.values() if v[0]["msg_type"] == "Call"]
        self.assertEqual(len(calls), 5)
        for v in calls:
            self.assertEqual([x["msg_type"] for x in v], ["Call", "Invocation", "Yield", "Result"])
            name = "Call " + prefix + "add"
            sl = [e for e in slices if e["name"] == name and
                  abs(e["ts"] - v[0]["ts"] * 1e6) < 1 and
                  abs(e["ts"] + e["dur"] - v[-1]["ts"] * 1e6) < 1]
            self.assertEqual(len(sl), 1, v)
        pubs = [v for v in corrs.values()
                if v[0]["msg_type"] == "Publish" and v[0]["uri"] == prefix + "topic"]
        self.assertEqual(len(pubs), 1)
        self.assertEqual(sorted(x["msg_type"] for x in pubs[0]),
                         ["Event", "Event", "Publish", "Published"])
        marker = [e for e in events if e["ph"] == "i" and e.get("s") == "g"]
        self.assertEqual(len(marker), 1)
        self.assertEqual(marker[0]["name"], "Marker checkpoint")
        self.assertEqual(marker[0]["args"]["msg"], {"step": 1})
        # On a terminal (stderr a pty) a progress bar; never in a pipe (checked above: r.err).
        self.assertNotIn("\r[", r.err)
        with tempfile.TemporaryDirectory() as tmp:
            out, err = await self.on_pty("export", "ex", "--format", "jsonl", "--page", "5",
                                         "-o", os.path.join(tmp, "p.jsonl"))
        self.assertIn("\r[", err)
        self.assertIn("100%% %d/%d records" % (len(recs), len(recs)), err)
        # A file that cannot be written: exit 1, one line.
        r = await self.ctl("export", "ex", "--format", "chrome", "-o", "/nonexistent/dir/x.json")
        self.assert_error(r, EX_FAIL, "cannot write")

    async def test_export_says_what_the_trace_dropped_while_read(self):
        """A running trace that holds 20 records, read a record a page while a publisher keeps
        it evicting: the export stops at the seq where the trace stood when it began (it does
        not chase the traffic), and every seq from its first one on is either a record or inside
        a gap item with the reason "dropped", counted on stderr, never a silent jump; so are
        data's pages and tail's fills."""
        prefix = h.uri(self, "")
        await self.ok("start", "ring", "--realm", "realm1", "--limit", "20")
        pub = await self.session("json")
        for i in range(40):
            pub.publish(prefix + "t", i)
        await h.step(pub.call("wamp.session.count"))  # the 40 PUBLISHes are in
        running = True

        async def keep_publishing():
            i = 0
            while running:
                for _ in range(50):
                    pub.publish(prefix + "t", i)
                    i += 1
                await asyncio.sleep(0)

        task = asyncio.ensure_future(keep_publishing())
        proc = None
        try:
            r = await self.ok("export", "ring", "--format", "jsonl", "-o", "-", "--page", "1")
            # data reads pages of 1,000 with a filter: between them the trace moves on too.
            d = await self.ok("data", "ring", "--json", "--type", "Publish", "--limit", "200")
            # tail: its backlog and the live batches, a fill where a batch leaves a gap.
            proc = await self.start_tail("ring", "--json", "-n", "5")
            tailed = await self.read_records(proc, 40)
            proc.send_signal(signal.SIGINT)
            await asyncio.wait_for(proc.communicate(), 10)  # (reads what it printed meanwhile)
            self.assertEqual(proc.returncode, 0)
        finally:
            running = False
            await task
            if proc and proc.returncode is None:
                proc.kill()
                await proc.wait()

        def accounted(items, what, need_gap=True):
            """Every seq from the first item's on is a record or inside a "dropped" gap item;
            returns the seq after the last item and the gap items."""
            listing = (what, [(y["seq"], y.get("from_seq"), y["msg_type"]) for y in items])
            gaps = [x for x in items if x.get("kind") == "gap"]
            self.assertTrue(gaps or not need_gap, listing)
            expect = items[0].get("from_seq", items[0]["seq"])
            for x in items:
                if x.get("kind") == "gap":
                    self.assertEqual((x["from_seq"], x["reason"], x["msg_type"], x["seq"]),
                                     (expect, "dropped", "Gap", x["to_seq"]), listing)
                    expect = x["to_seq"] + 1
                else:
                    self.assertEqual(x["seq"], expect, listing)
                    expect = x["seq"] + 1
            return expect, gaps

        items = [json.loads(x) for x in r.out.splitlines()]
        end, gaps = accounted(items, "export")
        lost = sum(x["to_seq"] - x["from_seq"] + 1 for x in gaps)
        self.assertIn("exported %d records" % (len(items) - len(gaps)), r.err)
        self.assertIn("%d records the trace held when the export began were dropped" % lost, r.err)
        # It ended at the seq the trace had reached when it began (then 20 held), not later.
        self.assertEqual(end - items[0].get("from_seq", items[0]["seq"]), 20, r.err)
        m = as_json(await h.step((await self.mgmt()).call(P + "get_trace", NODE, WORKER, "ring")))
        self.assertLess(end, m["next_seq"])
        # data and tail read while the publisher goes on: a gap in their output is likely, not
        # certain (a reader that keeps up loses nothing; data stops at an empty page). Only
        # PUBLISHes come meanwhile, so data's filter leaves nothing out.
        items = json.loads(d.out)
        self.assertTrue(0 < len(items) <= 200, d)
        accounted(items, "data", need_gap=False)
        self.assertTrue(all(x["msg_type"] in ("Publish", "Gap") for x in items))
        accounted(tailed, "tail", need_gap=False)

    async def test_pages_over_the_message_size_limit(self):
        """Records of ~1 MiB each: a default page (100) exceeds the 4 MiB message limit of
        configs/test-e2e.json. The router answers payload_size_exceeded (not silence), and
        wampscope-ctl asks again with smaller pages, so data and export still get everything."""
        await self.ok("start", "big", "--realm", "realm1", "--type", "Publish")
        pub = await self.session("json")
        from autobahn.wamp.types import PublishOptions
        blob = "x" * (1024 * 1024)
        for i in range(6):
            await h.step(pub.publish(h.uri(self, "t"), i, blob,
                                     options=PublishOptions(acknowledge=True)))
        m = await self.mgmt()
        # autobahn turns the error URI wamp.error.payload_size_exceeded into this exception.
        from autobahn.exception import PayloadExceededError
        with self.assertRaises(PayloadExceededError):
            await h.step(m.call(P + "get_trace_data", NODE, WORKER, "big", 0, None, 100))
        want = []
        for seq in range(6):
            want += await h.step(m.call(P + "get_trace_data", NODE, WORKER, "big", seq, seq, 1))
        self.assertEqual([r["msg"][4][0] for r in want], list(range(6)))
        r = await self.ok("data", "big", "--json")
        self.assertEqual(json.loads(r.out), want)
        r = await self.ok("export", "big", "--format", "jsonl", "-o", "-")
        self.assertEqual([json.loads(x) for x in r.out.splitlines()], want)

    async def on_pty(self, *args):
        """Runs wampscope-ctl with stderr on a pseudo-terminal; returns (stdout, stderr)."""
        master, slave = pty.openpty()
        argv = [h.ctl_bin(), "--url", self.router.url] + list(args)
        proc = await asyncio.create_subprocess_exec(*argv, stdout=asyncio.subprocess.PIPE,
                                                    stderr=slave)
        os.close(slave)

        try:
            reader = asyncio.get_running_loop().run_in_executor(None, h.read_pty, master)
            err = await asyncio.wait_for(reader, 30)
            out = await asyncio.wait_for(proc.stdout.read(), 30)
            self.assertEqual(await asyncio.wait_for(proc.wait(), 30), 0)
        finally:
            os.close(master)
            if proc.returncode is None:
                proc.kill()
                await proc.wait()
        return out.decode(), err.decode()

    async def test_mark_one_and_all(self):
        await self.ok("start", "a")
        await self.ok("start", "b")
        await self.ok("start", "c")
        await self.ok("stop", "c")
        r = await self.ok("mark", "a", "only-a", "--meta", '{"n": 1}')
        self.assertEqual(r.out.strip(), 'a: marker "only-a" is seq 0')
        r = await self.ok("mark", "everyone", "--json")
        self.assertEqual(json.loads(r.out), {"a": 1, "b": 0})
        ra = await self.records("a")
        self.assertEqual([(x["msg_type"], x["uri"], x["msg"]) for x in ra],
                         [("Marker", "only-a", {"n": 1}), ("Marker", "everyone", {})])
        self.assertEqual([x["uri"] for x in await self.records("b")], ["everyone"])
        self.assertEqual(await self.records("c"), [])
        self.assert_error(await self.ctl("mark", "c", "late"), EX_REFUSED,
                          "crossbar.error.not_running")
        self.assert_error(await self.ctl("mark", "a", "x", "--meta", "[1]"), EX_USAGE, "--meta")
        # The procedure itself from autobahn: positional and keyword arguments.
        m = await self.mgmt()
        self.assertEqual(await h.step(m.call(P + "mark_trace", NODE, WORKER, "a", "py")), 2)
        self.assertEqual(await h.step(m.call(P + "mark_trace", node_id=NODE, worker_id=WORKER,
                                             trace_id=None, name="py2", meta={"k": [1]})),
                         {"a": 3, "b": 1})
        self.assertEqual((await self.records("a"))[3]["msg"], {"k": [1]})

    async def test_crossbar_aliases(self):
        m = await self.mgmt()
        self.assertEqual(await h.step(m.call(P + "mrealm.get_nodes")), [NODE])
        self.assertEqual(await h.step(m.call(P + "remote.node.get_workers", NODE)), [WORKER])
        w = await h.step(m.call(P + "remote.node.get_worker", NODE, WORKER))
        self.assertEqual((w["id"], w["type"]), (WORKER, "router"))
        t = await h.step(m.call(P + "remote.tracing.start_trace", NODE, WORKER, "al",
                                {"realms": ["realm1"]}))
        self.assertEqual(t["status"], "running")
        self.assertEqual(await h.step(m.call(P + "remote.tracing.get_traces", NODE, WORKER)),
                         ["al"])
        await self.rpc_traffic(h.uri(self, ""), n=1)
        data = await h.step(m.call(P + "remote.tracing.get_trace_data", NODE, WORKER, "al"))
        self.assertEqual(data, await h.step(m.call(P + "get_trace_data", NODE, WORKER, "al")))
        self.assertIn("Call", [x["msg_type"] for x in data])
        g = await h.step(m.call(P + "remote.tracing.get_trace", NODE, WORKER, "al"))
        self.assertEqual(g["records"], len(data))
        s = await h.step(m.call(P + "remote.tracing.stop_trace", NODE, WORKER, "al"))
        self.assertEqual(s["status"], "stopped")
        # Errors are the same as the original names'.
        from autobahn.wamp.exception import ApplicationError
        with self.assertRaises(ApplicationError) as cm:
            await h.step(m.call(P + "remote.tracing.get_trace", NODE, WORKER, "none"))
        self.assertEqual(cm.exception.error, "crossbar.error.no_such_object")
        # And wampscope-ctl sees the trace started through the alias.
        r = await self.ok("show", "al", "--json")
        self.assertEqual(json.loads(r.out)["status"], "stopped")

    async def test_action_trace_data_and_exports(self):
        """An action trace (--trace-level action): the data table's action columns, --json and
        both exports; Chrome draws each action as one slice on its originator's track."""
        from autobahn.wamp.exception import ApplicationError
        prefix = h.uri(self, "")
        r = await self.ok("start", "acts", "--trace-level", "action", "--realm", "realm1",
                          "--json")
        self.assertEqual(json.loads(r.out)["options"]["trace_level"], "action")
        self.assert_error(await self.ctl("start", "bad", "--trace-level", "action",
                                         "--direction", "rx"),
                          EX_REFUSED, "crossbar.error.invalid_configuration: direction")
        callee, caller = await self.rpc_traffic(prefix, n=3)
        with self.assertRaises(ApplicationError):
            await h.step(caller.call(prefix + "nobody"))
        await self.ok("stop", "acts")
        recs = await self.records("acts")
        self.assertEqual([x["action"] for x in recs],
                         ["join", "join", "register", "call", "call", "call", "call"])
        calls = [x for x in recs if x["action"] == "call"]
        self.assertEqual([x["success"] for x in calls], [True, True, True, False])
        self.assertEqual([x["error"] for x in calls],
                         [None, None, None, "wamp.error.no_such_procedure"])
        self.assertTrue(all(x["originator"]["session_id"] == caller._session_id for x in calls))
        self.assertEqual([x["session_id"] for x in calls[0]["responders"]], [callee._session_id])
        r = await self.ok("data", "acts")
        lines = r.out.splitlines()
        self.assertEqual(lines[0].split(), ["SEQ", "TIME", "ACTION", "REALM", "ORIGINATOR", "URI",
                                            "RESP", "SUCCESS", "DURATION", "ERROR"])
        self.assertEqual(len(lines), 1 + len(recs))
        for line, rec in zip(lines[1:], recs):
            cols = line.split()
            self.assertEqual(tuple(cols[:1] + cols[2:8] + cols[9:]),
                             (str(rec["seq"]), rec["action"], "realm1",
                              str(rec["originator"]["session_id"]), rec["uri"] or "-",
                              str(len(rec["responders"])), "yes" if rec["success"] else "NO",
                              "ms", rec["error"] or "-"), line)
            self.assertAlmostEqual(float(cols[8]), rec["duration"] * 1000, delta=0.0006)
        r = await self.ok("data", "acts", "--json")
        self.assertEqual(json.loads(r.out), recs)
        # tail of a stopped action trace: the same columns, the last rows, then it ends.
        r = await self.ok("tail", "acts", "-n", "3")
        self.assertEqual(r.out.splitlines(), lines[:1] + lines[-3:])
        with tempfile.TemporaryDirectory() as tmp:
            ch = os.path.join(tmp, "acts.json")
            r = await self.ok("export", "acts", "--format", "chrome", "-o", ch)
            self.assertIn("exported %d records" % len(recs), r.err)
            with open(ch, encoding="utf-8") as f:
                doc = json.load(f)
        r = await self.ok("export", "acts", "--format", "jsonl", "-o", "-")
        self.assertEqual([json.loads(x) for x in r.out.splitlines()], recs)
        events = doc["traceEvents"]
        names = {(e["pid"], e["tid"]): e["args"]["name"] for e in events
                 if e["ph"] == "M" and e["name"] == "thread_name"}
        self.assertFalse([e for e in events if e["ph"] in ("i", "s", "f")])
        slices = [e for e in events if e["ph"] == "X"]
        self.assertEqual(len(slices), len(recs))
        self.assertEqual(sorted(e["args"]["seq"] for e in slices), [x["seq"] for x in recs])
        by_thread = {}
        for e in slices:
            rec = e["args"]
            self.assertEqual(e["cat"], "wamp")
            self.assertEqual(e["name"], rec["action"] + (" " + rec["uri"] if rec["uri"] else ""))
            self.assertAlmostEqual(e["ts"], rec["ts"] * 1e6, delta=1)
            self.assertAlmostEqual(e["dur"], rec["duration"] * 1e6, delta=1)
            self.assertIn("error", rec)
            # On the originator's track (or an overlap lane of it).
            self.assertTrue(names[(e["pid"], e["tid"])].startswith(
                "session %d" % rec["originator"]["session_id"]), names)
            by_thread.setdefault((e["pid"], e["tid"]), []).append((e["ts"], e["ts"] + e["dur"]))
        for spans in by_thread.values():
            spans.sort(key=lambda x: (x[0], -x[1]))
            stack = []
            for start, end in spans:
                while stack and stack[-1] <= start:
                    stack.pop()
                if stack:
                    self.assertLessEqual(end, stack[-1], "slices overlap without nesting")
                stack.append(end)


class TestFlightRecorder(CtlTestCase):
    """The router with its default configuration (configs/default.json on an ephemeral port):
    the flight recorder is in `traces` and readable with `data` right away, as README's
    after-an-incident recipe says."""

    async def asyncSetUp(self):
        await h.AsyncTestCase.asyncSetUp(self)
        self.router = h.RouterProc("configs/default.json").start()
        self._sessions = []

    async def test_traces_data_and_mark(self):
        r = await self.ok("traces")
        rows = {line.split()[0]: line.split() for line in r.out.splitlines()[1:]}
        self.assertEqual(set(rows), {"flight-recorder"})
        self.assertEqual(rows["flight-recorder"][1], "running")
        prefix = h.uri(self, "")
        await self.rpc_traffic(prefix, n=2)
        r = await self.ok("mark", "flight-recorder", "incident")
        r = await self.ok("data", "flight-recorder", "--json", "--limit", "10000")
        recs = json.loads(r.out)
        calls = [x for x in recs if x["msg_type"] == "Call" and x["uri"] == prefix + "add"]
        self.assertEqual(len(calls), 2)
        self.assertTrue(all(len(x["msg"]) == 4 for x in calls))  # payload stripped
        self.assertEqual(recs[-1]["msg_type"], "Marker")
        self.assertEqual(recs[-1]["uri"], "incident")
        r = await self.ok("show", "flight-recorder", "--json")
        meta = json.loads(r.out)
        self.assertEqual((meta["status"], meta["options"]["limit"]), ("running", 10000))
        self.assertEqual(meta["records"], len(recs))


class TestTls(h.AsyncTestCase):
    """wss:// with the router's TLS listener (a self-signed certificate, as test_rawsocket.py
    makes it): trusted with --ca-file; refused as a connection failure without it."""

    async def asyncSetUp(self):
        await super().asyncSetUp()
        from test_rawsocket import make_cert, write_tls_config
        self.tmp = tempfile.mkdtemp(prefix="wampscope-ctl-tls-")
        _, self.cert = make_cert(self.tmp)
        key = os.path.join(self.tmp, "key.pem")
        self.router = h.RouterProc(config=write_tls_config(self.tmp, key, self.cert)).start()
        self.wss = [u for u in self.router.urls if u.startswith("wss://")][0]

    async def asyncTearDown(self):
        try:
            self.router.stop()
        finally:
            import shutil
            shutil.rmtree(self.tmp, ignore_errors=True)

    async def run_ctl(self, *args):
        proc = await asyncio.create_subprocess_exec(h.ctl_bin(), *args,
                                                    stdout=asyncio.subprocess.PIPE,
                                                    stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        return Result(proc.returncode, out.decode(), err.decode())

    async def test_wss(self):
        # The certificate names localhost and 127.0.0.1; the ports file says 127.0.0.1.
        r = await self.run_ctl("--url", self.wss, "--ca-file", self.cert, "nodes")
        self.assertEqual((r.rc, r.out.split()), (EX_OK, [NODE]), r)
        r = await self.run_ctl("--url", self.wss, "--ca-file", self.cert, "start", "tls1")
        self.assertEqual(r.rc, EX_OK, r)
        r = await self.run_ctl("--url", self.wss, "--ca-file", self.cert, "traces")
        self.assertIn("tls1", r.out)
        # Not trusted: the TLS handshake fails on our side, a connection error.
        r = await self.run_ctl("--url", self.wss, "nodes")
        self.assertEqual(r.rc, EX_CONNECT, r)
        self.assertEqual(len(r.err.strip().splitlines()), 1, r)
        self.assertIn("cannot connect", r.err)
        self.assertIn("--ca-file", r.err)


class FakeRouter:
    """A WebSocket server on 127.0.0.1 that speaks just enough WAMP for wampscope-ctl: it welcomes
    every HELLO (or answers it with abort, a message) and answers every CALL with
    answer(procedure, request_id), a message (a list) or None for no answer. One connection at a
    time, in a thread; stopped by close()."""

    def __init__(self, answer, abort=None):
        self.answer, self.abort = answer, abort
        self.sock = socket.socket()
        self.sock.bind(("127.0.0.1", 0))
        self.sock.listen(4)
        self.url = "ws://127.0.0.1:%d/ws" % self.sock.getsockname()[1]
        self.thread = threading.Thread(target=self._serve, daemon=True)
        self.thread.start()

    def close(self):
        try:
            self.sock.shutdown(socket.SHUT_RDWR)  # wakes the thread's accept() (Linux)
        except OSError:
            pass
        self.sock.close()
        self.thread.join(5)

    def _serve(self):
        while True:
            try:
                conn, _ = self.sock.accept()
            except OSError:
                return
            with conn:
                try:
                    self._session(conn)
                except (OSError, ValueError):
                    pass

    @staticmethod
    def _recv_exact(conn, n):
        b = b""
        while len(b) < n:
            chunk = conn.recv(n - len(b))
            if not chunk:
                raise OSError("closed")
            b += chunk
        return b

    def _session(self, conn):
        head = b""
        while b"\r\n\r\n" not in head:
            chunk = conn.recv(4096)
            if not chunk:
                return
            head += chunk
        key = re.search(rb"(?i)sec-websocket-key:\s*(\S+)", head).group(1)
        accept = base64.b64encode(hashlib.sha1(key + b"258EAFA5-E914-47DA-95CA-C5AB0DC85B11")
                                  .digest())
        conn.sendall(b"HTTP/1.1 101 Switching Protocols\r\nUpgrade: websocket\r\n"
                     b"Connection: Upgrade\r\nSec-WebSocket-Accept: " + accept +
                     b"\r\nSec-WebSocket-Protocol: wamp.2.json\r\n\r\n")
        while True:
            b0, b1 = self._recv_exact(conn, 2)
            n = b1 & 0x7F
            if n == 126:
                n = struct.unpack("!H", self._recv_exact(conn, 2))[0]
            elif n == 127:
                n = struct.unpack("!Q", self._recv_exact(conn, 8))[0]
            mask = self._recv_exact(conn, 4)
            data = bytes(c ^ mask[i % 4] for i, c in enumerate(self._recv_exact(conn, n)))
            if b0 & 0x0F == 8:
                return
            msg = json.loads(data)
            if msg[0] == 1:
                reply = self.abort or [2, 1, {"roles": {"dealer": {}, "broker": {}}}]
            elif msg[0] == 48:
                reply = self.answer(msg[3], msg[1])
            elif msg[0] == 32:
                reply = [33, msg[1], 1000 + msg[1]]
            elif msg[0] == 6:
                reply = [6, {}, "wamp.close.goodbye_and_out"]
            else:
                reply = None
            if reply is not None:
                out = json.dumps(reply).encode()
                hdr = bytes([0x81]) + (bytes([len(out)]) if len(out) < 126 else
                                       bytes([126]) + struct.pack("!H", len(out)))
                conn.sendall(hdr + out)
            if msg[0] in (3, 6) or (reply and reply[0] == 3):
                return  # the session is over: close the connection


class TestHostileRouter(h.AsyncTestCase):
    """wampscope-ctl against a router it does not control: what the router says reaches the
    terminal without its escape sequences (ESC, C1 controls, bidirectional overrides)."""

    EVIL = "\x1b]0;owned\x07\x1b[2J\u009b31m\u202eevil"

    async def run_ctl(self, router, *args):
        proc = await asyncio.create_subprocess_exec(
            h.ctl_bin(), "--url", router.url, *args, stdout=asyncio.subprocess.PIPE,
            stderr=asyncio.subprocess.PIPE)
        out, err = await asyncio.wait_for(proc.communicate(), 30)
        return Result(proc.returncode, out.decode(), err.decode())

    def assert_clean(self, text):
        for bad in ("\x1b", "\x07", "\u009b", "\u202e"):
            self.assertNotIn(bad, text)

    async def test_escapes_in_answers_and_errors(self):
        def answer(proc, req):
            if proc.endswith("list_nodes"):
                return [50, req, {}, [[self.EVIL, "n2"]]]
            return [8, 48, req, {}, "com.err" + self.EVIL, ["message" + self.EVIL]]
        router = FakeRouter(answer)
        self.addCleanup(router.close)
        r = await self.run_ctl(router, "nodes")
        self.assertEqual(r.rc, EX_OK, r)
        self.assertEqual(len(r.out.splitlines()), 2, r)
        self.assert_clean(r.out)
        r = await self.run_ctl(router, "workers")
        self.assertEqual(r.rc, EX_REFUSED, r)
        self.assertIn("com.err", r.err)
        self.assertEqual(len(r.err.splitlines()), 1, r)
        self.assert_clean(r.err)

    async def test_seqs_out_of_range(self):
        """Seqs at the ends of the 64-bit range (which a router's seqs never reach) must not
        overflow data's paging, tail's cursors or export's counts."""
        big = 2**63 - 1
        meta = {"id": "t", "status": "stopped", "first_seq": -big - 1, "next_seq": big,
                "records": big, "dropped": -1, "trace_level": "message"}
        pages = {"n": 0}

        def answer(proc, req):
            p = proc.rsplit(".", 1)[-1]
            if p == "list_nodes":
                return [50, req, {}, [["n"]]]
            if p == "list_workers":
                return [50, req, {}, [["w"]]]
            if p == "get_trace":
                return [50, req, {}, [meta]]
            if p == "get_trace_data":
                pages["n"] += 1
                recs = [{"seq": big, "ts": 1e300, "direction": "rx", "type": "Call"},
                        {"seq": -big - 1, "ts": -1e300, "direction": "tx", "type": "Result"}]
                return [50, req, {}, [recs if pages["n"] % 2 else []]]
            return [8, 48, req, {}, "wamp.error.no_such_procedure", ["?"]]
        router = FakeRouter(answer)
        self.addCleanup(router.close)
        with tempfile.TemporaryDirectory() as d:
            for args in (("data", "t"), ("tail", "t"), ("export", "--format", "jsonl", "-o",
                                                         os.path.join(d, "t.jsonl"), "t"),
                         ("export", "--format", "chrome", "-o", os.path.join(d, "t.json"), "t")):
                r = await self.run_ctl(router, *args)
                self.assertEqual(r.rc, EX_OK, (args, r))
                self.assertNotIn("runtime error", r.err, (args, r))  # UBSan's report
            with open(os.path.join(d, "t.json")) as f:
                json.load(f)
            with open(os.path.join(d, "t.jsonl")) as f:
                for line in f:
                    json.loads(line)

    async def test_data_pages_that_do_not_move_on(self):
        """A router that answers every page with the same record, which the filter leaves out,
        cannot keep `data` paging for ever."""
        def answer(proc, req):
            p = proc.rsplit(".", 1)[-1]
            if p == "list_nodes":
                return [50, req, {}, [["n"]]]
            if p == "list_workers":
                return [50, req, {}, [["w"]]]
            if p == "get_trace_data":
                return [50, req, {}, [[{"seq": 5, "direction": "rx", "msg_type": "Call"}]]]
            return [8, 48, req, {}, "wamp.error.no_such_procedure", ["?"]]
        router = FakeRouter(answer)
        self.addCleanup(router.close)
        r = await self.run_ctl(router, "data", "t", "--type", "Publish")
        self.assertEqual(r.rc, EX_OK, r)

    async def test_escapes_in_an_abort(self):
        router = FakeRouter(lambda proc, req: None,
                            abort=[3, {"message": "no" + self.EVIL}, "wamp.error.x" + self.EVIL])
        self.addCleanup(router.close)
        r = await self.run_ctl(router, "nodes")
        self.assertEqual(r.rc, EX_AUTH, r)
        self.assertIn("refused the session", r.err)
        self.assert_clean(r.err)


if __name__ == "__main__":
    h.main()
