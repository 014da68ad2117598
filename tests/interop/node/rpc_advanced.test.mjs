// Advanced Profile RPC through wampscope with autobahn-js: progressive call results, shared
// registrations (roundrobin), pattern-based registrations, router-enforced call timeouts, call
// canceling and caller disclosure, for json and msgpack.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';

import { SERIALIZERS, autobahn, fixture, step, uniqueUri } from './harness.mjs';

async function expectWampError(promise, uri) {
  let err = null;
  try {
    await step(promise, `call expecting ${uri}`);
  } catch (e) {
    err = e;
  }
  assert.ok(err instanceof autobahn.Error, `expected autobahn.Error ${uri}, got ${err}`);
  assert.equal(err.error, uri);
  return err;
}

const never = () => new Promise(() => {});

for (const ser of SERIALIZERS) {
  describe(`advanced rpc (${ser})`, () => {
    const fx = fixture();
    beforeEach(fx.setUp);
    afterEach(fx.tearDown);

    it('announces the dealer features', async () => {
      const c = await fx.openClient({ serializer: ser });
      const features = c.details.roles.dealer.features;
      for (const f of ['pattern_based_registration', 'shared_registration',
        'progressive_call_results', 'call_canceling', 'call_timeout', 'caller_identification']) {
        assert.equal(features[f], true, f);
      }
    });

    it('delivers progressive call results', async () => {
      const proc = uniqueUri('countdown');
      const callee = await fx.open({ serializer: ser });
      // when.js deferreds: autobahn-js reports progress through them (not through ES6 promises).
      const caller = await fx.open({ serializer: ser, es6Promises: false });
      await step(callee.register(proc, async (args, kwargs, details) => {
        assert.equal(typeof details.progress, 'function'); // INVOCATION asked for progress
        for (let i = args[0]; i > 0; i--) details.progress([i]);
        return 'liftoff';
      }));
      const progress = [];
      const res = await step(new Promise((resolve, reject) => {
        caller.call(proc, [3], {}, { receive_progress: true })
          .then(resolve, reject, (p) => progress.push(p));
      }));
      assert.equal(res, 'liftoff');
      assert.deepEqual(progress, [3, 2, 1]);
    });

    it('distributes a roundrobin registration evenly over 3 callees', async () => {
      const proc = uniqueUri('rr');
      const callees = [];
      for (let i = 0; i < 3; i++) callees.push(await fx.open({ serializer: ser }));
      const caller = await fx.open({ serializer: ser });
      const ids = new Set();
      for (let i = 0; i < 3; i++) {
        const reg = await step(callees[i].register(proc, () => i, { invoke: 'roundrobin' }));
        ids.add(reg.id);
      }
      assert.equal(ids.size, 1); // one shared registration
      const got = [];
      for (let i = 0; i < 30; i++) got.push(await step(caller.call(proc)));
      assert.deepEqual([0, 1, 2].map((i) => got.filter((x) => x === i).length), [10, 10, 10]);
      const other = await fx.open({ serializer: ser });
      await expectWampError(other.register(proc, () => 9, { invoke: 'random' }),
        'wamp.error.procedure_already_exists');
    });

    it('routes pattern-based registrations with details.procedure', async () => {
      const base = uniqueUri('p');
      const callee = await fx.open({ serializer: ser });
      const caller = await fx.open({ serializer: ser });
      const seen = [];
      const handler = (name) => (args, kwargs, details) => {
        seen.push([name, details.procedure]);
        return name;
      };
      await step(callee.register(`${base}.obj`, handler('prefix'), { match: 'prefix' }));
      await step(callee.register(`${base}..get`, handler('wildcard'), { match: 'wildcard' }));
      await step(callee.register(`${base}.obj.get`, handler('exact')));
      assert.equal(await step(caller.call(`${base}.obj.get`)), 'exact');
      assert.equal(await step(caller.call(`${base}.obj.put`)), 'prefix');
      assert.equal(await step(caller.call(`${base}.other.get`)), 'wildcard');
      assert.deepEqual(seen, [['exact', `${base}.obj.get`], ['prefix', `${base}.obj.put`],
        ['wildcard', `${base}.other.get`]]);
    });

    it('times out a call at the router', async () => {
      const proc = uniqueUri('hang');
      const callee = await fx.open({ serializer: ser });
      const caller = await fx.open({ serializer: ser });
      await step(callee.register(proc, never));
      await step(callee.register(`${proc}.ok`, () => 'ok'));
      const t0 = Date.now();
      await expectWampError(caller.call(proc, [], {}, { timeout: 300 }), 'wamp.error.timeout');
      assert.ok(Date.now() - t0 >= 300);
      // autobahn-js does not announce call_canceling for callees: no INTERRUPT reached it, and it
      // is still connected and serving.
      assert.equal(await step(caller.call(`${proc}.ok`)), 'ok');
    });

    it('cancels a call (mode kill)', async () => {
      const proc = uniqueUri('hang');
      const callee = await fx.open({ serializer: ser });
      const caller = await fx.open({ serializer: ser });
      let invoked;
      const wasInvoked = new Promise((resolve) => { invoked = resolve; });
      await step(callee.register(proc, () => { invoked(); return never(); }));
      await step(callee.register(`${proc}.ok`, () => 'ok'));
      const call = caller.call(proc);
      await step(wasInvoked);
      call.cancel({ mode: 'kill' });
      // The autobahn-js callee cannot be interrupted, so kill acts as skip: ERROR now.
      await expectWampError(call, 'wamp.error.canceled');
      assert.equal(await step(caller.call(`${proc}.ok`)), 'ok');
    });

    it('discloses the caller on disclose_me', async () => {
      const proc = uniqueUri('who');
      const callee = await fx.open({ serializer: ser });
      const caller = await fx.open({ serializer: ser });
      await step(callee.register(proc, (args, kwargs, details) => [details.caller ?? 0,
        details.caller_authrole ?? '']));
      assert.deepEqual(await step(caller.call(proc, [], {}, { disclose_me: true })),
        [caller.id, 'anonymous']);
      assert.deepEqual(await step(caller.call(proc)), [0, '']); // not disclosed
    });
  });
}
