#!/usr/bin/python3
"""page_trace.py: how long does a management client take to read N records out of a trace?

Pages through an existing trace with crossbarfabriccenter.get_trace_data (from_seq = the trace's
first_seq, limit --limit per call, each next call from the last seq + 1) until --records records
have arrived, as a management client would, and times it end to end from the client: from the
first CALL sent to the last RESULT decoded (the session is joined beforehand; the join time is
reported apart). Repeats --repeat times per management serializer.

Usage:
  page_trace.py (--url URL | --ports-file FILE) --trace-id ID [--records 100000] [--limit 10000]
                [--ser json,msgpack] [--repeat 3] [--router-pid PID] [--client stock|fast]
                [--mode sequential|parallel]
Prints, per pass:
  PAGE ser=json client=stock mode=sequential pass=1 records=100000 pages=10 seconds=0.812
       records_per_s=123153 first_page_s=0.081 max_page_s=0.090 router_cpu_s=0.41
       client_cpu_s=0.38 payload_mib=41.2 gaps=0
and per serializer a line `PAGE_MEDIAN ser=... client=... seconds=... records_per_s=...`.
--client stock is autobahn as installed. Its JSON decoder is the pure-Python scanner of the
json module and it validates the UTF-8 of every text frame (wsaccel): with 4 MiB pages that, not
the router, dominates the JSON figure. --client fast swaps in the C JSON decoder and skips the
UTF-8 validation, to show what a leaner client gets from the same router. --mode parallel asks
for all pages at once by seq range (first_seq + k * limit ...), so that the router's rendering
and the client's decoding overlap (page times are then from the start of the pass).
router_cpu_s: the router's CPU time over the pass (/proc/PID/stat, 10 ms ticks; with
--router-pid); client_cpu_s: this process's; payload_mib: the pages re-serialized by the client
with the same serializer after the pass (an estimate of the WAMP payload on the wire, not timed).
Also checks that the seqs arrive in order without gaps. Exit status 0 if every pass read
--records records, 1 otherwise, 2 usage. Runs with /usr/bin/python3 (python3-autobahn).
"""

import argparse
import asyncio
import json
import os
import statistics
import sys
import time

import trace_ctl


def proc_cpu_s(pid):
    """utime + stime of pid, in seconds (None without a pid)."""
    if not pid:
        return None
    with open("/proc/%d/stat" % pid, encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def payload_bytes(ser, pages):
    if ser == "msgpack":
        import msgpack
        return sum(len(msgpack.packb(p, use_bin_type=True)) for p in pages)
    return sum(len(json.dumps(p, separators=(",", ":"), ensure_ascii=False).encode())
               for p in pages)


def use_fast_json_decoder():
    """autobahn's JSON decoder runs the pure-Python scanner of the json module (so that it can
    turn "\\u0000"-prefixed strings into bytes); AUTOBAHN_USE_UJSON is broken in autobahn
    22.7.1 (its _dumps passes a keyword ujson rejects). Replace only the decoder with the C one:
    binary values then stay strings, which is fine for trace records."""
    from autobahn.wamp import serializer
    serializer._loads = lambda s, **_: json.loads(s)


def main(argv):
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    g = p.add_mutually_exclusive_group(required=True)
    g.add_argument("--url")
    g.add_argument("--ports-file")
    p.add_argument("--realm", default="mgmt")
    p.add_argument("--trace-id", required=True)
    p.add_argument("--records", type=int, default=100000)
    p.add_argument("--limit", type=int, default=10000)
    p.add_argument("--ser", default="json,msgpack")
    p.add_argument("--repeat", type=int, default=3)
    p.add_argument("--router-pid", type=int, default=0)
    p.add_argument("--client", choices=("stock", "fast"), default="stock",
                   help="stock (default): autobahn as installed; fast: JSON decoded by the C "
                   "decoder of the json module and no UTF-8 validation of text frames")
    p.add_argument("--mode", choices=("sequential", "parallel"), default="sequential",
                   help="sequential (default): each page asked for after the previous one "
                   "arrived; parallel: every page asked for at once by seq range")
    a = p.parse_args(argv)
    if a.client == "fast":
        use_fast_json_decoder()
    if a.records < 1 or not 1 <= a.limit <= 10000 or a.repeat < 1:
        p.error("--records >= 1, --limit 1..10000, --repeat >= 1")
    url = trace_ctl.url_from(a)
    ok = True

    for ser in [s for s in a.ser.split(",") if s]:
        passes = []

        async def job(s, ser=ser, passes=passes):
            meta = await s.mcall("get_trace", a.trace_id)
            if meta["records"] < a.records:
                raise RuntimeError("trace %s holds %d records, fewer than --records %d"
                                   % (a.trace_id, meta["records"], a.records))
            print("TRACE id=%s status=%s records=%d first_seq=%d next_seq=%d dropped=%d "
                  "bytes=%d join_s=%.3f"
                  % (a.trace_id, meta["status"], meta["records"], meta["first_seq"],
                     meta["next_seq"], meta["dropped"], meta["bytes"],
                     time.monotonic() - t_connect), flush=True)
            for rep in range(1, a.repeat + 1):
                pages, times = [], []
                first = meta["first_seq"]
                cpu0, rcpu0 = time.process_time(), proc_cpu_s(a.router_pid)
                t0 = time.monotonic()
                if a.mode == "parallel":
                    # Seqs have no gaps at capture: a client that knows first_seq can ask for
                    # every page at once by seq range, so that the router renders page k+1
                    # while the client decodes page k.
                    async def one(lo, hi):
                        page = await s.mcall("get_trace_data", a.trace_id, lo, hi, hi - lo + 1)
                        times.append(time.monotonic() - t0)
                        return page
                    ranges = [(lo, min(lo + a.limit, first + a.records) - 1)
                              for lo in range(first, first + a.records, a.limit)]
                    pages = [p for p in await asyncio.gather(*(one(lo, hi) for lo, hi in ranges))
                             if p]
                else:
                    got, nxt = 0, first
                    while got < a.records:
                        tp = time.monotonic()
                        page = await s.mcall("get_trace_data", a.trace_id, nxt, None,
                                             min(a.limit, a.records - got))
                        times.append(time.monotonic() - tp)
                        if not page:
                            break
                        got += len(page)
                        nxt = page[-1]["seq"] + 1
                        pages.append(page)
                secs = time.monotonic() - t0
                cpu = time.process_time() - cpu0
                rcpu1 = proc_cpu_s(a.router_pid)
                got, gaps, expect = 0, 0, first
                for page in pages:
                    for r in page:
                        gaps += r["seq"] != expect
                        expect = r["seq"] + 1
                    got += len(page)
                rcpu = "%.2f" % (rcpu1 - rcpu0) if rcpu0 is not None else "na"
                mib = payload_bytes(ser, pages) / 1048576.0
                passes.append((secs, got))
                print("PAGE ser=%s client=%s mode=%s pass=%d records=%d pages=%d seconds=%.3f "
                      "records_per_s=%.0f first_page_s=%.3f max_page_s=%.3f router_cpu_s=%s "
                      "client_cpu_s=%.2f payload_mib=%.1f gaps=%d"
                      % (ser, a.client, a.mode, rep, got, len(times), secs,
                         got / secs if secs > 0 else 0, times[0] if times else 0,
                         max(times) if times else 0, rcpu, cpu, mib, gaps), flush=True)

        t_connect = time.monotonic()
        if trace_ctl.run_mgmt(url, a.realm, ser, job, timeout=600,
                              no_utf8_validation=a.client == "fast") != 0:
            ok = False
            continue
        if any(got < a.records for _, got in passes):
            ok = False
        secs = statistics.median(s for s, _ in passes)
        print("PAGE_MEDIAN ser=%s client=%s mode=%s passes=%d records=%d seconds=%.3f "
              "records_per_s=%.0f" % (ser, a.client, a.mode, len(passes), a.records, secs,
                                      a.records / secs), flush=True)
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main(sys.argv[1:]))
