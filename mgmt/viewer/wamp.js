// wamp.js: a small WAMP v2 client for the trace viewer (WebSocket, subprotocol wamp.2.json).
//
// Covers what a management client needs: HELLO/WELCOME/ABORT, CHALLENGE/AUTHENTICATE
// (anonymous, ticket, wampcra with or without a salted key), CALL/RESULT/ERROR,
// SUBSCRIBE/SUBSCRIBED/EVENT/UNSUBSCRIBE and GOODBYE. JSON only. Requests are matched to their
// answers by request id; a lost connection rejects every pending request.

const HELLO = 1, WELCOME = 2, ABORT = 3, CHALLENGE = 4, AUTHENTICATE = 5, GOODBYE = 6;
const ERROR = 8, SUBSCRIBE = 32, SUBSCRIBED = 33, UNSUBSCRIBE = 34, UNSUBSCRIBED = 35;
const EVENT = 36, CALL = 48, RESULT = 50;

// A WAMP ERROR or ABORT as an exception: uri is the error URI, args/kwargs its payload.
export class WampError extends Error {
  constructor(uri, args = [], kwargs = {}) {
    const text = args && typeof args[0] === 'string' ? `: ${args[0]}` : '';
    super(`${uri}${text}`);
    this.uri = uri;
    this.args = args;
    this.kwargs = kwargs;
  }
}

function b64(bytes) {
  let s = '';
  for (const b of new Uint8Array(bytes)) s += String.fromCharCode(b);
  return btoa(s);
}

// WAMP-CRA: base64(HMAC-SHA256(key, challenge)); with a salt in the challenge the key is the
// base64 of PBKDF2-HMAC-SHA256(secret, salt, iterations, keylen), as Crossbar derives it.
export async function wampcraSign(secret, extra) {
  if (!globalThis.crypto || !crypto.subtle) {
    throw new Error('wampcra needs WebCrypto (open the page over https or from localhost)');
  }
  const enc = new TextEncoder();
  let key = secret;
  if (extra.salt) {
    const iterations = extra.iterations > 0 ? extra.iterations : 1000;
    const keylen = extra.keylen > 0 ? extra.keylen : 32;
    const base = await crypto.subtle.importKey('raw', enc.encode(secret), 'PBKDF2', false,
      ['deriveBits']);
    const bits = await crypto.subtle.deriveBits(
      { name: 'PBKDF2', hash: 'SHA-256', salt: enc.encode(extra.salt), iterations },
      base, keylen * 8);
    key = b64(bits);
  }
  const hkey = await crypto.subtle.importKey('raw', enc.encode(key),
    { name: 'HMAC', hash: 'SHA-256' }, false, ['sign']);
  return b64(await crypto.subtle.sign('HMAC', hkey, enc.encode(extra.challenge)));
}

export class WampSession {
  // opts: {url, realm, authmethod: 'anonymous'|'ticket'|'wampcra', authid, secret,
  //        onclose(reason)}
  constructor(opts) {
    this.opts = opts;
    this.ws = null;
    this.id = null;
    this.details = null;
    this.nextId = 1;
    this.pending = new Map(); // request id -> {resolve, reject, kind}
    this.subs = new Map(); // subscription id -> handler
    this.closed = false;
  }

  // Resolves with the WELCOME details once joined; rejects with WampError on ABORT.
  open() {
    const { url, realm } = this.opts;
    return new Promise((resolve, reject) => {
      let joined = false;
      const ws = new WebSocket(url, ['wamp.2.json']);
      this.ws = ws;
      ws.onopen = () => {
        const method = this.opts.authmethod || 'anonymous';
        const details = {
          roles: { caller: { features: {} }, subscriber: { features: {} } },
          authmethods: [method],
        };
        if (this.opts.authid) details.authid = this.opts.authid;
        this.send([HELLO, realm, details]);
      };
      ws.onerror = () => {
        if (!joined) reject(new Error(`cannot connect to ${url}`));
      };
      ws.onclose = (ev) => {
        this.closed = true;
        const why = new Error(`connection closed (${ev.code}${ev.reason ? ' ' + ev.reason : ''})`);
        for (const p of this.pending.values()) p.reject(why);
        this.pending.clear();
        if (!joined) {
          reject(this.abortError || why);
        } else if (this.opts.onclose) {
          this.opts.onclose(this.goodbyeReason || why.message);
        }
      };
      ws.onmessage = (ev) => {
        let msg;
        try {
          msg = JSON.parse(ev.data);
        } catch {
          this.fail('wamp.error.protocol_violation', 'a message that is not JSON');
          return;
        }
        if (!Array.isArray(msg) || typeof msg[0] !== 'number') {
          this.fail('wamp.error.protocol_violation', 'a message that is not a WAMP message');
          return;
        }
        if (!joined) {
          if (msg[0] === WELCOME) {
            joined = true;
            this.id = msg[1];
            this.details = msg[2] || {};
            resolve(this.details);
          } else if (msg[0] === ABORT) {
            const d = msg[1] || {};
            this.abortError = new WampError(msg[2], d.message ? [d.message] : []);
            ws.close(1000);
          } else if (msg[0] === CHALLENGE) {
            this.answerChallenge(msg[1], msg[2] || {}).catch((e) => {
              this.abortError = e;
              ws.close(1000);
            });
          }
          return;
        }
        this.dispatch(msg);
      };
    });
  }

  async answerChallenge(method, extra) {
    const secret = this.opts.secret || '';
    let signature;
    if (method === 'ticket') {
      signature = secret;
    } else if (method === 'wampcra') {
      signature = await wampcraSign(secret, extra);
    } else {
      throw new Error(`the router asked for ${method}, which this page does not speak`);
    }
    this.send([AUTHENTICATE, signature, {}]);
  }

  send(msg) {
    this.ws.send(JSON.stringify(msg));
  }

  fail(reason, message) {
    if (this.ws && this.ws.readyState === WebSocket.OPEN) {
      this.send([ABORT, { message }, reason]);
      this.ws.close(1000);
    }
  }

  dispatch(msg) {
    const [type] = msg;
    if (type === RESULT || type === SUBSCRIBED || type === UNSUBSCRIBED) {
      const p = this.pending.get(msg[1]);
      if (!p) return;
      this.pending.delete(msg[1]);
      if (type === RESULT) p.resolve({ args: msg[3] || [], kwargs: msg[4] || {} });
      else if (type === SUBSCRIBED) p.resolve(msg[2]);
      else p.resolve();
    } else if (type === ERROR) {
      const p = this.pending.get(msg[2]);
      if (!p) return;
      this.pending.delete(msg[2]);
      p.reject(new WampError(msg[4], msg[5] || [], msg[6] || {}));
    } else if (type === EVENT) {
      const handler = this.subs.get(msg[1]);
      if (handler) handler(msg[4] || [], msg[5] || {}, msg[3] || {});
    } else if (type === GOODBYE) {
      this.goodbyeReason = msg[2];
      if (!this.leaving) this.send([GOODBYE, {}, 'wamp.close.goodbye_and_out']);
      this.ws.close(1000);
    } else if (type === ABORT) {
      this.goodbyeReason = msg[2];
      this.ws.close(1000);
    }
  }

  request(msg) {
    if (this.closed) return Promise.reject(new Error('not connected'));
    return new Promise((resolve, reject) => {
      this.pending.set(msg[1], { resolve, reject });
      this.send(msg);
    });
  }

  // Resolves with {args, kwargs}; rejects with WampError.
  call(procedure, args = [], kwargs = {}) {
    const id = this.nextId++;
    return this.request([CALL, id, {}, procedure, args, kwargs]);
  }

  // handler(args, kwargs, details); resolves with the subscription id.
  async subscribe(topic, handler) {
    const id = this.nextId++;
    const sub = await this.request([SUBSCRIBE, id, {}, topic]);
    this.subs.set(sub, handler);
    return sub;
  }

  async unsubscribe(sub) {
    this.subs.delete(sub);
    const id = this.nextId++;
    await this.request([UNSUBSCRIBE, id, sub]);
  }

  // Leaves with GOODBYE; the router answers GOODBYE and the connection closes.
  close() {
    if (this.closed || !this.ws) return;
    this.leaving = true;
    try {
      this.send([GOODBYE, {}, 'wamp.close.close_realm']);
    } catch {
      this.ws.close(1000);
    }
  }
}
