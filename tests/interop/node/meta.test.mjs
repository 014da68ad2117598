// Session, subscription and registration meta API with autobahn-js (configs/test-e2e.json):
// wamp.session.count / list / get checked against the sessions actually joined, on_join /
// on_leave events, kill seen by the victim, subscription and registration list / lookup / match.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';

import { Collector, SERIALIZERS, fixture, step, uniqueUri } from './harness.mjs';

describe('meta API (autobahn-js)', () => {
  const fx = fixture();
  beforeEach(fx.setUp);
  afterEach(fx.tearDown);

  for (const ser of SERIALIZERS) {
    it(`session count, list and get (${ser})`, async () => {
      const clients = [];
      for (let i = 0; i < 3; i++) clients.push(await fx.openClient({ serializer: ser }));
      const ids = clients.map((c) => c.session.id).sort();
      const s = clients[0].session;
      assert.equal(await step(s.call('wamp.session.count')), 3);
      assert.deepEqual((await step(s.call('wamp.session.list'))).sort(), ids);
      assert.equal(await step(s.call('wamp.session.count', [['nobody']])), 0);
      for (const c of clients) {
        const d = await step(clients[2].session.call('wamp.session.get', [c.session.id]));
        assert.equal(d.session, c.session.id);
        assert.equal(d.authid, c.details.authid);
        assert.equal(d.authrole, 'anonymous');
        assert.equal(d.authmethod, 'anonymous');
      }
      await assert.rejects(step(s.call('wamp.session.get', [42])),
        (e) => e.error === 'wamp.error.no_such_session');
    });

    it(`on_join and on_leave events (${ser})`, async () => {
      const watcher = await fx.open({ serializer: ser });
      const joins = new Collector();
      const leaves = new Collector();
      await step(watcher.subscribe('wamp.session.on_join', joins.handler));
      await step(watcher.subscribe('wamp.session.on_leave', leaves.handler));
      const c = await fx.openClient({ serializer: ser === 'json' ? 'msgpack' : 'json' });
      const [join] = await joins.waitFor(1);
      assert.equal(join.args[0].session, c.session.id);
      assert.equal(join.args[0].authid, c.details.authid);
      assert.equal(join.args[0].authrole, 'anonymous');
      const id = c.session.id;
      await step(c.close());
      const [leave] = await leaves.waitFor(1);
      assert.deepEqual(leave.args, [id, c.details.authid, 'anonymous']);
    });

    it(`kill: the victim gets GOODBYE wamp.close.killed (${ser})`, async () => {
      const killer = await fx.open({ serializer: ser });
      const victim = await fx.openClient({ serializer: ser });
      await step(killer.call('wamp.session.kill', [victim.session.id], { message: 'bye' }));
      const { details } = await step(victim.closed, 'victim closed');
      assert.equal(details.reason, 'wamp.close.killed');
      assert.equal(details.message, 'bye');
      assert.equal(await step(killer.call('wamp.session.count')), 1);
    });

    it(`subscription and registration list, lookup and match (${ser})`, async () => {
      const watcher = await fx.open({ serializer: ser });
      const created = new Collector();
      await step(watcher.subscribe('wamp.registration.on_create', created.handler));
      const a = await fx.open({ serializer: ser });
      const topic = uniqueUri('topic');
      const sub = await step(a.subscribe(topic, () => {}));
      const subs = await step(watcher.call('wamp.subscription.list'));
      assert.deepEqual(subs, { exact: [sub.id], prefix: [], wildcard: [] });
      assert.equal(await step(watcher.call('wamp.subscription.lookup', [topic])), sub.id);
      assert.deepEqual(await step(watcher.call('wamp.subscription.match', [topic])), [sub.id]);
      assert.equal(await step(watcher.call('wamp.subscription.count_subscribers', [sub.id])), 1);
      const proc = uniqueUri('proc');
      const reg = await step(a.register(proc, () => 1));
      const [ev] = await created.waitFor(1);
      assert.equal(ev.args[0], a.id);
      assert.equal(ev.args[1].id, reg.id);
      assert.equal(ev.args[1].uri, proc);
      const regs = await step(watcher.call('wamp.registration.list'));
      assert.deepEqual(regs, { exact: [reg.id], prefix: [], wildcard: [] });
      assert.equal(await step(watcher.call('wamp.registration.lookup', [proc])), reg.id);
      assert.equal(await step(watcher.call('wamp.registration.match', [proc])), reg.id);
      assert.deepEqual(await step(watcher.call('wamp.registration.list_callees', [reg.id])),
        [a.id]);
      await assert.rejects(step(watcher.call('wamp.registration.get', [7])),
        (e) => e.error === 'wamp.error.no_such_registration');
    });
  }
});
