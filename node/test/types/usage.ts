// Compiled with tsc --strict --noEmit by ci/test-node.sh: the declarations cover the API as
// the tests use it, and misuse is rejected (the @ts-expect-error lines must be errors).
import {
  createClient, Client, Pipeline, keySlot, version, COMMANDS, Reply, Stats,
  SlotlaneError, ReplyError, ConnectionError, TimeoutError, ClusterError,
} from 'slotlane';

async function main(): Promise<void> {
  const c: Client = createClient({ url: 'redis://127.0.0.1:6379', cluster: true, resp: 3, returnBuffers: false });
  const d = createClient('redis://127.0.0.1:6379');
  const e = createClient({ host: 'localhost', port: 7000, commandTimeout: 100, connectTimeout: 100, maxRedirects: 3 });
  await c.connect();
  const m: 'plain' | 'cluster' | null = c.mode;
  const open: boolean = c.isOpen;
  const v: Reply = await c.get('k');
  await c.set('k', 'v', 'EX', 10);
  await c.set(Buffer.from('k'), 5n);
  await c.mget('a', 'b');
  await c.sendCommand(['DBSIZE'], { route: 'all-primaries' });
  await c.sendCommand(['PING'], { route: { node: '127.0.0.1:7000' } });
  await c.sendCommand(['PING'], { route: { slot: 5 } });
  const p: Pipeline = c.pipeline().set('a', 1).get('a').incr('n').sendCommand(['PING']);
  const n: number = p.length;
  const r = await p.exec();
  for (const [err, val] of r) {
    if (err) { const k: string = err.kind; console.log(k); } else { console.log(val); }
  }
  await c.batch().ping().exec();
  const s: Stats = c.stats();
  const slot: number = keySlot('foo') + keySlot(Buffer.from('x'));
  const ver: string = version;
  const names: readonly string[] = COMMANDS;
  try { await c.incr('k'); } catch (x) {
    if (x instanceof ReplyError) { const code: string = x.code; console.log(code); }
    if (x instanceof SlotlaneError || x instanceof ConnectionError || x instanceof TimeoutError || x instanceof ClusterError) console.log(x.kind);
  }
  await c.close();
  await d.quit();
  await e.disconnect();
  console.log(m, open, v, n, s.moved, slot, ver, names);
  // @ts-expect-error cluster is a boolean
  createClient({ cluster: 'yes' });
  // @ts-expect-error a command is an array
  c.sendCommand('PING');
  // @ts-expect-error routes are named
  c.sendCommand(['PING'], { route: 'everywhere' });
  // @ts-expect-error objects are not arguments
  c.get({});
}
void main;
