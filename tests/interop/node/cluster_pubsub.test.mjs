// Publish/subscribe across two wampscope nodes linked by a real nats-server (JetStream, ephemeral
// port, temp store), with autobahn-js clients: a subscriber on node B (msgpack) gets the events a
// publisher on node A (json) sends, once each, with the publisher's payload and one publication
// id; a wildcard subscription on B matches with the broker's rules. Skipped when nats-server is
// not installed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { NATS_BIN, clusterFixture, sleep, waitFor } from './cluster_harness.mjs';
import { ARGS, KWARGS, step, uniqueUri } from './harness.mjs';

describe('pubsub across two cluster nodes', { skip: !NATS_BIN && 'nats-server not installed' }, () => {
  const fx = clusterFixture(['node_a', 'node_b']);
  before(fx.setUp);
  after(fx.tearDown);

  const open = (router, serializer) => fx.open(router, { serializer });

  it('delivers events from node A to subscribers on node B once each', async () => {
    const [a, b] = fx.cluster.routers;
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
