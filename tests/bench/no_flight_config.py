#!/usr/bin/env python3
"""no_flight_config.py IN OUT [per-message]: writes the router config IN to OUT with its first
worker's flight recorder off (the benchmarks' configuration in which no trace runs); with
per-message, the flight recorder on and recorded per message ("from_wire": false) instead."""

import json
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    cfg = json.load(f)
tracing = cfg["workers"][0].setdefault("wampscope", {}).setdefault("tracing", {})
if len(sys.argv) > 3 and sys.argv[3] == "per-message":
    tracing["flight_recorder"] = {"from_wire": False}
else:
    tracing["flight_recorder"] = False
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump(cfg, f, indent=2)
