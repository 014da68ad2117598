"""Shared harness for wampscope's Python end-to-end tests.

Each test gets its own router process (RouterProc) on an ephemeral 127.0.0.1 port, with its own
temporary directory for the ports file and the router's stdout/stderr. Stopping the router sends
SIGTERM and requires exit status 0 within STOP_TIMEOUT seconds and a stderr free of sanitizer
reports. Clients are autobahn's asyncio API (python3-autobahn) or RawWs, a blocking WebSocket
client written here so that tests can send bytes no WAMP library would.

Environment: RT_ROUTER_BIN (router executable), RT_SOURCE_DIR (source root, for the config),
RT_E2E_LOG_LEVEL (optional router --log-level), RT_E2E_KEEP (keep temp dirs for debugging).
Run with /usr/bin/python3 (Debian's python3-autobahn and python3-msgpack).
"""

import asyncio
import base64
import ctypes
import json
import os
import shutil
import signal
import socket
import struct
import subprocess
import sys
import tempfile
import time
import unittest
import warnings
from urllib.parse import urlparse

import txaio

txaio.use_asyncio()
# autobahn logs every close and every error a test procedure raises on purpose; tests assert on
# what matters, so keep the output readable unless RT_E2E_VERBOSE is set.
if not os.environ.get("RT_E2E_VERBOSE"):
    txaio.set_global_log_level("critical")
warnings.filterwarnings("ignore", category=DeprecationWarning, module="txaio")

from autobahn.asyncio.wamp import ApplicationSession  # noqa: E402
from autobahn.asyncio.websocket import WampWebSocketClientFactory  # noqa: E402
from autobahn.wamp.serializer import JsonSerializer, MsgPackSerializer  # noqa: E402
from autobahn.wamp.types import ComponentConfig  # noqa: E402

START_TIMEOUT = 15.0  # seconds for the ports file to appear (ASan builds start slowly)
STOP_TIMEOUT = 5.0  # seconds from SIGTERM to exit
STEP_TIMEOUT = 15.0  # default bound on any single awaited step of a test
SANITIZER_MARKERS = ("ERROR: AddressSanitizer", "LeakSanitizer", "runtime error:")
SERIALIZERS = ("json", "msgpack")
MAX_MESSAGE_SIZE = 4 * 1024 * 1024  # configs/test-e2e.json

# Values whose exact round trip is checked: unicode (incl. outside the BMP), nesting, numbers at the
# edges of the 2^53 ID range, booleans, null and empty containers.
ARGS = ["héllo wörld ✓", "日本語", "🎉 emoji", 0, -1, 2**53, -(2**53), 1.5, True, False, None,
        [1, [2, [3, {"deep": ["x"]}]]], {}, [], ""]
KWARGS = {"ünï": "cödé", "nested": {"a": [1, 2, {"b": None}], "c": {"d": {"e": "f"}}},
          "num": 123456789, "neg": -42, "flt": -0.25, "flag": True, "empty": {}}

_PR_SET_PDEATHSIG = 1


def _die_with_parent():
    """preexec_fn: the router gets SIGKILL if the test process dies (no orphans)."""
    try:
        libc = ctypes.CDLL("libc.so.6", use_errno=True)
        libc.prctl(_PR_SET_PDEATHSIG, signal.SIGKILL, 0, 0, 0)
    except OSError:
        pass


class RouterProc:
    """One wampscope process listening on 127.0.0.1:<ephemeral>."""

    def __init__(self, config="configs/test-e2e.json", workdir=None, run=None, args=(),
                 env=None):
        """workdir: the test's own working directory, kept across restarts (so the router's
        ./wampscope-data survives; cleanup() leaves it); by default a new temporary one that
        cleanup() removes. run: a number for the stdout/stderr file names of this start.
        args: more command-line options for the router. env: more environment variables for
        the router (e.g. LD_PRELOAD)."""
        self.args = list(args)
        self.env = dict(os.environ, **env) if env else None
        self.bin = os.environ.get("RT_ROUTER_BIN")
        self.src = os.environ.get("RT_SOURCE_DIR")
        if not self.bin or not self.src:
            raise AssertionError("RT_ROUTER_BIN and RT_SOURCE_DIR must be set (ctest sets them)")
        self.config = os.path.join(self.src, config)
        self.own_tmp = workdir is None
        self.tmp = tempfile.mkdtemp(prefix="wampscope-e2e-") if self.own_tmp else workdir
        self.ports_file = os.path.join(self.tmp, "ports")
        if os.path.exists(self.ports_file):
            os.remove(self.ports_file)  # an earlier run's
        suffix = "" if run is None else str(run)
        self.stdout_path = os.path.join(self.tmp, "stdout" + suffix)
        self.stderr_path = os.path.join(self.tmp, "stderr" + suffix)
        self.proc = None
        self.urls = []
        self.url = None
        self.host = None
        self.port = None
        self.path = None
        self.exit_status = None

    def start(self):
        try:
            return self._start()
        except BaseException:
            self.cleanup()
            raise

    def _start(self):
        argv = [self.bin, "-c", self.config, "--port", "0", "--ports-file", self.ports_file]
        level = os.environ.get("RT_E2E_LOG_LEVEL")
        if level:
            argv += ["--log-level", level]
        argv += self.args
        with open(self.stdout_path, "wb") as out, open(self.stderr_path, "wb") as err:
            self.proc = subprocess.Popen(argv, stdin=subprocess.DEVNULL, stdout=out, stderr=err,
                                         preexec_fn=_die_with_parent, cwd=self.tmp,
                                         env=self.env)
        deadline = time.monotonic() + START_TIMEOUT
        while True:
            if os.path.exists(self.ports_file):
                with open(self.ports_file, encoding="utf-8") as f:
                    self.urls = [line.strip() for line in f if line.strip()]
                if self.urls:
                    break
            if self.proc.poll() is not None:
                raise AssertionError("router exited early with status %s\n%s"
                                     % (self.proc.returncode, self.stderr_text()))
            if time.monotonic() > deadline:
                self.kill()
                raise AssertionError("router wrote no ports file within %.0f s\n%s"
                                     % (START_TIMEOUT, self.stderr_text()))
            time.sleep(0.02)
        ws = [u for u in self.urls if u.startswith("ws://")]
        if not ws:
            self.kill()
            raise AssertionError("no ws:// URL in the ports file: %r" % self.urls)
        self.url = ws[0]
        parsed = urlparse(self.url)
        self.host, self.port, self.path = parsed.hostname, parsed.port, parsed.path or "/"
        assert self.host == "127.0.0.1", "router must listen on 127.0.0.1, got %s" % self.url
        return self

    def stdout_text(self):
        try:
            with open(self.stdout_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def stderr_text(self):
        try:
            with open(self.stderr_path, encoding="utf-8", errors="replace") as f:
                return f.read()
        except OSError:
            return ""

    def kill(self):
        if self.proc and self.proc.poll() is None:
            self.proc.kill()
            self.proc.wait()

    def terminate(self):
        """Sends SIGTERM (once); returns the time it was sent."""
        if self.proc.poll() is None:
            self.proc.send_signal(signal.SIGTERM)
        return time.monotonic()

    def wait_exit(self, sent_at, timeout=STOP_TIMEOUT):
        """Waits for exit after SIGTERM; asserts status 0 in time and a clean stderr."""
        try:
            remaining = max(0.0, sent_at + timeout - time.monotonic())
            self.exit_status = self.proc.wait(timeout=remaining)
        except subprocess.TimeoutExpired:
            self.kill()
            raise AssertionError("router did not exit within %.0f s of SIGTERM\n%s"
                                 % (timeout, self.stderr_text()))
        err = self.stderr_text()
        found = [m for m in SANITIZER_MARKERS if m in err]
        if self.exit_status != 0 or found:
            raise AssertionError("router exit status %s, sanitizer reports %s\n--- stderr ---\n%s"
                                 % (self.exit_status, found, err[-20000:]))
        return time.monotonic() - sent_at

    def stop(self):
        """SIGTERM + checks; returns seconds until exit. Always removes the temp dir."""
        try:
            return self.wait_exit(self.terminate())
        finally:
            self.cleanup()

    def cleanup(self):
        self.kill()
        if self.own_tmp and not os.environ.get("RT_E2E_KEEP"):
            shutil.rmtree(self.tmp, ignore_errors=True)


# --- autobahn clients -----------------------------------------------------------------------------

try:
    from autobahn.wamp.serializer import CBORSerializer  # noqa: E402 (needs cbor2)
except ImportError:
    # Debian's autobahn 22.7 wants cbor2 for CBOR; python3-cbor (a dependency) serves as well.
    import cbor as _cbor  # noqa: E402
    from autobahn.wamp.serializer import Serializer  # noqa: E402

    class _CborObjectSerializer:
        NAME = "cbor"
        BINARY = True

        def serialize(self, obj):
            return _cbor.dumps(obj)

        def unserialize(self, payload):
            return [_cbor.loads(payload)]

    class CBORSerializer(Serializer):
        SERIALIZER_ID = "cbor"
        RAWSOCKET_SERIALIZER_ID = 3
        MIME_TYPE = "application/cbor"

        def __init__(self):
            Serializer.__init__(self, _CborObjectSerializer())


def make_serializer(name):
    if name == "json":
        return JsonSerializer()
    if name == "msgpack":
        return MsgPackSerializer()
    if name == "cbor":
        return CBORSerializer()
    raise ValueError(name)


class Client(ApplicationSession):
    """An ApplicationSession that exposes its lifecycle as futures."""

    def __init__(self, config):
        super().__init__(config)
        loop = asyncio.get_running_loop()
        self.joined = loop.create_future()  # SessionDetails
        self.left = loop.create_future()  # CloseDetails (GOODBYE or ABORT)
        self.lost = loop.create_future()  # transport closed
        self.ws = None  # the WebSocket protocol instance, set by open_session()

    def onJoin(self, details):
        if not self.joined.done():
            self.joined.set_result(details)

    def onLeave(self, details):
        if not self.left.done():
            self.left.set_result(details)
        self._fail_join(LeftBeforeJoin(details))
        return super().onLeave(details)

    def onDisconnect(self):
        if not self.lost.done():
            self.lost.set_result(True)
        self._fail_join(ConnectionError("transport lost before WELCOME"))
        return super().onDisconnect()

    def _fail_join(self, exc):
        if not self.joined.done():
            self.joined.set_exception(exc)
            self.joined.exception()  # retrieved: no "never retrieved" noise if nobody waits

    def abort_transport(self):
        """Drops the TCP connection without GOODBYE or a WebSocket close."""
        if self.ws is not None and self.ws.transport is not None:
            self.ws.transport.abort()

    async def close(self):
        """GOODBYE (when joined), then waits until the transport is gone."""
        if self.lost.done():
            return
        if self.is_attached() and not self.left.done():
            self.leave()
            await asyncio.wait_for(asyncio.shield(self.left), STEP_TIMEOUT)
        if not self.lost.done():
            self.disconnect()
            await asyncio.wait_for(asyncio.shield(self.lost), STEP_TIMEOUT)


class LeftBeforeJoin(Exception):
    def __init__(self, details):
        super().__init__("session left before joining: %s" % details.reason)
        self.details = details


async def open_session(router, realm, serializer, cls=Client, wait_join=True):
    """Connects an autobahn session to router's ws URL and (by default) waits for WELCOME."""
    loop = asyncio.get_running_loop()
    holder = {}

    def session_factory():
        s = cls(ComponentConfig(realm=realm))
        holder["session"] = s
        return s

    factory = WampWebSocketClientFactory(session_factory, url=router.url,
                                         serializers=[make_serializer(serializer)])
    _, proto = await asyncio.wait_for(loop.create_connection(factory, router.host, router.port),
                                      STEP_TIMEOUT)
    # The session is created on the WebSocket open, which may come after create_connection.
    deadline = loop.time() + STEP_TIMEOUT
    while "session" not in holder:
        if loop.time() > deadline:
            raise AssertionError("WebSocket opening handshake did not complete")
        await asyncio.sleep(0.005)
    session = holder["session"]
    session.ws = proto
    if wait_join:
        await asyncio.wait_for(asyncio.shield(session.joined), STEP_TIMEOUT)
    return session


async def hang_forever():
    """A procedure body that never answers; returns quietly when its task is cancelled at the end
    of the test (a cancelled invocation would otherwise be logged as an error by txaio)."""
    try:
        await asyncio.sleep(3600)
    except asyncio.CancelledError:
        return None


async def step(awaitable, timeout=STEP_TIMEOUT):
    return await asyncio.wait_for(awaitable, timeout)


class AsyncTestCase(unittest.IsolatedAsyncioTestCase):
    async def asyncSetUp(self):
        # IsolatedAsyncioTestCase runs its loop in debug mode, which reports every callback over
        # 100 ms (router start-up, 1 MiB payloads) as slow; the tests bound time themselves.
        asyncio.get_running_loop().set_debug(False)
        await asyncio.sleep(0)  # the rest of set-up runs as a new, non-debug step


async def close_sessions(sessions):
    """Closes sessions with GOODBYE, newest first; a broken client is aborted instead, so that it
    cannot hide the router's status."""
    for s in reversed(sessions):
        try:
            await s.close()
        except Exception:
            s.abort_transport()



async def stop_router(router, tmp, sessions=(), socks=()):
    """A test's tear-down: closes the raw sockets socks, then the sessions (close_sessions), then
    stops router (exit status 0, no sanitizer report) and removes its temp dir tmp, each step run
    even when one before it failed."""
    try:
        for s in socks:
            s.close()
        await close_sessions(sessions)
    finally:
        try:
            router.stop()
        finally:
            shutil.rmtree(tmp, ignore_errors=True)

class RouterTestCase(AsyncTestCase):
    """Starts a fresh router for every test method and stops it (SIGTERM, exit 0) afterwards.

    Sessions opened with self.session() are closed with GOODBYE before the router is stopped.
    """

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.router = RouterProc().start()
        self._sessions = []

    async def asyncTearDown(self):
        try:
            await close_sessions(self._sessions)
        finally:
            self.router.stop()

    async def session(self, serializer, realm="realm1", **kw):
        s = await open_session(self.router, realm, serializer, **kw)
        self._sessions.append(s)
        return s


class Events:
    """A subscription handler recording each event as (args, kwargs, details); details is the
    EventDetails when subscribed with details=True, else None."""

    def __init__(self):
        self.events = []
        self._cond = asyncio.Condition()

    async def __call__(self, *args, details=None, **kwargs):
        async with self._cond:
            self.events.append((list(args), kwargs, details))
            self._cond.notify_all()

    async def wait_for(self, want, timeout=STEP_TIMEOUT):
        """Waits until want (a count of events, or a predicate on the list of events) holds;
        returns the events."""
        pred = want if callable(want) else (lambda ev: len(ev) >= want)

        async def _wait():
            async with self._cond:
                await self._cond.wait_for(lambda: pred(self.events))
        await step(_wait(), timeout)
        return self.events

    async def wait_arg(self, arg):
        """Waits for an event whose args[0] is arg; returns every event received until then."""
        return await self.wait_for(lambda ev: any(e[0][:1] == [arg] for e in ev))

    def args0(self):
        return [e[0][0] for e in self.events]


def uri(test, suffix):
    """A URI unique to this test method (tests never share URIs)."""
    return "com.wampscope.e2e.%s.%s" % (test.id().split(".")[-1].lower(), suffix)


# --- raw WebSocket client -------------------------------------------------------------------------

OP_CONT, OP_TEXT, OP_BINARY, OP_CLOSE, OP_PING, OP_PONG = 0, 1, 2, 8, 9, 10


class RawWs:
    """A blocking WebSocket client speaking just enough RFC 6455 to misbehave on purpose."""

    def __init__(self, host, port, path="/ws", protocols=("wamp.2.json",), timeout=10.0,
                 source_address=None, headers=()):
        # source_address: (ip, port) to bind the client socket to, e.g. ("127.0.0.2", 0) to
        # connect from another loopback address than the router's.
        self.sock = socket.create_connection((host, port), timeout=timeout,
                                             source_address=source_address)
        self.buf = b""
        self.status = None
        self.headers = {}
        self._handshake(host, port, path, protocols, headers)

    def _handshake(self, host, port, path, protocols, headers=()):
        key = base64.b64encode(os.urandom(16)).decode()
        lines = ["GET %s HTTP/1.1" % path, "Host: %s:%d" % (host, port), "Upgrade: websocket",
                 "Connection: Upgrade", "Sec-WebSocket-Key: " + key, "Sec-WebSocket-Version: 13"]
        if protocols:
            lines.append("Sec-WebSocket-Protocol: " + ", ".join(protocols))
        lines += list(headers)
        self.sock.sendall(("\r\n".join(lines) + "\r\n\r\n").encode())
        while b"\r\n\r\n" not in self.buf:
            try:
                chunk = self.sock.recv(4096)
            except (ConnectionResetError, socket.timeout):
                chunk = b""
            if not chunk:
                break  # refused by closing: status stays None
            self.buf += chunk
        if b"\r\n\r\n" not in self.buf:
            return
        head, self.buf = self.buf.split(b"\r\n\r\n", 1)
        head_lines = head.decode("latin-1").split("\r\n")
        parts = head_lines[0].split(" ", 2)
        self.status = int(parts[1]) if len(parts) > 1 and parts[1].isdigit() else None
        for line in head_lines[1:]:
            name, _, value = line.partition(":")
            self.headers[name.strip().lower()] = value.strip()

    @property
    def upgraded(self):
        return self.status == 101

    def send_frame(self, opcode, payload, fin=True):
        self.sock.sendall(masked_frame(opcode, payload, fin))

    def reply_close(self, code):
        """Answers a close frame as RFC 6455 §5.5.1 asks (best effort: the peer may be gone)."""
        try:
            self.send_frame(OP_CLOSE, struct.pack("!H", code) if code else b"")
        except OSError:
            pass

    def send_text(self, text):
        self.send_frame(OP_TEXT, text.encode("utf-8") if isinstance(text, str) else text)

    def send_json(self, obj):
        self.send_text(json.dumps(obj))

    def _read_exact(self, n):
        while len(self.buf) < n:
            chunk = self.sock.recv(max(65536, n - len(self.buf)))
            if not chunk:
                raise ConnectionError("connection closed by the router")
            self.buf += chunk
        data, self.buf = self.buf[:n], self.buf[n:]
        return data

    def recv_frame(self):
        """One frame as (fin, opcode, payload). Raises ConnectionError on EOF."""
        b0, b1 = self._read_exact(2)
        n = b1 & 0x7F
        if n == 126:
            (n,) = struct.unpack("!H", self._read_exact(2))
        elif n == 127:
            (n,) = struct.unpack("!Q", self._read_exact(8))
        mask = self._read_exact(4) if b1 & 0x80 else None
        payload = self._read_exact(n)
        if mask:
            payload = _mask(payload, mask)
        return bool(b0 & 0x80), b0 & 0x0F, payload

    def recv_message(self, reply_close=True):
        """The next data message (opcode, bytes) or close ("close", code, reason). A close frame
        is answered unless reply_close is False (a frame of ours is still being sent)."""
        parts, first_op = [], None
        while True:
            fin, op, payload = self.recv_frame()
            if op == OP_PING:
                self.send_frame(OP_PONG, payload)
                continue
            if op == OP_PONG:
                continue
            if op == OP_CLOSE:
                code = struct.unpack("!H", payload[:2])[0] if len(payload) >= 2 else None
                if reply_close:
                    self.reply_close(code)
                return ("close", code, payload[2:].decode("utf-8", "replace"))
            if op != OP_CONT:
                first_op = op
            parts.append(payload)
            if fin:
                return (first_op, b"".join(parts))

    def recv_wamp(self):
        """The next WAMP message decoded from JSON, or the close tuple."""
        m = self.recv_message()
        if m[0] == "close":
            return m
        return json.loads(m[1].decode("utf-8"))

    def hello(self, realm="realm1"):
        self.send_json([1, realm, {"roles": {"caller": {}, "callee": {}, "publisher": {},
                                             "subscriber": {}}}])
        return self.recv_wamp()

    def read_until_eof(self, timeout=10.0):
        """Drains until the router closes the TCP connection; returns True if it did in time."""
        self.sock.settimeout(timeout)
        try:
            while self.sock.recv(65536):
                pass
            return True
        except ConnectionResetError:
            return True
        except socket.timeout:
            return False

    def close(self):
        try:
            self.sock.close()
        except OSError:
            pass


def ctl_bin():
    """The wampscope-ctl binary under test (RT_CTL_BIN, which ctest sets)."""
    b = os.environ.get("RT_CTL_BIN")
    if not b:
        raise AssertionError("RT_CTL_BIN must be set (ctest sets it)")
    return b


def read_pty(master):
    """Everything written to a pseudo-terminal (master: its master side) until the child side is
    closed. Blocks: run it in an executor."""
    chunks = []
    while True:
        try:
            b = os.read(master, 65536)
        except OSError:  # EIO: the child closed the terminal
            break
        if not b:
            break
        chunks.append(b)
    return b"".join(chunks)


def masked_frame(opcode, payload, fin=True):
    """A client frame (masked) as bytes, to send alone or several in one write."""
    header = bytes([(0x80 if fin else 0) | opcode])
    n = len(payload)
    if n < 126:
        header += bytes([0x80 | n])
    elif n < 65536:
        header += bytes([0x80 | 126]) + struct.pack("!H", n)
    else:
        header += bytes([0x80 | 127]) + struct.pack("!Q", n)
    mask = os.urandom(4)
    return header + mask + _mask(payload, mask)


def _mask(data, mask):
    """XOR with the 4-byte mask, fast enough for multi-MiB payloads."""
    n = len(data)
    if n == 0:
        return b""
    m = int.from_bytes((mask * (n // 4 + 1))[:n], sys.byteorder)
    return (int.from_bytes(data, sys.byteorder) ^ m).to_bytes(n, sys.byteorder)


def main():
    unittest.main(verbosity=2)
