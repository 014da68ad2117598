"""The web transport's HTTP services next to WAMP (configs/README.md, "web transport").

Checks, against a router started with a web transport made per test class (a static tree in a
temporary directory, relative to the config file as Crossbar resolves it): static files byte for
byte (also one of several chunks), HEAD, conditional GET (304), keep-alive, 404, 405, every way
out of the static directory refused (raw requests with "..", "%2e%2e", "..%2f", "//", NUL, a
symbolic link out of the directory), directory index, listing off and on (names escaped), the
redirect, nodeinfo, the trace viewer at /trace/ (the file embedded from mgmt/viewer/), the HTTP
answers counted in get_worker's stats, and WAMP on /ws still joining with python3-autobahn's
defaults. The same over TLS on one listener. Then trimmed copies of Crossbar's example
configurations (tests/data/crossbar-examples/) load and serve.
"""

import asyncio
import email.utils
import http.client
import json
import os
import shutil
import socket
import ssl
import tempfile
import threading
import time
import unittest
import urllib.parse

import rt_harness as h
from test_client_defaults import run_default_client
from test_rawsocket import make_cert, open_raw_session, open_ws

SRC = os.environ.get("RT_SOURCE_DIR", ".")
NODE, WORKER = "web_node", "router1"
SECRET = "root:x:0:0:secret\n"
BIG = bytes((i * 7 + i // 251) & 0xFF for i in range(300 * 1024 + 17))  # several 32 KiB chunks


def realm(name="realm1"):
    allow = {"call": True, "register": True, "publish": True, "subscribe": True}
    return {"name": name, "roles": [{"name": "anonymous", "permissions": [
        {"uri": "", "match": "prefix", "allow": allow}]}]}


def make_tree(tmp):
    """tmp/node/www (served), tmp/secret (not served, reachable only by a link out of www)."""
    www = os.path.join(tmp, "node", "www")
    os.makedirs(os.path.join(www, "sub"))
    os.makedirs(os.path.join(www, "plain"))
    os.makedirs(os.path.join(tmp, "secret"))
    with open(os.path.join(tmp, "secret", "passwd"), "w") as f:
        f.write(SECRET)
    with open(os.path.join(www, "hello.txt"), "w") as f:
        f.write("hello, world\n")
    with open(os.path.join(www, "big.bin"), "wb") as f:
        f.write(BIG)
    with open(os.path.join(www, "sub", "index.html"), "w") as f:
        f.write("<p>sub</p>\n")
    with open(os.path.join(www, "plain", "<b>&x.txt"), "w") as f:
        f.write("x")
    with open(os.path.join(www, "app.svg"), "w") as f:
        f.write("<svg/>")
    os.symlink(os.path.join(tmp, "secret"), os.path.join(www, "out"))
    os.symlink(os.path.join(tmp, "secret", "passwd"), os.path.join(www, "leak.txt"))


def write_config(tmp, tls=None):
    """tmp/node/config.json: one web transport with every service; directories relative. With
    tls, the web transport uses it, and a plain websocket transport comes first (the harness
    starts a router by its ws:// URL)."""
    endpoint = {"type": "tcp", "interface": "127.0.0.1", "port": 0}
    plain = []
    if tls:
        endpoint["tls"] = tls
        plain = [{"type": "websocket", "endpoint": dict(endpoint, tls=None)}]
        del plain[0]["endpoint"]["tls"]
    cfg = {"version": 2, "controller": {"id": NODE}, "workers": [{
        "type": "router", "realms": [realm()],
        "transports": plain + [{"type": "web", "endpoint": endpoint, "paths": {
            "/": {"type": "static", "directory": "www"},
            "ws": {"type": "websocket"},
            "files": {"type": "static", "directory": "www",
                      "options": {"enable_directory_listing": True, "cache_timeout": None,
                                  "mime_types": {".svg": "image/x-test"}}},
            "old": {"type": "redirect", "url": "https://example.com/new?x=1"},
            "info": {"type": "nodeinfo"},
            "trace": {"type": "wampscope-trace-viewer"},
        }}],
        "wampscope": {"management": {"enabled": True, "realm": "mgmt"}},
    }]}
    path = os.path.join(tmp, "node", "config.json")
    with open(path, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    return path


def raw_request(port, target, method="GET", ctx=None):
    """Sends one request line as given (no client-side normalisation); returns (status or None
    when the router closed without an answer, the whole answer)."""
    sock = socket.create_connection(("127.0.0.1", port), timeout=10)
    if ctx:
        sock = ctx.wrap_socket(sock, server_hostname="localhost")
    try:
        sock.sendall(b"%s %s HTTP/1.1\r\nHost: 127.0.0.1\r\nConnection: close\r\n\r\n"
                     % (method.encode(), target))
        data = b""
        while True:
            try:
                chunk = sock.recv(65536)
            except (ConnectionResetError, ssl.SSLError):
                break
            if not chunk:
                break
            data += chunk
    finally:
        sock.close()
    if not data.startswith(b"HTTP/1.1 "):
        return None, data
    return int(data[9:12]), data


class WebTestBase(h.AsyncTestCase):
    TLS = False

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.tmp = tempfile.mkdtemp(prefix="wampscope-web-")
        make_tree(self.tmp)
        self.ctx = None
        tls = None
        if self.TLS:
            key, cert = make_cert(self.tmp)
            tls = {"key": key, "certificate": cert}
            self.ctx = ssl.create_default_context(cafile=cert)
        self.router = h.RouterProc(config=write_config(self.tmp, tls))
        try:
            self.router.start()
        except BaseException:
            shutil.rmtree(self.tmp, ignore_errors=True)
            raise
        self._sessions = []
        self.port = self.router.port
        if self.TLS:
            wss = [u for u in self.router.urls if u.startswith("wss://")]
            self.assertEqual(len(wss), 1, self.router.urls)
            self.assertTrue(wss[0].endswith("/ws"), wss)
            self.port = int(wss[0].split(":")[2].split("/")[0])

    async def asyncTearDown(self):
        try:
            await h.close_sessions(self._sessions)
        finally:
            try:
                if self.router.proc and self.router.proc.poll() is None:
                    self.router.stop()
                else:
                    self.router.cleanup()
            finally:
                shutil.rmtree(self.tmp, ignore_errors=True)

    def conn(self):
        if self.ctx:
            return http.client.HTTPSConnection("localhost", self.port, timeout=10,
                                               context=self.ctx)
        return http.client.HTTPConnection("127.0.0.1", self.port, timeout=10)

    def get(self, path, method="GET", headers=None):
        c = self.conn()
        try:
            c.request(method, path, headers=headers or {})
            r = c.getresponse()
            return r.status, {k.lower(): v for k, v in r.getheaders()}, r.read()
        finally:
            c.close()


class WebTest(WebTestBase):
    async def test_static_files_exact_bytes(self):
        status, hdrs, body = self.get("/hello.txt")
        self.assertEqual((status, body), (200, b"hello, world\n"))
        self.assertEqual(hdrs["content-type"], "text/plain; charset=utf-8")
        self.assertEqual(hdrs["content-length"], "13")
        self.assertEqual(hdrs["cache-control"], "max-age=43200, public")  # Crossbar's default
        self.assertIn("etag", hdrs)
        self.assertIn("last-modified", hdrs)
        # Every answer is dated (RFC 9110 IMF-fixdate), with the router's clock.
        sent = email.utils.parsedate_to_datetime(hdrs["date"])
        self.assertRegex(hdrs["date"], r"^[A-Z][a-z]{2}, \d{2} [A-Z][a-z]{2} \d{4} "
                                       r"\d{2}:\d{2}:\d{2} GMT$")
        self.assertLess(abs(sent.timestamp() - time.time()), 5)
        status, hdrs, body = self.get("/big.bin")
        self.assertEqual(status, 200)
        self.assertEqual(hdrs["content-type"], "application/octet-stream")
        self.assertEqual(int(hdrs["content-length"]), len(BIG))
        self.assertEqual(body, BIG)
        # The same directory under another key, with its own options.
        status, hdrs, body = self.get("/files/app.svg")
        self.assertEqual((status, hdrs["content-type"], body), (200, "image/x-test", b"<svg/>"))
        self.assertNotIn("cache-control", hdrs)  # cache_timeout null
        status, hdrs, _ = self.get("/app.svg")
        self.assertEqual(hdrs["content-type"], "image/svg+xml")

    async def test_head_conditional_keepalive(self):
        status, hdrs, body = self.get("/big.bin", method="HEAD")
        self.assertEqual((status, body), (200, b""))
        self.assertEqual(int(hdrs["content-length"]), len(BIG))
        _, hdrs, _ = self.get("/hello.txt")
        status, _, body = self.get("/hello.txt", headers={"If-None-Match": hdrs["etag"]})
        self.assertEqual((status, body), (304, b""))
        status, _, body = self.get("/hello.txt",
                                   headers={"If-Modified-Since": hdrs["last-modified"]})
        self.assertEqual(status, 304)
        status, _, body = self.get("/hello.txt", headers={"If-None-Match": 'W/"other"'})
        self.assertEqual((status, body), (200, b"hello, world\n"))
        # Several requests on one connection.
        c = self.conn()
        try:
            for path, want in (("/hello.txt", b"hello, world\n"), ("/big.bin", BIG),
                               ("/sub/", b"<p>sub</p>\n"), ("/missing", None)):
                c.request("GET", path)
                r = c.getresponse()
                body = r.read()
                if want is None:
                    self.assertEqual(r.status, 404)
                else:
                    self.assertEqual((r.status, body), (200, want))
        finally:
            c.close()

    async def test_errors_404_405(self):
        self.assertEqual(self.get("/nope.txt")[0], 404)
        self.assertEqual(self.get("/files/nope/")[0], 404)
        for method in ("POST", "PUT", "DELETE", "OPTIONS"):
            status, hdrs, _ = self.get("/hello.txt", method=method)
            self.assertEqual(status, 405, method)
            self.assertEqual(hdrs["allow"], "GET, HEAD")

    async def test_refused_body_answer_survives(self):
        """A refused request whose body is still arriving: the answer reaches the client whole,
        then a clean end of stream (the router shuts its side and drains the rest: a lingering
        close), never a reset that would destroy the answer. Then a chunked body (411)."""
        body_len = 16 * 1024 * 1024
        heads = (b"POST /hello.txt HTTP/1.1\r\nHost: x\r\nContent-Length: %d\r\n\r\n" % body_len,
                 b"POST /hello.txt HTTP/1.1\r\nHost: x\r\nTransfer-Encoding: chunked\r\n\r\n")
        for head, status in zip(heads, (405, 411)):
            sock = socket.create_connection(("127.0.0.1", self.port), timeout=10)
            sent = [0]

            def pour():
                chunk = b"x" * 65536
                try:
                    sock.sendall(head)
                    while sent[0] < body_len:
                        sock.sendall(chunk)
                        sent[0] += len(chunk)
                except OSError:
                    pass  # the router closed when its linger time ran out, or after EOF

            t = threading.Thread(target=pour)
            t.start()
            try:
                data = b""
                while True:
                    more = sock.recv(65536)  # ConnectionResetError fails the test
                    if not more:
                        break
                    data += more
                self.assertTrue(data.startswith(b"HTTP/1.1 %d " % status), data[:60])
                head_end = data.index(b"\r\n\r\n") + 4
                hdrs = dict(line.split(b": ", 1) for line in data[:head_end - 4].split(b"\r\n")[1:])
                self.assertEqual(len(data) - head_end, int(hdrs[b"content-length"]))
                self.assertEqual(hdrs[b"connection"], b"close")
            finally:
                sock.shutdown(socket.SHUT_WR)
                t.join(30)
                sock.close()
            self.assertFalse(t.is_alive())
        # The router goes on serving.
        self.assertEqual(self.get("/hello.txt")[0], 200)

    async def test_no_way_out_of_the_directory(self):
        port = self.port
        for target in (b"/../secret/passwd", b"/../../secret/passwd", b"/%2e%2e/secret/passwd",
                       b"/%2E%2E/%2e%2e/secret/passwd", b"/..%2fsecret%2fpasswd",
                       b"/files/..%2f..%2fsecret/passwd", b"//secret/passwd",
                       b"/sub/../../secret/passwd", b"/out/passwd", b"/files/out/passwd",
                       b"/leak.txt", b"/files/leak.txt", b"/hello.txt%00.png",
                       b"/out/", b"/files/out/", b"/.%2e/secret/passwd"):
            status, data = raw_request(port, target, ctx=self.ctx)
            self.assertNotIn(SECRET.encode(), data, target)
            self.assertNotEqual(status, 200, target)
        # The listing of a directory that holds the links does not follow them either.
        status, _, body = self.get("/files/")
        self.assertEqual(status, 200)
        self.assertNotIn(b"passwd", body)

    async def test_directories_and_listing(self):
        self.assertEqual(self.get("/")[0], 404)  # no index.html, listing off (Crossbar default)
        self.assertEqual(self.get("/plain/")[0], 404)
        status, hdrs, _ = self.get("/sub")
        self.assertEqual((status, hdrs["location"]), (301, "/sub/"))
        self.assertEqual(self.get("/sub/")[2], b"<p>sub</p>\n")
        status, hdrs, body = self.get("/files/plain/")
        self.assertEqual(status, 200)
        self.assertEqual(hdrs["content-type"], "text/html; charset=utf-8")
        self.assertIn(b'<a href="%3Cb%3E%26x.txt">&lt;b&gt;&amp;x.txt</a>', body)
        self.assertNotIn(b"<b>", body)
        status, _, body = self.get("/files/")
        self.assertIn(b'<a href="sub/">sub/</a>', body)
        self.assertIn(b'<a href="hello.txt">hello.txt</a> (13 bytes)', body)

    async def test_redirect_too_long_for_its_headers(self):
        """A directory whose redirect (its path with a slash, percent-encoded) would not fit in
        the answer's headers: the connection closes without an answer, holding nothing (the
        router's sanitizers check, at its stop, that nothing leaked)."""
        name = "é" * 60  # 120 octets, 360 percent-encoded
        parts = [name] * 12
        os.makedirs(os.path.join(self.tmp, "node", "www", *parts))
        target = ("/" + "/".join(urllib.parse.quote(p) for p in parts)).encode()
        self.assertGreater(len(target), 4096)
        for _ in range(3):
            status, data = raw_request(self.port, target, ctx=self.ctx)
            self.assertEqual((status, data), (None, b""))
        self.assertEqual(self.get("/hello.txt")[0], 200)  # and the router serves on

    async def test_redirect_nodeinfo_viewer(self):
        status, hdrs, _ = self.get("/old")
        self.assertEqual((status, hdrs["location"]), (302, "https://example.com/new?x=1"))
        status, hdrs, body = self.get("/info")
        self.assertEqual(status, 200)
        self.assertIn(b"<td>web_node</td>", body)
        self.assertIn(b"<td>router1</td>", body)
        status, hdrs, _ = self.get("/trace")
        self.assertEqual((status, hdrs["location"]), (301, "/trace/"))
        with open(os.path.join(SRC, "mgmt", "viewer", "index.html"), "rb") as f:
            page = f.read()
        status, hdrs, body = self.get("/trace/")
        self.assertEqual((status, body), (200, page))
        self.assertEqual(hdrs["content-type"], "text/html; charset=utf-8")
        self.assertEqual(self.get("/trace/index.html")[2], page)
        self.assertEqual(self.get("/trace/nope.js")[0], 404)

    async def test_wamp_on_ws_and_stats(self):
        if not self.TLS:
            result, event, _, _ = await asyncio.to_thread(run_default_client, self.router.url)
            self.assertEqual((result, event), (5, "hi"))
        else:
            s = await open_ws("wss://localhost:%d/ws" % self.port, self.port, "realm1", "json",
                              ssl_ctx=self.ctx)
            self._sessions.append(s)
            self.assertIsNotNone(s.ws.transport.get_extra_info("ssl_object"))
        for path in ("/hello.txt", "/sub", "/nope"):
            self.get(path)
        self.get("/hello.txt", method="POST")
        # get_worker's stats count the answers by status class.
        if self.TLS:
            m = await open_ws("wss://localhost:%d/ws" % self.port, self.port, "mgmt", "json",
                              ssl_ctx=self.ctx)
        else:
            m = await h.open_session(self.router, "mgmt", "json")
        self._sessions.append(m)
        w = await h.step(m.call("crossbarfabriccenter.remote.node.get_worker", NODE, WORKER))
        st = w["stats"]
        # The requests above; WebSocket upgrades are not HTTP answers of a service.
        self.assertEqual([st["http_responses_%dxx" % c] for c in range(1, 6)], [0, 1, 1, 2, 0])


class WebTlsTest(WebTest):
    """The same services, and WAMP, on a TLS listener."""
    TLS = True
    # Plain TCP only: a TLS connection closes at once after its last answer.
    test_refused_body_answer_survives = None


class SeveralWebSocketPathsTest(h.AsyncTestCase):
    """A web transport with three WebSocket paths, each with its own serializers and auth, next
    to a static root, on one port; plain TCP and TLS."""

    def config(self, tls=None):
        endpoint = {"type": "tcp", "interface": "127.0.0.1", "port": 0}
        if tls:
            endpoint["tls"] = tls
        r = realm()
        r["roles"].append(dict(r["roles"][0], name="r2"))
        web = {"type": "web", "id": "web1", "endpoint": endpoint, "paths": {
            "/": {"type": "static", "directory": "www"},
            "ws": {"type": "websocket", "serializers": ["json"]},
            "ws2": {"type": "websocket", "serializers": ["msgpack"],
                    "auth": {"anonymous": {"type": "static", "role": "r2"}}},
            "app": {"type": "path", "paths": {"ws": {"type": "websocket"}}},
        }}
        plain = {"type": "websocket", "id": "plain",
                 "endpoint": {"type": "tcp", "interface": "127.0.0.1", "port": 0}}
        cfg = {"version": 2, "workers": [{"type": "router", "realms": [r],
                                           "transports": ([plain] if tls else []) + [web]}]}
        path = os.path.join(self.tmp, "node", "config.json")
        with open(path, "w", encoding="utf-8") as f:
            json.dump(cfg, f)
        return path

    async def run_paths(self, tls):
        self.tmp = tempfile.mkdtemp(prefix="wampscope-webws-")
        self.addCleanup(shutil.rmtree, self.tmp, True)
        make_tree(self.tmp)
        ctx, tls_cfg = None, None
        if tls:
            key, cert = make_cert(self.tmp)
            tls_cfg = {"key": key, "certificate": cert}
            ctx = ssl.create_default_context(cafile=cert)
        router = h.RouterProc(config=self.config(tls_cfg)).start()
        self.addCleanup(router.cleanup)
        scheme = "wss" if tls else "ws"
        urls = [u for u in router.urls if u.startswith(scheme + "://")]
        port = int(urls[-1].split(":")[2].split("/")[0])
        self.assertEqual(urls[-3:], ["%s://127.0.0.1:%d%s" % (scheme, port, p)
                                     for p in ("/ws", "/ws2", "/app/ws")])
        sessions = []
        for path, ser, role in (("/ws", "json", "anonymous"), ("/ws2", "msgpack", "r2"),
                                ("/app/ws", "json", "anonymous"),
                                ("/app/ws", "msgpack", "anonymous")):
            s = await open_ws("%s://localhost:%d%s" % (scheme, port, path), port, "realm1", ser,
                              ssl_ctx=ctx)
            sessions.append(s)
            self.assertEqual(s.joined.result().authrole, role, path)
        proc = h.uri(self, "add")
        await h.step(sessions[1].register(lambda a, b: a + b, proc))
        self.assertEqual(await h.step(sessions[0].call(proc, 2, 3)), 5)
        # Each path holds to its own serializers; an upgrade elsewhere is 404.
        if not tls:
            for path, offer, status in (("/ws", "wamp.2.msgpack", 400),
                                        ("/ws2", "wamp.2.json", 400),
                                        ("/ws2", "wamp.2.json, wamp.2.msgpack", 101),
                                        ("/ws3", "wamp.2.json", 404),
                                        ("/app", "wamp.2.json", 404)):
                ws = h.RawWs("127.0.0.1", port, path=path, protocols=(offer,))
                self.assertEqual(ws.status, status, (path, offer))
                ws.close()
        self.assertEqual(self.get_status(port, ctx, "/hello.txt"), 200)
        self.assertEqual(self.get_status(port, ctx, "/ws2"), 400)
        for s in sessions:
            await s.close()
        router.stop()

    def get_status(self, port, ctx, path):
        status, _ = raw_request(port, path.encode(), ctx=ctx)
        return status

    async def test_several_paths(self):
        await self.run_paths(tls=False)

    async def test_several_paths_tls(self):
        await self.run_paths(tls=True)


def example_config(name):
    return os.path.join(SRC, "tests", "data", "crossbar-examples", name, ".crossbar",
                        "config.json")


class CrossbarExamplesTest(h.AsyncTestCase):
    """Trimmed copies of Crossbar's example configurations load and serve."""

    async def serve(self, name):
        router = h.RouterProc(config=example_config(name)).start()
        self.addCleanup(router.cleanup)
        return router

    def fetch(self, router, path):
        c = http.client.HTTPConnection("127.0.0.1", router.port, timeout=10)
        try:
            c.request("GET", path)
            r = c.getresponse()
            return r.status, r.read()
        finally:
            c.close()

    def static(self, name, rel):
        with open(os.path.join(SRC, "tests", "data", "crossbar-examples", name, rel), "rb") as f:
            return f.read()

    async def test_getting_started(self):
        router = await self.serve("getting-started")
        self.assertEqual(router.path, "/ws")
        self.assertEqual(self.fetch(router, "/"),
                         (200, self.static("getting-started", "web/index.html")))
        self.assertEqual(self.fetch(router, "/app.js"),
                         (200, self.static("getting-started", "web/app.js")))
        self.assertEqual(self.fetch(router, "/info")[0], 200)
        s = await h.open_session(router, "realm1", "msgpack")
        await s.close()
        router.stop()

    async def test_universal_with_web_part(self):
        router = await self.serve("nodeinfo")
        self.assertEqual(self.fetch(router, "/"), (200, self.static("nodeinfo", "web/index.html")))
        self.assertEqual(self.fetch(router, "/shared/css/style.css"),
                         (200, self.static("nodeinfo", "shared/css/style.css")))
        status, body = self.fetch(router, "/shared/css/")
        self.assertEqual(status, 200)
        self.assertIn(b"style.css", body)
        self.assertEqual(self.fetch(router, "/info")[0], 200)
        # WebSocket and RawSocket share the port with HTTP.
        s = await h.open_session(router, "realm1", "json")
        r = await open_raw_session("realm1", "msgpack", port=router.port)
        await r.close()
        await s.close()
        router.stop()

    async def test_nested_paths(self):
        router = await self.serve("path-nested")
        home = self.static("path-nested", "web/index.html")
        nested = self.static("path-nested", "nested-web/index.html")
        self.assertEqual(self.fetch(router, "/"), (200, home))
        self.assertEqual(self.fetch(router, "/nested/"), (200, nested))
        self.assertEqual(self.fetch(router, "/nested/info")[0], 200)
        self.assertEqual(self.fetch(router, "/double-nested/"), (200, home))
        self.assertEqual(self.fetch(router, "/double-nested/nested/"), (200, nested))
        self.assertEqual(self.fetch(router, "/double-nested/nested/info")[0], 200)
        want = {"url": "ws://localhost:8080/ws", "realm": "testing"}
        status, body = self.fetch(router, "/config")
        self.assertEqual((status, body), (200, b'{"url":"ws://localhost:8080/ws","realm":"testing"}'))
        status, body = self.fetch(router, "/nested/config")
        self.assertEqual((status, json.loads(body)), (200, want))
        self.assertIn(b'\n   "url"', body)  # prettify: indented by 3, as Crossbar
        self.assertEqual(self.fetch(router, "/config/x")[0], 404)
        self.assertIn("ws://127.0.0.1:%d/nested/ws" % router.port, router.urls)
        s = await h.open_session(router, "testing", "json")
        s2 = await open_ws("ws://127.0.0.1:%d/nested/ws" % router.port, router.port, "testing",
                           "msgpack")
        await s2.close()
        await s.close()
        router.stop()


if __name__ == "__main__":
    unittest.main()
