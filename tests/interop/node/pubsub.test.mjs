// Publish/subscribe through wampscope with autobahn-js, for the json and msgpack serializers.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';

import {
  ARGS, Collector, KWARGS, SERIALIZERS, autobahn, fixture, randomString, step, uniqueUri,
} from './harness.mjs';

for (const ser of SERIALIZERS) {
  describe(`pubsub (${ser})`, () => {
    const fx = fixture();
    beforeEach(fx.setUp);
    afterEach(fx.tearDown);

    it('delivers one publication to several subscribers', async () => {
      const topic = uniqueUri('t');
      const subs = [];
      for (let i = 0; i < 4; i++) subs.push(await fx.open({ serializer: ser }));
      const pub = await fx.open({ serializer: ser });
      const collectors = subs.map(() => new Collector());
      for (let i = 0; i < subs.length; i++) {
        await step(subs[i].subscribe(topic, collectors[i].handler), 'subscribe');
      }
      await step(pub.publish(topic, ARGS, KWARGS, { acknowledge: true }), 'publish');
      await step(pub.publish(topic, ['second'], {}, { acknowledge: true }), 'publish');
      for (const c of collectors) {
        const events = await c.waitFor(2);
        assert.deepEqual(events[0].args, ARGS);
        assert.deepEqual(events[0].kwargs, KWARGS);
        assert.deepEqual(events[1].args, ['second']);
      }
    });

    it('excludes the publisher by default', async () => {
      const topic = uniqueUri('t');
      const pub = await fx.open({ serializer: ser });
      const other = await fx.open({ serializer: ser });
      const mine = new Collector();
      const theirs = new Collector();
      await step(pub.subscribe(topic, mine.handler));
      await step(other.subscribe(topic, theirs.handler));
      await step(pub.publish(topic, ['excluded'], {}, { acknowledge: true }));
      await step(pub.publish(topic, ['included'], {}, { acknowledge: true, exclude_me: false }));
      // Per publisher/subscriber pair events are ordered: "excluded" would have come first.
      const events = await mine.waitFor(1);
      assert.deepEqual(events.map((e) => e.args), [['included']]);
      const theirEvents = await theirs.waitFor(2);
      assert.deepEqual(theirEvents.map((e) => e.args), [['excluded'], ['included']]);
    });

    it('delivers to the publisher with exclude_me false', async () => {
      const topic = uniqueUri('t');
      const pub = await fx.open({ serializer: ser });
      const mine = new Collector();
      await step(pub.subscribe(topic, mine.handler));
      pub.publish(topic, [1, 2], { k: 'v' }, { exclude_me: false });
      const events = await mine.waitFor(1);
      assert.deepEqual(events[0].args, [1, 2]);
      assert.deepEqual(events[0].kwargs, { k: 'v' });
    });

    it('acknowledges a publication with its id', async () => {
      const topic = uniqueUri('t');
      const pub = await fx.open({ serializer: ser });
      const p1 = await step(pub.publish(topic, [], {}, { acknowledge: true }));
      const p2 = await step(pub.publish(topic, ['x'], {}, { acknowledge: true }));
      for (const p of [p1, p2]) {
        assert.ok(p instanceof autobahn.Publication, `not a Publication: ${p}`);
        assert.ok(Number.isSafeInteger(p.id) && p.id >= 1 && p.id <= 2 ** 53, `bad id ${p.id}`);
      }
      assert.notEqual(p1.id, p2.id);
      assert.equal(pub.publish(topic, ['no ack']), undefined); // no PUBLISHED expected
      const p3 = await step(pub.publish(topic, [], {}, { acknowledge: true }));
      assert.ok(p3 instanceof autobahn.Publication);
    });

    it('carries a 1 MiB event', async () => {
      const topic = uniqueUri('t');
      const sub = await fx.open({ serializer: ser });
      const pub = await fx.open({ serializer: ser });
      const c = new Collector();
      await step(sub.subscribe(topic, c.handler));
      const payload = randomString(1 << 20);
      await step(pub.publish(topic, [payload], { tail: 'ü' }, { acknowledge: true }));
      const events = await c.waitFor(1);
      assert.equal(events[0].args[0].length, 1 << 20);
      assert.ok(events[0].args[0] === payload, '1 MiB payload differs');
      assert.deepEqual(events[0].kwargs, { tail: 'ü' });
    });
  });
}

describe('pubsub (mixed serializers)', () => {
  const fx = fixture();
  beforeEach(fx.setUp);
  afterEach(fx.tearDown);

  for (const pubSer of SERIALIZERS) {
    it(`fans a ${pubSer} publication out to json and msgpack subscribers`, async () => {
      const topic = uniqueUri('t');
      const collectors = {};
      for (const ser of SERIALIZERS) {
        const s = await fx.open({ serializer: ser });
        collectors[ser] = new Collector();
        await step(s.subscribe(topic, collectors[ser].handler));
      }
      const pub = await fx.open({ serializer: pubSer });
      await step(pub.publish(topic, ARGS, KWARGS, { acknowledge: true }));
      for (const ser of SERIALIZERS) {
        const events = await collectors[ser].waitFor(1);
        assert.deepEqual(events[0].args, ARGS, `subscriber ${ser}`);
        assert.deepEqual(events[0].kwargs, KWARGS, `subscriber ${ser}`);
      }
    });
  }
});
