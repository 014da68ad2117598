#!/usr/bin/python3
"""trace_ctl.py: starts, stops, deletes and inspects message traces through wampscope's
management API (realm "mgmt", crossbarfabriccenter.*; see mgmt/README.md). A small
client for the benchmark scripts in this folder (run_tracing.sh), usable by hand too.

Usage:
  trace_ctl.py (--url URL | --ports-file FILE) [--realm mgmt] [--ser json|msgpack] COMMAND ...
    start ID... [--options JSON]   start one trace per ID ("-" = let the router name it) with
                                   these trace_options (default: null = the router's defaults)
    stop ID...                     stop them (the records stay readable)
    delete ID...                   delete stopped traces
    get ID...                      print their metadata
    list                           print the ids of all traces
Every command prints one JSON line per trace (its metadata as the router returned it; `list`
prints the list) on stdout. Node and worker are list_nodes()[0] and list_workers(node)[0].
Exit status: 0 ok, 1 a WAMP error or a connection failure (reason on stderr), 2 usage error.

Runs with Debian's /usr/bin/python3 and python3-autobahn (asyncio ApplicationRunner). The
helpers below (MgmtSession, run_mgmt) are also used by page_trace.py.
"""

import argparse
import asyncio
import json
import sys
import warnings

import txaio

txaio.use_asyncio()
warnings.filterwarnings("ignore", category=DeprecationWarning)

from autobahn.asyncio.wamp import ApplicationRunner, ApplicationSession  # noqa: E402
from autobahn.wamp.exception import ApplicationError  # noqa: E402
from autobahn.wamp.serializer import JsonSerializer, MsgPackSerializer  # noqa: E402

PREFIX = "crossbarfabriccenter."
TIMEOUT = 60.0  # seconds for the whole command (connection, join, every call)


def serializer(name):
    if name == "json":
        return JsonSerializer()
    if name == "msgpack":
        return MsgPackSerializer()
    raise ValueError("unknown serializer %r (json or msgpack)" % name)


def url_from(args):
    if args.url:
        return args.url
    with open(args.ports_file, encoding="utf-8") as f:
        for line in f:
            if line.startswith("ws://"):
                return line.strip()
    raise SystemExit("trace_ctl: no ws:// URL in %s" % args.ports_file)


class MgmtSession(ApplicationSession):
    """Joins the management realm, finds node and worker, runs config.extra["job"](session) and
    leaves. The outcome lands in config.extra["outcome"]: {"status": 0|1, "error": str}."""

    def onConnect(self):
        # ApplicationRunner caps incoming messages at 1 MiB (setProtocolOptions in run());
        # a get_trace_data page of 10,000 records is several MiB. The protocol instance took
        # a copy of the factory's options when the connection was made: lift the caps there.
        t = self._transport
        for name in ("maxMessagePayloadSize", "maxFramePayloadSize"):
            if hasattr(t, name):
                setattr(t, name, 0)
        if self.config.extra.get("no_utf8_validation") and hasattr(t, "utf8validateIncoming"):
            t.utf8validateIncoming = False  # page_trace.py --client fast
        self.join(self.config.realm)

    async def onJoin(self, details):
        out = self.config.extra["outcome"]
        try:
            self.node = (await self.call(PREFIX + "list_nodes"))[0]
            self.worker = (await self.call(PREFIX + "list_workers", self.node))[0]
            await self.config.extra["job"](self)
            out["status"] = 0
        except ApplicationError as e:
            out["error"] = "%s: %s" % (e.error, " ".join(str(a) for a in e.args))
        except Exception as e:  # noqa: BLE001 (any failure ends the command with status 1)
            out["error"] = "%s: %s" % (type(e).__name__, e)
        finally:
            self.leave()

    def onLeave(self, details):
        out = self.config.extra["outcome"]
        if out.get("status") is None and "error" not in out:
            out["error"] = "left the realm: %s %s" % (details.reason, details.message or "")
        self.disconnect()

    def onDisconnect(self):
        out = self.config.extra["outcome"]
        if out.get("status") is None and "error" not in out:
            out["error"] = "connection closed before the command completed"
        asyncio.get_event_loop().stop()

    def mcall(self, proc, *args, **kwargs):
        """Calls crossbarfabriccenter.<proc>(node, worker, *args)."""
        return self.call(PREFIX + proc, self.node, self.worker, *args, **kwargs)


def run_mgmt(url, realm, ser, job, timeout=TIMEOUT, no_utf8_validation=False):
    """Runs job(session) (a coroutine function) in a management session. Returns 0 or 1."""
    outcome = {"status": None}
    runner = ApplicationRunner(url, realm, extra={"job": job, "outcome": outcome,
                                                  "no_utf8_validation": no_utf8_validation},
                               serializers=[serializer(ser)])
    loop = asyncio.new_event_loop()
    asyncio.set_event_loop(loop)

    def on_timeout():
        outcome.setdefault("error", "timed out after %.0f s" % timeout)
        loop.stop()

    loop.call_later(timeout, on_timeout)
    try:
        runner.run(MgmtSession, log_level="critical")
    except OSError as e:
        outcome["error"] = "cannot connect to %s: %s" % (url, e)
    if outcome.get("status") != 0:
        print("trace_ctl: %s" % outcome.get("error", "failed"), file=sys.stderr)
        return 1
    return 0


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0],
                                formatter_class=argparse.RawDescriptionHelpFormatter)
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--url", help="ws:// URL of the router")
    g.add_argument("--ports-file", help="the router's --ports-file (first ws:// URL)")
    p.add_argument("--realm", default="mgmt", help="management realm (default mgmt)")
    p.add_argument("--ser", default="json", help="json (default) or msgpack")
    p.add_argument("command", choices=("start", "stop", "delete", "get", "list"))
    p.add_argument("ids", nargs="*", metavar="ID")
    p.add_argument("--options", default=None,
                   help="start: trace_options as a JSON object (default: null)")
    a = p.parse_args(argv)
    options = None
    if a.options is not None:
        try:
            options = json.loads(a.options)
        except ValueError as e:
            p.error("--options: not JSON: %s" % e)
        if options is not None and not isinstance(options, dict):
            p.error("--options: must be a JSON object or null")
    if a.command != "list" and not a.ids:
        p.error("%s needs at least one trace id" % a.command)

    def emit(value):
        print(json.dumps(value, sort_keys=True), flush=True)

    async def job(s):
        if a.command == "list":
            emit(await s.mcall("list_traces"))
            return
        for tid in a.ids:
            if a.command == "start":
                emit(await s.mcall("start_trace", None if tid == "-" else tid, options))
            elif a.command == "stop":
                emit(await s.mcall("stop_trace", tid))
            elif a.command == "delete":
                await s.mcall("delete_trace", tid)
                emit({"id": tid, "deleted": True})
            else:
                emit(await s.mcall("get_trace", tid))

    return run_mgmt(url_from(a), a.realm, a.ser, job)


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
