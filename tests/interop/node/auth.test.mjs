// Authentication with autobahn-js (configs/test-e2e-auth.json): ticket, WAMP-CRA (plain and
// salted, autobahn.auth_cra.derive_key / sign) and cryptosign (autobahn.auth_cryptosign with the
// tweetnacl autobahn-js bundles), each with a right and a wrong credential, over JSON and
// MessagePack.
import assert from 'node:assert/strict';
import { afterEach, beforeEach, describe, it } from 'node:test';

import { SERIALIZERS, autobahn, fixture, openSession, step } from './harness.mjs';

const TICKET = 'joe-ticket-from-env';
// The router reads these from the environment ("${VAR}" in the config).
process.env.WAMPSCOPE_E2E_TICKET = TICKET;
process.env.WAMPSCOPE_E2E_MGMT_TICKET = 'mgmt-ticket-from-env';

const { nacl } = autobahn;
const CAT = nacl.sign.keyPair.fromSeed(new TextEncoder().encode('wampscope-e2e-cryptosign-key-01!'));
const OTHER = nacl.sign.keyPair.fromSeed(new TextEncoder().encode('an-unauthorized-ed25519-seed-000'));

function ticket(authid, secret) {
  return { authmethods: ['ticket'], authid, onchallenge: () => secret };
}

function wampcra(authid, secret) {
  return {
    authmethods: ['wampcra'],
    authid,
    onchallenge: (session, method, extra) => {
      assert.equal(method, 'wampcra');
      const key = extra.salt
        ? autobahn.auth_cra.derive_key(secret, extra.salt, extra.iterations, extra.keylen)
        : secret;
      return autobahn.auth_cra.sign(key, extra.challenge);
    },
  };
}

function cryptosign(authid, announced, signer) {
  return {
    authmethods: ['cryptosign'],
    authid,
    authextra: { pubkey: autobahn.auth_cryptosign.public_key(announced), channel_binding: null },
    onchallenge: (session, method, extra) => {
      assert.equal(method, 'cryptosign');
      return autobahn.auth_cryptosign.sign_challenge(signer, extra);
    },
  };
}

describe('authentication (autobahn-js)', () => {
  const fx = fixture('configs/test-e2e-auth.json');
  beforeEach(fx.setUp);
  afterEach(fx.tearDown);

  async function joins(ser, auth, authid, authmethod) {
    const c = await fx.openClient({ serializer: ser, auth });
    assert.equal(c.details.authid, authid);
    assert.equal(c.details.authrole, 'user');
    assert.equal(c.details.authmethod, authmethod);
    assert.equal(c.details.authprovider, 'static');
    // The session works.
    const proc = `com.auth.node.${authmethod}.${ser}.${c.session.id}`;
    await step(c.session.register(proc, () => 'pong'));
    assert.equal(await step(c.session.call(proc)), 'pong');
    return c;
  }

  async function refused(ser, auth, reason) {
    const c = await openSession(fx.router, { serializer: ser, auth, joinExpected: false });
    const { details } = await step(c.closed);
    assert.equal(details.reason, reason);
  }

  for (const ser of SERIALIZERS) {
    it(`ticket right and wrong (${ser})`, async () => {
      await joins(ser, ticket('joe', TICKET), 'joe', 'ticket');
      await refused(ser, ticket('joe', 'wrong'), 'wamp.error.authentication_failed');
      await refused(ser, ticket('nobody', TICKET), 'wamp.error.no_such_principal');
    });

    it(`wampcra plain and salted, right and wrong (${ser})`, async () => {
      await joins(ser, wampcra('ann', 'ann-secret'), 'ann', 'wampcra');
      await refused(ser, wampcra('ann', 'wrong'), 'wamp.error.authentication_failed');
      await joins(ser, wampcra('sal', 'salted-password'), 'sal', 'wampcra');
      await refused(ser, wampcra('sal', 'wrong'), 'wamp.error.authentication_failed');
    });

    it(`cryptosign right and wrong (${ser})`, async () => {
      const c = await joins(ser, cryptosign(undefined, CAT, CAT), 'cat', 'cryptosign');
      assert.equal(c.details.authextra.x_cb_node, 'e2e_node');
      await joins(ser, cryptosign('cat', CAT, CAT), 'cat', 'cryptosign');
      await refused(ser, cryptosign('cat', CAT, OTHER), 'wamp.error.authentication_failed');
      await refused(ser, cryptosign(undefined, OTHER, OTHER), 'wamp.error.no_such_principal');
    });

    it(`no acceptable method (${ser})`, async () => {
      await refused(ser, { authmethods: ['anonymous'] }, 'wamp.error.no_auth_method');
    });
  }
});
