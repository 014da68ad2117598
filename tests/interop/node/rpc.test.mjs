// Remote procedure calls through wampscope with autobahn-js, for json, msgpack and mixed pairs.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';

import {
  ARGS, KWARGS, SERIALIZERS, autobahn, fixture, randomString, step, uniqueUri,
} from './harness.mjs';

const echo = (args, kwargs) => new autobahn.Result(args, kwargs);

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

const PAIRS = [];
for (const callee of SERIALIZERS) {
  for (const caller of SERIALIZERS) PAIRS.push([callee, caller]);
}

for (const [calleeSer, callerSer] of PAIRS) {
  describe(`rpc (callee ${calleeSer}, caller ${callerSer})`, () => {
    const fx = fixture();
    beforeEach(fx.setUp);
    afterEach(fx.tearDown);
    const pair = async () => [
      await fx.openClient({ serializer: calleeSer }),
      await fx.openClient({ serializer: callerSer }),
    ];

    it('round-trips args and kwargs exactly', async () => {
      const proc = uniqueUri('echo');
      const [callee, caller] = await pair();
      const seen = [];
      await step(callee.session.register(proc, (args, kwargs) => {
        seen.push({ args, kwargs });
        return echo(args, kwargs);
      }));
      const res = await step(caller.session.call(proc, ARGS, KWARGS));
      assert.ok(res instanceof autobahn.Result);
      assert.deepEqual(res.args, ARGS);
      assert.deepEqual(res.kwargs, KWARGS);
      assert.deepEqual(seen, [{ args: ARGS, kwargs: KWARGS }]);
      const double = uniqueUri('double');
      await step(callee.session.register(double, (args) => args[0] * 2));
      assert.equal(await step(caller.session.call(double, [21])), 42);
    });

    it('passes an application error through intact', async () => {
      const proc = uniqueUri('fail');
      const errUri = 'com.wampscope.node.error.custom_failure';
      const [callee, caller] = await pair();
      await step(callee.session.register(proc, () => {
        throw new autobahn.Error(errUri, ['first', 2, { three: [3] }, 'ünïcode'],
          { reason: 'because', detail: { n: [1, 2] }, flag: false });
      }));
      const err = await expectWampError(caller.session.call(proc, ['x']), errUri);
      assert.deepEqual(err.args, ['first', 2, { three: [3] }, 'ünïcode']);
      assert.deepEqual(err.kwargs, { reason: 'because', detail: { n: [1, 2] }, flag: false });
      await expectWampError(caller.session.call(proc), errUri); // still registered
    });

    it('answers no_such_procedure', async () => {
      const [callee, caller] = await pair();
      await expectWampError(caller.session.call(uniqueUri('missing')), 'wamp.error.no_such_procedure');
      const proc = uniqueUri('temp');
      const reg = await step(callee.session.register(proc, () => 'ok'));
      assert.equal(await step(caller.session.call(proc)), 'ok');
      await step(callee.session.unregister(reg));
      await expectWampError(caller.session.call(proc), 'wamp.error.no_such_procedure');
    });

    it('round-trips a 1 MiB argument', async () => {
      const proc = uniqueUri('echo');
      const [callee, caller] = await pair();
      await step(callee.session.register(proc, echo));
      const payload = randomString(1 << 20);
      const res = await step(caller.session.call(proc, [payload], { size: 1 << 20 }));
      assert.equal(res.args[0].length, 1 << 20);
      assert.ok(res.args[0] === payload, '1 MiB payload differs');
      assert.deepEqual(res.kwargs, { size: 1 << 20 });
    });

    it('matches concurrent calls to their results', async () => {
      const proc = uniqueUri('slow_echo');
      const [callee, caller] = await pair();
      await step(callee.session.register(proc, (args) => new Promise((resolve) => {
        setTimeout(() => resolve(args[0]), Math.random() * 50);
      })));
      const calls = [];
      for (let i = 0; i < 50; i++) calls.push(caller.session.call(proc, [i]));
      const results = await step(Promise.all(calls));
      assert.deepEqual(results, [...Array(50).keys()]);
    });

    for (const how of ['abort', 'goodbye']) {
      it(`cancels the pending call when the callee goes away (${how})`, async () => {
        const proc = uniqueUri('hang');
        const [callee, caller] = await pair();
        let invoked;
        const wasInvoked = new Promise((resolve) => { invoked = resolve; });
        await step(callee.session.register(proc, () => {
          invoked();
          return new Promise(() => {}); // never answers
        }));
        const call = caller.session.call(proc);
        call.catch(() => {}); // checked below; avoid an unhandled rejection meanwhile
        await step(wasInvoked, 'invocation');
        if (how === 'abort') {
          callee.abort();
        } else {
          await callee.close();
        }
        await expectWampError(call, 'wamp.error.canceled');
        await expectWampError(caller.session.call(proc), 'wamp.error.no_such_procedure');
      });
    }
  });
}
