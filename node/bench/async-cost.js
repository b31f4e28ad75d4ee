'use strict';
// The async rows of the Node binding (issue 18): N concurrent callers (N = 64 and 512), each
// awaiting one GET or SET at a time, rows plain (one port of slotlane-server, misrouted
// forward) and cluster (the cluster client over its 4 shards), for slotlane and ioredis
// (its auto-pipelining client, Redis.Cluster for cluster), interleaved in every round, every
// reply checked (a wrong reply fails the row instead of reporting a figure).
//
//   node node/bench/async-cost.js --server build/server/slotlane-server [--port 24730]
//        [--server-cpu 0] [--rounds 3] [--requests 40960] [--json bench/records/]
//   node node/bench/async-cost.js --url redis://127.0.0.1:PORT [--server-desc TEXT] ...
//        (a slotlane-server the caller started, 4 shards per-shard with misrouted forward:
//        bench/async/run.py, `make bench`'s async rows; no server is started)
//
// Run it pinned (taskset -c 1 node ...; the server is pinned to --server-cpu). Figures per
// request: total CPU (user + system of the client process over the timed loop:
// process.cpuUsage), user, system, requests per second, p50/p99 of the awaits. Record:
// schema slotlane.bench.async-cost/1 (bench/records/README.md),
// <host>-<date>-<time>-async-cost-node.json.
const path = require('path');
const os = require('os');
const fs = require('fs');
const net = require('net');
const { spawn, execFileSync } = require('child_process');

const ROOT = path.resolve(__dirname, '..', '..');
const sl = require(path.join(ROOT, 'node'));
const Redis = require('ioredis');

const KEYS = 4096;
const valueOf = (i) => String(i).padStart(32, '0');

function arg(name, def) {
  const i = process.argv.indexOf(name);
  return i >= 0 ? process.argv[i + 1] : def;
}

function ping(port) {
  return new Promise((resolve) => {
    const s = net.connect(port, '127.0.0.1');
    s.on('connect', () => s.write('PING\r\n'));
    s.on('data', (d) => { s.destroy(); resolve(d.toString().startsWith('+PONG')); });
    s.on('error', () => resolve(false));
  });
}

async function startServer(bin, port, cpu) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slotlane-node-async-'));
  const p = spawn('taskset', ['-c', cpu, bin, '--shards', '4', '--port-mode', 'per-shard', '--misrouted', 'forward',
    '--bind', '127.0.0.1', '--port', String(port), '--durability', 'memory', '--dir', dir], { stdio: 'ignore' });
  const stop = () => { try { process.kill(p.pid, 'SIGKILL'); } catch { /* gone */ } fs.rmSync(dir, { recursive: true, force: true }); };
  process.on('exit', stop);
  for (let i = 0; i < 4; i++) {
    for (let t = 0; !(await ping(port + i)); t++) {
      if (p.exitCode !== null || t > 200) { stop(); throw new Error(`slotlane-server did not answer on ${port + i}`); }
      await new Promise((r) => setTimeout(r, 25));
    }
  }
  return stop;
}

// One client's calls: get(key) -> value, set(key, value) -> ok.
async function makeClient(client, row, port) {
  if (client === 'slotlane') {
    const c = sl.createClient({ url: `redis://127.0.0.1:${port}`, cluster: row === 'cluster' });
    await c.connect();
    return { get: (k) => c.get(k), set: (k, v) => c.set(k, v), okSet: (r) => r === true, close: () => c.close() };
  }
  const r = row === 'cluster'
    ? new Redis.Cluster([{ host: '127.0.0.1', port }], { enableAutoPipelining: true, lazyConnect: true })
    : new Redis({ host: '127.0.0.1', port, enableAutoPipelining: true, lazyConnect: true });
  await r.connect();
  return { get: (k) => r.get(k), set: (k, v) => r.set(k, v), okSet: (x) => x === 'OK', close: () => r.quit() };
}

async function runRow(c, op, callers, requests) {
  const per = Math.floor(requests / callers);
  const lat = new Float64Array(per * callers);
  let bad = null;
  let seed = 12345;
  const load1 = os.loadavg()[0];
  const t0 = process.hrtime.bigint();
  const cpu0 = process.cpuUsage();
  await Promise.all(Array.from({ length: callers }, async (_, w) => {
    let s = (seed + w * 7919) >>> 0;
    for (let i = 0; i < per; i++) {
      s = (s * 1103515245 + 12345) >>> 0;
      const k = s % KEYS;
      const a = process.hrtime.bigint();
      if (op === 'GET') {
        const v = await c.get(`key:${k}`);
        if (v !== valueOf(k) && bad === null) bad = `GET key:${k} -> ${v}`;
      } else {
        const r = await c.set(`key:${k}`, valueOf(k));
        if (!c.okSet(r) && bad === null) bad = `SET key:${k} -> ${r}`;
      }
      lat[w * per + i] = Number(process.hrtime.bigint() - a) / 1000;
    }
  }));
  const cpu = process.cpuUsage(cpu0);
  const wall = Number(process.hrtime.bigint() - t0) / 1e9;
  seed++;
  if (bad !== null) throw new Error(bad);
  const n = per * callers;
  lat.sort();
  return {
    requests: n, wall_s: wall, load1,
    user_ns_per_req: cpu.user * 1000 / n, sys_ns_per_req: cpu.system * 1000 / n,
    cpu_ns_per_req: (cpu.user + cpu.system) * 1000 / n,
    req_per_s: n / wall, p50_us: lat[Math.floor(n * 0.5)], p99_us: lat[Math.floor(n * 0.99)],
  };
}

const median = (xs) => { const s = [...xs].sort((a, b) => a - b); return s[Math.floor(s.length / 2)]; };

function writeRecord(dir, record) {
  fs.mkdirSync(dir, { recursive: true });
  for (;;) {
    const d = new Date();
    const p2 = (x) => String(x).padStart(2, '0');
    const stamp = `${d.getUTCFullYear()}-${p2(d.getUTCMonth() + 1)}-${p2(d.getUTCDate())}-${p2(d.getUTCHours())}${p2(d.getUTCMinutes())}${p2(d.getUTCSeconds())}`;
    const name = path.join(dir, `${os.hostname()}-${stamp}-async-cost-node.json`);
    const tmp = `${name}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(record, null, 2) + '\n');
    try {
      fs.linkSync(tmp, name); // never replaces a record
      fs.unlinkSync(tmp);
      return name;
    } catch (e) {
      fs.unlinkSync(tmp);
      if (e.code !== 'EEXIST') throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
    }
  }
}

async function main() {
  const bin = path.resolve(arg('--server', path.join(ROOT, 'build', 'server', 'slotlane-server')));
  const url = arg('--url', null);
  const m = url && /^redis:\/\/127\.0\.0\.1:(\d+)\/?$/.exec(url);
  if (url && !m) throw new Error(`--url: redis://127.0.0.1:PORT expected, not ${url}`);
  const port = m ? Number(m[1]) : Number(arg('--port', '24730'));
  const rounds = Number(arg('--rounds', '3'));
  const requests = Number(arg('--requests', '40960'));
  const serverCpu = arg('--server-cpu', '0');
  const stop = url ? () => {} : await startServer(bin, port, serverCpu);
  const clients = ['slotlane', 'ioredis'];
  const rowsSpec = [];
  for (const row of ['plain', 'cluster']) for (const op of ['GET', 'SET']) for (const callers of [64, 512]) rowsSpec.push({ row, op, callers });
  const out = new Map();
  try {
    const fill = await makeClient('slotlane', 'cluster', port);
    await Promise.all(Array.from({ length: KEYS }, (_, i) => fill.set(`key:${i}`, valueOf(i))));
    await fill.close();
    const conns = {};
    for (const client of clients) for (const row of ['plain', 'cluster']) conns[`${client}/${row}`] = await makeClient(client, row, port);
    for (let r = 0; r < rounds; r++) {
      for (const spec of rowsSpec) {
        for (const client of clients) { // interleaved: both clients in every round
          const key = `${client}/${spec.row}/${spec.op}/${spec.callers}`;
          if (!out.has(key)) out.set(key, { client: client === 'slotlane' ? 'slotlane-node' : 'ioredis', ...spec, ok: true, error: null, rounds: [] });
          const e = out.get(key);
          if (!e.ok) continue;
          try {
            e.rounds.push(await runRow(conns[`${client}/${spec.row}`], spec.op, spec.callers, requests));
          } catch (err) {
            e.ok = false;
            e.error = String(err && err.message || err);
          }
        }
      }
      process.stderr.write(`async-cost node: round ${r + 1}/${rounds} done\n`);
    }
    for (const c of Object.values(conns)) await c.close();
  } finally {
    stop();
  }
  const rows = [...out.values()].map((e) => {
    const m = {};
    if (e.ok) for (const f of ['cpu_ns_per_req', 'user_ns_per_req', 'sys_ns_per_req', 'req_per_s', 'p50_us', 'p99_us']) m[f] = median(e.rounds.map((x) => x[f]));
    return { ...e, median: e.ok ? m : null };
  });
  const targets = [];
  for (const s of rows.filter((x) => x.client === 'slotlane-node')) {
    const io = rows.find((x) => x.client === 'ioredis' && x.row === s.row && x.op === s.op && x.callers === s.callers);
    if (!s.ok || !io || !io.ok) continue;
    const v = s.median.cpu_ns_per_req / io.median.cpu_ns_per_req;
    targets.push({ name: 'total CPU/req <= 0.5 x ioredis', row: s.row, op: s.op, callers: s.callers, value: v, limit: 0.5, met: v <= 0.5 });
  }
  let commit = 'unknown';
  try { commit = execFileSync('git', ['-C', ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8' }).trim(); } catch { /* not a checkout */ }
  const record = {
    schema: 'slotlane.bench.async-cost/1', benchmark: 'async-cost', ok: rows.every((x) => x.ok),
    command: process.argv.slice(1), commit, started_at_unix: Math.floor(Date.now() / 1000),
    machine: { hostname: os.hostname(), cores: os.cpus().length },
    runtime: `node ${process.version} (one event loop: both clients on the main thread)`,
    versions: { ioredis: require('ioredis/package.json').version, slotlane: sl.version },
    config: { keys: KEYS, value_bytes: 32, requests_per_round: requests, rounds },
    servers: { description: url ? arg('--server-desc', `the slotlane-server at ${url} (started by the caller)`)
      : `slotlane-server (${bin}): 4 shards, per-shard, misrouted forward, ports ${port}-${port + 3}, pinned to CPU ${serverCpu}` },
    load_note: 'a shared 2-core machine (other engineers\' builds and tests run on it): see rounds[].load1',
    rows, targets,
  };
  const dest = arg('--json', path.join(ROOT, 'bench', 'records'));
  const name = writeRecord(dest, record);
  const f0 = (x) => (x === undefined || x === null ? '—' : x.toFixed(0));
  for (const x of rows) {
    const t = targets.find((y) => x.client === 'slotlane-node' && y.row === x.row && y.op === x.op && y.callers === x.callers);
    console.log(`${x.client.padEnd(14)} ${x.row.padEnd(8)} ${x.op} ${String(x.callers).padStart(4)}  cpu ${f0(x.median && x.median.cpu_ns_per_req)} ns  user ${f0(x.median && x.median.user_ns_per_req)}  req/s ${f0(x.median && x.median.req_per_s)}  p50 ${f0(x.median && x.median.p50_us)} us  p99 ${f0(x.median && x.median.p99_us)} us${t ? `  x ioredis ${t.value.toFixed(2)}` : ''}${x.ok ? '' : '  FAILED ' + x.error}`);
  }
  console.log(`record: ${name}`);
}

main().catch((e) => { console.error(e); process.exit(1); });
