// The trace viewer in headless chromium, served by the router itself (a web transport with the
// viewer at /trace/ next to WAMP at /ws; the page connects to /ws on its own host): log in to the
// management realm, start a filtered trace from the form, drive autobahn-js clients, and check
// what the page shows (arrows on the sequence canvas, table rows, search, a record's message,
// the action view, a marker), then stop, download the JSON Lines export and delete the trace.
// Any console error, page error or failed request fails the test. Screenshots go to
// $RT_BROWSER_ARTIFACTS.

import assert from 'node:assert/strict';
import fs from 'node:fs';
import path from 'node:path';
import { after, before, test } from 'node:test';

import { autobahn, openSession, startRouter } from '../interop/node/harness.mjs';
import {
  artifactsDir, clickUntil, downloadJsonl, downloadsTo, launchBrowser, until, viewerConfig,
  viewerUrl, watchPage, whilePublishing,
} from './browser.mjs';

const MGMT = 'crossbarfabriccenter.';

let router, config, chrome;
const clients = [];

before(async () => {
  config = viewerConfig('test-e2e.json');
  router = await startRouter(config.config);
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
    if (router) await router.stop();
  } finally {
    config.cleanup();
  }
});

async function open(opts) {
  const c = await openSession(router, opts);
  clients.push(c);
  return c.session;
}

// Opens the page and logs in as its form stands (anonymous, from loopback).
async function logIn(page) {
  await page.goto(viewerUrl(router));
  await page.click('#login-go');
  await page.waitForSelector('#app-view:not([hidden])');
}

// Starts trace id from the form, its fields typed (a select's value chosen), and waits for its
// view.
async function startFromForm(page, id, fields) {
  await page.click('#new-trace-toggle');
  await page.type('input[name=trace_id]', id);
  for (const [selector, value] of fields) {
    if (selector.startsWith('select')) await page.select(selector, value);
    else await page.type(selector, value);
  }
  await page.click('#start-go');
  await until(async () => (await page.$eval('#tv-id', (e) => e.textContent)) === id, 'the trace view');
}

// Pixels of the canvas close to an RGB colour.
async function countPixels(page, selector, [r, g, b]) {
  return page.$eval(selector, (c, want) => {
    const d = c.getContext('2d').getImageData(0, 0, c.width, c.height).data;
    let n = 0;
    for (let i = 0; i < d.length; i += 4) {
      if (Math.abs(d[i] - want[0]) < 16 && Math.abs(d[i + 1] - want[1]) < 16 &&
          Math.abs(d[i + 2] - want[2]) < 16 && d[i + 3] > 200) n++;
    }
    return n;
  }, [r, g, b]);
}

test('the viewer logs in, traces, shows, exports and deletes', async () => {
  const started = Date.now();
  const out = artifactsDir();
  const problems = [];
  const page = await chrome.browser.newPage();
  watchPage(page, problems);
  const downloads = await downloadsTo(chrome, 'downloads');

  const mgmt = await open({ realm: 'mgmt' });
  const node = (await mgmt.call(MGMT + 'list_nodes'))[0];
  const worker = (await mgmt.call(MGMT + 'list_workers', [node]))[0];
  const records = (id, from = 0) => mgmt.call(MGMT + 'get_trace_data', [node, worker, id, from, null, 10000]);

  // Log in (protected mode: anonymous from loopback) to the WebSocket path of the page's host.
  await page.goto(viewerUrl(router));
  assert.equal(await page.$eval('#login-url', (e) => e.value), router.url);
  await page.click('#login-go');
  await page.waitForSelector('#app-view:not([hidden])');
  const conn = await page.$eval('#conn', (e) => e.textContent);
  assert.match(conn, /realm mgmt/);
  assert.match(conn, /\(admin\)/);
  // One node: no node groups, no node choice, no node badge.
  assert.match(conn, /node \S+ \/ \S+/);
  assert.equal((await page.$$('#trace-list li.node-head')).length, 0);
  assert.ok(await page.$eval('#start-node-label', (e) => e.hidden));

  // Start a filtered trace from the form.
  await page.click('#new-trace-toggle');
  await page.type('input[name=trace_id]', 'viewer1');
  await page.type('input[name=realms]', 'realm1');
  await page.type('textarea[name=uris]', 'prefix:com.browser.');
  await page.click('#start-go');
  await until(async () => (await page.$eval('#tv-id', (e) => e.textContent)) === 'viewer1', 'the trace view');
  const meta = await mgmt.call(MGMT + 'get_trace', [node, worker, 'viewer1']);
  assert.equal(meta.status, 'running');
  assert.deepEqual(meta.options.realms, ['realm1']);
  assert.deepEqual(meta.options.uris, [{ uri: 'com.browser.', match: 'prefix' }]);
  await page.screenshot({ path: path.join(out, 'viewer-1-started.png') });

  // Traffic: calls (one failing), a publish to two subscribers, and traffic outside the filter.
  const callee = await open({ realm: 'realm1' });
  await callee.register('com.browser.add', (args) => args[0] + args[1]);
  await callee.register('com.browser.fail', () => {
    throw new autobahn.Error('com.browser.error.oops', ['no']);
  });
  const caller = await open({ realm: 'realm1', serializer: 'msgpack' });
  // (Strings with quotes, which the message pane must show as they are.)
  const quoted = { q: 'a"b', t: "it's 42", h: '</span><b>x</b>' };
  for (let i = 0; i < 3; i++) assert.equal(await caller.call('com.browser.add', [i, 1], quoted), i + 1);
  await assert.rejects(caller.call('com.browser.fail'), (e) => e.error === 'com.browser.error.oops');
  const got = [];
  for (const s of [await open({ realm: 'realm1' }), await open({ realm: 'realm1', serializer: 'msgpack' })]) {
    await s.subscribe('com.browser.topic', (args) => got.push(args[0]));
  }
  await caller.publish('com.browser.topic', [7], {}, { acknowledge: true });
  await caller.publish('com.other.topic', [8], {}, { acknowledge: true });
  await until(() => got.length === 2, 'two events');

  // The page gets every record the router holds (live feed), and only those of the filter.
  let held;
  await until(async () => {
    held = await records('viewer1');
    const n = await page.evaluate(() => document.getElementById('tv-stats').textContent);
    return held.length >= 20 && n.startsWith(`${held.length} records here`);
  }, 'the live records in the page');
  assert.ok(held.every((r) => r.realm === 'realm1' && r.uri.startsWith('com.browser.')));
  assert.ok(held.some((r) => r.msg_type === 'Invocation'));

  // Arrows on the sequence canvas: rx (blue) and tx (green), and error arrows (red).
  await page.$eval('#follow', (e) => { e.checked = false; });
  await page.$eval('#seq-scroll', (e) => { e.scrollTop = 0; e.dispatchEvent(new Event('scroll')); });
  assert.ok(await countPixels(page, '#seq-canvas', [0x2f, 0x6f, 0xde]) > 200, 'rx arrows drawn');
  assert.ok(await countPixels(page, '#seq-canvas', [0x0f, 0x9d, 0x76]) > 200, 'tx arrows drawn');
  assert.ok(await countPixels(page, '#seq-canvas', [0xd3, 0x3a, 0x3a]) > 20, 'error arrow drawn');
  const lanes = await page.$eval('#tv-stats', (e) => e.textContent);
  assert.match(lanes, /4 sessions/);

  // Click the first CALL's row: its message, and its correlation highlighted (orange).
  const callIdx = held.findIndex((r) => r.msg_type === 'Call');
  const box = await page.$eval('#seq-scroll', (e) => {
    const b = e.getBoundingClientRect();
    return { x: b.x, y: b.y, w: b.width };
  });
  await page.mouse.click(box.x + box.w / 2, box.y + 8 + callIdx * 22 + 11);
  await page.waitForSelector('#detail:not([hidden])');
  assert.equal(await page.$eval('#detail-title', (e) => e.textContent), `Call #${held[callIdx].seq}`);
  const msgText = await page.$eval('#detail-msg', (e) => e.textContent);
  assert.deepEqual(JSON.parse(msgText), held[callIdx].msg);
  assert.deepEqual(held[callIdx].msg[5], quoted);
  assert.equal(await page.$eval('#detail-msg', (e) => e.querySelectorAll('b').length), 0);
  const fields = await page.$eval('#detail-fields', (e) => e.textContent);
  assert.match(fields, /msgpack \d+ B/);
  assert.match(fields, /anonymous/);
  await until(async () => await countPixels(page, '#seq-canvas', [0xe0, 0x8a, 0x00]) > 100,
    'the correlation highlighted');
  await page.screenshot({ path: path.join(out, 'viewer-2-sequence.png') });

  // A marker from the page.
  await page.type('#tv-mark-name', 'checkpoint');
  await page.click('#tv-mark');
  await until(async () => (await records('viewer1')).some((r) => r.msg_type === 'Marker' && r.uri === 'checkpoint'),
    'the marker');

  // The table: every record, then the search.
  await page.click('.tab[data-tab=table]');
  await until(async () => (await page.$$('#table-rows .trow')).length >= Math.min(held.length, 20), 'table rows');
  assert.deepEqual((await page.$$eval('#table-head span', (es) => es.map((e) => e.textContent))).slice(0, 2),
    ['seq', 'time (UTC)']);
  assert.ok(await page.$eval('#tv-node', (e) => e.hidden));
  await page.type('#search', 'com.browser.error.oops');
  const want = held.filter((r) => JSON.stringify(r).toLowerCase().includes('com.browser.error.oops'));
  assert.ok(want.length >= 2); // the callee's ERROR and the caller's
  await until(async () => (await page.$$('#table-rows .trow')).length === want.length, 'search results');
  const errRow = want.find((r) => r.direction === 'tx');
  await clickUntil(page, `#table-rows .trow[data-i="${held.indexOf(errRow)}"]`,
    async () => (await page.$eval('#detail-title', (e) => e.textContent)) === `Error #${errRow.seq}`,
    'the error record');
  assert.match(await page.$eval('#detail-msg', (e) => e.textContent), /com\.browser\.error\.oops/);
  await page.screenshot({ path: path.join(out, 'viewer-3-table.png') });

  // The action view: every CALL and PUBLISH, slowest first, with outcome and error URI.
  await page.click('.tab[data-tab=actions]');
  await until(async () => (await page.$$('#actions-rows .trow')).length === 5, 'five actions');
  const rows = await page.$$eval('#actions-rows .trow', (rs) => rs
    .sort((a, b) => parseFloat(a.style.top) - parseFloat(b.style.top))
    .map((r) => [...r.children].map((c) => c.textContent)));
  assert.deepEqual(rows.map((r) => r[0]).sort(), ['call', 'call', 'call', 'call', 'publish']);
  const durations = rows.map((r) => parseFloat(r[2]));
  assert.deepEqual([...durations].sort((a, b) => b - a), durations);
  const failed = rows.filter((r) => r[3] === 'error');
  assert.equal(failed.length, 1);
  assert.equal(failed[0][1], 'com.browser.fail');
  assert.equal(failed[0][4], 'com.browser.error.oops');
  await page.screenshot({ path: path.join(out, 'viewer-4-actions.png') });

  // Stop, then download the JSON Lines export and compare it with the router's records.
  await page.click('#tv-stop');
  await until(async () => (await mgmt.call(MGMT + 'get_trace', [node, worker, 'viewer1'])).status === 'stopped', 'stopped');
  await until(async () => (await page.$eval('#tv-status', (e) => e.textContent)) === 'stopped',
    'the stopped badge');
  const final = await records('viewer1');
  await page.click('#tv-download');
  const file = path.join(downloads, 'viewer1.jsonl');
  await until(() => fs.existsSync(file) && fs.readFileSync(file, 'utf8').split('\n').length > final.length,
    'the download');
  const lines = fs.readFileSync(file, 'utf8').split('\n');
  assert.equal(lines.pop(), '');
  assert.deepEqual(lines.map((l) => JSON.parse(l)), final);
  fs.copyFileSync(file, path.join(out, 'viewer1.jsonl'));

  // Delete (two clicks): the trace is gone.
  await page.click('#tv-delete');
  await page.click('#tv-delete');
  await until(async () => !(await mgmt.call(MGMT + 'list_traces', [node, worker, true])).includes('viewer1'), 'deleted');
  await page.waitForSelector('#empty:not([hidden])');

  await page.close();
  assert.deepEqual(problems, []);
  console.log(`viewer test: ${held.length} records, ${Date.now() - started} ms; artifacts in ${out}`);
});

test('an action-level trace from the form, and 100,000 records drawn window by window', async () => {
  const problems = [];
  const page = await chrome.browser.newPage();
  watchPage(page, problems);
  await logIn(page);

  // Action level: one record per completed CALL, shown in the action view.
  await startFromForm(page, 'acts', [['select[name=trace_level]', 'action'], ['input[name=realms]', 'realm2']]);
  const callee = await open({ realm: 'realm2' });
  await callee.register('com.acts.echo', (args) => args[0]);
  const caller = await open({ realm: 'realm2' });
  assert.equal(await caller.call('com.acts.echo', ['x']), 'x');
  await assert.rejects(caller.call('com.acts.nobody', []), (e) => e.error === 'wamp.error.no_such_procedure');
  await page.click('.tab[data-tab=actions]');
  await until(async () => (await page.$$('#actions-rows .trow')).length === 2, 'the call actions');
  const rows = await page.$$eval('#actions-rows .trow', (rs) => rs.map((r) => [...r.children].map((c) => c.textContent)));
  const row = rows.find((r) => r[1] === 'com.acts.echo');
  assert.deepEqual([row[0], row[1], row[3], row[4]], ['call', 'com.acts.echo', 'ok', '']);
  // A failed action shows the error URI its record carries.
  const failed = rows.find((r) => r[1] === 'com.acts.nobody');
  assert.deepEqual([failed[0], failed[3], failed[4]], ['call', 'error', 'wamp.error.no_such_procedure']);
  const echoAt = await page.$$eval('#actions-rows .trow',
    (rs) => rs.find((r) => r.children[1].textContent === 'com.acts.echo').dataset.i);
  await clickUntil(page, `#actions-rows .trow[data-i="${echoAt}"]`,
    async () => /^Action #\d+$/.test(await page.$eval('#detail-title', (e) => e.textContent)),
    'the action record');
  assert.match(await page.$eval('#detail-fields', (e) => e.textContent), /responders/);
  await page.click('.tab[data-tab=seq]');
  // The selected action is highlighted (orange): its arrow from the caller and to the callee.
  assert.ok(await countPixels(page, '#seq-canvas', [0xe0, 0x8a, 0x00]) > 100, 'the action arrows');

  // 100,000 records fed as live batches of 1000 into an open trace (synthetic: a CALL exchange
  // per 4 records over 8 sessions in 2 realms) with "follow" on: the table keeps a window of
  // rows in the DOM, and the canvas draws only the rows in view.
  const figures = await page.evaluate(() => {
    const v = window.wampscopeViewer.view;
    const base = v.nextSeq;
    const before = v.records.length;
    const types = [['Call', 'rx'], ['Invocation', 'tx'], ['Yield', 'rx'], ['Result', 'tx']];
    const t0 = performance.now();
    let worst = 0;
    for (let b = 0; b < 100; b++) {
      const batch = [];
      for (let k = 0; k < 1000; k++) {
        const n = b * 1000 + k;
        const [msgType, direction] = types[n % 4];
        const caller = 1000 + ((n >> 2) % 4);
        batch.push({ seq: base + n, pc: n / 1e4, ts: 1.7e9 + n / 1e4, direction, msg_type: msgType,
          realm: caller % 2 ? 'realm1' : 'realm2', session_id: n % 4 === 1 || n % 4 === 2 ? caller + 100 : caller,
          authid: null, authrole: 'anonymous', correlation: `c${n >> 2}`, uri: 'com.load.add',
          correlation_is_anchor: n % 4 === 0, correlation_is_last: n % 4 === 3,
          serializations: { json: 40 }, msg: [48, n, {}, 'com.load.add'] });
      }
      const t = performance.now();
      v.add(batch);
      v.render();
      worst = Math.max(worst, performance.now() - t);
    }
    return { total: performance.now() - t0, worst, before, records: v.records.length };
  });
  assert.equal(figures.records, figures.before + 100000);
  await page.click('.tab[data-tab=table]');
  const domRows = await page.$$eval('#table-rows .trow', (rs) => rs.length);
  assert.ok(domRows > 10 && domRows < 200, `${domRows} rows in the DOM`);
  const lastSeq = await page.$$eval('#table-rows .trow', (rs) => Math.max(...rs.map((r) => Number(r.dataset.i))));
  assert.equal(lastSeq, figures.records - 1); // "follow" shows the newest
  await page.type('#search', 'c24999'); // the last exchange's correlation
  await until(async () => (await page.$$('#table-rows .trow')).length === 4, 'one exchange found');
  await page.click('#detail-close'); // nothing selected: no correlation highlighted
  await page.click('.tab[data-tab=seq]');
  await page.screenshot({ path: path.join(artifactsDir(), 'viewer-5-100k.png') });
  assert.ok(await countPixels(page, '#seq-canvas', [0x0f, 0x9d, 0x76]) > 200, 'arrows at the end');
  await page.screenshot({ path: path.join(artifactsDir(), 'viewer-5-100k.png') });
  console.log(`100,000 records in 100 live batches: ${figures.total.toFixed(0)} ms in all, ` +
    `worst batch (add + draw) ${figures.worst.toFixed(1)} ms`);

  // Another management client stops and deletes the open trace: the page follows.
  const mgmt = await open({ realm: 'mgmt' });
  const node = (await mgmt.call(MGMT + 'list_nodes'))[0];
  const worker = (await mgmt.call(MGMT + 'list_workers', [node]))[0];
  await mgmt.call(MGMT + 'stop_trace', [node, worker, 'acts']);
  await until(async () => (await page.$eval('#tv-status', (e) => e.textContent)) === 'stopped', 'stopped');
  await mgmt.call(MGMT + 'delete_trace', [node, worker, 'acts']);
  await page.waitForSelector('#empty:not([hidden])');
  await page.close();
  assert.deepEqual(problems, []);
});

// Management credentials (configs/test-e2e-auth.json): no anonymous access; a ticket principal
// and a wampcra user with a salted key (PBKDF2 and HMAC-SHA256 in WebCrypto).
test('the page logs in with ticket and wampcra, and reports a refused login', async () => {
  // The config reads both tickets from the environment ("${VAR}").
  process.env.WAMPSCOPE_E2E_MGMT_TICKET = 'mgmt-ticket-from-env';
  process.env.WAMPSCOPE_E2E_TICKET = 'joe-ticket-from-env';
  const authConfig = viewerConfig('test-e2e-auth.json');
  let authRouter;
  const problems = [];
  const page = await chrome.browser.newPage();
  watchPage(page, problems);
  try {
    authRouter = await startRouter(authConfig.config);
    const login = async (method, authid, secret) => {
      await page.goto(viewerUrl(authRouter));
      await page.select('#login-method', method);
      if (method !== 'anonymous') {
        await page.type('#login-authid', authid);
        await page.type('#login-secret', secret);
      }
      await page.click('#login-go');
      return until(async () => {
        if (!(await page.$eval('#app-view', (e) => e.hidden))) return 'joined';
        return page.$eval('#login-error', (e) => e.textContent);
      }, `${method} login`);
    };
    assert.equal(await login('wampcra', 'auditor', 'auditor-password'), 'joined');
    assert.match(await page.$eval('#conn', (e) => e.textContent), /auditor \(admin\)/);
    // This config keeps the default flight recorder: listed, with its badge, running.
    await page.waitForSelector('#trace-list li[data-id="flight-recorder"] .badge.flight');
    assert.equal(await page.$eval('#trace-list li[data-id="flight-recorder"] .badge.running',
      (e) => e.textContent), 'running');
    await page.click('#logout');
    await page.waitForSelector('#login-view:not([hidden])');
    assert.equal(await login('ticket', 'admin', 'mgmt-ticket-from-env'), 'joined');
    assert.match(await page.$eval('#conn', (e) => e.textContent), /admin \(admin\)/);
    await page.click('#logout');
    await page.waitForSelector('#login-view:not([hidden])');
    assert.match(await login('wampcra', 'auditor', 'wrong-password'), /wamp\.error\.authentication_failed/);
    assert.match(await login('anonymous', '', ''), /wamp\.error\./);
    await page.close();
  } finally {
    try {
      if (authRouter) await authRouter.stop();
    } finally {
      authConfig.cleanup();
    }
  }
  assert.deepEqual(problems, []);
});

test('the page answers a router that refuses the login', async () => {
  const problems = [];
  const page = await chrome.browser.newPage();
  watchPage(page, problems);
  await page.goto(viewerUrl(router));
  await page.$eval('#login-realm', (e) => { e.value = ''; });
  await page.type('#login-realm', 'nosuchrealm');
  await page.click('#login-go');
  await until(() => page.$eval('#login-error', (e) => e.textContent), 'the login error');
  assert.match(await page.$eval('#login-error', (e) => e.textContent), /wamp\.error\./);
  assert.ok(await page.$eval('#app-view', (e) => e.hidden));
  await page.close();
  assert.deepEqual(problems, []);
});


test('what a trace drops while the page reads it shows where it was', async () => {
  // A trace that holds 20 records and bursts of publications: the live feed's batches start
  // past what the page read, and its reads of the gap come too late. The page shows a gap
  // item there (table row, stats), never a silent jump; so does its download.
  const problems = [];
  const page = await chrome.browser.newPage();
  watchPage(page, problems);
  const mgmt = await open({ realm: 'mgmt' });
  const node = (await mgmt.call(MGMT + 'list_nodes'))[0];
  const worker = (await mgmt.call(MGMT + 'list_workers', [node]))[0];
  await logIn(page);
  await startFromForm(page, 'ring', [['input[name=realms]', 'realm1'], ['input[name=limit]', '20']]);
  const pub = await open({ realm: 'realm1' });
  let n = 0, last = '';
  const stats = await until(async () => {
    for (let k = 0; k < 300; k++) pub.publish('com.browser.ring', [n++]);
    last = await page.$eval('#tv-stats', (e) => e.textContent);
    return /· \d+ gaps? ·/.test(last) && last;
  }, 'a gap in the page', 15000).catch((e) => {
    throw new Error(`${e.message}: the page says "${last}" after ${n} publications`);
  });
  assert.match(stats, /^\d+ records here · \d+ gaps? · /);
  await page.click('.tab[data-tab=table]');
  // The search finds them by their reason (no record here has a "dropped" of its own).
  await page.type('#search', 'dropped');
  const rows = await until(async () => {
    const t = await page.$$eval('#table-rows .trow', (es) => es.map((e) => e.textContent));
    return t.length > 0 && t.every((x) => x.includes('Gap')) && t;
  }, 'only the gap rows');
  for (const row of rows) {
    assert.match(row, /⋯ \d+ records? missing \(\d+–\d+\): dropped before they were read/);
  }
  await page.screenshot({ path: path.join(artifactsDir(), 'viewer-gap.png') });

  // The download, while the publisher keeps the trace evicting: it reads the seqs the trace held
  // when it began, and each of them is in the file as a record or inside a "dropped" gap item,
  // in order, with no silent jump; downloaded until one met a drop and still read records (the
  // publisher's bursts grow while the downloads meet no drop, and shrink while they read
  // nothing).
  const file = path.join(await downloadsTo(chrome, 'downloads-gap'), 'ring.jsonl');
  let tries = 0;
  const items = await whilePublishing(() => pub.publish('com.browser.ring', [n++]), async (tune) => {
    tries++;
    const got = await downloadJsonl(page, '#tv-download', file);
    const gaps = got.filter((x) => x.kind === 'gap').length;
    if (gaps === 0) tune(1);
    else if (gaps === got.length) tune(-1);
    return gaps > 0 && gaps < got.length && got;
  }, 'a download that met a drop and read records');
  // The trace was full when the download began: its range is the 20 seqs it held.
  const start = items[0].kind === 'gap' ? items[0].from_seq : items[0].seq;
  let next = start;
  for (const x of items) {
    if (x.kind === 'gap') {
      assert.deepEqual([x.msg_type, x.reason, x.from_seq, x.seq], ['Gap', 'dropped', next, x.to_seq]);
      assert.ok(x.to_seq >= x.from_seq);
      next = x.to_seq + 1;
    } else {
      assert.equal(x.seq, next, `no silent jump before seq ${x.seq}`);
      assert.equal(x.kind, undefined);
      next = x.seq + 1;
    }
  }
  assert.equal(next - start, 20, 'the download covers the 20 seqs the trace held');
  const toast = await page.$eval('#toast', (e) => e.textContent);
  assert.match(toast, /^ring\.jsonl: \d+ records; \d+ dropped before they could be read/);
  console.log(`viewer gap test: a download met a drop at try ${tries}, ${items.length} items`);
  await mgmt.call(MGMT + 'stop_trace', [node, worker, 'ring']);
  await mgmt.call(MGMT + 'delete_trace', [node, worker, 'ring']);
  await page.close();
  assert.deepEqual(problems, []);
});
