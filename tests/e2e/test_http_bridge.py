"""Crossbar's HTTP bridge on a web transport: "publisher" and "caller" paths (configs/README.md,
"HTTP bridge").

Plain urllib POSTs against a router whose web transport has a publisher and a caller path in a
role that may publish and call only below an "ok" prefix: python3-autobahn subscribers receive
the event (args and kwargs exact, JSON and MessagePack), a callee answers calls (one result,
several, keyword results, an application error), a call times out, a call whose HTTP client
goes away is cancelled at the callee; Crossbar's error answers (bad JSON, missing topic, not
authorized, body over the limit, GET, content type, require_tls); a bridge publish in a trace
with the bridge's identity; the answers in get_worker's stats. Then the trimmed copy of
Crossbar's rest examples (tests/data/crossbar-examples/rest-bridge) serves both.
"""

import asyncio
import base64
import datetime
import hashlib
import hmac
import http.client
import json
import os
import shutil
import socket
import tempfile
import unittest
import urllib.error
import urllib.parse
import urllib.request

import rt_harness as h

SRC = os.environ.get("RT_SOURCE_DIR", ".")
NODE, WORKER = "bridge_node", "router1"
OK = "com.wampscope.e2e.bridge.ok."
LIMIT = 4096


def write_config(tmp, limits=None):
    allow = {"call": True, "register": True, "publish": True, "subscribe": True}
    bridge_allow = {"call": True, "register": False, "publish": True, "subscribe": False}
    cfg = {"version": 2, "controller": {"id": NODE}, "workers": [{
        "type": "router", "id": WORKER,
        "realms": [{"name": "realm1", "roles": [
            {"name": "anonymous", "permissions": [{"uri": "", "match": "prefix", "allow": allow}]},
            {"name": "bridge", "permissions": [
                {"uri": OK, "match": "prefix", "allow": bridge_allow}]},
        ]}],
        "transports": [{"type": "web",
                        "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": 0},
                        "paths": {
                            "ws": {"type": "websocket", "serializers": ["json", "msgpack"]},
                            "publish": {"type": "publisher", "realm": "realm1", "role": "bridge",
                                        "options": {"post_body_limit": LIMIT, "debug": True}},
                            "call": {"type": "caller", "realm": "realm1", "role": "bridge",
                                     "options": {"call_timeout": 5000}},
                            "signed": {"type": "publisher", "realm": "realm1", "role": "bridge",
                                       "options": {"key": "foobar", "secret": "s3cret",
                                                   "timestamp_delta_limit": 10}},
                            "lan-only": {"type": "publisher", "realm": "realm1", "role": "bridge",
                                         "options": {"require_ip": ["10.0.0.0/8", "fd00::/8"]}},
                            "local-only": {"type": "publisher", "realm": "realm1",
                                           "role": "bridge",
                                           "options": {"require_ip": ["127.0.0.0/8"]}},
                            "tls-only": {"type": "publisher", "realm": "realm1",
                                         "role": "bridge", "options": {"require_tls": True}},
                        }}],
        "wampscope": {"management": {"enabled": True, "realm": "mgmt"}},
    }]}
    if limits:
        cfg["workers"][0]["wampscope"]["limits"] = limits
    path = os.path.join(tmp, "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


def post(port, path, body, content_type="application/json", method="POST", timeout=10):
    """(status, parsed JSON answer); body: bytes, or a value sent as JSON."""
    data = body if isinstance(body, bytes) else json.dumps(body).encode()
    if content_type is None:
        # urllib would add a form Content-Type; http.client sends none.
        c = http.client.HTTPConnection("127.0.0.1", port, timeout=timeout)
        try:
            c.request(method, path, body=data if method != "GET" else None)
            r = c.getresponse()
            return r.status, json.loads(r.read())
        finally:
            c.close()
    req = urllib.request.Request("http://127.0.0.1:%d%s" % (port, path), data=data,
                                 method=method)
    if content_type:
        req.add_header("Content-Type", content_type)
    try:
        with urllib.request.urlopen(req, timeout=timeout) as r:
            return r.status, json.loads(r.read())
    except urllib.error.HTTPError as e:
        return e.code, json.loads(e.read())


def signed_query(body, key="foobar", secret=b"s3cret", age=0.0, seq=1, nonce=4711):
    """Crossbar's signed request arguments for body (as its rest examples compute them)."""
    ts = (datetime.datetime.now(datetime.timezone.utc) - datetime.timedelta(seconds=age))
    ts = ts.strftime("%Y-%m-%dT%H:%M:%S.%f")[:-3] + "Z"
    mac = hmac.new(secret, digestmod=hashlib.sha256)
    for part in (key, ts, str(seq), str(nonce)):
        mac.update(part.encode())
    mac.update(body)
    sig = base64.urlsafe_b64encode(mac.digest()).decode()
    return "?" + urllib.parse.urlencode({"key": key, "timestamp": ts, "seq": seq, "nonce": nonce,
                                         "signature": sig})


def deny(text):
    return {"error": text, "args": [], "kwargs": {}}


class BridgeTest(h.AsyncTestCase):
    LIMITS = None

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-bridge-")
        self.router = h.RouterProc(config=write_config(self.tmp, self.LIMITS))
        try:
            self.router.start()
        except BaseException:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        self.port = self.router.port
        self._sessions = []

    async def asyncTearDown(self):
        try:
            await h.close_sessions(self._sessions)
        finally:
            try:
                self.router.stop()
            finally:
                shutil.rmtree(self.tmp, ignore_errors=True)

    async def session(self, serializer="json", realm="realm1"):
        s = await h.open_session(self.router, realm, serializer)
        self._sessions.append(s)
        return s

    async def post(self, path, body, **kw):
        """post() off the event loop, so that the test's own WAMP clients keep running."""
        return await h.step(asyncio.get_running_loop().run_in_executor(
            None, lambda: post(self.port, path, body, **kw)))

    async def test_publish_reaches_subscribers_exactly(self):
        got = []
        done = asyncio.get_running_loop().create_future()
        for ser in h.SERIALIZERS:
            s = await self.session(ser)

            def on_event(*args, _ser=ser, **kwargs):
                got.append((_ser, list(args), kwargs))
                if len(got) == 2 and not done.done():
                    done.set_result(None)
            await h.step(s.subscribe(on_event, OK + "topic"))
        status, answer = await self.post("/publish", {"topic": OK + "topic", "args": h.ARGS,
                                                      "kwargs": h.KWARGS})
        self.assertEqual(status, 200)
        self.assertEqual(list(answer), ["id"])
        self.assertTrue(1 <= answer["id"] <= 2**53)
        await h.step(done)
        self.assertEqual(sorted(got, key=lambda g: g[0]),
                         [("json", h.ARGS, h.KWARGS), ("msgpack", h.ARGS, h.KWARGS)])
        # Crossbar's options pass on: exclude a subscriber by its session id.
        s = await self.session()
        events = []
        await h.step(s.subscribe(lambda *a: events.append(a), OK + "excl"))
        status, _ = await self.post("/publish", {"topic": OK + "excl", "args": [1],
                                                 "options": {"exclude": [s._session_id]}})
        self.assertEqual(status, 200)
        status, _ = await self.post("/publish", {"topic": OK + "excl", "args": [2]})
        await h.step(self._until(lambda: events))
        self.assertEqual(events, [(2,)])

    async def _until(self, cond):
        while not cond():
            await asyncio.sleep(0.02)

    async def test_call_answers(self):
        callee = await self.session("msgpack")
        await h.step(callee.register(lambda a, b: a + b, OK + "add"))
        await h.step(callee.register(lambda: None, OK + "nothing"))

        from autobahn.wamp.exception import ApplicationError
        from autobahn.wamp.types import CallResult

        def several(*args, **kwargs):
            return CallResult(*args, **kwargs)

        def fail(*args):
            raise ApplicationError(OK + "error.oops", "no", 42, detail={"k": [1]})
        await h.step(callee.register(several, OK + "several"))
        await h.step(callee.register(fail, OK + "fail"))
        self.assertEqual(await self.post("/call", {"procedure": OK + "add", "args": [2, 3]}),
                         (200, {"args": [5]}))
        self.assertEqual(await self.post("/call", {"procedure": OK + "nothing"}),
                         (200, {"args": [None]}))
        self.assertEqual(await self.post("/call", {"procedure": OK + "several",
                                                   "args": h.ARGS, "kwargs": h.KWARGS}),
                         (200, {"args": h.ARGS, "kwargs": h.KWARGS}))
        self.assertEqual(await self.post("/call", {"procedure": OK + "several",
                                                   "kwargs": {"a": 1}}),
                         (200, {"kwargs": {"a": 1}}))
        # A WAMP error is a 200 answer carrying it, as in Crossbar.
        self.assertEqual(await self.post("/call", {"procedure": OK + "fail"}),
                         (200, {"error": OK + "error.oops", "args": ["no", 42],
                                "kwargs": {"detail": {"k": [1]}}}))
        self.assertEqual(await self.post("/call", {"procedure": OK + "none"}),
                         (200, {"error": "wamp.error.no_such_procedure",
                                "args": ["no callee registered for this procedure"],
                                "kwargs": {}}))
        self.assertEqual(await self.post("/call", {"procedure": "com.other.add",
                                                   "args": [1, 2]}),
                         (200, {"error": "wamp.error.not_authorized",
                                "args": ["not authorized to call this procedure"],
                                "kwargs": {}}))

    async def test_call_timeout_and_client_gone(self):
        callee = await self.session()
        started = []
        cancelled = asyncio.get_running_loop().create_future()

        async def slow():
            started.append(1)
            try:
                await asyncio.sleep(60)
            except asyncio.CancelledError:
                if not cancelled.done():
                    cancelled.set_result(None)
                raise
        await h.step(callee.register(slow, OK + "slow"))
        # The call's own timeout: the router ends it with wamp.error.timeout.
        status, answer = await self.post("/call", {"procedure": OK + "slow",
                                                   "options": {"timeout": 300}})
        self.assertEqual((status, answer["error"]), (200, "wamp.error.timeout"))
        await h.step(cancelled)  # the callee was interrupted
        # The HTTP client goes away while its call runs: the call is cancelled at the callee.
        cancelled = asyncio.get_running_loop().create_future()
        started.clear()
        body = json.dumps({"procedure": OK + "slow"}).encode()
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        sock.sendall(b"POST /call HTTP/1.1\r\nHost: x\r\nContent-Type: application/json\r\n"
                     b"Content-Length: %d\r\n\r\n%s" % (len(body), body))
        await h.step(self._until(lambda: started))
        sock.close()
        await h.step(cancelled)
        # The router still answers.
        self.assertEqual((await self.post("/publish", {"topic": OK + "t"}))[0], 200)

    def raw(self, data, reads):
        """Sends data on a fresh connection and reads what comes back until reads(so_far) says
        it is enough (or the router closes). Blocking: run off the event loop."""
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        try:
            sock.sendall(data)
            got = b""
            while not reads(got):
                chunk = sock.recv(65536)
                if not chunk:
                    break
                got += chunk
            return sock, got
        except BaseException:
            sock.close()
            raise

    async def test_head_answer_has_no_body(self):
        """HEAD on a bridge path: the 405's headers alone (its Content-Length says what a GET
        would get), so that the next answer on the connection starts where it should."""
        def run():
            sock, got = self.raw(b"HEAD /call HTTP/1.1\r\nHost: x\r\n\r\n"
                                 b"GET /call HTTP/1.1\r\nHost: x\r\n\r\n",
                                 lambda g: g.count(b"\r\n\r\n") >= 2 and
                                 g.rstrip().endswith(b"}"))
            sock.close()
            return got
        got = await h.step(asyncio.get_running_loop().run_in_executor(None, run))
        head, rest = got.split(b"\r\n\r\n", 1)
        self.assertTrue(head.startswith(b"HTTP/1.1 405 "), head)
        self.assertIn(b"content-length:", head.lower())
        self.assertTrue(rest.startswith(b"HTTP/1.1 405 "), rest[:80])  # no body in between
        second_head, body = rest.split(b"\r\n\r\n", 1)
        length = int([line.split(b":", 1)[1] for line in second_head.split(b"\r\n")
                      if line.lower().startswith(b"content-length:")][0])
        self.assertEqual(len(body), length)
        self.assertEqual(json.loads(body)["error"],
                         "Method not accepted by the REST bridge. (GET not allowed, only POST, "
                         "PUT)")

    async def test_expect_100_continue(self):
        """A client that asks (curl does for larger bodies) is told to go on before it sends the
        body, then gets its answer."""
        sub = await self.session()
        events = h.Events()
        await h.step(sub.subscribe(events, OK + "expect"))
        body = json.dumps({"topic": OK + "expect", "args": ["x" * 1000]}).encode()

        def run():
            sock, got = self.raw(b"POST /publish HTTP/1.1\r\nHost: x\r\n"
                                 b"Content-Type: application/json\r\n"
                                 b"Expect: 100-continue\r\nContent-Length: %d\r\n\r\n"
                                 % len(body), lambda g: b"\r\n\r\n" in g)
            try:
                first = got
                sock.sendall(body)
                while got.count(b"\r\n\r\n") < 2 or not got.rstrip().endswith(b"}"):
                    chunk = sock.recv(65536)
                    if not chunk:
                        break
                    got += chunk
                return first, got
            finally:
                sock.close()
        first, got = await h.step(asyncio.get_running_loop().run_in_executor(None, run))
        self.assertEqual(first, b"HTTP/1.1 100 Continue\r\n\r\n")
        final = got[len(first):]
        self.assertTrue(final.startswith(b"HTTP/1.1 200 "), final[:80])
        self.assertIn("id", json.loads(final.split(b"\r\n\r\n", 1)[1]))
        await events.wait_for(1)
        self.assertEqual(events.args0(), ["x" * 1000])

    async def test_crossbar_error_answers(self):
        cases = [
            (b"{bad", 400, deny("Request body was invalid JSON.")),
            (b"[1, 2]", 400,
             deny("Request body was valid JSON, but not well formed (must be a dict).")),
            ({"args": [1]}, 400,
             deny("Request body was valid JSON, but not well formed (missing key 'topic').")),
            ({"topic": OK + "x", "args": {"a": 1}}, 400,
             deny("Request body was valid JSON, but not well formed ('args' must be a list).")),
            (b'"\xff"', 400, deny("Non-decodable request body, was not UTF-8.")),
            ({"topic": OK + "x", "args": ["x" * LIMIT]}, 413,
             deny("Request too long. (%d is longer than accepted %d)"
                  % (len(json.dumps({"topic": OK + "x", "args": ["x" * LIMIT]})), LIMIT))),
        ]
        for body, status, answer in cases:
            self.assertEqual(await self.post("/publish", body), (status, answer), str(body)[:60])
        # Not authorized: Crossbar answers the WAMP error with 200.
        self.assertEqual(await self.post("/publish", {"topic": "com.other.topic"}),
                         (200, {"error": "wamp.error.not_authorized",
                                "args": ["not authorized to publish to this topic"],
                                "kwargs": {}}))
        self.assertEqual(await self.post("/publish", b"", method="GET", content_type=None),
                         (405, deny("Method not accepted by the REST bridge. (GET not allowed, "
                                    "only POST, PUT)")))
        self.assertEqual(await self.post("/publish", {"topic": OK + "x"},
                                         content_type="text/plain"),
                         (400, deny("Non-accepted content type. (must be one of "
                                    "'application/json', not 'text/plain')")))
        self.assertEqual(await self.post("/tls-only", {"topic": OK + "x"}),
                         (400, deny("Malformed request to the REST bridge.")))
        self.assertEqual(await self.post("/lan-only", {"topic": OK + "x"}),
                         (400, deny("Request denied based on IP address.")))
        self.assertEqual((await self.post("/local-only", {"topic": OK + "x"}))[0], 200)
        # PUT is accepted as POST; so is a body without Content-Type.
        self.assertEqual((await self.post("/publish", {"topic": OK + "x"}, method="PUT"))[0], 200)
        self.assertEqual((await self.post("/publish", {"topic": OK + "x"},
                                          content_type=None))[0], 200)
        # A chunked body (no Content-Length) is refused from its head on, before any chunk is
        # read: request bodies need a Content-Length. (The client sends no chunk: the router
        # answers and closes, and chunks still in flight would only race with that close.)
        sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
        try:
            sock.sendall(b"POST /publish HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n"
                         b"Content-Type: application/json\r\n\r\n")
            data = b""
            while b"\r\n\r\n" not in data:
                more = sock.recv(4096)
                if not more:
                    break
                data += more
            self.assertTrue(data.startswith(b"HTTP/1.1 411 "), data[:60])
        finally:
            sock.close()
        # Counted: get_worker's stats count the answers by status class.
        m = await self.session(realm="mgmt")
        w = await h.step(m.call("crossbarfabriccenter.remote.node.get_worker", NODE, WORKER))
        st = w["stats"]
        self.assertEqual([st["http_responses_%dxx" % c] for c in (2, 4)], [4, 11])

    async def test_signed_requests(self):
        s = await self.session()
        events = []
        await h.step(s.subscribe(lambda *a: events.append(a), OK + "signed"))
        body = json.dumps({"topic": OK + "signed", "args": ["ok"]}).encode()
        status, answer = await self.post("/signed" + signed_query(body), body)
        self.assertEqual((status, list(answer)), (200, ["id"]))
        await h.step(self._until(lambda: events))
        self.assertEqual(events, [("ok",)])
        self.assertEqual(await self.post("/signed" + signed_query(body, secret=b"wrong"), body),
                         (401, deny("REST bridge signature secret not valid.")))
        self.assertEqual(await self.post("/signed" + signed_query(body, key="other"), body),
                         (401, deny("REST bridge signature key not valid.")))
        # The body signed is the body sent.
        other = json.dumps({"topic": OK + "signed", "args": ["forged"]}).encode()
        self.assertEqual(await self.post("/signed" + signed_query(body), other),
                         (401, deny("REST bridge signature secret not valid.")))
        self.assertEqual(await self.post("/signed" + signed_query(body, age=60), body),
                         (400, deny("Request expired, too old timestamp.")))
        self.assertEqual(await self.post("/signed", body),
                         (400, deny("REST bridge signature was invalid (missing mandatory field "
                                    "- 'key' field missing).")))
        self.assertEqual(events, [("ok",)])

    async def test_bridge_publish_is_traced(self):
        m = await self.session(realm="mgmt")
        pre = "crossbarfabriccenter."
        await h.step(m.call(pre + "start_trace", NODE, WORKER, "bridge",
                            {"realms": ["realm1"]}))
        s = await self.session()
        await h.step(s.subscribe(lambda *a: None, OK + "traced"))
        status, answer = await self.post("/publish", {"topic": OK + "traced", "args": [7]})
        self.assertEqual(status, 200)
        recs = await h.step(m.call(pre + "get_trace_data", NODE, WORKER, "bridge", 0, None, 100))
        pub = [r for r in recs if r["msg_type"] == "Publish"]
        self.assertEqual(len(pub), 1, recs)
        self.assertEqual((pub[0]["direction"], pub[0]["uri"], pub[0]["authid"],
                          pub[0]["authrole"]), ("rx", OK + "traced", "http-bridge:/publish",
                                                "bridge"))
        published = [r for r in recs if r["msg_type"] == "Published"]
        self.assertEqual([r["session_id"] for r in published], [pub[0]["session_id"]])
        self.assertEqual(published[0]["msg"][2], answer["id"])
        self.assertTrue(any(r["msg_type"] == "Event" and r["session_id"] == s._session_id
                            for r in recs))


class BridgeSessionLimitTest(BridgeTest):
    """A bridge request is a session: the session limits apply to it."""
    LIMITS = {"max_sessions_per_realm": 1}

    async def test_session_limit_refuses_with_503(self):
        s = await self.session()
        self.assertEqual(await self.post("/publish", {"topic": OK + "t"}),
                         (503, {"error": "wampscope.error.limit_reached",
                                "args": ["limit reached: wampscope.limits.max_sessions_per_realm "
                                         "(1)"],
                                "kwargs": {}}))
        await s.close()
        self._sessions.remove(s)
        self.assertEqual((await self.post("/publish", {"topic": OK + "t"}))[0], 200)

    test_publish_reaches_subscribers_exactly = None
    test_call_answers = None
    test_call_timeout_and_client_gone = None
    test_crossbar_error_answers = None
    test_signed_requests = None
    test_bridge_publish_is_traced = None
    test_head_answer_has_no_body = None
    test_expect_100_continue = None


class CrossbarRestExampleTest(h.AsyncTestCase):
    async def test_rest_example_publishes_and_calls(self):
        config = os.path.join(SRC, "tests", "data", "crossbar-examples", "rest-bridge",
                              ".crossbar", "config.json")
        router = h.RouterProc(config=config).start()
        self.addCleanup(router.cleanup)
        s = await h.open_session(router, "realm1", "json")
        got = asyncio.get_running_loop().create_future()
        await h.step(s.subscribe(lambda *a, **kw: got.set_result((a, kw)), "com.myapp.topic1"))
        await h.step(s.register(lambda x: x * 2, "com.myapp.double"))
        loop = asyncio.get_running_loop()
        status, answer = await h.step(loop.run_in_executor(None, lambda: post(
            router.port, "/publish", {"topic": "com.myapp.topic1", "args": ["Hello, world"]})))
        self.assertEqual(status, 200)
        self.assertEqual(await h.step(got), (("Hello, world",), {}))
        self.assertEqual(await h.step(loop.run_in_executor(None, lambda: post(
            router.port, "/call", {"procedure": "com.myapp.double", "args": [21]}))),
            (200, {"args": [42]}))
        body = json.dumps({"topic": "com.myapp.topic1", "args": ["signed"]}).encode()
        got = asyncio.get_running_loop().create_future()
        status, _ = await h.step(loop.run_in_executor(None, lambda: post(
            router.port, "/publish-signed" + signed_query(body, secret=b"secret"), body)))
        self.assertEqual(status, 200)
        self.assertEqual(await h.step(got), (("signed",), {}))
        await s.close()
        router.stop()


if __name__ == "__main__":
    unittest.main()
