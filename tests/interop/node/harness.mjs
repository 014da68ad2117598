// Shared harness for the autobahn-js interop tests (node --test).
//
// startRouter() runs $RT_ROUTER_BIN -c $RT_SOURCE_DIR/configs/test-e2e.json --port 0 --ports-file
// <tmp>/ports on 127.0.0.1 and reads its URL; router.stop() sends SIGTERM and requires exit status
// 0 within 5 s with no sanitizer report on stderr. openSession() returns a joined autobahn session.

import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import { createRequire } from 'node:module';
import os from 'node:os';
import path from 'node:path';

import autobahn from 'autobahn';

// Node >= 22 has a global WebSocket, which autobahn-js would prefer over the `ws` module; keep the
// tests on `ws` (what autobahn-js uses on Node 18/20) so every Node version runs the same client.
delete globalThis.WebSocket;

// autobahn-js logs every connection close with console.warn; keep test output readable unless
// RT_E2E_VERBOSE is set.
if (!process.env.RT_E2E_VERBOSE) {
  autobahn.log.warn = () => {};
}

export { autobahn };

export const SERIALIZERS = ['json', 'msgpack'];
export const MAX_MESSAGE_SIZE = 4 * 1024 * 1024; // configs/test-e2e.json
const START_TIMEOUT_MS = 15000;
const STOP_TIMEOUT_MS = 5000;
export const STEP_TIMEOUT_MS = 15000;
const SANITIZER_MARKERS = ['ERROR: AddressSanitizer', 'LeakSanitizer', 'runtime error:'];

const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

// Rejects if p does not settle within ms; `what` names the step in the failure.
export function step(p, what = 'step', ms = STEP_TIMEOUT_MS) {
  let timer;
  const timeout = new Promise((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: timed out after ${ms} ms`)), ms);
  });
  return Promise.race([Promise.resolve(p), timeout]).finally(() => clearTimeout(timer));
}

// config: a file under configs/ (default the shared e2e config), or an absolute path; env: more
// environment variables for the router (e.g. LD_PRELOAD).
export async function startRouter(config = 'configs/test-e2e.json', env = null) {
  const bin = process.env.RT_ROUTER_BIN;
  const src = process.env.RT_SOURCE_DIR;
  assert.ok(bin && src, 'RT_ROUTER_BIN and RT_SOURCE_DIR must be set (run via ctest)');
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wampscope-node-'));
  const portsFile = path.join(tmp, 'ports');
  let argv = [bin, '-c', path.isAbsolute(config) ? config : path.join(src, config), '--port', '0',
    '--ports-file', portsFile];
  if (process.env.RT_E2E_LOG_LEVEL) {
    argv.push('--log-level', process.env.RT_E2E_LOG_LEVEL);
  }
  // setpriv --pdeathsig: the router dies with this test process (Node has no prctl of its own).
  if (fs.existsSync('/usr/bin/setpriv')) {
    argv = ['/usr/bin/setpriv', '--pdeathsig', 'KILL', '--', ...argv];
  }
  const proc = spawn(argv[0], argv.slice(1), { cwd: tmp, stdio: ['ignore', 'pipe', 'pipe'],
    env: env ? { ...process.env, ...env } : process.env });
  const router = { proc, tmp, stdout: '', stderr: '', exited: null };
  proc.stdout.setEncoding('utf8').on('data', (d) => { router.stdout += d; });
  proc.stderr.setEncoding('utf8').on('data', (d) => { router.stderr += d; });
  router.exited = new Promise((resolve) => {
    proc.on('exit', (code, signal) => resolve({ code, signal }));
  });
  let status = null;
  router.exited.then((s) => { status = s; });

  const deadline = Date.now() + START_TIMEOUT_MS;
  try {
    for (;;) {
      let urls = [];
      try {
        urls = fs.readFileSync(portsFile, 'utf8').split('\n').map((l) => l.trim()).filter(Boolean);
      } catch {
        // not written yet
      }
      if (urls.length) {
        router.url = urls.find((u) => u.startsWith('ws://'));
        assert.ok(router.url, `no ws:// URL in ports file: ${urls}`);
        assert.match(router.url, /^ws:\/\/127\.0\.0\.1:\d+\//);
        break;
      }
      if (status) {
        throw new Error(`router exited early (${JSON.stringify(status)})\n${router.stderr}`);
      }
      if (Date.now() > deadline) {
        throw new Error(`router wrote no ports file in ${START_TIMEOUT_MS} ms\n${router.stderr}`);
      }
      await sleep(20);
    }
  } catch (e) {
    proc.kill('SIGKILL');
    fs.rmSync(tmp, { recursive: true, force: true });
    throw e;
  }

  router.stop = async () => {
    try {
      if (!status) {
        proc.kill('SIGTERM');
      }
      let timer;
      const result = await Promise.race([
        router.exited,
        new Promise((resolve) => { timer = setTimeout(() => resolve(null), STOP_TIMEOUT_MS); }),
      ]);
      clearTimeout(timer);
      if (!result) {
        proc.kill('SIGKILL');
        throw new Error(`router did not exit within ${STOP_TIMEOUT_MS} ms of SIGTERM\n${router.stderr}`);
      }
      await new Promise((resolve) => setImmediate(resolve)); // let the last stderr chunks land
      const reports = SANITIZER_MARKERS.filter((m) => router.stderr.includes(m));
      assert.ok(result.code === 0 && reports.length === 0,
        `router exit ${JSON.stringify(result)}, sanitizer reports ${reports}\n${router.stderr}`);
    } finally {
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  };
  return router;
}

function makeSerializer(name) {
  if (name === 'json') return new autobahn.serializer.JSONSerializer();
  if (name === 'msgpack') return new autobahn.serializer.MsgpackSerializer();
  if (name === 'cbor') return new autobahn.serializer.CBORSerializer();
  throw new Error(`unknown serializer ${name}`);
}

// Opens a connection and resolves with { session, connection, closed } once joined. closed
// resolves with { reason, details } when the connection goes away (GOODBYE, ABORT or loss).
// With joinExpected false, resolves once the connection closes instead (for ABORT tests).
// es6Promises false makes autobahn-js use when.js deferreds, whose promises report progressive
// call results (ES6 promises have no progress channel).
// auth: extra Connection options (authmethods, authid, authextra, onchallenge).
export function openSession(router, {
  realm = 'realm1', serializer = 'json', joinExpected = true, es6Promises = true, auth = {},
} = {}) {
  const connection = new autobahn.Connection({
    ...auth,
    url: router.url,
    realm,
    serializers: [makeSerializer(serializer)],
    max_retries: 0,
    retry_if_unreachable: false,
    use_es6_promises: es6Promises,
    // Errors thrown on purpose by test procedures (autobahn.Error) are expected; others show up.
    on_user_error: (err, msg) => {
      if (!(err instanceof autobahn.Error)) console.error(msg, err);
    },
  });
  let onClosed;
  const closed = new Promise((resolve) => { onClosed = resolve; });
  const joined = new Promise((resolve, reject) => {
    connection.onopen = (session, details) => resolve({ session, details });
    connection.onclose = (reason, details) => {
      onClosed({ reason, details });
      if (joinExpected) {
        reject(new Error(`connection closed before join: ${reason} ${JSON.stringify(details)}`));
      } else {
        resolve(null);
      }
      return true; // never reconnect
    };
  });
  openingConnection = connection;
  try {
    connection.open();
  } finally {
    openingConnection = null;
  }
  return step(joined, `join ${realm} (${serializer})`).then((j) => ({
    connection,
    session: j && j.session,
    details: j && j.details,
    closed,
    // Leaves with GOODBYE and waits for the connection to close.
    async close() {
      if (connection.session && connection.session.isOpen) {
        connection.close();
      } else if (connection._transport) {
        connection._transport.close();
      }
      return step(closed, 'close');
    },
    // Drops the TCP connection without GOODBYE or WebSocket close handshake.
    abort() {
      const ws = findWs(connection);
      assert.ok(ws, 'no ws socket recorded for this connection');
      ws.terminate();
    },
  }));
}

// autobahn-js keeps its `ws` socket in a closure. To drop a connection abruptly, the `ws` module
// that autobahn-js requires is replaced by a subclass that remembers which Connection opened it
// (autobahn-js creates the socket synchronously inside Connection.open()).
const require = createRequire(import.meta.url);
const WsBase = require('ws');
const liveSockets = new Set();
let openingConnection = null;
class TrackedWs extends WsBase {
  constructor(...args) {
    super(...args);
    this.autobahnConnection = openingConnection;
    liveSockets.add(this);
    this.on('close', () => liveSockets.delete(this));
  }
}
require.cache[require.resolve('ws')].exports = TrackedWs;

function findWs(connection) {
  for (const ws of liveSockets) {
    if (ws.autobahnConnection === connection) return ws;
  }
  return null;
}

// Closes the clients (openSession() results) newest first; one that cannot close cleanly is
// aborted, so that it cannot hide the router's status.
export async function closeClients(clients) {
  for (const c of [...clients].reverse()) {
    try {
      await c.close();
    } catch {
      c.abort();
    }
  }
}

// A fixture for node:test: each test gets a fresh router; sessions opened through fx.open() are
// closed before the router is stopped (and the stop asserts exit 0).
export function fixture(config) {
  const fx = { router: null, clients: [] };
  fx.setUp = async () => {
    fx.router = await startRouter(config);
    fx.clients = [];
  };
  fx.tearDown = async () => {
    if (!fx.router) return; // setUp failed and reported it
    try {
      await closeClients(fx.clients);
    } finally {
      const { router } = fx;
      fx.router = null;
      await router.stop();
    }
  };
  fx.open = async (opts) => {
    const c = await openSession(fx.router, opts);
    fx.clients.push(c);
    return c.session;
  };
  fx.openClient = async (opts) => {
    const c = await openSession(fx.router, opts);
    fx.clients.push(c);
    return c;
  };
  return fx;
}

// Records events and lets a test wait until n have arrived.
export class Collector {
  constructor() {
    this.events = [];
    this.waiters = [];
    this.handler = (args, kwargs) => {
      this.events.push({ args, kwargs });
      this.waiters = this.waiters.filter((w) => {
        if (this.events.length >= w.n) {
          w.resolve(this.events);
          return false;
        }
        return true;
      });
    };
  }

  waitFor(n) {
    if (this.events.length >= n) return Promise.resolve(this.events);
    return step(new Promise((resolve) => this.waiters.push({ n, resolve })), `wait for ${n} events`);
  }
}

// Values whose exact round trip is checked (unicode incl. outside the BMP, nesting, 2^53 edges).
export const ARGS = ['héllo wörld ✓', '日本語', '🎉 emoji', 0, -1, 2 ** 53, -(2 ** 53), 1.5, true, false,
  null, [1, [2, [3, { deep: ['x'] }]]], {}, [], ''];
export const KWARGS = {
  'ünï': 'cödé', nested: { a: [1, 2, { b: null }], c: { d: { e: 'f' } } }, num: 123456789,
  neg: -42, flt: -0.25, flag: true, empty: {},
};

export function randomString(n) {
  const alphabet = 'abcdefghijklmnopqrstuvwxyzABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789';
  const out = new Array(n);
  for (let i = 0; i < n; i++) out[i] = alphabet[(Math.random() * alphabet.length) | 0];
  return out.join('');
}

let uriCounter = 0;
export function uniqueUri(suffix) {
  uriCounter += 1;
  return `com.wampscope.node.${process.pid}.${uriCounter}.${suffix}`;
}
