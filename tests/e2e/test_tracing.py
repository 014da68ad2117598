"""Message tracing and the management API (the reference in mgmt/README.md) against the real router.

A management client (python3-autobahn) on the management realm drives the traces; application
clients on realm1/realm2, with JSON and MessagePack, make the traffic. Every application and
management connection keeps a log of the WAMP messages that crossed its WebSocket (bytes as sent
and received, decoded here), so that each trace record is checked against what its client really
sent or received: message, size per serializer, session, realm, action URI, and correlation.
"""

import asyncio
import collections
import datetime
import json
import os
import re
import time
import unittest
import uuid

import msgpack
from autobahn.asyncio.websocket import WampWebSocketClientFactory, WampWebSocketClientProtocol
from autobahn.wamp.exception import ApplicationError
from autobahn.wamp.types import CallResult, ComponentConfig, PublishOptions

import rt_harness as h

PREFIX = "crossbarfabriccenter."
TOPIC_PREFIX = PREFIX + "remote.tracing."

# WAMP message codes and the names trace records use for them.
HELLO, WELCOME, ABORT, GOODBYE, ERROR = 1, 2, 3, 6, 8
PUBLISH, PUBLISHED, SUBSCRIBE, SUBSCRIBED, UNSUBSCRIBE, UNSUBSCRIBED, EVENT = \
    16, 17, 32, 33, 34, 35, 36
CALL, RESULT, REGISTER, REGISTERED, UNREGISTER, UNREGISTERED, INVOCATION, YIELD = \
    48, 50, 64, 65, 66, 67, 68, 70
TYPE_NAMES = {1: "Hello", 2: "Welcome", 3: "Abort", 4: "Challenge", 5: "Authenticate",
              6: "Goodbye", 8: "Error", 16: "Publish", 17: "Published", 32: "Subscribe",
              33: "Subscribed", 34: "Unsubscribe", 35: "Unsubscribed", 36: "Event", 48: "Call",
              49: "Cancel", 50: "Result", 64: "Register", 65: "Registered", 66: "Unregister",
              67: "Unregistered", 68: "Invocation", 69: "Interrupt", 70: "Yield"}

RECORD_KEYS = {"seq", "pc", "ts", "direction", "msg_type", "realm", "session_id", "authid",
               "authrole", "correlation", "correlation_is_anchor", "correlation_is_last", "uri",
               "serializations", "msg"}
META_KEYS = {"id", "node_id", "worker_id", "status", "started", "ended", "runtime", "options",
             "first_seq", "next_seq", "records", "dropped", "bytes", "persistent_id",
             "stop_reason"}
UUID_RE = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")
ISO_RE = re.compile(r"^\d{4}-\d{2}-\d{2}T\d{2}:\d{2}:\d{2}\.\d{3}Z$")
# Defaults of the scalar trace_options (mgmt/README.md's table).
OPTION_DEFAULTS = {"direction": "both", "trace_app_payload": True, "limit": 100000,
                   "max_bytes": 64 * 1024 * 1024, "duration": None, "max_records": None,
                   "batching_period": 200, "persist": False, "trace_level": "message"}
TRACED = [{"uri": "com.traced.", "match": "prefix"}]


def e2e_config(name="configs/test-e2e.json"):
    """node_id, worker_id, max_traces and the management realm, as configured."""
    with open(os.path.join(os.environ["RT_SOURCE_DIR"], name), encoding="utf-8") as f:
        cfg = json.load(f)
    worker = cfg["workers"][0]
    ws = worker.get("wampscope", {})
    return {"node_id": cfg.get("controller", {}).get("id"),
            "worker_id": worker.get("id", "router1"),
            "max_traces": ws.get("tracing", {}).get("max_traces", 16),
            "mgmt_realm": ws.get("management", {}).get("realm", "mgmt"),
            "realms": [r["name"] for r in worker.get("realms", [])]}


def iso_to_epoch(s):
    return datetime.datetime.strptime(s, "%Y-%m-%dT%H:%M:%S.%fZ").replace(
        tzinfo=datetime.timezone.utc).timestamp()


# --- clients that log their wire messages ---------------------------------------------------------

class WireLoggingProtocol(WampWebSocketClientProtocol):
    """Keeps every WAMP message of the connection as it crossed the wire, named from the router's
    side: ("rx", bytes) for what this client sent, ("tx", bytes) for what it received."""

    def __init__(self, *args, **kwargs):
        super().__init__(*args, **kwargs)
        self.wire = []

    def sendMessage(self, payload, isBinary=False, *args, **kwargs):
        self.wire.append(("rx", bytes(payload)))
        return super().sendMessage(payload, isBinary, *args, **kwargs)

    def onMessage(self, payload, isBinary):
        self.wire.append(("tx", bytes(payload)))
        return super().onMessage(payload, isBinary)


Entry = collections.namedtuple("Entry", "direction msg uri nbytes")


def decode(ser, payload):
    if ser == "json":
        return json.loads(payload.decode("utf-8"))
    return msgpack.unpackb(payload, raw=False)


def classify(wire, ser):
    """The wire log as Entries, each with the URI of the action it belongs to (what the router
    puts in a record's "uri"), found by following request, subscription, registration and
    invocation ids as a client sees them."""
    reqs, subs, regs, invs = {}, {}, {}, {}
    out = []
    for direction, payload in wire:
        m = decode(ser, payload)
        code, uri = m[0], None
        if direction == "rx":
            if code in (PUBLISH, SUBSCRIBE, CALL, REGISTER):
                uri = reqs[m[1]] = m[3]
            elif code == UNSUBSCRIBE:
                uri = reqs[m[1]] = subs.get(m[2])
            elif code == UNREGISTER:
                uri = reqs[m[1]] = regs.get(m[2])
            elif code == YIELD:
                uri = invs.get(m[1])
            elif code == ERROR:
                uri = invs.get(m[2])
        else:
            if code in (PUBLISHED, UNSUBSCRIBED, UNREGISTERED, RESULT):
                uri = reqs.get(m[1])
            elif code == SUBSCRIBED:
                uri = subs[m[2]] = reqs.get(m[1])
            elif code == REGISTERED:
                uri = regs[m[2]] = reqs.get(m[1])
            elif code == ERROR:
                uri = reqs.get(m[2])
            elif code == EVENT:
                uri = subs.get(m[1])
            elif code == INVOCATION:
                uri = invs[m[1]] = regs.get(m[2])
        out.append(Entry(direction, m, uri, len(payload)))
    return out


class Peer:
    """A joined autobahn session with its wire log and identity."""

    def __init__(self, name, session, realm, ser, details):
        self.name, self.s, self.realm, self.ser = name, session, realm, ser
        self.id = details.session
        self.authid = details.authid
        self.authrole = details.authrole

    def mark(self):
        """Position in the wire log (to bound what a trace can have seen)."""
        return len(self.s.ws.wire)

    def entries(self, upto=None):
        return classify(self.s.ws.wire[:upto], self.ser)

    def __repr__(self):
        return "<%s %s/%s %s>" % (self.name, self.realm, self.ser, self.id)


async def open_logged_session(router, realm, serializer):
    """h.open_session with WireLoggingProtocol, so that even HELLO is in the log."""
    loop = asyncio.get_running_loop()
    holder = {}

    def session_factory():
        s = h.Client(ComponentConfig(realm=realm))
        holder["session"] = s
        return s

    factory = WampWebSocketClientFactory(session_factory, url=router.url,
                                         serializers=[h.make_serializer(serializer)])
    factory.protocol = WireLoggingProtocol
    _, proto = await h.step(loop.create_connection(factory, router.host, router.port))
    deadline = loop.time() + h.STEP_TIMEOUT
    while "session" not in holder:
        if loop.time() > deadline:
            raise AssertionError("WebSocket opening handshake did not complete")
        await asyncio.sleep(0.005)
    session = holder["session"]
    session.ws = proto
    await h.step(asyncio.shield(session.joined))
    return session


class Inbox:
    """An event handler / procedure body that keeps what it got and can be waited on."""

    def __init__(self):
        self.items = []
        self._changed = asyncio.Event()

    def __call__(self, *args, **kwargs):
        self.items.append((list(args), kwargs))
        self._changed.set()

    async def wait(self, n, timeout=h.STEP_TIMEOUT):
        deadline = time.monotonic() + timeout
        while len(self.items) < n:
            self._changed.clear()
            remaining = deadline - time.monotonic()
            if remaining <= 0:
                raise AssertionError("got %d of %d items" % (len(self.items), n))
            try:
                await asyncio.wait_for(self._changed.wait(), remaining)
            except asyncio.TimeoutError:
                pass
        return self.items


class Mgmt:
    """The management API as a client calls it."""

    def __init__(self, peer, cfg):
        self.peer = peer
        self.node = cfg["node_id"]
        self.worker = cfg["worker_id"]

    async def call(self, name, *args, **kwargs):
        return await h.step(self.peer.s.call(PREFIX + name, *args, **kwargs))

    async def start(self, trace_id=None, options=None):
        return await self.call("start_trace", self.node, self.worker, trace_id, options)

    async def stop(self, trace_id):
        return await self.call("stop_trace", self.node, self.worker, trace_id)

    async def get(self, trace_id):
        return await self.call("get_trace", self.node, self.worker, trace_id)

    async def delete(self, trace_id):
        return await self.call("delete_trace", self.node, self.worker, trace_id)

    async def list(self, *include_stopped):
        return await self.call("list_traces", self.node, self.worker, *include_stopped)

    async def data(self, trace_id, from_seq=0, to_seq=None, limit=100):
        return await self.call("get_trace_data", self.node, self.worker, trace_id, from_seq,
                               to_seq, limit)


# --- the test case --------------------------------------------------------------------------------

class TraceTestCase(h.RouterTestCase):
    MGMT_SER = "json"

    async def asyncSetUp(self):
        await super().asyncSetUp()
        self.cfg = e2e_config()
        self.t_begin = time.time()

    async def peer(self, ser, name, realm="realm1"):
        s = await open_logged_session(self.router, realm, ser)
        self._sessions.append(s)
        return Peer(name, s, realm, ser, s.joined.result())

    async def mgmt(self, ser=None, name="mgmt"):
        p = await self.peer(ser or self.MGMT_SER, name, realm=self.cfg["mgmt_realm"])
        self.assertEqual(p.authrole, "admin")
        return Mgmt(p, self.cfg)

    # -- errors

    async def assert_error(self, uri, awaitable, names=None):
        """The call fails with uri and a non-empty one-line message in args[0] (naming `names`)."""
        with self.assertRaises(ApplicationError) as cm:
            await h.step(awaitable)
        e = cm.exception
        self.assertEqual(e.error, uri, "message: %r" % (e.args,))
        self.assertTrue(e.args, "no message in args")
        msg = e.args[0]
        self.assertIsInstance(msg, str)
        self.assertTrue(msg.strip(), "empty message")
        self.assertNotIn("\n", msg)
        if names:
            self.assertIn(names, msg)
        return e

    # -- reading a whole trace

    async def page_all(self, m, trace_id, limit=7):
        """Every record of a stopped trace, paged as mgmt/README.md tells a client to: from the last
        seq + 1 until an empty page. Checks page sizes and continuity against the metadata."""
        meta = await m.get(trace_id)
        self.assertEqual(meta["status"], "stopped")
        out, from_seq, short = [], 0, False
        for _ in range(100000):
            page = await m.data(trace_id, from_seq, None, limit)
            self.assertIsInstance(page, list)
            self.assertLessEqual(len(page), limit)
            if not page:
                break
            self.assertFalse(short, "a short page came before the end")
            short = len(page) < limit
            seqs = [r["seq"] for r in page]
            self.assertEqual(seqs, list(range(seqs[0], seqs[0] + len(seqs))))
            if out:
                self.assertEqual(seqs[0], out[-1]["seq"] + 1)
            out.extend(page)
            from_seq = seqs[-1] + 1
        self.assertEqual(len(out), meta["records"])
        if out:
            self.assertEqual(out[0]["seq"], meta["first_seq"])
            self.assertEqual(out[-1]["seq"], meta["next_seq"] - 1)
        return out

    # -- record checks

    def check_common(self, r):
        """Fields every message record has, whatever its message."""
        self.assertEqual(set(r), RECORD_KEYS, r)  # no "dropped": everything was delivered
        self.assertIsInstance(r["seq"], int)
        self.assertIsInstance(r["pc"], float)
        self.assertIsInstance(r["ts"], float)
        self.assertGreaterEqual(r["ts"], self.t_begin - 1.0)
        self.assertLessEqual(r["ts"], time.time() + 1.0)
        self.assertIn(r["direction"], ("rx", "tx"))
        self.assertIn(r["msg_type"], TYPE_NAMES.values())
        self.assertIsInstance(r["msg"], list)
        self.assertEqual(r["msg_type"], TYPE_NAMES[r["msg"][0]])
        self.assertIsInstance(r["correlation_is_anchor"], bool)
        self.assertIsInstance(r["correlation_is_last"], bool)
        if r["correlation"] is not None:
            self.assertRegex(r["correlation"], UUID_RE)
            self.assertEqual(str(uuid.UUID(r["correlation"])), r["correlation"])
        sers = r["serializations"]
        self.assertIsInstance(sers, dict)
        self.assertTrue(sers, "serializations is empty")
        for k, n in sers.items():
            self.assertIn(k, h.SERIALIZERS)
            self.assertIsInstance(n, int)
            self.assertGreater(n, 0)

    def check_sequence(self, records, first_seq=0):
        """Gap-free seq from first_seq, clocks never going back."""
        self.assertEqual([r["seq"] for r in records],
                         list(range(first_seq, first_seq + len(records))))
        for a, b in zip(records, records[1:]):
            self.assertLessEqual(a["pc"], b["pc"])
            self.assertLessEqual(a["ts"], b["ts"] + 0.001)
        if len(records) > 1:
            # Both clocks measure the same span (wall clock barring a step during the test).
            span_pc = records[-1]["pc"] - records[0]["pc"]
            span_ts = records[-1]["ts"] - records[0]["ts"]
            self.assertAlmostEqual(span_pc, span_ts, delta=0.05)

    def check_against_wire(self, r, p, e, event_sers=None):
        """A record against the wire log entry of the message (same client, same direction)."""
        self.check_common(r)
        what = "%s %s %r" % (p, r["direction"], e.msg)
        self.assertEqual(r["direction"], e.direction, what)
        self.assertEqual(r["msg"], e.msg, what)
        self.assertEqual(r["msg_type"], TYPE_NAMES[e.msg[0]], what)
        self.assertEqual(r["session_id"], p.id, what)
        self.assertEqual(r["realm"], p.realm, what)
        if e.msg[0] == HELLO:
            # Before WELCOME the router has not given the session its authid/authrole yet.
            self.assertIn(r["authid"], (None, p.authid), what)
            self.assertIn(r["authrole"], (None, p.authrole), what)
        else:
            self.assertEqual(r["authid"], p.authid, what)
            self.assertEqual(r["authrole"], p.authrole, what)
        self.assertEqual(r["uri"], e.uri, what)
        sers = r["serializations"]
        self.assertEqual(sers.get(p.ser), e.nbytes, what)  # exactly the bytes on the wire
        if e.msg[0] == EVENT and event_sers is not None:
            self.assertEqual(set(sers), event_sers[e.uri], what)
        elif e.msg[0] != EVENT:
            self.assertEqual(set(sers), {p.ser}, what)

    def assert_exact(self, records, peers, pred, upto=None, event_sers=None, since=None):
        """records are exactly the messages of peers' wire logs that pred(peer, entry) selects,
        in each session's wire order; nothing of any other session. upto / since: {session id:
        wire log position} bounding what a trace saw (default: all). Returns
        {seq: (peer, entry)}."""
        upto = upto or {}
        since = since or {}
        by_session = collections.defaultdict(list)
        for r in records:
            by_session[r["session_id"]].append(r)
        known = {p.id for p in peers}
        self.assertLessEqual(set(by_session), known,
                             "records of unexpected sessions: %r"
                             % [r for r in records if r["session_id"] not in known][:3])
        where = {}
        for p in peers:
            entries = [e for e in p.entries(upto.get(p.id))[since.get(p.id, 0):] if pred(p, e)]
            for d in ("rx", "tx"):
                want = [e for e in entries if e.direction == d]
                got = [r for r in by_session.get(p.id, []) if r["direction"] == d]
                self.assertEqual([r["msg"] for r in got], [e.msg for e in want],
                                 "%r, %s: records vs wire" % (p, d))
                for r, e in zip(got, want):
                    self.check_against_wire(r, p, e, event_sers)
                    where[r["seq"]] = (p, e)
        return where

    def chains(self, records):
        """Records grouped by correlation (seq order); also checks anchor/last flags."""
        groups = collections.OrderedDict()
        for r in records:
            self.assertIsNotNone(r["correlation"], r)
            groups.setdefault(r["correlation"], []).append(r)
        for corr, g in groups.items():
            self.assertTrue(g[0]["correlation_is_anchor"], g[0])
            self.assertEqual(g[0]["direction"], "rx")
            self.assertEqual([r["correlation_is_anchor"] for r in g[1:]], [False] * (len(g) - 1),
                             "anchor flag after the anchor in %s" % corr)
            self.assertTrue(g[-1]["correlation_is_last"], "no last flag at the end of %r"
                            % [(r["msg_type"], r["correlation_is_last"]) for r in g])
            self.assertEqual([r["correlation_is_last"] for r in g[:-1]], [False] * (len(g) - 1),
                             "last flag before the end of %r"
                             % [(r["msg_type"], r["correlation_is_last"]) for r in g])
            self.assertEqual({r["uri"] for r in g}, {g[0]["uri"]}, "one action, one uri")
        return list(groups.values())

    def check_meta(self, meta, trace_id, status):
        self.assertEqual(set(meta), META_KEYS, meta)
        self.assertEqual(meta["id"], trace_id)
        self.assertEqual(meta["node_id"], self.cfg["node_id"])
        self.assertEqual(meta["worker_id"], self.cfg["worker_id"])
        self.assertEqual(meta["status"], status)
        self.assertRegex(meta["started"], ISO_RE)
        started = iso_to_epoch(meta["started"])
        self.assertGreaterEqual(started, self.t_begin - 1.0)
        self.assertLessEqual(started, time.time() + 1.0)
        self.assertIsInstance(meta["runtime"], float)
        self.assertGreaterEqual(meta["runtime"], 0.0)
        if status == "running":
            self.assertIsNone(meta["ended"])
            self.assertIsNone(meta["stop_reason"])
        else:
            self.assertRegex(meta["ended"], ISO_RE)
            ended = iso_to_epoch(meta["ended"])
            self.assertGreaterEqual(ended, started)
            # runtime is measured on the monotonic clock: it matches ended - started to within
            # the millisecond rounding of both (and a little clock slew).
            self.assertAlmostEqual(meta["runtime"], ended - started, delta=0.05)
            self.assertIn(meta["stop_reason"], ("stopped", "duration", "max_records", "shutdown"))
        for k in ("first_seq", "next_seq", "records", "dropped", "bytes"):
            self.assertIsInstance(meta[k], int, k)
            self.assertGreaterEqual(meta[k], 0, k)
        self.assertEqual(meta["records"], meta["next_seq"] - meta["first_seq"])
        self.assertEqual(meta["first_seq"], meta["dropped"])  # nothing else removes records
        if meta["records"]:
            self.assertGreater(meta["bytes"], 0)
        self.assertIsNone(meta["persistent_id"])
        self.assertIsInstance(meta["options"], dict)
        for k, v in OPTION_DEFAULTS.items():
            self.assertIn(k, meta["options"])
        return meta


def canonical_chain(g):
    """The message types of a chain; what follows a PUBLISH (EVENTs, PUBLISHED) as a multiset."""
    types = [r["msg_type"] for r in g]
    if types[0] == "Publish":
        return tuple(types[:1] + sorted(types[1:]))
    return tuple(types)


# --- 1. one filtered trace, all of its records ----------------------------------------------------

class FilteredTraceBase:
    async def test_filtered_trace_records_and_correlation(self):
        m = await self.mgmt()
        opts = {"uris": TRACED}
        meta = await m.start("t1", opts)
        self.check_meta(meta, "t1", "running")
        self.assertEqual(meta["options"]["uris"], TRACED)
        self.assertEqual((meta["first_seq"], meta["next_seq"], meta["records"]), (0, 0, 0))

        s1 = await self.peer("json", "s1")
        s2 = await self.peer("msgpack", "s2")
        s3 = await self.peer("json", "s3")
        pub = await self.peer("msgpack", "pub")
        c1 = await self.peer("json", "c1")
        c2 = await self.peer("msgpack", "c2")
        k1 = await self.peer("msgpack", "k1")
        k2 = await self.peer("json", "k2")
        peers = [s1, s2, s3, pub, c1, c2, k1, k2]

        mixed, json_only, other = "com.traced.mixed", "com.traced.json_only", "com.other.topic"
        in_mixed1, in_mixed2, in_json1, in_json3, in_other1, in_other2 = (Inbox() for _ in range(6))
        await h.step(s1.s.subscribe(in_mixed1, mixed))
        await h.step(s1.s.subscribe(in_json1, json_only))
        await h.step(s1.s.subscribe(in_other1, other))
        await h.step(s2.s.subscribe(in_mixed2, mixed))
        await h.step(s2.s.subscribe(in_other2, other))
        sub3 = await h.step(s3.s.subscribe(in_json3, json_only))

        seen = []

        def echo(*args, **kwargs):
            seen.append((list(args), kwargs))
            return CallResult(*args, **kwargs)

        def fail(*args, **kwargs):
            raise ApplicationError("com.traced.error.failed", "it failed", 7, why={"x": [1]})

        invoked = asyncio.get_running_loop().create_future()

        async def hang(*args):
            invoked.set_result(args)
            await h.hang_forever()

        reg_echo = await h.step(c1.s.register(echo, "com.traced.echo"))
        await h.step(c1.s.register(fail, "com.traced.fail"))
        await h.step(c1.s.register(echo, "com.other.echo"))
        await h.step(c2.s.register(hang, "com.traced.hang"))

        # Pub/sub: acknowledged and not, to mixed and single-serializer receivers, to nobody.
        ack = PublishOptions(acknowledge=True)
        await h.step(pub.s.publish(mixed, *h.ARGS, options=ack, **h.KWARGS))
        pub.s.publish(mixed, "no ack", n=2)
        await h.step(pub.s.publish(json_only, "to json", options=ack))
        pub.s.publish("com.traced.nobody", "lost")
        await h.step(pub.s.publish(other, "other ack", options=ack))
        pub.s.publish(other, "other no ack")
        for inbox in (in_mixed1, in_mixed2):
            self.assertEqual(await inbox.wait(2),
                             [(h.ARGS, h.KWARGS), (["no ack"], {"n": 2})])
        for inbox in (in_json1, in_json3):
            self.assertEqual(await inbox.wait(1), [(["to json"], {})])
        for inbox in (in_other1, in_other2):
            self.assertEqual(await inbox.wait(2),
                             [(["other ack"], {}), (["other no ack"], {})])

        # RPC: args/kwargs across serializers, an application error, the callee leaving.
        res = await h.step(k1.s.call("com.traced.echo", *h.ARGS, **h.KWARGS))
        self.assertEqual((list(res.results), res.kwresults), (h.ARGS, h.KWARGS))
        self.assertEqual(await h.step(k2.s.call("com.traced.echo", "json caller")),
                         "json caller")
        self.assertEqual(await h.step(k1.s.call("com.other.echo", 5)), 5)
        e = await self.assert_error("com.traced.error.failed", k1.s.call("com.traced.fail", "x"))
        self.assertEqual((list(e.args), e.kwargs), (["it failed", 7], {"why": {"x": [1]}}))
        pending = asyncio.ensure_future(k1.s.call("com.traced.hang", "forever"))
        self.assertEqual(await h.step(invoked), ("forever",))
        c2.s.abort_transport()
        with self.assertRaises(ApplicationError) as cm:
            await h.step(pending)
        self.assertEqual(cm.exception.error, "wamp.error.canceled")
        await h.step(c2.s.lost)
        await h.step(sub3.unsubscribe())
        await h.step(reg_echo.unregister())
        self.assertEqual(len(seen), 3)

        stopped = await m.stop("t1")
        self.check_meta(stopped, "t1", "stopped")
        self.assertEqual(stopped["stop_reason"], "stopped")
        records = await self.page_all(m, "t1", limit=7)
        self.assertGreater(len(records), 7 * 5)  # several pages
        self.check_sequence(records, 0)
        self.assertEqual(stopped["next_seq"], len(records))
        self.assertEqual(stopped["dropped"], 0)
        for r in records:
            self.assertTrue(r["uri"].startswith("com.traced."), r)
        where = self.assert_exact(
            records, peers, lambda p, e: e.uri is not None and e.uri.startswith("com.traced."),
            event_sers={mixed: {"json", "msgpack"}, json_only: {"json"}})
        self.assertEqual(len(where), len(records))

        # Correlation chains.
        chains = self.chains(records)
        got = collections.Counter(canonical_chain(g) for g in chains)
        want = collections.Counter({
            ("Subscribe", "Subscribed"): 4,
            ("Register", "Registered"): 3,
            ("Publish", "Event", "Event", "Published"): 2,  # mixed ack, json_only ack
            ("Publish", "Event", "Event"): 1,  # mixed, not acknowledged
            ("Publish",): 1,  # nobody to deliver to, not acknowledged: anchor and last
            ("Call", "Invocation", "Yield", "Result"): 2,
            ("Call", "Invocation", "Error", "Error"): 1,
            ("Call", "Invocation", "Error"): 1,  # the callee left
            ("Unsubscribe", "Unsubscribed"): 1,
            ("Unregister", "Unregistered"): 1,
        })
        self.assertEqual(got, want)
        for g in chains:
            peers_of = [where[r["seq"]][0] for r in g]
            types = [r["msg_type"] for r in g]
            if types == ["Publish"]:
                self.assertTrue(g[0]["correlation_is_last"])
                self.assertEqual(g[0]["uri"], "com.traced.nobody")
            elif types[0] == "Publish":
                self.assertEqual(peers_of[0], pub)
                events = [(p, r) for p, r in zip(peers_of, g) if r["msg_type"] == "Event"]
                want_to = {s1, s2} if g[0]["uri"] == mixed else {s1, s3}
                self.assertEqual({p for p, _ in events}, want_to)
                pubd = [r for r in g if r["msg_type"] == "Published"]
                if pubd:
                    # The publication id in PUBLISHED is the one in every EVENT.
                    self.assertEqual({r["msg"][2] for _, r in events}, {pubd[0]["msg"][2]})
            elif types[0] == "Call":
                caller, callee = peers_of[0], peers_of[1]
                self.assertIn(caller, (k1, k2))
                self.assertIn(callee, (c1, c2))
                self.assertEqual(peers_of[-1], caller)
                self.assertEqual([r["direction"] for r in g][:2], ["rx", "tx"])
                if types == ["Call", "Invocation", "Error"]:
                    self.assertEqual((g[0]["uri"], callee, caller), ("com.traced.hang", c2, k1))
                    self.assertEqual(g[-1]["msg"][:2], [ERROR, CALL])
                    self.assertEqual(g[-1]["msg"][4], "wamp.error.canceled")
                    self.assertEqual(g[-1]["msg"][2], g[0]["msg"][1])  # answers the CALL
                elif types[2] == "Error":
                    self.assertEqual(g[0]["uri"], "com.traced.fail")
                    self.assertEqual(peers_of[2], c1)
                    self.assertEqual(g[2]["msg"][:2], [ERROR, INVOCATION])
                    self.assertEqual(g[2]["msg"][2], g[1]["msg"][1])
                    self.assertEqual(g[3]["msg"][:2], [ERROR, CALL])
                    self.assertEqual(g[3]["msg"][2], g[0]["msg"][1])
                    for r in g[2:]:
                        self.assertEqual(r["msg"][4:], ["com.traced.error.failed",
                                                        ["it failed", 7], {"why": {"x": [1]}}])
                else:
                    self.assertEqual(g[0]["uri"], "com.traced.echo")
                    self.assertEqual(peers_of[2], callee)
                    self.assertEqual(g[1]["msg"][1], g[2]["msg"][1])  # YIELD answers INVOCATION
                    self.assertEqual(g[3]["msg"][1], g[0]["msg"][1])  # RESULT answers CALL
            else:
                self.assertEqual(len({p for p in peers_of}), 1, "one session's request/reply")


class TestFilteredTraceMgmtJson(FilteredTraceBase, TraceTestCase):
    MGMT_SER = "json"


class TestFilteredTraceMgmtMsgpack(FilteredTraceBase, TraceTestCase):
    MGMT_SER = "msgpack"


# --- 2..8 -----------------------------------------------------------------------------------------

class TestTracing(TraceTestCase):

    # 2. Concurrent traces with different filters each see exactly their messages.
    async def test_concurrent_traces_each_see_their_messages(self):
        m = await self.mgmt()
        await m.start("by_uri", {"uris": TRACED})
        await m.start("events_tx", {"msg_types": ["Publish", "Event"], "direction": "tx"})
        await m.start("realm2", {"realms": ["realm2"]})

        a_sub = await self.peer("json", "a_sub")
        a_pub = await self.peer("msgpack", "a_pub")
        b_sub = await self.peer("msgpack", "b_sub", realm="realm2")
        b_pub = await self.peer("json", "b_pub", realm="realm2")
        b_callee = await self.peer("msgpack", "b_callee", realm="realm2")
        peers = [a_sub, a_pub, b_sub, b_pub, b_callee]

        ins = [Inbox() for _ in range(4)]
        await h.step(a_sub.s.subscribe(ins[0], "com.traced.a"))
        await h.step(a_sub.s.subscribe(ins[1], "com.other.a"))
        await h.step(b_sub.s.subscribe(ins[2], "com.traced.b"))
        await h.step(b_sub.s.subscribe(ins[3], "com.r2.b"))
        await h.step(b_callee.s.register(lambda x: x + 1, "com.traced.inc"))
        await h.step(b_callee.s.register(lambda x: x * 2, "com.r2.double"))
        ack = PublishOptions(acknowledge=True)
        for i in range(3):
            await h.step(a_pub.s.publish("com.traced.a", i, options=ack))
            a_pub.s.publish("com.other.a", i, k="v")
            await h.step(b_pub.s.publish("com.traced.b", i, options=ack))
            b_pub.s.publish("com.r2.b", [i])
        for inbox in ins:
            await inbox.wait(3)
        self.assertEqual(await h.step(b_pub.s.call("com.traced.inc", 41)), 42)
        self.assertEqual(await h.step(b_pub.s.call("com.r2.double", 21)), 42)

        for tid in ("by_uri", "events_tx", "realm2"):
            self.assertEqual((await m.stop(tid))["status"], "stopped")
        upto = {p.id: p.mark() for p in peers}
        got = {}
        for tid in ("by_uri", "events_tx", "realm2"):
            got[tid] = await self.page_all(m, tid, limit=50)
            self.check_sequence(got[tid], 0)  # each trace numbers its own records

        self.assert_exact(got["by_uri"], peers,
                          lambda p, e: e.uri is not None and e.uri.startswith("com.traced."),
                          upto)
        self.assertEqual({r["realm"] for r in got["by_uri"]}, {"realm1", "realm2"})
        self.assert_exact(got["events_tx"], peers,
                          lambda p, e: e.direction == "tx" and e.msg[0] == EVENT, upto)
        self.assertEqual(len(got["events_tx"]), 12)
        where = self.assert_exact(got["realm2"], peers, lambda p, e: p.realm == "realm2", upto)
        self.assertEqual(len(where), len(got["realm2"]))
        # The realm2 sessions joined while the trace ran: their HELLO/WELCOME are there, one
        # correlation from HELLO (anchor) to WELCOME (last).
        for p in (b_sub, b_pub, b_callee):
            opening = [r for r in got["realm2"] if r["session_id"] == p.id][:2]
            self.assertEqual([r["msg_type"] for r in opening], ["Hello", "Welcome"])
            self.assertIsNotNone(opening[0]["correlation"])
            self.assertEqual(opening[0]["correlation"], opening[1]["correlation"])
            self.assertEqual([opening[0]["correlation_is_anchor"],
                              opening[1]["correlation_is_last"]], [True, True])

    # Session-level messages, closing included, belong to the session's realm.
    async def test_session_lifecycle_recorded_in_its_realm(self):
        m = await self.mgmt()
        await m.start("r2", {"realms": ["realm2"]})
        peers = [await self.peer(ser, "p_" + ser, realm="realm2") for ser in h.SERIALIZERS]
        await h.step(peers[0].s.register(lambda: "pong", "com.r2.ping"))
        self.assertEqual(await h.step(peers[1].s.call("com.r2.ping")), "pong")
        for p in peers:
            await h.step(p.s.close())  # GOODBYE, the router's GOODBYE, close
        await m.stop("r2")
        records = await self.page_all(m, "r2", limit=100)
        self.check_sequence(records)
        for p in peers:
            types = [(r["direction"], r["msg_type"]) for r in records if r["session_id"] == p.id]
            self.assertEqual(types[-2:], [("rx", "Goodbye"), ("tx", "Goodbye")], p)
        self.assert_exact(records, peers, lambda p, e: True)

    # 3. stop / get / list / delete and the metadata.
    async def test_trace_lifecycle_and_metadata(self):
        m = await self.mgmt()
        self.assertEqual(await m.list(), [])
        opts = {"uris": TRACED, "msg_types": ["Publish", "Published"], "limit": 1000,
                "batching_period": 100}
        b = await m.start("zz-first", opts)
        self.check_meta(b, "zz-first", "running")
        for k, v in opts.items():
            self.assertEqual(b["options"][k], v, k)
        for k, v in OPTION_DEFAULTS.items():
            if k not in opts:
                self.assertEqual(b["options"][k], v, k)
        for k in ("realms", "session_ids", "authids", "authroles"):
            self.assertIsNone(b["options"].get(k), k)
        a = await m.start("aa-second", None)
        self.check_meta(a, "aa-second", "running")
        self.assertEqual({k: a["options"][k] for k in OPTION_DEFAULTS}, OPTION_DEFAULTS)
        auto1 = await m.start(None, {})
        auto2 = await m.start()
        self.assertEqual((auto1["id"], auto2["id"]), ("trace1", "trace2"))
        self.assertEqual(await m.list(), ["zz-first", "aa-second", "trace1", "trace2"])

        pub = await self.peer("json", "pub")
        for i in range(3):
            await h.step(pub.s.publish("com.traced.t", i, options=PublishOptions(acknowledge=True)))
        running = await m.get("zz-first")
        self.check_meta(running, "zz-first", "running")
        self.assertEqual((running["next_seq"], running["records"]), (6, 6))
        live = await m.data("zz-first")  # readable while running
        self.assertEqual([r["msg_type"] for r in live], ["Publish", "Published"] * 3)

        stopped = await m.stop("zz-first")
        self.check_meta(stopped, "zz-first", "stopped")
        self.assertEqual(stopped["stop_reason"], "stopped")
        self.assertEqual((stopped["first_seq"], stopped["next_seq"], stopped["records"],
                          stopped["dropped"]), (0, 6, 6, 0))
        self.assertEqual(stopped["bytes"], running["bytes"])
        self.assertEqual(stopped["options"], b["options"])
        self.assertEqual(stopped["started"], b["started"])
        await h.step(pub.s.publish("com.traced.t", 99, options=PublishOptions(acknowledge=True)))
        again = await m.get("zz-first")  # a stopped trace records nothing more
        self.assertEqual(again, stopped)
        # Data stays readable, by kwargs too; to_seq and limit bound the page.
        self.assertEqual(await m.data("zz-first"), live)
        page = await m.call("get_trace_data", node_id=m.node, worker_id=m.worker,
                            trace_id="zz-first", from_seq=2, to_seq=4, limit=10)
        self.assertEqual(page, live[2:5])
        self.assertEqual(await m.data("zz-first", 1, None, 2), live[1:3])
        self.assertEqual(await m.data("zz-first", 6), [])
        self.assertEqual(await m.data("zz-first", 4, 3), [])
        kw = await m.call("get_trace", node_id=m.node, worker_id=m.worker, trace_id="zz-first")
        self.assertEqual(kw, stopped)

        self.assertEqual(await m.list(), ["zz-first", "aa-second", "trace1", "trace2"])
        self.assertEqual(await m.list(True), ["zz-first", "aa-second", "trace1", "trace2"])
        self.assertEqual(await m.list(False), ["aa-second", "trace1", "trace2"])
        self.assertEqual(await m.call("list_traces", node_id=m.node, worker_id=m.worker,
                                      include_stopped=False), ["aa-second", "trace1", "trace2"])

        self.assertIsNone(await m.delete("zz-first"))
        await self.assert_error("crossbar.error.no_such_object", m.get("zz-first"), "zz-first")
        await self.assert_error("crossbar.error.no_such_object", m.data("zz-first"))
        self.assertEqual(await m.list(), ["aa-second", "trace1", "trace2"])
        # The id is free again; a restarted trace starts from seq 0.
        restarted = await m.start("zz-first", {"uris": TRACED})
        self.assertEqual(restarted["next_seq"], 0)
        self.assertEqual(await m.list(), ["aa-second", "trace1", "trace2", "zz-first"])
        # stop_trace on a stopped trace keeps the first stop.
        first = await m.stop("aa-second")
        self.assertEqual(await m.stop("aa-second"), first)
        # Every procedure takes its arguments as kwargs too.
        target = {"node_id": m.node, "worker_id": m.worker, "trace_id": "kw"}
        kw = await m.call("start_trace", trace_options={"limit": 10}, **target)
        self.check_meta(kw, "kw", "running")
        self.assertEqual(kw["options"]["limit"], 10)
        self.assertEqual((await m.call("stop_trace", **target))["status"], "stopped")
        self.assertIsNone(await m.call("delete_trace", **target))
        self.assertNotIn("kw", await m.list())

    # 4. Every error of mgmt/README.md's table.
    async def test_lookup_and_state_errors(self):
        m = await self.mgmt()
        n, w = m.node, m.worker
        nso, nsw = "crossbar.error.no_such_object", "crossbar.error.no_such_worker"
        await self.assert_error(nso, m.call("list_workers", "no-such-node"), "no-such-node")
        await self.assert_error(nso, m.call("get_worker", "no-such-node", w))
        await self.assert_error(nso, m.call("list_traces", "no-such-node", w))
        await self.assert_error(nso, m.call("start_trace", "no-such-node", w, None, None))
        await self.assert_error(nsw, m.call("get_worker", n, "no-such-worker"), "no-such-worker")
        await self.assert_error(nsw, m.call("list_traces", n, "no-such-worker"))
        await self.assert_error(nsw, m.call("start_trace", n, "no-such-worker", "x", None))
        await self.assert_error(nsw, m.call("get_trace_data", n, "no-such-worker", "x"))
        for proc in ("get_trace", "stop_trace", "delete_trace", "get_trace_data"):
            await self.assert_error(nso, m.call(proc, n, w, "no-such-trace"), "no-such-trace")
        self.assertEqual(await m.list(), [])  # nothing was created by a failed call

        await m.start("t")
        await self.assert_error("crossbar.error.already_running", m.start("t", {"limit": 5}), "t")
        await self.assert_error("crossbar.error.not_stopped", m.delete("t"), "t")
        await m.stop("t")
        await self.assert_error("crossbar.error.already_exists", m.start("t"), "t")
        self.assertEqual((await m.get("t"))["options"]["limit"], OPTION_DEFAULTS["limit"])

        inv = "wamp.error.invalid_argument"
        await self.assert_error(inv, m.data("t", 0, None, 0), "limit")
        await self.assert_error(inv, m.data("t", 0, None, 20000), "limit")
        await self.assert_error(inv, m.data("t", -1), "from_seq")
        await self.assert_error(inv, m.data("t", "0"), "from_seq")
        await self.assert_error(inv, m.data("t", 0, -5), "to_seq")
        await self.assert_error(inv, m.call("get_trace_data", n, w, "t", limit="10"), "limit")
        await self.assert_error(inv, m.call("get_trace", 5, w, "t"), "node_id")
        await self.assert_error(inv, m.call("get_trace", n, w, 7), "trace_id")
        await self.assert_error(inv, m.list("yes"), "include_stopped")
        # The bounds themselves are fine.
        self.assertEqual(await m.data("t", 0, None, 1), [])
        self.assertEqual(await m.data("t", 0, None, 10000), [])

    async def test_option_errors(self):
        m = await self.mgmt()
        cfg_err = "crossbar.error.invalid_configuration"
        bad = [
            ({"limit": "10"}, "limit"), ({"limit": 0}, "limit"), ({"limit": 10000001}, "limit"),
            ({"limit": 1.5}, "limit"), ({"batching_period": 5}, "batching_period"),
            ({"batching_period": 10001}, "batching_period"), ({"duration": 0}, "duration"),
            ({"duration": 86401}, "duration"), ({"duration": "1"}, "duration"),
            ({"max_records": 0}, "max_records"), ({"max_bytes": "big"}, "max_bytes"),
            ({"direction": "up"}, "direction"), ({"realms": "realm1"}, "realms"),
            ({"realms": []}, "realms"), ({"uris": [{"uri": "a", "match": "regex"}]}, "uris"),
            ({"uris": [5]}, "uris"), ({"msg_types": ["Publishing"]}, "msg_types"),
            ({"session_ids": ["x"]}, "session_ids"), ({"session_ids": [0]}, "session_ids"),
            ({"authids": [""]}, "authids"), ({"authroles": "x"}, "authroles"),
            ({"trace_app_payload": "yes"}, "trace_app_payload"), ({"persist": 1}, "persist"),
            ({"trace_level": "packet"}, "trace_level"), ({"no_such_option": 1}, "no_such_option"),
            ({"uris": TRACED, "Limit": 5}, "Limit"),
            ({"persist_max_bytes": 1}, "persist_max_bytes"),
            ({"persist_max_age": 0}, "persist_max_age"),
            # An action trace filters on anchors, which the router receives.
            ({"trace_level": "action", "direction": "tx"}, "direction"),
        ]
        for opts, name in bad:
            with self.subTest(opts=opts):
                await self.assert_error(cfg_err, m.start("bad", opts), name)
        await self.assert_error(cfg_err, m.start("bad", ["limit", 5]))
        self.assertEqual(await m.list(), [])  # a refused start leaves nothing behind
        # The same values in range are accepted.
        ok = await m.start("ok", {"limit": 1, "batching_period": 10, "duration": 86400,
                                  "max_records": 1, "persist": False, "trace_level": "message",
                                  "direction": "rx", "uris": ["*"], "msg_types": ["publish"]})
        self.assertEqual(ok["options"]["limit"], 1)
        self.assertEqual(ok["options"]["persist"], False)
        self.assertEqual(ok["options"]["trace_level"], "message")

    async def test_too_many_traces(self):
        m = await self.mgmt()
        cap = self.cfg["max_traces"]
        for i in range(cap):
            await m.start("t%d" % i)
        e = await self.assert_error("crossbar.error.resource_limit", m.start("one-more"))
        self.assertIn(str(cap), e.args[0])
        await self.assert_error("crossbar.error.resource_limit", m.start(None))
        self.assertEqual(len(await m.list()), cap)
        await m.stop("t3")
        await m.delete("t3")
        await m.start("one-more")
        self.assertEqual((await m.list())[-1], "one-more")
        await self.assert_error("crossbar.error.resource_limit", m.start("yet-another"))

    # 5. Limits.
    async def test_limit_keeps_newest_records(self):
        m = await self.mgmt()
        await m.start("lim", {"uris": [{"uri": "com.lim.", "match": "prefix"}], "limit": 5})
        pub = await self.peer("msgpack", "pub")
        for i in range(10):  # PUBLISH + PUBLISHED each: 20 messages
            await h.step(pub.s.publish("com.lim.x", i, options=PublishOptions(acknowledge=True)))
        meta = await m.get("lim")
        self.assertEqual((meta["first_seq"], meta["next_seq"], meta["records"], meta["dropped"]),
                         (15, 20, 5, 15))
        page = await m.data("lim", 0, None, 100)
        self.assertEqual([r["seq"] for r in page], [15, 16, 17, 18, 19])
        self.assertEqual([r["msg_type"] for r in page],
                         ["Published", "Publish", "Published", "Publish", "Published"])
        self.assertEqual(page[1]["msg"][4], [8])
        self.assertEqual(page[3]["msg"][4], [9])
        self.assertEqual([r["seq"] for r in await m.data("lim", 3, 16)], [15, 16])
        self.assertEqual(await m.data("lim", 0, 10), [])
        stopped = await m.stop("lim")
        self.assertEqual((stopped["first_seq"], stopped["next_seq"], stopped["dropped"]),
                         (15, 20, 15))
        records = await self.page_all(m, "lim", limit=2)
        self.assertEqual(records, page)
        self.check_sequence(records, 15)

    async def test_max_records_stops_the_trace(self):
        m = await self.mgmt()
        started = await m.start("mr", {"uris": [{"uri": "com.mr.", "match": "prefix"}],
                                       "max_records": 3})
        self.assertEqual(started["options"]["max_records"], 3)
        pub = await self.peer("json", "pub")
        for i in range(4):
            await h.step(pub.s.publish("com.mr.x", i, options=PublishOptions(acknowledge=True)))
        meta = await m.get("mr")
        self.check_meta(meta, "mr", "stopped")
        self.assertEqual(meta["stop_reason"], "max_records")
        self.assertEqual((meta["next_seq"], meta["records"], meta["dropped"]), (3, 3, 0))
        records = await self.page_all(m, "mr")
        self.assertEqual([r["msg_type"] for r in records], ["Publish", "Published", "Publish"])
        self.assertEqual(await m.list(False), [])

    async def test_duration_stops_the_trace(self):
        m = await self.mgmt()
        t0 = time.monotonic()
        await m.start("dur", {"duration": 1})
        elapsed = None
        while time.monotonic() - t0 < 3.0:
            meta = await m.get("dur")
            if meta["status"] == "stopped":
                elapsed = time.monotonic() - t0
                break
            self.assertIsNone(meta["stop_reason"])
            await asyncio.sleep(0.02)
        self.assertIsNotNone(elapsed, "a 1 s trace still runs after 3 s")
        self.check_meta(meta, "dur", "stopped")
        self.assertEqual(meta["stop_reason"], "duration")
        # The router's own measure (monotonic clock) is the one bounded tightly; the client saw
        # the stop one get_trace round trip later at most.
        self.assertGreaterEqual(meta["runtime"], 1.0)
        self.assertLessEqual(meta["runtime"], 1.3)
        self.assertGreaterEqual(elapsed, 1.0)
        self.assertLessEqual(elapsed, 1.5)

    # 6. Live feed.
    async def test_live_feed_tiles_the_stored_records(self):
        m = await self.mgmt("msgpack")
        feed = []  # (topic, args) in arrival order

        def on(topic):
            def handler(*args):
                feed.append((topic, list(args)))
            return handler

        for topic in ("on_trace_started", "on_trace_data", "on_trace_stopped"):
            await h.step(m.peer.s.subscribe(on(topic), TOPIC_PREFIX + topic))
        # Another trace runs alongside: its feed must not mix with this one's.
        await m.start("other", {"uris": [{"uri": "com.none.", "match": "prefix"}]})
        started = await m.start("feed", {"uris": [{"uri": "com.feed.", "match": "prefix"}],
                                         "batching_period": 50})
        self.assertEqual(started["options"]["batching_period"], 50)
        pub = await self.peer("json", "pub")
        sub = await self.peer("msgpack", "sub")
        inbox = Inbox()
        await h.step(sub.s.subscribe(inbox, "com.feed.x"))
        n = 0
        for burst in range(4):
            for i in range(6):
                await h.step(pub.s.publish("com.feed.x", burst, i,
                                           options=PublishOptions(acknowledge=True)))
                n += 1
            await inbox.wait(n)
            await asyncio.sleep(0.15)
        stopped = await m.stop("feed")
        deadline = time.monotonic() + 5.0
        while not any(t == "on_trace_stopped" and a[2] == "feed" for t, a in feed):
            self.assertLess(time.monotonic(), deadline, "no on_trace_stopped for the trace")
            await asyncio.sleep(0.02)
        await m.stop("other")
        records = await self.page_all(m, "feed", limit=25)
        self.assertEqual(len(records), 2 + 4 * 6 * 3)  # SUBSCRIBE/D, then PUBLISH+EVENT+PUBLISHED

        mine = [(t, a) for t, a in feed if a[2] == "feed"]
        self.assertEqual(mine[0][0], "on_trace_started")
        self.assertEqual(mine[0][1], [m.node, m.worker, "feed", started])
        self.assertEqual(mine[-1][0], "on_trace_stopped")
        final = await m.get("feed")
        self.assertEqual(mine[-1][1], [m.node, m.worker, "feed", final])
        self.check_meta(final, "feed", "stopped")
        self.assertEqual(final["stop_reason"], "stopped")
        self.assertEqual(final["next_seq"], stopped["next_seq"])
        batches = [a for t, a in mine[1:-1]]
        self.assertEqual([t for t, _ in mine[1:-1]], ["on_trace_data"] * len(batches))
        self.assertGreaterEqual(len(batches), 3, "traffic in 4 bursts came in one batch")
        expect_first, periods, fed = 0, [], []
        for node, worker, tid, period, recs in batches:
            self.assertEqual((node, worker, tid), (m.node, m.worker, "feed"))
            self.assertEqual(set(period), {"period", "first_seq", "last_seq", "period_start",
                                           "finished_ts"})
            self.assertEqual(period["first_seq"], expect_first, "gap or overlap between batches")
            self.assertGreaterEqual(period["last_seq"], period["first_seq"])
            self.assertEqual([r["seq"] for r in recs],
                             list(range(period["first_seq"], period["last_seq"] + 1)))
            self.assertRegex(period["period_start"], ISO_RE)
            self.assertRegex(period["finished_ts"], ISO_RE)
            self.assertLessEqual(iso_to_epoch(period["period_start"]),
                                 iso_to_epoch(period["finished_ts"]))
            periods.append(period["period"])
            expect_first = period["last_seq"] + 1
            fed.extend(recs)
        self.assertEqual(expect_first, final["next_seq"])
        self.assertEqual(periods, sorted(set(periods)), "period numbers must increase")
        self.assertEqual(fed, records)
        # Nothing of the other trace was fed (it recorded nothing).
        self.assertFalse([a for t, a in feed if t == "on_trace_data" and a[2] == "other"])

    # 7. The management realm is excluded unless named.
    async def test_management_realm_excluded_unless_named(self):
        m = await self.mgmt()
        app = await self.peer("json", "app")
        app_mark = app.mark()
        await m.start("default")
        await m.start("with_mgmt", {"realms": [self.cfg["mgmt_realm"]]})
        mark0 = m.peer.mark()
        self.assertEqual(await m.call("list_nodes"), [m.node])
        self.assertEqual(await m.call("list_workers", m.node), [m.worker])
        await m.get("default")
        await h.step(app.s.register(lambda: "app", "com.app.proc"))
        self.assertEqual(await h.step(app.s.call("com.app.proc")), "app")
        # Application realms never see the management procedures.
        await self.assert_error("wamp.error.no_such_procedure", app.s.call(PREFIX + "list_nodes"))
        await m.stop("with_mgmt")
        mark1 = m.peer.mark()
        await m.stop("default")

        default = await self.page_all(m, "default")
        self.assertTrue(default)
        self.assertEqual({r["realm"] for r in default}, {"realm1"})
        self.assertNotIn(m.peer.id, {r["session_id"] for r in default})
        self.assert_exact(default, [app], lambda p, e: True, since={app.id: app_mark})

        named = await self.page_all(m, "with_mgmt")
        self.assertEqual({r["realm"] for r in named}, {self.cfg["mgmt_realm"]})
        self.assertEqual({r["session_id"] for r in named}, {m.peer.id})
        self.assertEqual({r["authrole"] for r in named}, {"admin"})
        # The calls made while it ran, CALL and RESULT each, exactly as on the wire, up to the
        # CALL of stop_trace (its RESULT comes after the stop); before them, at most the RESULT
        # of the start_trace call that created the trace.
        entries = m.peer.entries(mark1)[mark0:]
        self.assertEqual((entries[-1].msg[0], entries[-1].uri), (RESULT, PREFIX + "stop_trace"))
        entries = entries[:-1]
        self.assertEqual([r["msg"] for r in named[-len(entries):]], [e.msg for e in entries])
        for r, e in zip(named[-len(entries):], entries):
            self.check_against_wire(r, m.peer, e)
        self.assertLessEqual(len(named) - len(entries), 1)
        if len(named) > len(entries):
            self.assertEqual((named[0]["msg_type"], named[0]["uri"]),
                             ("Result", PREFIX + "start_trace"))
        calls = self.chains(named[-len(entries):-1])
        self.assertEqual([(g[0]["uri"], canonical_chain(g)) for g in calls],
                         [(PREFIX + p, ("Call", "Result")) for p in
                          ("list_nodes", "list_workers", "get_trace")])
        self.assertEqual((named[-1]["msg_type"], named[-1]["uri"], named[-1]["direction"]),
                         ("Call", PREFIX + "stop_trace", "rx"))
        self.assertTrue(named[-1]["correlation_is_anchor"])

    async def test_management_session_closing_not_in_default_trace(self):
        m = await self.mgmt()
        await m.start("default")
        other = await self.mgmt(name="mgmt2")
        self.assertEqual(await other.call("list_nodes"), [m.node])
        await h.step(other.peer.s.close())
        app = await self.peer("msgpack", "app")
        await h.step(app.s.close())
        await m.stop("default")
        records = await self.page_all(m, "default")
        leaked = [r for r in records if r["session_id"] in (m.peer.id, other.peer.id)]
        self.assertEqual(leaked, [], "records of management sessions in a default trace")
        self.assertEqual({r["realm"] for r in records}, {"realm1"})
        self.assert_exact(records, [app], lambda p, e: True)


# --- 8. protected mode ----------------------------------------------------------------------------

MGMT_CONFIG = "configs/test-e2e-mgmt.json"


class TestProtectedMode(unittest.TestCase):
    """configs/test-e2e-mgmt.json trusts 127.0.0.1/32 only for the management realm."""

    def setUp(self):
        path = os.path.join(os.environ.get("RT_SOURCE_DIR", ""), MGMT_CONFIG)
        if not os.path.exists(path):
            self.skipTest("%s does not exist yet (trusted_networks not landed)" % MGMT_CONFIG)
        self.cfg = e2e_config(MGMT_CONFIG)
        self.router = h.RouterProc(config=MGMT_CONFIG).start()
        self.addCleanup(self.router.stop)

    def raw(self, source):
        ws = h.RawWs(self.router.host, self.router.port, self.router.path,
                     source_address=(source, 0))
        self.addCleanup(ws.close)
        self.assertTrue(ws.upgraded, ws.status)
        self.assertEqual(ws.sock.getsockname()[0], source)
        return ws

    def test_untrusted_address_refused(self):
        ws = self.raw("127.0.0.2")
        reply = ws.hello(self.cfg["mgmt_realm"])
        self.assertEqual(reply[0], ABORT, reply)
        self.assertEqual(reply[2], "wamp.error.not_authorized")
        self.assertIsInstance(reply[1], dict)
        self.assertTrue(reply[1].get("message"), reply)  # says why
        self.assertTrue(ws.read_until_eof(), "the connection stays open after ABORT")
        # Application realms are not restricted by address.
        ws2 = self.raw("127.0.0.2")
        reply = ws2.hello("realm1")
        self.assertEqual(reply[0], WELCOME, reply)
        self.assertEqual(reply[2]["authrole"], "anonymous")

    def test_trusted_address_welcomed_as_admin(self):
        ws = self.raw("127.0.0.1")
        reply = ws.hello(self.cfg["mgmt_realm"])
        self.assertEqual(reply[0], WELCOME, reply)
        self.assertEqual(reply[2]["authrole"], "admin")
        self.assertEqual(reply[2]["realm"], self.cfg["mgmt_realm"])
        # ...and may use the API.
        ws.send_json([CALL, 1, {}, PREFIX + "list_nodes"])
        self.assertEqual(ws.recv_wamp(), [RESULT, 1, {}, [[self.cfg["node_id"]]]])


if __name__ == "__main__":
    h.main()
