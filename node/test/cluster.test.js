'use strict';
// Against a real Redis Cluster (Debian's redis-server, 3 primaries, ports 25200-25205):
// MOVED/ASK during a live reshard (redirects counted by the core), then a primary killed
// while a batch is in flight on it. A few seconds each.
const test = require('node:test');
const assert = require('node:assert/strict');
const sl = require('..');
const { startRedisCluster, ownerPort, freeze } = require('./helpers');

let cluster;
test.before(() => { cluster = startRedisCluster(25200, 3); });
test.after(() => { cluster && cluster.stop(); });

test('nodes(): every primary with its slot ranges; a per-node command is one loop', async () => {
  const c = sl.createClient({ url: cluster.url });
  try {
    await c.connect();
    const nodes = c.nodes();
    const primaries = nodes.filter((n) => n.primary);
    assert.equal(primaries.length, 3);
    assert.equal(primaries.reduce((s, n) => s + n.slots.reduce((t, [a, b]) => t + b - a + 1, 0), 0), 16384);
    for (const n of nodes) if (!n.primary) assert.ok(primaries.some((p) => p.addr === n.primaryAddr));
    for (const n of primaries) assert.equal(await c.sendCommand(['PING'], { route: { node: n.addr } }), 'PONG');
  } finally {
    await c.close();
  }
  assert.throws(() => c.nodes(), sl.ConnectionError);
});

test('MOVED and ASK during a live reshard: every reply right, redirects followed', async () => {
  const c = sl.createClient({ url: cluster.url });
  try {
    await c.connect();
    assert.equal(c.mode, 'cluster');
    await c.sendCommand(['FLUSHALL'], { route: 'all-primaries' });
    const tag = '{resh}';
    const slot = sl.keySlot(tag);
    const keys = Array.from({ length: 300 }, (_, i) => `${tag}:${i}`);
    const others = Array.from({ length: 100 }, (_, i) => `spread:${i}`);
    const all = keys.concat(others);
    await Promise.all(all.map((k) => c.set(k, k)));
    const src = await ownerPort(c, slot);
    const dst = cluster.ports.find((p) => p !== src);
    const before = c.stats();
    let done = null;
    const mig = cluster.migrate(slot, src, dst, 10).then((r) => { done = r; });
    let rounds = 0;
    while (done === null) {
      // automatic pipelining: the whole round is one batch
      const vals = await Promise.all(all.map((k) => c.get(k)));
      vals.forEach((v, i) => assert.equal(v, all[i]));
      rounds++;
    }
    await mig;
    assert.equal(done.code, 0, done.out);
    // the next batch meets MOVED for the stale slot and follows it
    const vals = await Promise.all(keys.map((k) => c.get(k)));
    vals.forEach((v, i) => assert.equal(v, keys[i]));
    const after = c.stats();
    assert.ok(after.moved > before.moved, `no MOVED followed: ${JSON.stringify([before, after])}`);
    assert.ok(after.moved + after.ask > before.moved + before.ask);
    assert.equal(await ownerPort(c, slot), dst);
    assert.ok(rounds >= 1);
  } finally {
    await c.close();
  }
});

test('a primary killed mid-batch fails only the commands routed to it', async () => {
  // commandTimeout far beyond the test: an 'io' error (not 'timeout') then says the kill
  // was noticed, with no wall-clock window that a busy machine could miss
  const c = sl.createClient({ url: cluster.url, connectTimeout: 500, commandTimeout: 600000 });
  try {
    await c.connect();
    await c.sendCommand(['FLUSHALL'], { route: 'all-primaries' });
    const keys = Array.from({ length: 600 }, (_, i) => `kill:${i}`);
    await Promise.all(keys.map((k) => c.set(k, k)));
    const victim = cluster.ports[1];
    const owners = await Promise.all(keys.map((k) => ownerPort(c, sl.keySlot(k))));
    const onVictim = new Set(keys.filter((k, i) => owners[i] === victim));
    assert.ok(onVictim.size > 0 && onVictim.size < keys.length);
    // Freeze the victim so the batch is in flight on it, then kill it.
    freeze(cluster.pid(victim));
    let settled = false;
    const batch = c.pipeline();
    for (const k of keys) batch.get(k);
    const pending = batch.exec().then((r) => { settled = true; return r; });
    await new Promise((r) => setImmediate(r));
    assert.equal(settled, false, 'the batch should wait for the frozen node');
    cluster.kill(victim); // SIGKILL works on a stopped process
    const r = await pending;
    keys.forEach((k, i) => {
      const [err, val] = r[i];
      if (onVictim.has(k)) {
        assert.ok(err instanceof sl.ConnectionError, `${k}: ${err} ${val}`);
        assert.equal(err.kind, 'io');
        assert.ok(err.message.length > 0);
      } else {
        assert.equal(err, null, `${k}: ${err}`);
        assert.equal(val, k);
      }
    });
    // The next batch: the other nodes answer; the victim's commands fail alone.
    const r2 = await Promise.allSettled(keys.map((k) => c.get(k)));
    keys.forEach((k, i) => {
      if (onVictim.has(k)) assert.equal(r2[i].status, 'rejected');
      else assert.deepEqual(r2[i], { status: 'fulfilled', value: k });
    });
    assert.ok(r2.filter((x) => x.status === 'rejected').every((x) => x.reason instanceof sl.SlotlaneError));
  } finally {
    await c.close();
  }
});
