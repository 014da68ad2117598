// app.js: the trace viewer. A management client of the router (mgmt/README.md): it lists the
// traces, starts/stops/marks/deletes them, and shows one trace live as a sequence diagram, a
// searchable table and an action view. Records come from get_trace_data pages (paged by seq)
// and the on_trace_data feed; a gap in the feed is filled with get_trace_data. The diagram and
// the tables draw only the rows in view, so a trace of 100,000 records scrolls like a short one.
// On a cluster (list_nodes gives more than one node) it lists every node's traces, grouped by
// node, and a trace held by several nodes also as one cluster-wide trace (node_id "*"), read
// as merged pages (get_trace_data "*", paged by its `next` cursor map).

import { WampSession, WampError } from './wamp.js';

const P = 'crossbarfabriccenter.';
const T = P + 'remote.tracing.';
const PAGE = 1000; // records per get_trace_data call
const ROW = 22; // sequence diagram row height (px)
const TROW = 24; // table row height (px)
const GUTTER = 160; // sequence diagram: seq and time column
const PAD = 8; // sequence diagram: space above the first row
const MSG_TYPES = ['Hello', 'Welcome', 'Abort', 'Challenge', 'Authenticate', 'Goodbye', 'Error',
  'Publish', 'Published', 'Subscribe', 'Subscribed', 'Unsubscribe', 'Unsubscribed', 'Event',
  'Call', 'Cancel', 'Result', 'Register', 'Registered', 'Unregister', 'Unregistered',
  'Invocation', 'Interrupt', 'Yield'];

const $ = (id) => document.getElementById(id);
const esc = (s) => String(s ?? '').replace(/[&<>"']/g,
  (c) => ({ '&': '&amp;', '<': '&lt;', '>': '&gt;', '"': '&quot;', "'": '&#39;' }[c]));

const app = {
  sess: null,
  node: null, // the first node of list_nodes
  worker: null, // its first worker (the worker_id of "*" calls)
  nodes: [], // every live node (list_nodes)
  workers: new Map(), // node -> worker_id
  traces: new Map(), // traceKey(node, id) -> metadata (with `node`; node "*": cluster-wide)
  nodeErrors: new Map(), // node -> why its traces could not be listed
  clockOffsets: {}, // node -> seconds its wall clock is from app.node's (read while a "*" view is open)
  view: null, // the open trace (TraceView)
  pollTimer: null,
  listedAt: 0, // when the trace list was last read (ms)
};
// For the browser tests and the developer console.
window.wampscopeViewer = app;

// ---------------------------------------------------------------------------------- helpers --

function toast(text, isError = true) {
  let el = $('toast');
  if (!el) {
    el = document.createElement('div');
    el.id = 'toast';
    el.style.cssText = 'position:fixed;bottom:16px;right:16px;max-width:520px;padding:10px 14px;' +
      'border-radius:8px;color:#fff;font-size:12.5px;box-shadow:0 4px 18px rgba(0,0,0,.18);z-index:9';
    document.body.appendChild(el);
  }
  el.textContent = text;
  el.style.background = isError ? '#b93030' : '#1d2430';
  el.hidden = false;
  clearTimeout(el.timer);
  el.timer = setTimeout(() => { el.hidden = true; }, 6000);
}

function errText(e) {
  return e instanceof WampError ? e.message : String(e && e.message ? e.message : e);
}

function clockTime(ts) {
  if (typeof ts !== 'number') return '';
  const d = new Date(ts * 1000);
  const us = Math.floor((ts * 1e6) % 1000).toString().padStart(3, '0');
  return d.toISOString().slice(11, 23) + us;
}

function fmtMs(seconds) {
  if (typeof seconds !== 'number') return '';
  const ms = seconds * 1000;
  return ms >= 100 ? ms.toFixed(1) : ms >= 1 ? ms.toFixed(2) : ms.toFixed(3);
}

function fmtBytes(n) {
  if (typeof n !== 'number') return '';
  if (n < 1024) return `${n} B`;
  if (n < 1048576) return `${(n / 1024).toFixed(1)} KiB`;
  return `${(n / 1048576).toFixed(1)} MiB`;
}

// v as indented JSON in HTML, coloured: the JSON text is cut into tokens first (a string is
// everything up to its closing quote, escaped quotes included), then each piece is escaped.
function prettyJson(v) {
  const text = JSON.stringify(v, null, 2);
  if (text === undefined) return esc(String(v));
  const re = /("(?:[^"\\]|\\.)*")(\s*:)?|\b(true|false|null)\b|(-?\d+(?:\.\d+)?(?:[eE][+-]?\d+)?)/g;
  let out = '';
  let last = 0;
  let m;
  while ((m = re.exec(text)) !== null) {
    const [, str, colon, lit, num] = m;
    out += esc(text.slice(last, m.index));
    if (str) out += colon ? `<span class="k">${esc(str)}</span>${esc(colon)}` : `<span class="s">${esc(str)}</span>`;
    else if (lit) out += `<span class="l">${lit}</span>`;
    else out += `<span class="n">${num}</span>`;
    last = re.lastIndex;
  }
  return out + esc(text.slice(last));
}

// Sum of a record's wire sizes (the largest serialization).
function recSize(r) {
  const s = r.serializations;
  if (!s) return undefined;
  let max = 0;
  for (const v of Object.values(s)) if (typeof v === 'number' && v > max) max = v;
  return max;
}

function isAction(r) {
  return typeof r.action === 'string';
}

function recLabel(r) {
  if (isAction(r)) return `${r.action}${r.uri ? ' ' + r.uri : ''}`;
  return `${r.msg_type}${r.uri ? ' ' + r.uri : ''}`;
}

const traceKey = (node, id) => `${node}\u0001${id}`;
const clustered = () => app.nodes.length > 1;

// ---------------------------------------------------------------------------------- session --

function defaultUrl() {
  if (location.protocol === 'http:' || location.protocol === 'https:') {
    return `${location.protocol === 'https:' ? 'wss' : 'ws'}://${location.host}/ws`;
  }
  return 'ws://127.0.0.1:8080/ws';
}

function initLogin() {
  const q = new URLSearchParams(location.search);
  $('login-url').value = q.get('url') || defaultUrl();
  $('login-realm').value = q.get('realm') || 'mgmt';
  const method = q.get('authmethod') || 'anonymous';
  $('login-method').value = ['anonymous', 'ticket', 'wampcra'].includes(method) ? method : 'anonymous';
  $('login-authid').value = q.get('authid') || '';
  const syncCred = () => { $('login-cred').hidden = $('login-method').value === 'anonymous'; };
  $('login-method').addEventListener('change', syncCred);
  syncCred();
  $('login-form').addEventListener('submit', (ev) => {
    ev.preventDefault();
    connect();
  });
  $('logout').addEventListener('click', () => app.sess && app.sess.close());
  if (q.get('connect') === '1') connect();
}

async function connect() {
  $('login-error').textContent = '';
  $('login-go').disabled = true;
  const opts = {
    url: $('login-url').value.trim(),
    realm: $('login-realm').value.trim(),
    authmethod: $('login-method').value,
    authid: $('login-method').value === 'anonymous' ? '' : $('login-authid').value.trim(),
    secret: $('login-secret').value,
    onclose: (why) => disconnected(why),
  };
  const sess = new WampSession(opts);
  try {
    const welcome = await sess.open();
    $('login-secret').value = '';
    app.sess = sess;
    const nodes = (await sess.call(P + 'list_nodes')).args[0] || [];
    app.nodes = nodes;
    app.node = nodes[0];
    const workers = (await sess.call(P + 'list_workers', [app.node])).args[0] || [];
    app.worker = workers[0];
    app.workers = new Map([[app.node, app.worker]]);
    const where = clustered() ? `${nodes.length} nodes` : `node ${esc(app.node)} / ${esc(app.worker)}`;
    $('conn').innerHTML = `<span class="ok">●</span> ${esc(opts.url)} · realm ${esc(opts.realm)} · ` +
      `${esc(welcome.authid || '')} (${esc(welcome.authrole || '')}) · ${where}`;
    renderNodeSelect();
    $('logout').hidden = false;
    $('login-view').hidden = true;
    $('app-view').hidden = false;
    await sess.subscribe(T + 'on_trace_started', () => refreshTraces());
    await sess.subscribe(T + 'on_trace_stopped', (args) => {
      refreshTraces();
      if (app.view && args[0] === app.view.node && args[2] === app.view.id) {
        app.view.meta = args[3] || app.view.meta;
      }
    });
    await sess.subscribe(T + 'on_trace_data', (args) => {
      const v = app.view;
      if (v && (v.node === '*' || args[0] === v.node) && args[2] === v.id) {
        v.onBatch(args[4] || []);
        if (Date.now() - app.listedAt > 1000) refreshTraces();
      }
    });
    await refreshTraces();
    app.pollTimer = setInterval(refreshTraces, 2000);
  } catch (e) {
    $('login-error').textContent = errText(e);
    sess.close();
  } finally {
    $('login-go').disabled = false;
  }
}

function disconnected(why) {
  clearInterval(app.pollTimer);
  app.sess = null;
  app.view = null;
  $('conn').textContent = `not connected (${why})`;
  $('logout').hidden = true;
  $('app-view').hidden = true;
  $('login-view').hidden = false;
}

// A gap item's text: how many records, which seqs, and why they are missing.
function gapText(r) {
  const n = r.to_seq - r.from_seq + 1;
  const why = r.reason === 'dropped' ? 'dropped before they were read' : r.reason;
  return `⋯ ${n} record${n === 1 ? '' : 's'} missing (${r.from_seq}–${r.to_seq}): ${why}`;
}

// A gap item for the seqs first..last that a trace dropped before this page read them, in the
// shape of the API's gap items with the reason "dropped" (as wampscope-ctl writes them).
function droppedItem(first, last) {
  return { seq: last, kind: 'gap', msg_type: 'Gap', from_seq: first, to_seq: last, reason: 'dropped' };
}

// Reading a trace in seq order with next the seq expected: the gap item for what the trace dropped
// before item r when r starts past it (r's first seq: a record's own, a gap item's from_seq),
// else null.
function gapBefore(r, next) {
  const first = r.kind === 'gap' ? r.from_seq : r.seq;
  return first > next ? droppedItem(next, first - 1) : null;
}

// gapBefore() of a merged reading (node "*"), item by item in the pages' order: nodeNext maps
// each node to the seq next expected of it (absent: nothing of it read yet, and nothing before
// its first item reported). A node's items come in its seq order, so a jump between two of them
// is what its trace dropped before a page read them; the gap item names the node.
function nodeGapBefore(nodeNext, r) {
  const next = nodeNext.get(r.node_id);
  const g = next == null ? null : gapBefore(r, next);
  nodeNext.set(r.node_id, r.seq + 1);
  if (g) g.node_id = r.node_id;
  return g;
}

// Calls a management procedure on node (a node_id, or "*" for every node).
function api(node, proc, ...args) {
  const worker = app.workers.get(node) || app.worker;
  return app.sess.call(P + proc, [node, worker, ...args]).then((r) => r.args[0]);
}

// The nodes whose entry in the answer of a "*" call is an error, as one line (or '').
function nodeErrorsText(answer) {
  return Object.entries(answer || {}).filter(([, x]) => x && typeof x === 'object' && x.error)
    .map(([n, x]) => `${n}: ${x.error}${x.args && x.args[0] ? ` (${x.args[0]})` : ''}`).join('; ');
}

// The nodes whose wall clock is a second or more from the page's node's, for a merged trace's
// header: merged pages order records by the nodes' clocks and hold a node's records back while
// another's clock is behind them (mgmt/README.md "Merged reading"). '' when none is.
function clocksApartText() {
  const apart = Object.entries(app.clockOffsets).filter(([, s]) => Math.abs(s) >= 1)
    .map(([n, s]) => `${n} ${Math.abs(s).toFixed(1)} s ${s < 0 ? 'behind' : 'ahead of'} ${app.node}`);
  return apart.length ? ` · clocks apart: ${apart.join(', ')}` : '';
}

// --------------------------------------------------------------------------------- trace list --

async function refreshTraces() {
  if (!app.sess) return;
  app.listedAt = Date.now();
  try {
    if (clustered()) app.nodes = (await app.sess.call(P + 'list_nodes')).args[0] || app.nodes;
    const traces = new Map();
    const errors = new Map();
    await Promise.all(app.nodes.map(async (node) => {
      try {
        if (!app.workers.has(node)) {
          app.workers.set(node, ((await app.sess.call(P + 'list_workers', [node])).args[0] || [])[0]);
        }
        const ids = await api(node, 'list_traces', true);
        const metas = await Promise.all(ids.map((id) => api(node, 'get_trace', id).catch(() => null)));
        metas.forEach((m) => m && traces.set(traceKey(node, m.id), { ...m, node }));
      } catch (e) {
        if (!clustered()) throw e;
        errors.set(node, errText(e));
      }
    }));
    if (clustered()) addClusterWide(traces);
    if (app.view && app.view.merged) { // (its header names the clocks apart)
      const w = await api(app.node, 'get_worker').catch(() => null);
      app.clockOffsets = (w && w.stats && w.stats.cluster && w.stats.cluster.clock_offsets) || {};
    }
    app.traces = traces;
    app.nodeErrors = errors;
    renderTraceList();
    renderNodeSelect();
    if (app.view) {
      const m = app.traces.get(traceKey(app.view.node, app.view.id));
      if (m) {
        app.view.meta = m;
        app.view.renderHead();
        // Another node's feed may not reach this session, and merged pages hold records back.
        if (app.view.node !== app.node) app.view.fetchMore();
      } else {
        toast(`trace ${app.view.id} was deleted`, false);
        closeTrace();
      }
    }
  } catch (e) {
    if (app.sess) toast(`list traces: ${errText(e)}`);
  }
}

// A trace id held by more than one node is also listed as one cluster-wide trace (node "*"):
// running while it runs on any node, its records and drops summed.
function addClusterWide(traces) {
  const byId = new Map();
  for (const m of traces.values()) {
    if (!byId.has(m.id)) byId.set(m.id, []);
    byId.get(m.id).push(m);
  }
  for (const [id, ms] of byId) {
    if (ms.length < 2) continue;
    const sum = (k) => ms.reduce((n, m) => n + (m[k] || 0), 0);
    traces.set(traceKey('*', id), {
      ...ms[0], node: '*', nodes: ms.map((m) => m.node),
      status: ms.some((m) => m.status === 'running') ? 'running' : 'stopped',
      records: sum('records'), dropped: sum('dropped'),
      started: ms.map((m) => m.started || '').sort()[0],
    });
  }
}

function traceItem(m) {
  const o = m.options || {};
  const flight = m.id === 'flight-recorder' ? '<span class="badge flight">flight recorder</span>' : '';
  const persist = o.persist ? '<span class="badge persist">persisted</span>' : '';
  const sel = app.view && app.view.id === m.id && app.view.node === m.node ? ' selected' : '';
  const on = m.nodes ? ` · on ${m.nodes.length} nodes` : '';
  return `<li class="trace-item${sel}" data-id="${esc(m.id)}" data-node="${esc(m.node)}">
      <span><span class="tid">${esc(m.id)}</span>${flight}${persist}</span>
      <span class="badge ${m.status === 'running' ? 'running' : 'stopped'}">${esc(m.status)}</span>
      <span class="sub">${m.records} records · ${esc(o.trace_level || 'message')} level${m.dropped ? ` · ${m.dropped} dropped` : ''}${on} · started ${esc((m.started || '').slice(11, 19))}</span>
    </li>`;
}

// One node: the traces as they are. A cluster: the cluster-wide traces, then every node's
// traces under its name (or why they could not be listed).
function renderTraceList() {
  const ul = $('trace-list');
  const items = [...app.traces.values()];
  if (!clustered()) {
    ul.innerHTML = items.map(traceItem).join('') || '<li class="sub muted">No traces.</li>';
    return;
  }
  let html = '';
  const group = (node, title, list, err) => {
    html += `<li class="node-head" data-group="${esc(node)}">${esc(title)}</li>`;
    if (err) html += `<li class="node-error error" data-group="${esc(node)}">${esc(err)}</li>`;
    else html += list.map(traceItem).join('') || '<li class="sub muted">No traces.</li>';
  };
  const wide = items.filter((m) => m.node === '*');
  if (wide.length) group('*', 'every node (*)', wide);
  for (const node of app.nodes) {
    group(node, `node ${node}`, items.filter((m) => m.node === node), app.nodeErrors.get(node));
  }
  ul.innerHTML = html;
}

// The start form's node choice: shown on a cluster only.
function renderNodeSelect() {
  const sel = $('start-node');
  $('start-node-label').hidden = !clustered();
  const want = ['*', ...app.nodes];
  if ([...sel.options].map((o) => o.value).join('\u0001') === want.join('\u0001')) return;
  const cur = sel.value;
  sel.innerHTML = want.map((n) => `<option value="${esc(n)}">${n === '*' ? 'every node (*)' : esc(n)}</option>`).join('');
  sel.value = want.includes(cur) ? cur : app.node;
}

function initTraceList() {
  $('trace-list').addEventListener('click', (ev) => {
    const li = ev.target.closest('li[data-id]');
    if (li) openTrace(li.dataset.node, li.dataset.id);
  });
  $('new-trace-toggle').addEventListener('click', () => { $('start-form').hidden = !$('start-form').hidden; });
  $('type-boxes').innerHTML = MSG_TYPES.map((t) =>
    `<label class="check"><input type="checkbox" name="msg_types" value="${t}"> ${t}</label>`).join('');
  $('start-form').addEventListener('submit', async (ev) => {
    ev.preventDefault();
    $('start-error').textContent = '';
    let id, options;
    try {
      ({ id, options } = readStartForm(ev.target));
    } catch (e) {
      $('start-error').textContent = e.message;
      return;
    }
    const node = clustered() ? $('start-node').value : app.node;
    try {
      const meta = await api(node, 'start_trace', id, options);
      if (node === '*') {
        const ok = Object.entries(meta).filter(([, x]) => x && !x.error);
        const failed = nodeErrorsText(meta);
        if (failed) $('start-error').textContent = `not started on ${failed}`;
        if (!ok.length) return;
        if (!failed) $('start-form').hidden = true;
        await refreshTraces();
        openTrace(ok.length > 1 ? '*' : ok[0][0], ok[0][1].id);
        return;
      }
      $('start-form').hidden = true;
      await refreshTraces();
      openTrace(node, meta.id);
    } catch (e) {
      $('start-error').textContent = errText(e);
    }
  });
}

const list = (s) => s.split(/[\s,]+/).map((x) => x.trim()).filter(Boolean);

// The start form as trace_options: only the options the user filled in, so that the router's
// defaults apply to the rest.
function readStartForm(f) {
  const o = {};
  const v = (name) => f.elements[name].value.trim();
  const num = (name) => {
    const s = v(name);
    if (s === '') return;
    const n = Number(s);
    if (!Number.isInteger(n)) throw new Error(`${name}: not an integer`);
    o[name] = n;
  };
  if (v('realms')) o.realms = list(v('realms'));
  const uris = v('uris').split('\n').map((l) => l.trim()).filter(Boolean);
  if (uris.length) {
    o.uris = uris.map((u) => {
      const m = /^(exact|prefix|wildcard):(.*)$/.exec(u);
      return m ? { uri: m[2], match: m[1] } : { uri: u, match: 'exact' };
    });
  }
  const types = [...f.querySelectorAll('input[name=msg_types]:checked')].map((c) => c.value);
  if (types.length) o.msg_types = types;
  if (v('direction') !== 'both') o.direction = v('direction');
  if (v('session_ids')) {
    o.session_ids = list(v('session_ids')).map((s) => {
      const n = Number(s);
      if (!Number.isInteger(n)) throw new Error(`session_ids: ${s} is not a session id`);
      return n;
    });
  }
  if (v('authids')) o.authids = list(v('authids'));
  if (v('authroles')) o.authroles = list(v('authroles'));
  ['limit', 'max_bytes', 'duration', 'max_records', 'batching_period', 'persist_max_bytes',
    'persist_max_age'].forEach(num);
  if (!f.elements.trace_app_payload.checked) o.trace_app_payload = false;
  if (f.elements.persist.checked) o.persist = true;
  if (v('trace_level') !== 'message') o.trace_level = v('trace_level');
  return { id: v('trace_id') || null, options: o };
}

// -------------------------------------------------------------------------------- trace view --

class TraceView {
  constructor(node, id) {
    this.node = node; // the trace's node, or "*": every node's records merged (by ts)
    this.merged = node === '*';
    this.id = id;
    this.meta = app.traces.get(traceKey(node, id)) || { id };
    this.records = []; // seq order (merged: the pages' order)
    this.nextSeq = 0; // the seq after the last record held
    this.gaps = 0; // gap items among the records
    this.cursor = 0; // merged: get_trace_data "*"'s from_seq (its last answer's `next`)
    this.nodeNext = new Map(); // merged: node -> the seq next expected of it (nodeGapBefore())
    this.lanes = new Map(); // "realm\u0001session" -> {realm, session, authid, authrole}
    this.lanesSorted = null; // laneOrder, made when next asked for (null: lanes changed)
    this.corr = new Map(); // correlation -> {idx: [record index], anchor, last, error}
    this.hoverCorr = null;
    this.selected = null; // record index
    this.filtered = null; // table: record indices matching the search, or null for all
    this.actions = null; // action view rows, built on demand
    this.fetching = null;
    this.dirty = true;
    this.closed = false;
  }

  // The lane of session who (default: the record's own session) of record r: one per node,
  // realm and session.
  laneKey(r, who = r) {
    return `${r.node_id ?? ''}\u0001${r.realm}\u0001${who.session_id}`;
  }

  addLane(r, who) {
    if (!who || who.session_id == null) return;
    const key = this.laneKey(r, who);
    const lane = this.lanes.get(key);
    if (lane) {
      if (!lane.authid && who.authid) lane.authid = who.authid;
      if (!lane.authrole && who.authrole) lane.authrole = who.authrole;
      return;
    }
    this.lanes.set(key, { node: r.node_id, realm: r.realm, session: who.session_id, authid: who.authid,
      authrole: who.authrole });
    this.lanesSorted = null; // (sorted once when drawn, not once per new lane: a page of
    // thousands of sessions' records adds thousands of lanes)
  }

  // The lanes grouped by realm (and node), as [key, lane] in column order.
  get laneOrder() {
    if (!this.lanesSorted) {
      this.lanesSorted = [...this.lanes.entries()].sort((a, b) =>
        String(a[1].realm).localeCompare(String(b[1].realm)) ||
        String(a[1].node ?? '').localeCompare(String(b[1].node ?? '')));
    }
    return this.lanesSorted;
  }

  // Appends records in seq order (older or repeated seqs are ignored; merged pages tile the
  // records, so all of theirs are taken). The seqs the trace (merged: a node's) dropped before
  // the page read them (a busy trace moves on while it is read) get a gap item where they were.
  add(recs) {
    for (const r of recs) {
      if (typeof r.seq !== 'number' || (!this.merged && r.seq < this.nextSeq)) continue;
      const gap = this.merged ? nodeGapBefore(this.nodeNext, r) :
        this.records.length ? gapBefore(r, this.nextSeq) : null;
      if (gap) this.push(gap);
      this.push(r);
    }
    this.actions = null;
    this.schedule();
  }

  // Appends one item (a record, or a gap item) and what it adds: lanes, correlations, search.
  push(r) {
    const i = this.records.length;
    this.records.push(r);
    this.nextSeq = r.seq + 1;
    if (this.filtered && matches(r, this.needle)) this.filtered.push(i);
    if (isAction(r)) {
      this.addLane(r, r.originator);
      for (const x of r.responders || []) this.addLane(r, x);
    } else if (r.session_id != null) {
      this.addLane(r, r);
    }
    if (r.correlation) {
      let c = this.corr.get(r.correlation);
      if (!c) {
        c = { idx: [], anchor: null, last: null, error: null };
        this.corr.set(r.correlation, c);
      }
      c.idx.push(i);
      if (!c.anchor && (r.correlation_is_anchor || c.idx.length === 1)) c.anchor = i;
      if (r.correlation_is_last) c.last = i;
      if (r.msg_type === 'Error' || r.msg_type === 'Abort') c.error = i;
    }
    if (r.kind === 'gap') this.gaps++;
  }

  // Reads every record from seq nextSeq on, page by page (get_trace_data).
  fetchMore() {
    if (this.fetching) {
      this.refetch = true;
      return this.fetching;
    }
    this.fetching = (async () => {
      try {
        do {
          this.refetch = false;
          for (;;) {
            if (this.merged) {
              const page = await api('*', 'get_trace_data', this.id, this.cursor, null, PAGE);
              if (this.closed) break;
              this.cursor = page.next;
              this.nodeErrors = page.errors || {};
              if (!page.records.length) break;
              this.add(page.records);
              continue;
            }
            const page = await api(this.node, 'get_trace_data', this.id, this.nextSeq, null, PAGE);
            if (this.closed || !page.length) break;
            this.add(page);
            if (page.length < PAGE) break;
          }
        } while (this.refetch && !this.closed);
      } catch (e) {
        if (!this.closed && app.sess) toast(`get_trace_data: ${errText(e)}`);
      } finally {
        this.fetching = null;
      }
    })();
    return this.fetching;
  }

  onBatch(recs) {
    if (!recs.length) return;
    if (this.merged || this.fetching || recs[0].seq > this.nextSeq) {
      this.fetchMore(); // a gap (records dropped, or we joined mid-batch): read it
      return;
    }
    this.add(recs);
  }

  schedule() {
    if (this.frame) return;
    this.frame = requestAnimationFrame(() => {
      this.frame = 0;
      this.render();
    });
  }

  render() {
    if (this.closed) return;
    this.renderHead();
    const tab = currentTab();
    if ($('follow').checked && this.records.length) this.follow(tab);
    if (tab === 'seq') drawSequence(this);
    else if (tab === 'table') drawTable(this);
    else drawActions(this);
  }

  follow(tab) {
    const el = tab === 'seq' ? $('seq-scroll') : tab === 'table' ? $('table-scroll') : null;
    if (!el) return;
    sizeSpacers(this);
    el.scrollTop = el.scrollHeight;
  }

  renderHead() {
    const m = this.meta;
    $('tv-id').textContent = this.id;
    $('tv-node').hidden = !clustered();
    $('tv-node').textContent = this.merged ? 'every node (*)' : `node ${this.node}`;
    $('tv-status').textContent = m.status || '';
    $('tv-status').className = `badge ${m.status === 'running' ? 'running' : 'stopped'}`;
    const level = (m.options && m.options.trace_level) || 'message';
    $('tv-stats').textContent = `${this.records.length - this.gaps} records here` +
      `${this.gaps ? ` · ${this.gaps} gap${this.gaps === 1 ? '' : 's'}` : ''} · ${m.records ?? '?'} held by the router` +
      `${m.dropped ? ` · ${m.dropped} dropped` : ''} · ${this.lanes.size} sessions · ${level} level` +
      (this.merged && this.nodeErrors && Object.keys(this.nodeErrors).length ?
        ` · not read: ${nodeErrorsText(this.nodeErrors)}` : '') +
      (this.merged ? clocksApartText() : '');
    $('tv-stop').disabled = m.status !== 'running';
    $('tv-mark').disabled = m.status !== 'running';
    $('tv-delete').disabled = m.status === 'running';
  }

  applySearch(q) {
    if (!q) {
      this.filtered = null;
      return;
    }
    this.needle = q.toLowerCase();
    const out = [];
    this.records.forEach((r, i) => {
      if (matches(r, this.needle)) out.push(i);
    });
    this.filtered = out;
  }

  // Action view rows: action records as they are, or CALL/PUBLISH actions built from the
  // message records of one correlation. Slowest first; pending ones last.
  buildActions() {
    const rows = [];
    for (const [i, r] of this.records.entries()) {
      if (isAction(r) && (r.action === 'call' || r.action === 'publish')) {
        rows.push({ idx: i, kind: r.action, uri: r.uri, who: r.originator, duration: r.duration,
          outcome: r.success ? 'ok' : 'error', error: r.error ?? null,
          responders: (r.responders || []).length });
      }
    }
    for (const c of this.corr.values()) {
      const a = this.records[c.anchor];
      if (!a || isAction(a) || (a.msg_type !== 'Call' && a.msg_type !== 'Publish')) continue;
      const last = c.last != null ? this.records[c.last] : null;
      const err = c.error != null ? this.records[c.error] : null;
      const responders = new Set();
      for (const i of c.idx) {
        const r = this.records[i];
        if (r.session_id !== a.session_id && !r.dropped) responders.add(r.session_id);
      }
      rows.push({
        idx: c.anchor, kind: a.msg_type.toLowerCase(), uri: a.uri, who: a,
        duration: last ? last.pc - a.pc : null,
        outcome: err ? 'error' : last ? 'ok' : 'pending',
        error: err && Array.isArray(err.msg) ? err.msg[4] : null,
        responders: responders.size,
      });
    }
    rows.sort((x, y) => (y.duration ?? -1) - (x.duration ?? -1));
    this.actions = rows;
  }
}

// The search: a substring of the record as JSON (its message included), case-insensitive. The
// lower-cased text is computed once per record, on the first search.
const searchText = new WeakMap();
function matches(r, needle) {
  let t = searchText.get(r);
  if (t === undefined) {
    t = JSON.stringify(r).toLowerCase();
    searchText.set(r, t);
  }
  return t.includes(needle);
}

function currentTab() {
  return document.querySelector('.tab.active').dataset.tab;
}

function openTrace(node, id) {
  if (app.view) app.view.closed = true;
  app.view = new TraceView(node, id);
  $('empty').hidden = true;
  $('trace-view').hidden = false;
  $('search').value = '';
  $('detail').hidden = true;
  setTableHead(app.view);
  $('seq-scroll').scrollTop = 0;
  $('table-scroll').scrollTop = 0;
  renderTraceList();
  app.view.renderHead();
  app.view.fetchMore();
  app.view.schedule();
}

function closeTrace() {
  if (app.view) app.view.closed = true;
  app.view = null;
  $('trace-view').hidden = true;
  $('empty').hidden = false;
  renderTraceList();
}

function sizeSpacers(v) {
  $('seq-spacer').style.height = `${v.records.length * ROW + PAD + 8}px`;
  $('seq-spacer').style.width = `${seqWidth(v)}px`;
  const n = v.filtered ? v.filtered.length : v.records.length;
  $('table-spacer').style.height = `${n * TROW}px`;
  if (v.actions) $('actions-spacer').style.height = `${v.actions.length * TROW}px`;
}

// ------------------------------------------------------------------------- sequence diagram --

// Columns: the session lanes grouped by realm, the router in the middle.
function seqColumns(v) {
  const n = v.laneOrder.length;
  const mid = Math.ceil(n / 2);
  const avail = $('seq-scroll').clientWidth - GUTTER - 20;
  const colW = Math.max(100, Math.min(240, avail / (n + 1)));
  const cols = new Map();
  let x = GUTTER + colW / 2;
  let routerX = x;
  for (let i = 0; i <= n; i++) {
    if (i === mid) {
      routerX = x;
      x += colW;
    }
    if (i < n) {
      cols.set(v.laneOrder[i][0], x);
      x += colW;
    }
  }
  return { cols, routerX, colW, width: x - colW / 2 + 20 };
}

function seqWidth(v) {
  return seqColumns(v).width;
}

function setupCanvas(canvas, w, h) {
  const dpr = window.devicePixelRatio || 1;
  if (canvas.width !== Math.round(w * dpr) || canvas.height !== Math.round(h * dpr)) {
    canvas.width = Math.round(w * dpr);
    canvas.height = Math.round(h * dpr);
    canvas.style.width = `${w}px`;
    canvas.style.height = `${h}px`;
  }
  const ctx = canvas.getContext('2d');
  ctx.setTransform(dpr, 0, 0, dpr, 0, 0);
  return ctx;
}

const COLORS = { rx: '#2f6fde', tx: '#0f9d76', err: '#d33a3a', hl: '#e08a00', marker: '#8a5a00' };

function arrow(ctx, x1, x2, y, color, width, dashed) {
  ctx.strokeStyle = color;
  ctx.fillStyle = color;
  ctx.lineWidth = width;
  ctx.setLineDash(dashed ? [4, 3] : []);
  ctx.beginPath();
  ctx.moveTo(x1, y);
  ctx.lineTo(x2, y);
  ctx.stroke();
  ctx.setLineDash([]);
  const d = x2 > x1 ? 1 : -1;
  ctx.beginPath();
  ctx.moveTo(x2, y);
  ctx.lineTo(x2 - d * 7, y - 4);
  ctx.lineTo(x2 - d * 7, y + 4);
  ctx.closePath();
  ctx.fill();
}

function drawSequence(v) {
  const scroll = $('seq-scroll');
  sizeSpacers(v);
  const w = scroll.clientWidth;
  const h = scroll.clientHeight;
  const canvas = $('seq-canvas');
  canvas.style.top = `${scroll.scrollTop}px`;
  canvas.style.left = `${scroll.scrollLeft}px`;
  const ctx = setupCanvas(canvas, w, h);
  const { cols, routerX, colW } = seqColumns(v);
  const sx = scroll.scrollLeft;
  const top = scroll.scrollTop;
  ctx.clearRect(0, 0, w, h);
  ctx.font = '12px ' + getComputedStyle(document.body).fontFamily;
  ctx.textBaseline = 'middle';

  // Lifelines: the lanes in view only (a trace of thousands of sessions has thousands).
  ctx.lineWidth = 1;
  for (const x of cols.values()) {
    if (x < sx - colW || x > sx + w + colW) continue;
    ctx.strokeStyle = '#e3e7ee';
    ctx.beginPath();
    ctx.moveTo(x - sx + 0.5, 0);
    ctx.lineTo(x - sx + 0.5, h);
    ctx.stroke();
  }
  ctx.fillStyle = '#eef2f9';
  ctx.fillRect(routerX - sx - 3, 0, 6, h);

  if (!v.records.length) {
    ctx.fillStyle = '#677287';
    ctx.textAlign = 'center';
    const what = v.meta.status === 'running' ? 'Waiting for records… (the trace captures what matches its filters)' : 'This trace holds no records.';
    ctx.fillText(what, (GUTTER + w) / 2, 60);
  }
  const first = Math.max(0, Math.floor((top - PAD) / ROW));
  const last = Math.min(v.records.length, Math.ceil((top + h - PAD) / ROW));
  const hl = v.hoverCorr || (v.selected != null ? v.records[v.selected]?.correlation : null);
  for (let i = first; i < last; i++) {
    const r = v.records[i];
    const y = PAD + i * ROW - top + ROW / 2;
    const related = hl && r.correlation === hl;
    if (i === v.selected) {
      ctx.fillStyle = '#e6eefc';
      ctx.fillRect(0, y - ROW / 2, w, ROW);
    } else if (related) {
      ctx.fillStyle = '#fff7e0';
      ctx.fillRect(0, y - ROW / 2, w, ROW);
    }
    ctx.globalAlpha = hl && !related ? 0.35 : 1;
    ctx.fillStyle = '#677287';
    ctx.textAlign = 'right';
    ctx.fillText(String(r.seq), 52, y);
    ctx.textAlign = 'left';
    ctx.fillText(clockTime(r.ts), 60, y);
    if (r.msg_type === 'Marker') {
      across(ctx, y, w, routerX - sx, COLORS.marker, [6, 4], `◆ ${r.uri}`);
    } else if (r.kind === 'gap') {
      // Records the trace cannot give (dropped before they were read, or lost on disk).
      across(ctx, y, w, routerX - sx, COLORS.err, [2, 4], gapText(r));
    } else if (isAction(r)) {
      const ox = r.originator ? cols.get(v.laneKey(r, r.originator)) : null;
      const color = related ? COLORS.hl : r.success ? COLORS.rx : COLORS.err;
      if (ox != null) arrow(ctx, ox - sx, routerX - sx, y, color, related ? 2.5 : 1.5, false);
      for (const x of r.responders || []) {
        const rx = cols.get(v.laneKey(r, x));
        if (rx != null) arrow(ctx, routerX - sx, rx - sx, y, related ? COLORS.hl : COLORS.tx, 1, true);
      }
      if (ox != null) label(ctx, `${recLabel(r)} · ${fmtMs(r.duration)} ms`, ox - sx, routerX - sx, y, color, colW);
    } else {
      const lx = cols.get(v.laneKey(r));
      if (lx == null) continue;
      const bad = r.msg_type === 'Error' || r.msg_type === 'Abort' || r.dropped;
      const color = related ? COLORS.hl : bad ? COLORS.err : r.direction === 'rx' ? COLORS.rx : COLORS.tx;
      const [x1, x2] = r.direction === 'rx' ? [lx, routerX] : [routerX, lx];
      arrow(ctx, x1 - sx, x2 - sx, y, color, related ? 2.5 : 1.5, !!r.dropped);
      label(ctx, recLabel(r) + (r.dropped ? ` (dropped: ${r.dropped})` : ''), x1 - sx, x2 - sx, y, color, colW);
    }
    ctx.globalAlpha = 1;
  }
  drawSeqHead(v, cols, routerX, colW, sx);
}

// A dashed line across the diagram at y (a marker, a gap), its label boxed at x.
function across(ctx, y, w, x, color, dash, label) {
  ctx.strokeStyle = color;
  ctx.setLineDash(dash);
  ctx.beginPath();
  ctx.moveTo(GUTTER, y);
  ctx.lineTo(w, y);
  ctx.stroke();
  ctx.setLineDash([]);
  ctx.fillStyle = '#fff';
  const tw = ctx.measureText(label).width;
  ctx.fillRect(x - tw / 2 - 6, y - 8, tw + 12, 16);
  ctx.fillStyle = color;
  ctx.textAlign = 'center';
  ctx.fillText(label, x, y);
}

// The arrow's label, above its middle, cut to the arrow's length.
function label(ctx, text, x1, x2, y, color, colW) {
  const span = Math.max(Math.abs(x2 - x1) - 16, colW * 1.5);
  let t = text;
  if (ctx.measureText(t).width > span) {
    while (t.length > 4 && ctx.measureText(t + '…').width > span) t = t.slice(0, -1);
    t += '…';
  }
  const mx = (x1 + x2) / 2;
  const tw = ctx.measureText(t).width;
  ctx.fillStyle = 'rgba(255,255,255,0.85)';
  ctx.fillRect(mx - tw / 2 - 3, y - 13, tw + 6, 11);
  ctx.fillStyle = color;
  ctx.textAlign = 'center';
  ctx.font = '11px ' + getComputedStyle(document.body).fontFamily;
  ctx.fillText(t, mx, y - 7);
  ctx.font = '12px ' + getComputedStyle(document.body).fontFamily;
}

function drawSeqHead(v, cols, routerX, colW, sx) {
  const head = $('seq-head');
  const w = head.clientWidth;
  const ctx = setupCanvas($('seq-head-canvas'), w, 58);
  ctx.clearRect(0, 0, w, 58);
  const font = getComputedStyle(document.body).fontFamily;
  ctx.textAlign = 'center';
  ctx.textBaseline = 'middle';
  // Realm groups (a group split by the router column shows twice).
  let group = null;
  const groups = [];
  for (const [key, lane] of v.laneOrder) {
    const x = cols.get(key);
    const crossesRouter = group && group.x1 < routerX && x > routerX;
    if (!group || group.realm !== lane.realm || crossesRouter) {
      group = { realm: lane.realm, x0: x, x1: x };
      groups.push(group);
    }
    group.x1 = x;
  }
  for (const g of groups) {
    const x0 = g.x0 - colW / 2 + 4 - sx;
    const x1 = g.x1 + colW / 2 - 4 - sx;
    ctx.fillStyle = '#f0f3f8';
    ctx.fillRect(x0, 4, x1 - x0, 16);
    ctx.fillStyle = '#556077';
    ctx.font = `600 11px ${font}`;
    ctx.fillText(`realm ${g.realm}`, (x0 + x1) / 2, 12);
  }
  for (const [key, lane] of v.laneOrder) {
    const x = cols.get(key) - sx;
    if (x < -colW || x > w + colW) continue; // (in view only: each label is measured to fit)
    ctx.font = `600 12px ${font}`;
    ctx.fillStyle = '#1d2430';
    ctx.fillText(fit(ctx, lane.authid || String(lane.session), colW - 10), x, 32);
    ctx.font = `11px ${font}`;
    ctx.fillStyle = '#677287';
    const node = v.merged && lane.node != null ? `${lane.node} · ` : '';
    ctx.fillText(fit(ctx, `${node}${lane.session}${lane.authrole ? ' · ' + lane.authrole : ''}`, colW - 10), x, 47);
  }
  ctx.fillStyle = '#18202e';
  const rw = Math.min(colW - 16, 110);
  ctx.beginPath();
  ctx.roundRect(routerX - sx - rw / 2, 24, rw, 28, 6);
  ctx.fill();
  ctx.fillStyle = '#fff';
  ctx.font = `600 12px ${font}`;
  ctx.fillText('router', routerX - sx, 38);
  ctx.textAlign = 'left';
  ctx.fillStyle = '#677287';
  ctx.font = `600 11px ${font}`;
  ctx.fillText('SEQ', 24, 38);
  ctx.fillText('TIME (UTC)', 60, 38);
}

function fit(ctx, text, width) {
  let t = text;
  if (ctx.measureText(t).width <= width) return t;
  while (t.length > 3 && ctx.measureText(t + '…').width > width) t = t.slice(0, -1);
  return t + '…';
}

function seqRowAt(ev) {
  const scroll = $('seq-scroll');
  const rect = scroll.getBoundingClientRect();
  const y = ev.clientY - rect.top + scroll.scrollTop - PAD;
  const i = Math.floor(y / ROW);
  return app.view && i >= 0 && i < app.view.records.length ? i : null;
}

function initSequence() {
  const scroll = $('seq-scroll');
  scroll.addEventListener('scroll', () => app.view && drawSequence(app.view));
  scroll.addEventListener('mousemove', (ev) => {
    const v = app.view;
    if (!v) return;
    const i = seqRowAt(ev);
    const c = i != null ? v.records[i].correlation || null : null;
    if (c !== v.hoverCorr) {
      v.hoverCorr = c;
      drawSequence(v);
    }
  });
  scroll.addEventListener('mouseleave', () => {
    if (app.view && app.view.hoverCorr) {
      app.view.hoverCorr = null;
      drawSequence(app.view);
    }
  });
  scroll.addEventListener('click', (ev) => {
    const i = seqRowAt(ev);
    if (i != null) selectRecord(i);
  });
  scroll.addEventListener('wheel', () => { $('follow').checked = false; }, { passive: true });
}

// ---------------------------------------------------------------------------------- tables --

const TABLE_COLS = '56px 118px 34px 104px 80px 136px 96px 90px minmax(160px,1fr) 84px 70px';
const TABLE_NAMES = ['seq', 'time (UTC)', 'dir', 'type', 'realm', 'session', 'authid', 'authrole', 'uri',
  'correlation', 'size'];
// A merged trace's table has a node column after seq.
const tableCols = (v) => (v && v.merged ? '56px 96px ' + TABLE_COLS.slice(5) : TABLE_COLS);

function setTableHead(v) {
  const names = v && v.merged ? ['seq', 'node', ...TABLE_NAMES.slice(1)] : TABLE_NAMES;
  $('table-head').style.gridTemplateColumns = tableCols(v);
  $('table-head').innerHTML = names.map((c) => `<span>${c}</span>`).join('');
}

function drawTable(v) {
  const scroll = $('table-scroll');
  sizeSpacers(v);
  const idx = v.filtered;
  const n = idx ? idx.length : v.records.length;
  const first = Math.max(0, Math.floor(scroll.scrollTop / TROW) - 5);
  const last = Math.min(n, Math.ceil((scroll.scrollTop + scroll.clientHeight) / TROW) + 5);
  const hl = v.selected != null ? v.records[v.selected]?.correlation : null;
  const cols = tableCols(v);
  let html = '';
  for (let k = first; k < last; k++) {
    const i = idx ? idx[k] : k;
    const r = v.records[i];
    const cls = `trow${i === v.selected ? ' selected' : hl && r.correlation === hl ? ' hl' : ''}`;
    const seq = `<span class="num">${r.seq}</span>` + (v.merged ? `<span class="node">${esc(r.node_id)}</span>` : '');
    if (isAction(r)) {
      html += `<div class="${cls}" data-i="${i}" style="top:${k * TROW}px;grid-template-columns:${cols}">` +
        `${seq}<span class="mono">${clockTime(r.ts)}</span><span></span>` +
        `<span>${esc(r.action)}</span><span>${esc(r.realm)}</span>` +
        `<span class="mono">${esc(r.originator?.session_id)}</span><span>${esc(r.originator?.authid)}</span>` +
        `<span>${esc(r.originator?.authrole)}</span><span class="mono">${esc(r.uri)}</span>` +
        `<span class="mono">${esc((r.correlation || '').slice(0, 8))}</span>` +
        `<span class="num ${r.success ? 'good' : 'bad'}">${fmtMs(r.duration)} ms</span></div>`;
      continue;
    }
    const bad = r.msg_type === 'Error' || r.msg_type === 'Abort' || r.dropped || r.kind === 'gap';
    html += `<div class="${cls}" data-i="${i}" style="top:${k * TROW}px;grid-template-columns:${cols}">` +
      `${seq}<span class="mono">${clockTime(r.ts)}</span>` +
      `<span class="dir-${esc(r.direction)}">${esc(r.direction || '')}</span>` +
      `<span class="${bad ? 'bad' : ''}">${esc(r.msg_type)}</span><span>${esc(r.realm ?? '')}</span>` +
      `<span class="mono">${esc(r.session_id ?? '')}</span><span>${esc(r.authid ?? '')}</span>` +
      `<span>${esc(r.authrole ?? '')}</span>` +
      `<span class="mono">${esc(r.kind === 'gap' ? gapText(r) : r.uri ?? '')}</span>` +
      `<span class="mono">${esc((r.correlation || '').slice(0, 8))}</span>` +
      `<span class="num">${esc(fmtBytes(recSize(r)))}</span></div>`;
  }
  $('table-rows').innerHTML = html;
}

function drawActions(v) {
  if (!v.actions) v.buildActions();
  const scroll = $('actions-scroll');
  sizeSpacers(v);
  const rows = v.actions;
  const first = Math.max(0, Math.floor(scroll.scrollTop / TROW) - 5);
  const last = Math.min(rows.length, Math.ceil((scroll.scrollTop + scroll.clientHeight) / TROW) + 5);
  let html = '';
  for (let k = first; k < last; k++) {
    const a = rows[k];
    const r = v.records[a.idx];
    const outcome = a.outcome === 'ok' ? '<span class="good">ok</span>' :
      a.outcome === 'error' ? '<span class="bad">error</span>' : '<span class="muted">pending</span>';
    html += `<div class="trow${a.idx === v.selected ? ' selected' : ''}" data-i="${a.idx}" ` +
      `style="top:${k * TROW}px;grid-template-columns:${ACTION_COLS}">` +
      `<span>${esc(a.kind)}</span><span class="mono">${esc(a.uri ?? '')}</span>` +
      `<span class="num">${a.duration != null ? fmtMs(a.duration) + ' ms' : ''}</span>${outcome}` +
      `<span class="mono bad">${esc(a.error ?? '')}</span>` +
      `<span>${esc(r.realm ?? '')}</span><span class="mono">${esc(a.who?.session_id ?? '')}</span>` +
      `<span>${esc(a.who?.authid ?? '')}</span><span class="num">${a.responders}</span>` +
      `<span class="num">${r.seq}</span></div>`;
  }
  $('actions-rows').innerHTML = html;
}

const ACTION_COLS = '64px minmax(180px,1fr) 90px 64px minmax(150px,1fr) 80px 136px 96px 80px 56px';

function initTables() {
  setTableHead(null);
  $('actions-head').style.gridTemplateColumns = ACTION_COLS;
  $('actions-head').innerHTML = ['action', 'uri', 'duration', 'outcome', 'error', 'realm',
    'session', 'authid', 'responders', 'seq'].map((c) => `<span>${c}</span>`).join('');
  for (const [scroll, rows, draw] of [['table-scroll', 'table-rows', drawTable],
    ['actions-scroll', 'actions-rows', drawActions]]) {
    $(scroll).addEventListener('scroll', () => app.view && draw(app.view));
    $(scroll).addEventListener('wheel', () => { $('follow').checked = false; }, { passive: true });
    $(rows).addEventListener('click', (ev) => {
      const row = ev.target.closest('[data-i]');
      if (row) selectRecord(Number(row.dataset.i));
    });
  }
  let timer;
  $('search').addEventListener('input', () => {
    clearTimeout(timer);
    timer = setTimeout(() => {
      if (!app.view) return;
      app.view.applySearch($('search').value.trim());
      $('table-scroll').scrollTop = 0;
      if (currentTab() !== 'table') setTab('table');
      app.view.schedule();
    }, 150);
  });
  document.querySelectorAll('.tab').forEach((b) => b.addEventListener('click', () => setTab(b.dataset.tab)));
}

function setTab(tab) {
  document.querySelectorAll('.tab').forEach((b) => b.classList.toggle('active', b.dataset.tab === tab));
  $('pane-seq').hidden = tab !== 'seq';
  $('pane-table').hidden = tab !== 'table';
  $('pane-actions').hidden = tab !== 'actions';
  if (app.view) app.view.render();
}

// ----------------------------------------------------------------------------------- detail --

function selectRecord(i) {
  const v = app.view;
  if (!v) return;
  v.selected = i;
  const r = v.records[i];
  const d = $('detail');
  d.hidden = false;
  const f = [];
  const add = (k, val) => { if (val !== undefined && val !== null && val !== '') f.push([k, val]); };
  if (isAction(r)) {
    $('detail-title').textContent = `Action #${r.seq}`;
    add('node', r.node_id);
    add('action', r.action);
    add('uri', r.uri);
    add('realm', r.realm);
    add('time', `${new Date(r.ts * 1000).toISOString()}`);
    add('duration', `${fmtMs(r.duration)} ms`);
    add('success', String(r.success));
    add('error', r.error);
    add('originator', `${r.originator?.session_id} · ${r.originator?.authid ?? '-'} (${r.originator?.authrole ?? '-'})`);
    add('responders', (r.responders || []).map((x) => `${x.session_id} ${x.authid ?? ''}`).join(', ') || 'none');
    add('correlation', r.correlation);
  } else {
    $('detail-title').textContent = `${r.msg_type} #${r.seq}`;
    add('node', r.node_id);
    add('direction', r.direction === 'rx' ? 'rx (received by the router)' : r.direction === 'tx' ? 'tx (sent by the router)' : r.direction);
    add('uri', r.uri);
    add('time', typeof r.ts === 'number' ? new Date(r.ts * 1000).toISOString() : '');
    add('pc', r.pc);
    add('realm', r.realm);
    add('session', r.session_id);
    add('authid', r.authid);
    add('authrole', r.authrole);
    add('correlation', r.correlation ? `${r.correlation}${r.correlation_is_anchor ? ' · anchor' : ''}${r.correlation_is_last ? ' · last' : ''}` : '');
    add('dropped', r.dropped);
    if (r.serializations) {
      add('size', Object.entries(r.serializations).map(([k, n]) => `${k} ${n} B`).join(' · '));
    }
  }
  $('detail-fields').innerHTML = f.map(([k, val]) => `<dt>${esc(k)}</dt><dd>${esc(val)}</dd>`).join('');
  $('detail-msg').innerHTML = prettyJson(isAction(r) ? r : r.msg);
  v.render();
}

// ---------------------------------------------------------------------------------- actions --

function initTraceActions() {
  $('tv-stop').addEventListener('click', async () => {
    const v = app.view;
    try {
      const meta = await api(v.node, 'stop_trace', v.id);
      if (v.merged) {
        const failed = nodeErrorsText(meta);
        if (failed) toast(`stop_trace: ${failed}`);
      } else {
        v.meta = meta;
        v.renderHead();
      }
      refreshTraces();
    } catch (e) {
      toast(`stop_trace: ${errText(e)}`);
    }
  });
  $('tv-mark').addEventListener('click', async () => {
    const name = $('tv-mark-name').value.trim() || 'mark';
    try {
      const v = app.view;
      const seq = await api(v.node, 'mark_trace', v.id, name, {});
      $('tv-mark-name').value = '';
      if (!v.merged) {
        toast(`marker "${name}" at seq ${seq}`, false);
      } else {
        const failed = nodeErrorsText(seq);
        const at = Object.entries(seq).filter(([, x]) => typeof x === 'number').map(([n, x]) => `${n} ${x}`);
        toast(`marker "${name}"${at.length ? ` at seq ${at.join(', ')}` : ''}${failed ? `; not on ${failed}` : ''}`, !!failed);
      }
    } catch (e) {
      toast(`mark_trace: ${errText(e)}`);
    }
  });
  $('tv-delete').addEventListener('click', async (ev) => {
    const b = ev.currentTarget;
    if (!b.dataset.armed) {
      b.dataset.armed = '1';
      b.textContent = 'Really delete?';
      setTimeout(() => { delete b.dataset.armed; b.textContent = 'Delete'; }, 4000);
      return;
    }
    delete b.dataset.armed;
    b.textContent = 'Delete';
    try {
      const v = app.view;
      const answer = await api(v.node, 'delete_trace', v.id);
      const failed = v.merged ? nodeErrorsText(answer) : '';
      if (failed) toast(`delete_trace: ${failed}`);
      closeTrace();
      refreshTraces();
    } catch (e) {
      toast(`delete_trace: ${errText(e)}`);
    }
  });
  $('tv-download').addEventListener('click', () => download(app.view.node, app.view.id));
  $('detail-close').addEventListener('click', () => {
    $('detail').hidden = true;
    if (app.view) {
      app.view.selected = null;
      app.view.render();
    }
  });
  $('follow').addEventListener('change', () => app.view && app.view.schedule());
  window.addEventListener('resize', () => app.view && app.view.schedule());
}

// JSON Lines, built here from get_trace_data pages: one record per line, as the API returns it
// (node "*": the merged pages, records with their node_id). The seqs the trace (node "*": each
// node's) held when the download began, and no further (a busy trace is not chased); what the
// trace drops before a page reads it gets a gap item where it was (reason "dropped", as
// wampscope-ctl's export writes it; node "*": naming the node).
async function download(node, id) {
  const b = $('tv-download');
  b.disabled = true;
  try {
    const lines = [];
    let records = 0, missing = 0;
    const out = {
      add(r) {
        lines.push(JSON.stringify(r));
        records += r.kind === 'gap' ? 0 : 1;
      },
      gap(g) {
        lines.push(JSON.stringify(g));
        missing += g.to_seq - g.from_seq + 1;
      },
      progress() {
        b.textContent = `Downloading… ${records}`;
      },
    };
    const failed = node === '*' ? await readMerged(id, out) : await readNode(node, id, out);
    const blob = new Blob(lines.map((l) => l + '\n'), { type: 'application/x-ndjson' });
    const a = document.createElement('a');
    a.href = URL.createObjectURL(blob);
    a.download = `${id}.jsonl`;
    document.body.appendChild(a);
    a.click();
    a.remove();
    setTimeout(() => URL.revokeObjectURL(a.href), 10000);
    toast(`${id}.jsonl: ${records} records` +
      (missing ? `; ${missing} dropped before they could be read (marked as gaps)` : '') +
      (failed.size ? `; not read: ${[...failed].join(', ')}` : ''), !!(missing || failed.size));
  } catch (e) {
    toast(`download: ${errText(e)}`);
  } finally {
    b.disabled = false;
    b.textContent = 'Download JSON Lines';
  }
}

// download() of one node's trace into out; the nodes not read (none).
async function readNode(node, id, out) {
  const m = await api(node, 'get_trace', id);
  let from = m.first_seq;
  const to = m.next_seq - 1;
  while (from <= to) {
    const page = await api(node, 'get_trace_data', id, from, to, PAGE);
    if (!page.length) break;
    for (const r of page) {
      const g = gapBefore(r, from);
      if (g) out.gap(g);
      from = r.seq + 1;
      out.add(r);
    }
    out.progress();
  }
  if (from <= to) out.gap(droppedItem(from, to));
  return new Set();
}

// download() of a trace of every node into out: the merged pages, of each node the seqs from the
// first_seq to the next_seq its trace had when the download began (get_trace "*"; the pages'
// to_seq, so that no node's records wait for another's clock); a node that answers an error is
// left out from then on. Returns the nodes left out.
async function readMerged(id, out) {
  const nodeNext = new Map(), failed = new Set(), to = {}; // to: node -> its last seq held
  for (const [n, m] of Object.entries(await api('*', 'get_trace', id) || {})) {
    if (!m || typeof m.next_seq !== 'number') {
      failed.add(n);
    } else if (m.next_seq > m.first_seq) {
      nodeNext.set(n, m.first_seq);
      to[n] = m.next_seq - 1;
    }
  }
  const reached = (next) => Object.entries(to).every(([n, last]) => failed.has(n) || (next[n] ?? 0) > last);
  let cursor = 0;
  for (;;) {
    const page = await api('*', 'get_trace_data', id, cursor, to, PAGE);
    cursor = page.next;
    for (const n of Object.keys(page.errors || {})) failed.add(n);
    for (const r of page.records) {
      const g = nodeGapBefore(nodeNext, r);
      if (g) out.gap(g);
      out.add(r);
    }
    out.progress();
    if (!page.records.length || reached(cursor)) break;
  }
  for (const [n, last] of Object.entries(to)) {
    if (!failed.has(n) && nodeNext.get(n) <= last) out.gap({ ...droppedItem(nodeNext.get(n), last), node_id: n });
  }
  return failed;
}

initLogin();
initTraceList();
initSequence();
initTables();
initTraceActions();
