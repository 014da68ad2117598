#!/usr/bin/env python3
"""no_flight_config.py IN OUT [WIRE_BYTES]: writes the router config IN to OUT with its first
worker's flight recorder off (the benchmarks' configuration in which no trace runs); with
WIRE_BYTES, the wire capture on with a ring of that many bytes (wampscope.tracing.wire_capture)."""

import json
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    cfg = json.load(f)
tracing = cfg["workers"][0].setdefault("wampscope", {}).setdefault("tracing", {})
tracing["flight_recorder"] = False
if len(sys.argv) > 3:
    tracing["wire_capture"] = int(sys.argv[3])
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump(cfg, f, indent=2)
