'use strict';
// The language-neutral cases of bindings/conformance/ (README there), run through this
// binding's public API: each case's commands as ONE pipeline, the replies compared as the
// JavaScript values users get (strings and, in a second pass, Buffers). Against a standalone
// redis-server (port 25100) and a 3-primary Redis Cluster (ports 25110-25115), RESP2 and 3.
const test = require('node:test');
const assert = require('node:assert/strict');
const fs = require('node:fs');
const path = require('node:path');
const sl = require('..');
const { ROOT, startRedisPlain, startRedisCluster } = require('./helpers');

const CASES_DIR = path.join(ROOT, 'bindings', 'conformance', 'cases');
const files = fs.readdirSync(CASES_DIR).filter((f) => f.endsWith('.json')).sort();

// int64 values must not pass through a double: quote every bare integer "value" first.
function loadCases(file) {
  const text = fs.readFileSync(path.join(CASES_DIR, file), 'utf8');
  return JSON.parse(text.replace(/("value":\s*)(-?\d+)(?=\s*[,}])/g, '$1"$2"'));
}

const arg = (a) => (typeof a === 'string' ? a : Buffer.from(a.hex, 'hex'));

// Does the JS value `got` match the expected reply? Returns null or a description.
function mismatch(exp, got, buffers, where) {
  const bad = (what) => `${where}: expected ${JSON.stringify(exp)}, got ${what}`;
  const show = (v) => (v instanceof Error ? `${v.name}(${v.kind}): ${v.message}` : typeof v === 'bigint' ? `${v}n` : Buffer.isBuffer(v) ? `<Buffer ${v.toString('hex')}>` : JSON.stringify(v));
  switch (exp.type) {
    case 'error':
      if (!(got instanceof sl.SlotlaneError)) return bad(show(got));
      if (got.kind !== exp.kind || !got.message.startsWith(exp.prefix)) return bad(show(got));
      if (exp.kind === 'server' && !(got instanceof sl.ReplyError)) return bad(`${got.name} for a server error`);
      return null;
    case 'string': {
      const want = exp.hex !== undefined ? Buffer.from(exp.hex, 'hex') : Buffer.from(exp.value, 'utf8');
      if (buffers) return Buffer.isBuffer(got) && got.equals(want) ? null : bad(show(got));
      return got === want.toString('utf8') ? null : bad(show(got));
    }
    case 'verb':
      // the format bytes are not part of the JS value: only the text is compared
      if (buffers) return Buffer.isBuffer(got) && got.equals(Buffer.from(exp.value)) ? null : bad(show(got));
      return got === exp.value ? null : bad(show(got));
    case 'status':
      return got === exp.value ? null : bad(show(got));
    case 'integer':
      if (typeof got === 'number') {
        return Number.isSafeInteger(got) && BigInt(got) === BigInt(exp.value) ? null : bad(show(got));
      }
      return typeof got === 'bigint' && got === BigInt(exp.value) && (got > 2n ** 53n || got < -(2n ** 53n)) ? null : bad(show(got));
    case 'nil':
      return got === null ? null : bad(show(got));
    case 'double': {
      const v = { inf: Infinity, '-inf': -Infinity, nan: NaN }[exp.value] ?? Number(exp.value);
      return typeof got === 'number' && Object.is(got, v) ? null : (Number.isNaN(v) && Number.isNaN(got) ? null : bad(show(got)));
    }
    case 'bool':
      return got === exp.value ? null : bad(show(got));
    case 'bignum':
      return got === BigInt(exp.value) ? null : bad(show(got));
    case 'array': case 'push': case 'set': case 'map': {
      let items;
      if (exp.type === 'set') {
        if (!(got instanceof Set)) return bad(`${show(got)} (not a Set)`);
        items = [...got];
      } else if (exp.type === 'map') {
        if (!(got instanceof Map)) return bad(`${show(got)} (not a Map)`);
        items = [...got].flat();
      } else {
        if (!Array.isArray(got)) return bad(show(got));
        items = got;
      }
      const kids = exp.children;
      if (items.length !== kids.length) return bad(`${items.length} children`);
      if (!exp.unordered) {
        for (let i = 0; i < kids.length; i++) {
          const m = mismatch(kids[i], items[i], buffers, `${where}[${i}]`);
          if (m) return m;
        }
        return null;
      }
      const step = exp.type === 'map' ? 2 : 1; // maps: compare key/value pairs in any order
      const used = new Set();
      for (let i = 0; i < kids.length; i += step) {
        let found = false;
        for (let j = 0; j < items.length && !found; j += step) {
          if (used.has(j)) continue;
          if (mismatch(kids[i], items[j], buffers, where) === null &&
              (step === 1 || mismatch(kids[i + 1], items[j + 1], buffers, where) === null)) {
            used.add(j);
            found = true;
          }
        }
        if (!found) return bad(`no match for child ${i} in ${items.map(show).join(', ')}`);
      }
      return null;
    }
    default:
      return `${where}: unknown expected type ${exp.type}`;
  }
}

let plain, cluster;
const clients = new Map();
async function clientFor(target, resp, buffers) {
  const key = `${target}/${resp}/${buffers}`;
  if (!clients.has(key)) {
    const c = sl.createClient({ url: (target === 'plain' ? plain : cluster).url, resp, returnBuffers: buffers });
    clients.set(key, c);
    await c.connect();
    assert.equal(c.mode, target);
  }
  return clients.get(key);
}

test.before(() => {
  plain = startRedisPlain(25100);
  cluster = startRedisCluster(25110, 3);
});
test.after(async () => {
  for (const c of clients.values()) await c.close();
  plain && plain.stop();
  cluster && cluster.stop();
});

let ran = 0;
for (const file of files) {
  const { cases } = loadCases(file);
  for (const cs of cases) {
    const resps = Array.isArray(cs.resp) ? cs.resp : [cs.resp];
    const targets = cs.mode === 'any' ? ['plain', 'cluster'] : [cs.mode];
    for (const target of targets) {
      for (const resp of resps) {
        test(`${file} ${cs.name} (${target}, resp${resp})`, async () => {
          for (const buffers of [false, true]) {
            const c = await clientFor(target, resp, buffers);
            assert.equal(await c.sendCommand(['FLUSHALL'], { route: 'all-primaries' }), 'OK');
            if (cs.setup && cs.setup.length) {
              const p = c.pipeline();
              for (const cmd of cs.setup) p.sendCommand(cmd.map(arg));
              for (const [err] of await p.exec()) assert.equal(err, null, `setup failed: ${err}`);
            }
            const p = c.pipeline();
            for (const cmd of cs.commands) p.sendCommand(cmd.map(arg));
            const results = await p.exec();
            const expected = cs.expected[String(resp)];
            assert.equal(results.length, expected.length);
            for (let i = 0; i < expected.length; i++) {
              const [err, val] = results[i];
              const m = mismatch(expected[i], err || val, buffers, `command ${i} ${JSON.stringify(cs.commands[i]).slice(0, 80)}${buffers ? ' (returnBuffers)' : ''}`);
              assert.equal(m, null);
            }
          }
          ran++;
        });
      }
    }
  }
}

test('every case ran', () => {
  assert.ok(ran >= 60, `only ${ran} case runs`);
});
