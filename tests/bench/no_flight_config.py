#!/usr/bin/env python3
"""no_flight_config.py IN OUT: writes the router config IN to OUT with its first worker's flight
recorder off (the benchmarks' configuration in which no trace runs)."""

import json
import sys

with open(sys.argv[1], encoding="utf-8") as f:
    cfg = json.load(f)
cfg["workers"][0].setdefault("wampscope", {}).setdefault("tracing", {})["flight_recorder"] = False
with open(sys.argv[2], "w", encoding="utf-8") as f:
    json.dump(cfg, f, indent=2)
