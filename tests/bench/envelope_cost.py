#!/usr/bin/python3
"""envelope_cost.py: what a message whose Details holds a huge number of values costs the router.

Starts wampscope (the given binary; a Release build for meaningful figures) on the embedded
default configuration (configs/default.json), then sends --count HELLOs over raw WebSocket
connections, each `[1, "realm1", {"x": [[], [], ...]}]` of --mib MiB (about 350,000 empty lists a
MiB), and prints for each the time to the router's answer (an ABORT naming the bound:
Details/Options hold at most 131,072 values, wamp/wamp_msg.h WAMP_MSG_VALUES_MAX) and the
router's peak resident memory (VmHWM). Built as values, the lists would cost some 45 times their
size. A measuring tool, not a test: the time includes masking the frame in Python. The router it
starts listens on 127.0.0.1 and is stopped by PID.

Usage: RT_SOURCE_DIR=<repo> envelope_cost.py --router BIN [--mib 16] [--count 3]
"""

import argparse
import os
import sys
import time

sys.path.insert(0, os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", "e2e"))
import rt_harness as h  # noqa: E402


def peak_mib(pid):
    with open("/proc/%d/status" % pid) as f:
        for line in f:
            if line.startswith("VmHWM"):
                return int(line.split()[1]) // 1024
    return -1


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--router", required=True)
    ap.add_argument("--mib", type=int, default=16)
    ap.add_argument("--count", type=int, default=3)
    a = ap.parse_args()
    os.environ["RT_ROUTER_BIN"] = a.router
    os.environ.setdefault("RT_SOURCE_DIR",
                          os.path.join(os.path.dirname(os.path.abspath(__file__)), "..", ".."))
    router = h.RouterProc(config="configs/default.json").start()
    try:
        body = b'[1,"realm1",{"x":[[]' + b",[]" * ((a.mib * 1024 * 1024 - 64) // 3) + b"]}]"
        print("message %d bytes; router peak %d MiB before" % (len(body), peak_mib(router.proc.pid)))
        for _ in range(a.count):
            ws = h.RawWs(router.host, router.port, router.path)
            t0 = time.monotonic()
            ws.send_text(body)
            answer = ws.recv_message()
            dt = time.monotonic() - t0
            ws.close()
            print("RESULT answer_s=%.2f peak_mib=%d answer=%s"
                  % (dt, peak_mib(router.proc.pid), str(answer)[:120]))
    finally:
        router.stop()
        router.cleanup()


if __name__ == "__main__":
    main()
