'use strict';
// One subscriber of bench/pubsub/run.py: slotlane's client.pubsub() or ioredis's subscriber
// mode (node/bench/node_modules), each used the way its users do ('message' events). It
// prints "ready" once subscribed, receives N messages, checks every one (sequence number and
// length) and prints one JSON line with its CPU (process.cpuUsage: every thread of the
// process, the core's subscriber thread included) from ready to the last message.
//
//   node sub_node.js slotlane|ioredis URL CHANNEL N SIZE
const path = require('path');

const [client, url, channel, nArg, sizeArg] = process.argv.slice(2);
const n = Number(nArg);
const size = Number(sizeArg);
const root = path.resolve(__dirname, '..', '..');

async function main() {
  let sub;
  let close;
  if (client === 'slotlane') {
    const sl = require(path.join(root, 'node'));
    const c = sl.createClient(url);
    sub = c.pubsub({ maxQueueBytes: 2 ** 30 }); // the bench checks every message: none may be dropped
    sub.on('overflow', () => { console.error('messages were dropped'); process.exit(1); });
    await sub.subscribe(channel);
    close = async () => { sub.close(); await c.quit(); };
  } else {
    const Redis = require(path.join(root, 'node', 'bench', 'node_modules', 'ioredis'));
    sub = new Redis(url);
    await sub.subscribe(channel);
    close = async () => { sub.disconnect(); };
  }
  const u0 = process.cpuUsage();
  const t0 = process.hrtime.bigint();
  process.stdout.write('ready\n');
  let got = 0;
  let bad = null;
  await new Promise((resolve) => {
    sub.on('message', (ch, m) => {
      if (m.length !== size || Number(m.slice(0, 8)) !== got) bad = bad || `message ${got}: ${m.slice(0, 8)} (${m.length})`;
      if (++got === n) resolve();
    });
  });
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  const u = process.cpuUsage(u0);
  process.stdout.write(JSON.stringify({ received: got, ok: bad === null, error: bad, wall_s: wall,
    user_ns: u.user * 1000, sys_ns: u.system * 1000 }) + '\n');
  await close();
  process.exit(0);
}

main().catch((e) => { console.error(e); process.exit(1); });
