'use strict';
// Replica reads and topology events (issue 21) against a Redis Cluster of 3 primaries x 1
// replica (Debian's redis-server, ports 25230-25241, cluster-node-timeout 2 s): readFrom
// sends read-only commands to the replicas or not (each node's INFO commandstats counts
// them) and fall back to the primary when the replica is killed, stats() counts
// replicaReads, and onEvent reports the topology change a CLUSTER
// FAILOVER makes, on the main thread, with a "host:port"; a primary killed with SIGKILL is
// reported nodeDown then failover, and no read fails across it. Decided by replies,
// counters and events, never by sleeping.
const test = require('node:test');
const assert = require('node:assert/strict');
const sl = require('..');
const { spawnSync } = require('node:child_process');
const { startRedisCluster } = require('./helpers');

const BASE = 25230;
let cluster;
test.before(() => { cluster = startRedisCluster(BASE, 3, 1); });
test.after(() => { cluster && cluster.stop(); });

// One node alone (plain mode).
/** A number of the node's INFO replication (master_repl_offset: sent by a primary, applied by a replica). */
async function replField(port, field) {
  const info = String(await onNode(port, (n) => n.sendCommand(['INFO', 'replication'])));
  const line = info.split(/\r?\n/).find((l) => l.startsWith(`${field}:`));
  if (!line) throw new Error(`${port} has no ${field}`);
  return Number(line.slice(field.length + 1));
}

/**
 * Until each replica applied what its primary had sent (a WAIT on another connection waits
 * for that connection's writes only, none, and returns at once).
 */
async function waitReplicated(replicas) {
  for (const r of replicas) {
    const want = await replField(await replField(r, 'master_port'), 'master_repl_offset');
    for (let i = 0; (await replField(r, 'master_repl_offset')) < want; i++) {
      if (i === 30000) throw new Error(`replica ${r} never reached offset ${want}`);
      await new Promise((res) => setTimeout(res, 2)); // a poll interval on the server's counter
    }
  }
}

async function onNode(port, fn) {
  const c = sl.createClient({ port, cluster: false });
  try {
    await c.connect();
    return await fn(c);
  } finally {
    await c.close();
  }
}

async function getCalls(port) {
  const info = String(await onNode(port, (c) => c.sendCommand(['INFO', 'commandstats'])));
  const m = /^cmdstat_get:calls=(\d+)/m.exec(info);
  return m ? Number(m[1]) : 0;
}

// [primary ports, replica ports], by each node's own INFO replication.
async function roles() {
  const prim = [], rep = [];
  for (const p of cluster.ports) {
    const info = String(await onNode(p, (c) => c.sendCommand(['INFO', 'replication'])));
    (/^role:slave/m.test(info) ? rep : prim).push(p);
  }
  return [prim, rep];
}

// 100 GETs through a client of readFrom: [GETs the replicas served, GETs the primaries served].
async function spread(readFrom) {
  const c = sl.createClient({ url: cluster.url, readFrom });
  try {
    await c.connect();
    const keys = Array.from({ length: 100 }, (_, i) => `rf:${readFrom}:${i}`);
    await Promise.all(keys.map((k) => c.set(k, k)));
    const [prim, rep] = await roles();
    // the replicas hold the writes before they are read
    await waitReplicated(rep);
    const before = new Map();
    for (const p of [...prim, ...rep]) before.set(p, await getCalls(p));
    const replicaReads = c.stats().replicaReads;
    assert.deepEqual(await Promise.all(keys.map((k) => c.get(k))), keys);
    let onRep = 0, onPrim = 0;
    for (const p of rep) onRep += (await getCalls(p)) - before.get(p);
    for (const p of prim) onPrim += (await getCalls(p)) - before.get(p);
    return { onRep, onPrim, replicaReads: c.stats().replicaReads - replicaReads };
  } finally {
    await c.close();
  }
}

test('readFrom and retryWrites are checked', () => {
  assert.throws(() => sl.createClient({ readFrom: 'nearest' }), (e) => e instanceof TypeError && /readFrom must be 'primary', 'preferReplica' or 'replicas' \(got 'nearest'\)/.test(e.message));
  assert.throws(() => sl.createClient({ readFrom: 1 }), /readFrom must be .* \(got number\)/);
  assert.throws(() => sl.createClient({ readFrom: 'toString' }), TypeError);
  assert.throws(() => sl.createClient({ retryWrites: 'yes' }), /retryWrites must be a boolean \(got string\)/);
  assert.throws(() => sl.createClient({ onEvent: 'log' }), /onEvent must be a function \(got string\)/);
});

test("readFrom 'preferReplica' and 'replicas': GETs land on the replicas", async () => {
  for (const readFrom of ['preferReplica', 'replicas']) {
    const r = await spread(readFrom);
    assert.deepEqual(r, { onRep: 100, onPrim: 0, replicaReads: 100 }, readFrom);
  }
});

test("readFrom 'primary' (the default): GETs land on the primaries", async () => {
  assert.deepEqual(await spread('primary'), { onRep: 0, onPrim: 100, replicaReads: 0 });
});

test("preferReplica falls back to the primary when the replica is down", { timeout: 120000 }, async () => {
  const events = [];
  const c = sl.createClient({ url: cluster.url, readFrom: 'preferReplica', onEvent: (e, a) => { events.push([e, a]); } });
  let stopped = null;
  try {
    await c.connect();
    const keys = Array.from({ length: 300 }, (_, i) => `fb:${i}`);
    await Promise.all(keys.map((k) => c.set(k, k)));
    const [prim, rep] = await roles();
    await waitReplicated(rep);
    assert.deepEqual(await Promise.all(keys.map((k) => c.get(k))), keys); // connected to every replica
    stopped = rep[0];
    const primaryOf = Number(/^master_port:(\d+)/m.exec(String(await onNode(stopped, (n) => n.sendCommand(['INFO', 'replication']))))[1]);
    cluster.kill(stopped);
    const before = await getCalls(primaryOf);
    // every read is answered (by the primary where the replica is gone), none fails
    const limit = Date.now() + 60000;
    for (;;) {
      assert.deepEqual(await Promise.all(keys.map((k) => c.get(k))), keys);
      if ((await getCalls(primaryOf)) > before) break; // the primary took over its replica's reads
      assert.ok(Date.now() < limit, 'the primary never served a read of its slots');
    }
    assert.ok(events.some(([e, a]) => e === 'nodeDown' && a === `127.0.0.1:${stopped}`), JSON.stringify(events));
  } finally {
    await c.close();
    if (stopped !== null) cluster.restart(stopped); // back as the replica it was (the later tests fail primaries over)
  }
});

test('onEvent sees the topology change of a CLUSTER FAILOVER; the client keeps serving', async () => {
  const events = [];
  const onEvent = (event, addr) => { events.push([event, addr]); };
  const c = sl.createClient({ url: cluster.url, onEvent, readFrom: 'preferReplica' });
  try {
    await c.connect();
    assert.deepEqual(events.map(([e]) => e), ['topologyChanged']); // the discovery, before connect() resolved
    const keys = Array.from({ length: 200 }, (_, i) => `fo:${i}`);
    await Promise.all(keys.map((k) => c.set(k, 'v')));
    const [, rep] = await roles();
    const promoted = rep[0];
    const seenBefore = events.length;
    cluster.failover(promoted); // returns once promoted and every node agrees
    // The client learns it from a MOVED (a write to the old primary) or a refresh: keep
    // writing every key until an event says so. The bound only turns a hang into a failure.
    const limit = Date.now() + 60000;
    const seen = (name) => events.slice(seenBefore).find(([e]) => e === name);
    // (a MOVED may show the promotion before the refresh that changes the map: both come)
    while (!seen('failover') || !seen('topologyChanged')) {
      assert.ok(Date.now() < limit, `no failover and topologyChanged events within 60 s: ${JSON.stringify(events)}`);
      await Promise.all(keys.map((k) => c.set(k, 'w').catch(() => null)));
    }
    for (const [event, addr] of events) {
      assert.ok(['topologyChanged', 'nodeDown', 'nodeUp', 'failover'].includes(event), event);
      assert.match(addr, /^127\.0\.0\.1:\d+$/);
    }
    assert.deepEqual(seen('failover'), ['failover', `127.0.0.1:${promoted}`]);
    assert.ok(c.stats().failovers >= 1);
    // served again: every key reads and writes
    assert.deepEqual((await Promise.all(keys.map((k) => c.set(k, 'x')))).every((v) => v === true), true);
    assert.deepEqual(await Promise.all(keys.map((k) => c.get(k))), keys.map(() => 'x'));
    assert.ok(c.stats().refreshes >= 1);
  } finally {
    await c.close();
  }
});

test('a primary killed with SIGKILL: nodeDown, then failover; no read fails; every key is served again', { timeout: 120000 }, async () => {
  const events = [];
  const c = sl.createClient({ url: cluster.url, commandTimeout: 15000, onEvent: (event, addr) => { events.push([event, addr]); } });
  try {
    await c.connect();
    const [prim] = await roles();
    const victim = prim.find((p) => p !== BASE); // not the seed
    const keys = Array.from({ length: 60 }, (_, i) => `kf:${i}`);
    await Promise.all(keys.map((k) => c.set(k, 'v'))); // connected everywhere before the kill
    const failoversBefore = c.stats().failovers;
    const seenBefore = events.length;
    cluster.kill(victim);
    const seen = (name, addr) => events.slice(seenBefore).some(([e, a]) => e === name && (addr === undefined || a === addr));
    let failedReads = 0;
    const limit = Date.now() + 60000;
    while (!seen('failover')) {
      assert.ok(Date.now() < limit, `no failover event within 60 s: ${JSON.stringify(events)}`);
      const got = await Promise.all(keys.map((k) => c.get(k).then(() => 0, () => 1)));
      failedReads += got.reduce((a, b) => a + b, 0);
    }
    assert.equal(failedReads, 0, 'a read failed across the failover');
    assert.ok(seen('nodeDown', `127.0.0.1:${victim}`), JSON.stringify(events));
    assert.ok(c.stats().failovers > failoversBefore);
    assert.ok(c.stats().nodesDown >= 1);
    // served again: every key reads and writes
    assert.deepEqual(await Promise.all(keys.map((k) => c.get(k))), keys.map(() => 'v'));
    assert.ok((await Promise.all(keys.map((k) => c.set(k, 'w')))).every((v) => v === true));
  } finally {
    await c.close(); // (the victim stays down: the later tests need only a working cluster)
  }
});

test('the discovery of a connect is reported; an onEvent that throws is an uncaught exception', () => {
  // in a process of its own: node:test takes the uncaught exceptions of its own process
  const script = `
    const sl = require(${JSON.stringify(require.resolve('..'))});
    let client;
    process.on('uncaughtException', async (e) => {
      await client.connect();
      const ok = await client.set('ue:after', '1'); // the client is unharmed
      await client.close();
      console.log(JSON.stringify({ message: e.message, ok }));
    });
    client = sl.createClient({ url: ${JSON.stringify(cluster.url)}, onEvent: (event, addr) => { throw new Error('listener bug: ' + event + ' ' + addr); } });
    client.connect().catch((e) => { console.log(JSON.stringify({ connectError: e.message })); });`;
  const r = spawnSync(process.execPath, ['-e', script], { encoding: 'utf8', timeout: 60000 });
  assert.equal(r.status, 0, r.stderr);
  const out = JSON.parse(r.stdout.trim().split('\n')[0]);
  // the slot map found on connect's worker thread is a change, delivered on the main thread
  assert.match(out.message, /^listener bug: topologyChanged 127\.0\.0\.1:\d+$/);
  assert.equal(out.ok, true);
});

test('onEvent in a Worker that ends with commands in flight; an idle client with onEvent keeps no process alive', () => {
  const slPath = JSON.stringify(require.resolve('..'));
  const url = JSON.stringify(cluster.url);
  // a Worker: terminated from its first event (the connect's topologyChanged) with writes in flight
  const w = spawnSync(process.execPath, ['-e', `
    const { Worker } = require('worker_threads');
    const w = new Worker(\`
      const sl = require(${slPath});
      const { parentPort } = require('worker_threads');
      const c = sl.createClient({ url: ${url}, onEvent: (e) => parentPort.postMessage(e) });
      c.connect().then(() => { for (let i = 0; i < 5000; i++) c.set('we:' + i, i); parentPort.postMessage('busy'); });\`, { eval: true });
    const got = [];
    w.on('message', (m) => { got.push(m); if (m === 'busy') w.terminate().then((code) => console.log(JSON.stringify({ got, code }))); });
    w.on('error', (e) => { console.error(e); process.exit(3); });`], { encoding: 'utf8', timeout: 60000 });
  assert.equal(w.status, 0, w.stderr);
  const out = JSON.parse(w.stdout.trim());
  assert.equal(out.code, 1);
  assert.equal(out.got[0], 'topologyChanged'); // delivered before connect() resolved its then
  // the process ends by itself: the event delivery is unref'd (an open idle client is not held)
  const idle = spawnSync(process.execPath, ['-e', `
    const sl = require(${slPath});
    const seen = [];
    const c = sl.createClient({ url: ${url}, onEvent: (e) => seen.push(e) });
    c.set('idle:k', 'v').then(() => console.log(JSON.stringify(seen)));`], { encoding: 'utf8', timeout: 60000 });
  assert.equal(idle.status, 0, idle.stderr || `signal ${idle.signal}`);
  assert.deepEqual(JSON.parse(idle.stdout.trim()), ['topologyChanged']);
});
