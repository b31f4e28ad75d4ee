'use strict';
// require('slotlane/testing'): the embedded slotlane-server in the test process. Two servers
// at once on ephemeral ports, a server stopped under a connected client (an error, not a
// hang or the deadline), 100 starts and stops without leaked threads or file descriptors,
// durability 'always' restarted on the same directory, bad options.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');
const sl = require('..');
const { startServer } = require('../testing');
const { withClient } = require('./helpers');


const count = (dir) => fs.readdirSync(dir).length;

test('two servers at once on ephemeral ports', async () => {
  const a = startServer({ shards: 4 });
  const b = startServer({ shards: 2, portMode: 'one-port' });
  try {
    assert.equal(new Set(a.ports).size, 4);
    assert.ok(!a.ports.includes(0) && !a.ports.includes(b.ports[0]));
    assert.equal(b.ports[0], b.ports[1]);
    assert.equal(a.url, `redis://127.0.0.1:${a.ports[0]}`);
    await withClient({ url: a.url }, async (ca) => {
      await withClient({ url: b.url }, async (cb) => {
        for (let i = 0; i < 64; i++) await ca.set(`key:${i}`, `a${i}`);
        await cb.set('key:1', 'b1');
        assert.equal(String(await ca.get('key:1')), 'a1');
        assert.equal(String(await cb.get('key:1')), 'b1');
        assert.equal(await cb.get('key:2'), null);
        assert.equal(await ca.dbsize(), 64);
        assert.equal(await cb.dbsize(), 1);
      });
    });
  } finally {
    a.stop();
    b.stop();
  }
});

test('a server stopped while connected gives errors, not hangs', async () => {
  const s = startServer({ shards: 2 });
  await withClient({ url: s.url, commandTimeout: 60000 }, async (c) => {
    await c.set('k', 'v');
    s.stop();
    await assert.rejects(c.get('k'), (e) => {
      assert.ok(e instanceof sl.SlotlaneError, String(e));
      assert.ok(!(e instanceof sl.TimeoutError), `never the 60 s deadline: ${e}`);
      return true;
    });
  });
  s.stop(); // a second stop: nothing
});

test('start and stop 100 times without leaked threads or fds', async () => {
  const round = async (i) => {
    const s = startServer({ shards: (i % 3) + 1, portMode: i % 2 ? 'one-port' : 'per-shard', misrouted: 'forward' });
    await withClient({ url: s.url, cluster: false }, async (c) => {
      await c.set('k', String(i));
    });
    s.stop();
  };
  await round(0); // what Node and the process make once (the client's first use included)
  await round(1);
  const fds0 = count('/proc/self/fd');
  const threads0 = count('/proc/self/task');
  for (let i = 0; i < 100; i++) await round(i);
  const fds1 = count('/proc/self/fd');
  const threads1 = count('/proc/self/task');
  console.log(`100 starts/stops: fds ${fds0} -> ${fds1}, threads ${threads0} -> ${threads1}`);
  assert.equal(fds1, fds0);
  assert.equal(threads1, threads0);
});

test("durability 'always' restarted on the same directory keeps its data", async () => {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slotlane-node-always-'));
  const opts = { shards: 3, durability: 'always', dir };
  try {
    let s = startServer(opts);
    assert.throws(() => startServer(opts), /in use|cannot use/);
    await withClient({ url: s.url }, async (c) => {
      for (let i = 0; i < 50; i++) await c.set(`key:${i}`, `v${i}`);
    });
    s.stop();
    s = startServer(opts);
    try {
      await withClient({ url: s.url }, async (c) => {
        assert.equal(await c.dbsize(), 50);
        assert.equal(String(await c.get('key:17')), 'v17');
      });
    } finally {
      s.stop();
    }
  } finally {
    fs.rmSync(dir, { recursive: true, force: true });
  }
});

test('bad options are errors', () => {
  assert.throws(() => startServer({ shards: 0 }), /shards/);
  assert.throws(() => startServer({ portMode: 'sideways' }), /portMode/);
  assert.throws(() => startServer({ settings: { maxclients: 'many' } }), /maxclients/);
  const a = startServer({ shards: 1 });
  try {
    assert.throws(() => startServer({ shards: 1, port: a.ports[0] }), /listen/);
  } finally {
    a.stop();
  }
});
