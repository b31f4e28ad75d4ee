'use strict';
// AbortSignal on sendCommand and Pipeline.exec, against slotlane-server (1 shard, port
// 25050): a BLPOP the server holds is aborted; the call rejects with a CancelledError at
// once (the signal's reason as its cause), and the command queued behind it on the same
// connection gets its own reply once the BLPOP's reply comes (dropped in the core) — the
// connection stays in step and is not closed.
const test = require('node:test');
const assert = require('node:assert/strict');
const sl = require('..');
const { startSlotlaneServer, waitBlocked } = require('./helpers');

let server;
test.before(() => { server = startSlotlaneServer(25050, 1); });
test.after(() => { server && server.stop(); });

async function clients() {
  const c = sl.createClient({ url: server.url });
  const admin = sl.createClient({ url: server.url });
  await c.connect();
  await admin.connect();
  return [c, admin];
}

test('aborting a command cancels only its batch; the connection stays in step', async () => {
  const [c, admin] = await clients();
  try {
    await c.set('ab:k', 'v');
    const connects = c.stats().connects;
    const ac = new AbortController();
    const blpop = c.sendCommand(['BLPOP', 'ab:l', '0'], { signal: ac.signal });
    await waitBlocked(admin);
    let behindDone = false;
    const behind = c.get('ab:k').then((v) => { behindDone = true; return v; });
    ac.abort(new Error('the user gave up'));
    await assert.rejects(blpop, (e) => e instanceof sl.CancelledError && e.cause.message === 'the user gave up');
    assert.equal(behindDone, false); // still behind the held BLPOP reply
    await admin.sendCommand(['RPUSH', 'ab:l', 'x']); // releases the BLPOP: its reply is dropped
    assert.equal(await behind, 'v');
    assert.equal(await c.sendCommand(['LLEN', 'ab:l']), 0); // the BLPOP did pop it
    assert.equal(await c.get('ab:k'), 'v');
    assert.equal(c.stats().connects, connects); // nothing was closed
  } finally {
    await c.close();
    await admin.close();
  }
});

test('aborting a pipeline cancels its unanswered commands only', async () => {
  const [c, admin] = await clients();
  try {
    const ac = new AbortController();
    const p = c.pipeline();
    p.set('ab:p', '1');
    p.sendCommand(['BLPOP', 'ab:pl', '0']);
    const res = p.exec({ signal: ac.signal });
    await waitBlocked(admin);
    const others = Promise.all([c.get('ab:p'), c.get('ab:p')]);
    ac.abort();
    const out = await res;
    assert.deepEqual(out[0], [null, true]); // its reply had arrived: kept
    assert.ok(out[1][0] instanceof sl.CancelledError, String(out[1][0]));
    await admin.sendCommand(['RPUSH', 'ab:pl', 'x']);
    assert.deepEqual(await others, ['1', '1']);
  } finally {
    await c.close();
    await admin.close();
  }
});

test('an aborted signal sends nothing; a bad signal is a TypeError', async () => {
  const [c, admin] = await clients();
  try {
    const ac = new AbortController();
    ac.abort();
    await assert.rejects(c.sendCommand(['INCR', 'ab:n'], { signal: ac.signal }), sl.CancelledError);
    const pr = await c.pipeline().incr('ab:n').exec({ signal: ac.signal }).catch((e) => e);
    assert.ok(pr instanceof sl.CancelledError);
    assert.equal(await c.get('ab:n'), null);
    assert.throws(() => c.sendCommand(['GET', 'x'], { signal: {} }), TypeError);
    assert.throws(() => c.pipeline().exec(7), TypeError);
    // a signal that is never aborted changes nothing
    const keep = new AbortController();
    assert.equal(await c.sendCommand(['INCR', 'ab:n'], { signal: keep.signal }), 1);
    const pairs = await c.pipeline().incr('ab:n').get('ab:n').exec({ signal: keep.signal });
    assert.deepEqual(pairs, [[null, 2], [null, '2']]);
  } finally {
    await c.close();
    await admin.close();
  }
});
