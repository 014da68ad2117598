// Payloads arrive intact between every pair of serializers (json, msgpack, cbor) with autobahn-js:
// NUL in string values and keys, integers up to +-2^53 (beyond that only CBOR, as BigInt, keeps
// them in JavaScript: checked cbor to cbor with -2^63 and 2^64-1), reals, and binary (a Buffer on
// msgpack/cbor, the "\0" + base64 string on json), over pub/sub and RPC.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';

import { autobahn, fixture, step, uniqueUri } from './harness.mjs';

const SERS = ['json', 'msgpack', 'cbor'];
const BIN = Buffer.from([0, 1, 254, 255]);
const BIN_JSON = '\u0000AAH+/w==';

// What a sender of ser puts in, and what a receiver of ser gets out: the same values, binary
// in the receiver's form.
function args(ser) {
  return ['a\u0000b', -(2 ** 53), -1, 0, 2 ** 53, 1.5, 1e300, 5e-324,
    ser === 'json' ? BIN_JSON : BIN, { 'k\u0000ey': 'v\u0000', nested: [{ '\u0000': null }] }];
}
function kwargs(ser) {
  return { 'n\u0000ul': 'x\u0000y', bin: ser === 'json' ? BIN_JSON : BIN, list: [1, '1', true] };
}

// Buffers compare as Buffers whatever typed-array flavour the decoder made; node-cbor decodes
// integers beyond 2^53 - 1 as BigInt: one that a Number holds exactly (2^53) compares as one.
function norm(v) {
  if (v instanceof Uint8Array) return Buffer.from(v);
  if (typeof v === 'bigint' && BigInt(Number(v)) === v) return Number(v);
  if (Array.isArray(v)) return v.map(norm);
  if (v && typeof v === 'object') {
    return Object.fromEntries(Object.entries(v).map(([k, x]) => [k, norm(x)]));
  }
  return v;
}

for (const src of SERS) {
  for (const dst of SERS) {
    describe(`payload ${src} -> ${dst}`, () => {
      const fx = fixture();
      beforeEach(fx.setUp);
      afterEach(fx.tearDown);

      it('arrives intact over pub/sub', async () => {
        const topic = uniqueUri('t');
        const sub = await fx.open({ serializer: dst });
        const pub = await fx.open({ serializer: src });
        let got;
        const arrived = new Promise((resolve) => { got = resolve; });
        await step(sub.subscribe(topic, (a, kw) => got([a, kw])));
        await step(pub.publish(topic, args(src), kwargs(src), { acknowledge: true }));
        const [a, kw] = await step(arrived, 'event');
        assert.deepEqual(norm(a), norm(args(dst)));
        assert.deepEqual(norm(kw), norm(kwargs(dst)));
      });

      it('arrives intact over RPC, both ways', async () => {
        const proc = uniqueUri('echo');
        const callee = await fx.open({ serializer: dst });
        const caller = await fx.open({ serializer: src });
        const seen = [];
        await step(callee.register(proc, (a, kw) => {
          seen.push([a, kw]);
          return new autobahn.Result(a, kw);
        }));
        const res = await step(caller.call(proc, args(src), kwargs(src)));
        assert.deepEqual(norm(seen[0][0]), norm(args(dst)));
        assert.deepEqual(norm(seen[0][1]), norm(kwargs(dst)));
        assert.deepEqual(norm(res.args), norm(args(src)));
        assert.deepEqual(norm(res.kwargs), norm(kwargs(src)));
      });
    });
  }
}

describe('payload cbor -> cbor, 64-bit integers', () => {
  const fx = fixture();
  beforeEach(fx.setUp);
  afterEach(fx.tearDown);

  it('keeps -2^63 and 2^64-1 exact', async () => {
    const big = [-(2n ** 63n), 2n ** 64n - 1n, 2n ** 63n, -(2n ** 32n) - 1n];
    const proc = uniqueUri('big');
    const callee = await fx.open({ serializer: 'cbor' });
    const caller = await fx.open({ serializer: 'cbor' });
    let seen;
    await step(callee.register(proc, (a) => { seen = a; return new autobahn.Result(a); }));
    const res = await step(caller.call(proc, big));
    assert.deepEqual(seen.map(BigInt), big);
    assert.deepEqual(res.args.map(BigInt), big);
    assert.equal(typeof seen[1], 'bigint');
  });
});
