#!/usr/bin/python3
"""cluster_trace.py: what a cluster-wide capture-everything trace costs a node. A nats-server and
two nodes (node_a, node_b; the e2e cluster configs, flight recorder off), wamp-bench's rpc100
(JSON) against node_a in four configurations, rotated over ROUNDS rounds:

  none         no trace
  star         start_trace "*" with default options (every message of every node captured)
  star+local   the same, and a management subscriber to on_trace_data on node_a itself
  star+remote  the same, the subscriber on node_b (node_a renders its batches and sends them to
               node_b over the cluster link: mgmt/README.md "Live data")

With ACROSS=1 the calls cross the cluster instead: wamp-bench's caller on node_a, its callee on
node_b (--url2), every call and its answer going over NATS, in two configurations, "none" and
"star" (the nodes' records of one call share its correlation); both nodes are pinned to
ROUTER_CORE, and the router CPU is both nodes' (node_a's from wamp-bench over the measured
interval, node_b's from /proc over the whole wamp-bench run, warm-up included: steady load).

Prints each run's RESULT line (tests/bench/README.md "Output") and, per configuration, the
median rate and calls per router CPU-second (rate / router_cpu), each as a ratio to "none". A
measuring tool, never a pass/fail test.

Usage: RT_ROUTER_BIN=build-rel/router/wampscope WAMP_BENCH=build-rel/tests/bench/wamp-bench \\
       [ACROSS=1] tests/bench/cluster_trace.py   (a Release build; nats-server on PATH or /usr/sbin)
Environment: ROUNDS (default 3), SECONDS (per run, default 4), ROUTER_CORE (default 0) and
BENCH_CORE (default 1): the CPUs node_a and wamp-bench are pinned to. Everything listens on
127.0.0.1; only the processes it starts are stopped, by PID."""

import asyncio
import os
import statistics
import subprocess
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, os.path.join(HERE, "..", "e2e"))
os.environ.setdefault("RT_SOURCE_DIR", os.path.abspath(os.path.join(HERE, "..", "..")))

import rt_harness as h  # noqa: E402
import test_cluster_link as tcl  # noqa: E402
import test_cluster_mgmt as tcm  # noqa: E402

P = "crossbarfabriccenter."
ACROSS = os.environ.get("ACROSS", "") not in ("", "0")
CONFIGS = ("none", "star") if ACROSS else ("none", "star", "star+local", "star+remote")


def cpu_seconds(pid):
    """CPU time (user + system) process pid has used so far, in seconds."""
    with open("/proc/%d/stat" % pid, encoding="ascii") as f:
        fields = f.read().rsplit(")", 1)[1].split()
    return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")


def bench(a, b):
    """One wamp-bench run against node a (with ACROSS, the callee on node b): its RESULT
    fields; with ACROSS router_cpu is both nodes' (% of one core)."""
    argv = ["taskset", "-c", os.environ.get("BENCH_CORE", "1"), os.environ["WAMP_BENCH"],
            "--url", a.url, "--scenarios", "rpc", "--ser", "json", "--inflight", "100",
            "--seconds", os.environ.get("SECONDS", "4"), "--warmup", "1",
            "--router-pid", str(a.proc.pid)] + (["--url2", b.url] if ACROSS else [])
    t0, c0 = time.monotonic(), cpu_seconds(b.proc.pid)
    proc = subprocess.run(argv, capture_output=True, text=True, timeout=120)
    out = proc.stdout
    sys.stderr.write(proc.stderr)  # e.g. which ERROR URIs came back, and how often
    b_cpu = 100 * (cpu_seconds(b.proc.pid) - c0) / (time.monotonic() - t0)
    lines = [ln for ln in out.splitlines() if ln.startswith("RESULT")]
    res = dict(kv.split("=", 1) for kv in lines[0].split()[1:]) if lines else {}
    if ACROSS and res.get("router_cpu", "na") != "na":
        res["node_a_cpu"] = res["router_cpu"]
        res["node_b_cpu"] = "%.1f" % b_cpu
        res["router_cpu"] = "%.1f" % (float(res["router_cpu"]) + b_cpu)
    return res


async def main():
    tmp = tempfile.mkdtemp(prefix="wampscope-cluster-trace-")
    nats = tcl.NatsServer(tmp)
    nats.start()
    routers = []
    try:
        for node in ("node_a", "node_b"):
            r = h.RouterProc(config=tcm.write_config(tmp, node, nats.port, "bench"))
            routers.append(r.start())
        for r in routers:
            tcl.wait_log(r, tcl.nodes_line("bench", "node_a", "node_b"))
        a, b = routers
        for r in routers if ACROSS else (a,):
            subprocess.run(["taskset", "-pc", os.environ.get("ROUTER_CORE", "0"),
                            str(r.proc.pid)], capture_output=True, check=False)
        mgmt = {"local": await h.open_session(a, "mgmt", "json"),
                "remote": await h.open_session(b, "mgmt", "json")}
        results = {c: [] for c in CONFIGS}
        rounds = int(os.environ.get("ROUNDS", "3"))
        for rnd in range(rounds):
            for cfg in CONFIGS[rnd % len(CONFIGS):] + CONFIGS[:rnd % len(CONFIGS)]:
                sub = None
                if cfg != "none":
                    await mgmt["remote"].call(P + "start_trace", "*", "router1", "cw", None)
                if "+" in cfg:
                    sub = await mgmt[cfg.split("+")[1]].subscribe(
                            lambda *args: None, P + "remote.tracing.on_trace_data")
                    await asyncio.sleep(1.5)  # the interest reached node_a
                res = await asyncio.get_running_loop().run_in_executor(None, bench, a, b)
                if sub:
                    await sub.unsubscribe()
                if cfg != "none":
                    await mgmt["remote"].call(P + "stop_trace", "*", "router1", "cw")
                    await mgmt["remote"].call(P + "delete_trace", "*", "router1", "cw")
                print(cfg, rnd, " ".join("%s=%s" % kv for kv in res.items()), flush=True)
                results[cfg].append(res)
        live = (await mgmt["remote"].call(P + "get_worker", "node_a", "router1"))["stats"]
        print("node_a live counters:",
              {k: v for k, v in live["cluster"].items() if k.startswith("live")})
        for s in mgmt.values():
            await s.close()

        def med(cfg, f):
            # A run with errors measured something else (wamp-bench named their URIs on
            # stderr).
            vals = [f(r) for r in results[cfg]
                    if r.get("status") == "ok" and r.get("errors", "0") == "0"]
            return statistics.median(vals) if vals else float("nan")

        def rate(r):
            return float(r["rate"])

        def per_cpu(r):
            return float(r["rate"]) / max(float(r["router_cpu"]), 0.1) * 100

        print("%-12s %12s %7s %18s %7s" % ("config", "calls/s", "ratio", "calls/router-cpu-s",
                                           "ratio"))
        for cfg in CONFIGS:
            print("%-12s %12.0f %7.2f %18.0f %7.2f" % (
                cfg, med(cfg, rate), med(cfg, rate) / med("none", rate), med(cfg, per_cpu),
                med(cfg, per_cpu) / med("none", per_cpu)))
    finally:
        for r in routers:
            r.stop()
        nats.stop()


if __name__ == "__main__":
    asyncio.run(main())
