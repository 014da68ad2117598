#!/usr/bin/python3
"""wire_read_cost.py: what a read of the wire capture (get_wire_data) costs the router.

Starts wampscope (the given binary; a Release build for meaningful figures) pinned to core 0 with
the embedded default config, the flight recorder off and a wire capture of --bytes, fills the
ring with wamp-bench (JSON rpc100 on core 1, --seconds), then times get_wire_data from a
python3-autobahn session on the management realm: a page of 1000 from the oldest held seq, and
--reads pages of one record from the newest (each walks the whole ring: its decode and the
actions of everything before the page). The service loop serves nothing else meanwhile, so this
is also how long routing waits. Prints one RESULT line. A measuring tool, not a test; the router
it starts listens on 127.0.0.1 and is stopped by PID.

With --flight, the flight recorder read from the capture (the default configuration, the
capture of --bytes) instead: the first get_trace of "flight-recorder" after the fill (it decodes
every held message once), one right after (nothing new: nothing decoded), then one after another
second of traffic (what came since only), each timed.

Usage: wire_read_cost.py --router BIN --bench WAMP_BENCH [--bytes 8388608] [--seconds 4]
                         [--reads 30] [--flight]
"""

import argparse
import asyncio
import json
import os
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.normpath(os.path.join(HERE, "..", ".."))
sys.path.insert(0, os.path.join(REPO, "tests", "e2e"))

import rt_harness  # noqa: E402

P = "crossbarfabriccenter."


class Url:
    """What rt_harness.open_session() needs of a router."""

    def __init__(self, url):
        self.url = url
        host_port = url.split("//")[1].split("/")[0]
        self.host, port = host_port.rsplit(":", 1)
        self.port = int(port)


async def measure(url, reads):
    s = await rt_harness.open_session(Url(url), "mgmt", "msgpack")
    node = (await s.call(P + "list_nodes"))[0]
    worker = (await s.call(P + "list_workers", node))[0]
    head = await s.call(P + "get_wire_data", node, worker, 0, 1)
    t = time.monotonic()
    first = await s.call(P + "get_wire_data", node, worker, head["first_seq"], 1000)
    oldest_ms = (time.monotonic() - t) * 1000
    t = time.monotonic()
    for _ in range(reads):
        await s.call(P + "get_wire_data", node, worker, head["next_seq"] - 1, 1)
    newest_ms = (time.monotonic() - t) * 1000 / reads
    s.leave()
    return head, len(first["records"]), oldest_ms, newest_ms


async def measure_flight(url, bench):
    s = await rt_harness.open_session(Url(url), "mgmt", "msgpack")
    node = (await s.call(P + "list_nodes"))[0]
    worker = (await s.call(P + "list_workers", node))[0]
    out = []
    for more in (False, False, True):
        if more:
            await asyncio.get_running_loop().run_in_executor(None, bench, 1)
        head = await s.call(P + "get_wire_data", node, worker, 0, 1)
        t = time.monotonic()
        meta = await s.call(P + "get_trace", node, worker, "flight-recorder")
        out.append(((time.monotonic() - t) * 1000, head["next_seq"], meta["records"]))
    s.leave()
    return out


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--router", required=True)
    ap.add_argument("--bench", required=True, help="wamp-bench of the same build")
    ap.add_argument("--bytes", type=int, default=8 << 20)
    ap.add_argument("--seconds", type=float, default=4)
    ap.add_argument("--reads", type=int, default=30)
    ap.add_argument("--flight", action="store_true")
    a = ap.parse_args()
    tmp = tempfile.mkdtemp(prefix="wampscope-wire-read-")
    with open(os.path.join(REPO, "configs", "default.json"), encoding="utf-8") as f:
        cfg = json.load(f)
    tracing = cfg["workers"][0].setdefault("wampscope", {}).setdefault("tracing", {})
    tracing["flight_recorder"] = {"from_wire": True} if a.flight else False
    tracing["wire_capture"] = a.bytes
    config = os.path.join(tmp, "config.json")
    with open(config, "w", encoding="utf-8") as f:
        json.dump(cfg, f)
    ports = os.path.join(tmp, "ports")
    router = subprocess.Popen(["taskset", "-c", "0", a.router, "-c", config, "--port", "0",
                               "--ports-file", ports, "--log-level", "warn"], cwd=tmp,
                              stdout=subprocess.DEVNULL, stderr=subprocess.DEVNULL)
    try:
        deadline = time.monotonic() + 10
        while not (os.path.exists(ports) and os.path.getsize(ports)):
            if time.monotonic() > deadline or router.poll() is not None:
                sys.exit("wire_read_cost.py: the router did not start")
            time.sleep(0.05)
        with open(ports, encoding="utf-8") as f:
            url = f.readline().strip()
        def bench(seconds):
            subprocess.run(["taskset", "-c", "1", a.bench, "--url", url, "--realm", "realm1",
                            "--scenarios", "rpc", "--ser", "json", "--seconds", str(seconds),
                            "--inflight", "100"], check=True, stdout=subprocess.DEVNULL)
        bench(a.seconds)
        if a.flight:
            (full_ms, n0, rec0), (idle_ms, n1, _), (more_ms, n2, rec2) = asyncio.run(
                measure_flight(url, bench))
            print("RESULT bytes=%d flight_first_read_ms=%.1f messages=%d records=%d "
                  "idle_read_ms=%.1f next_read_ms=%.1f new_messages=%d ns_per_new_message=%.0f "
                  "records_after=%d" % (a.bytes, full_ms, n0, rec0, idle_ms, more_ms, n2 - n1,
                                        more_ms * 1e6 / max(1, n2 - n1), rec2))
            return
        head, got, oldest_ms, newest_ms = asyncio.run(measure(url, a.reads))
        held = head["next_seq"] - head["first_seq"]
        print("RESULT bytes=%d held_messages=%d first_page=%d first_page_ms=%.1f "
              "newest_page_ms=%.1f ms_per_mib=%.1f"
              % (a.bytes, held, got, oldest_ms, newest_ms, newest_ms / (a.bytes / (1 << 20))))
    finally:
        router.terminate()
        try:
            router.wait(10)
        except subprocess.TimeoutExpired:
            router.kill()
            router.wait()


if __name__ == "__main__":
    main()
