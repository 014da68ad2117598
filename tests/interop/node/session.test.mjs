// Session-level behaviour with autobahn-js: unknown realm, SIGTERM, and a Node <-> Python exchange.
import assert from 'node:assert/strict';
import { spawn } from 'node:child_process';
import { afterEach, beforeEach, describe, it } from 'node:test';

import {
  ARGS, KWARGS, SERIALIZERS, autobahn, fixture, openSession, startRouter, step, uniqueUri,
} from './harness.mjs';

describe('session', () => {
  const fx = fixture();
  beforeEach(fx.setUp);
  afterEach(fx.tearDown);

  for (const ser of SERIALIZERS) {
    it(`aborts an unknown realm with no_such_realm (${ser})`, async () => {
      const c = await openSession(fx.router, { realm: 'no.such.realm', serializer: ser, joinExpected: false });
      const { details } = await step(c.closed);
      assert.equal(details.reason, 'wamp.error.no_such_realm');
    });

    it(`joins realm1, realm2 and realm3 (${ser})`, async () => {
      for (const realm of ['realm1', 'realm2', 'realm3']) {
        const c = await fx.openClient({ realm, serializer: ser });
        assert.ok(Number.isSafeInteger(c.session.id) && c.session.id >= 1);
      }
    });
  }
});

describe('shutdown', () => {
  it('sends GOODBYE wamp.close.system_shutdown to every session on SIGTERM and exits 0', async () => {
    const router = await startRouter();
    try {
      const clients = [];
      for (const ser of SERIALIZERS) clients.push(await openSession(router, { serializer: ser }));
      await step(clients[0].session.subscribe(uniqueUri('t'), () => {}));
      await step(clients[1].session.register(uniqueUri('p'), () => 1));
      router.proc.kill('SIGTERM');
      for (const c of clients) {
        const { details } = await step(c.closed, 'close on shutdown');
        assert.equal(details.reason, 'wamp.close.system_shutdown');
      }
    } finally {
      await router.stop(); // asserts exit status 0 and a clean stderr
    }
  });
});

// The Python side of the cross-client test: python3-autobahn (asyncio) on msgpack. It registers
// py.describe, calls the Node procedure, prints one JSON line per step and leaves when stdin closes.
const PY_PEER = String.raw`
import asyncio, json, sys
from autobahn.asyncio.wamp import ApplicationSession
from autobahn.asyncio.websocket import WampWebSocketClientFactory
from autobahn.wamp.serializer import MsgPackSerializer
from autobahn.wamp.types import CallResult, ComponentConfig, PublishOptions

url, host, port, prefix = sys.argv[1], sys.argv[2], int(sys.argv[3]), sys.argv[4]

def emit(**kw):
    print(json.dumps(kw), flush=True)

class Peer(ApplicationSession):
    async def onJoin(self, details):
        def describe(*args, **kwargs):
            return CallResult(*args, runtime="python", **kwargs)
        await self.register(describe, prefix + ".py.describe")
        emit(step="ready")
        res = await self.call(prefix + ".node.describe", "from python", n=[1, {"x": "ÿ"}])
        emit(step="called", args=list(res.results), kwargs=res.kwresults)
        await self.publish(prefix + ".topic", "py event", options=PublishOptions(acknowledge=True))
        loop = asyncio.get_running_loop()
        await loop.run_in_executor(None, sys.stdin.read)
        self.leave()

    def onDisconnect(self):
        asyncio.get_running_loop().stop()

loop = asyncio.new_event_loop()
asyncio.set_event_loop(loop)
factory = WampWebSocketClientFactory(lambda: Peer(ComponentConfig("realm1")), url=url,
                                     serializers=[MsgPackSerializer()])
loop.run_until_complete(loop.create_connection(factory, host, port))
loop.run_forever()
emit(step="done")
`;

describe('cross-client (Node json <-> Python msgpack)', () => {
  const fx = fixture();
  beforeEach(fx.setUp);
  afterEach(fx.tearDown);

  it('calls and publishes across the two client libraries', async () => {
    const prefix = uniqueUri('x');
    const node = await fx.open({ serializer: 'json' });
    await step(node.register(`${prefix}.node.describe`,
      (args, kwargs) => new autobahn.Result([...args, 'node'], { ...kwargs, runtime: 'node' })));
    const events = [];
    let gotEvent;
    const eventArrived = new Promise((resolve) => { gotEvent = resolve; });
    await step(node.subscribe(`${prefix}.topic`, (args) => { events.push(args); gotEvent(); }));

    const u = new URL(fx.router.url);
    const py = spawn('/usr/bin/python3', ['-c', PY_PEER, fx.router.url, u.hostname, u.port, prefix],
      { stdio: ['pipe', 'pipe', 'pipe'] });
    let stderr = '';
    py.stderr.setEncoding('utf8').on('data', (d) => { stderr += d; });
    const exited = new Promise((resolve) => py.on('exit', (code) => resolve(code)));
    const lines = [];
    const waiters = [];
    let buf = '';
    py.stdout.setEncoding('utf8').on('data', (d) => {
      buf += d;
      let i;
      while ((i = buf.indexOf('\n')) >= 0) {
        lines.push(JSON.parse(buf.slice(0, i)));
        buf = buf.slice(i + 1);
        waiters.splice(0).forEach((w) => w());
      }
    });
    const waitStep = async (name) => {
      const find = () => lines.find((l) => l.step === name);
      while (!find()) {
        await step(Promise.race([new Promise((r) => waiters.push(r)), exited.then(() => {
          throw new Error(`python peer exited before "${name}": ${stderr}`);
        })]), `python step ${name}`);
      }
      return find();
    };

    try {
      await waitStep('ready');
      const res = await step(node.call(`${prefix}.py.describe`, ARGS, KWARGS));
      assert.deepEqual(res.args, ARGS);
      assert.deepEqual(res.kwargs, { ...KWARGS, runtime: 'python' });

      const called = await waitStep('called');
      assert.deepEqual(called.args, ['from python', 'node']);
      assert.deepEqual(called.kwargs, { n: [1, { x: 'ÿ' }], runtime: 'node' });

      await step(eventArrived, 'event from python');
      assert.deepEqual(events, [['py event']]);
    } finally {
      py.stdin.end();
      const code = await step(exited, 'python peer exit');
      assert.equal(code, 0, `python peer failed:\n${stderr}`);
    }
    assert.ok(lines.some((l) => l.step === 'done'));
  });
});
