#!/usr/bin/env node
'use strict';
// cluster-cost for Node (DESIGN.md "The benchmarks"): user CPU per request of the client
// process for slotlane, ioredis and node-redis, rows plain / cluster / one-node, GET and SET,
// depth 16 and 64, 8 async workers (a client each) issuing `depth` commands per tick and
// awaiting them; 32-byte values, keys key:0..4095 (one-node: {t}:key:N) filled first; every
// reply checked (a wrong or error reply fails the row instead of giving a figure).
//
//   npm run bench:cluster-cost [-- options]      (from node/)
//   node bench/cluster-cost.js [--quick] [--rounds N] [--seconds S] [--warmup S]
//        [--clients slotlane,ioredis,node-redis] [--rows plain,cluster,one-node]
//        [--ops GET,SET] [--depths 16,64] [--workers 8] [--json DIR|-] [--plain URL --cluster URL]
//        [--tls-ca FILE]   (every client over TLS trusting FILE: slotlane's and ioredis's tls: { ca })
//
// Servers: without --plain/--cluster it starts a standalone redis-server (plain rows, port
// 25300) and a 3-primary Redis Cluster (cluster and one-node rows, ports 25310-25315) with the
// repository's ci/redis-plain.sh and ci/redis-cluster.sh, pins them to CPU 1 and the clients
// to CPU 0 (taskset), and stops them at the end (also on failure). slotlane-server has no
// `--misrouted forward` yet, so the plain row cannot use it.
//
// Every (client, row) runs in its own process, once per round; rounds are interleaved
// (round 1 of every row, then round 2, ...) so that drift on a shared VM hits every row.
// One JSON record per run in bench/records/ (schema below and in bench/records/README.md).
const { spawn, spawnSync, execFileSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const NODE_DIR = path.resolve(__dirname, '..');
const ROOT = path.resolve(NODE_DIR, '..');
const KEYS = 4096;
const VALUE_BYTES = 32;
// --tls-ca FILE: every client (and the runner's own INFO/CLUSTER SLOTS calls) speaks TLS with
// this CA, as each client's users would pass it (tls: { ca }). Set in the parent and the children.
let TLS_CA = null;
const tlsOpts = () => (TLS_CA ? { tls: { ca: fs.readFileSync(TLS_CA) } } : {});

function valueOf(i) {
  return `v${i}:`.padEnd(VALUE_BYTES, 'x');
}

function keyOf(row, i) {
  return row === 'one-node' ? `{t}:key:${i}` : `key:${i}`;
}

// ------------------------------------------------------------------------- child

async function serverInputBytes(urls) {
  // total_net_input_bytes summed over the nodes, read with a throwaway slotlane client
  const sl = require(NODE_DIR);
  let sum = 0;
  for (const url of urls) {
    const c = sl.createClient({ url, cluster: false, ...tlsOpts() });
    const info = await c.sendCommand(['INFO', 'stats']);
    await c.close();
    const m = /total_net_input_bytes:(\d+)/.exec(info);
    sum += m ? Number(m[1]) : NaN;
  }
  return sum;
}

function makeDriver(client, row, spec) {
  // Returns { open(), run(op, keys) -> Promise<values>, stats(), close(), api }
  const url = row === 'plain' ? spec.plain : spec.cluster;
  const u = new URL(url.includes('://') ? url : `redis://${url}`);
  const host = u.hostname, port = Number(u.port);
  if (client === 'slotlane') {
    const sl = require(NODE_DIR);
    let c;
    return {
      api: 'auto-pipelining (one batch per tick)',
      async open() {
        c = sl.createClient({ url, cluster: row !== 'plain', ...tlsOpts() });
        await c.connect();
      },
      run(op, keys, val) {
        const ps = new Array(keys.length);
        if (op === 'GET') for (let i = 0; i < keys.length; i++) ps[i] = c.get(keys[i]);
        else for (let i = 0; i < keys.length; i++) ps[i] = c.set(keys[i], val(keys[i]));
        return Promise.all(ps);
      },
      bytes() { return c.stats().bytesWritten; },
      counters() { const s = c.stats(); return { moved: s.moved, ask: s.ask, connects: s.connects }; },
      close() { return c.close(); },
    };
  }
  if (client === 'ioredis') {
    const Redis = require('ioredis');
    let r;
    const pipelined = row !== 'cluster';
    return {
      api: pipelined ? 'pipeline().exec()' : 'enableAutoPipelining (Promise.all)',
      async open() {
        if (row === 'plain') r = new Redis({ host, port, lazyConnect: true, enableAutoPipelining: false, ...tlsOpts() });
        else r = new Redis.Cluster([{ host, port }], { enableAutoPipelining: !pipelined, lazyConnect: true, redisOptions: tlsOpts() });
        await r.connect();
      },
      async run(op, keys, val) {
        if (pipelined) {
          const p = r.pipeline();
          if (op === 'GET') for (const k of keys) p.get(k);
          else for (const k of keys) p.set(k, val(k));
          const res = await p.exec();
          return res.map(([e, v]) => { if (e) throw e; return v; });
        }
        const ps = new Array(keys.length);
        if (op === 'GET') for (let i = 0; i < keys.length; i++) ps[i] = r.get(keys[i]);
        else for (let i = 0; i < keys.length; i++) ps[i] = r.set(keys[i], val(keys[i]));
        return Promise.all(ps);
      },
      bytes() { return null; },
      counters() { return null; },
      close() { return r.quit(); },
    };
  }
  if (client === 'node-redis') {
    const redis = require('redis');
    let r;
    const pipelined = row !== 'cluster';
    return {
      api: pipelined ? 'multi().execAsPipeline()' : 'auto-pipelining (Promise.all)',
      async open() {
        if (row === 'plain') r = redis.createClient({ url: `redis://${host}:${port}` });
        else r = redis.createCluster({ rootNodes: [{ url: `redis://${host}:${port}` }] });
        r.on('error', () => {});
        await r.connect();
      },
      async run(op, keys, val) {
        if (pipelined) {
          const m = r.multi();
          if (op === 'GET') for (const k of keys) m.get(k);
          else for (const k of keys) m.set(k, val(k));
          return m.execAsPipeline();
        }
        const ps = new Array(keys.length);
        if (op === 'GET') for (let i = 0; i < keys.length; i++) ps[i] = r.get(keys[i]);
        else for (let i = 0; i < keys.length; i++) ps[i] = r.set(keys[i], val(keys[i]));
        return Promise.all(ps);
      },
      bytes() { return null; },
      counters() { return null; },
      close() { return r.quit(); },
    };
  }
  throw new Error(`unknown client ${client}`);
}

async function child(spec) {
  const { client, row, ops, depths, workers, seconds, warmup } = spec;
  TLS_CA = spec.tlsCa || null;
  const keyNames = Array.from({ length: KEYS }, (_, i) => keyOf(row, i));
  const valueByKey = new Map(keyNames.map((k, i) => [k, valueOf(i)]));
  const val = (k) => valueByKey.get(k);
  const drivers = [];
  for (let w = 0; w < workers; w++) {
    const d = makeDriver(client, row, spec);
    await d.open();
    drivers.push(d);
  }
  // fill every key once (GET rows read them)
  for (let i = 0; i < KEYS; i += 256) {
    const ks = keyNames.slice(i, i + 256);
    const r = await drivers[0].run('SET', ks, val);
    // SET's reply: true from slotlane's typed set (the spec: SET -> boolean), 'OK' from the others
    if (!r.every((x) => x === 'OK' || x === true)) throw new Error(`fill failed: ${r.find((x) => x !== 'OK' && x !== true)}`);
  }
  const nodeUrls = row === 'plain' ? [spec.plain] : spec.clusterNodes;
  const results = [];
  for (const op of ops) {
    for (const depth of depths) {
      const out = { client, row, op, depth, api: drivers[0].api, ok: true, error: null };
      let stop = false;
      let requests = 0, pipelines = 0;
      let failure = null;
      const check = (ks, vals) => {
        if (vals.length !== ks.length) throw new Error(`${vals.length} replies for ${ks.length} commands`);
        for (let i = 0; i < ks.length; i++) {
          const want = op === 'GET' ? valueByKey.get(ks[i]) : 'OK';
          if (vals[i] !== want && !(op === 'SET' && vals[i] === true)) throw new Error(`${op} ${ks[i]}: got ${String(vals[i]).slice(0, 80)}, want ${want}`);
        }
      };
      const worker = async (w) => {
        const d = drivers[w];
        let next = (w * 521) % KEYS;
        const ks = new Array(depth);
        while (!stop) {
          for (let i = 0; i < depth; i++) { ks[i] = keyNames[next]; next = next + 1 === KEYS ? 0 : next + 1; }
          const vals = await d.run(op, ks, val);
          check(ks, vals);
          requests += depth;
          pipelines++;
        }
      };
      const runFor = async (secs) => {
        stop = false;
        const all = drivers.map((_, w) => worker(w).catch((e) => { failure = failure || e; stop = true; }));
        await new Promise((r) => setTimeout(r, secs * 1000));
        stop = true;
        await Promise.all(all);
      };
      await runFor(warmup);
      requests = 0; pipelines = 0;
      const inBefore = await serverInputBytes(nodeUrls);
      const bytesBefore = drivers.map((d) => d.bytes());
      const cBefore = drivers[0].counters();
      const load1 = os.loadavg()[0]; // the machine is shared: say how busy it was
      const cpu0 = process.cpuUsage();
      const t0 = process.hrtime.bigint();
      await runFor(seconds);
      const wall = Number(process.hrtime.bigint() - t0) / 1e9;
      const cpu = process.cpuUsage(cpu0);
      const bytesAfter = drivers.map((d) => d.bytes());
      const cAfter = drivers[0].counters();
      const inAfter = await serverInputBytes(nodeUrls);
      if (failure) {
        out.ok = false;
        out.error = String(failure && failure.message || failure);
      } else {
        const bytes = bytesBefore[0] === null ? null : bytesAfter.reduce((a, b, i) => a + b - bytesBefore[i], 0);
        Object.assign(out, {
          requests, pipelines, wall_s: wall,
          user_ns: cpu.user * 1000, sys_ns: cpu.system * 1000,
          bytes_written: bytes,
          server_input_bytes: inAfter - inBefore,
          load1,
          cpu_ns_per_req: (cpu.user + cpu.system) * 1000 / requests,
          user_ns_per_req: cpu.user * 1000 / requests,
          sys_ns_per_req: cpu.system * 1000 / requests,
          bytes_per_req: bytes === null ? null : bytes / requests,
          server_input_bytes_per_req: (inAfter - inBefore) / requests,
          req_per_s: requests / wall,
          moved: cAfter ? cAfter.moved - cBefore.moved : null,
          ask: cAfter ? cAfter.ask - cBefore.ask : null,
        });
      }
      results.push(out);
    }
  }
  for (const d of drivers) await d.close();
  return results;
}

// ------------------------------------------------------------------------- parent

function parseArgs(argv) {
  const o = {
    quick: false, rounds: 3, seconds: 2, warmup: 0.5, workers: 8,
    clients: ['slotlane', 'ioredis', 'node-redis'], rows: ['plain', 'cluster', 'one-node'],
    ops: ['GET', 'SET'], depths: [16, 64], json: path.join(ROOT, 'bench', 'records'),
    plain: null, cluster: null,
  };
  for (let i = 0; i < argv.length; i++) {
    const a = argv[i];
    const val = () => { if (i + 1 >= argv.length) throw new Error(`${a} needs a value`); return argv[++i]; };
    switch (a) {
      case '--quick': o.quick = true; o.seconds = 0.5; o.warmup = 0.2; break;
      case '--rounds': o.rounds = Number(val()); break;
      case '--seconds': o.seconds = Number(val()); break;
      case '--warmup': o.warmup = Number(val()); break;
      case '--workers': o.workers = Number(val()); break;
      case '--clients': o.clients = val().split(','); break;
      case '--rows': o.rows = val().split(','); break;
      case '--ops': o.ops = val().split(',').map((s) => s.toUpperCase()); break;
      case '--depths': o.depths = val().split(',').map(Number); break;
      case '--json': o.json = val(); break;
      case '--plain': o.plain = val(); break;
      case '--cluster': o.cluster = val(); break;
      case '--tls-ca': o.tlsCa = val(); break;
      case '-h': case '--help':
        console.log(fs.readFileSync(__filename, 'utf8').split('\n').slice(2, 24).join('\n'));
        process.exit(0);
      // falls through
      default: throw new Error(`unknown option ${a}`);
    }
  }
  return o;
}

const median = (xs) => {
  const s = xs.filter((x) => typeof x === 'number' && Number.isFinite(x)).sort((a, b) => a - b);
  if (!s.length) return null;
  const m = s.length >> 1;
  return s.length % 2 ? s[m] : (s[m - 1] + s[m]) / 2;
};

function taskset(cpu, pid) {
  spawnSync('taskset', ['-a', '-p', '-c', String(cpu), String(pid)], { stdio: 'ignore' });
}

function runChild(spec) {
  return new Promise((resolve, reject) => {
    const haveTaskset = spawnSync('taskset', ['-V'], { stdio: 'ignore' }).status === 0;
    const cmd = haveTaskset ? 'taskset' : process.execPath;
    const args = haveTaskset ? ['-c', '0', process.execPath, __filename, '--child', JSON.stringify(spec)]
      : [__filename, '--child', JSON.stringify(spec)];
    const p = spawn(cmd, args, { stdio: ['ignore', 'pipe', 'inherit'], cwd: __dirname });
    let out = '';
    p.stdout.on('data', (d) => { out += d; });
    p.on('close', (code) => {
      if (code !== 0) return reject(new Error(`child ${spec.client}/${spec.row} exited ${code}: ${out.slice(-500)}`));
      try { resolve(JSON.parse(out)); } catch (e) { reject(new Error(`child output: ${out.slice(-500)}`)); }
    });
  });
}

function gitInfo() {
  try {
    const commit = execFileSync('git', ['-C', ROOT, 'rev-parse', 'HEAD'], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'ignore'] }).trim();
    const dirty = execFileSync('git', ['-C', ROOT, 'status', '--porcelain'], { encoding: 'utf8' }).trim().length > 0;
    return { commit, dirty };
  } catch {
    return { commit: 'unknown', dirty: null };
  }
}

function writeRecord(dir, record) {
  fs.mkdirSync(dir, { recursive: true });
  const host = os.hostname();
  for (;;) {
    const d = new Date();
    const p2 = (n) => String(n).padStart(2, '0');
    const stamp = `${d.getUTCFullYear()}-${p2(d.getUTCMonth() + 1)}-${p2(d.getUTCDate())}-${p2(d.getUTCHours())}${p2(d.getUTCMinutes())}${p2(d.getUTCSeconds())}`;
    const name = path.join(dir, `${host}-${stamp}-node-cluster-cost.json`);
    const tmp = `${name}.${process.pid}.tmp`;
    fs.writeFileSync(tmp, JSON.stringify(record, null, 2) + '\n');
    try {
      fs.linkSync(tmp, name);
      fs.unlinkSync(tmp);
      return name;
    } catch (e) {
      fs.unlinkSync(tmp);
      if (e.code !== 'EEXIST') throw e;
      Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, 1000);
    }
  }
}

function script(name, args) {
  return execFileSync('bash', [path.join(ROOT, 'ci', name), ...args.map(String)], { encoding: 'utf8', stdio: ['ignore', 'pipe', 'inherit'] });
}

async function clusterNodes(url) {
  const sl = require(NODE_DIR);
  const c = sl.createClient({ url, cluster: true, ...tlsOpts() });
  const slots = await c.sendCommand(['CLUSTER', 'SLOTS']);
  await c.close();
  return [...new Set(slots.map((s) => `redis://${s[2][0]}:${s[2][1]}`))];
}

async function serverVersion(url) {
  const sl = require(NODE_DIR);
  const c = sl.createClient({ url, cluster: false, ...tlsOpts() });
  const info = await c.sendCommand(['INFO', 'server']);
  await c.close();
  return (/redis_version:(\S+)/.exec(info) || [])[1] || null;
}

async function main() {
  const argv = process.argv.slice(2);
  if (argv[0] === '--child') {
    const res = await child(JSON.parse(argv[1]));
    process.stdout.write(JSON.stringify(res));
    return;
  }
  const o = parseArgs(argv);
  const started = new Date().toISOString();
  let work = null;
  const stops = [];
  const cleanup = () => { while (stops.length) { try { stops.pop()(); } catch { /* best effort */ } } if (work) fs.rmSync(work, { recursive: true, force: true }); };
  process.on('exit', cleanup);
  process.on('SIGINT', () => process.exit(130));
  process.on('SIGTERM', () => process.exit(143));
  let description;
  if (!o.plain || !o.cluster) {
    work = fs.mkdtempSync(path.join(os.tmpdir(), 'slotlane-node-bench-'));
    stops.push(() => script('redis-plain.sh', ['stop', path.join(work, 'plain')]));
    script('redis-plain.sh', ['start', path.join(work, 'plain'), 25300]);
    stops.push(() => script('redis-cluster.sh', ['stop', path.join(work, 'cluster')]));
    script('redis-cluster.sh', ['start', path.join(work, 'cluster'), 25310, 3]);
    taskset(1, fs.readFileSync(path.join(work, 'plain', 'pid'), 'utf8').trim());
    for (const pid of fs.readFileSync(path.join(work, 'cluster', 'pids'), 'utf8').trim().split('\n')) taskset(1, pid);
    o.plain = 'redis://127.0.0.1:25300';
    o.cluster = 'redis://127.0.0.1:25310';
    description = `${execFileSync('redis-server', ['--version'], { encoding: 'utf8' }).trim()}: a standalone server on port 25300 (plain rows) and a 3-primary Redis Cluster on ports 25310-25312 (cluster and one-node rows), no persistence, every server pinned to CPU 1; clients pinned to CPU 0. slotlane-server is not used: it has no --misrouted forward yet, which the plain row needs.`;
  } else {
    description = `given servers: plain ${o.plain}, cluster ${o.cluster}`;
  }
  TLS_CA = o.tlsCa || null;
  const nodes = await clusterNodes(o.cluster);
  const base = { ops: o.ops, depths: o.depths, workers: o.workers, seconds: o.seconds, warmup: o.warmup, plain: o.plain, cluster: o.cluster, clusterNodes: nodes, tlsCa: TLS_CA };
  const combos = [];
  for (const row of o.rows) for (const client of o.clients) combos.push({ ...base, client, row });
  const rounds = new Map(); // key -> [round results]
  for (let r = 0; r < o.rounds; r++) {
    for (const spec of combos) {
      process.stderr.write(`round ${r + 1}/${o.rounds}: ${spec.client} ${spec.row}\n`);
      let res;
      try {
        res = await runChild(spec);
      } catch (e) {
        res = o.ops.flatMap((op) => o.depths.map((depth) => ({ client: spec.client, row: spec.row, op, depth, ok: false, error: e.message })));
      }
      for (const x of res) {
        const k = `${x.client}|${x.row}|${x.op}|${x.depth}`;
        if (!rounds.has(k)) rounds.set(k, []);
        rounds.get(k).push(x);
      }
    }
  }
  const rows = [];
  for (const [k, rs] of rounds) {
    const [client, row, op, depth] = k.split('|');
    const ok = rs.every((x) => x.ok);
    const fig = (f) => (ok ? median(rs.map((x) => x[f])) : null);
    rows.push({
      client, row, op, depth: Number(depth), api: rs[0].api || null, ok,
      error: ok ? null : rs.find((x) => !x.ok).error,
      bytes_source: client === 'slotlane' ? 'sl_stats.bytes_written deltas' : null,
      rounds: rs.map(({ client: _c, row: _r, op: _o, depth: _d, api: _a, ok: _k, error: _e, ...f }) => f),
      median: {
        cpu_ns_per_req: fig('cpu_ns_per_req'),
        user_ns_per_req: fig('user_ns_per_req'), sys_ns_per_req: fig('sys_ns_per_req'),
        bytes_per_req: fig('bytes_per_req'), server_input_bytes_per_req: fig('server_input_bytes_per_req'),
        req_per_s: fig('req_per_s'),
      },
    });
  }
  const find = (client, row, op, depth) => rows.find((x) => x.client === client && x.row === row && x.op === op && x.depth === depth);
  for (const x of rows) {
    const plain = find('slotlane', 'plain', x.op, x.depth);
    const io = find('ioredis', x.row, x.op, x.depth);
    x.x_plain = plain && plain.ok && x.ok ? x.median.user_ns_per_req / plain.median.user_ns_per_req : null;
    x.x_ioredis = io && io.ok && x.ok ? x.median.user_ns_per_req / io.median.user_ns_per_req : null;
  }
  const targets = [];
  for (const op of o.ops) {
    for (const depth of o.depths) {
      for (const row of o.rows) {
        const s = find('slotlane', row, op, depth);
        if (s && s.x_ioredis !== null) targets.push({ name: `${row} user CPU <= 0.3 x ioredis`, op, depth, value: s.x_ioredis, limit: 0.3, met: s.x_ioredis <= 0.3 });
      }
      const one = find('slotlane', 'one-node', op, depth);
      if (one && one.x_plain !== null) targets.push({ name: 'one-node user CPU <= 1.1 x plain', op, depth, value: one.x_plain, limit: 1.1, met: one.x_plain <= 1.1 });
      const cl = find('slotlane', 'cluster', op, depth);
      if (cl && cl.x_plain !== null) targets.push({ name: 'cluster user CPU <= 1.5 x plain', op, depth, value: cl.x_plain, limit: 1.5, met: cl.x_plain <= 1.5 });
    }
  }
  const sl = require(NODE_DIR);
  const record = {
    schema: 'slotlane.bench.cluster-cost/1', // the one schema of every runner (bench/cluster_cost_schema.py)
    benchmark: 'cluster-cost',
    tool: 'node/bench/cluster-cost.js',
    ok: rows.every((x) => x.ok),
    started_at: started,
    finished_at: new Date().toISOString(),
    machine: {
      hostname: os.hostname(), cpu_model: os.cpus()[0] && os.cpus()[0].model, cores: os.cpus().length,
      kernel: `${os.type()} ${os.release()}`, client_cpus: '0',
    },
    versions: {
      slotlane: sl.version, node: process.version,
      ioredis: require('ioredis/package.json').version, 'node-redis': require('redis/package.json').version,
      server_plain: await serverVersion(o.plain), server_cluster: await serverVersion(o.cluster),
    },
    git: gitInfo(),
    command: process.argv,
    invocation: process.env.npm_lifecycle_event ? `npm run ${process.env.npm_lifecycle_event}` : null,
    servers: { description, plain: { url: o.plain }, cluster: { url: o.cluster, nodes } },
    config: {
      workers: o.workers, seconds: o.seconds, warmup_seconds: o.warmup, rounds: o.rounds, keys: KEYS,
      value_bytes: VALUE_BYTES, quick: o.quick, order: 'rounds interleaved; one process per (client, row) and round',
      measure: 'process.cpuUsage() deltas of the client process over the timed loop; server input bytes from INFO total_net_input_bytes',
      tls: o.tlsCa ? { ca_file: o.tlsCa, options: 'tls: { ca } (slotlane; ioredis, its Cluster through redisOptions)' } : null,
    },
    rows,
    targets,
  };
  // table
  const f0 = (v) => (v === null || v === undefined ? '—' : Math.round(v).toString());
  const f2 = (v) => (v === null || v === undefined ? '—' : v.toFixed(2));
  const lines = ['| client | row | op | depth | user ns/req | sys ns/req | bytes/req (client) | server in B/req | req/s | × slotlane plain | × ioredis |', '|---|---|---|---|---|---|---|---|---|---|---|'];
  for (const x of rows.sort((a, b) => a.op.localeCompare(b.op) || a.depth - b.depth || a.row.localeCompare(b.row) || a.client.localeCompare(b.client))) {
    lines.push(`| ${x.client} | ${x.row} | ${x.op} | ${x.depth} | ${x.ok ? f0(x.median.user_ns_per_req) : 'FAILED: ' + x.error} | ${f0(x.median.sys_ns_per_req)} | ${x.median.bytes_per_req === null ? '—' : x.median.bytes_per_req.toFixed(1)} | ${x.median.server_input_bytes_per_req === null ? '—' : x.median.server_input_bytes_per_req.toFixed(1)} | ${f0(x.median.req_per_s)} | ${f2(x.x_plain)} | ${f2(x.x_ioredis)} |`);
  }
  console.log(lines.join('\n'));
  console.log('\ntargets:');
  for (const t of targets) console.log(`  ${t.met ? 'met    ' : 'MISSED '} ${t.name} (${t.op} d${t.depth}): ${t.value.toFixed(2)}`);
  if (o.json !== '-') console.log(`\nrecord: ${writeRecord(o.json, record)}`);
  if (!record.ok) process.exitCode = 1;
}

main().catch((e) => {
  console.error(e && e.stack || e);
  process.exit(1);
});
