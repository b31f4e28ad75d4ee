'use strict';
// AbortSignal on sendCommand and Pipeline.exec, against slotlane-server (1 shard, port
// 25050): a BLPOP the server holds runs on a connection leased for it, so a GET to the same
// node is not behind it; aborted, the call rejects with a CancelledError at once (the
// signal's reason as its cause) and its lease is closed (the element pushed afterwards
// stays in the list), the shared connection untouched. A pipeline holding a BLPOP is
// refused before sending.
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

// Until the server has no blocked client: an aborted BLPOP's leased connection is gone.
async function waitUnblocked(admin) {
  const limit = Date.now() + 30000;
  while (Date.now() < limit) {
    const info = String(await admin.sendCommand(['INFO', 'clients']));
    if (/blocked_clients:0\b/.test(info)) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('a client stayed blocked');
}

test('a BLPOP waits on a connection of its own; aborting it closes only that one', async () => {
  const [c, admin] = await clients();
  try {
    await c.set('ab:k', 'v');
    const connects = c.stats().connects;
    const ac = new AbortController();
    const blpop = c.sendCommand(['BLPOP', 'ab:l', '0'], { signal: ac.signal });
    await waitBlocked(admin);
    assert.equal(await c.get('ab:k'), 'v'); // the same node, not behind the held BLPOP
    ac.abort(new Error('the user gave up'));
    await assert.rejects(blpop, (e) => e instanceof sl.CancelledError && e.cause.message === 'the user gave up');
    await waitUnblocked(admin); // its lease was closed: a still-armed pop cannot take an element
    await admin.sendCommand(['RPUSH', 'ab:l', 'x']);
    assert.equal(await c.sendCommand(['LLEN', 'ab:l']), 1); // nothing swallowed
    assert.equal(await c.get('ab:k'), 'v');
    assert.equal(c.stats().connects, connects); // the shared connection stayed
  } finally {
    await c.close();
    await admin.close();
  }
});

test('a pipeline holding a blocking command is refused before anything is sent', async () => {
  const [c, admin] = await clients();
  try {
    const p = c.pipeline();
    p.set('ab:p', '1');
    p.sendCommand(['BLPOP', 'ab:pl', '0']);
    const out = await p.exec();
    for (const [err] of out) {
      assert.ok(err instanceof sl.ArgumentError && /BLPOP blocks and cannot run in a pipeline/.test(err.message), String(err));
    }
    assert.equal(await c.get('ab:p'), null);
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
