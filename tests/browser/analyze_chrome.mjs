// Loads a Chrome Trace Event file (wampscope-ctl export --format chrome) into the Chrome DevTools
// trace engine (npm @paulirish/trace_engine, the Performance panel's model, run offline in node)
// and prints what the engine made of it as one JSON object on stdout:
//   {"processes": {pid: name}, "flows": [[from, to], ...]}
// where from and to are {"pid", "ph", "ts", "args"} of the two events a flow arrow joins.
// Exit status 1 (and the engine's error on stderr) when the engine rejects the file.
// Usage: node analyze_chrome.mjs FILE (for tests that build the file with a cluster of routers,
// tests/e2e/test_cluster_mgmt_nodes.py).

import fs from 'node:fs';

import { analyzeEvents } from '@paulirish/trace_engine/analyze-trace.mjs';

const doc = JSON.parse(fs.readFileSync(process.argv[2], 'utf8'));
const { parsedTrace } = await analyzeEvents(doc.traceEvents);
const processes = Object.fromEntries(parsedTrace.data.Meta.processNames.entries());
const ev = (e) => ({ pid: e.pid, ph: e.ph, ts: e.ts, args: e.args });
const flows = parsedTrace.data.Flows.flows.map((f) => f.map(ev));
process.stdout.write(JSON.stringify({
  processes: Object.fromEntries(Object.entries(processes).map(([k, v]) => [k, v.args.name])),
  flows,
}));
