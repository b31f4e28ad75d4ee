'use strict';
// Cluster-wide SCAN (scanIterator), the one-key iterators (hscan/sscan/zscanIterator) and
// Script (EVALSHA reloaded by the core on NOSCRIPT), against the bundled slotlane-server
// (4 shards per-shard, ports 25060-25063; 1 shard plain, port 25070) and a 3-primary Redis
// Cluster (ports 25220-25225): 100 000 keys each once, a live reshard during whole scans
// (every key that existed throughout comes, duplicates counted), MATCH and TYPE, an empty
// cluster, a script flushed on one node reloaded there exactly once (INFO commandstats).
const test = require('node:test');
const assert = require('node:assert/strict');
const sl = require('..');
const { startSlotlaneServer, startRedisCluster, withClient, waitBlocked } = require('./helpers');

let server, single, cluster;
test.before(() => {
  server = startSlotlaneServer(25060, 4);
  single = startSlotlaneServer(25070, 1);
  cluster = startRedisCluster(25220, 3);
});
test.after(() => {
  server && server.stop();
  single && single.stop();
  cluster && cluster.stop();
});

async function fill(c, keys, value = 'v') {
  for (let i = 0; i < keys.length; i += 5000) await Promise.all(keys.slice(i, i + 5000).map((k) => c.set(k, value)));
}

async function counted(iter) {
  const seen = new Map();
  for await (const k of iter) seen.set(k, (seen.get(k) || 0) + 1);
  return seen;
}

// A key that the node serving `n`'s first slot range owns.
function keyOn(n, prefix) {
  for (let i = 0; ; i++) {
    const k = `${prefix}:${i}`;
    const s = sl.keySlot(k);
    if (n.slots.some(([a, b]) => s >= a && s <= b)) return k;
  }
}

async function scriptLoads(c, addr) {
  const info = await c.sendCommand(['INFO', 'commandstats'], { route: { node: addr } });
  const m = /cmdstat_script\|load:calls=(\d+)/.exec(info);
  return m ? Number(m[1]) : 0;
}

for (const where of ['slotlane-server', 'redis-cluster']) {
  const url = () => (where === 'slotlane-server' ? server.url : cluster.url);

  test(`${where}: scanIterator returns every key once; MATCH, TYPE, COUNT; an empty cluster`, async () => {
    await withClient({ url: url() }, async (c) => {
      assert.equal(c.mode, 'cluster');
      await c.sendCommand(['FLUSHALL'], { route: 'all-primaries' });
      assert.equal((await counted(c.scanIterator())).size, 0);
      const keys = Array.from({ length: 3000 }, (_, i) => `sk:${i}`);
      await fill(c, keys);
      await c.hset('sh:1', { f: 'v' });
      const seen = await counted(c.scanIterator({ count: 100 }));
      assert.equal(seen.size, 3001);
      assert.ok([...seen.values()].every((n) => n === 1));
      for (const k of keys) assert.ok(seen.has(k), k);
      const m = await counted(c.scanIterator({ match: 'sk:1*' }));
      assert.deepEqual([...m.keys()].sort(), keys.filter((k) => k.startsWith('sk:1')).sort());
      assert.deepEqual([...(await counted(c.scanIterator({ type: 'hash' }))).keys()], ['sh:1']);
      // leaving the loop early frees the iterator; the client goes on
      for await (const k of c.scanIterator()) { assert.equal(typeof k, 'string'); break; }
      assert.equal(await c.get('sk:7'), 'v');
      await assert.rejects(c.scanIterator({ count: 0 }).next(), RangeError);
      await assert.rejects(c.scanIterator({ match: 5 }).next(), TypeError);
      await assert.rejects(c.scanIterator({ type: 7 }).next(), TypeError);
      await c.sendCommand(['FLUSHALL'], { route: 'all-primaries' });
    });
  });

  test(`${where}: hscan/sscan/zscanIterator iterate one key`, async () => {
    await withClient({ url: url() }, async (c) => {
      const fields = {};
      for (let i = 0; i < 500; i++) fields[`f${i}`] = `v${i}`;
      await c.delete('ih', 'is', 'iz');
      await c.hset('ih', fields);
      await c.sadd('is', Object.keys(fields));
      await c.zadd('iz', Object.keys(fields).map((f, i) => [i, f]));
      const h = new Map();
      for await (const [f, v] of c.hscanIterator('ih', { count: 50 })) h.set(f, v);
      assert.equal(h.size, 500);
      assert.equal(h.get('f42'), 'v42');
      const s = new Set();
      for await (const m of c.sscanIterator('is', { match: 'f1*' })) s.add(m);
      assert.deepEqual([...s].sort(), Object.keys(fields).filter((f) => f.startsWith('f1')).sort());
      const z = new Map();
      for await (const [m, score] of c.zscanIterator('iz')) z.set(m, score);
      assert.equal(z.size, 500);
      assert.equal(z.get('f7'), 7);
      let none = 0;
      for await (const x of c.hscanIterator('missing')) none += x ? 1 : 0;
      assert.equal(none, 0);
      await c.delete('ih', 'is', 'iz');
    });
  });

  test(`${where}: Script runs on every shard; flushed on one node, it is reloaded there once`, async () => {
    await withClient({ url: url() }, async (c) => {
      await c.sendCommand(['SCRIPT', 'FLUSH']);
      const script = c.createScript("return redis.call('INCR', KEYS[1]) + tonumber(ARGV[1])");
      assert.equal(script.sha, await c.scriptLoad(script.body)); // the core's SHA1 is the server's
      const primaries = c.nodes().filter((n) => n.primary);
      const keys = primaries.map((n) => keyOn(n, 'sc'));
      await c.delete(...keys);
      for (const k of keys) assert.equal(await script.run({ keys: [k], args: [10] }), 11);
      const victim = primaries[primaries.length - 1];
      const before = await Promise.all(primaries.map((n) => scriptLoads(c, n.addr)));
      await c.sendCommand(['SCRIPT', 'FLUSH'], { route: { node: victim.addr } });
      assert.equal(await script.run({ keys: [keys[keys.length - 1]], args: [0] }), 2);
      assert.equal(await script.run({ keys: [keys[keys.length - 1]], args: [0] }), 3);
      const after = await Promise.all(primaries.map((n) => scriptLoads(c, n.addr)));
      if (before[before.length - 1] > 0 || after[after.length - 1] > 0) { // the server counts SCRIPT LOAD
        assert.equal(after[after.length - 1] - before[before.length - 1], 1);
        for (let i = 0; i < primaries.length - 1; i++) assert.equal(after[i], before[i]);
      }
      const ro = c.createScript("return redis.call('GET', KEYS[1])");
      assert.equal(await ro.run({ keys: [keys[0]], readonly: true }), '1');
      await assert.rejects(c.createScript('this is not lua').run({ keys: [keys[0]] }), sl.ReplyError);
      await assert.rejects(script.run({ keys: 'k' }), TypeError);
      assert.throws(() => c.createScript(5), TypeError);
      // many at once: each its own batch, all answered
      const vals = await Promise.all(keys.map((k) => script.run({ keys: [k], args: [0] })));
      assert.deepEqual(vals, keys.map((_, i) => (i === keys.length - 1 ? 4 : 2)));
      await c.delete(...keys);
    });
  });
}

test('plain mode: scanIterator over the one node; a script', async () => {
  await withClient({ url: single.url, cluster: false }, async (c) => {
    assert.equal(c.mode, 'plain');
    await c.sendCommand(['FLUSHALL']);
    const keys = Array.from({ length: 700 }, (_, i) => `pk:${i}`);
    await fill(c, keys);
    const seen = await counted(c.scanIterator({ count: 64 }));
    assert.equal(seen.size, 700);
    assert.ok([...seen.values()].every((n) => n === 1));
    assert.equal(await c.createScript('return 5').run(), 5);
    await c.sendCommand(['FLUSHALL']);
  });
});

test('aborting a scan cancels only its page; the connection stays in step', async () => {
  await withClient({ url: single.url, cluster: false }, async (c) => {
    await withClient({ url: single.url, cluster: false }, async (admin) => {
      await c.sendCommand(['FLUSHALL']);
      await fill(c, Array.from({ length: 200 }, (_, i) => `ab:${i}`));
      const connects = c.stats().connects;
      const blpop = c.sendCommand(['BLPOP', 'ab:list', '0']); // holds the one connection
      await waitBlocked(admin);
      const ac = new AbortController();
      const it = c.scanIterator({ signal: ac.signal });
      const page = it.next(); // its SCAN is queued behind the BLPOP on the same connection
      ac.abort(new Error('enough'));
      await assert.rejects(page, (e) => e instanceof sl.CancelledError && e.cause.message === 'enough');
      await admin.sendCommand(['RPUSH', 'ab:list', 'x']);
      assert.deepEqual(await blpop, ['ab:list', 'x']); // its own reply; the SCAN's was dropped
      assert.equal(await c.get('ab:7'), 'v');
      assert.equal((await counted(c.scanIterator())).size, 200);
      assert.equal(c.stats().connects, connects); // nothing was closed
      const done = new AbortController();
      done.abort();
      await assert.rejects(c.scanIterator({ signal: done.signal }).next(), sl.CancelledError);
      await assert.rejects(c.scanIterator({ signal: {} }).next(), TypeError);
      await c.sendCommand(['FLUSHALL']);
    });
  });
});

test('redis-cluster: 100 000 keys each once', async () => {
  await withClient({ url: cluster.url }, async (c) => {
    await c.sendCommand(['FLUSHALL'], { route: 'all-primaries' });
    const keys = Array.from({ length: 100000 }, (_, i) => `big:${i}`);
    await fill(c, keys);
    const seen = await counted(c.scanIterator({ count: 1000 }));
    assert.equal(seen.size, 100000);
    assert.ok([...seen.values()].every((n) => n === 1));
    for (const k of keys) assert.ok(seen.has(k), k);
    await c.sendCommand(['FLUSHALL'], { route: 'all-primaries' });
  });
});

test('redis-cluster: whole scans during a live reshard miss no key (duplicates counted)', async () => {
  await withClient({ url: cluster.url }, async (c) => {
    await c.sendCommand(['FLUSHALL'], { route: 'all-primaries' });
    const keys = Array.from({ length: 30000 }, (_, i) => `rs:${i}`);
    await fill(c, keys);
    const first = c.nodes().find((n) => n.primary && n.slots.some(([a]) => a === 0));
    const src = Number(first.addr.split(':').pop());
    const dst = cluster.ports.find((p) => p !== src);
    let scans = 0, dups = 0;
    for (const slot of [0, 977, 1954]) {
      let done = null;
      const mig = cluster.migrate(slot, src, dst, 2).then((r) => { done = r; });
      do {
        const seen = await counted(c.scanIterator({ count: 200 }));
        const missed = keys.filter((k) => !seen.has(k));
        assert.equal(missed.length, 0, `${missed.length} keys missed during the move of slot ${slot}, e.g. ${missed.slice(0, 3)}`);
        for (const n of seen.values()) dups += n - 1;
        scans++;
      } while (done === null);
      await mig;
      assert.equal(done.code, 0, done.out);
    }
    assert.ok(scans >= 3);
    console.log(`reshard of 3 slots: ${scans} full scans, ${dups} duplicates`);
    await c.sendCommand(['FLUSHALL'], { route: 'all-primaries' });
  });
});
