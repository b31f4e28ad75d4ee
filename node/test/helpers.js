'use strict';
// Servers for the tests: the bundled slotlane-server (through the package's own helper,
// slotlane/testing), and Debian's redis-server through the repository's harness scripts. Every server is stopped by PID when the test file ends,
// also when it fails (process 'exit' hook as the last resort). Ports: 25000-25499.
const { spawn, execFileSync, spawnSync } = require('node:child_process');
const fs = require('node:fs');
const os = require('node:os');
const path = require('node:path');

const ROOT = process.env.SL_ROOT || path.resolve(__dirname, '..', '..');
const BUILD = process.env.SL_BUILD_DIR || path.join(ROOT, 'build');
const { startServer } = require('../lib/testing');

const stoppers = new Set();
process.on('exit', () => {
  for (const stop of stoppers) {
    try { stop(); } catch { /* best effort at exit */ }
  }
});

function ping(port) {
  const r = spawnSync('redis-cli', ['-h', '127.0.0.1', '-p', String(port), 'ping'], { encoding: 'utf8', timeout: 2000 });
  return r.stdout && r.stdout.trim() === 'PONG';
}

function sleepSync(ms) {
  Atomics.wait(new Int32Array(new SharedArrayBuffer(4)), 0, 0, ms);
}

/** SIGSTOP, then wait until the kernel reports the process stopped (state T). */
function freeze(pid) {
  process.kill(pid, 'SIGSTOP');
  const deadline = Date.now() + 5000;
  for (;;) {
    const stat = fs.readFileSync(`/proc/${pid}/stat`, 'utf8');
    const state = stat.slice(stat.lastIndexOf(')') + 2).split(' ')[0];
    if (state === 'T' || state === 't') return;
    if (Date.now() > deadline) throw new Error(`process ${pid} did not stop (state ${state})`);
    sleepSync(5);
  }
}

/**
 * slotlane-server with `shards` shards in per-shard mode on port..port+shards-1, through the
 * package's own helper (slotlane/testing, what users' tests use): inside this process, or —
 * with { separateProcess: true }, for a test that freezes it with SIGSTOP — in a child
 * process running that helper (test-support/server-process.js); then `pid` is the child's.
 */
function startSlotlaneServer(port, shards, { separateProcess = false } = {}) {
  if (!separateProcess) {
    const srv = startServer({ port, shards, bind: '127.0.0.1' });
    const stop = () => {
      stoppers.delete(stop);
      srv.stop();
    };
    stoppers.add(stop);
    return { port, shards, pid: undefined, url: srv.url, stop };
  }
  const proc = spawn(process.execPath, [path.join(__dirname, '..', 'test-support', 'server-process.js'), String(port), String(shards)],
    { stdio: ['pipe', 'pipe', 'pipe'] });
  const stop = () => {
    stoppers.delete(stop);
    if (proc.exitCode === null && proc.signalCode === null) {
      try { process.kill(proc.pid, 'SIGCONT'); } catch { /* gone */ }
      try { process.kill(proc.pid, 'SIGKILL'); } catch { /* gone */ }
    }
  };
  stoppers.add(stop);
  // "ready URL" on its stdout, read synchronously like the other harnesses here: poll the
  // ports it was asked for (the child exiting first is a failure, with its stderr)
  let err = '';
  proc.stderr.on('data', (d) => { err += d; });
  for (let i = 0; i < shards; i++) {
    const deadline = Date.now() + 20000;
    while (!ping(port + i)) {
      if (proc.exitCode !== null || Date.now() > deadline) {
        stop();
        throw new Error(`slotlane-server (child) on port ${port + i} did not start: ${err}`);
      }
      sleepSync(50);
    }
  }
  proc.stdout.resume();
  proc.unref();
  proc.stdin.unref?.();
  proc.stdout.unref?.();
  proc.stderr.unref?.();
  return { port, shards, pid: proc.pid, url: `redis://127.0.0.1:${port}`, stop, proc };
}

function script(name, args, env) {
  return execFileSync('bash', [path.join(ROOT, 'ci', name), ...args.map(String)],
    { encoding: 'utf8', stdio: ['ignore', 'pipe', 'pipe'], env: env ? { ...process.env, ...env } : process.env });
}

/** A standalone redis-server (ci/redis-plain.sh); env: e.g. SL_REDIS_TLS_DIR for TLS only. */
function startRedisPlain(port, env) {
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slotlane-node-plain-'));
  const stop = () => {
    stoppers.delete(stop);
    try { script('redis-plain.sh', ['stop', dir], env); } catch { /* already gone */ }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  stoppers.add(stop);
  try {
    script('redis-plain.sh', ['start', dir, port], env);
  } catch (e) {
    stop();
    throw e;
  }
  return { port, url: `redis://127.0.0.1:${port}`, stop, dir };
}

/**
 * A Redis Cluster of n primaries on ports base..base+n-1 (buses base+n..), ci/redis-cluster.sh;
 * with replicas > 0, n x (1 + replicas) nodes on base..base+N-1 (buses base+N..), replica k of
 * primary i on base + n*(1+k) + i, and a cluster-node-timeout of 2 s (a fast promotion).
 */
function startRedisCluster(base, n = 3, replicas = 0) {
  const env = replicas > 0 ? { SL_CLUSTER_NODE_TIMEOUT: process.env.SL_CLUSTER_NODE_TIMEOUT || '2000' } : undefined;
  const dir = fs.mkdtempSync(path.join(os.tmpdir(), 'slotlane-node-cluster-'));
  const stop = () => {
    stoppers.delete(stop);
    try { script('redis-cluster.sh', ['stop', dir]); } catch { /* already gone */ }
    fs.rmSync(dir, { recursive: true, force: true });
  };
  stoppers.add(stop);
  try {
    script('redis-cluster.sh', replicas > 0 ? ['start', dir, base, n, replicas] : ['start', dir, base, n], env);
  } catch (e) {
    stop();
    throw e;
  }
  const ports = fs.readFileSync(path.join(dir, 'ports'), 'utf8').trim().split('\n').map(Number);
  const pids = fs.readFileSync(path.join(dir, 'pids'), 'utf8').trim().split('\n').map(Number);
  return {
    base, ports, dir, url: `redis://127.0.0.1:${base}`, stop,
    pid: (port) => pids[ports.indexOf(port)],
    kill: (port) => script('redis-cluster.sh', ['kill', dir, port]),
    restart: (port) => script('redis-cluster.sh', ['restart', dir, port], env),
    /** CLUSTER FAILOVER on replica port; returns once it is a primary. */
    failover: (port) => script('redis-cluster.sh', ['failover', dir, port], env),
    /** Starts a live migration of one slot in the background; resolves with its exit code and output. */
    migrate: (slot, from, to, count = 10) => new Promise((resolve) => {
      const p = spawn('bash', [path.join(ROOT, 'ci', 'redis-cluster.sh'), 'migrate', dir, String(slot), String(from), String(to)],
        { env: { ...process.env, SL_MIGRATE_COUNT: String(count) }, stdio: ['ignore', 'pipe', 'pipe'] });
      let out = '';
      p.stdout.on('data', (d) => { out += d; });
      p.stderr.on('data', (d) => { out += d; });
      p.on('close', (code) => resolve({ code, out }));
    }),
  };
}

/** The owner port of a slot, from CLUSTER SLOTS through a slotlane client. */
async function ownerPort(client, slot) {
  const slots = await client.sendCommand(['CLUSTER', 'SLOTS']);
  for (const [lo, hi, [, port]] of slots) {
    if (slot >= lo && slot <= hi) return port;
  }
  throw new Error(`no owner for slot ${slot}`);
}

// Until the server reports a blocked client (INFO clients): the event to wait for before
// aborting. The limit only turns a client that never blocks into a failure.
async function waitBlocked(admin) {
  const limit = Date.now() + 30000;
  while (Date.now() < limit) {
    const info = String(await admin.sendCommand(['INFO', 'clients']));
    if (/blocked_clients:[1-9]/.test(info)) return;
    await new Promise((r) => setTimeout(r, 5));
  }
  throw new Error('no client blocked');
}

/** Runs fn with a connected client of opts, closed afterwards (also when fn throws). */
async function withClient(opts, fn) {
  const c = require('..').createClient(opts);
  try {
    await c.connect();
    return await fn(c);
  } finally {
    await c.close();
  }
}

module.exports = { freeze, ROOT, BUILD, startSlotlaneServer, startRedisPlain, startRedisCluster, ownerPort, sleepSync, withClient, waitBlocked };
