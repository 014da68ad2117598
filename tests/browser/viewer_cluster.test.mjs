// The trace viewer on a cluster: a real nats-server and two real nodes (node_a, node_b), the page
// served by node_a. It lists each node's traces under the node, starts a trace on node_b alone
// and one on every node ("*") from the form, shows the cluster-wide trace's merged records with
// their node (table column, lane headers), marks, stops and deletes it on every node with one
// click each, and shows a node that does not answer (SIGSTOP) as that node's error while the
// other node's traces stay listed; and a cluster-wide trace that one node's traffic keeps
// evicting shows, in the page and in its download, where that node's records were dropped
// (mgmt/README.md "Cluster", "Trace viewer"); and the download of a cluster-wide trace on two
// nodes whose wall clocks are 5 s apart (libfaketime) has every record of both at once, none
// called dropped, and names a node that does not answer as not read; that trace's header says
// the clocks are apart. Any console error, page
// error or failed request fails the test.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { openSession, startRouter } from '../interop/node/harness.mjs';
import {
  artifactsDir, clickUntil, downloadJsonl, downloadsTo, launchBrowser, until, viewerUrl, watchPage,
  whilePublishing,
} from './browser.mjs';

const MGMT = 'crossbarfabriccenter.';
const NATS_BIN = fs.existsSync('/usr/sbin/nats-server') ? '/usr/sbin/nats-server' : 'nats-server';

let tmp, nats, chrome;
const routers = [];
const clients = [];

function freePort() {
  return new Promise((resolve, reject) => {
    const srv = net.createServer();
    srv.on('error', reject);
    srv.listen(0, '127.0.0.1', () => {
      const { port } = srv.address();
      srv.close(() => resolve(port));
    });
  });
}

// nats-server with JetStream on 127.0.0.1, its store in tmp; resolves once it greets (INFO).
async function startNats() {
  const port = await freePort();
  const proc = spawn(NATS_BIN, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', path.join(tmp, 'js')],
    { stdio: 'ignore' });
  const greets = () => new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.once('data', (d) => { s.destroy(); resolve(d.toString().startsWith('INFO')); });
    s.once('error', () => resolve(false));
  });
  await until(greets, 'nats-server', 10000);
  return { proc, port };
}

// A node's config: realm1 open to anonymous, a web transport with WAMP at /ws and the viewer at
// /trace/, the management API on realm "mgmt", no flight recorder, and the cluster on nats. A
// long node_ttl keeps a stopped node in list_nodes while the test looks at its error.
function nodeConfig(nodeId, natsPort, cluster = 'vcluster') {
  const cfg = {
    version: 2,
    controller: { id: nodeId },
    workers: [{
      type: 'router',
      realms: [{ name: 'realm1', roles: [{ name: 'anonymous', permissions: [{ uri: '', match: 'prefix',
        allow: { call: true, register: true, publish: true, subscribe: true } }] }] }],
      transports: [{ type: 'web', endpoint: { type: 'tcp', port: 0, interface: '127.0.0.1' },
        paths: { ws: { type: 'websocket', serializers: ['json'] }, trace: { type: 'wampscope-trace-viewer' } } }],
      wampscope: {
        management: { enabled: true, realm: 'mgmt' },
        tracing: { flight_recorder: false },
        cluster: { name: cluster, heartbeat_interval: 500, node_ttl: 20000, connect_timeout: 500,
          reconnect_wait: 200, request_timeout: 1000, nats: { servers: [`nats://127.0.0.1:${natsPort}`] } },
      },
    }],
  };
  const file = path.join(tmp, `${nodeId}.json`);
  fs.writeFileSync(file, JSON.stringify(cfg));
  return path.relative(process.env.RT_SOURCE_DIR, file);
}

before(async () => {
  tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wampscope-vcluster-'));
  nats = await startNats();
  for (const id of ['node_a', 'node_b']) routers.push(await startRouter(nodeConfig(id, nats.port)));
  chrome = await launchBrowser();
});

after(async () => {
  for (const c of clients.reverse()) {
    try {
      await c.close();
    } catch {
      c.abort();
    }
  }
  if (chrome) await chrome.stop();
  try {
    for (const r of routers) await r.stop();
  } finally {
    if (nats) nats.proc.kill('SIGTERM');
    fs.rmSync(tmp, { recursive: true, force: true });
  }
});

async function open(router, realm) {
  const c = await openSession(router, { realm });
  clients.push(c);
  return c.session;
}

const texts = (page, sel) => page.$$eval(sel, (es) => es.map((e) => e.textContent.trim()));

// A new page (its problems collected) and a management session on node_a (or on the router
// given) once both nodes are listed, with the worker's id.
async function setUp(router = routers[0]) {
  const problems = [];
  const page = await chrome.browser.newPage();
  watchPage(page, problems);
  const mgmt = await open(router, 'mgmt');
  await until(async () => (await mgmt.call(MGMT + 'list_nodes')).length === 2, 'both nodes in list_nodes');
  const worker = (await mgmt.call(MGMT + 'list_workers', [(await mgmt.call(MGMT + 'list_nodes'))[1]]))[0];
  return { problems, page, mgmt, worker };
}

test('the viewer shows every node of a cluster', async () => {
  const [a, b] = routers;
  const { problems, page, mgmt, worker } = await setUp();
  const traceOn = (node) => mgmt.call(MGMT + 'list_traces', [node, worker, true]);

  // Logged in on node_a: both nodes, each as a group of the trace list; the form offers them.
  await page.goto(`${viewerUrl(a)}?connect=1`);
  await page.waitForSelector('#app-view:not([hidden])');
  assert.match(await page.$eval('#conn', (e) => e.textContent), /2 nodes/);
  await until(async () => (await texts(page, '#trace-list li.node-head')).join('|') === 'node node_a|node node_b',
    'the node groups');
  await page.click('#new-trace-toggle');
  assert.deepEqual(await page.$$eval('#start-node option', (os) => os.map((o) => o.value)), ['*', 'node_a', 'node_b']);

  // A trace on node_b alone: listed under node_b only.
  await page.select('#start-node', 'node_b');
  await page.type('input[name=trace_id]', 'only_b');
  await page.click('#start-go');
  await until(async () => (await page.$eval('#tv-id', (e) => e.textContent)) === 'only_b', 'the only_b view');
  assert.equal(await page.$eval('#tv-node', (e) => e.textContent), 'node node_b');
  assert.deepEqual(await traceOn('node_b'), ['only_b']);
  assert.deepEqual(await traceOn('node_a'), []);
  await page.waitForSelector('#trace-list li[data-node="node_b"][data-id="only_b"]');

  // A trace on every node, from the form: listed under "*" and under each node.
  await page.click('#new-trace-toggle');
  await page.select('#start-node', '*');
  await page.$eval('input[name=trace_id]', (e) => { e.value = ''; });
  await page.type('input[name=trace_id]', 'cw');
  await page.type('input[name=realms]', 'realm1');
  await page.click('#start-go');
  await until(async () => (await page.$eval('#tv-node', (e) => e.textContent)) === 'every node (*)', 'the * view');
  assert.equal(await page.$eval('#tv-id', (e) => e.textContent), 'cw');
  for (const node of ['*', 'node_a', 'node_b']) {
    await page.waitForSelector(`#trace-list li[data-node="${node}"][data-id="cw"]`);
  }

  // Traffic on both nodes: the merged records in the table, each with its node.
  for (const [router, topic] of [[a, 'com.vc.a'], [b, 'com.vc.b']]) {
    const s = await open(router, 'realm1');
    await s.publish(topic, [1], {}, { acknowledge: true });
  }
  await page.click('.tab[data-tab=table]');
  assert.deepEqual((await texts(page, '#table-head span')).slice(0, 3), ['seq', 'node', 'time (UTC)']);
  const rowsOf = () => page.$$eval('#table-rows .trow', (rs) => rs.map((r) => [...r.children].map((c) => c.textContent)));
  await until(async () => {
    const rows = await rowsOf();
    return rows.some((r) => r[1] === 'node_a' && r[9] === 'com.vc.a') &&
      rows.some((r) => r[1] === 'node_b' && r[9] === 'com.vc.b');
  }, 'records of both nodes in the table');
  // One machine, one clock: the header says nothing of clocks apart.
  assert.doesNotMatch(await page.$eval('#tv-stats', (e) => e.textContent), /clocks apart/);
  // Clicking a record names its node.
  const rowB = await page.$$eval('#table-rows .trow', (rs) => rs.find((r) => r.children[9].textContent === 'com.vc.b').dataset.i);
  await clickUntil(page, `#table-rows .trow[data-i="${rowB}"]`,
    async () => /nodenode_b/.test(await page.$eval('#detail-fields', (e) => e.textContent)),
    'the record of node_b with its node');
  await page.click('#detail-close');
  // The sequence diagram: one lane per node and session, the node in the lane header.
  await page.click('.tab[data-tab=seq]');
  const lanes = await page.evaluate(() => [...window.wampscopeViewer.view.lanes.values()].map((l) => l.node).sort());
  assert.deepEqual(lanes, ['node_a', 'node_b']);
  await page.screenshot({ path: path.join(artifactsDir(), 'viewer-cluster-1-merged.png') });

  // Mark, stop and delete act on every node.
  await page.type('#tv-mark-name', 'both');
  await page.click('#tv-mark');
  for (const node of ['node_a', 'node_b']) {
    await until(async () => (await mgmt.call(MGMT + 'get_trace_data', [node, worker, 'cw', 0, null, 1000]))
      .some((r) => r.msg_type === 'Marker' && r.uri === 'both'), `the marker on ${node}`);
  }
  await page.click('#tv-stop');
  for (const node of ['node_a', 'node_b']) {
    await until(async () => (await mgmt.call(MGMT + 'get_trace', [node, worker, 'cw'])).status === 'stopped',
      `cw stopped on ${node}`);
  }
  await until(async () => (await page.$eval('#tv-status', (e) => e.textContent)) === 'stopped', 'the stopped badge');
  await page.click('#tv-delete');
  await page.click('#tv-delete');
  await until(async () => !(await traceOn('node_a')).includes('cw') && !(await traceOn('node_b')).includes('cw'),
    'cw deleted on every node');
  await page.waitForSelector('#empty:not([hidden])');

  // node_b stops answering: its group shows the error, node_a's traces are still listed.
  await mgmt.call(MGMT + 'start_trace', ['node_a', worker, 'only_a', null]);
  await page.waitForSelector('#trace-list li[data-node="node_a"][data-id="only_a"]');
  b.proc.kill('SIGSTOP');
  try {
    await page.waitForSelector('#trace-list li.node-error[data-group="node_b"]', { timeout: 10000 });
    assert.match(await page.$eval('#trace-list li.node-error', (e) => e.textContent), /wamp\.error\.timeout|node_b/);
    assert.ok(await page.$('#trace-list li[data-node="node_a"][data-id="only_a"]'));
    await page.screenshot({ path: path.join(artifactsDir(), 'viewer-cluster-2-node-error.png') });
  } finally {
    b.proc.kill('SIGCONT');
  }
  await page.waitForSelector('#trace-list li[data-node="node_b"][data-id="only_b"]', { timeout: 10000 });
  await page.close();
  assert.deepEqual(problems, []);
});

// The items of a merged reading by node, each node's checked: its records and gap items cover
// every seq from its first item on, with no silent jump. node_id -> {start, next (the seq after
// its last item), gaps, recs}.
function nodeSpans(items) {
  const byNode = new Map();
  for (const x of items) {
    const first = x.kind === 'gap' ? x.from_seq : x.seq;
    const o = byNode.get(x.node_id) || { start: first, next: first, gaps: 0, recs: 0 };
    assert.equal(first, o.next, `no silent jump on ${x.node_id} at ${x.seq}`);
    if (x.kind === 'gap') o.gaps++;
    else o.recs++;
    o.next = x.seq + 1;
    byNode.set(x.node_id, o);
  }
  return byNode;
}

test('what a cluster-wide trace drops while the page reads it shows where, on its node', async () => {
  // A trace of 20 records on every node, node_b's kept evicting by bursts of publications: the
  // merged pages read node_b's records past what they read of it before. The page puts a gap
  // item naming node_b there (table row with its node, stats), never a silent jump.
  const [a, b] = routers;
  const { problems, page, mgmt, worker } = await setUp();
  await mgmt.call(MGMT + 'start_trace', ['*', worker, 'cwring', { limit: 20, realms: ['realm1'] }]);
  await page.goto(`${viewerUrl(a)}?connect=1`);
  await page.waitForSelector('#app-view:not([hidden])');
  await clickUntil(page, '#trace-list li[data-node="*"][data-id="cwring"]',
    async () => (await page.$eval('#tv-node', (e) => e.textContent)) === 'every node (*)', 'the * view');
  const pubA = await open(a, 'realm1');
  await pubA.publish('com.vc.ring.a', [0], {}, { acknowledge: true });
  const pubB = await open(b, 'realm1');
  let n = 0, last = '';
  await until(async () => {
    for (let k = 0; k < 300; k++) pubB.publish('com.vc.ring.b', [n++]);
    last = await page.$eval('#tv-stats', (e) => e.textContent);
    return /· \d+ gaps? ·/.test(last);
  }, 'a gap in the page', 20000).catch((e) => {
    throw new Error(`${e.message}: the page says "${last}" after ${n} publications`);
  });
  await page.click('.tab[data-tab=table]');
  await page.type('#search', 'dropped');
  const rows = await until(async () => {
    const t = await page.$$eval('#table-rows .trow', (rs) => rs.map((r) => [...r.children].map((c) => c.textContent)));
    return t.length > 0 && t.every((r) => r.join(' ').includes('Gap')) && t;
  }, 'only the gap rows');
  for (const r of rows) {
    assert.equal(r[1], 'node_b');
    assert.match(r.join(' '), /⋯ \d+ records? missing \(\d+–\d+\): dropped before they were read/);
  }
  // Each node's items in the page: records and gap items cover its seqs from its first on.
  const items = await page.evaluate(() => window.wampscopeViewer.view.records.map((r) =>
    ({ node_id: r.node_id, kind: r.kind, seq: r.seq, from_seq: r.from_seq })));
  assert.deepEqual([...nodeSpans(items).keys()].sort(), ['node_a', 'node_b']);
  await page.screenshot({ path: path.join(artifactsDir(), 'viewer-cluster-3-gap.png') });

  // The download, while node_b's trace keeps evicting: of each node the seqs its trace held when
  // it began, and no further (it ends, the traffic going on), each a record or inside a gap item
  // naming the node; downloaded until one met a drop on node_b and still read records of it.
  const file = path.join(await downloadsTo(chrome, 'downloads-cluster'), 'cwring.jsonl');
  const metaA = await mgmt.call(MGMT + 'get_trace', ['node_a', worker, 'cwring']); // (idle)
  const spans = await whilePublishing(() => pubB.publish('com.vc.ring.b', [n++]), async (tune) => {
    const got = await downloadJsonl(page, '#tv-download', file);
    for (const x of got.filter((g) => g.kind === 'gap')) {
      assert.deepEqual([x.msg_type, x.reason, x.seq], ['Gap', 'dropped', x.to_seq]);
    }
    const byNode = nodeSpans(got);
    const b = byNode.get('node_b');
    if (!b || b.gaps === 0) tune(1);
    else if (b.recs === 0) tune(-1);
    return b && b.gaps > 0 && b.recs > 0 && byNode;
  }, 'a download that met a drop on node_b and read records of it');
  assert.deepEqual([...spans.keys()].sort(), ['node_a', 'node_b']);
  assert.equal(spans.get('node_a').next - spans.get('node_a').start, metaA.next_seq - metaA.first_seq);
  assert.equal(spans.get('node_a').gaps, 0);
  assert.equal(spans.get('node_b').next - spans.get('node_b').start, 20);
  await mgmt.call(MGMT + 'stop_trace', ['*', worker, 'cwring']);
  await mgmt.call(MGMT + 'delete_trace', ['*', worker, 'cwring']);
  await page.close();
  assert.deepEqual(problems, []);
});

// Environment for a router whose wall clock is offset (libfaketime's FAKETIME, e.g. '-5s') from
// the machine's, its monotonic clock left alone.
function fakedClock(offset) {
  const dir = fs.readdirSync('/usr/lib').map((d) => path.join('/usr/lib', d, 'faketime/libfaketimeMT.so.1'));
  const lib = dir.find((f) => fs.existsSync(f));
  assert.ok(lib, 'libfaketime (make deps)');
  const asan = process.env.ASAN_OPTIONS;
  return { LD_PRELOAD: lib, FAKETIME: offset, DONT_FAKE_MONOTONIC: '1',
    ASAN_OPTIONS: (asan ? `${asan}:` : '') + 'verify_asan_link_order=0' };
}

test('a cluster-wide trace downloads whole at once when the nodes\' clocks differ', async () => {
  // Two more nodes in a cluster of their own, node_c's wall clock 5 s behind node_d's: node_d's
  // records are 5 s ahead of node_c's clock, so the live merged pages hold them back until it
  // passes them; the download reads of each node what its trace held, every record at once, none
  // called dropped, node_c's (earlier by its clock) first.
  const c = await startRouter(nodeConfig('node_c', nats.port, 'vskew'), fakedClock('-5s'));
  routers.push(c);
  const d = await startRouter(nodeConfig('node_d', nats.port, 'vskew'));
  routers.push(d);
  const { problems, page, mgmt, worker } = await setUp(c);
  await mgmt.call(MGMT + 'start_trace', ['*', worker, 'skew', { realms: ['realm1'] }]);
  for (const [router, topic] of [[c, 'com.vc.skew.c'], [d, 'com.vc.skew.d']]) {
    const s = await open(router, 'realm1');
    for (let i = 0; i < 5; i++) await s.publish(topic, [i], {}, { acknowledge: true });
  }
  const held = await mgmt.call(MGMT + 'get_trace', ['*', worker, 'skew']);
  const counts = Object.fromEntries(Object.entries(held).map(([n, m]) => [n, m.next_seq - m.first_seq]));
  // What the live pages show: node_d's records wait for node_c's clock.
  const live = await mgmt.call(MGMT + 'get_trace_data', ['*', worker, 'skew', 0, null, 1000]);
  assert.deepEqual([...new Set(live.records.map((r) => r.node_id))], ['node_c']);
  await page.goto(`${viewerUrl(c)}?connect=1`);
  await page.waitForSelector('#app-view:not([hidden])');
  await clickUntil(page, '#trace-list li[data-node="*"][data-id="skew"]',
    async () => (await page.$eval('#tv-node', (e) => e.textContent)) === 'every node (*)', 'the * view');
  // Its header says that the clocks are apart (node_c's heartbeats' estimate, get_worker).
  await until(async () => (await page.$eval('#tv-stats', (e) => e.textContent))
    .endsWith(' · clocks apart: node_d 5.0 s ahead of node_c'), 'the clocks in the header');
  const file = path.join(await downloadsTo(chrome, 'downloads-skew'), 'skew.jsonl');
  const got = await downloadJsonl(page, '#tv-download', file);
  assert.deepEqual(got.filter((x) => x.kind === 'gap'), []);
  const spans = nodeSpans(got);
  assert.deepEqual(Object.fromEntries([...spans].map(([n, o]) => [n, o.next - o.start])), counts);
  assert.deepEqual(got.map((x) => x.node_id),
    [...Array(counts.node_c).fill('node_c'), ...Array(counts.node_d).fill('node_d')]);
  await until(async () => (await page.$eval('#toast', (e) => e.textContent)) === `skew.jsonl: ${got.length} records`,
    'the toast: every record, none dropped');
  // node_d stops answering: the download has node_c's records, and its toast names node_d.
  d.proc.kill('SIGSTOP');
  try {
    const without = await downloadJsonl(page, '#tv-download', file);
    assert.deepEqual(without, got.filter((x) => x.node_id === 'node_c'));
    await until(async () => (await page.$eval('#toast', (e) => e.textContent)) ===
      `skew.jsonl: ${counts.node_c} records; not read: node_d`, 'the toast naming node_d');
  } finally {
    d.proc.kill('SIGCONT');
  }
  await mgmt.call(MGMT + 'stop_trace', ['*', worker, 'skew']);
  await mgmt.call(MGMT + 'delete_trace', ['*', worker, 'skew']);
  await page.close();
  assert.deepEqual(problems, []);
});
