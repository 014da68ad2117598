// autobahn-js with its library defaults: no `protocols` and no `serializers` option, so it offers
// "wamp.2.json,wamp.2.msgpack" (its own order). The router, with its default configuration
// (configs/default.json on an ephemeral port), answers with its first choice, wamp.2.msgpack, and
// the session joins, registers, calls, subscribes and publishes.
import assert from 'node:assert/strict';
import { after, before, describe, it } from 'node:test';

import { autobahn, startRouter, step, uniqueUri } from './harness.mjs';

describe('library defaults', () => {
  let router;
  before(async () => { router = await startRouter('configs/default.json'); });
  after(async () => { await router.stop(); });

  it('joins, calls and publishes without protocols or serializers options', async () => {
    const connection = new autobahn.Connection({
      url: router.url, realm: 'realm1', max_retries: 0, retry_if_unreachable: false,
    });
    let onClosed;
    const closed = new Promise((resolve) => { onClosed = resolve; });
    const joined = new Promise((resolve, reject) => {
      connection.onopen = (session) => resolve(session);
      connection.onclose = (reason, details) => {
        onClosed({ reason, details });
        reject(new Error(`closed before join: ${reason} ${JSON.stringify(details)}`));
        return true; // never reconnect
      };
    });
    const t0 = Date.now();
    connection.open();
    const session = await step(joined, 'join with library defaults');
    try {
      assert.equal(connection.transport.info.protocol, 'wamp.2.msgpack');
      const proc = uniqueUri('add2');
      const topic = uniqueUri('hello');
      await step(session.register(proc, (args) => args[0] + args[1]));
      let gotEvent;
      const event = new Promise((resolve) => { gotEvent = resolve; });
      await step(session.subscribe(topic, (args) => gotEvent(args[0])));
      assert.equal(await step(session.call(proc, [2, 3])), 5);
      await step(session.publish(topic, ['hi'], {}, { exclude_me: false, acknowledge: true }));
      assert.equal(await step(event, 'event'), 'hi');
      assert.ok(Date.now() - t0 < 1000, `took ${Date.now() - t0} ms`);
    } finally {
      connection.close();
      await step(closed, 'close');
    }
  });
});
