// Two or more wampscope nodes linked by a real nats-server (JetStream, ephemeral port, temp
// store), for the cluster tests: startCluster(ids) starts nats-server and one router per id
// (harness.mjs startRouter()) and waits until every node lists all of them; cluster.stop()
// stops the routers (exit status 0, no sanitizer report), then nats-server, and removes the
// temp dir; clusterFixture(ids) wraps both for a suite's before/after, closing the sessions it
// opened first. NATS_BIN is undefined when nats-server is not installed (the tests then skip).
import { spawn } from 'node:child_process';
import fs from 'node:fs';
import net from 'node:net';
import os from 'node:os';
import path from 'node:path';

import { closeClients, openSession, startRouter } from './harness.mjs';

export const NATS_BIN = ['/usr/sbin/nats-server', '/usr/bin/nats-server'].find((p) => fs.existsSync(p));
export const sleep = (ms) => new Promise((resolve) => setTimeout(resolve, ms));

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

export async function waitFor(pred, what, ms = 15000) {
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

export async function startCluster(ids) {
  const tmp = fs.mkdtempSync(path.join(os.tmpdir(), 'wampscope-node-cluster-'));
  const port = await freePort();
  const nats = spawn(NATS_BIN, ['-a', '127.0.0.1', '-p', String(port), '-js', '-sd',
    path.join(tmp, 'js')], { stdio: 'ignore' });
  const cluster = { routers: [], stop: null };
  cluster.stop = async () => {
    try {
      for (const r of cluster.routers) await r.stop();
    } finally {
      nats.kill('SIGTERM');
      fs.rmSync(tmp, { recursive: true, force: true });
    }
  };
  await waitFor(() => {
    const s = net.connect(port, '127.0.0.1');
    s.on('error', () => {});
    s.on('connect', () => { nats.ready = true; s.destroy(); });
    return nats.ready;
  }, 'nats-server up');
  for (const id of ids) {
    cluster.routers.push(await startRouter(nodeConfig(tmp, id, port)));
  }
  const line = new RegExp(`nodes \\(${ids.length}\\): ${[...ids].sort().join(', ')}`);
  for (const r of cluster.routers) {
    await waitFor(() => line.test(r.stderr), 'every node joined');
  }
  return cluster;
}

// A fixture for node:test's before/after: setUp starts the cluster of ids (fx.cluster); sessions
// opened through fx.open(router, opts) (harness.mjs openSession() options) are closed, newest
// first, before tearDown stops the cluster.
export function clusterFixture(ids) {
  const fx = { cluster: null, clients: [] };
  fx.setUp = async () => {
    fx.cluster = await startCluster(ids);
  };
  fx.tearDown = async () => {
    if (!fx.cluster) return; // setUp failed and reported it
    try {
      await closeClients(fx.clients);
    } finally {
      await fx.cluster.stop();
    }
  };
  fx.open = async (router, opts) => {
    const c = await openSession(router, opts);
    fx.clients.push(c);
    return c.session;
  };
  return fx;
}
