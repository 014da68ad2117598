// wampscope-ctl's Chrome Trace Event export read by a real consumer: the Chrome DevTools trace
// engine (npm @paulirish/trace_engine, the Performance panel's model, run offline in node). It
// must find one flow arrow per correlated pair (the anchor and each later record of its
// correlation) and each flow must join the two records' events.

import assert from 'node:assert/strict';
import { execFile } from 'node:child_process';
import fs from 'node:fs';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';
import { promisify } from 'node:util';

import { analyzeEvents } from '@paulirish/trace_engine/analyze-trace.mjs';

import { autobahn, fixture } from '../interop/node/harness.mjs';
import { artifactsDir } from './browser.mjs';

const run = promisify(execFile);
const MGMT = 'crossbarfabriccenter.';

// One router for the file; the sessions opened with open() are closed before it stops.
const fx = fixture();
const open = fx.open;
before(fx.setUp);
after(fx.tearDown);

function ctl(...args) {
  assert.ok(process.env.RT_CTL_BIN, 'RT_CTL_BIN must be set (ctest sets it)');
  return run(process.env.RT_CTL_BIN, ['--url', fx.router.url, ...args], { timeout: 30000 });
}

test('the DevTools trace engine draws every flow of the Chrome export', async () => {
  await ctl('start', 'flows', '--realm', 'realm1');
  // Calls (one failing), a publish to three subscribers in both serializers (one EVENT per
  // subscriber, all of one clock reading with the PUBLISH), and concurrent calls of one caller.
  const callee = await open({ realm: 'realm1' });
  await callee.register('com.flows.add', (args) => args[0] + args[1]);
  await callee.register('com.flows.slow', () => new Promise((resolve) => setTimeout(() => resolve(1), 30)));
  await callee.register('com.flows.fail', () => { throw new autobahn.Error('com.flows.error.no'); });
  const caller = await open({ realm: 'realm1', serializer: 'msgpack' });
  for (let i = 0; i < 3; i++) await caller.call('com.flows.add', [i, i]);
  await Promise.all([caller.call('com.flows.slow'), caller.call('com.flows.add', [1, 1])]);
  await assert.rejects(caller.call('com.flows.fail'));
  let events = 0;
  for (const ser of ['json', 'msgpack', 'json']) {
    await (await open({ realm: 'realm1', serializer: ser })).subscribe('com.flows.topic', () => { events++; });
  }
  await caller.publish('com.flows.topic', [1], {}, { acknowledge: true });
  for (let i = 0; i < 50 && events < 3; i++) await new Promise((r) => setTimeout(r, 20));
  assert.equal(events, 3);
  await ctl('stop', 'flows');

  const mgmt = await open({ realm: 'mgmt' });
  const node = (await mgmt.call(MGMT + 'list_nodes'))[0];
  const worker = (await mgmt.call(MGMT + 'list_workers', [node]))[0];
  const records = await mgmt.call(MGMT + 'get_trace_data', [node, worker, 'flows', 0, null, 10000]);
  const byCorr = new Map();
  for (const r of records) {
    if (r.correlation) byCorr.set(r.correlation, [...(byCorr.get(r.correlation) || []), r]);
  }
  const pairs = [...byCorr.values()].reduce((n, rs) => n + rs.length - 1, 0);
  assert.ok(pairs >= 30, `only ${pairs} correlated pairs`);
  // Records of one clock reading are there (what used to make arrows vanish).
  assert.ok(records.some((r, i) => i > 0 && r.ts === records[i - 1].ts && r.correlation &&
    r.correlation === records[i - 1].correlation));

  const file = path.join(fs.mkdtempSync(path.join(os.tmpdir(), 'wampscope-export-')), 'flows.json');
  try {
    await ctl('export', 'flows', '--format', 'chrome', '-o', file);
    const doc = JSON.parse(fs.readFileSync(file, 'utf8'));
    fs.copyFileSync(file, path.join(artifactsDir(), 'flows.chrome.json'));
    const { parsedTrace } = await analyzeEvents(doc.traceEvents);
    const flows = parsedTrace.data.Flows.flows;
    assert.equal(flows.length, pairs);
    // Each flow joins the anchor's slice to one follower's slice: two distinct events, the
    // second at the follower record's time on the follower's session.
    const bySeq = new Map(records.map((r) => [r.seq, r]));
    const followers = new Set();
    for (const flow of flows) {
      assert.equal(flow.length, 2);
      const [from, to] = flow;
      assert.equal(from.ph, 'X');
      assert.ok(from.args.correlation, 'a flow starts at an action slice');
      const rec = bySeq.get(to.args.seq);
      assert.ok(rec, 'a flow ends at a message slice');
      assert.equal(rec.correlation, from.args.correlation);
      assert.ok(Math.abs(to.ts - rec.ts * 1e6) < 5, 'at the record time');
      followers.add(rec.seq);
    }
    assert.equal(followers.size, pairs);
  } finally {
    fs.rmSync(path.dirname(file), { recursive: true, force: true });
  }
});
