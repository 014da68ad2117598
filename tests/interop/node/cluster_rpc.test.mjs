// RPC across two wampscope nodes linked by a real nats-server, with autobahn-js clients: a caller
// on node B (msgpack) calls a procedure registered on node A (json) and gets its result with the
// payload as sent, progressive results included; a second single registration of the procedure
// on node B is refused with procedure_already_exists. Skipped when nats-server is not installed.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { NATS_BIN, clusterFixture, sleep } from './cluster_harness.mjs';
import { ARGS, KWARGS, autobahn, step, uniqueUri } from './harness.mjs';

describe('rpc across two cluster nodes', { skip: !NATS_BIN && 'nats-server not installed' }, () => {
  const fx = clusterFixture(['node_a', 'node_b']);
  before(fx.setUp);
  after(fx.tearDown);

  const open = (router, serializer, es6Promises = true) =>
    fx.open(router, { serializer, es6Promises });

  // Calls until node B knows the registration (the registry's table crossed NATS).
  async function callWhenKnown(session, proc, args, kwargs, options) {
    for (let n = 0; ; n++) {
      try {
        return await step(session.call(proc, args, kwargs, options), 'call');
      } catch (e) {
        if (!(e instanceof autobahn.Error) || e.error !== 'wamp.error.no_such_procedure' || n > 200) {
          throw e;
        }
        await sleep(50);
      }
    }
  }

  it('calls a callee on the other node, with progressive results', async () => {
    const [a, b] = fx.cluster.routers;
    const proc = uniqueUri('echo');
    const callee = await open(a, 'json');
    await step(callee.register(proc, (args, kwargs, details) => {
      if (details.progress) {
        details.progress(['step']);
      }
      return new autobahn.Result(args, kwargs);
    }), 'register');
    // when.js promises: the progress callback is the third argument of then().
    const caller = await open(b, 'msgpack', false);
    const res = await callWhenKnown(caller, proc, ARGS, KWARGS);
    assert.deepEqual(res.args, ARGS);
    assert.deepEqual(res.kwargs, KWARGS);
    const progress = [];
    const last = await step(caller.call(proc, ['p'], {}, {
      receive_progress: true,
    }).then(null, null, (p) => progress.push(p)), 'progressive call');
    // A single positional result comes back as the value itself.
    assert.equal(last, 'p');
    assert.deepEqual(progress, ['step']);
    await assert.rejects(Promise.resolve(caller.register(proc, () => 'b')),
      (e) => e.error === 'wamp.error.procedure_already_exists');
  });
});
