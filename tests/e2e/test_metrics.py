#!/usr/bin/python3
"""The metrics listener (wampscope.metrics) end to end: a router with the listener, traffic from
python3-autobahn clients, the text scraped over HTTP and parsed with Debian's
python3-prometheus-client parser; the values follow the traffic (sessions per realm and
transport, messages per type and serializer, bytes, a trace's records); `promtool check metrics`
(Debian's prometheus package) accepts the text; only GET of the path answers 200."""

import asyncio
import http.client
import json
import os
import shutil
import socket
import subprocess
import tempfile
import time
import unittest
from urllib.parse import urlparse

from autobahn.wamp.types import PublishOptions
from prometheus_client.parser import text_string_to_metric_families

from rt_harness import AsyncTestCase, RawWs, RouterProc, main, open_session, step, uri

TRANSPORT = "ws_e2e"  # the transport id in configs/test-e2e.json
MGMT = "crossbarfabriccenter."
NODE, WORKER = "e2e_node", "router1"  # configs/test-e2e.json


def metrics_config(tmp, extra_realms=0):
    """configs/test-e2e.json with the metrics listener and the flight recorder on, and
    extra_realms more realms (m0, m1, ...)."""
    src = os.path.join(os.environ["RT_SOURCE_DIR"], "configs", "test-e2e.json")
    with open(src, encoding="utf-8") as f:
        cfg = json.load(f)
    ws = cfg["workers"][0]["wampscope"]
    ws["metrics"] = {"endpoint": {"type": "tcp", "port": 0, "interface": "127.0.0.1"},
                     "path": "/metrics"}
    ws["tracing"]["flight_recorder"] = True
    # Persisted traces (test_persisted_trace_fsyncs) in tmp, fsynced at every tick's write.
    ws["tracing"]["data_dir"] = os.path.join(tmp, "data")
    ws["tracing"]["fsync"] = "batch"
    realms = cfg["workers"][0]["realms"]
    for i in range(extra_realms):
        realms.append({"name": "m%d" % i, "roles": realms[0]["roles"]})
    path = os.path.join(tmp, "metrics.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


def http_request(url, method="GET", path=None):
    """(status, headers, body text) of one request."""
    u = urlparse(url)
    conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
    try:
        conn.request(method, path or u.path)
        r = conn.getresponse()
        return r.status, dict((k.lower(), v) for k, v in r.getheaders()), r.read().decode()
    finally:
        conn.close()


class Scrape:
    """One scrape, parsed: value(name, **labels) of any sample."""

    def __init__(self, url):
        status, headers, self.text = http_request(url)
        assert status == 200, status
        assert headers["content-type"].startswith("text/plain; version=0.0.4"), headers
        self.families = {}
        self.samples = {}
        for fam in text_string_to_metric_families(self.text):
            self.families[fam.name] = fam
            for s in fam.samples:
                self.samples[(s.name, tuple(sorted(s.labels.items())))] = s.value

    def value(self, name, **labels):
        return self.samples.get((name, tuple(sorted(labels.items()))), 0.0)


class MetricsTest(AsyncTestCase):
    EXTRA_REALMS = 0

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-metrics-")
        self.router = RouterProc(config=metrics_config(self.tmp, self.EXTRA_REALMS)).start()
        urls = [u for u in self.router.urls if u.startswith("http://")]
        self.assertEqual(len(urls), 1, self.router.urls)
        self.url = urls[0]
        self.assertEqual(urlparse(self.url).hostname, "127.0.0.1")
        self.sessions = []

    async def asyncTearDown(self):
        try:
            for s in reversed(self.sessions):
                await s.close()
        finally:
            self.router.stop()
            shutil.rmtree(self.tmp, ignore_errors=True)

    async def session(self, serializer, realm="realm1"):
        s = await open_session(self.router, realm, serializer)
        self.sessions.append(s)
        return s

    async def test_values_follow_traffic(self):
        before = Scrape(self.url)
        self.assertEqual(before.value("wampscope_sessions", realm="realm1", transport=TRANSPORT), 0)
        build = [v for (name, _), v in before.samples.items() if name == "wampscope_build_info"]
        self.assertEqual(build, [1.0])
        self.assertEqual(before.families["wampscope_sessions"].type, "gauge")
        self.assertEqual(before.families["wampscope_messages_received"].type, "counter")

        callee = await self.session("json")
        caller = await self.session("msgpack")
        proc = uri(self, "add")
        await step(callee.register(lambda a, b: a + b, proc))
        for _ in range(3):
            self.assertEqual(await step(caller.call(proc, 2, 3)), 5)

        after = Scrape(self.url)
        self.assertEqual(after.value("wampscope_sessions", realm="realm1", transport=TRANSPORT), 2)
        self.assertEqual(after.value("wampscope_connections", transport=TRANSPORT), 2)
        self.assertEqual(after.value("wampscope_messages_received_total", type="CALL",
                                     serializer="msgpack"), 3)
        self.assertEqual(after.value("wampscope_messages_sent_total", type="INVOCATION",
                                     serializer="json"), 3)
        self.assertEqual(after.value("wampscope_messages_received_total", type="YIELD",
                                     serializer="json"), 3)
        self.assertEqual(after.value("wampscope_messages_sent_total", type="RESULT",
                                     serializer="msgpack"), 3)
        self.assertGreaterEqual(after.value("wampscope_registrations"),
                                before.value("wampscope_registrations") + 1)
        for name in ("wampscope_received_bytes_total", "wampscope_sent_bytes_total",
                     "wampscope_sessions_opened_total"):
            self.assertGreater(after.value(name), before.value(name), name)
        # The flight recorder keeps every message: its records moved with the calls.
        captured = "wampscope_trace_captured_records_total"
        self.assertGreaterEqual(after.value(captured, trace="flight-recorder"),
                                before.value(captured, trace="flight-recorder") + 12)
        self.assertEqual(after.value("wampscope_trace_running", trace="flight-recorder"), 1)
        self.assertGreater(after.value("process_resident_memory_bytes"), 0)
        self.assertGreater(after.value("process_open_fds"), 0)

        await caller.close()
        self.sessions.remove(caller)
        left = Scrape(self.url)
        self.assertEqual(left.value("wampscope_sessions", realm="realm1", transport=TRANSPORT), 1)
        self.assertEqual(left.value("wampscope_sessions_closed_total"),
                         before.value("wampscope_sessions_closed_total") + 1)

    async def test_persisted_trace_fsyncs(self):
        m = await self.session("msgpack", realm="mgmt")

        async def mgmt(proc, *args):
            return await step(m.call(MGMT + proc, NODE, WORKER, *args))

        await mgmt("start_trace", "disk", {"persist": True})
        pub = await self.session("json")
        topic = uri(self, "persisted")
        for i in range(20):
            await step(pub.publish(topic, i, options=PublishOptions(acknowledge=True)))
        # fsync "batch": the next tick writes the records and fsyncs them.
        fsyncs = "wampscope_trace_fsync_seconds_count"
        deadline = time.monotonic() + 10
        while Scrape(self.url).value(fsyncs, trace="disk") == 0:
            self.assertLess(time.monotonic(), deadline, "no fsync counted")
            await asyncio.sleep(0.05)
        await mgmt("stop_trace", "disk")
        meta = await mgmt("get_trace", "disk")
        self.assertGreaterEqual(meta["records"], 40)  # PUBLISH, PUBLISHED at least
        s = Scrape(self.url)
        self.assertEqual(s.families["wampscope_trace_fsync_seconds"].type, "histogram")
        self.assertEqual(s.value("wampscope_trace_records_persisted_total", trace="disk"),
                         meta["records"])
        count = s.value(fsyncs, trace="disk")
        self.assertGreaterEqual(count, 2)  # the segment and its index at least
        self.assertEqual(s.value("wampscope_trace_fsync_seconds_bucket", trace="disk", le="+Inf"),
                         count)
        self.assertGreater(s.value("wampscope_trace_fsync_seconds_sum", trace="disk"), 0)
        # Not for an in-memory trace.
        self.assertNotIn(("wampscope_trace_fsync_seconds_count",
                          (("trace", "flight-recorder"),)), s.samples)

    async def test_refused_handshakes_by_reason(self):
        before = Scrape(self.url)
        name = "wampscope_handshakes_refused_total"
        r = self.router
        for path, protocols in (("/nope", ("wamp.2.json",)), (r.path, ("wamp.2.cbor.x",))):
            ws = RawWs(r.host, r.port, path, protocols=protocols)
            self.assertNotEqual(ws.status, 101)
            ws.sock.close()
        after = Scrape(self.url)
        self.assertEqual(after.value(name, reason="path"), before.value(name, reason="path") + 1)
        self.assertEqual(after.value(name, reason="subprotocol"),
                         before.value(name, reason="subprotocol") + 1)
        self.assertEqual(after.value(name, reason="request"), before.value(name, reason="request"))

    async def test_promtool_accepts_the_text(self):
        promtool = shutil.which("promtool")
        if not promtool:
            self.skipTest("promtool not installed (Debian package prometheus)")
        s = await self.session("json")
        await step(s.publish(uri(self, "t"), 1, options=PublishOptions(acknowledge=True)))
        text = Scrape(self.url).text
        r = subprocess.run([promtool, "check", "metrics"], input=text.encode(),
                           capture_output=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stdout.decode() + r.stderr.decode())

    async def test_only_get_of_the_path(self):
        status, _, body = http_request(self.url, "GET", "/other")
        self.assertEqual(status, 404)
        status, headers, _ = http_request(self.url, "POST")
        self.assertEqual(status, 405)
        self.assertEqual(headers.get("allow"), "GET")
        # A WebSocket upgrade is not served here.
        u = urlparse(self.url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        try:
            conn.request("GET", u.path, headers={
                "Upgrade": "websocket", "Connection": "Upgrade", "Sec-WebSocket-Version": "13",
                "Sec-WebSocket-Key": "dGhlIHNhbXBsZSBub25jZQ==",
                "Sec-WebSocket-Protocol": "wamp.2.json"})
            try:
                status = conn.getresponse().status
            except (http.client.HTTPException, ConnectionError):
                status = None
        finally:
            conn.close()
        self.assertNotEqual(status, 101)
        # Still serving after all that.
        self.assertEqual(http_request(self.url)[0], 200)

    async def test_answer_closes_the_connection(self):
        """A scrape's answer is its connection's last (connection: close), so a request
        pipelined behind it is not left waiting for an answer: the connection closes once the
        answer is out, and the client asks again on a new one."""
        u = urlparse(self.url)
        sock = socket.create_connection((u.hostname, u.port), timeout=10)
        try:
            sock.sendall(b"GET %s HTTP/1.1\r\nHost: x\r\n\r\nGET /other HTTP/1.1\r\n"
                         b"Host: x\r\n\r\n" % u.path.encode())
            got = b""
            while True:
                chunk = sock.recv(65536)
                if not chunk:
                    break
                got += chunk
        finally:
            sock.close()
        head, body = got.split(b"\r\n\r\n", 1)
        lines = head.decode("latin-1").split("\r\n")
        self.assertTrue(lines[0].startswith("HTTP/1.1 200"), lines[0])
        headers = {k.strip().lower(): v.strip() for k, _, v in
                   (line.partition(":") for line in lines[1:])}
        self.assertEqual(headers["connection"], "close")
        self.assertEqual(len(body), int(headers["content-length"]))  # nothing after it
        self.assertIn(b"wampscope_sessions", body)
        self.assertEqual(http_request(self.url, "GET", "/other")[0], 404)


class LargeTextTest(MetricsTest):
    """A text far over the adapter's 16 KiB write chunk (one sessions series per realm), scraped
    twice by one client (each answer closes its connection: the client opens another)."""

    EXTRA_REALMS = 400

    test_values_follow_traffic = None
    test_promtool_accepts_the_text = None
    test_only_get_of_the_path = None
    test_refused_handshakes_by_reason = None
    test_answer_closes_the_connection = None

    async def test_large_text_in_chunks(self):
        await self.session("json", realm="m399")
        u = urlparse(self.url)
        conn = http.client.HTTPConnection(u.hostname, u.port, timeout=10)
        try:
            for _ in range(2):
                conn.request("GET", u.path)
                r = conn.getresponse()
                body = r.read().decode()
                self.assertEqual(r.status, 200)
                self.assertEqual(r.getheader("connection"), "close")
                self.assertEqual(int(r.getheader("content-length")), len(body.encode()))
                self.assertGreater(len(body), 16384)  # more than one chunk
                samples = {}
                for fam in text_string_to_metric_families(body):
                    for smp in fam.samples:
                        if smp.name == "wampscope_sessions":
                            samples[smp.labels["realm"]] = smp.value
                self.assertEqual(len(samples), 400 + 4)  # realm1..3, mgmt, m0..m399
                self.assertEqual(samples["m399"], 1)
                self.assertEqual(samples["m0"], 0)
        finally:
            conn.close()


class ConfigTest(unittest.TestCase):
    def test_check_config_refuses_bad_metrics(self):
        tmp = tempfile.mkdtemp(prefix="wampscope-metrics-")
        try:
            with open(metrics_config(tmp), encoding="utf-8") as f:
                cfg = json.load(f)
            cfg["workers"][0]["wampscope"]["metrics"] = {
                "endpoint": {"type": "unix", "path": os.path.join(tmp, "s")},
                "path": "metrics", "verbose": True}
            path = os.path.join(tmp, "bad.json")
            with open(path, "w", encoding="utf-8") as f:
                json.dump(cfg, f)
            r = subprocess.run([os.environ["RT_ROUTER_BIN"], "-c", path, "--check-config"],
                               capture_output=True, timeout=30)
            err = r.stderr.decode()
            self.assertEqual(r.returncode, 2, err)
            self.assertIn("wampscope.metrics.verbose: unknown key", err)
            self.assertIn("wampscope.metrics.endpoint.type: must be \"tcp\"", err)
            self.assertIn("wampscope.metrics.path: must start with \"/\"", err)
            self.assertIn("3 error(s)", err)
        finally:
            shutil.rmtree(tmp, ignore_errors=True)


if __name__ == "__main__":
    main()
