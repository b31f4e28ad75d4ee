// Compiled with tsc --strict --noEmit by ci/test-node.sh: the declarations cover the API as
// the tests use it, and misuse is rejected (the @ts-expect-error lines must be errors).
import {
  createClient, Client, Pipeline, keySlot, version, METHODS, Reply, Stats, ClientEvent, ReadFrom,
  SlotlaneError, ReplyError, ConnectionError, TimeoutError, ClusterError,
  CancelledError, ArgumentError, ProtocolError, ResourceError,
} from 'slotlane';

async function main(): Promise<void> {
  const c: Client = createClient({ url: 'redis://127.0.0.1:6379', cluster: true, resp: 3, returnBuffers: false });
  const d = createClient('redis://127.0.0.1:6379');
  const e = createClient({ host: 'localhost', port: 7000, commandTimeout: 100, connectTimeout: 100, maxRedirects: 3 });
  const events: Array<[ClientEvent, string]> = [];
  const rf: ReadFrom = 'preferReplica';
  const r2 = createClient({ url: 'redis://127.0.0.1:7000', readFrom: rf, retryWrites: true, onEvent: (ev, addr) => { events.push([ev, addr]); } });
  // @ts-expect-error: not a readFrom value
  createClient({ readFrom: 'replica' });
  // @ts-expect-error: onEvent takes (event, addr)
  createClient({ onEvent: (ev: number) => ev });
  const replicaReads: number = r2.stats().replicaReads + r2.stats().failovers + r2.stats().nodesDown;
  console.log(replicaReads);
  await c.connect();
  const m: 'plain' | 'cluster' | null = c.mode;
  const open: boolean = c.isOpen;
  // the typed methods' precise return types (rendered from bindings/spec/)
  const v: string | null = await c.get('k');
  const done: boolean = await c.set('k', 'v', { ex: 10, nx: true });
  const old: string | null = await c.setGet('k', 'w');
  await c.set(Buffer.from('k'), 5n);
  const vals: Array<string | null> = await c.mget('a', 'b');
  const h: Map<string, string> = await c.hgetall('h');
  const members: Set<string> = await c.smembers('s');
  const score: number | null = await c.zscore('z', 'm');
  const scored: Array<[string, number]> = await c.zrangeWithscores('z', 0, -1, { rev: true });
  const added: number = await c.zadd('z', [[1, 'a']], { nx: true });
  const incr: number | null = await c.zaddIncr('z', { m: 2 });
  const page: [string, string[]] = await c.scan(0, { match: 'k*', count: 100 });
  const n2: number = await c.hset('h', { f: 'v', g: 1 });
  const any: Reply = await c.eval('return 1', { keys: ['k'], args: [1] });
  const pong: string = await c.ping();
  const b: Client<Buffer> = createClient({ url: 'redis://127.0.0.1:6379', returnBuffers: true });
  const bv: Buffer | null = await b.get('k');
  const bp: Pipeline<Buffer> = b.pipeline().get('k');
  console.log(done, old, vals, h, members, score, scored, added, incr, page, n2, any, pong, bv, bp);
  await c.sendCommand(['DBSIZE'], { route: 'all-primaries' });
  await c.sendCommand(['PING'], { route: { node: '127.0.0.1:7000' } });
  await c.sendCommand(['PING'], { route: { slot: 5 } });
  const p: Pipeline = c.pipeline().set('a', 1).get('a').incr('n').sendCommand(['PING']).zrangeWithscores('z', 0, 1);
  const n: number = p.length;
  const r = await p.exec();
  for (const [err, val] of r) {
    if (err) { const k: string = err.kind; console.log(k); } else { console.log(val); }
  }
  await c.batch().ping().exec();
  const s: Stats = c.stats();
  const slot: number = keySlot('foo') + keySlot(Buffer.from('x'));
  const ver: string = version;
  const names: string = METHODS.zrange_withscores;
  try { await c.incr('k'); } catch (x) {
    if (x instanceof ReplyError) { const code: string = x.code; console.log(code); }
    if (x instanceof SlotlaneError || x instanceof ConnectionError || x instanceof TimeoutError || x instanceof ClusterError) console.log(x.kind);
    if (x instanceof CancelledError || x instanceof ArgumentError || x instanceof ProtocolError || x instanceof ResourceError) console.log(x.kind);
  }
  await c.close();
  await d.quit();
  await e.disconnect();
  console.log(m, open, v, n, s.moved, slot, ver, names);
  for await (const key of c.scanIterator({ match: 'user:*', count: 500, type: 'hash', signal: new AbortController().signal })) { const k: string = key; console.log(k); }
  for await (const key of b.scanIterator()) { const k: Buffer = key; console.log(k); }
  for await (const [f, fv] of c.hscanIterator('h', { match: 'f*', count: 10 })) console.log(f + fv);
  for await (const mem of c.sscanIterator('s')) { const x: string = mem; console.log(x); }
  for await (const [mem, score] of c.zscanIterator('z')) { const x: number = score; console.log(mem, x); }
  const script = c.createScript('return 1');
  const sha: string = script.sha;
  const res: Reply = await script.run({ keys: ['k'], args: [1, 'a'], readonly: true });
  console.log(sha, res);
  // @ts-expect-error TYPE filters the cluster scan only
  c.hscanIterator('h', { type: 'hash' });
  // @ts-expect-error a script body is text or bytes
  c.createScript(5);
  const sub = c.pubsub({ maxQueueBytes: 1 << 20, healthCheckInterval: 5000 });
  const count: number = await sub.subscribe('a', ['b']);
  sub.on('message', (ch: string, msg: string) => console.log(ch, msg));
  sub.on('resubscribed', (ch, kind) => console.log(ch, kind === 'ssubscribe'));
  for await (const rec of sub) {
    if (rec.type === 'pmessage') console.log(rec.pattern.length, rec.data);
    break;
  }
  console.log(count, sub.stats().dropped);
  sub.close();
  // @ts-expect-error options are named
  c.pubsub({ maxQueue: 1 });
  // @ts-expect-error cluster is a boolean
  createClient({ cluster: 'yes' });
  // @ts-expect-error a command is an array
  c.sendCommand('PING');
  // @ts-expect-error routes are named
  c.sendCommand(['PING'], { route: 'everywhere' });
  // @ts-expect-error objects are not arguments
  c.get({});
  // @ts-expect-error a bool is never a value (the spec's argument rules)
  c.set('k', true);
  // @ts-expect-error int parameters take integers, not strings
  c.expire('k', '10');
  // @ts-expect-error unknown options are refused
  c.set('k', 'v', { nope: 1 });
  // @ts-expect-error held for sessions: no typed MULTI on the shared client
  c.multi();
}
void main;
