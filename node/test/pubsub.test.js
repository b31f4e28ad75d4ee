'use strict';
// client.pubsub(): events and the async iterator over the core's subscriber, against
// slotlane-server (4 shards, ports 25060-25063) and a 3-primary Redis Cluster (ports
// 25120-25125): messages, patterns, shard channels, binary and 1 MB payloads, 20 000 in
// order, a primary killed with SIGKILL and restarted (connectionLost, then resubscribed),
// a shard channel's slot migrated while publishing, the overflow policy, a connection that
// died silently (the health check notices: a server of its own on port 25075), bad arguments.
// Every wait ends on an event or a counter; the test's timeout only turns a hang into a
// failure.
const test = require('node:test');
const assert = require('node:assert/strict');
const sl = require('..');
const { startSlotlaneServer, startRedisCluster, ownerPort, freeze } = require('./helpers');

let server;
let cluster;
test.before(() => {
  server = startSlotlaneServer(25060, 4);
  cluster = startRedisCluster(25120, 3);
});
test.after(() => {
  server && server.stop();
  cluster && cluster.stop();
});

/** The next emission of event on emitter (its arguments). */
function once(emitter, event, pred = () => true) {
  return new Promise((resolve) => {
    const f = (...args) => {
      if (!pred(...args)) return;
      emitter.off(event, f);
      resolve(args);
    };
    emitter.on(event, f);
  });
}

for (const [name, url] of [['slotlane-server', () => server.url], ['redis-cluster', () => cluster.url]]) {
  test(`${name}: messages, patterns, shard channels, binary, 1 MB, 20 000 in order`, { timeout: 60000 }, async () => {
    const c = sl.createClient(url());
    const sub = c.pubsub();
    try {
      assert.equal(await sub.subscribe('ps:news'), 1);
      assert.equal(await sub.psubscribe('ps:n*'), 2);
      await sub.ssubscribe('ps:{s}shard');
      const got = once(sub, 'message');
      const pgot = once(sub, 'pmessage');
      await c.publish('ps:news', 'héllo');
      assert.deepEqual(await got, ['ps:news', 'héllo']);
      assert.deepEqual(await pgot, ['ps:n*', 'ps:news', 'héllo']);
      const big = Buffer.alloc(1 << 20, 7);
      const sgot = once(sub, 'smessage');
      assert.equal(await c.spublish('ps:{s}shard', big), 1);
      const [sch, smsg] = await sgot;
      assert.equal(sch, 'ps:{s}shard');
      assert.equal(smsg.length, 1 << 20);
      await sub.punsubscribe();
      const n = 20000;
      const seen = [];
      const done = new Promise((resolve) => {
        sub.on('message', (ch, m) => { seen.push(m); if (seen.length === n) resolve(); });
      });
      const pl = c.pipeline();
      for (let i = 0; i < n; i++) pl.publish('ps:news', String(i));
      await pl.exec();
      await done;
      for (let i = 0; i < n; i++) assert.equal(seen[i], String(i));
      const st = sub.stats();
      assert.equal(st.dropped, 0);
      assert.equal(st.connectionLosses, 0);
    } finally {
      sub.close();
      await c.quit();
    }
  });
}

test('binary channels and payloads with returnBuffers; the async iterator', { timeout: 30000 }, async () => {
  const c = sl.createClient({ url: server.url, returnBuffers: true });
  const sub = c.pubsub();
  try {
    const ch = Buffer.from([0, 1, 2, 255, 13, 10]);
    await sub.subscribe(ch);
    const payload = Buffer.from([0, 13, 10, 42, 36, 255]);
    const records = sub[Symbol.asyncIterator](); // from now on
    for (let i = 0; i < 50; i++) await c.publish(ch, Buffer.concat([payload, Buffer.from([i])]));
    let i = 0;
    for await (const m of { [Symbol.asyncIterator]: () => records }) {
      if (m.type !== 'message') continue;
      assert.deepEqual(m.channel, ch);
      assert.deepEqual(m.data, Buffer.concat([payload, Buffer.from([i])]));
      assert.equal(m.pattern, null);
      if (++i === 50) break;
    }
  } finally {
    sub.close();
    await c.quit();
  }
});

test('overflow: the newest are dropped, one overflow event says how many', { timeout: 30000 }, async () => {
  const c = sl.createClient(server.url);
  const sub = c.pubsub({ maxQueueBytes: 20 * (32 + 8 + 100) });
  try {
    await sub.subscribe('ps:over');
    const it = sub[Symbol.asyncIterator](); // it pauses the drain at its high water
    const pl = c.pipeline();
    // the iterator buffers up to 4096 records itself; beyond them the core's bound applies
    for (let i = 0; i < 6000; i++) pl.publish('ps:over', String(i).padStart(8, '0') + 'x'.repeat(92));
    await pl.exec();
    for (;;) { // counters of the core: every message handled, kept or dropped
      const st = sub.stats();
      if (st.messages + st.dropped >= 6000) break;
      await new Promise((r) => setImmediate(r));
    }
    assert.ok(sub.stats().dropped > 0, JSON.stringify(sub.stats()));
    // every run of drops is one overflow record at its place: the numbers kept plus the
    // counts of the overflow records between them account for every message, in order
    let expect = 0;
    let overflows = 0;
    let dropped = 0;
    while (expect < 6000) {
      const { value: m } = await it.next();
      if (m.type === 'overflow') {
        overflows++;
        dropped += m.data;
        expect += m.data;
        continue;
      }
      assert.equal(m.type, 'message');
      assert.equal(m.data.slice(0, 8), String(expect).padStart(8, '0'));
      expect++;
    }
    assert.equal(expect, 6000);
    assert.ok(overflows >= 1);
    assert.equal(dropped, sub.stats().dropped);
    await it.return();
  } finally {
    sub.close();
    await c.quit();
  }
});

test('a primary killed with SIGKILL and restarted: connectionLost, resubscribed, messages again', { timeout: 90000 }, async () => {
  const c = sl.createClient(cluster.url);
  const sub = c.pubsub();
  try {
    const ch = 'ps:{k}kill';
    await sub.ssubscribe(ch);
    const port = await ownerPort(c, sl.keySlot(ch));
    const lost = once(sub, 'connectionLost');
    cluster.kill(port);
    const [why] = await lost;
    assert.match(why, new RegExp(String(port)));
    const back = once(sub, 'resubscribed', (name) => name === ch);
    cluster.restart(port);
    const [, kind] = await back;
    assert.equal(kind, 'ssubscribe');
    const got = once(sub, 'smessage');
    for (;;) { // the command client's own connection to the node broke: it reconnects
      try { if (await c.spublish(ch, 'after') === 1) break; } catch { /* reconnecting */ }
      await new Promise((r) => setTimeout(r, 50));
    }
    assert.deepEqual(await got, [ch, 'after']);
  } finally {
    sub.close();
    await c.quit();
  }
});

test("a shard channel's slot migrated while publishing: resubscribed on the new owner, still receiving", { timeout: 120000 }, async () => {
  const c = sl.createClient(cluster.url);
  const sub = c.pubsub();
  try {
    const ch = 'ps:{m}move';
    const slot = sl.keySlot(ch);
    await sub.ssubscribe(ch);
    const src = await ownerPort(c, slot);
    const dst = cluster.ports.find((p) => p !== src);
    let stop = false;
    let last = -1;
    sub.on('smessage', (name, m) => { last = Number(m); });
    const publisher = (async () => {
      for (let i = 0; !stop; i++) {
        try { await c.spublish(ch, String(i)); } catch { /* during the move */ }
      }
    })();
    const back = once(sub, 'resubscribed', (name) => name === ch);
    const r = await cluster.migrate(slot, src, dst);
    assert.equal(r.code, 0, r.out);
    await back;
    const mark = last;
    await once(sub, 'smessage', (name, m) => Number(m) > mark); // receiving after the move
    stop = true;
    await publisher;
    const r2 = await cluster.migrate(slot, dst, src); // leave the cluster as it was
    assert.equal(r2.code, 0, r2.out);
  } finally {
    sub.close();
    await c.quit();
  }
});

// Issue 20: a connection that died silently (the server frozen with SIGSTOP: the socket
// stays open, no FIN, nothing read) is noticed by the health check — a PING after
// healthCheckInterval of silence, unanswered for as long again — and reported as
// connectionLost; once the server runs again the subscriber reconnects and reports the
// channel resubscribed. A server of its own (slotlane-server, 1 shard, port 25075), frozen
// and thawed by its PID. Decided by the events and the pings counter.
test('a subscriber whose connection died silently notices: health-check PING, connectionLost, resubscribed', { timeout: 90000 }, async () => {
  const own = startSlotlaneServer(25075, 1, { separateProcess: true }); // frozen with SIGSTOP below
  const c = sl.createClient(own.url);
  const sub = c.pubsub({ healthCheckInterval: 200 });
  try {
    await sub.subscribe('hc:ch');
    const first = once(sub, 'message');
    await c.publish('hc:ch', 'before');
    assert.deepEqual(await first, ['hc:ch', 'before']);
    const lost = once(sub, 'connectionLost');
    const back = once(sub, 'resubscribed', (ch) => ch === 'hc:ch');
    freeze(own.pid); // from now on nothing is answered, and nothing says so
    const [why] = await lost; // only the health check can tell
    assert.ok(typeof why === 'string' && why.length > 0, String(why));
    const st = sub.stats();
    assert.ok(st.pings >= 1, JSON.stringify(st));
    assert.equal(st.connectionLosses, 1);
    process.kill(own.pid, 'SIGCONT');
    assert.deepEqual(await back, ['hc:ch', 'subscribe']);
    const again = once(sub, 'message', (ch, m) => m === 'after');
    await c.publish('hc:ch', 'after'); // the command client's own connection never broke
    assert.deepEqual(await again, ['hc:ch', 'after']);
  } finally {
    sub.close();
    await c.close();
    own.stop();
  }
});

test('bad arguments and a closed subscriber', { timeout: 30000 }, async () => {
  const c = sl.createClient(server.url);
  try {
    assert.throws(() => c.pubsub({ maxQueueBytes: -1 }), TypeError);
    assert.throws(() => c.pubsub({ healthCheckInterval: 1.5 }), TypeError);
    const sub = c.pubsub();
    await assert.rejects(sub.subscribe({}), TypeError);
    sub.close();
    await assert.rejects(sub.subscribe('x'), /closed/);
    const bad = sl.createClient('127.0.0.1:25299').pubsub();
    await assert.rejects(bad.connect(), sl.ConnectionError);
  } finally {
    await c.quit();
  }
});
