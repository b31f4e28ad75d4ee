'use strict';
// The public API against the bundled slotlane-server: 4 shards in per-shard mode (a cluster,
// ports 25010-25013) and 1 shard (every slot, used in plain mode, port 25030).
const test = require('node:test');
const assert = require('node:assert/strict');
const { spawnSync } = require('node:child_process');
const path = require('node:path');
const sl = require('..');
const { startSlotlaneServer, freeze, withClient } = require('./helpers');

let cluster, single;
test.before(() => {
  cluster = startSlotlaneServer(25010, 4);
  single = startSlotlaneServer(25030, 1, { separateProcess: true }); // frozen with SIGSTOP below
});
test.after(() => {
  cluster && cluster.stop();
  single && single.stop();
});

test('module exports', () => {
  assert.equal(sl.version, require('../package.json').version);
  assert.equal(sl.keySlot('foo'), 12182);
  assert.equal(sl.keySlot(Buffer.from('{user1000}.following')), sl.keySlot('{user1000}.followers'));
  assert.equal(sl.keySlot(new Uint8Array([102, 111, 111])), 12182);
  for (const E of [sl.ReplyError, sl.ConnectionError, sl.TimeoutError, sl.ClusterError]) {
    assert.ok(new E('x', 'k') instanceof sl.SlotlaneError);
    assert.ok(new E('x', 'k') instanceof Error);
  }
  assert.equal(new sl.ReplyError('WRONGTYPE Operation').code, 'WRONGTYPE');
});

test('createClient: url, host/port, cluster detection and forced modes', async () => {
  await withClient(cluster.url, async (c) => {
    assert.equal(c.mode, 'cluster');
    assert.equal(c.isOpen, true);
  });
  await withClient({ url: `127.0.0.1:${cluster.port}` }, async (c) => assert.equal(c.mode, 'cluster'));
  await withClient({ host: '127.0.0.1', port: cluster.port + 2, cluster: true }, async (c) => {
    assert.equal(c.mode, 'cluster');
    assert.equal(await c.set('k:hostport', 'v'), true);
    assert.equal(c.stats().nodes, 4);
  });
  await withClient({ port: single.port, cluster: false }, async (c) => {
    assert.equal(c.mode, 'plain');
    assert.equal(await c.set('plain:k', 'v'), true);
    assert.equal(await c.get('plain:k'), 'v');
    assert.equal(c.stats().nodes, 1);
  });
  // connect() resolves with the client; commands issued before it are queued
  const c = sl.createClient({ url: cluster.url });
  const early = c.set('early', 'yes');
  assert.equal(c.mode, null);
  assert.equal(await c.connect(), c);
  assert.equal(await early, true);
  assert.equal(await c.get('early'), 'yes');
  await c.quit();
  assert.equal(c.isOpen, false);
});

test('connect failures reject with ConnectionError and fail queued commands', async () => {
  const c = sl.createClient({ port: 25499, connectTimeout: 500 });
  const queued = c.get('x');
  await assert.rejects(c.connect(), (e) => e instanceof sl.ConnectionError && /connect/.test(e.message));
  await assert.rejects(queued, sl.ConnectionError);
  await assert.rejects(c.get('y'), (e) => e instanceof sl.ConnectionError && e.kind === 'closed');
  await c.close();
  // rediss:// where nothing listens: a connection error (TLS itself: tls.test.js)
  const t = sl.createClient({ url: 'rediss://127.0.0.1:25499', connectTimeout: 500 });
  await assert.rejects(t.connect(), (e) => e instanceof sl.ConnectionError && /connect/.test(e.message));
  await t.close();
});

test('string, number, bigint, Buffer arguments; strings and Buffers back', async () => {
  await withClient(cluster.url, async (c) => {
    assert.equal(await c.set('u:1', 'héllo wörld ✓ 😀'), true);
    assert.equal(await c.get('u:1'), 'héllo wörld ✓ 😀');
    const long = 'é'.repeat(5000); // 10000 bytes: the length prefix has more digits than the length
    await c.set('u:long', long);
    assert.equal(await c.get('u:long'), long);
    assert.equal(await c.strlen('u:long'), 10000);
    const bin = Buffer.from([0, 1, 2, 255, 13, 10, 0]);
    await c.set(Buffer.from('u:bin'), bin);
    await c.set('u:num', 42);
    assert.equal(await c.get('u:num'), '42');
    await c.set('u:big', 12345678901234567890n);
    assert.equal(await c.get('u:big'), '12345678901234567890');
    assert.equal(await c.set('u:empty', ''), true);
    assert.equal(await c.get('u:empty'), '');
  });
  await withClient({ url: cluster.url, returnBuffers: true }, async (c) => {
    assert.deepEqual(await c.get('u:bin'), Buffer.from([0, 1, 2, 255, 13, 10, 0]));
    assert.deepEqual(await c.get('u:1'), Buffer.from('héllo wörld ✓ 😀'));
    assert.equal(await c.get('u:none'), null);
  });
});

test('integers: Numbers when safe, BigInt beyond 2^53', async () => {
  await withClient(cluster.url, async (c) => {
    await c.delete('n:1');
    assert.equal(await c.incrby('n:1', 5), 5);
    assert.equal(await c.decrby('n:1', 10), -5);
    assert.equal(await c.incrby('n:1', 2 ** 53), 2 ** 53 - 5);
    assert.equal(await c.incrby('n:1', 2 ** 40), 9007199254740987n + 1099511627776n);
    await c.set('n:2', '-9223372036854775808');
    assert.equal(await c.incrby('n:2', 0), -9223372036854775808n);
  });
});

test('every command helper sends its command (client and pipeline)', async () => {
  // the typed methods are rendered from bindings/spec/ (spec-conformance.test.js calls each)
  const names = Object.values(sl.METHODS);
  assert.ok(names.length > 250);
  await withClient(cluster.url, async (c) => {
    const p = c.pipeline();
    for (const name of names) {
      assert.equal(typeof c[name], 'function', name);
      assert.equal(typeof p[name], 'function', name);
    }
    assert.equal(p.get('h:probe').strlen('h:probe'), p); // pipeline methods queue and chain
    assert.equal(p.length, 2);
    // A helper's reply equals sendCommand's with the same arguments.
    await c.set('h:s', 'v');
    assert.equal(await c.get('h:s'), await c.sendCommand(['GET', 'h:s']));
    assert.equal(await c.exists('h:s', 'h:none'), 1);
    assert.equal(await c.append('h:s', 'w'), 2);
    assert.equal(await c.getrange('h:s', 0, 0), 'v');
    assert.equal(await c.getset('h:s', 'x'), 'vw');
    assert.equal(await c.getdel('h:s'), 'x');
    assert.equal(await c.setnx('h:s', '1'), true);
    assert.equal(await c.incr('h:s'), 2);
    assert.equal(await c.decr('h:s'), 1);
    assert.equal(await c.incrbyfloat('h:s', 0.5), 1.5);
    assert.equal(await c.expire('h:s', 100), true);
    assert.ok((await c.ttl('h:s')) > 0);
    assert.ok((await c.pttl('h:s')) > 0);
    assert.equal(await c.persist('h:s'), true);
    assert.equal(await c.type('h:s'), 'string');
    assert.equal(await c.setex('h:ex', 100, 'e'), true);
    assert.equal(await c.hset('h:h', { f1: 'a', f2: 'b' }), 2);
    assert.equal(await c.hget('h:h', 'f1'), 'a');
    assert.deepEqual(await c.hmget('h:h', ['f1', 'f2', 'f3']), ['a', 'b', null]);
    assert.deepEqual(await c.hgetall('h:h'), new Map([['f1', 'a'], ['f2', 'b']])); // a Map in RESP2 and RESP3
    assert.equal(await c.hlen('h:h'), 2);
    assert.equal(await c.hincrby('h:h', 'n', 3), 3);
    assert.equal(await c.hexists('h:h', 'n'), true);
    assert.equal(await c.hdel('h:h', ['n']), 1);
    assert.deepEqual((await c.hkeys('h:h')).sort(), ['f1', 'f2']);
    assert.deepEqual((await c.hvals('h:h')).sort(), ['a', 'b']);
    assert.equal(await c.rpush('h:l', ['a', 'b', 'c']), 3);
    assert.equal(await c.lpush('h:l', ['z']), 4);
    assert.deepEqual(await c.lrange('h:l', 0, -1), ['z', 'a', 'b', 'c']);
    assert.equal(await c.llen('h:l'), 4);
    assert.equal(await c.lindex('h:l', 1), 'a');
    assert.equal(await c.lpop('h:l'), 'z');
    assert.equal(await c.rpop('h:l'), 'c');
    assert.equal(await c.sadd('h:set', ['a', 'b', 'a']), 2);
    assert.deepEqual(await c.smembers('h:set'), new Set(['a', 'b']));
    assert.equal(await c.sismember('h:set', 'a'), true);
    assert.equal(await c.scard('h:set'), 2);
    assert.equal(await c.srem('h:set', ['a']), 1);
    assert.equal(await c.zadd('h:z', [[1, 'one'], [2, 'two']]), 2);
    assert.deepEqual(await c.zrange('h:z', 0, -1), ['one', 'two']);
    assert.deepEqual(await c.zrangeWithscores('h:z', 0, -1), [['one', 1], ['two', 2]]);
    assert.equal(await c.zscore('h:z', 'two'), 2);
    assert.equal(await c.zcard('h:z'), 2);
    assert.equal(await c.zrank('h:z', 'two'), 1);
    assert.equal(await c.zincrby('h:z', 2, 'one'), 3);
    assert.equal(await c.zrem('h:z', ['one']), 1);
    assert.equal(await c.ping(), 'PONG');
    assert.equal(await c.echo('hi'), 'hi');
    assert.equal(await c.mset({ 'h:m1': '1', 'h:m2': '2', 'h:m3': '3' }), true);
    assert.deepEqual(await c.mget('h:m1', 'h:m2', 'h:m3', 'h:none'), ['1', '2', '3', null]);
    assert.equal(await c.delete('h:m1', 'h:m2', 'h:m3', 'h:none'), 3);
    assert.equal(await c.unlink('h:ex'), 1);
  });
});

test('sendCommand and routes: all-primaries, node, slot, random', async () => {
  await withClient(cluster.url, async (c) => {
    assert.equal(await c.sendCommand(['FLUSHALL'], { route: 'all-primaries' }), 'OK');
    for (let i = 0; i < 100; i++) c.set(`r:${i}`, i);
    assert.equal(await c.sendCommand(['DBSIZE'], { route: 'all-primaries' }), 100);
    const perNode = [];
    for (let i = 0; i < 4; i++) perNode.push(await c.sendCommand(['DBSIZE'], { route: { node: `127.0.0.1:${cluster.port + i}` } }));
    assert.equal(perNode.reduce((a, b) => a + b, 0), 100);
    assert.ok(perNode.every((n) => n > 0 && n < 100), String(perNode));
    const slot = sl.keySlot('r:7');
    const keys = await c.sendCommand(['KEYS', '*'], { route: { slot } });
    assert.ok(keys.includes('r:7'));
    assert.equal(typeof (await c.sendCommand(['DBSIZE'], { route: 'random' })), 'number');
    // routed and unrouted commands in one tick keep their order
    const [a, b, d, e] = await Promise.all([
      c.get('r:1'), c.sendCommand(['DBSIZE'], { route: 'all-primaries' }), c.get('r:2'),
      c.sendCommand(['PING'], { route: { slot: 5 } }),
    ]);
    assert.deepEqual([a, b, d, e], ['1', 100, '2', 'PONG']);
  });
});

test('automatic pipelining: one batch per tick, thousands of promises in flight', async () => {
  await withClient(cluster.url, async (c) => {
    const N = 20000;
    const before = c.stats();
    const sets = [];
    for (let i = 0; i < N; i++) sets.push(c.set(`auto:${i}`, `value-${i}`));
    assert.deepEqual(new Set(await Promise.all(sets)), new Set([true]));
    const gets = [];
    for (let i = 0; i < N; i++) gets.push(c.get(`auto:${i}`));
    const vals = await Promise.all(gets);
    for (let i = 0; i < N; i++) assert.equal(vals[i], `value-${i}`);
    const after = c.stats();
    assert.equal(after.commands - before.commands, 2 * N);
    // Several batches in flight at once on one client: issue from many ticks without waiting.
    const waves = [];
    await new Promise((resolve) => {
      let w = 0;
      const tick = () => {
        const ps = [];
        for (let i = 0; i < 500; i++) ps.push(c.incr(`wave:${i % 50}`));
        waves.push(Promise.all(ps));
        if (++w < 40) setImmediate(tick); else resolve();
      };
      tick();
    });
    await Promise.all(waves);
    const counters = await c.mget(...Array.from({ length: 50 }, (_, i) => `wave:${i}`));
    assert.ok(counters.every((v) => v === '400'), String(counters));
    // replies land in the right promises even when many records need bigger buffers
    const big = 'x'.repeat(300000);
    const ps = [];
    for (let i = 0; i < 20; i++) ps.push(c.set(`bigv:${i}`, big + i));
    await Promise.all(ps);
    const got = await Promise.all(Array.from({ length: 20 }, (_, i) => c.get(`bigv:${i}`)));
    got.forEach((v, i) => assert.equal(v, big + i));
  });
});

test('pipeline(): per-command results and errors, in order', async () => {
  await withClient(cluster.url, async (c) => {
    await c.delete('p:list');
    const p = c.pipeline()
      .set('p:a', '1')
      .incr('p:a')
      .rpush('p:list', ['x'])
      .get('p:list')
      .sendCommand(['GET', 'p:a'])
      .sendCommand(['DBSIZE'], { route: 'all-primaries' })
      .mget('p:a', 'p:nothing');
    assert.equal(p.length, 7);
    const r = await p.exec();
    assert.equal(r.length, 7);
    assert.deepEqual(r[0], [null, true]);
    assert.deepEqual(r[1], [null, 2]);
    assert.deepEqual(r[2], [null, 1]);
    assert.ok(r[3][0] instanceof sl.ReplyError);
    assert.equal(r[3][0].code, 'WRONGTYPE');
    assert.equal(r[3][1], null);
    assert.deepEqual(r[4], [null, '2']);
    assert.equal(typeof r[5][1], 'number');
    assert.deepEqual(r[6], [null, ['2', null]]);
    assert.deepEqual(await c.pipeline().exec(), []);
    assert.deepEqual(await c.batch().ping().exec(), [[null, 'PONG']]);
    // exec empties the pipeline; it can be reused
    assert.equal(p.length, 0);
    assert.deepEqual(await p.get('p:a').exec(), [[null, '2']]);
  });
});

test('errors: ReplyError fails only its own command', async () => {
  await withClient(cluster.url, async (c) => {
    await c.set('e:str', 'x');
    const [a, b, d] = await Promise.allSettled([c.incr('e:str'), c.get('e:str'), c.sendCommand(['NOSUCHCOMMAND', 'k'])]);
    assert.equal(a.status, 'rejected');
    assert.ok(a.reason instanceof sl.ReplyError);
    assert.equal(a.reason.kind, 'server');
    assert.equal(a.reason.code, 'ERR');
    assert.deepEqual(b, { status: 'fulfilled', value: 'x' });
    assert.ok(d.reason instanceof sl.ReplyError);
    assert.match(d.reason.message, /unknown command/);
    // a cross-slot MSET is split by the core (no routing here), a plain client gets MOVED
    // replies as ReplyErrors for keys of other shards
    assert.equal(await c.mset([['e:1', 'a'], ['e:2', 'b'], ['e:3', 'c']]), true);
  });
  await withClient({ url: cluster.url, cluster: false }, async (c) => {
    const r = await c.pipeline().get('e:1').get('e:2').get('e:3').exec();
    const moved = r.filter(([e]) => e);
    assert.ok(moved.length > 0 && moved.every(([e]) => e instanceof sl.ReplyError && e.code === 'MOVED'));
  });
});

test('bad argument types throw TypeError with clear messages, and send nothing', async () => {
  assert.throws(() => sl.createClient(5), { name: 'TypeError', message: /options must be an object or a URL string \(got number\)/ });
  assert.throws(() => sl.createClient(null), TypeError);
  assert.throws(() => sl.createClient({ port: '6379' }), { name: 'TypeError', message: /option port must be an integer \(got string\)/ });
  assert.throws(() => sl.createClient({ port: 70000 }), RangeError);
  assert.throws(() => sl.createClient({ url: 5 }), { name: 'TypeError', message: /option url must be a string/ });
  assert.throws(() => sl.createClient({ url: 'x:1', port: 5 }), { name: 'TypeError', message: /either url or host\/port/ });
  assert.throws(() => sl.createClient({ cluster: 'yes' }), { name: 'TypeError', message: /cluster must be a boolean/ });
  assert.throws(() => sl.createClient({ resp: '3' }), TypeError);
  assert.throws(() => sl.createClient({ resp: 4 }), RangeError);
  assert.throws(() => sl.createClient({ returnBuffers: 1 }), TypeError);
  assert.throws(() => sl.createClient({ commandTimeout: 1.5 }), TypeError);
  assert.throws(() => sl.keySlot(5), { name: 'TypeError', message: /keySlot needs a string or a Buffer \(got number\)/ });
  await withClient(cluster.url, async (c) => {
    const before = c.stats().commands;
    assert.throws(() => c.sendCommand('GET k'), { name: 'TypeError', message: /command must be an array of arguments \(got string\)/ });
    assert.throws(() => c.sendCommand([]), { name: 'TypeError', message: /at least its name/ });
    assert.throws(() => c.sendCommand([5, 'k']), { name: 'TypeError', message: /command name must be a string or a Buffer \(got number\)/ });
    assert.throws(() => c.sendCommand(['GET', 'k'], 'all-primaries'), { name: 'TypeError', message: /options must be an object/ });
    assert.throws(() => c.sendCommand(['GET', 'k'], { route: 'everywhere' }), { name: 'TypeError', message: /route must be/ });
    assert.throws(() => c.sendCommand(['GET', 'k'], { route: { slot: 16384 } }), TypeError);
    assert.throws(() => c.get({}), { name: 'TypeError', message: /argument 1 of GET must be a string, number, bigint, Buffer or Uint8Array \(got object\)/ });
    assert.throws(() => c.set('k', null), { name: 'TypeError', message: /argument 2 of SET .*\(got null\)/ });
    assert.throws(() => c.set('k', undefined), { message: /\(got undefined\)/ });
    assert.throws(() => c.set('k', NaN), { message: /\(got NaN\)/ });
    assert.throws(() => c.set('k', Symbol('s')), { message: /\(got symbol\)/ });
    assert.throws(() => c.set('k', [1]), { message: /\(got array\)/ });
    assert.throws(() => c.hset('k', { f: () => 1 }), { message: /argument 3 of HSET .*\(got function\)/ });
    const p = c.pipeline().set('tp:ok', '1').set('tp:bad', {});
    assert.throws(() => p.exec(), TypeError);
    assert.throws(() => c.pipeline().sendCommand('PING'), TypeError);
    // nothing of the refused commands (nor of the pipeline) reached the server
    assert.equal(await c.get('tp:ok'), null);
    assert.equal(c.stats().commands - before, 1);
  });
});

test('timeouts and in-flight commands on close', async () => {
  await withClient({ url: single.url, commandTimeout: 300 }, async (c) => {
    await c.set('t:k', 'v');
    const d = sl.createClient({ url: single.url });
    await d.connect();
    freeze(single.pid);
    try {
      const t0 = Date.now();
      await assert.rejects(c.get('t:k'), (e) => e instanceof sl.TimeoutError && e.kind === 'timeout');
      assert.ok(Date.now() - t0 >= 250);
      // disconnect(): in-flight commands fail at once with a CancelledError (the spec's
      // errors table: a cancelled call raises CancelledError in every language)
      const inflight = d.get('t:k');
      await new Promise((r) => setTimeout(r, 50));
      await d.disconnect();
      await assert.rejects(inflight, (e) => e instanceof sl.CancelledError && e.kind === 'cancelled');
      await assert.rejects(d.get('t:k'), (e) => e instanceof sl.ConnectionError && e.kind === 'closed');
    } finally {
      process.kill(single.pid, 'SIGCONT');
    }
    assert.equal(await c.get('t:k'), 'v');
  });
});

test('close() answers what was issued, then refuses; quit is its alias', async () => {
  const c = sl.createClient(cluster.url);
  await c.connect();
  const ps = [];
  for (let i = 0; i < 1000; i++) ps.push(c.set(`cl:${i}`, i));
  const closed = c.close();
  assert.equal(c.quit(), closed); // the same close
  await assert.rejects(c.get('cl:1'), (e) => e instanceof sl.ConnectionError && e.kind === 'closed');
  assert.ok((await Promise.all(ps)).every((r) => r === true));
  await closed;
  assert.throws(() => c.stats(), sl.ConnectionError);
  // close before the connection is up
  const early = sl.createClient(cluster.url);
  const q = early.get('cl:5');
  await early.close();
  assert.equal(await q, '5');
});

test('close() and disconnect() from inside reply handlers', async () => {
  const c = sl.createClient(cluster.url);
  const inner = [];
  await c.set('re:a', '1').then(() => { inner.push(c.get('re:a')); inner.push(c.close()); });
  assert.equal(await inner[0], '1');
  await inner[1];
  await assert.rejects(c.get('re:a'), sl.ConnectionError);
  // disconnect() while other batches of the client are in flight
  const d = sl.createClient({ url: cluster.url });
  {
    await d.connect();
    const ps = [];
    for (let t = 0; t < 5; t++) {
      for (let i = 0; i < 100; i++) ps.push(d.get('re:a'));
      await new Promise((r) => setImmediate(r));
    }
    const all = Promise.allSettled(ps);
    await d.get('re:a').then(() => d.disconnect());
    for (const x of await all) {
      assert.ok(x.status === 'fulfilled' ? x.value === '1' : x.reason instanceof sl.ConnectionError || x.reason instanceof sl.CancelledError);
    }
  }
  // each command issued from the previous one's handler: slots reused from callbacks
  const e = sl.createClient(cluster.url);
  await e.delete('re:seq');
  for (let i = 0; i < 2000; i++) await e.incr('re:seq');
  assert.equal(await e.get('re:seq'), '2000');
  await e.close();
});

function runChild(code, flags = []) {
  return spawnSync(process.execPath, [...flags, '-e', code], {
    encoding: 'utf8', timeout: 20000, cwd: path.join(__dirname, '..'),
  });
}

test('an idle client does not keep the process alive', () => {
  const r = runChild(`
    const sl = require('.');
    const c = sl.createClient(${JSON.stringify(cluster.url)});
    c.set('idle:k', 'v').then((v) => { console.log('done', v); });`);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), 'done true');
  assert.equal(r.signal, null);
});

test('a Worker with commands in flight ends cleanly (env cleanup hook)', () => {
  const r = runChild(`
    const { Worker } = require('worker_threads');
    const w = new Worker(\`
      const sl = require(${JSON.stringify(path.join(__dirname, '..'))});
      const { parentPort } = require('worker_threads');
      const c = sl.createClient(${JSON.stringify(cluster.url)});
      c.connect().then(() => {
        for (let i = 0; i < 5000; i++) c.set('w:' + i, i);
        parentPort.postMessage('busy');
      });\`, { eval: true });
    w.on('message', () => setTimeout(() => w.terminate().then((code) => console.log('terminated', code)), 1));
    w.on('error', (e) => { console.error(e); process.exit(3); });`);
  assert.equal(r.status, 0, r.stderr);
  assert.match(r.stdout, /terminated 1/);
});

test('a client dropped without close() is collected and its connections closed', () => {
  const r = runChild(`
    const sl = require('.');
    (async () => {
      const d = sl.createClient(${JSON.stringify(cluster.url)});
      const shard0 = { route: { node: '127.0.0.1:${cluster.port}' } };
      const clients = async () => Number(/connected_clients:(\\d+)/.exec(await d.sendCommand(['INFO', 'clients'], shard0))[1]);
      const n0 = await clients();
      let c = sl.createClient(${JSON.stringify(cluster.url)});
      await c.sendCommand(['PING'], shard0);
      const n1 = await clients();
      c = null;
      let n2 = n1;
      for (let i = 0; i < 100 && n2 !== n0; i++) {
        global.gc();
        await new Promise((r) => setTimeout(r, 20));
        n2 = await clients();
      }
      console.log(n1 - n0, n2 - n0);
      await d.close();
    })();`, ['--expose-gc']);
  assert.equal(r.status, 0, r.stderr);
  assert.equal(r.stdout.trim(), '1 0');
});
