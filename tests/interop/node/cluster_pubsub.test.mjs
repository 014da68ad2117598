// Publish/subscribe across two wampscope nodes linked by a real nats-server (JetStream, ephemeral
// port, temp store), with autobahn-js clients: a subscriber on node B (msgpack) gets the events a
// publisher on node A (json) sends, once each, with the publisher's payload and one publication
// id; a wildcard subscription on B matches with the broker's rules. Skipped when nats-server is
// not installed.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';
import { after, before, describe, it } from 'node:test';

import { ARGS, KWARGS, openSession, startRouter, step, uniqueUri } from './harness.mjs';

const NATS_BIN = ['/usr/sbin/nats-server', '/usr/bin/nats-server'].find((p) => fs.existsSync(p));
const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

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

async function waitFor(pred, what, ms = 15000) {
  const deadline = Date.now() + ms;
  while (!pred()) {
    if (Date.now() > deadline) throw new Error(`${what}: not within ${ms} ms`);
    await sleep(20);
  }
}

function nodeConfig(tmp, id, natsPort) {
  const cfg = {
    version: 2,
    controller: { id },
    workers: [{
      type: 'router',
      realms: [{ name: 'realm1', roles: [{ name: 'anonymous', permissions: [{
        uri: '', match: 'prefix',
        allow: { call: true, register: true, publish: true, subscribe: true },
      }] }] }],
      transports: [{ type: 'websocket', endpoint: { type: 'tcp', port: 0, interface: '127.0.0.1' } }],
      wampscope: {
        management: { enabled: false },
        tracing: { flight_recorder: false },
        cluster: {
          name: `n${process.pid}`, heartbeat_interval: 500, node_ttl: 2000, request_timeout: 1000,
          nats: { servers: [`nats://127.0.0.1:${natsPort}`] },
        },
      },
    }],
  };
  const file = path.join(tmp, `${id}.json`);
  fs.writeFileSync(file, JSON.stringify(cfg));
  return file;
}

describe('pubsub across two cluster nodes', { skip: !NATS_BIN && 'nats-server not installed' }, () => {
  let tmp;
  let nats;
  let routers = [];
  const clients = [];

  before(async () => {
    tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wampscope-node-cluster-'));
    const port = await freePort();
    nats = spawn(NATS_BIN, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd', path.join(tmp, 'js')],
      { stdio: 'ignore' });
    await waitFor(() => {
      const s = net.connect(port, '127.0.0.1');
      s.on('error', () => {});
      s.on('connect', () => { nats.ready = true; s.destroy(); });
      return nats.ready;
    }, 'nats-server up');
    routers = [await startRouter(nodeConfig(tmp, 'node_a', port)),
      await startRouter(nodeConfig(tmp, 'node_b', port))];
    for (const r of routers) {
      await waitFor(() => /nodes \(2\): node_a, node_b/.test(r.stderr), 'both nodes joined');
    }
  });

  after(async () => {
    for (const c of clients.reverse()) {
      try {
        await c.close();
      } catch {
        c.abort();
      }
    }
    try {
      for (const r of routers) await r.stop();
    } finally {
      nats.kill('SIGTERM');
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  });

  async function open(router, serializer) {
    const c = await openSession(router, { serializer });
    clients.push(c);
    return c.session;
  }

  it('delivers events from node A to subscribers on node B once each', async () => {
    const [a, b] = routers;
    const base = uniqueUri('c');
    const pub = await open(a, 'json');
    const sub = await open(b, 'msgpack');
    const exact = [];
    const wild = [];
    await step(sub.subscribe(`${base}.x`, (args, kwargs, details) => {
      exact.push({ args, kwargs, details });
    }), 'subscribe exact');
    await step(sub.subscribe(`${base}.`, (args, kwargs, details) => {
      wild.push({ args, kwargs, details });
    }, { match: 'wildcard' }), 'subscribe wildcard');
    // Node A learns B's subscriptions over NATS: probe until one arrives.
    for (let n = 0; !exact.some((e) => e.args[0] === 'probe'); n++) {
      assert.ok(n < 200, 'subscriptions never reached node A');
      await step(pub.publish(`${base}.x`, ['probe', n], {}, { acknowledge: true }), 'probe');
      await sleep(50);
    }
    await waitFor(() => wild.some((e) => e.args[0] === 'probe'), 'wildcard probe');
    exact.length = 0;
    wild.length = 0;
    const published = await step(pub.publish(`${base}.x`, ARGS, KWARGS, { acknowledge: true }),
      'publish');
    await step(pub.publish(`${base}.y`, ['other'], {}, { acknowledge: true }), 'publish');
    await waitFor(() => exact.length >= 1 && wild.length >= 2, 'events on node B');
    await sleep(200); // nothing more arrives
    assert.equal(exact.length, 1);
    assert.deepEqual(exact[0].args, ARGS);
    assert.deepEqual(exact[0].kwargs, KWARGS);
    assert.equal(exact[0].details.publication, published.id);
    assert.equal(wild.length, 2);
    assert.deepEqual(wild.map((e) => e.details.topic), [`${base}.x`, `${base}.y`]);
    assert.equal(wild[0].details.publication, published.id);
  });
});
