// A user's test helper in a scratch project (ci/test-packages.sh node): the installed
// package's slotlane/testing starts a 4-shard slotlane-server in this process.
const sl = require('slotlane');
const { startServer } = require('slotlane/testing');

(async () => {
  const srv = startServer({ shards: 4 });
  const c = sl.createClient({ url: srv.url });
  try {
    await c.connect();
    for (let i = 0; i < 64; i++) await c.set(`pkg:js:${i}`, String(i));
    for (let i = 0; i < 64; i++) {
      const v = await c.get(`pkg:js:${i}`);
      if (String(v) !== String(i)) throw new Error(`pkg:js:${i} read back ${v}`);
    }
    console.log(`node-testing ok: 64 keys over ${srv.ports.length} shards at ${srv.url}`);
  } finally {
    await c.close();
    srv.stop();
  }
})().catch((e) => {
  console.error(e);
  process.exit(1);
});
