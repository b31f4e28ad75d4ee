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

// What goes alone is the core's answer (sl_command_blocking), asked through the addon:
// a leased connection shows as one more client on the server (INFO clients), a command in
// the shared pipeline as none. A blocking command in the tick of a GET would fail both
// with SL_EBLOCKING (ArgumentError) if it were not sent alone.
async function connectedClients(admin) {
  const info = String(await admin.sendCommand(['INFO', 'clients']));
  return Number(/connected_clients:(\d+)/.exec(info)[1]);
}

test('the core classifies blocking commands: names in any case or as Buffers, XREAD per call', async () => {
  const [c, admin] = await clients();
  try {
    const base = await connectedClients(admin); // c's shared connection, admin's
    await c.set('ab:ck', 'v');
    // XREAD without BLOCK (a stream named BLOCK after STREAMS): the shared pipeline
    const [nb, g1] = await Promise.all([c.sendCommand(['XREAD', 'STREAMS', 'BLOCK', '0']), c.get('ab:ck')]);
    assert.equal(nb, null);
    assert.equal(g1, 'v');
    assert.equal(await connectedClients(admin), base); // no lease was taken
    // the same name with BLOCK (a number and a Buffer among the arguments): alone, on a lease
    const xr = c.sendCommand(['XREAD', 'block', 0, 'STREAMS', 'ab:cs', Buffer.from('$')]);
    const g2 = c.get('ab:ck'); // same tick: not behind it, not refused with it
    assert.equal(await g2, 'v');
    await waitBlocked(admin);
    assert.equal(await connectedClients(admin), base + 1);
    await admin.sendCommand(['XADD', 'ab:cs', '*', 'f', 'x']);
    const got = await xr;
    assert.equal(String(got[0][0]), 'ab:cs');
    // a lowercase BLPOP from sendCommand and the typed blpop: leased too (the lease is reused)
    await admin.sendCommand(['RPUSH', 'ab:cl', 'a', 'b']);
    const [p1, g3] = await Promise.all([c.sendCommand(['blpop', 'ab:cl', '0']), c.get('ab:ck')]);
    assert.deepEqual(p1, ['ab:cl', 'a']);
    assert.equal(g3, 'v');
    const [p2, g4] = await Promise.all([c.blpop(['ab:cl'], 0), c.get('ab:ck')]);
    assert.deepEqual(p2, ['ab:cl', 'b']);
    assert.equal(g4, 'v');
    await admin.sendCommand(['RPUSH', 'ab:cl', 'c']);
    const [p3, g5] = await Promise.all([c.sendCommand([Buffer.from('BLPOP'), 'ab:cl', '0']), c.get('ab:ck')]);
    assert.deepEqual(p3, ['ab:cl', 'c']); // a Buffer name
    assert.equal(g5, 'v');
    assert.equal(await connectedClients(admin), base + 1); // one lease, reused; nothing else leased
    // a bad argument is still the encoder's TypeError, classification or not
    assert.throws(() => c.sendCommand(['BLPOP', 'ab:cl', {}]), TypeError);
    assert.throws(() => c.sendCommand(null), TypeError);
  } finally {
    await c.close();
    await admin.close();
  }
});
