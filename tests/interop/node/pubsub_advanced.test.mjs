// Advanced Profile pub/sub through wampscope with autobahn-js (json and msgpack): pattern-based
// subscriptions (details.topic), publisher identification (disclose_me), black/white listing,
// event retention (retain / get_retained).
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';

import { SERIALIZERS, fixture, step, uniqueUri } from './harness.mjs';

// Records (args, kwargs, details) of every event and lets a test wait for a given count.
class Events {
  constructor() {
    this.events = [];
    this.waiters = [];
    this.handler = (args, kwargs, details) => {
      this.events.push({ args, kwargs, details });
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

for (const ser of SERIALIZERS) {
  describe(`pubsub advanced (${ser})`, () => {
    const fx = fixture();
    beforeEach(fx.setUp);
    afterEach(fx.tearDown);

    it('announces the broker features', async () => {
      const c = await fx.openClient({ serializer: ser });
      const features = c.details.roles.broker.features;
      for (const f of ['pattern_based_subscription', 'subscriber_blackwhite_listing',
        'publisher_identification', 'publisher_exclusion', 'event_retention']) {
        assert.equal(features[f], true, f);
      }
    });

    it('delivers prefix matches with the concrete topic', async () => {
      const base = uniqueUri('p');
      const sub = await fx.open({ serializer: ser });
      const pub = await fx.open({ serializer: ser });
      const ev = new Events();
      const s = await step(sub.subscribe(base, ev.handler, { match: 'prefix' }));
      await step(pub.publish(`${base}.a`, ['one'], {}, { acknowledge: true }));
      await step(pub.publish(`com.elsewhere.${base}`, ['no'], {}, { acknowledge: true }));
      await step(pub.publish(`${base}.b.c`, ['two'], { k: 2 }, { acknowledge: true }));
      const events = await ev.waitFor(2);
      assert.deepEqual(events.map((e) => e.args), [['one'], ['two']]);
      assert.deepEqual(events.map((e) => e.details.topic), [`${base}.a`, `${base}.b.c`]);
      assert.deepEqual(events[1].kwargs, { k: 2 });
      assert.equal(s.topic, base);
      assert.ok(Number.isInteger(s.id));
    });

    it('delivers wildcard matches with the concrete topic', async () => {
      const base = uniqueUri('w');
      const sub = await fx.open({ serializer: ser });
      const pub = await fx.open({ serializer: ser });
      const ev = new Events();
      await step(sub.subscribe(`${base}..status`, ev.handler, { match: 'wildcard' }));
      await step(pub.publish(`${base}.d1.status`, ['d1'], {}, { acknowledge: true }));
      await step(pub.publish(`${base}.d1.other`, ['no'], {}, { acknowledge: true }));
      await step(pub.publish(`${base}.d1.status.x`, ['no'], {}, { acknowledge: true }));
      await step(pub.publish(`${base}.d2.status`, ['d2'], {}, { acknowledge: true }));
      const events = await ev.waitFor(2);
      assert.deepEqual(events.map((e) => e.args), [['d1'], ['d2']]);
      assert.deepEqual(events.map((e) => e.details.topic),
        [`${base}.d1.status`, `${base}.d2.status`]);
    });

    it('discloses the publisher on request only', async () => {
      const topic = uniqueUri('d');
      const sub = await fx.open({ serializer: ser });
      const pubClient = await fx.openClient({ serializer: ser });
      const pub = pubClient.session;
      const ev = new Events();
      await step(sub.subscribe(topic, ev.handler));
      await step(pub.publish(topic, ['hidden'], {}, { acknowledge: true }));
      await step(pub.publish(topic, ['shown'], {}, { acknowledge: true, disclose_me: true }));
      const events = await ev.waitFor(2);
      assert.equal(events[0].details.publisher, undefined);
      assert.equal(events[1].details.publisher, pub.id);
      assert.equal(events[1].details.publisher_authid, pubClient.details.authid);
      assert.equal(events[1].details.publisher_authrole, 'anonymous');
    });

    it('honours exclude and eligible session lists', async () => {
      const topic = uniqueUri('l');
      const subs = [];
      for (let i = 0; i < 3; i++) subs.push(await fx.open({ serializer: ser }));
      const pub = await fx.open({ serializer: ser });
      const evs = subs.map(() => new Events());
      for (let i = 0; i < 3; i++) await step(subs[i].subscribe(topic, evs[i].handler));
      const ids = subs.map((s) => s.id);
      await step(pub.publish(topic, ['ex'], {}, { acknowledge: true, exclude: [ids[0]] }));
      await step(pub.publish(topic, ['el'], {}, { acknowledge: true, eligible: [ids[0], ids[2]] }));
      await step(pub.publish(topic, ['end'], {}, { acknowledge: true }));
      const expect = [['el', 'end'], ['ex', 'end'], ['ex', 'el', 'end']];
      for (let i = 0; i < 3; i++) {
        // Events of one publisher arrive in order: once 'end' is in, nothing else is on its way.
        const events = await evs[i].waitFor(expect[i].length);
        assert.deepEqual(events.map((x) => x.args[0]), expect[i]);
      }
    });
    it('delivers the retained event to a get_retained subscriber', async () => {
      const base = uniqueUri('r');
      const pubClient = await fx.openClient({ serializer: ser });
      const pub = pubClient.session;
      const opts = { acknowledge: true, retain: true };
      await step(pub.publish(`${base}.a`, ['old'], {}, opts));
      await step(pub.publish(`${base}.a`, ['new'], { k: 1 }, { ...opts, disclose_me: true }));
      await step(pub.publish(`${base}.b`, ['b'], {}, opts));
      const sub = await fx.open({ serializer: ser });
      const ev = new Events();
      await step(sub.subscribe(`${base}.a`, ev.handler, { get_retained: true }));
      const events = await ev.waitFor(1);
      assert.deepEqual(events[0].args, ['new']);
      assert.deepEqual(events[0].kwargs, { k: 1 });
      assert.equal(events[0].details.retained, true);
      assert.equal(events[0].details.publisher, pub.id);
      assert.equal(events[0].details.publisher_authid, pubClient.details.authid);
      // A prefix subscription gets every matching retained topic, with its topic.
      const all = new Events();
      await step(sub.subscribe(base, all.handler, { match: 'prefix', get_retained: true }));
      const got = await all.waitFor(2);
      assert.deepEqual(got.map((e) => e.details.topic).sort(), [`${base}.a`, `${base}.b`]);
      assert.ok(got.every((e) => e.details.retained === true));
      // Live events are not marked retained.
      await step(pub.publish(`${base}.b`, ['live'], {}, { acknowledge: true }));
      const later = await all.waitFor(3);
      assert.deepEqual(later[2].args, ['live']);
      assert.equal(later[2].details.retained, false);
    });
  });
}
