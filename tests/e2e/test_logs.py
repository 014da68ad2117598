#!/usr/bin/python3
"""The router's logs end to end: --log-format json writes one JSON object a line on stderr (every
line parses, with ts, level and msg, and the session, realm and peer of the event where it has
them), whatever peers send (an authentication failure, a protocol violation, a realm name with
quotes and control characters); the trace level (--loglevel=trace, Crossbar's spelling) logs
each message received and sent (a CALL and its RESULT) and points to tracing; --log-target
syslog leaves stderr alone; bad option values are usage errors."""

import json
import os
import re
import shutil
import subprocess
import tempfile
import unittest

from rt_harness import AsyncTestCase, RawWs, RouterProc, main, open_session, step, uri

TS = re.compile(r"^\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d\.\d{6}Z$")
LEVELS = {"error", "warn", "info", "debug", "trace"}


def log_config(tmp):
    """configs/test-e2e.json whose transport also takes ticket authentication (joe / right),
    failing without delay, with a key that has no effect in wampscope (a configuration
    warning at start-up)."""
    src = os.path.join(os.environ["RT_SOURCE_DIR"], "configs", "test-e2e.json")
    with open(src, encoding="utf-8") as f:
        cfg = json.load(f)
    worker = cfg["workers"][0]
    worker["transports"][0]["paths"]["ws"]["auth"] = {
        "anonymous": {"type": "static", "role": "anonymous"},
        "ticket": {"type": "static",
                   "principals": {"joe": {"ticket": "right", "role": "anonymous"}}}}
    worker["wampscope"]["limits"]["auth_failure_delay"] = 0
    worker["transports"][0]["endpoint"]["backlog"] = 50
    path = os.path.join(tmp, "logs.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


def no_duplicates(pairs):
    keys = [k for k, _ in pairs]
    if len(keys) != len(set(keys)):
        raise ValueError("duplicate keys %r" % keys)
    return dict(pairs)


def json_lines(text):
    """Every line of text as a JSON object without a key twice (the test fails on the first
    that is not one)."""
    out = []
    for n, line in enumerate(text.splitlines(), 1):
        try:
            obj = json.loads(line, object_pairs_hook=no_duplicates)
        except ValueError as e:
            raise AssertionError("stderr line %d is not JSON (%s): %r" % (n, e, line))
        if not isinstance(obj, dict):
            raise AssertionError("stderr line %d is not an object: %r" % (n, line))
        out.append(obj)
    return out


class LogTest(AsyncTestCase):
    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-logs-")
        self.config = log_config(self.tmp)
        self.router = None

    async def asyncTearDown(self):
        if self.router:
            self.router.cleanup()
        shutil.rmtree(self.tmp, ignore_errors=True)

    def start(self, *args):
        self.router = RouterProc(config=self.config, args=args).start()
        return self.router

    def stop(self):
        """Stops the router (SIGTERM, exit status 0) and returns its stderr."""
        try:
            self.router.wait_exit(self.router.terminate())
            return self.router.stderr_text()
        finally:
            self.router.cleanup()

    async def call_once(self):
        """A CALL from a msgpack caller to a json callee, and its RESULT."""
        callee = await open_session(self.router, "realm1", "json")
        caller = await open_session(self.router, "realm1", "msgpack")
        proc = uri(self, "echo")
        await step(callee.register(lambda x: x, proc))
        self.assertEqual(await step(caller.call(proc, "hi")), "hi")
        await caller.close()
        await callee.close()

    @staticmethod
    def close(ws):
        """After the router's ABORT: answers its close frame and waits for the end."""
        ws.recv_message()
        ws.read_until_eof()
        ws.sock.close()

    def misbehave(self):
        """A failed ticket authentication, a HELLO for a realm named with a quote, a newline and
        a control character, and a CALL before HELLO (a protocol violation)."""
        r = self.router
        ws = RawWs(r.host, r.port, r.path)
        ws.send_json([1, "realm1", {"roles": {"caller": {}}, "authmethods": ["ticket"],
                                    "authid": "joe"}])
        self.assertEqual(ws.recv_wamp()[0], 4)  # CHALLENGE
        ws.send_json([5, "wrong", {}])
        self.assertEqual(ws.recv_wamp()[0], 3)  # ABORT
        self.close(ws)
        ws = RawWs(r.host, r.port, r.path)
        ws.send_json([1, 'no"such\nrealm\u0001\u00e9', {"roles": {"caller": {}}}])
        self.assertEqual(ws.recv_wamp()[0], 3)  # ABORT
        self.close(ws)
        ws = RawWs(r.host, r.port, r.path)
        ws.send_json([48, 1, {}, "com.example.too.early"])
        m = ws.recv_wamp()
        self.assertEqual(m[0], 3)  # ABORT protocol_violation
        self.close(ws)

    async def test_json_lines_with_event_fields(self):
        self.start("--log-format", "json", "--loglevel=trace")
        await self.call_once()
        self.misbehave()
        lines = json_lines(self.stop())
        self.assertGreater(len(lines), 10)
        for obj in lines:
            self.assertRegex(obj.get("ts", ""), TS, obj)
            self.assertIn(obj.get("level"), LEVELS, obj)
            self.assertIsInstance(obj.get("msg"), str, obj)
            if "session" in obj:
                self.assertIsInstance(obj["session"], int, obj)

        def find(pred, what):
            hits = [o for o in lines if pred(o)]
            self.assertTrue(hits, "no line for %s in:\n%s" % (what, "\n".join(map(str, lines))))
            return hits[0]

        # The configuration's warning is a log line too.
        warning = find(lambda o: "with no effect in wampscope" in o["msg"], "config warning")
        self.assertEqual(warning["level"], "warn")
        # The trace level: the CALL received and its RESULT sent, with their fields.
        call = find(lambda o: o.get("type") == "CALL" and o.get("dir") == "rx", "rx CALL")
        self.assertEqual(call["level"], "trace")
        self.assertEqual(call["realm"], "realm1")
        self.assertGreater(call["bytes"], 0)
        self.assertTrue(call["peer"].startswith("127.0.0.1:"), call)
        result = find(lambda o: o.get("type") == "RESULT" and o.get("dir") == "tx", "tx RESULT")
        self.assertEqual(result["session"], call["session"])
        find(lambda o: o.get("type") == "INVOCATION" and o.get("dir") == "tx", "tx INVOCATION")
        find(lambda o: "Message tracing is the better tool" in o["msg"],
             "the trace level's pointer to tracing")
        # Peer-caused events carry the session, its realm and its peer.
        auth = find(lambda o: "authentication failed" in o["msg"], "the authentication failure")
        self.assertIsInstance(auth.get("session"), int, auth)
        self.assertEqual(auth.get("realm"), "realm1", auth)
        self.assertTrue(auth.get("peer", "").startswith("127.0.0.1:"), auth)
        pv = find(lambda o: "protocol violation" in o["msg"], "the protocol violation")
        self.assertIn("session", pv)
        self.assertTrue(pv.get("peer", "").startswith("127.0.0.1:"), pv)
        # The hostile realm name came through as text, escaped and decoded intact.
        find(lambda o: 'no"such\nrealm\u0001\u00e9' in o["msg"], "the odd realm name")

    async def test_text_trace_level(self):
        self.start("--loglevel", "trace")
        await self.call_once()
        err = self.stop()
        self.assertRegex(err, r"TRACE \[session \d+\] rx CALL \(msgpack\) dir=rx type=CALL "
                              r"realm=realm1 bytes=\d+")
        self.assertRegex(err, r"TRACE \[session \d+\] tx RESULT \(msgpack\)")
        self.assertIn("Message tracing is the better tool", err)

    async def test_debug_level_has_no_message_lines(self):
        self.start("--log-level", "debug")
        await self.call_once()
        err = self.stop()
        self.assertIn("DEBUG", err)
        self.assertNotIn("rx CALL", err)

    async def test_syslog_target_leaves_stderr(self):
        self.start("--log-target", "syslog", "--log-level", "debug")
        await self.call_once()
        # Only the configuration's diagnostics (checked before logging starts) are on stderr.
        err = self.stop()
        self.assertNotIn("joined realm", err)
        for line in err.splitlines():
            self.assertTrue(line.startswith("wampscope: ") and "warning" in line, line)


class OptionTest(unittest.TestCase):
    def run_router(self, *args):
        return subprocess.run([os.environ["RT_ROUTER_BIN"], *args], capture_output=True,
                              timeout=30)

    def test_bad_values_are_usage_errors(self):
        for args, needle in ((["--log-format", "xml"], "--log-format"),
                             (["--log-target", "file"], "--log-target"),
                             (["--loglevel=chatty", "--check-config"], "unknown log level")):
            r = self.run_router(*args)
            self.assertEqual(r.returncode, 2, args)
            self.assertIn(needle, r.stderr.decode(), args)

    def test_loglevel_spellings_accepted(self):
        for args in (["--loglevel=trace"], ["--loglevel", "trace"], ["--log-level=TRACE"]):
            r = self.run_router(*args, "--check-config")
            self.assertEqual(r.returncode, 0, (args, r.stderr.decode()))


if __name__ == "__main__":
    main()
