'use strict';
// The spec's conformance cases (bindings/conformance/commands/*.json) through the typed
// methods: every case's calls are made through the rendered JavaScript methods -- once
// queued on one pipeline (the case's batch), once on the client -- and each value is compared
// with the recorded reply as the method's reply type shapes it (bindings/spec/README.md).
// Against a standalone redis-server (port 25300) and a 3-primary Redis Cluster (ports
// 25310-25315), RESP2 and RESP3.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const sl = require('..');
const { ROOT, startRedisPlain, startRedisCluster } = require('./helpers');

const CASES_DIR = path.join(ROOT, 'bindings', 'conformance', 'commands');
const SPEC = new Map(JSON.parse(fs.readFileSync(path.join(ROOT, 'bindings', 'spec', 'commands.json'), 'utf8'))
  .methods.map((m) => [m.method, m]));
const files = fs.readdirSync(CASES_DIR).filter((f) => f.endsWith('.json')).sort();

// int64 values of the recorded replies must not pass through a double: those are read from
// a second parse with every bare integer "value" quoted (the calls' arguments from the first)
function loadCases(file) {
  const text = fs.readFileSync(path.join(CASES_DIR, file), 'utf8');
  const doc = JSON.parse(text);
  const quoted = JSON.parse(text.replace(/("value":\s*)(-?\d+)(?=\s*[,}])/g, '$1"$2"'));
  doc.cases.forEach((c, i) => { c.expected = quoted.cases[i].expected; });
  return doc;
}

// the reply-type grammar of bindings/spec/spec.py
function parseType(s) {
  let pos = 0;
  function one() {
    let j = pos;
    while (j < s.length && /[a-z]/.test(s[j])) j++;
    const t = { t: s.slice(pos, j), of: [], null: false };
    pos = j;
    if (s[pos] === '<') {
      pos++;
      t.of.push(one());
      while (s[pos] === ',') { pos++; t.of.push(one()); }
      pos++;
    }
    if (s[pos] === '?') { pos++; t.null = true; }
    return t;
  }
  return one();
}

const jsArg = (v) => (v !== null && typeof v === 'object' && !Array.isArray(v) && 'hex' in v ? Buffer.from(v.hex, 'hex')
  : Array.isArray(v) ? v.map(jsArg) : v);
const camel = (n) => n.replace(/_([a-z0-9])/g, (_, c) => c.toUpperCase());
const pname = (n) => { const c = camel(n); return ['delete', 'function', 'default', 'in', 'new'].includes(c) ? `${c}_` : c; };

function callArgs(m, args) {
  const req = m.params.filter((p) => !p.optional);
  const opt = m.params.filter((p) => p.optional);
  const lists = m.params.filter((p) => p.list);
  const varargs = lists.length === 1 && req.length > 0 && req[req.length - 1] === lists[0] && lists[0].type !== 'tuple' && req.length === m.params.length;
  const pos = [];
  for (const p of req) {
    const v = jsArg(args[p.name]);
    if (varargs && p === req[req.length - 1]) pos.push(...v); else pos.push(v);
  }
  const o = {};
  let any = false;
  for (const p of opt) if (p.name in args) { o[camel(p.name)] = jsArg(args[p.name]); any = true; }
  if (opt.length && any) pos.push(o);
  return pos;
}

const numOf = (e) => ({ inf: Infinity, '+inf': Infinity, '-inf': -Infinity }[e.value] ?? Number(e.value));

// null when the typed value `got` matches the recorded reply `exp` under type `t`
function mismatch(t, exp, got, where) {
  const bad = (what) => `${where}: expected ${JSON.stringify(exp).slice(0, 300)} as ${JSON.stringify(t.t)}, got ${what}`;
  const show = (v) => (v instanceof Error ? `${v.name}(${v.kind}): ${v.message}` : typeof v === 'bigint' ? `${v}n` : v instanceof Map ? `Map(${JSON.stringify([...v])})` : v instanceof Set ? `Set(${JSON.stringify([...v])})` : JSON.stringify(v));
  const loose = !('value' in exp) && !('children' in exp) && !('hex' in exp);
  if (exp.type === 'error') {
    if (!(got instanceof sl.SlotlaneError)) return bad(show(got));
    return got.kind === exp.kind && got.message.startsWith(exp.prefix) ? null : bad(show(got));
  }
  if (exp.type === 'nil') {
    if (t.t === 'ok') return got === false ? null : bad(show(got));
    return got === null ? null : bad(show(got));
  }
  switch (t.t) {
    case 'any': return null; // checked by conformance.test.js's raw comparison of the same shapes
    case 'ok': return got === true ? null : bad(show(got));
    case 'status': return typeof got === 'string' && (loose || got === exp.value) ? null : bad(show(got));
    case 'string': {
      if (typeof got !== 'string') return bad(show(got));
      if (loose) return null;
      const want = exp.hex !== undefined ? Buffer.from(exp.hex, 'hex').toString('utf8') : exp.value;
      return got === want ? null : bad(show(got));
    }
    case 'int':
      if (typeof got !== 'number' && typeof got !== 'bigint') return bad(show(got));
      return loose || BigInt(got) === BigInt(exp.value) ? null : bad(show(got));
    case 'bool': return typeof got === 'boolean' && (loose || got === (exp.value === true || exp.value === '1')) ? null : bad(show(got));
    case 'double': return typeof got === 'number' && (loose || Object.is(got, numOf(exp)) || got === numOf(exp)) ? null : bad(show(got));
    case 'cursor': return typeof got === 'string' && (loose || got === exp.value) ? null : bad(show(got));
    case 'array': case 'set': {
      if (t.t === 'array' ? !Array.isArray(got) : !(got instanceof Set)) return bad(show(got));
      if (loose) return null;
      return seq(t.of[0], exp.children, [...got], where, t.t === 'set' || exp.unordered, bad, show);
    }
    case 'tuple': {
      if (!Array.isArray(got) || got.length !== t.of.length) return bad(show(got));
      if (loose) return null;
      for (let i = 0; i < t.of.length; i++) {
        const m = mismatch(t.of[i], exp.children[i], got[i], `${where}[${i}]`);
        if (m) return m;
      }
      return null;
    }
    case 'map': case 'pairs': {
      if (t.t === 'map' ? !(got instanceof Map) : !Array.isArray(got)) return bad(show(got));
      if (loose) return null;
      const kids = exp.children;
      const flat = exp.type === 'array' && kids.length && kids[0].type === 'array' ? kids.flatMap((k) => k.children) : kids;
      const items = t.t === 'map' ? [...got] : got;
      if (items.length * 2 !== flat.length) return bad(`${items.length} pairs`);
      const unordered = t.t === 'map' || exp.unordered;
      const left = [...items];
      for (let i = 0; i < flat.length; i += 2) {
        const cands = unordered ? left : [left[0]];
        const j = cands.findIndex((g) => Array.isArray(g) && mismatch(t.of[0], flat[i], g[0], where) === null && mismatch(t.of[1], flat[i + 1], g[1], where) === null);
        if (j < 0) return bad(`no pair for ${JSON.stringify([flat[i], flat[i + 1]])} in ${show(got)}`);
        left.splice(unordered ? j : 0, 1);
      }
      return null;
    }
    default: return `${where}: unknown type ${t.t}`;
  }
}

function seq(t, kids, got, where, unordered, bad, show) {
  if (got.length !== kids.length) return bad(`${got.length} elements: ${show(got)}`);
  if (!unordered) {
    for (let i = 0; i < kids.length; i++) {
      const m = mismatch(t, kids[i], got[i], `${where}[${i}]`);
      if (m) return m;
    }
    return null;
  }
  const left = [...got];
  for (const e of kids) {
    const j = left.findIndex((g) => mismatch(t, e, g, where) === null);
    if (j < 0) return bad(`no element matches ${JSON.stringify(e)} in ${show(got)}`);
    left.splice(j, 1);
  }
  return null;
}

let plain, cluster;
const clients = new Map();
async function clientFor(target, resp) {
  const key = `${target}/${resp}`;
  if (!clients.has(key)) {
    const c = sl.createClient({ url: (target === 'plain' ? plain : cluster).url, resp });
    clients.set(key, c);
    await c.connect();
    assert.equal(c.mode, target);
  }
  return clients.get(key);
}

async function prepare(c, cs) {
  assert.equal(await c.flushall(), true);
  if (cs.setup && cs.setup.length) {
    const p = c.pipeline();
    for (const cmd of cs.setup) p.sendCommand(cmd.map(jsArg));
    for (const [err] of await p.exec()) assert.equal(err, null, `setup failed: ${err}`);
  }
}

test.before(() => {
  plain = startRedisPlain(25300);
  cluster = startRedisCluster(25310, 3);
});
test.after(async () => {
  for (const c of clients.values()) await c.close();
  plain && plain.stop();
  cluster && cluster.stop();
});

const called = new Set();
let ran = 0;
for (const file of files) {
  const { cases } = loadCases(file);
  for (const cs of cases) {
    for (const call of cs.calls) called.add(call.method);
    const targets = cs.mode === 'any' ? ['plain', 'cluster'] : [cs.mode];
    for (const target of targets) {
      for (const resp of cs.resp) {
        test(`${file} ${cs.name} (${target}, resp${resp})`, async () => {
          const c = await clientFor(target, resp);
          const expected = cs.expected[String(resp)];
          // 1. one pipeline: the case's batch
          await prepare(c, cs);
          const p = c.pipeline();
          for (const call of cs.calls) p[sl.METHODS[call.method]](...callArgs(SPEC.get(call.method), call.args));
          const results = await p.exec();
          assert.equal(results.length, expected.length);
          for (let i = 0; i < expected.length; i++) {
            const [err, val] = results[i];
            const call = cs.calls[i];
            assert.equal(mismatch(parseType(SPEC.get(call.method).reply), expected[i], err || val, `pipeline call ${i} ${call.method}`), null);
          }
          // 2. the client's methods, one after another
          await prepare(c, cs);
          for (let i = 0; i < expected.length; i++) {
            const call = cs.calls[i];
            let got;
            try { got = await c[sl.METHODS[call.method]](...callArgs(SPEC.get(call.method), call.args)); } catch (e) { got = e; }
            assert.equal(mismatch(parseType(SPEC.get(call.method).reply), expected[i], got, `client call ${i} ${call.method}`), null);
          }
          ran++;
        });
      }
    }
  }
}

test('every method of the spec has a case, and every case ran', () => {
  const missing = [...SPEC.keys()].filter((m) => !called.has(m));
  assert.deepEqual(missing, []);
  assert.ok(ran >= 500, `only ${ran} case runs`);
});
